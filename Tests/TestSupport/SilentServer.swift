import EngineSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP listener on 127.0.0.1 that accepts connections and never answers: an HTTP request to it blocks until the
/// client gives up, or until ``close()`` closes the connections. ``accepted`` counts the connections, so a test can
/// wait for the moment a client is blocked on it (an event) instead of sleeping. Closed on deinit.
public final class SilentServer: Sendable {
    private struct State {
        var clients: [Int32] = []
        var accepted = 0
        var closed = false
    }

    /// What the server and its accepting thread share (the thread must not hold the server itself, or it would
    /// never be released).
    private final class Shared: Sendable {
        let state = Locked(State())
        let stopped = DispatchSemaphore(value: 0)

        func withLock<T>(_ body: (inout State) -> T) -> T { state.withLock(body) }
    }

    private let shared = Shared()
    /// The port it listens on.
    public let port: Int

    public init() throws {
        let (fd, port) = try bindLoopbackSocket()
        guard listen(fd, 64) == 0 else {
            Glibc.close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        self.port = port
        // The accepting thread owns every descriptor: it polls so that it sees `closed` within 20 ms, then closes the
        // listener and the connections itself.
        Thread.detachNewThread { [shared] in
            while !shared.withLock({ $0.closed }) {
                var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&entry, 1, 20) > 0 else { continue }
                let client = accept(fd, nil, nil)
                if client >= 0 { shared.withLock { $0.clients.append(client); $0.accepted += 1 } }
            }
            for client in shared.withLock({ $0.clients }) { Glibc.close(client) }
            Glibc.close(fd)
            shared.stopped.signal()
        }
    }

    /// Connections accepted so far.
    public var accepted: Int { shared.withLock { $0.accepted } }

    /// `http://127.0.0.1:<port>/<path>`.
    public func url(_ path: String = "video.mp4") -> String { "http://127.0.0.1:\(port)/\(path)" }

    /// Stops listening and closes every connection: a client blocked on one sees its end at once.
    public func close() {
        let first = shared.withLock { s in
            defer { s.closed = true }
            return !s.closed
        }
        if first { shared.stopped.wait() }
    }

    deinit { close() }
}
