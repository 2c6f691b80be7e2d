import EngineSupport
import Feed
import FeedServer
import Foundation
import Media
import Logging
import Prefetch
import TestSupport
import Transcode

/// A `videofeed serve` engine and server in this process on a free port, over a feed folder or manifest.
final class ServerHarness: Sendable {
    let engine: ServeEngine
    let server: FeedServer
    let port: Int
    let cache: URL
    private let task: Task<Void, any Error>

    /// Starts a server over `loader`, caching in `cache` (a new folder when nil).
    static func start(_ loader: any FeedLoader, cache: URL? = nil, workers: Int = 2,
                      settings: TranscodeSettings = TranscodeSettings(),
                      policy: any PrefetchPolicy = StagedPolicy(), warmItems: Int = 0,
                      options change: (inout FeedServer.Options) -> Void = { _ in }) async throws -> ServerHarness {
        let folder = try cache ?? TestFixtures.temporaryFolder("serve-cache")
        var configuration = ServeEngine.Configuration(cache: folder)
        configuration.workers = workers
        configuration.settings = settings
        let engine = try ServeEngine(feed: Feed(loader: loader), configuration: configuration)
        var options = FeedServer.Options()
        options.port = 0
        options.policy = policy
        options.warmItems = warmItems
        change(&options)
        // Quiet: stopping by cancellation makes Hummingbird log errors that say nothing about the test.
        var logger = Logger(label: "videofeed.serve.test")
        logger.logLevel = .critical
        let server = try FeedServer(engine: engine, options: options, logger: logger)
        let bound = Locked<Int?>(nil)
        let task = Task { try await server.run { port in bound.set(port) } }
        for _ in 0..<500 {
            if let port = bound.get() { return ServerHarness(engine: engine, server: server, port: port, cache: folder, task: task) }
            try await Task.sleep(for: .milliseconds(10))
        }
        task.cancel()
        throw POSIXError(.ETIMEDOUT)
    }

    private init(engine: ServeEngine, server: FeedServer, port: Int, cache: URL, task: Task<Void, any Error>) {
        self.engine = engine
        self.server = server
        self.port = port
        self.cache = cache
        self.task = task
    }

    /// A request, made off the concurrency pool (the client blocks on its socket).
    func get(_ path: String, method: String = "GET", headers: [String: String] = [:]) async throws -> LoopbackHTTP.Answer {
        let port = self.port
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try LoopbackHTTP.request(port, path, method: method, headers: headers) })
            }
        }
    }

    /// The JSON object of `path`.
    func json(_ path: String) async throws -> [String: Any] {
        let answer = try await get(path)
        return (try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any]) ?? [:]
    }

    /// Every card of the feed, page by page.
    /// Every card of the feed, page by page; with `pending`, as `pending=1` lists them (no manifest made).
    func allCards(limit: Int = 3, pending: Bool = false) async throws -> [[String: Any]] {
        var cards: [[String: Any]] = []
        var cursor: String? = nil
        repeat {
            let page = try await json("/api/feed?limit=\(limit)" + (pending ? "&pending=1" : "")
                                      + (cursor.map { "&cursor=\($0)" } ?? ""))
            cards += page["resources"] as? [[String: Any]] ?? []
            cursor = page["next_cursor"] as? String
        } while cursor != nil && cards.count < 1000
        return cards
    }

    func stop() async {
        task.cancel()
        _ = try? await task.value
    }

    /// Whether `run` returned (by itself: nothing cancels it here) within `seconds`, and how.
    func ended(within seconds: Double) async -> Result<Void, any Error>? {
        let task = self.task
        return await withTaskGroup(of: Result<Void, any Error>?.self) { group in
            group.addTask { await task.result }
            group.addTask {
                try? await Task.sleep(for: .seconds(seconds))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}

/// Feed folders and manifests for the server's tests.
enum ServeFeeds {
    /// A folder feed of copies of `files` (paths), named in order so that listing order is stable.
    static func folder(_ files: [String], label: String = "serve-feed") throws -> URL {
        let root = try TestFixtures.temporaryFolder(label)
        for (n, file) in files.enumerated() {
            let name = String(format: "%02d-", n) + (file as NSString).lastPathComponent
            try FileManager.default.copyItem(atPath: file, toPath: root.appendingPathComponent(name).path)
        }
        return root
    }

    /// A name-ordered folder loader over `root`.
    static func loader(_ root: URL) -> any FeedLoader { DirectoryFeedLoader(root: root, order: .name) }
}
