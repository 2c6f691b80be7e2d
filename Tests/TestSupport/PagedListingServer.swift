import Foundation

/// A paged Cloudinary-style listing on 127.0.0.1, for tests of players that page: `GET /listing` answers page 1 of
/// `files.count` video resources, `perPage` a page, each page naming the next by `next_cursor` until the last; each
/// resource's `secure_url` is `/media/<n>`, served from `files[n]` with `Range` support (as a CDN serves it). With
/// `failingPage` the listing answers that page 404 for its first `failures` requests. Stopped on deinit.
public final class PagedListingServer {
    private let process: Process
    /// The port it listens on.
    public let port: Int
    /// The listing's first page.
    public var listingURL: String { "http://127.0.0.1:\(port)/listing" }

    public init(files: [String], perPage: Int, failingPage: Int? = nil, failures: Int = 1) throws {
        let config = try JSONSerialization.data(withJSONObject: [
            "files": files, "per_page": perPage, "failing_page": failingPage ?? 0, "failures": failures,
        ])
        let text: String
        (process, text) = try launchPython(["-c", Self.script, String(decoding: config, as: UTF8.self)])
        guard let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            kill(process.processIdentifier, SIGKILL)
            throw POSIXError(.EIO)
        }
        self.port = port
    }

    /// Requests seen for page `n` of the listing.
    public func requests(forPage n: Int) throws -> Int {
        let data = try Data(contentsOf: URL(string: "http://127.0.0.1:\(port)/stats?page=\(n)")!)
        return (try JSONSerialization.jsonObject(with: data) as? [String: Int])?["count"] ?? 0
    }

    deinit {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    private static let script = #"""
import json, os, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit
cfg = json.loads(sys.argv[1])
files, per = cfg["files"], cfg["per_page"]
pages = max(1, (len(files) + per - 1) // per)
seen, lock = {}, threading.Lock()

class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def send(self, code, body, ctype="application/json", extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra: self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD": self.wfile.write(body)
    def do_HEAD(self): self.do_GET()
    def do_GET(self):
        u = urlsplit(self.path); q = parse_qs(u.query)
        if u.path == "/listing":
            cursor = q.get("next_cursor", ["page-1"])[0]
            n = int(cursor.split("-")[1])
            with lock:
                seen[n] = seen.get(n, 0) + 1; count = seen[n]
            if n == cfg["failing_page"] and count <= cfg["failures"]:
                return self.send(404, b'{"error": "not yet"}')
            host = "http://127.0.0.1:%d" % self.server.server_address[1]
            items = [{"public_id": "paged/item_%d" % i, "created_at": "2026-11-%02dT10:00:00Z" % (1 + i % 28),
                      "secure_url": "%s/media/%d" % (host, i), "format": os.path.splitext(files[i])[1][1:],
                      "resource_type": "video", "bytes": os.path.getsize(files[i])}
                     for i in range((n - 1) * per, min(n * per, len(files)))]
            page = {"resources": items}
            if n < pages: page["next_cursor"] = "page-%d" % (n + 1)
            return self.send(200, json.dumps(page).encode())
        if u.path == "/stats":
            with lock: count = seen.get(int(q["page"][0]), 0)
            return self.send(200, json.dumps({"count": count}).encode())
        if u.path.startswith("/media/"):
            data = open(files[int(u.path[7:])], "rb").read()
            r = self.headers.get("Range")
            if r and r.startswith("bytes="):
                a, _, b = r[6:].partition("-")
                start = int(a or 0); end = min(int(b) if b else len(data) - 1, len(data) - 1)
                if start >= len(data):
                    return self.send(416, b"", "video/mp4", [("Content-Range", "bytes */%d" % len(data))])
                return self.send(206, data[start:end + 1], "video/mp4",
                                 [("Content-Range", "bytes %d-%d/%d" % (start, end, len(data))), ("Accept-Ranges", "bytes")])
            return self.send(200, data, "video/mp4", [("Accept-Ranges", "bytes")])
        self.send(404, b"{}")

s = ThreadingHTTPServer(("127.0.0.1", 0), H)
s.daemon_threads = True
print(s.server_address[1], flush=True)
threading.Timer(300, lambda: os._exit(0)).start()
s.serve_forever()
"""#
}
