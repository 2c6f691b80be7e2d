import ArgumentParser
import Feed
import FeedServer
import Foundation
import Logging
import Media

/// `videofeed serve [SOURCE]`: the web feed (page, listing, media on demand and ahead of each viewer, metrics).
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the feed to browsers: a TikTok-style page, its listing and renditions made on demand.",
        discussion: """
            Opens http://HOST:PORT/ (127.0.0.1:8080 by default): a vertical feed that plays each item through Media \
            Source Extensions. Posters, initialisation and media segments, previews and MP4s are made by FFmpeg on \
            first request or ahead of each viewer (its position drives --policy), kept in --cache (atomic writes, \
            LRU under --cache-size; replicas may share it), at the paths `videofeed transcode` writes with the same \
            options. The listing follows its source (--refresh): new files appear, removed ones go (their URLs \
            answer 410). API: /api/feed?cursor=&limit=, /media/..., /api/ws, /metrics, /healthz (docs/serve.md). \
            Stops on SIGINT or SIGTERM.
            """
    )

    @OptionGroup var feedSource: FeedSourceOptions
    @OptionGroup var mediaPolicy: MediaPolicyOptions
    @OptionGroup var rendition: RenditionOptions

    @Option(help: "Address to bind; 0.0.0.0 serves every interface.")
    var host = "127.0.0.1"

    @Option(help: "Port (0: any free port, printed when listening).")
    var port = 8080

    @Option(help: "Cache folder for posters, segments and renditions (shared by replicas).")
    var cache = "serve-cache"

    @Option(name: .customLong("cache-size"), help: "Cache size limit, e.g. 2GiB, 500M, or bytes.")
    var cacheSize: ByteCount = .mebibytes(2048)

    @Option(help: "Worker threads shared by all viewers (default: cores).")
    var workers: Int?

    @Option(help: "Prefetch policy driven by each viewer's position: window, forwardN, tiktokLike, staged, swipeAware.")
    var policy: PolicyChoice = .staged

    @Option(name: .customLong("job-time-limit"), help: "Seconds one piece of work (a segment, a poster) may take.")
    var jobTimeLimit: Double = 120

    @Option(name: .customLong("allow-origin"),
            help: "An origin (scheme://host[:port], or *) besides the server's own whose pages may open the viewers' WebSocket; repeatable.")
    var allowOrigin: [String] = []

    @Option(name: .customLong("max-connections"),
            help: "Open connections at most (default 10000, under the open-file limit); past it, 503.")
    var maxConnections: Int?

    @Option(help: """
        The listing follows its source: a folder is watched (inotify) and rescanned every SECONDS, a URL's listing \
        is asked for again every SECONDS (ETag / If-Modified-Since), a listing file is checked every SECONDS. 0 reads \
        the source once.
        """)
    var refresh: Double = 10

    @Option(name: .customLong("shutdown-grace"),
            help: "Seconds SIGTERM or SIGINT waits for the requests under way before cancelling them.")
    var shutdownGrace: Double = 20

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0-65535.") }
        if let workers { try NumberRules.count(workers, "--workers", max: NumberRules.maxThreads) }
        try NumberRules.timeLimit(jobTimeLimit, "--job-time-limit")
        if let maxConnections { try NumberRules.count(maxConnections, "--max-connections", max: 1_000_000) }
        guard refresh == 0 || (refresh >= 0.1 && refresh <= 86_400) else {
            throw ValidationError("--refresh must be 0 (read once) or from 0.1 to 86400 seconds.")
        }
        try NumberRules.timeLimit(shutdownGrace, "--shutdown-grace")
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level must be trace, debug, info, notice, warning, error or critical.")
        }
    }

    /// The engine configuration `serve` makes its artifacts with (also what `simulate calibrate --serve` measures):
    /// the rendition and open-policy options, and a job's time limit.
    static func engineConfiguration(cache: URL, rendition: RenditionOptions, mediaPolicy: MediaPolicyOptions,
                                    jobTimeLimit: Double) -> ServeEngine.Configuration {
        var configuration = ServeEngine.Configuration(cache: cache)
        // A job decodes with as many threads as cores: on a miss it runs alone (the pool holds the viewer's other
        // work), and FFmpeg's automatic count (cores + 1) made a 4K segment on 2 cores 8 % slower and 25 MiB larger.
        // The workers run at nice 10; the output is the same with any count.
        configuration.settings = rendition.settings(jobs: 1)
        if rendition.threads == nil { configuration.settings.threads = ProcessInfo.processInfo.activeProcessorCount }
        configuration.openOptions = mediaPolicy.applied(to: configuration.openOptions)
        configuration.jobTimeLimit = jobTimeLimit
        return configuration
    }

    func run() async throws {
        var logger = Logger(label: "videofeed.serve")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        let loader: any FeedLoader
        var watch: SourceWatch? = nil
        if refresh > 0 {
            (loader, watch) = try feedSource.makeWatchedLoader(format: nil, for: .batch, refresh: refresh)
        } else {
            loader = try feedSource.makeLoader(format: nil, for: .batch)
        }
        let feed = Feed(loader: loader, prefetchDistance: 10)
        var configuration = Self.engineConfiguration(cache: URL(fileURLWithPath: cache), rendition: rendition,
                                                     mediaPolicy: mediaPolicy, jobTimeLimit: jobTimeLimit)
        configuration.cacheLimit = Int64(cacheSize.bytes)
        if let workers { configuration.workers = workers }
        let engine: ServeEngine
        do {
            engine = try ServeEngine(feed: feed, configuration: configuration, logger: logger)
        } catch {
            Console.error("serve: cannot use the cache folder \(Console.safe(cache)): \(Console.describe(error))")
            throw ExitCode(1)
        }
        var options = FeedServer.Options()
        options.host = host
        options.port = port
        options.policy = policy.policy
        options.allowedOrigins = allowOrigin
        options.watch = watch
        options.shutdownGrace = shutdownGrace
        if let maxConnections { options.limits.maxConnections = maxConnections }
        let server = try FeedServer(engine: engine, options: options, logger: logger)
        let host = self.host
        do {
            try await server.run { port in
                Console.out("listening on http://\(host.contains(":") ? "[\(host)]" : host):\(port)/\n")
            }
        } catch {
            Console.error("serve: \(Console.describe(error))")
            throw ExitCode(1)
        }
    }
}
