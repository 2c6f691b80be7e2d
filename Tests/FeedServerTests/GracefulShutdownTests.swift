import EngineSupport
import Feed
@testable import FeedServer
import Foundation
import Logging
import Media
import Prefetch
import TestSupport
import Testing

/// A graceful shutdown (SIGTERM, SIGINT or `FeedServer.shutDownGracefully()`): the requests under way are answered
/// whole, then the server takes no connection, the engine's pool stops and `run` returns.
@Suite(.serialized) struct GracefulShutdownTests {
    @Test func aGracefulShutdownAnswersTheRequestsUnderWayThenStopsTheEngine() async throws {
        let root = try ServeFeeds.folder([TestFixtures.media("h264_portrait.mp4")], label: "serve-graceful")
        let server = try await ServerHarness.start(ServeFeeds.loader(root), workers: 1)
        let card = try #require(try await server.allCards(limit: 1).first)
        let rendition = try #require((card["renditions"] as? [[String: Any]])?.first)
        let mp4 = try #require(rendition["mp4"] as? String)
        // The whole MP4 of a cold item: a job of a second or so, waited for by the request.
        let request = Task { try await server.get(mp4) }
        let started = await waitForAsync(seconds: 60) { server.engine.pool.runningCount > 0 }
        try #require(started, "the MP4's job never started")
        await server.server.shutDownGracefully()
        let answer = try await request.value
        #expect(answer.status == 200)
        #expect(answer.headers["content-length"] == String(answer.body.count))
        // Whole and as the cache holds it: the job was not cut short by the shutdown.
        let key = String(mp4.dropFirst("/media/".count))
        let cached = try Data(contentsOf: server.cache.appendingPathComponent(key))
        #expect(answer.body == [UInt8](cached))
        let ended = await server.ended(within: 60)
        switch ended {
        case .success?: break
        case .failure(let error)?: Issue.record("run threw \(error)")
        case nil: Issue.record("run did not return within 60 s of a graceful shutdown")
        }
        // No connection is taken, and the pool has stopped: work asked of it now is refused, not started.
        #expect(throws: (any Error).self) { try LoopbackHTTP.request(server.port, "/healthz") }
        let entry = try #require(try await server.engine.catalog.entry(at: 0))
        await #expect(throws: WorkPool.Cancelled.self) {
            try await server.engine.pool.wait(JobKey(folder: entry.folder, artifact: .segments(index: 1)))
        }
        #expect(server.engine.pool.runningCount == 0)
    }

    @Test func aShutdownAskedBeforeTheServerRunsStopsItAsItStarts() async throws {
        let root = try ServeFeeds.folder([TestFixtures.media("h264_portrait.mp4")], label: "serve-graceful-early")
        let folder = try TestFixtures.temporaryFolder("serve-graceful-cache")
        let engine = try ServeEngine(feed: Feed(loader: ServeFeeds.loader(root)),
                                     configuration: ServeEngine.Configuration(cache: folder))
        var options = FeedServer.Options()
        options.port = 0
        var logger = Logger(label: "videofeed.serve.test")
        logger.logLevel = .critical
        let server = try FeedServer(engine: engine, options: options, logger: logger)
        await server.shutDownGracefully()
        let run = Task { try await server.run() }
        let ended = await withTaskGroup(of: Bool.self) { group in
            group.addTask { _ = await run.result; return true }
            group.addTask { try? await Task.sleep(for: .seconds(60)); return false }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        #expect(ended, "run did not return after a shutdown asked before it")
        run.cancel()
    }
}
