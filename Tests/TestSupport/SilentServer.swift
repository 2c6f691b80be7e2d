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
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            Glibc.close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
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
