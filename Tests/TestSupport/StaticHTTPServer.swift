import Foundation

/// Python's `http.server` serving a folder on 127.0.0.1 on a free port, for tests that open media over HTTP.
/// Stopped on deinit.
public final class StaticHTTPServer {
    private let process: Process
    /// The port it listens on.
    public let port: Int

    public init(folder: String) throws {
        // First line: "Serving HTTP on 127.0.0.1 port 43567 (http://127.0.0.1:43567/) ..."
        let text: String
        (process, text) = try launchPython(["-m", "http.server", "--bind", "127.0.0.1", "--directory", folder, "0"])
        guard let range = text.range(of: "port "),
              let port = Int(text[range.upperBound...].prefix { $0.isNumber }) else {
            kill(process.processIdentifier, SIGKILL)
            throw POSIXError(.EIO)
        }
        self.port = port
    }

    /// `http://127.0.0.1:<port>/<path>`.
    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)/\(path)" }

    deinit {
        // SIGKILL: a child spawned from a Dispatch worker inherits its blocked signal mask, so SIGTERM may never land.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
