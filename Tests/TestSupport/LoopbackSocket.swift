import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP socket bound to a free port on 127.0.0.1 (not yet listening), and that port. The caller owns the descriptor.
/// - Throws: `POSIXError` when no socket or port could be had (the descriptor is closed then).
public func bindLoopbackSocket() throws -> (descriptor: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.EIO) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = bound == 0 ? withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    } : -1
    guard named == 0, address.sin_port != 0 else {
        Glibc.close(fd)
        throw POSIXError(.EADDRINUSE)
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}

/// A port on 127.0.0.1 that refuses connections for as long as this value lives: a TCP socket bound to it that never
/// listens. A connection to it is refused at once, and no other socket (another test's server) can take the port
/// meanwhile, which a port taken from a server that was then stopped cannot promise. Closed on deinit.
public final class ClosedPort: Sendable {
    private let descriptor: Int32
    /// The port.
    public let port: Int

    public init() throws {
        (descriptor, port) = try bindLoopbackSocket()
    }

    deinit { Glibc.close(descriptor) }
}
