#!/usr/bin/env python3
"""Test HTTP server for FeedTests (Python 3 standard library only).

Binds 127.0.0.1 on a free port, prints the port on the first line of stdout, and serves until stdin reaches EOF
(the test process closed it or died), SIGTERM, or a hard limit of 300 seconds.

Routes
  /cloudinary/videos?max_results=N&next_cursor=C[&repeat=1]   Cloudinary listing of 7 resources, paged.
                                                              repeat=1: each later page repeats the previous
                                                              page's last resource. Cursors contain "+" and "/"
                                                              so that clients must percent-encode them.
  /endless/videos?next_cursor=C                                 Cloudinary pages that never end: 7 new resources
                                                              and a new next_cursor on every page.
  /pexels/videos/popular?page=P&per_page=N                     Pexels listing of 5 videos with next_page URLs.
  /manifest.json                                               native manifest with a relative url.
  /flaky/<key>                                                 500 on the first request, then a manifest.
  /unavailable/<key>                                           503 always.
  /missing/<key>                                               404 always.
  /slow/<key>                                                  a manifest after 3 seconds.
  /malformed                                                   200 with truncated JSON.
  /private/manifest.json                                       401 unless "Authorization: Bearer s3cret-token".
  /redirect-elsewhere                                          302 to http://localhost:<port>/echo-auth.
  /echo-auth                                                   manifest whose only public_id tells whether an
                                                               Authorization header arrived.
  /stats?path=<path>                                           {"count": requests seen for that path}.
"""
import base64
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

COUNTS = {}
COUNTS_LOCK = threading.Lock()

CLOUDINARY = [
    {
        "public_id": "samples/travel/clip_%d" % i,
        "created_at": "2026-10-%02dT10:00:00Z" % (i + 1),
        "secure_url": "https://res.cloudinary.example/video/upload/samples/travel/clip_%d.mp4" % i,
        "format": "mp4",
        "bytes": 100000 + i,
        "width": 720,
        "height": 1280,
        "duration": 5.5,
    }
    for i in range(7)
]


def pexels_video(i):
    return {
        "id": 1000 + i,
        "url": "https://www.pexels.example/video/%d/" % (1000 + i),
        "duration": 10 + i,
        "width": 2160,
        "height": 3840,
        "user": {"id": 1, "name": "Tester", "url": "https://www.pexels.example/@tester"},
        "video_files": [
            {"id": 1, "quality": "sd", "file_type": "video/mp4", "width": 540, "height": 960,
             "link": "https://videos.pexels.example/%d/sd.mp4" % (1000 + i)},
            {"id": 2, "quality": "hd", "file_type": "video/mp4", "width": 1080, "height": 1920,
             "link": "https://videos.pexels.example/%d/hd.mp4" % (1000 + i)},
            {"id": 3, "quality": "uhd", "file_type": "video/mp4", "width": 2160, "height": 3840,
             "link": "https://videos.pexels.example/%d/uhd.mp4" % (1000 + i)},
        ],
    }


PEXELS = [pexels_video(i) for i in range(5)]

MANIFEST = [
    {"public_id": "remote/one", "created_at": "2026-11-01T10:00:00Z", "url": "media/one.mp4", "format": "mp4"},
    {"public_id": "remote/two", "created_at": "2026-11-02T10:00:00.250Z",
     "url": "https://cdn.example/two.mp4", "format": "mp4"},
]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_json(self, status, body, extra_headers=()):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in extra_headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_GET(self):
        parts = urlsplit(self.path)
        path = parts.path
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        if path != "/stats":
            with COUNTS_LOCK:
                COUNTS[path] = COUNTS.get(path, 0) + 1
                count = COUNTS[path]
        host = self.headers.get("Host", "127.0.0.1")

        if path == "/stats":
            with COUNTS_LOCK:
                self.send_json(200, {"count": COUNTS.get(query.get("path", ""), 0)})
        elif path == "/cloudinary/videos":
            size = int(query.get("max_results", "10"))
            cursor = query.get("next_cursor")
            offset = int(base64.b64decode(cursor[5:]).decode()) if cursor else 0
            start = max(0, offset - 1) if (cursor and query.get("repeat") == "1") else offset
            body = {"resources": CLOUDINARY[start:offset + size]}
            if offset + size < len(CLOUDINARY):
                body["next_cursor"] = "cur+/" + base64.b64encode(str(offset + size).encode()).decode()
            self.send_json(200, body)
        elif path == "/endless/videos":
            n = int(query.get("next_cursor", "0"))
            resources = [dict(r, public_id="endless/%d_%d" % (n, i)) for i, r in enumerate(CLOUDINARY)]
            self.send_json(200, {"resources": resources, "next_cursor": str(n + 1)})
        elif path == "/pexels/videos/popular":
            page = int(query.get("page", "1"))
            per_page = int(query.get("per_page", "15"))
            start = (page - 1) * per_page
            body = {"page": page, "per_page": per_page, "total_results": len(PEXELS),
                    "videos": PEXELS[start:start + per_page]}
            if start + per_page < len(PEXELS):
                body["next_page"] = "http://%s%s?%s" % (host, path, urlencode({"page": page + 1, "per_page": per_page}))
            self.send_json(200, body)
        elif path == "/manifest.json":
            self.send_json(200, MANIFEST)
        elif path.startswith("/flaky/"):
            if count == 1:
                self.send_json(500, {"error": "try again"})
            else:
                self.send_json(200, MANIFEST)
        elif path.startswith("/unavailable/"):
            self.send_json(503, {"error": "down"})
        elif path.startswith("/missing/"):
            self.send_json(404, {"error": "not found"})
        elif path.startswith("/slow/"):
            time.sleep(3)
            self.send_json(200, MANIFEST)
        elif path == "/malformed":
            self.send_json(200, b'{"resources": [{"public_id": "a", "created_at": ')
        elif path == "/private/manifest.json":
            if self.headers.get("Authorization") == "Bearer s3cret-token":
                self.send_json(200, MANIFEST)
            else:
                self.send_json(401, {"error": "unauthorized"}, [("WWW-Authenticate", "Bearer")])
        elif path == "/redirect-elsewhere":
            port = self.server.server_address[1]
            self.send_json(302, {}, [("Location", "http://localhost:%d/echo-auth" % port)])
        elif path == "/echo-auth":
            seen = "auth-present" if self.headers.get("Authorization") else "auth-absent"
            self.send_json(200, [{"public_id": seen, "created_at": "2026-11-01T10:00:00Z",
                                  "url": "https://cdn.example/echo.mp4"}])
        else:
            self.send_json(404, {"error": "no route"})


def exit_when_stdin_closes():
    try:
        while sys.stdin.buffer.read(1024):
            pass
    finally:
        os._exit(0)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    threading.Thread(target=exit_when_stdin_closes, daemon=True).start()
    threading.Timer(300, lambda: os._exit(0)).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
