import EngineSupport
import Feed
import FeedPlayer
import Foundation
import Prefetch
import TestSupport
import Testing

/// FeedPlayer over a paged listing served on 127.0.0.1 (Cloudinary's shape, three items a page, real media).
@Suite struct PagingTests {
    static let files = ["h264_portrait.mp4", "hevc.mp4", "vp9.webm", "av1.mp4", "rotate90.mp4", "vfr.mp4",
                        "h264_portrait.mp4", "mpeg4.avi", "hevc.mp4"].map(TestFixtures.media)

    /// Waits for the page load in flight to end (``FeedPlayer/waitForPage(timeout:)``, woken by its end) on a thread of
    /// its own: not on one of the concurrency pool's, which the player's page loads need.
    static func pageLoaded(_ player: FeedPlayer) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: player.waitForPage(timeout: 30)) }.start()
        }
    }

    static func player(_ server: PagedListingServer, wraps: Bool) async throws -> FeedPlayer {
        let loader = RemoteFeedLoader(url: URL(string: server.listingURL)!, format: .cloudinary,
                                      retry: RetryPolicy(maxAttempts: 1, initialDelay: 0))
        var configuration = smallConfiguration()
        configuration.wraps = wraps
        return try await FeedPlayer.paging(Feed(loader: loader), configuration: configuration, pageAhead: 2)
    }

    @Test("swipes through three pages: each page arrives before the window reaches it, nothing held is disturbed, and the feed wraps only once its end is known")
    func threePages() async throws {
        let server = try PagedListingServer(files: Self.files, perPage: 3)
        let player = try await Self.player(server, wraps: true)
        let grew = Locked<[String]>([])
        player.onEvent { event in
            if case .feedGrew(let count, let complete) = event { grew.withLock { $0.append("\(count) \(complete)") } }
        }
        #expect(player.itemCount == 3 && !player.isFeedComplete)
        // Before the end is known, the first item has no previous one.
        #expect(player.previous().frame == nil && player.currentIndex == 0)
        player.start(at: 0)
        #expect(player.waitForFirstFrame(of: 0, timeout: 30).frame != nil)
        for step in 1...8 {
            #expect(await Self.pageLoaded(player))
            #expect(player.settle(timeout: 30))
            // Every neighbour was prefetched, across the page boundaries too: each swipe is a hit.
            let frame = player.next().frame
            #expect(player.currentIndex == step)
            #expect(frame?.index == step, "swipe to \(step) was not a hit")
            #expect(player.item(at: step)?.publicID == "paged/item_\(step)")
        }
        #expect(await Self.pageLoaded(player))
        #expect(player.itemCount == 9 && player.isFeedComplete)
        #expect(grew.withLock { $0 } == ["6 false", "9 true"])
        // Each page was asked for once.
        #expect(try (1...3).map { try server.requests(forPage: $0) } == [1, 1, 1])
        // The end is known: after the last item comes the first.
        #expect(player.settle(timeout: 30))
        #expect(player.next().frame?.index == 0)
        let m = player.metrics
        #expect(m.hits == 9 && m.misses == 0 && m.failures == 0 && m.cancellations == 0, "\(m)")
        player.shutdown()
    }

    @Test("a page that fails is tried again while the player goes on with what it has")
    func failingPage() async throws {
        let server = try PagedListingServer(files: Array(Self.files.prefix(6)), perPage: 3, failingPage: 2, failures: 2)
        let player = try await Self.player(server, wraps: false)
        let seen = Locked<[String]>([])
        let events = ChangeSignal()
        player.onEvent { event in
            switch event {
            case .pageFailed: seen.withLock { $0.append("failed") }
            case .feedGrew(let count, _): seen.withLock { $0.append("grew \(count)") }
            default: break
            }
            events.notify()
        }
        player.start(at: 0)
        // The first page plays on while page 2 fails.
        #expect(player.waitForFirstFrame(of: 0, timeout: 30).frame != nil)
        #expect(player.settle(timeout: 30))
        #expect(player.next().frame?.index == 1)
        #expect(player.settle(timeout: 30))
        #expect(player.next().frame?.index == 2)
        // Page 2 fails twice (404), then arrives on the retries 1 s and 2 s later.
        // The count grows before the event reaches the handler (on another thread): wait for both. The page load is
        // a Task: in the whole suite on 2 cores, sync tests can hold the cooperative threads for a minute, so the
        // bound is for a hang, not for a slow start.
        #expect(await events.wait(timeout: 600) { player.itemCount == 6 && seen.withLock { $0.last == "grew 6" } })
        #expect(seen.withLock { $0 } == ["failed", "failed", "grew 6"])
        #expect(try server.requests(forPage: 2) == 3)
        #expect(player.settle(timeout: 30))
        #expect(player.next().frame?.index == 3)
        #expect(player.metrics.failures == 0)
        player.shutdown()
    }
}
