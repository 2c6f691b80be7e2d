import EngineSupport
import Feed
import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import Media
import HummingbirdCore
import NIOCore
import Prefetch

/// `videofeed serve`: the web feed on Hummingbird 2 — the page, the paged listing, media made on demand and ahead
/// of each viewer, the viewers' WebSocket and `/metrics`. docs/serve.md is the HTTP contract.
public struct FeedServer: Sendable {
    /// Where and how to serve.
    public struct Options: Sendable {
        /// The address to bind (127.0.0.1 unless said otherwise).
        public var host = "127.0.0.1"
        /// The port (0: any free port, reported through ``onListening``).
        public var port = 8080
        /// The prefetch policy driven by each viewer's position.
        public var policy: any PrefetchPolicy = StagedPolicy()
        /// Items listed per page when the request does not say.
        public var defaultLimit = 10
        /// How many items of the first page to prepare (manifest, poster, first segment) before anyone asks.
        public var warmItems = 3

        /// The defaults.
        public init() {}
    }

    public let engine: ServeEngine
    public let hub: ViewerHub
    public let options: Options
    let logger: Logger
    let web: WebFiles

    /// A server for `engine` with `options`.
    /// - Throws: when the page's resources are missing from the bundle.
    public init(engine: ServeEngine, options: Options, logger: Logger = Logger(label: "videofeed.serve")) throws {
        self.engine = engine
        self.options = options
        self.logger = logger
        hub = ViewerHub(engine: engine, policy: options.policy)
        web = try WebFiles.load()
    }

    /// Serves until the task is cancelled or the process gets SIGINT/SIGTERM; `onListening` gets the bound port.
    /// - Throws: when the address cannot be bound.
    public func run(onListening: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let router = Router(context: ServeContext.self)
        addRoutes(to: router)
        var app = Application(
            router: router,
            server: .http1WebSocketUpgrade(webSocketRouter: router),
            configuration: .init(address: .hostname(options.host, port: options.port), serverName: "videofeed"),
            onServerRunning: { channel in
                await onListening(channel.localAddress?.port ?? 0)
            },
            logger: logger)
        let engine = self.engine, logger = self.logger, warm = options.warmItems
        app.beforeServerStarts {
            // Prepare the first items before the first viewer comes.
            Task.detached {
                do {
                    for index in 0..<warm {
                        guard let entry = try await engine.catalog.entry(at: index) else { break }
                        _ = try? await engine.manifest(for: entry)
                    }
                } catch {
                    logger.warning("feed: \(Redaction.redacted(String(describing: error)))")
                }
            }
        }
        defer { engine.shutdown() }
        try await app.runService()
    }

    // MARK: - Routes

    func addRoutes(to router: Router<ServeContext>) {
        router.add(middleware: ErrorLogging(logger: logger))
        router.get("/") { _, _ in try web.response(for: "index.html") }
        router.get("/app/**") { request, _ in
            let name = String(request.uri.path.dropFirst("/app/".count))
            return try web.response(for: name)
        }
        router.get("/healthz") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain; charset=utf-8"],
                     body: .init(byteBuffer: ByteBuffer(string: "ok\n")))
        }
        router.get("/metrics") { _, _ in
            engine.metrics.queueDepth.set(Double(engine.pool.queueDepth))
            engine.metrics.running.set(Double(engine.pool.runningCount))
            engine.metrics.cacheBytes.set(Double(engine.cache.bytes))
            let text = engine.metrics.registry.emitToBuffer()
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(bytes: text)))
        }
        router.get("/api/feed") { request, context in try await listing(request, context: context) }
        router.get("/media/**") { request, context in try await media(request, context: context, head: false) }
        router.head("/media/**") { request, context in try await media(request, context: context, head: true) }
        router.ws("/api/ws") { _, _ in .upgrade([:]) } onUpgrade: { inbound, outbound, _ in
            try await viewerSession(inbound: inbound, outbound: outbound)
        }
    }

    // MARK: - Listing

    func listing(_ request: Request, context: ServeContext) async throws -> Response {
        let query = request.uri.queryParameters
        var start = 0
        if let cursor = query.get("cursor") {
            guard let value = Int(cursor), value >= 0, value < 1_000_000_000 else {
                return jsonError(.badRequest, "cursor \(String(cursor.prefix(40))) is not one this server gave")
            }
            start = value
        }
        var limit = options.defaultLimit
        if let text = query.get("limit") {
            guard let value = Int(text), (1...50).contains(value) else {
                return jsonError(.badRequest, "limit must be from 1 to 50")
            }
            limit = value
        }
        // `pending=1`: answer at once; a card whose manifest is not made yet is listed as pending.
        let answerAtOnce = query.get("pending") == "1"
        var entries: [ServedCatalog.Entry] = []
        do {
            for index in start..<(start + limit) {
                guard let entry = try await engine.catalog.entry(at: index) else { break }
                entries.append(entry)
            }
        } catch {
            if entries.isEmpty {
                return jsonError(.badGateway, "the feed cannot be read: \(Redaction.redacted(String(describing: error)))")
            }
        }
        // Every card's manifest, made in parallel on the shared pool (cached once per item version); with
        // `pending=1` only those already made (in memory or in the cache).
        let engine = self.engine, listed = entries
        let makeCards = { @Sendable () async -> [Card] in
            await withTaskGroup(of: (Int, Card).self) { group in
                for (n, entry) in listed.enumerated() {
                    group.addTask {
                        if answerAtOnce, !engine.hasManifest(entry.folder) { return (n, Card(pendingEntry: entry)) }
                        do {
                            let manifest = try await engine.manifest(for: entry)
                            return (n, Card(entry: entry, manifest: manifest, settings: engine.configuration.settings))
                        } catch {
                            return (n, Card(entry: entry, error: Self.itemError(entry, error)))
                        }
                    }
                }
                var all: [(Int, Card)] = []
                for await card in group { all.append(card) }
                return all.sorted { $0.0 < $1.0 }.map(\.1)
            }
        }
        let cards: [Card]
        if answerAtOnce || entries.allSatisfy({ engine.hasManifest($0.folder) }) {
            cards = await makeCards()
        } else {
            // A manifest still to make: the work is withdrawn when the client goes away (a page that moved on lets
            // its neighbours' cards go), as for media.
            do {
                cards = try await HangUpWatch.run(on: context.channel) { await makeCards() }
            } catch {
                return jsonError(.serviceUnavailable, "cancelled")
            }
        }
        let total = await engine.catalog.total
        let next: String? = {
            if let total { return start + entries.count < total ? String(start + entries.count) : nil }
            return entries.count == limit ? String(start + entries.count) : nil
        }()
        let page = ListingPage(resources: cards, nextCursor: next, total: total)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let body = try encoder.encode(page)
        return Response(status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
                        body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// The error of an item that cannot be played, as a card shows it: naming the item by public ID and file name,
    /// never by the server's own paths, and without secrets.
    static func itemError(_ entry: ServedCatalog.Entry, _ error: any Error) -> String {
        var text = String(describing: error)
        if entry.item.source.isFileURL {
            text = text.replacingOccurrences(of: entry.path, with: (entry.path as NSString).lastPathComponent)
        }
        text = Redaction.redacted(text)
        return text.hasPrefix(entry.item.publicID) ? text : "\(entry.item.publicID): \(text)"
    }

    // MARK: - Media

    func media(_ request: Request, context: ServeContext, head: Bool) async throws -> Response {
        let raw = request.uri.path.dropFirst("/media/".count)
        var parts: [String] = []
        for component in raw.split(separator: "/", omittingEmptySubsequences: false) {
            // Encoded slashes, dot segments, NULs and empty components never name a cached file.
            guard let decoded = String(component).removingPercentEncoding, !decoded.isEmpty, decoded != ".",
                  decoded != "..", !decoded.contains("/"), !decoded.contains("\0") else {
                return plain(.notFound, "not found\n")
            }
            parts.append(decoded)
        }
        // The folder is listed by this process, or else (another replica listed it, or the server restarted) found
        // in the feed.
        let catalog = engine.catalog
        var found = await Self.split(parts) { await catalog.knows(folder: $0) }
        if found == nil { found = await Self.split(parts) { await catalog.resolve(folder: $0) } }
        guard let (folder, file) = found else { return plain(.notFound, "not found\n") }
        let engine = self.engine, name = file
        let bytes: [UInt8]
        do {
            if let cached = try await engine.cachedBytes(folder: folder, file: name) {
                // Cached (the source checked): nothing to wait for, so no work task and no hang-up watch.
                bytes = cached
            } else {
                // The work is cancelled when the client goes away (a viewer that swiped on, a closed tab).
                // (The channel's closeFuture is not used for this: a callback on it would keep the task, and the
                // bytes it returned, until the connection closes — every response of a kept-alive connection.)
                engine.metrics.mediaWaits.increment()
                bytes = try await HangUpWatch.run(on: context.channel) {
                    try await engine.bytes(folder: folder, file: name)
                }
            }
        } catch is CancellationError {
            // The client hung up (or the server is stopping): nobody reads this answer.
            return plain(.serviceUnavailable, "cancelled\n")
        } catch let failure as ServeEngine.Failure {
            switch failure {
            case .notFound: return plain(.notFound, "not found\n")
            case .gone(let why): return plain(.gone, why + "\n")
            case .failed(let why):
                logger.warning("media \(folder)/\(file): \(why)")
                return plain(.unprocessableContent, why + "\n")
            }
        }
        let response = HTTPRanges.response(for: request, bytes: bytes, key: folder + "/" + file,
                                           mime: Self.mimeType(file), head: head)
        if !head, response.status == .ok || response.status == .partialContent {
            if file.hasSuffix(".m4s") { engine.metrics.segmentsServed.increment() }
            engine.metrics.filesServed.increment()
        }
        return response
    }

    /// The item folder and file that `parts` name: the longest leading run of components that `isFolder`, and the
    /// rest. Nil when none is.
    static func split(_ parts: [String], isFolder: (String) async -> Bool) async -> (folder: String, file: String)? {
        for split in stride(from: parts.count - 1, to: 0, by: -1) {
            let candidate = parts[0..<split].joined(separator: "/")
            if await isFolder(candidate) { return (candidate, parts[split...].joined(separator: "/")) }
        }
        return nil
    }

    static func mimeType(_ file: String) -> String {
        switch (file as NSString).pathExtension.lowercased() {
        case "mp4": "video/mp4"
        case "m4s": "video/iso.segment"
        case "jpg", "jpeg": "image/jpeg"
        case "webp": "image/webp"
        case "m3u8": "application/vnd.apple.mpegurl"
        case "json": "application/json"
        default: "application/octet-stream"
        }
    }

    func plain(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(status: status, headers: [.contentType: "text/plain; charset=utf-8"],
                 body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    func jsonError(_ status: HTTPResponse.Status, _ message: String) -> Response {
        let body = (try? JSONSerialization.data(withJSONObject: ["error": message])) ?? Data()
        return Response(status: status, headers: [.contentType: "application/json"],
                        body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    // MARK: - Viewers

    func viewerSession(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async throws {
        let viewer = hub.connect()
        defer { hub.disconnect(viewer) }
        for try await message in inbound.messages(maxSize: 1 << 14) {
            guard case .text(let text) = message,
                  let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                  let type = object["type"] as? String else { continue }
            switch type {
            case "hello":
                hub.hello(viewer, width: object["width"] as? Int, height: object["height"] as? Int,
                          rendition: object["rendition"] as? String)
            case "at":
                guard let index = object["index"] as? Int else { continue }
                let time = (object["time"] as? Double) ?? Double((object["time"] as? Int) ?? 0)
                let answer = await hub.move(viewer, to: index, time: time)
                if let hit = answer.hit {
                    try await outbound.write(.text(#"{"type":"swipe","index":\#(index),"hit":\#(hit)}"#))
                }
                let items = answer.window.map { #"{"index":\#($0.index),"state":"\#($0.state)"}"# }
                try await outbound.write(.text(
                    #"{"type":"window","current":\#(index),"items":[\#(items.joined(separator: ","))]}"#))
            default: continue
            }
        }
    }
}

/// The request context: Hummingbird's basics, the WebSocket handle, and the connection's channel (whose close
/// cancels the work a request waits for).
public struct ServeContext: RequestContext, WebSocketRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let webSocket: WebSocketHandlerReference<ServeContext>
    /// The client's connection.
    public let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        webSocket = .init()
        channel = source.channel
    }
}

/// Logs unexpected errors with the request path (the responses stay as Hummingbird makes them).
struct ErrorLogging: RouterMiddleware {
    let logger: Logger

    func handle(_ request: Request, context: ServeContext,
                next: (Request, ServeContext) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError {
            throw error
        } catch {
            logger.error("\(request.method) \(request.uri.path): \(Redaction.redacted(String(describing: error)))")
            throw error
        }
    }
}


/// Notices a client that hangs up while its request waits for work. The server reads nothing more from a connection
/// while a request is being answered (and allows half-closed connections), so a client's close is not seen until the
/// answer is written; the socket's TCP state is: `CLOSE_WAIT` once the client has closed its side.
enum HangUpWatch {
    /// Runs `body` in a task of its own, cancelled when the client hangs up (``start(_:hungUp:)``) or the calling
    /// task is cancelled.
    /// - Throws: `body`'s error; `CancellationError` when it was cancelled, even if it finished.
    static func run<T: Sendable>(on channel: any Channel,
                                 _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let work = Task { try await body() }
        let watch = start(channel) { work.cancel() }
        defer { watch.cancel() }
        let value = try await withTaskCancellationHandler { try await work.value } onCancel: { work.cancel() }
        if work.isCancelled { throw CancellationError() }
        return value
    }

    /// Linux's `TCP_CLOSE_WAIT`.
    static let closeWait: UInt8 = 8

    /// Checks `channel` every 100 ms until cancelled, calling `hungUp` once if the client closed its side.
    static func start(_ channel: any Channel, hungUp: @escaping @Sendable () -> Void) -> Task<Void, Never> {
        Task {
            guard let provider = channel as? any SocketOptionProvider else { return }
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(100))
                if Task.isCancelled { return }
                do {
                    let info = try await provider.getTCPInfo().get()
                    if info.tcpi_state == closeWait {
                        hungUp()
                        return
                    }
                } catch {
                    hungUp()
                    return
                }
            }
        }
    }
}
