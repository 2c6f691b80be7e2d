import EngineSupport
import Feed
@testable import FeedServer
import Foundation
import Prefetch
import TestSupport
import Testing

/// One policy end to end: the page's window comes from the server's policy (told on connect), and a viewer's moves
/// follow ``FeedPosition``'s rule.
@Suite(.serialized) struct PageWindowServeTests {
    static let clip = TestFixtures.media("h264_portrait.mp4")

    /// The messages a fresh viewer gets before it says anything: the listing, then the policy's page window.
    func greeting(policy: any PrefetchPolicy) async throws -> (feed: [String: Any], policy: [String: Any]) {
        let server = try await ServerHarness.start(ServeFeeds.loader(try ServeFeeds.folder([Self.clip])),
                                                   policy: policy)
        defer { Task { await server.stop() } }
        let port = server.port
        let texts = try await offPool { () -> [String] in
            let ws = try LoopbackHTTP.WebSocket(port: port, path: "/api/ws")
            defer { ws.hangUp() }
            return [try ws.receiveAny(), try ws.receiveAny()]
        }
        let said = texts.map { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:] }
        return (said[0], said[1])
    }

    @Test("on connect the page is told the default policy's window: ±2 attached, posters ±3")
    func defaultWindow() async throws {
        let (feed, policy) = try await greeting(policy: StagedPolicy())
        #expect(feed["type"] as? String == "feed")
        #expect(policy["type"] as? String == "policy" && policy["name"] as? String == "staged")
        let attach = policy["attach"] as? [String: Any]
        #expect(attach?["ahead"] as? Int == 2 && attach?["behind"] as? Int == 2)
        #expect(policy["posters"] as? Int == 3)
    }

    @Test("another policy, another window: tiktokLike attaches 4 ahead and none behind")
    func policyWindow() async throws {
        let (_, policy) = try await greeting(policy: TikTokLikePolicy())
        #expect(policy["name"] as? String == "tiktokLike")
        let attach = policy["attach"] as? [String: Any]
        #expect(attach?["ahead"] as? Int == 4 && attach?["behind"] as? Int == 0)
        #expect(policy["posters"] as? Int == 5)
    }

    /// A policy that wants only the current item and records the history of every context it is asked about.
    final class Recorder: PrefetchPolicy {
        let contexts = Locked<[PrefetchContext]>([])
        var name: String { "recorder" }
        func wanted(in context: PrefetchContext) -> [PrefetchRequest] {
            contexts.withLock { $0.append(context) }
            return []
        }
        var last: PrefetchContext? { contexts.withLock { $0.last } }
    }

    @Test("a viewer's moves are FeedPosition's: a swipe joins the history, staying or the first position does not, and the history keeps the last historyLimit swipes")
    func movesFollowFeedPosition() async throws {
        let recorder = Recorder()
        let server = try await ServerHarness.start(
            ServeFeeds.loader(try ServeFeeds.folder([Self.clip, Self.clip, Self.clip, Self.clip])), policy: recorder)
        defer { Task { await server.stop() } }
        let hub = server.server.hub
        let viewer = hub.connect()
        defer { hub.disconnect(viewer) }
        _ = await hub.move(viewer, to: 0, time: 0)
        #expect(recorder.last?.current == 0 && recorder.last?.history == [])
        _ = await hub.move(viewer, to: 2, time: 0)
        #expect(recorder.last?.history.map { [$0.from, $0.to] } == [[0, 2]])
        // The playhead's report at the same item: not a swipe.
        _ = await hub.move(viewer, to: 2, time: 1.5)
        #expect(recorder.last?.history.count == 1)
        _ = await hub.move(viewer, to: 1, time: 0)
        #expect(recorder.last?.history.map { [$0.from, $0.to] } == [[0, 2], [2, 1]])
        #expect(recorder.last?.history.last?.direction == -1)
        // The history the policy reads is FeedPosition's, bounded the same way.
        for n in 0..<(FeedPosition.historyLimit + 8) {
            _ = await hub.move(viewer, to: n % 2 == 0 ? 3 : 1, time: 0)
        }
        let history = try #require(recorder.last?.history)
        #expect(history.count == FeedPosition.historyLimit)
        #expect(history.last.map { [$0.from, $0.to] } == [3, 1])
        #expect(history.allSatisfy { $0.from != $0.to })
    }
}
