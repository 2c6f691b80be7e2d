import EngineSupport
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1
#if canImport(Glibc)
import Glibc
#endif

/// What one connection may hold and for how long: the server's defences against clients that connect and do not
/// finish (slowloris), never read (a stalled download), or send what is not HTTP.
public struct ConnectionLimits: Sendable {
    /// Open connections at most (clamped to half the process's file limit less ``reservedFiles``). At the limit a new
    /// connection closes the oldest one that has not sent a whole request yet, or, when there is none, is answered
    /// `503` with `Retry-After` and closed.
    public var maxConnections = 10_000
    /// Seconds a new connection has to send its first request head, in full; then `408` and closed.
    public var headerTimeout = 10.0
    /// Seconds a kept-alive connection may wait for its next request (and a later request head may take); then it
    /// is closed.
    public var idleTimeout = 30.0
    /// Seconds an answer may make no progress because the client does not read; then the connection is closed.
    public var writeTimeout = 30.0
    /// Bytes a request head may have (request line and headers); past it `431` and closed.
    public var maxHeaderBytes = 32 * 1024
    /// File descriptors kept for the work itself (sources, cache files, FFmpeg) when clamping ``maxConnections``.
    public var reservedFiles = 256

    /// The defaults.
    public init() {}

    /// ``maxConnections`` under the process's open-file limit (raised to its hard limit first).
    func effectiveMaxConnections() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return maxConnections }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        // RLIM_INFINITY is all ones: clamped to Int.max like any other huge limit. A connection can hold two
        // descriptors: its socket and the cache file it streams.
        let files = Int(clamping: limit.rlim_cur)
        return max(1, min(maxConnections, max(16, (files - reservedFiles) / 2)))
    }
}

/// Hummingbird's HTTP/1 channel with a WebSocket upgrade, behind a ``ConnectionGuard`` at the front of every
/// connection's pipeline, and closed once its handler is done (Hummingbird leaves a connection whose first request
/// could not be parsed open, and waits for the client to close after a `400`).
struct GuardedChannel: ServerChildChannel {
    typealias Value = HTTP1WebSocketUpgradeChannel.Value

    let inner: HTTP1WebSocketUpgradeChannel
    let limits: ConnectionLimits
    let registry: ConnectionRegistry

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            try channel.pipeline.syncOperations.addHandler(ConnectionGuard(limits: limits, registry: registry),
                                                           position: .first)
            // After the HTTP decoder and the upgrade handler: sees the parser's errors, which nothing else answers
            // before the first request is decoded.
            try channel.pipeline.syncOperations.addHandler(ParseErrorAnswer(), position: .last)
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        // Hummingbird logs every connection whose first request did not parse as an error; such a connection is
        // answered and counted here instead (a client could otherwise fill the log), unless the log is verbose.
        var quiet = logger
        if quiet.logLevel > .debug { quiet.logLevel = .critical }
        await inner.handle(value: value, logger: quiet)
        // Whatever ended the handler (a parse error before any answer, the client's end of input, a WebSocket's
        // close), the connection ends here: with a `400` when nothing was answered at all.
        let channel = value.channel
        channel.eventLoop.execute {
            (try? channel.pipeline.syncOperations.handler(type: ConnectionGuard.self))?.finish()
        }
    }
}

/// Every open connection, shared by all event loops: the count against ``ConnectionLimits/maxConnections`` and the
/// connections still waiting for their first request head, oldest first, which a new connection may displace.
final class ConnectionRegistry: Sendable {
    private struct State {
        var open = 0
        var waiting: [Int: any Channel] = [:]
        /// Connections closed by ``admit(_:)`` to make room, uncounted then, whose ``leave(_:)`` is still to come.
        var displaced: Set<Int> = []
        var next = 0
        /// Each open connection's backlog, by its channel.
        var backlogs: [ObjectIdentifier: (id: Int, backlog: ConnectionBacklog)] = [:]
    }

    private let state = Locked(State())
    let maxConnections: Int

    init(maxConnections: Int) { self.maxConnections = max(1, maxConnections) }

    /// What a new connection may do.
    enum Admission {
        /// Counted, with its id.
        case admitted(Int)
        /// At the limit with nobody to displace.
        case refused
    }

    /// Counts a new connection waiting for its head; at the limit, closes the longest-waiting connection that has not
    /// sent a request head, or refuses.
    func admit(_ channel: any Channel, backlog: ConnectionBacklog) -> Admission {
        let (admission, displaced) = state.withLock { s -> (Admission, (any Channel)?) in
            var displaced: (any Channel)? = nil
            if s.open >= maxConnections {
                // Ids only grow: the smallest waiting is the one waiting longest.
                guard let oldest = s.waiting.keys.min(), let channel = s.waiting.removeValue(forKey: oldest) else {
                    return (.refused, nil)
                }
                s.displaced.insert(oldest)
                s.open -= 1
                displaced = channel
            }
            s.next += 1
            s.open += 1
            s.waiting[s.next] = channel
            s.backlogs[ObjectIdentifier(channel)] = (s.next, backlog)
            return (.admitted(s.next), displaced)
        }
        // Closed outside the lock, on that connection's own event loop.
        displaced?.close(promise: nil)
        return admission
    }

    /// The connection sent a whole request head: no longer one to displace.
    func started(_ id: Int) { state.withLock { _ = $0.waiting.removeValue(forKey: id) } }

    /// The connection closed.
    func leave(_ id: Int, channel: any Channel) {
        state.withLock { s in
            if s.backlogs[ObjectIdentifier(channel)]?.id == id { s.backlogs[ObjectIdentifier(channel)] = nil }
            if s.displaced.remove(id) != nil { return }
            s.waiting[id] = nil
            s.open -= 1
        }
    }

    /// Open connections now.
    var open: Int { state.withLock { $0.open } }

    /// The backlog of `channel`, while it is open.
    func backlog(of channel: any Channel) -> ConnectionBacklog? {
        state.withLock { $0.backlogs[ObjectIdentifier(channel)]?.backlog }
    }
}

/// The bytes of a streamed body on their way to one connection's socket: counted on by the task that streams the body
/// before it hands a chunk on, off by the connection's guard once the socket has taken them; the task only looks (no
/// hop to the event loop) and waits while there is no room: a client
/// that does not read holds at most ``limit`` and a chunk of the server's memory, whatever the file's size (NIO's
/// writability alone let 96 stalled readers of a 32 MiB file pile up 29 MiB each). Thread-safe: its state is under a
/// lock.
final class ConnectionBacklog: Sendable {
    /// Bytes waiting above which a streamed body waits.
    static let limit = 256 * 1024
    private let state = Locked((bytes: 0, closed: false))

    /// `count` bytes of a body are on their way to the socket.
    func add(_ count: Int) { state.withLock { $0.bytes += count } }
    /// The socket took `count` bytes (a response head's among them: never below 0).
    func written(_ count: Int) { state.withLock { $0.bytes = max(0, $0.bytes - count) } }
    func close() { state.withLock { $0.closed = true } }

    /// Returns once fewer than ``limit`` bytes wait (at once when so), looking again after 1, 2, 4 … 100 ms.
    /// - Throws: `ChannelError.ioOnClosedChannel` once the connection is closed.
    func room() async throws {
        var pause = 1
        while true {
            let (bytes, closed) = state.withLock { ($0.bytes, $0.closed) }
            if closed { throw ChannelError.ioOnClosedChannel }
            if bytes < Self.limit { return }
            try await Task.sleep(for: .milliseconds(pause))
            pause = min(pause * 2, 100)
        }
    }
}

/// The first handler of every connection, on raw bytes: admits it under the connection limit, times its first
/// request head (and bounds its size), times writes that make no progress, and ends a connection whose handler
/// finished or half-closed it. Lives on its channel's event loop.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = ByteBuffer

    private let limits: ConnectionLimits
    private let registry: ConnectionRegistry
    private var id: Int?
    /// The first request head is complete (`\r\n\r\n` seen).
    private var headSeen = false
    /// Bytes of the first head so far, and its last four bytes (a `\r\n\r\n` split across reads), newest lowest.
    private var headBytes = 0
    private var lastFour: UInt32 = 0
    /// A byte other than CR or LF has come.
    private var headStarted = false
    /// Anything was written to the client.
    private var answered = false
    private var headTimer: Scheduled<Void>?
    private var writeTimer: Scheduled<Void>?
    private var lingerTimer: Scheduled<Void>?
    private var closed = false

    init(limits: ConnectionLimits, registry: ConnectionRegistry) {
        self.limits = limits
        self.registry = registry
    }

    func handlerAdded(context: ChannelHandlerContext) {
        savedContext = context
        if context.channel.isActive { start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    private func start(_ context: ChannelHandlerContext) {
        guard id == nil, !closed else { return }
        switch registry.admit(context.channel, backlog: backlog) {
        case .admitted(let id):
            self.id = id
            headTimer = context.eventLoop.assumeIsolated().scheduleTask(
                in: Self.amount(limits.headerTimeout)) {
                // Nothing sent: just close; part of a head: say why.
                if self.headBytes > 0 {
                    self.reject(context, "408 Request Timeout", "the request head did not arrive in time\n")
                } else {
                    context.close(promise: nil)
                }
            }
        case .refused:
            closed = true
            reject(context, "503 Service Unavailable", "too many connections; try again\n", retryAfter: true)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelTimers()
        backlog.close()
        savedContext = nil
        if let id {
            registry.leave(id, channel: context.channel)
            self.id = nil
        }
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        // The context holds this handler and its pipeline: let it go, or every connection would stay in memory.
        savedContext = nil
        cancelTimers()
    }

    private func cancelTimers() {
        headTimer?.cancel()
        writeTimer?.cancel()
        lingerTimer?.cancel()
        headTimer = nil
        writeTimer = nil
        lingerTimer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if closed { return }
        if !headSeen {
            let buffer = unwrapInboundIn(data)
            // One byte past the limit is enough to know; a 100 KB head is not read through.
            let allowance = limits.maxHeaderBytes - headBytes + 1
            var complete = false
            let scanned = buffer.withUnsafeReadableBytes { bytes -> Int in
                var n = 0
                for byte in bytes {
                    if n == allowance { break }
                    n += 1
                    // The parser skips blank lines before a request line: they start no head (a client sending only
                    // `\r\n\r\n` must not pass for one that sent its request).
                    if !headStarted {
                        if byte == 13 || byte == 10 { continue }
                        headStarted = true
                    }
                    lastFour = lastFour << 8 | UInt32(byte)
                    if lastFour == 0x0D0A_0D0A {
                        complete = true
                        break
                    }
                }
                return n
            }
            headBytes += scanned
            if headBytes > limits.maxHeaderBytes {
                reject(context, "431 Request Header Fields Too Large", "the request head is too large\n")
                return
            }
            if complete {
                headSeen = true
                headTimer?.cancel()
                headTimer = nil
                if let id { registry.started(id) }
            }
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        answered = true
        // Bytes the socket has taken come off the backlog (a streamed body counts its chunks on).
        let count = unwrapOutboundIn(data).readableBytes
        let written = promise ?? context.eventLoop.makePromise()
        let backlog = self.backlog
        written.futureResult.whenComplete { _ in backlog.written(count) }
        context.write(data, promise: written)
    }

    /// This connection's bytes waiting for the socket, as a streamed body reads them (``FeedServer`` finds it through
    /// the ``ConnectionRegistry``).
    let backlog = ConnectionBacklog()

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            writeTimer?.cancel()
            writeTimer = nil
        } else if writeTimer == nil {
            // The client stopped reading: it has `writeTimeout` seconds to take the next bytes.
            writeTimer = context.eventLoop.assumeIsolated().scheduleTask(
                in: Self.amount(limits.writeTimeout)) {
                context.close(promise: nil)
            }
        }
        context.fireChannelWritabilityChanged()
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard mode == .output else {
            context.close(mode: mode, promise: promise)
            return
        }
        // The server is done with this connection (Hummingbird half-closes and then waits for the client). NIO closes
        // the sending side once everything pending is written (a stalled client meets the write timeout meanwhile);
        // from then the client has a moment to read it, then the connection goes.
        let closed = context.eventLoop.makePromise(of: Void.self)
        closed.futureResult.assumeIsolated().whenComplete { _ in
            self.lingerTimer?.cancel()
            self.lingerTimer = context.eventLoop.assumeIsolated().scheduleTask(in: .seconds(2)) {
                context.close(promise: nil)
            }
        }
        if let promise { closed.futureResult.cascade(to: promise) }
        context.close(mode: .output, promise: closed)
    }

    /// The connection's handler ended: a `400` if nothing was ever answered (the request could not be parsed), then
    /// the connection is closed.
    func finish() {
        guard let context = savedContext, context.channel.isActive, !closed else { return }
        if !answered {
            reject(context, "400 Bad Request", "this is not an HTTP/1.1 request this server takes\n")
        } else {
            closed = true
            context.close(promise: nil)
        }
    }

    /// `seconds` as a timer's delay, within a day (an infinite or huge value would trap converting).
    static func amount(_ seconds: Double) -> TimeAmount {
        .nanoseconds(Int64((seconds.isFinite ? min(max(seconds, 0), 86_400) : 86_400) * 1e9))
    }

    /// This handler's context, for ``finish()`` (called from the connection's task on its event loop).
    private var savedContext: ChannelHandlerContext?

    /// Writes an interim `100 Continue` (``HangUpWatch``'s probe of a half-closed connection).
    func sendContinue() {
        guard let context = savedContext, !closed, context.channel.isActive else { return }
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: "HTTP/1.1 100 Continue\r\n\r\n")),
                              promise: nil)
    }

    /// The request could not be parsed: `400` and closed (once).
    func badRequest() {
        guard let context = savedContext, !closed else { return }
        // After an answer has started (a later pipelined request failed to parse), a raw 400 would land inside it.
        if answered {
            closed = true
            context.close(promise: nil)
            return
        }
        reject(context, "400 Bad Request", "this is not an HTTP/1.1 request this server takes\n")
    }

    /// Writes `status` with `body` as raw HTTP/1.1 and closes.
    private func reject(_ context: ChannelHandlerContext, _ status: String, _ body: String, retryAfter: Bool = false) {
        closed = true
        // The head timer goes; the write timer stays (the answer may queue behind a stalled one), and a hard deadline
        // ends the connection whatever happens to the answer.
        headTimer?.cancel()
        headTimer = nil
        lingerTimer?.cancel()
        lingerTimer = context.eventLoop.assumeIsolated().scheduleTask(in: .seconds(5)) { context.close(promise: nil) }
        var text = "HTTP/1.1 \(status)\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\n"
        if retryAfter { text += "Retry-After: 1\r\n" }
        text += "Connection: close\r\n\r\n" + body
        answered = true
        // Sent, then the sending side closed and what the client still sends read and dropped for a moment: a close
        // with unread bytes would reset the connection, and the client could lose the answer.
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: text)))
            .assumeIsolated().whenComplete { _ in
                context.close(mode: .output, promise: nil)
                self.lingerTimer?.cancel()
                self.lingerTimer = context.eventLoop.assumeIsolated().scheduleTask(in: .seconds(2)) {
                    context.close(promise: nil)
                }
            }
    }
}

/// Answers a request that NIO's HTTP parser refused (a TLS handshake, HTTP/0.9 or 9.9, raw UTF-8 in the target,
/// `Content-Length` with `Transfer-Encoding`, an oversized head) with `400` through the connection's
/// ``ConnectionGuard``, and closes it. Every other read and error passes through untouched, whatever its type.
final class ParseErrorAnswer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Never

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard error is HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        if let guardHandler = try? context.pipeline.syncOperations.handler(type: ConnectionGuard.self) {
            guardHandler.badRequest()
        } else {
            context.close(promise: nil)
        }
    }
}
