import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP/1.1 and WebSocket client over a plain socket to 127.0.0.1, for tests of `videofeed serve`: every
/// byte of the answer is seen as sent (status, headers, body), and a test can hang up mid-request.
public enum LoopbackHTTP {
    /// One answer.
    public struct Answer: Sendable {
        public var status: Int
        /// Header names lowercased.
        public var headers: [String: String]
        public var body: [UInt8]
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// A connected socket to 127.0.0.1:`port`, or throws.
    public static func connect(_ port: Int, timeout: Double = 60) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
        var limit = timeval(tv_sec: Int(timeout), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    /// Sends all of `bytes`.
    public static func send(_ fd: Int32, _ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw POSIXError(.EPIPE) }
            sent += n
        }
    }

    /// `method path` with `headers`, read to the end (the request asks the server to close).
    public static func request(_ port: Int, _ path: String, method: String = "GET", headers: [String: String] = [:],
                               timeout: Double = 60) throws -> Answer {
        let fd = try connect(port, timeout: timeout)
        defer { close(fd) }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        try send(fd, Array((head + "\r\n").utf8))
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, 65536, 0) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                if n < 0 { throw POSIXError(.ETIMEDOUT) }
                break
            }
            data.append(contentsOf: buffer[0..<n])
        }
        return try parse(data, head: method == "HEAD")
    }

    static func parse(_ data: [UInt8], head: Bool) throws -> Answer {
        guard let end = find([13, 10, 13, 10], in: data, from: 0) else { throw POSIXError(.EBADMSG) }
        let lines = String(decoding: data[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw POSIXError(.EBADMSG) }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(data[(end + 4)...])
        if !head, headers["transfer-encoding"]?.lowercased() == "chunked" {
            var decoded: [UInt8] = []
            var at = 0
            while let lineEnd = find([13, 10], in: body, from: at),
                  let size = Int(String(decoding: body[at..<lineEnd], as: UTF8.self)
                                 .split(separator: ";").first ?? "", radix: 16), size > 0 {
                decoded.append(contentsOf: body[(lineEnd + 2)..<(lineEnd + 2 + size)])
                at = lineEnd + 2 + size + 2
            }
            body = decoded
        }
        return Answer(status: status, headers: headers, body: body)
    }

    static func find(_ needle: [UInt8], in data: [UInt8], from: Int) -> Int? {
        guard data.count >= needle.count else { return nil }
        var i = from
        while i + needle.count <= data.count {
            if data[i] == needle[0], Array(data[i..<(i + needle.count)]) == needle { return i }
            i += 1
        }
        return nil
    }

    /// A WebSocket to `path` that sends and receives text messages.
    /// `@unchecked Sendable`: one owner at a time — a test hands it from one blocking call to the next (``offPool``),
    /// in sequence, never to two threads at once; it holds no lock of its own.
    public final class WebSocket: @unchecked Sendable {
        private let fd: Int32
        private var pending: [UInt8] = []

        /// Connects and upgrades, sending `origin` as a browser does when given.
        /// - Throws: `EPROTO` when the server does not answer `101`.
        public init(port: Int, path: String, origin: String? = nil) throws {
            fd = try LoopbackHTTP.connect(port, timeout: 30)
            let key = Data((0..<16).map { _ in UInt8.random(in: 0 ... 255) }).base64EncodedString()
            let head = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + (origin.map { "Origin: \($0)\r\n" } ?? "")
                + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n\r\n"
            try LoopbackHTTP.send(fd, Array(head.utf8))
            while LoopbackHTTP.find([13, 10, 13, 10], in: pending, from: 0) == nil { try fill() }
            let end = LoopbackHTTP.find([13, 10, 13, 10], in: pending, from: 0)!
            let status = String(decoding: pending[0..<end], as: UTF8.self)
            pending.removeFirst(end + 4)
            guard status.hasPrefix("HTTP/1.1 101") else { throw POSIXError(.EPROTO) }
        }

        deinit { close(fd) }

        /// Hangs up without a close frame.
        public func hangUp() { shutdown(fd, Int32(SHUT_RDWR)) }

        /// Sends one masked text frame.
        public func send(_ text: String) throws { try sendFrame(opcode: 1, Array(text.utf8)) }

        /// Sends one masked frame.
        private func sendFrame(opcode: UInt8, _ payload: [UInt8]) throws {
            var frame: [UInt8] = [0x80 | opcode]
            if payload.count < 126 {
                frame.append(0x80 | UInt8(payload.count))
            } else {
                frame.append(0x80 | 126)
                frame.append(UInt8(payload.count >> 8))
                frame.append(UInt8(payload.count & 0xff))
            }
            let mask = (0..<4).map { _ in UInt8.random(in: 0 ... 255) }
            frame.append(contentsOf: mask)
            frame.append(contentsOf: payload.enumerated().map { $0.element ^ mask[$0.offset % 4] })
            try LoopbackHTTP.send(fd, frame)
        }

        /// Reads what has arrived without waiting and answers the pings at its front (a test that waits for
        /// something else meanwhile keeps the socket alive, as a browser's would be); other frames stay for
        /// ``receive()``.
        public func answerPings() throws {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, 65536, Int32(MSG_DONTWAIT)) }
                if n > 0 { pending.append(contentsOf: buffer[0..<n]); continue }
                if n == 0 { throw POSIXError(.ECONNRESET) }
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { break }
                throw POSIXError(.ECONNRESET)
            }
            // Pings are short: a 7-bit length, masked never (server frames).
            while pending.count >= 2, pending[0] & 0x0f == 9, pending[1] & 0x7f < 126,
                  pending.count >= 2 + Int(pending[1] & 0x7f) {
                let length = Int(pending[1] & 0x7f)
                let payload = Array(pending[2..<(2 + length)])
                pending.removeFirst(2 + length)
                try sendFrame(opcode: 0xA, payload)
            }
        }

        /// The next text message the server did not send unasked: not its listing news (`{"type":"feed",…}`, sent
        /// on connect and whenever a watched feed changes) nor its page window (`{"type":"policy",…}`, on connect).
        public func receive() throws -> String {
            while true {
                let text = try receiveAny()
                let message = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
                let type = message?["type"] as? String
                if type != "feed" && type != "policy" { return text }
            }
        }

        /// The next text message, whatever it is.
        public func receiveAny() throws -> String {
            while true {
                while pending.count < 2 { try fill() }
                var length = Int(pending[1] & 0x7f)
                var offset = 2
                if length == 126 {
                    while pending.count < 4 { try fill() }
                    length = Int(pending[2]) << 8 | Int(pending[3])
                    offset = 4
                } else if length == 127 {
                    while pending.count < 10 { try fill() }
                    length = (2..<10).reduce(0) { $0 << 8 | Int(pending[$1]) }
                    offset = 10
                }
                while pending.count < offset + length { try fill() }
                let opcode = pending[0] & 0x0f
                let payload = Array(pending[offset..<(offset + length)])
                pending.removeFirst(offset + length)
                if opcode == 1 { return String(decoding: payload, as: UTF8.self) }
                if opcode == 8 { throw POSIXError(.ECONNRESET) }
                // A ping is answered, as a browser does: the server closes a socket whose pings go unanswered.
                if opcode == 9 { try sendFrame(opcode: 0xA, payload) }
            }
        }

        private func fill() throws {
            var buffer = [UInt8](repeating: 0, count: 65536)
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, 65536, 0) }
            guard n > 0 else { throw POSIXError(.ECONNRESET) }
            pending.append(contentsOf: buffer[0..<n])
        }
    }
}
