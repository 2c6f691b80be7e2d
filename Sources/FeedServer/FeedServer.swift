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
import ServiceLifecycle
import Transcode

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
        /// Origins (`scheme://host[:port]`, or `*`) besides the server's own whose pages may open the viewers'
        /// WebSocket; a handshake from any other `Origin` is refused.
        public var allowedOrigins: [String] = []
        /// What one connection may hold and for how long.
        public var limits = ConnectionLimits()
        /// The watch of the feed's source (``SourceWatch``), when the listing follows it: the catalog reads the source
        /// again after each change, viewers' windows are planned again and the page is told. Nil: read once.
        public var watch: SourceWatch?
        /// Seconds a graceful shutdown (``FeedServer/shutDownGracefully()``, SIGTERM, SIGINT) waits for the requests
        /// under way before it cancels them: below an orchestrator's kill deadline (Kubernetes: 30 s).
        public var shutdownGrace: Double = 20

        /// The defaults.
        public init() {}
    }

    public let engine: ServeEngine
    public let hub: ViewerHub
    public let options: Options
    let logger: Logger
    let web: WebFiles
    /// The open connections, counted against ``ConnectionLimits/maxConnections``.
    let connections: ConnectionRegistry
    /// The running service group, for ``shutDownGracefully()``.
    let stopper = GracefulStop()

    /// Connections open now.
    public var openConnections: Int { connections.open }

    /// A server for `engine` with `options`.
    /// - Throws: when the page's resources are missing from the bundle.
    public init(engine: ServeEngine, options: Options, logger: Logger = Logger(label: "videofeed.serve")) throws {
        self.engine = engine
        self.options = options
        self.logger = logger
        hub = ViewerHub(engine: engine, policy: options.policy)
        connections = ConnectionRegistry(maxConnections: options.limits.effectiveMaxConnections())
        web = try WebFiles.load()
    }

    /// Serves until the task is cancelled (everything stops at once) or a graceful shutdown: SIGINT, SIGTERM or
    /// ``shutDownGracefully()``. `onListening` gets the bound port.
    /// - Throws: when the address cannot be bound.
    public func run(onListening: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let router = Router(context: ServeContext.self)
        addRoutes(to: router)
        let limits = options.limits, registry = connections
        let webSocketResponder = router.buildResponder()
        let http1 = HTTP1Channel.Configuration(
            idleTimeout: ConnectionGuard.amount(limits.idleTimeout),
            httpDecoderConfiguration: .init(maxHeaderFieldSize: limits.maxHeaderBytes,
                                            maxHeaderListSize: limits.maxHeaderBytes, maxHeaderFieldCount: 100))
        let channel = HTTP1WebSocketUpgradeChannel.Configuration(http1: http1, ws: .init(maxFrameSize: 1 << 14))
        let app = Application(
            router: router,
            server: HTTPServerBuilder { responder in
                GuardedChannel(inner: HTTP1WebSocketUpgradeChannel(responder: responder,
                                                                   webSocketResponder: webSocketResponder,
                                                                   configuration: channel),
                               limits: limits, registry: registry)
            },
            configuration: .init(address: .hostname(options.host, port: options.port), serverName: "videofeed"),
            onServerRunning: { channel in
                await onListening(channel.localAddress?.port ?? 0)
            },
            logger: logger)
        // One group (ServeServices.swift): a graceful shutdown stops the warm-up, then the source's watch, then the
        // HTTP server, which answers the requests under way, and the engine's pool last.
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: EngineService(engine: engine)),
            .init(service: app),
        ]
        if let watch = options.watch {
            services.append(.init(service: SourceFollowService(watch: watch, engine: engine, hub: hub, logger: logger),
                                  successTerminationBehavior: .ignore))
        }
        services.append(.init(service: WarmUpService(engine: engine, count: options.warmItems, logger: logger),
                              successTerminationBehavior: .ignore))
        var configuration = ServiceGroupConfiguration(services: services, gracefulShutdownSignals: [.sigterm, .sigint],
                                                      logger: logger)
        configuration.maximumGracefulShutdownDuration = .milliseconds(Int64(options.shutdownGrace * 1000))
        let group = ServiceGroup(configuration: configuration)
        defer {
            stopper.ended()
            options.watch?.stop()
            engine.shutdown()
        }
        if stopper.started(group) { await group.triggerGracefulShutdown() }
        try await group.run()
    }

    /// Stops a running server as SIGTERM does: the warm-up and the source's watch stop, the server takes no new
    /// connection and answers the requests under way (their work still runs, for at most
    /// ``Options/shutdownGrace`` seconds, after which it is cancelled), then the engine's pool shuts down and
    /// ``run(onListening:)`` returns. Asked before the server runs, it stops as soon as it starts.
    public func shutDownGracefully() async { await stopper.ask() }

    /// Reads the source again each time `watch` says it may have changed; a change is counted, logged, and handed
    /// to the viewers (``ViewerHub/feedChanged(_:generation:total:head:)``).
    static func follow(_ watch: SourceWatch, engine: ServeEngine, hub: ViewerHub, logger: Logger) async {
        let catalog = engine.catalog, metrics = engine.metrics
        while await watch.next() {
            do {
                metrics.listingReads.increment()
                let change = try await catalog.refresh()
                guard !change.isEmpty else { continue }
                metrics.listingChanges.increment()
                metrics.itemsAdded.increment(by: Int64(change.added.count))
                metrics.itemsRemoved.increment(by: Int64(change.removed.count))
                metrics.itemsChanged.increment(by: Int64(change.changed.count))
                logger.info("feed: \(change.added.count) added, \(change.removed.count) removed, \(change.changed.count) changed")
                let head = try? await catalog.entry(at: 0)
                await hub.feedChanged(change, generation: await catalog.generation, total: await catalog.total,
                                      head: head?.item.publicID)
            } catch {
                logger.warning("feed: cannot read the source again: \(Redaction.redacted(String(describing: error)))")
            }
        }
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
        let allowed = options.allowedOrigins
        router.ws("/api/ws") { request, _ in
            // A handshake from another site's page is refused (400): only the server's own page drives viewers.
            Self.allows(origin: request.headers[.origin], host: request.head.authority,
                        allowed: allowed) ? .upgrade([:]) : .dontUpgrade
        } onUpgrade: { inbound, outbound, _ in
            try await viewerSession(inbound: inbound, outbound: outbound)
        }
    }

    // MARK: - Listing

    func listing(_ request: Request, context: ServeContext) async throws -> Response {
        let query = request.uri.queryParameters
        let catalog = engine.catalog
        var start = 0
        if let cursor = query.get("cursor") {
            // A cursor names the last item of the page before (and where it was): the next page starts after that
            // item wherever it is now, so items arriving or going between pages repeat or skip nothing.
            guard let parsed = ServedCatalog.parse(cursor: cursor) else {
                return jsonError(.badRequest, "cursor \(String(cursor.prefix(40))) is not one this server gave")
            }
            start = parsed.index
            if let id = parsed.id, let found = await catalog.start(after: id) { start = found }
        }
        var limit = options.defaultLimit
        if let text = query.get("limit") {
            guard let value = Int(text), (1...50).contains(value) else {
                return jsonError(.badRequest, "limit must be from 1 to 50")
            }
            limit = value
        }
        // `item=<public_id>`: that item's card alone (a pending card filled), wherever it is now.
        if let id = query.get("item") {
            guard id.utf8.count <= 2048, let at = await catalog.position(of: id) else {
                return await catalog.wasRemoved(id) ? jsonError(.gone, "\(String(id.prefix(200))) was removed")
                    : jsonError(.notFound, "no item \(String(id.prefix(200)))")
            }
            start = at
            limit = 1
        }
        // `pending=1`: answer at once; a card whose manifest is not made yet is listed as pending.
        let answerAtOnce = query.get("pending") == "1" && query.get("item") == nil
        var entries: [ServedCatalog.Entry] = []
        do {
            for index in start..<(start + limit) {
                guard let entry = try await catalog.entry(at: index) else { break }
                entries.append(entry)
            }
        } catch {
            if entries.isEmpty {
                return jsonError(.badGateway, "the feed cannot be read: \(ClientText.withoutPaths(String(describing: error)))")
            }
        }
        // Every card's manifest, made in parallel on the shared pool (cached once per item version); with
        // `pending=1` only those already made (in memory or in the cache).
        let engine = self.engine, listed = entries
        // An item removed (or replaced) while its manifest was made has no card: nil.
        let makeCards = { @Sendable () async -> [Card?] in
            await withTaskGroup(of: (Int, Card?).self) { group in
                for (n, entry) in listed.enumerated() {
                    group.addTask {
                        if answerAtOnce, !engine.hasManifest(entry.folder) {
                            return (n, Card(pendingEntry: entry, settings: engine.configuration.settings))
                        }
                        do {
                            let manifest = try await engine.manifest(for: entry)
                            return (n, Card(entry: entry, manifest: manifest, settings: engine.configuration.settings,
                                            cached: engine.cache.contains))
                        } catch ServeEngine.Failure.gone {
                            return (n, nil)
                        } catch {
                            return (n, Card(entry: entry, error: Self.itemError(entry, error)))
                        }
                    }
                }
                var all: [(Int, Card?)] = []
                for await card in group { all.append(card) }
                return all.sorted { $0.0 < $1.0 }.map(\.1)
            }
        }
        let cards: [Card?]
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
        if let id = query.get("item"), cards.first.map({ $0 == nil }) ?? false {
            return jsonError(.gone, "\(String(id.prefix(200))) was removed")
        }
        let total = await catalog.total
        let more = total.map { start + entries.count < $0 } ?? (entries.count == limit)
        let next = more ? entries.last.map { ServedCatalog.cursor(after: $0.item.publicID, at: start + entries.count) } : nil
        let page = ListingPage(resources: cards.compactMap { $0 }, nextCursor: next, total: total, generation: await catalog.generation)
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
        text = ClientText.withoutPaths(text)
        return text.hasPrefix(entry.item.publicID) ? text : "\(entry.item.publicID): \(text)"
    }

    // MARK: - Media

    func media(_ request: Request, context: ServeContext, head: Bool) async throws -> Response {
        // A media path has a fixed shape; anything else is refused before any lookup, in time bounded by the
        // path's length limit (no per-component search).
        guard let path = MediaPath(request.uri.path.dropFirst("/media/".count)) else {
            return plain(.notFound, "not found\n")
        }
        // The folder is listed by this process, or else (another replica listed it, or the server restarted) found
        // in the feed: at most two candidate splits, each a hash lookup.
        let catalog = engine.catalog
        var found: (folder: String, file: String)? = nil
        for candidate in path.candidates where await catalog.knows(folder: candidate.folder) {
            found = candidate
            break
        }
        if found == nil {
            for candidate in path.candidates where await catalog.resolve(folder: candidate.folder) {
                found = candidate
                break
            }
        }
        guard let (folder, file) = found else { return plain(.notFound, "not found\n") }
        let engine = self.engine, name = file
        let opened: CacheFile
        do {
            if let cached = try await engine.cachedFile(folder: folder, file: name) {
                // Cached (the source checked): nothing to wait for, so no work task and no hang-up watch.
                opened = cached
            } else {
                // The work is cancelled when the client goes away (a viewer that swiped on, a closed tab).
                // (The channel's closeFuture is not used for this: a callback on it would keep the task, and the
                // file it returned, until the connection closes — every response of a kept-alive connection.)
                engine.metrics.mediaWaits.increment()
                opened = try await HangUpWatch.run(on: context.channel) {
                    try await engine.file(folder: folder, file: name)
                }
            }
        } catch is CancellationError {
            // The client hung up (or the server is stopping): nobody reads this answer.
            return plain(.serviceUnavailable, "cancelled\n")
        } catch let failure as ServeEngine.Failure {
            // Clients read the item and a short reason; the job's report logged the whole error.
            switch failure.withoutPaths {
            case .notFound: return plain(.notFound, "not found\n")
            case .gone(let why): return plain(.gone, why + "\n")
            case .pastEnd(let why, let segments):
                // Past the item's last segment: a player ends the item there (docs/serve.md, Media).
                var response = plain(.notFound, why + "\n")
                response.headers[Self.segmentCountHeader] = String(segments)
                return response
            case .failed(let why):
                logger.debug("media \(folder)/\(file): \(why)")
                return plain(.unprocessableContent, why + "\n")
            }
        }
        // A native player reading an item's HLS has its next segments made ahead (the page has its WebSocket).
        engine.readAhead(folder: folder, file: file)
        let response = HTTPRanges.response(for: request, file: opened, key: folder + "/" + file,
                                           mime: ContentType.of(file), head: head,
                                           backlog: connections.backlog(of: context.channel))
        if !head, response.status == .ok || response.status == .partialContent {
            if case .segment? = ItemFile(path: file) { engine.metrics.segmentsServed.increment() }
            engine.metrics.filesServed.increment()
        }
        return response
    }

    /// The header of a 404 for a media segment past the item's end: the rendition's segment count.
    static let segmentCountHeader = HTTPFields.Element.Name("X-Segment-Count")!

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
        let outbox = hub.outbox(viewer)
        defer { hub.disconnect(viewer) }
        // Keys in declaration order: `{"type":…,` first, as the page's parser and logs read them.
        let encoder = JSONEncoder()
        // The listing as it is now, first: a page that loaded before a change learns of it.
        let catalog = engine.catalog
        let head = try? await catalog.entry(at: 0)
        let hello = FeedReply(generation: await catalog.generation, total: await catalog.total,
                              head: head?.item.publicID, removed: [])
        try await outbound.write(.text(String(decoding: try encoder.encode(hello), as: UTF8.self)))
        // Then the window the page keeps, as the server's policy asks: the page attaches and frees cards by it.
        let window = PolicyReply(policy: hub.policy.name, window: hub.pageWindow)
        try await outbound.write(.text(String(decoding: try encoder.encode(window), as: UTF8.self)))
        try await withThrowingTaskGroup(of: Void.self) { group in
            // What the server says unasked (the listing changed), until the session ends.
            group.addTask {
                for await text in outbox { try await outbound.write(.text(text)) }
            }
            group.addTask {
                for try await message in inbound.messages(maxSize: 1 << 14) {
                    // Anything but a message of the page's shapes, with every number in its bounds, is ignored.
                    guard case .text(let text) = message, let said = ViewerMessage.parse(text) else { continue }
                    switch said {
                    case .hello(let width, let height, let rendition, let bandwidth, let codec):
                        hub.hello(viewer, width: width, height: height, rendition: rendition, bandwidth: bandwidth,
                                  codec: codec)
                    case .at(let index, let item, let time, let codec):
                        let answer = await hub.move(viewer, to: index, item: item, time: time, playing: codec)
                        if let hit = answer.hit {
                            try await outbound.write(.text(String(decoding: try encoder.encode(
                                SwipeReply(index: index, item: item, hit: hit)), as: UTF8.self)))
                        }
                        let window = WindowReply(current: index,
                                                 items: answer.window.map { .init(index: $0.index, state: $0.state) })
                        try await outbound.write(.text(String(decoding: try encoder.encode(window), as: UTF8.self)))
                    }
                }
            }
            // Either ends the session: the socket closed, or the server stopped.
            try await group.next()
            group.cancelAll()
        }
    }

    /// Whether a WebSocket handshake's `Origin` may open a viewer session: none (not a browser), the server's own
    /// (the request's `Host`, any scheme: a TLS proxy may stand in front), or one of ``Options/allowedOrigins``.
    /// A page elsewhere that a viewer opens cannot drive this server's work.
    static func allows(origin: String?, host: String?, allowed: [String]) -> Bool {
        guard let origin else { return true }
        // Compared as `scheme://host[:port]`, case-insensitively, without a trailing slash.
        func normal(_ text: String) -> String {
            var t = text.trimmingCharacters(in: .whitespaces).lowercased()
            while t.hasSuffix("/") { t.removeLast() }
            return t
        }
        let trimmed = normal(origin)
        if allowed.contains("*") || allowed.contains(where: { normal($0) == trimmed }) { return true }
        guard let host, let url = URL(string: trimmed), let scheme = url.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let name = url.host, url.path.isEmpty || url.path == "/",
              url.user == nil, url.query == nil else { return false }
        // Foundation gives an IPv6 literal without its brackets; `Host` has them.
        let host6 = name.contains(":") ? "[\(name)]" : name
        let authority = url.port.map { "\(host6):\($0)" } ?? host6
        let own = host.trimmingCharacters(in: .whitespaces)
        if authority.caseInsensitiveCompare(own) == .orderedSame { return true }
        // `Host: example.com` and `Origin: https://example.com:443` (or http and 80) name one origin.
        let defaultPort = scheme == "https" ? 443 : 80
        return url.port == defaultPort && host6.caseInsensitiveCompare(own) == .orderedSame
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
///
/// `CLOSE_WAIT` alone cannot tell a client that closed its socket (a tab that swiped on) from one that only finished
/// sending and still reads (`shutdown(SHUT_WR)`, as some HTTP/1.1 clients and proxies do): the watch then sends an
/// interim `100 Continue`, which every HTTP/1.1 client skips. A closed socket answers it with a reset, and the work is
/// cancelled; a half-closed client reads it and waits, and gets its answer (the probe is repeated each second, so a
/// later close is seen too). No probe is written once the answer may have started: the watch's flag is cleared before
/// the request's handler returns, and a probe reads it and writes in one event-loop task.
///
/// Not Hummingbird's inbound-close cancellation (`RequestBody.consumeWithCancellationOnInboundClose`), measured in
/// this place: a client that half-closes after its request gets a 503 and no segment
/// (`ServeAttackTests.aClientThatHalfClosesAfterItsRequestStillGetsTheSegment` fails with it), and every connection
/// whose request waits for a job is closed after its answer (the next request on it gets none), where a page's
/// kept-alive connections carry one segment after another.
enum HangUpWatch {
    /// Runs `body` in a task of its own, cancelled when the client hangs up (``start(_:probing:hungUp:)``) or the
    /// calling task is cancelled.
    /// - Throws: `body`'s error; `CancellationError` when it was cancelled, even if it finished.
    static func run<T: Sendable>(on channel: any Channel,
                                 _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let work = Task { try await body() }
        let probing = Locked(true)
        let watch = start(channel, probing: probing) { work.cancel() }
        let result = await withTaskCancellationHandler { await work.result } onCancel: { work.cancel() }
        watch.cancel()
        // From here on no probe is written. A probe decided before this wrote its bytes in the same event-loop task
        // that read the flag, so before any of the answer, which reaches the event loop only after this returns.
        probing.set(false)
        if work.isCancelled { throw CancellationError() }
        return try result.get()
    }

    /// Linux's `TCP_ESTABLISHED` and `TCP_CLOSE_WAIT`.
    static let established: UInt8 = 1
    static let closeWait: UInt8 = 8

    /// Checks `channel` every 100 ms until cancelled, calling `hungUp` once if the client closed its socket.
    static func start(_ channel: any Channel, probing: Locked<Bool>,
                      hungUp: @escaping @Sendable () -> Void) -> Task<Void, Never> {
        Task {
            guard let provider = channel as? any SocketOptionProvider else { return }
            var sinceProbe: Int? = nil
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(100))
                if Task.isCancelled { return }
                let state: UInt8
                do {
                    state = try await provider.getTCPInfo().get().tcpi_state
                } catch {
                    hungUp()
                    return
                }
                if state == established { continue }
                guard state == closeWait else {
                    // Reset or closed (a probe was answered with a reset).
                    hungUp()
                    return
                }
                // Half-closed, or closed: probe now, and again each second while it stays so.
                if let n = sinceProbe, n < 10 {
                    sinceProbe = n + 1
                    continue
                }
                sinceProbe = 0
                let sent = try? await channel.eventLoop.submit { () -> Bool in
                    guard probing.get(),
                          let guardHandler = try? channel.pipeline.syncOperations.handler(type: ConnectionGuard.self)
                    else { return false }
                    guardHandler.sendContinue()
                    return true
                }.get()
                if sent != true {
                    // No guard to probe through (or the answer has started): a closed side is a hang-up.
                    hungUp()
                    return
                }
            }
        }
    }
}
