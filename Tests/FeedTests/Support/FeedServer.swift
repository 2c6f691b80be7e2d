import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The Python test server (feed_server.py) running as a subprocess on a free port of 127.0.0.1.
///
/// Started with `/usr/bin/env python3`; the script prints its port first. Closing its stdin (in `stop()`, or when
/// this process dies) makes it exit; it also exits on its own after 300 seconds.
final class FeedServer {
    let port: Int
    private let process: Process
    private let input: Pipe

    static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent("feed_server.py")

    struct StartError: Error, CustomStringConvertible {
        var description: String
    }

    init() throws {
        process = Process()
        input = Pipe()
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Self.script.path]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        guard let line = Self.readLine(output.fileHandleForReading, timeoutSeconds: 60), let port = Int(line) else {
            process.terminate()
            throw StartError(description: "feed_server.py did not print its port")
        }
        self.port = port
    }

    /// `http://127.0.0.1:<port><path>`.
    func url(_ path: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path)")!
    }

    /// How many requests the server has seen for `path` (without query).
    func requestCount(_ path: String) async throws -> Int {
        var components = URLComponents(url: url("/stats"), resolvingAgainstBaseURL: false)!
        components.queryItems = [URLQueryItem(name: "path", value: path)]
        let (data, _) = try await URLSession.shared.data(from: components.url!)
        let stats = try JSONDecoder().decode([String: Int].self, from: data)
        return stats["count"] ?? -1
    }

    func stop() {
        try? input.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    /// The first line of `handle`, waiting at most `timeoutSeconds`.
    private static func readLine(_ handle: FileHandle, timeoutSeconds: Int) -> String? {
        var bytes: [UInt8] = []
        let deadline = Date().addingTimeInterval(Double(timeoutSeconds))
        while Date() < deadline {
            var descriptor = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 250) >= 0 else { return nil }
            guard descriptor.revents != 0 else { continue }
            var byte: UInt8 = 0
            guard read(handle.fileDescriptor, &byte, 1) == 1 else { return nil }
            if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
        return nil
    }
}

/// Runs `body` with a fresh test server, stopped afterwards.
func withFeedServer<T>(_ body: (FeedServer) async throws -> T) async throws -> T {
    let server = try FeedServer()
    defer { server.stop() }
    return try await body(server)
}
