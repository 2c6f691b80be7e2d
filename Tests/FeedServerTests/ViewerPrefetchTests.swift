import Feed
@testable import FeedServer
import Foundation
import Media
import Prefetch
import TestSupport
import Testing
import Transcode

/// A viewer's position drives the prefetch policy on real media: neighbours' first segments are ready before the
/// swipe, work for items flicked past is cancelled, and a client that hangs up mid-segment cancels its work.
@Suite(.serialized) struct ViewerPrefetchTests {
    static let clips = (0..<8).map { _ in TestFixtures.media("h264_portrait.mp4") }

    func eventually(seconds: Double = 60, _ condition: () async throws -> Bool) async throws -> Bool {
        try await waitForAsync(seconds: seconds, every: 20, condition)
    }

    @Test func neighboursAreReadyBeforeTheSwipeOverTheWebSocket() async throws {
        let server = try await ServerHarness.start(ServeFeeds.loader(try ServeFeeds.folder(Self.clips)),
                                                   policy: WindowPolicy(behind: 2, ahead: 2))
        defer { Task { await server.stop() } }
        // Listed as the page lists them: a whole card's manifest job makes its first segments too.
        let cards = try await server.allCards(limit: 8, pending: true)
        #expect(cards.count == 8)
        let port = server.port
        // The socket's calls block: off the cooperative pool, which the server's handlers need to answer.
        let (ws, swipe, window) = try await offPool { () -> (LoopbackHTTP.WebSocket, String, String) in
            let ws = try LoopbackHTTP.WebSocket(port: port, path: "/api/ws")
            try ws.send(#"{"type":"hello","rendition":"360x640"}"#)
            try ws.send(#"{"type":"at","index":0,"time":0}"#)
            // The first answer: a move from nowhere is a swipe too; then the window.
            return (ws, try ws.receive(), try ws.receive())
        }
        #expect(swipe.contains(#""type":"swipe""#) && swipe.contains(#""index":0"#), "\(swipe)")
        #expect(window.contains(#""type":"window""#) && window.contains(#""current":0"#))
        // Items 1 and 2 get their first segment of the named rendition without any request for them.
        func ready(_ index: Int) -> Bool {
            let poster = cards[index]["poster"] as? String ?? ""
            let folder = poster.dropFirst("/media/".count).dropLast("/poster.jpg".count)
            return server.engine.cache.contains("\(folder)/360x640/seg-0.m4s")
        }
        #expect(try await eventually {
            try await offPool { try ws.answerPings() }
            return ready(1) && ready(2)
        })
        #expect(!ready(5))
        // The swipe to item 1 is a hit, answered over the socket.
        let hit = try await offPool { () -> String in
            try ws.send(#"{"type":"at","index":1,"time":0}"#)
            let hit = try ws.receive()
            _ = try ws.receive()
            return hit
        }
        let said = try JSONSerialization.jsonObject(with: Data(hit.utf8)) as? [String: Any]
        #expect(said?["type"] as? String == "swipe" && said?["index"] as? Int == 1 && said?["hit"] as? Bool == true)
        let metrics = try await server.get("/metrics")
        #expect(metrics.text.contains("videofeed_prefetch_hits_total 1"))
        ws.hangUp()
    }

    @Test func workForItemsFlickedPastIsCancelled() async throws {
        // One worker and slow settings, so that the neighbours' work is still queued or running when the viewer
        // flicks far ahead.
        var settings = TranscodeSettings()
        settings.video.preset = "slow"
        let server = try await ServerHarness.start(ServeFeeds.loader(try ServeFeeds.folder(Self.clips)),
                                                   workers: 1, settings: settings,
                                                   policy: WindowPolicy(behind: 0, ahead: 3))
        defer { Task { await server.stop() } }
        let cards = try await server.allCards(limit: 8)
        let hub = server.server.hub
        let viewer = hub.connect()
        _ = await hub.move(viewer, to: 0, time: 0)
        #expect(try await eventually(seconds: 60) { server.engine.pool.runningCount > 0 })
        let folders = cards.map { card -> String in
            let poster = card["poster"] as? String ?? ""
            return String(poster.dropFirst("/media/".count).dropLast("/poster.jpg".count))
        }
        // Flick to the far end: items 0…3's work is no longer wanted by anyone.
        _ = await hub.move(viewer, to: 7, time: 0)
        #expect(try await eventually(seconds: 90) {
            (0...3).allSatisfy { i in
                [Artifact.poster, .segment(rendition: 0, index: 0)].allSatisfy {
                    server.engine.pool.state(of: JobKey(folder: folders[i], artifact: $0)) == nil
                }
            }
        })
        let text = try await server.get("/metrics").text
        let cancelled = text.split(separator: "\n").first { $0.hasPrefix("videofeed_jobs_cancelled_total ") }
        #expect((cancelled.flatMap { Double($0.split(separator: " ")[1]) } ?? 0) >= 1, "\(text)")
        hub.disconnect(viewer)
        #expect(try await eventually(seconds: 90) { server.engine.pool.queueDepth == 0 })
    }

    /// A page that lets a card go aborts its request for the whole card: the manifest it waited for is withdrawn.
    @Test func aClientThatHangsUpWaitingForACardCancelsItsManifest() async throws {
        var settings = TranscodeSettings()
        settings.video.preset = "placebo"
        // One segment over the whole clip: the manifest's placebo encode of 156 frames outlasts the hang-up by far,
        // also under ThreadSanitizer in the parallel run (with the 1 s first segment it could finish first).
        settings.segmentSeconds = 6
        settings.firstSegmentSeconds = 6
        let server = try await ServerHarness.start(
            ServeFeeds.loader(try ServeFeeds.folder([TestFixtures.transcode("long_gop_b.mp4")])),
            workers: 1, settings: settings, warmItems: 0)
        defer { Task { await server.stop() } }
        let fd = try LoopbackHTTP.connect(server.port)
        try LoopbackHTTP.send(fd, Array("GET /api/feed?limit=1&cursor=0 HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        #expect(try await eventually(seconds: 60) { server.engine.pool.runningCount == 1 })
        close(fd)
        #expect(try await eventually(seconds: 60) { server.engine.pool.runningCount == 0 })
        let cards = try await server.allCards(limit: 1, pending: true)
        let poster = try #require(cards.first?["poster"] as? String)
        let folder = poster.dropFirst("/media/".count).dropLast("/poster.jpg".count)
        #expect(!server.engine.cache.contains("\(folder)/manifest.json"))
        let text = try await server.get("/metrics").text
        #expect(text.contains("videofeed_jobs_cancelled_total 1"), "\(text)")
    }

    @Test func aClientThatHangsUpMidSegmentCancelsItsWork() async throws {
        var settings = TranscodeSettings()
        settings.video.preset = "placebo"
        let server = try await ServerHarness.start(
            ServeFeeds.loader(try ServeFeeds.folder([TestFixtures.transcode("long_gop_b.mp4")])),
            workers: 1, settings: settings)
        defer { Task { await server.stop() } }
        let card = try #require(try await server.allCards().first)
        // Segment 1: the first segments are made with the manifest.
        let segment = try #require((card["renditions"] as? [[String: Any]])?.first?["segments"] as? [String])[1]
        let fd = try LoopbackHTTP.connect(server.port)
        try LoopbackHTTP.send(fd, Array("GET \(segment) HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        #expect(try await eventually(seconds: 60) { server.engine.pool.runningCount == 1 })
        close(fd)
        #expect(try await eventually(seconds: 60) { server.engine.pool.runningCount == 0 })
        let key = String(segment.dropFirst("/media/".count))
        #expect(!server.engine.cache.contains(key))
        let text = try await server.get("/metrics").text
        #expect(text.contains("videofeed_jobs_cancelled_total 1"), "\(text)")
    }
}
