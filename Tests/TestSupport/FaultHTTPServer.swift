import Foundation

/// A loopback HTTP server (Python) that misbehaves on purpose, one fault per path, serving files of `folder`:
///
/// - `/ok/NAME`: the file, whole, honouring `Range` like a well-behaved server.
/// - `/stall/NAME`: headers and the first half of the body, then silence with the connection left open.
/// - `/reset/NAME`: headers and the first half of the body, then a TCP reset.
/// - `/short/NAME`: a `Content-Length` 64 KiB larger than the file, the file, then the connection closes.
/// - `/endless/NAME`: no `Content-Length`, pseudo-random bytes forever.
/// - `/trickle/NAME`: the file one byte every 20 ms: never stalls long enough for a read timeout, never ends in time.
/// - `/redirect-file?PATH`: a 302 to `file://PATH`.
/// - `/later/NAME`: as `/ok/`, until ``stallLater(_:)``; from then on each answer for NAME sends the first half of
///   what it answers, then silence (a source that stalls once the test has let the open and planning through).
///
/// Stopped on deinit.
public final class FaultHTTPServer {
    private let process: Process
    /// The port it listens on.
    public let port: Int

    public init(folder: String) throws {
        let line: String
        (process, line) = try launchPython(["-c", Self.script, folder])
        guard let port = Int(line.trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            kill(process.processIdentifier, SIGKILL)
            throw POSIXError(.EIO)
        }
        self.port = port
    }

    /// `http://127.0.0.1:<port>/<fault>/<name>`.
    public func url(_ fault: String, _ name: String) -> String { "http://127.0.0.1:\(port)/\(fault)/\(name)" }

    /// Makes every later answer of `/later/<name>` stall halfway.
    public func stallLater(_ name: String) throws {
        _ = try LoopbackHTTP.request(port, "/arm/\(name)")
    }

    /// A URL that redirects to `file://<path>`.
    public func redirectToFile(_ path: String) -> String { "http://127.0.0.1:\(port)/redirect-file?\(path)" }

    deinit {
        // SIGKILL: a child spawned from a Dispatch worker inherits its blocked signal mask, so SIGTERM may never land.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    private static let script = #"""
import os, random, socket, struct, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

root = sys.argv[1]
armed = set()

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass

    def body(self, name):
        with open(os.path.join(root, os.path.basename(name)), "rb") as f:
            return f.read()

    def do_GET(self):
        try:
            self.handle_fault()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def handle_fault(self):
        path = self.path
        if path.startswith("/redirect-file?"):
            self.send_response(302)
            self.send_header("Location", "file://" + path.split("?", 1)[1])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        parts = path.split("/", 2)
        if len(parts) < 3:
            self.send_error(404)
            return
        fault, name = parts[1], parts[2]
        if fault == "arm":
            armed.add(name)
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if fault == "endless":
            self.send_response(200)
            self.send_header("Content-Type", "video/mp4")
            self.send_header("Connection", "close")
            self.end_headers()
            rng = random.Random(7)
            while True:
                self.wfile.write(bytes(rng.getrandbits(8) for _ in range(65536)))
        try:
            data = self.body(name)
        except OSError:
            self.send_error(404)
            return
        if fault == "ok" or fault == "later":
            start, end = 0, len(data) - 1
            rng = self.headers.get("Range")
            if rng and rng.startswith("bytes="):
                a, _, b = rng[6:].partition("-")
                start = int(a or 0)
                end = int(b) if b else len(data) - 1
                if start >= len(data):
                    self.send_response(416)
                    self.send_header("Content-Range", "bytes */%d" % len(data))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(206)
                self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, len(data)))
            else:
                self.send_response(200)
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(end - start + 1))
            self.end_headers()
            if fault == "later" and name in armed:
                self.wfile.write(data[start:start + (end + 1 - start) // 2])
                self.wfile.flush()
                time.sleep(3600)
            self.wfile.write(data[start:end + 1])
            return
        self.send_response(200)
        length = len(data) + 65536 if fault == "short" else len(data)
        self.send_header("Content-Length", str(length))
        self.send_header("Connection", "close")
        self.end_headers()
        if fault == "stall":
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            time.sleep(3600)
        elif fault == "reset":
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        elif fault == "short":
            self.wfile.write(data)
            self.wfile.flush()
            self.close_connection = True
        elif fault == "trickle":
            for i in range(len(data)):
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
                time.sleep(0.02)
        else:
            self.send_error(404)

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
"""#
}
