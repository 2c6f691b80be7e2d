#!/usr/bin/env python3
"""Request fuzzer for `videofeed serve` (issue 33): random HTTP requests, protocol junk and WebSocket traffic
against a running server on loopback, for a bounded time and number of requests.

Usage:
  python3 scripts/serve-fuzz.py URL --seconds N --seed S [--pid PID] [--max-rss-mib M]
                                [--max-requests R] [--threads T] [--timeout T] [--check-every N] [--case K ...]

URL is the address `videofeed serve` printed (http://127.0.0.1:PORT/); only loopback addresses are accepted.

It first lists the feed (`/api/feed?limit=50&pending=1`, then the same page whole) to learn real URLs: posters,
previews, initialisation and media segments, MP4s (docs/serve.md gives the card's shape), and their ETags. Then it
runs numbered cases until --seconds pass or --max-requests requests are sent, on --threads threads. Case K draws
everything it sends from its own RNG, seeded with (S, K), so a run is deterministic given --seed (which cases run
in the time, and what the server answers, depend on timing); `--case K` replays case K alone. Each case is one
attack class, one function below:

  path      a media URL mutated: deep paths (`a/` x up to 2000), %2f %00 %2e%2e and broken escapes, raw UTF-8 and
            invalid bytes, overlong components, dot segments, folders with wrong hex, seg-<huge>.m4s, seg-00.m4s,
            unknown renditions, the cache's own files; other routes (/app/, /healthz/x, absolute-form targets)
  query     /api/feed with junk cursor/limit/pending values, huge numbers, hundreds of parameters
  headers   a real URL with random Range (valid, multi, suffix, reversed, huge, junk), If-Range, If-None-Match
            (weak, strong, lists, *), duplicated headers, values up to ~100 KB, Connection close/keep-alive
  method    GET, HEAD, POST/PUT with bodies, OPTIONS, DELETE, TRACE, CONNECT, lower-case and garbage methods
  raw       protocol junk over a raw socket: HTTP/0.9, HTTP/9.9, a TLS ClientHello, the HTTP/2 preface, binary
            junk, Content-Length with Transfer-Encoding, bad chunks, bare LFs, obs-folds, NULs, 10,000 headers,
            half requests then close, a request then shutdown(SHUT_WR), a request a byte at a time
  pipeline  several requests (some bad) in one write on one connection, and keep-alive sequences
  ws        the viewers' WebSocket (/api/ws, Origin = the server's own origin) through a hand-rolled RFC 6455
            client: hello/at messages of the page's shapes with hostile numbers (4700000000000000000, -1, 1e308,
            NaN, strings, nested objects, huge arrays, deep nesting), non-JSON text, binary, fragmented frames,
            pings, oversized (> 16 KiB) frames, close frames, unmasked frames, bad opcodes and RSV bits, lies about
            lengths; and handshake variants (no key, version 8, another origin, POST)

How it is judged (exit status 1 when anything fails, else 0):
  - every HTTP answer with status >= 500 other than 503 is a failure;
  - the server must stay alive: `GET /healthz` answers 200 within 5 s after every --check-every requests and at
    the end; with --pid the process must exist and its VmRSS (sampled every 0.5 s) stay under --max-rss-mib;
  - a complete request (or bytes no request can start with) must get an answer or a close within --timeout:
    a connection the server leaves open without answering is a failure ("hung"); so is a request that needs no
    transcoding (a 404, a listing with pending=1, the page) answered later than --slow seconds;
  - a connection reset or closed without an answer is fine for protocol junk (counted), and so is a request that
    waits for transcoding beyond --timeout (counted as a wait).
A failure is printed with its case number and the request that caused it (Python repr, truncated to 300
characters); when the server dies, the cases in flight are the suspects (a WebSocket case names the frame it sent
last). The last line is `serve-fuzz: N requests, F failures`.

Standard library only (Python 3.11).
"""

import argparse
import base64
import collections
import hashlib
import ipaddress
import json
import random
import socket
import struct
import sys
import threading
import time
import urllib.parse

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
HUGE_NUMBERS = ["4700000000000000000", "9223372036854775807", "9223372036854775808", "18446744073709551616",
                "-9223372036854775808", "-9223372036854775809", "99999999999999999999999999999999999999",
                "1" + "0" * 400]


def trunc(value, limit=300):
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


# --------------------------------------------------------------------------------------------------------------------
# Connections: raw sockets with a timeout, a small HTTP/1.1 response reader.

class Closed(Exception):
    """The server closed the connection (EOF)."""


class Conn:
    def __init__(self, host, port, timeout):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise Closed()
        self.buf += chunk

    def read_exact(self, n):
        while len(self.buf) < n:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def read_line(self, limit=1 << 20):
        while b"\r\n" not in self.buf:
            if len(self.buf) > limit:
                raise ValueError("line too long")
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def read_response(self, head=False):
        """(status, {lower-case name: [values]}, body bytes); 1xx answers other than 101 are skipped."""
        while True:
            status_line = self.read_line()
            parts = status_line.split(b" ", 2)
            if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
                raise ValueError(f"bad status line {status_line[:100]!r}")
            status = int(parts[1])
            headers = collections.defaultdict(list)
            while True:
                line = self.read_line()
                if not line:
                    break
                name, _, value = line.partition(b":")
                headers[name.strip().lower().decode("latin-1")].append(value.strip().decode("latin-1"))
            if 100 <= status < 200 and status != 101:
                continue
            break
        if head or status in (101, 204, 304) or 100 <= status < 200:
            return status, headers, b""
        if "chunked" in ",".join(headers.get("transfer-encoding", [])).lower():
            body = b""
            while True:
                size = int(self.read_line().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.read_line():
                        pass
                    return status, headers, body
                body += self.read_exact(size)
                self.read_exact(2)
        if "content-length" in headers:
            return status, headers, self.read_exact(int(headers["content-length"][0]))
        body = b""
        try:
            while True:
                self._fill()
                body, self.buf = body + self.buf, b""
        except Closed:
            return status, headers, body

    def wait_close(self, seconds):
        """True when the server closes (EOF or reset) within `seconds`; bytes it sends meanwhile are dropped."""
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline:
                self.sock.settimeout(max(0.01, deadline - time.monotonic()))
                if not self.sock.recv(65536):
                    return True
        except socket.timeout:
            return False
        except OSError:
            return True
        return False

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def outcome_of(error):
    """A connection error's name for the tallies."""
    if isinstance(error, socket.timeout):
        return "timeout"
    if isinstance(error, ConnectionRefusedError):
        return "refused"
    if isinstance(error, (ConnectionResetError, BrokenPipeError)):
        return "reset"
    if isinstance(error, Closed):
        return "closed"
    if isinstance(error, ValueError):
        return "garbled"
    return type(error).__name__


# --------------------------------------------------------------------------------------------------------------------
# The run's shared state: tallies, failures, liveness.

class Fuzz:
    def __init__(self, args, host, port):
        self.args = args
        self.host, self.port = host, port
        self.origin = f"http://{host}:{port}"
        self.lock = threading.Lock()
        self.requests = 0
        self.by_class = collections.Counter()
        self.statuses = collections.Counter()       # (class, status or outcome)
        self.failures = []                          # (kind, case, class, text, request repr)
        self.failure_kinds = collections.Counter()
        self.failure_shown = collections.Counter()  # (kind, class) -> failures kept in full
        self.in_flight = {}                         # thread id -> [case number, class, last thing sent]
        self.recent = collections.deque(maxlen=8)   # the last cases finished, for suspects
        self.dead = threading.Event()
        self.stop = threading.Event()
        self.next_check = args.check_every
        self.peak_rss = 0
        self.rss_failed = False
        self.cards = []
        self.urls = []                              # real media paths
        self.etags = {}                             # path -> ETag
        self.renditions = set()
        self.folders = []
        self.total = 0

    # -- tallies

    def count(self, cls, n=1):
        with self.lock:
            self.requests += n
            self.by_class[cls] += n
            due = self.requests >= self.next_check
            if due:
                self.next_check = self.requests + self.args.check_every
        if due:
            self.check_alive("periodic /healthz")
        if self.requests >= self.args.max_requests:
            self.stop.set()

    def status(self, cls, status):
        with self.lock:
            self.statuses[(cls, status)] += 1

    def fail(self, kind, case, text, request):
        with self.lock:
            self.failure_kinds[kind] += 1
            cls = case.cls if case else "-"
            self.failure_shown[(kind, cls)] += 1
            if self.failure_shown[(kind, cls)] <= 3:   # the first few of each kind and class are kept in full
                self.failures.append((kind, case.number if case else None, case.cls if case else "-", text,
                                      trunc(request)))
        if self.args.verbose:
            print(f"FAIL {kind} case {case.number if case else '-'}: {text} {trunc(request)}", file=sys.stderr)

    def note(self, case, sent):
        """What `case` sent last (the suspect if the server dies now)."""
        with self.lock:
            self.in_flight[threading.get_ident()] = (case.number, case.cls, sent)

    # -- liveness

    def process_alive(self):
        if not self.args.pid:
            return True
        try:
            with open(f"/proc/{self.args.pid}/status") as f:
                for line in f:
                    if line.startswith("State:"):
                        return "Z" not in line.split()[1]
        except OSError:
            return False
        return True

    def rss_mib(self):
        try:
            with open(f"/proc/{self.args.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            pass
        return None

    def healthz(self, timeout=5.0):
        """None when /healthz answered 200 within `timeout`, else what went wrong."""
        try:
            conn = Conn(self.host, self.port, timeout)
            try:
                conn.send(f"GET /healthz HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nConnection: close\r\n\r\n"
                          .encode())
                status, _, _ = conn.read_response()
            finally:
                conn.close()
            return None if status == 200 else f"/healthz answered {status}"
        except Exception as error:   # noqa: BLE001 - any failure to answer is the finding
            return f"/healthz: {outcome_of(error)} ({error})"

    def check_alive(self, why, case=None, request=None):
        """Judges the server's liveness now; on death stops the run with the cases in flight as suspects."""
        if self.dead.is_set():
            return False
        problem = self.healthz()
        alive = self.process_alive()
        if problem is None and alive:
            return True
        if not alive or (problem and ("refused" in problem or "reset" in problem)):
            if self.dead.is_set():
                return False
            self.dead.set()
            self.stop.set()
            with self.lock:
                suspects = list(self.in_flight.values())
                recent = list(self.recent)
            noticed = f"noticed by case {case.number} ({case.cls}) on {why}" if case else f"noticed on {why}"
            self.fail("server died", None, f"{noticed}; {problem or 'the process is gone'}; the suspects follow",
                      request if request is not None else "")
            for number, cls, sent in suspects:
                self.fail("suspect (in flight when the server died)", Case(number, self.args.seed, cls),
                          "sent last", sent)
            for number, cls, sent in recent[-3:]:
                self.fail("suspect (finished just before)", Case(number, self.args.seed, cls), "sent last", sent)
            return False
        self.fail("not healthy", case, f"{why}: {problem}", request if request is not None else "")
        return True

    def monitor(self):
        """Samples the process's VmRSS every 0.5 s (with --pid) and notices its death."""
        while not self.stop.is_set():
            if self.args.pid:
                if not self.process_alive():
                    self.check_alive("the process is gone")
                    return
                rss = self.rss_mib()
                if rss is not None:
                    self.peak_rss = max(self.peak_rss, rss)
                    if rss > self.args.max_rss_mib and not self.rss_failed:
                        self.rss_failed = True
                        with self.lock:
                            suspects = [v for v in self.in_flight.values()]
                        self.fail("memory", None, f"VmRSS {rss:.0f} MiB > {self.args.max_rss_mib} MiB; in flight: "
                                  + ", ".join(f"case {n} ({c})" for n, c, _ in suspects), "")
            self.stop.wait(0.5)

    # -- one HTTP exchange, judged

    def exchange(self, case, raw, heads=(False,), wait=False, complete=True, shut_wr=False, chunks=None,
                 pause=0.0, lenient=False):
        """Sends `raw` (or `chunks` with `pause` between them) on a fresh connection and reads one answer per entry
        of `heads` (True: a HEAD request's answer, no body). Judges: a status >= 500 but 503 fails; a connection left
        open without an answer is a failure when `complete`; an answer slower than --slow fails unless `wait` (the
        request may wait for transcoding) or `lenient` (junk a parser may take for the start of a request: answered
        by the server's idle timeout, a 408 or a close, within twice --timeout). Returns the statuses read."""
        self.note(case, raw)
        self.count(case.cls, len(heads))
        statuses = []
        started = time.monotonic()
        timeout = self.args.timeout * (3 if wait else 2 if lenient else 1)
        try:
            conn = Conn(self.host, self.port, timeout)
        except OSError as error:
            self.status(case.cls, outcome_of(error))
            self.check_alive(f"connect: {outcome_of(error)}", case, raw)
            return statuses
        outcome = None
        try:
            try:
                for piece in (chunks or [raw]):
                    conn.send(piece)
                    if pause:
                        time.sleep(pause)
                if shut_wr:
                    conn.sock.shutdown(socket.SHUT_WR)
            except OSError as error:
                # The server may have answered (431, 400) and closed before reading everything: read on.
                self.status(case.cls, "reset-on-send")
            for head in heads:
                status, headers, body = conn.read_response(head=head)
                statuses.append(status)
                self.status(case.cls, status)
                if status >= 500 and status != 503:
                    self.fail("5xx", case, f"status {status}: {body[:120]!r}", raw)
                if status == 206:
                    self.check_range(case, raw, headers, body, head)
                if status == 101:
                    break
            elapsed = time.monotonic() - started
            if not wait and not lenient and elapsed > self.args.slow and not pause:
                self.fail("slow", case, f"answered in {elapsed:.1f} s (needs no transcoding)", raw)
        except (OSError, Closed, ValueError) as error:
            outcome = outcome_of(error)
            self.status(case.cls, outcome)
            if outcome == "timeout":
                if wait:
                    self.status(case.cls, "waited-beyond-timeout")
                elif complete:
                    self.fail("hung", case, f"no answer and no close within {timeout:.0f} s "
                              f"({len(statuses)} of {len(heads)} answered)", raw)
            elif outcome == "garbled":
                self.fail("garbled answer", case, str(error), raw)
        finally:
            conn.close()
        if outcome in ("reset", "refused", "closed") and not statuses:
            self.check_alive(f"{outcome} without an answer", case, raw)
        return statuses

    def check_range(self, case, raw, headers, body, head):
        """A 206 names its range, and its body is that range."""
        value = (headers.get("content-range") or [""])[0]
        try:
            unit, spec = value.split(" ", 1)
            span, size = spec.split("/")
            lower, upper = (int(x) for x in span.split("-"))
            ok = unit == "bytes" and 0 <= lower <= upper < int(size) and (head or len(body) == upper - lower + 1)
        except ValueError:
            ok = False
        if not ok:
            self.fail("bad 206", case, f"Content-Range {value!r} with {len(body)} bytes", raw)


class Case:
    """Case `number`: its own RNG, seeded with (seed, number)."""

    def __init__(self, number, seed, cls=None):
        self.number = number
        self.rng = random.Random(f"serve-fuzz/{seed}/{number}")
        self.cls = cls


# --------------------------------------------------------------------------------------------------------------------
# Learning the feed

def learn(fz):
    """Lists the feed (pending, then whole) for real URLs; a HEAD of a few of them for their ETags."""
    def get(path, timeout):
        conn = Conn(fz.host, fz.port, timeout)
        try:
            conn.send(f"GET {path} HTTP/1.1\r\nHost: {fz.host}:{fz.port}\r\nConnection: close\r\n\r\n".encode())
            return conn.read_response()
        finally:
            conn.close()

    cards = {}
    for path, timeout in (("/api/feed?limit=50&pending=1", 30), ("/api/feed?limit=50", 180)):
        try:
            status, _, body = get(path, timeout)
        except OSError as error:
            print(f"serve-fuzz: {path}: {outcome_of(error)} (going on with what is known)", file=sys.stderr)
            continue
        if status != 200:
            print(f"serve-fuzz: {path} answered {status}", file=sys.stderr)
            continue
        page = json.loads(body)
        fz.total = max(fz.total, page.get("total") or len(page["resources"]))
        for card in page["resources"]:
            if card["index"] not in cards or "renditions" in card:
                cards[card["index"]] = card
    fz.cards = [cards[i] for i in sorted(cards)]
    for card in fz.cards:
        for key in ("poster", "preview"):
            if card.get(key):
                fz.urls.append(card[key])
        for r in card.get("renditions", []):
            fz.renditions.add(r["name"])
            fz.urls += [r["init"], r["mp4"]] + r["segments"]
        if card.get("poster"):
            fz.folders.append(card["poster"].rsplit("/", 1)[0])
    if not fz.urls:
        raise SystemExit("serve-fuzz: the listing names no media URL")
    # ETags of the posters and first segments (made now if need be: later requests for them answer at once).
    for path in [c["poster"] for c in fz.cards if c.get("poster")][:4] + \
            [r["segments"][0] for c in fz.cards[:3] for r in c.get("renditions", [])[:1]]:
        try:
            conn = Conn(fz.host, fz.port, 60)
            try:
                conn.send(f"HEAD {path} HTTP/1.1\r\nHost: {fz.host}:{fz.port}\r\n\r\n".encode())
                status, headers, _ = conn.read_response(head=True)
            finally:
                conn.close()
            if status == 200 and headers.get("etag"):
                fz.etags[path] = headers["etag"][0]
        except OSError:
            pass


# --------------------------------------------------------------------------------------------------------------------
# Building blocks

def request(method, target, headers=(), body=b"", version=b"HTTP/1.1", host=None, fz=None):
    """A request's bytes; `target` and header values may be str or bytes; Host first unless host is False."""
    def b(x):
        return x if isinstance(x, bytes) else x.encode("utf-8", "surrogateescape")
    lines = [b(method) + b" " + b(target) + b" " + version]
    if host is not False:
        lines.append(b"Host: " + b(host or f"{fz.host}:{fz.port}"))
    for name, value in headers:
        lines.append(b(name) + b": " + b(value))
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def real_url(rng, fz, kinds=None):
    urls = fz.urls
    if kinds:
        urls = [u for u in urls if any(u.endswith(k) for k in kinds)] or urls
    return rng.choice(urls)


def is_cheap(fz, target):
    """Whether a GET of `target` needs no transcoding: anything but a media URL the feed lists, and any target no
    request line can carry (a space, a control character or a byte over 0x7e in it: a bad request)."""
    return not target.startswith("/media/") or target.split("?")[0] not in fz.urls or malformed(target)


def malformed(target):
    """Whether `target` (str or bytes) has bytes a request target cannot have: the request is a bad one."""
    data = target if isinstance(target, bytes) else target.encode("utf-8", "surrogateescape")
    return any(c <= 0x20 or c >= 0x7f for c in data)


# --------------------------------------------------------------------------------------------------------------------
# Attack classes: each builds its requests from the case's RNG, sends them and judges the answers.

def mutate_path(rng, fz):
    """A media path (str or bytes) with one to three mutations."""
    path = real_url(rng, fz)
    for _ in range(rng.randint(1, 3)):
        parts = path.split("/")
        if len(parts) < 2:   # "*" or an authority: mutate a real path instead
            path = real_url(rng, fz)
            parts = path.split("/")
        kind = rng.randrange(16)
        if kind == 0:     # deep paths
            n = rng.choice([10, 100, 500, 1000, 2000, rng.randint(1, 2000)])
            path = rng.choice(["/media/", path.rsplit("/", 1)[0] + "/", "/media/serve/"]) + \
                rng.choice(["a/", "x/", "./", "../", "%2e/", "/"]) * n + rng.choice(["", "seg-0.m4s", "poster.jpg"])
        elif kind == 1:   # percent-encodings
            enc = rng.choice(["%2f", "%2F", "%00", "%2e%2e", "%2e", "%5c", "%25", "%ff", "%zz", "%", "%2", "%c0%af",
                              "%e2%80%ae", "%2e%2e%2f%2e%2e%2f"])
            i = rng.randrange(1, len(parts))
            parts[i] = rng.choice([enc, parts[i] + enc, enc + parts[i],
                                   "".join(f"%{ord(c):02x}" for c in parts[i])])
            path = "/".join(parts)
        elif kind == 2:   # raw bytes: UTF-8 and not
            junk = rng.choice(["é", "\u202e", "😀", "\u0000", "\udcff\udcfe", "\udcc0\udcaf", "\t", "\x7f",
                               "\u0663", "ｓｅｇ"])
            i = rng.randrange(1, len(parts))
            parts[i] = parts[i][:rng.randint(0, len(parts[i]))] + junk + parts[i][rng.randint(0, len(parts[i])):]
            path = "/".join(parts)
        elif kind == 3:   # an overlong component
            i = rng.randrange(1, len(parts))
            parts[i] = rng.choice("ax%.") * rng.choice([256, 4096, 16384, 60000])
            path = "/".join(parts)
        elif kind == 4:   # dot segments
            path = rng.choice([path + "/..", path.replace("/media/", "/media/../"), "/media/../../../../etc/passwd",
                               path.replace("/media/", "/media//"), path.replace("/media/", "/media/./"),
                               "/media/" + "../" * 50 + "etc/passwd", path + "/.", path + "/"])
        elif kind == 5:   # the folder's hex wrong
            folder = rng.choice(fz.folders) if fz.folders else "/media/x.00000000"
            stem, _, digest = folder.rpartition(".")
            digest = rng.choice([digest.upper(), digest[:-1], digest + "0", "0" * len(digest), "g" * len(digest),
                                 digest[::-1], "", "0x" + digest, digest + "/.."])
            path = stem + "." + digest + "/" + path.rsplit("/", 1)[1]
        elif kind == 6:   # segment indices
            base = path.rsplit("/", 1)[0] if "/seg-" in path or "/init.mp4" in path else \
                real_url(rng, fz, ["seg-0.m4s"]).rsplit("/", 1)[0]
            index = rng.choice(["00", "01", "-1", "+1", "1e3", "0x1", " 1", "1 ", "\u0663", "１", "",
                                "9" * 30] + HUGE_NUMBERS + [str(rng.randint(2, 10 ** 6))])
            path = f"{base}/seg-{index}.m4s"
        elif kind == 7:   # unknown renditions
            name = rng.choice(["9999x9999", "720x1280x", "0x0", "-1x-1", "720X1280", "x", "720x",
                               "99999999999999999999x1",
                               rng.choice(sorted(fz.renditions) or ["720x1280"]) + ".."])
            folder = rng.choice(fz.folders) if fz.folders else "/media/x"
            path = rng.choice([f"{folder}/{name}/init.mp4", f"{folder}/{name}/seg-0.m4s", f"{folder}/{name}.mp4"])
        elif kind == 8:   # the cache's own files, temporaries, other names
            folder = rng.choice(fz.folders) if fz.folders else "/media/x"
            path = folder + "/" + rng.choice(["manifest.json", ".manifest.json.tmp", "poster.jpg.tmp", "index.m3u8",
                                              "poster.webp", "init.mp4", "preview.mp4/", "..%2fmanifest.json",
                                              "%2e%2e/%2e%2e/manifest.json", "poster.JPG"])
        elif kind == 9:   # other routes
            path = rng.choice(["/", "/app/", "/app/app.js", "/app/../index.html", "/app/%2e%2e/Package.swift",
                               "/app/" + "a/" * 300, "/app/app.js%00", "/healthz/x", "/metrics/", "/api/feed/",
                               "/api/ws", "/api", "//media" + path[6:], "/MEDIA" + path[6:], "/media", "/media/",
                               "*", "/index.html", "/favicon.ico", "/app/\u00e9.js", "/%2e%2e/%2e%2e/etc/passwd"])
        elif kind == 10:  # absolute-form and authority-form targets
            path = rng.choice([f"http://{fz.host}:{fz.port}{path}", f"http://evil.example{path}",
                               f"{fz.host}:{fz.port}",
                               f"https://{fz.host}{path}", "ftp://x/" + path])
        elif kind == 11:  # a query or fragment on a media path
            path = path + rng.choice(["?", "?x=1", "?" + "a=b&" * 500, "#frag", "?%00", "?\u00e9"])
        elif kind == 12:  # a component dropped or repeated
            i = rng.randrange(1, len(parts))
            parts.insert(i, parts[i]) if rng.random() < 0.5 else parts.pop(i)
            path = "/".join(parts)
        elif kind == 13:  # two real paths glued
            path = path + real_url(rng, fz)
        elif kind == 14:  # empty components
            path = path.replace("/", "/" * rng.randint(2, 5), rng.randint(1, 3))
        else:             # the file name's case or extension
            head, _, name = path.rpartition("/")
            path = head + "/" + rng.choice([name.upper(), name + ".bak", name.split(".")[0], name + "\x00.jpg",
                                            name.replace(".", "%2e")])
    return path


def attack_path(fz, case):
    rng = case.rng
    path = mutate_path(rng, fz)
    method = rng.choice(["GET", "GET", "GET", "HEAD"])
    if "\x00" in path:
        path = path.replace("\x00", "%00" if rng.random() < 0.5 else "\x00")
    if " " in path or "\r" in path or "\n" in path:
        path = path.replace(" ", "%20")
    raw = request(method, path, fz=fz, headers=[("Connection", "close")])
    fz.exchange(case, raw, heads=(method == "HEAD",), wait=not is_cheap(fz, path))


def attack_query(fz, case):
    rng = case.rng
    def value():
        return rng.choice(["", "0", "1", "-1", "+1", "50", "51", "0x10", " 1", "1 ", "1e3", "1.5", "１", "\u0663",
                           "%00", "%2b1", "999999999", "1000000000", "abc", "1&", "=", "%zz", "[]", "true",
                           str(fz.total), str(fz.total + 1), "x" * rng.choice([100, 5000, 60000])] + HUGE_NUMBERS)
    params = []
    for _ in range(rng.choice([0, 1, 2, 3, 3, 3, 5, 50, 500])):
        name = rng.choice(["cursor", "limit", "pending", "cursor", "limit", "x", "", "cursor[]", "CURSOR", "limit%00"])
        params.append((name, value()))
    if rng.random() < 0.85:
        params.insert(rng.randint(0, len(params)), ("pending", rng.choice(["1", "1", "1", "true", "01", "", "0"])))
    query = "&".join(rng.choice([f"{n}={v}", f"{n}={urllib.parse.quote(v)}", n, f"{n}=={v}"]) for n, v in params)
    path = rng.choice(["/api/feed", "/api/feed/", "/api/feed;x"]) + rng.choice(["?", "?", "??", "?&"]) + query
    pendings = [v for n, v in params if n == "pending"]
    cheap = pendings[:1] == ["1"] or malformed(path)
    fz.exchange(case, request("GET", path, fz=fz, headers=[("Connection", "close")]), wait=not cheap)


def range_value(rng, size):
    n = lambda: rng.choice([0, 1, size - 1, size, size + 1, rng.randint(0, max(1, size)), 2 ** 31, 2 ** 63 - 1, 2 ** 64,
                            10 ** 18, 10 ** 19, 10 ** 40])
    return rng.choice([
        f"bytes={n()}-{n()}", f"bytes={n()}-", f"bytes=-{n()}", "bytes=-0", "bytes=0-0",
        f"bytes={n()}-{n()},{n()}-{n()}",
        f"bytes={n()}-{n()}, -{n()}", f"bytes=5-1", f"bytes= {n()} - {n()} ", f"BYTES={n()}-", f"items=0-1", "bytes=",
        "bytes=-", "bytes=--1", "bytes=-1-2", "bytes=a-b", "bytes=0-1x", "bytes=\u0663-", "bytes=0x10-", "bytes=1e3-",
        "bytes=" + ",".join(f"{i}-{i}" for i in range(rng.choice([2, 100, 2000]))), "bytes=0-" + "9" * 5000, "",
        "bytes=" + "0" * 30 + "1-", f"bytes={n()}-{n()};x", "bytes=0-1\x00", "bytes=\t0-1"])


def attack_headers(fz, case):
    rng = case.rng
    path = real_url(rng, fz, list(fz.etags) if fz.etags and rng.random() < 0.7 else None)
    etag = fz.etags.get(path, '"0000-1"')
    headers = []
    for _ in range(rng.randint(1, 6)):
        kind = rng.randrange(9)
        if kind <= 2:
            headers.append(("Range", range_value(rng, rng.choice([1000, 100000, 1 << 20]))))
        elif kind == 3:
            headers.append(("If-Range", rng.choice([etag, "W/" + etag, '"nope"', "Tue, 01 Jan 2030 00:00:00 GMT", "",
                                                    "junk"])))
        elif kind == 4:
            headers.append(("If-None-Match", rng.choice([etag, "W/" + etag, "*", f'"a", {etag}', f"{etag},{etag}",
                                                         '"a", "b"', "", ",", "W/", '"' + "x" * 20000 + '"',
                                                         ", ".join(['"x"'] * 2000) + ", " + etag, etag[:-1]])))
        elif kind == 5:   # a header many times
            name = rng.choice(["Range", "Host", "If-None-Match", "Connection", "X-Dup"])
            headers += [(name, rng.choice(["bytes=0-1", "x", etag, "close"]))] * rng.choice([2, 3, 100])
        elif kind == 6:   # long values
            headers.append((rng.choice(["X-Long", "User-Agent", "Cookie", "Accept", "Range"]),
                            rng.choice("ab,=;") * rng.choice([1000, 8000, 60000, 100000])))
        elif kind == 7:
            headers.append(("Connection", rng.choice(["close", "keep-alive", "Upgrade", "close, keep-alive", "",
                                                      "keep-alive, Upgrade"])))
        else:
            headers.append(rng.choice([("Accept-Encoding", "gzip, br, *"), ("Expect", "100-continue"),
                                       ("Upgrade", "h2c"), ("Transfer-Encoding", "identity"), ("Content-Length", "0"),
                                       ("X-\u00e9", "\u00e9"), ("Origin", "null"), ("Accept", "*/*" * 10)]))
    if not any(n == "Connection" for n, _ in headers):
        headers.append(("Connection", "close"))
    method = rng.choice(["GET", "GET", "HEAD"])
    long = sum(len(v) for _, v in headers) > 60000
    fz.exchange(case, request(method, path, headers, fz=fz), heads=(method == "HEAD",),
                wait=not is_cheap(fz, path) and not long)


def attack_method(fz, case):
    rng = case.rng
    path = rng.choice([real_url(rng, fz), "/api/feed?pending=1", "/", "/healthz", "/metrics", "/api/ws",
                       "/app/app.js", "/media/x/y", "*"])
    method = rng.choice(["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT", "get", "GeT",
                         "FOO", "G" * rng.choice([50, 5000]), "M-SEARCH", "PROPFIND", "QUERY"])
    if method == "CONNECT":
        path = f"{fz.host}:{fz.port}"
    body = b""
    headers = [("Connection", "close")]
    if method in ("POST", "PUT", "PATCH", "QUERY") or rng.random() < 0.2:
        body = rng.choice([b"{}", b'{"type":"at","index":0}', rng.randbytes(rng.choice([10, 1000, 100000])),
                           b"x" * 1_000_000])
        headers.append(("Content-Length", str(len(body))))
        if rng.random() < 0.3:
            headers.append(("Content-Type", rng.choice(["application/json", "multipart/form-data; boundary=x"])))
    cheap = method not in ("GET", "get", "HEAD") or is_cheap(fz, path)
    fz.exchange(case, request(method, path, headers, body, fz=fz), heads=(method == "HEAD",), wait=not cheap)


TLS_CLIENT_HELLO = bytes.fromhex(
    "16030100c4010000c00303" + "00" * 32 + "00" + "0004130113020100" + "0093" + "0000000e000c0000096c6f63616c686f7374"
    + "000a00080006001d00170018" + "000d00140012040308040401050308050501080606010201" + "002b0003020304"
    + "0033002600240020" + "11" * 32 + "00" * 41)


def attack_raw(fz, case):
    """Protocol junk on a raw socket. `complete`: bytes that make a whole (good or bad) request, which the server
    must answer or close; the others (half requests) are not judged beyond the server's liveness."""
    rng = case.rng
    h = f"Host: {fz.host}:{fz.port}\r\n".encode()
    kind = rng.randrange(20)
    chunks, pause, shut_wr, complete, heads, lenient = None, 0.0, False, True, (False,), False
    if kind == 0:     # HTTP/0.9: an HTTP/1 parser may wait for the rest of a request line
        raw = rng.choice([b"GET /\r\n", b"GET /healthz\r\n\r\n"])
        lenient = True
    elif kind == 1:
        raw = b"GET /healthz HTTP/" + rng.choice([b"9.9", b"2.0", b"1.2", b"0.9", b"1.10", b"x", b"1.1 extra"]) + \
            b"\r\n" + h + b"\r\n"
    elif kind == 2:
        raw = TLS_CLIENT_HELLO
    elif kind == 3:
        raw = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
    elif kind == 4:   # binary junk that no request line starts with
        raw = bytes([rng.choice([0, 1, 0x16, 0x80, 0xff, ord(" "), ord("\r")])]) + rng.randbytes(rng.choice([10, 1000,
                                                                                                          65536]))
    elif kind == 5:   # Content-Length and Transfer-Encoding together
        raw = b"POST /api/feed HTTP/1.1\r\n" + h + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        heads = (False, False) if rng.random() < 0.5 else (False,)
        if len(heads) == 2:
            raw += b"GET /healthz HTTP/1.1\r\n" + h + b"\r\n"
    elif kind == 6:   # bad chunks
        raw = b"POST /healthz HTTP/1.1\r\n" + h + b"Transfer-Encoding: chunked\r\n\r\n" + rng.choice(
            [b"zz\r\nabc\r\n0\r\n\r\n", b"ffffffffffffffffffff\r\nab\r\n", b"-1\r\n\r\n", b"3\r\nabcdef\r\n0\r\n\r\n",
             b"0x3\r\nabc\r\n0\r\n\r\n"])
    elif kind == 7:   # bare LFs, obs-fold, NUL, spaces before the colon
        raw = rng.choice([b"GET /healthz HTTP/1.1\n" + h.replace(b"\r", b"") + b"\n",
                          b"GET /healthz HTTP/1.1\r\n" + h + b"X-A: 1\r\n continued\r\n\r\n",
                          b"GET /healthz HTTP/1.1\r\n" + h + b"X-A: a\x00b\r\n\r\n",
                          b"GET /healthz HTTP/1.1\r\n" + h + b"Range : bytes=0-1\r\n\r\n",
                          b"GET /healthz HTTP/1.1\r\n" + h + b"NoColon\r\n\r\n",
                          b"GET /healthz HTTP/1.1\r\n" + h + b": empty-name\r\n\r\n",
                          b"GET  /healthz  HTTP/1.1\r\n" + h + b"\r\n",
                          b"GET /heal\x00thz HTTP/1.1\r\n" + h + b"\r\n",
                          b"GET /healthz HTTP/1.1\r\r\n" + h + b"\r\n",
                          b"\r\n\r\n\r\nGET /healthz HTTP/1.1\r\n" + h + b"\r\n"])
    elif kind == 8:   # thousands of headers
        count = rng.choice([500, 10000])
        raw = b"GET /healthz HTTP/1.1\r\n" + h + b"".join(b"X-%d: %d\r\n" % (i, i) for i in range(count)) + b"\r\n"
    elif kind == 9:   # half requests, then close
        full = b"GET /api/feed?pending=1 HTTP/1.1\r\n" + h + b"Range: bytes=0-1\r\n\r\n"
        raw = full[:rng.randint(1, len(full) - 1)]
        complete = False
    elif kind == 10:  # a request, then shutdown(SHUT_WR)
        raw = rng.choice([b"GET /healthz HTTP/1.1\r\n" + h + b"\r\n", b"GET /api/feed?pending=1 HTTP/1.0\r\n\r\n",
                          b"HEAD " + real_url(rng, fz).encode() + b" HTTP/1.1\r\n" + h + b"\r\n"])
        heads = (raw.startswith(b"HEAD"),)
        shut_wr = True
    elif kind == 11:  # a half request, then shutdown(SHUT_WR): the server must close
        full = b"GET /healthz HTTP/1.1\r\n" + h + b"\r\n"
        raw = full[:rng.randint(1, len(full) - 2)]
        shut_wr = True
    elif kind == 12:  # a request a byte at a time
        raw = b"GET /healthz HTTP/1.1\r\n" + h + b"\r\n"
        chunks, pause = [raw[i:i + 1] for i in range(len(raw))], 0.005
    elif kind == 13:  # a body that lies about its length (waits for the rest)
        raw = b"POST /api/feed HTTP/1.1\r\n" + h + b"Content-Length: " + rng.choice([b"100", b"99999999999"]) + \
            b"\r\n\r\nabc"
        complete = False
    elif kind == 14:  # impossible lengths
        raw = b"POST /healthz HTTP/1.1\r\n" + h + b"Content-Length: " + rng.choice(
            [b"-1", b"1e3", b"99999999999999999999999", b"1, 2", b"0x10", b" "]) + b"\r\n\r\n"
    elif kind == 15:  # Expect: 100-continue and never a body
        raw = b"POST /api/feed HTTP/1.1\r\n" + h + b"Expect: 100-continue\r\nContent-Length: 10\r\n\r\n"
        complete = False
    elif kind == 16:  # a request line with no end
        raw = b"GET /" + b"a" * rng.choice([10000, 100000, 1000000])
        complete = lenient = len(raw) > 100000   # past any sane limit the server must refuse
    elif kind == 17:  # an upgrade to h2c or an unknown protocol
        raw = b"GET /healthz HTTP/1.1\r\n" + h + b"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: " + rng.choice(
            [b"h2c", b"websocket", b"foo/1"]) + b"\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n"
    elif kind == 18:  # no Host, two Hosts, HTTP/1.0 keep-alive
        raw = rng.choice([b"GET /healthz HTTP/1.1\r\n\r\n", b"GET /healthz HTTP/1.1\r\n" + h + h + b"\r\n",
                          b"GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
                          b"GET /healthz HTTP/1.1\r\nHost: \r\n\r\n", b"GET /healthz HTTP/1.1\r\nHost: a b c\r\n\r\n"])
    else:             # control characters in the method
        raw = rng.choice([b"G\x00T /healthz HTTP/1.1\r\n" + h + b"\r\n", b"\tGET /healthz HTTP/1.1\r\n" + h + b"\r\n",
                          b"GET\t/healthz\tHTTP/1.1\r\n" + h + b"\r\n", b"\xffGET /healthz HTTP/1.1\r\n\r\n"])
    if complete:
        fz.exchange(case, raw, heads=heads, shut_wr=shut_wr, chunks=chunks, pause=pause, lenient=lenient)
        return
    # A half request: send it, close (or half-close and wait for the server's close), and only check liveness.
    fz.note(case, raw)
    fz.count(case.cls)
    try:
        conn = Conn(fz.host, fz.port, fz.args.timeout)
    except OSError as error:
        fz.status(case.cls, outcome_of(error))
        fz.check_alive("connect", case, raw)
        return
    try:
        conn.send(raw)
        if rng.random() < 0.5:
            time.sleep(rng.choice([0, 0.05, 0.3]))
        fz.status(case.cls, "half-sent")
    except OSError as error:
        fz.status(case.cls, outcome_of(error))
    finally:
        conn.close()


def attack_pipeline(fz, case):
    """Several requests in one write (or one after another on a kept-alive connection), some of them bad."""
    rng = case.rng
    raws, heads = [], []
    for _ in range(rng.randint(2, 12)):
        kind = rng.randrange(6)
        if kind == 0:
            raws.append(request("GET", "/healthz", fz=fz)); heads.append(False)
        elif kind == 1:
            p = real_url(rng, fz, list(fz.etags) or None)
            raws.append(request("HEAD", p, [("Range", range_value(rng, 1000))], fz=fz)); heads.append(True)
        elif kind == 2:
            p = real_url(rng, fz, list(fz.etags) or None)
            raws.append(request("GET", p, [("If-None-Match", fz.etags.get(p, "*"))], fz=fz)); heads.append(False)
        elif kind == 3:
            raws.append(request("GET", "/api/feed?pending=1&limit=" + rng.choice(["1", "50", "0", "x"]), fz=fz))
            heads.append(False)
        elif kind == 4:
            raws.append(request("GET", mutate_path(rng, fz).replace(" ", "%20"), fz=fz)); heads.append(False)
        else:   # a bad request: the server answers 400 and closes, or closes
            raws.append(rng.choice([b"GARBAGE\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n", TLS_CLIENT_HELLO[:40]]))
            heads.append(False)
    # Only requests before the first bad one are answered (then a 400 or a close): they may wait for transcoding.
    wait = False
    for raw in raws:
        line = raw.split(b"\r\n")[0].split(b" ")
        if len(line) != 3 or line[0] not in (b"GET", b"HEAD") or line[2] != b"HTTP/1.1" or malformed(line[1]):
            break
        wait = wait or line[1].decode() in fz.urls
    if rng.random() < 0.7:
        fz.exchange(case, b"".join(raws), heads=tuple(heads), wait=wait)
    else:   # one at a time on a kept-alive connection
        fz.exchange(case, b"".join(raws), heads=tuple(heads), wait=wait, chunks=raws, pause=0.01)


# --------------------------------------------------------------------------------------------------------------------
# WebSocket: a hand-rolled RFC 6455 client, masked frames built from the case's RNG.

def frame(rng, opcode, payload, fin=True, mask=True, rsv=0, length=None):
    """A frame's bytes; `length` overrides the length field (a lie)."""
    n = len(payload) if length is None else length
    b0 = (0x80 if fin else 0) | (rsv << 4) | opcode
    if n < 126:
        head = struct.pack("!BB", b0, (0x80 if mask else 0) | n)
    elif n < 65536:
        head = struct.pack("!BBH", b0, (0x80 if mask else 0) | 126, n)
    else:
        head = struct.pack("!BBQ", b0, (0x80 if mask else 0) | 127, n)
    if not mask:
        return head + payload
    key = rng.randbytes(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def hostile_number(rng, fz):
    return rng.choice([0, 1, rng.randrange(max(1, fz.total)), fz.total, fz.total + 1, -1, -2, 2 ** 31, 2 ** 32,
                       4700000000000000000, 2 ** 63 - 1, 2 ** 63 - 2, -(2 ** 63), 2 ** 63, 2 ** 64, 10 ** 30,
                       1e308, -1e308, 1e-300, 0.5, 1.0, 2.5, -0.0, float("nan"), float("inf"), float("-inf"),
                       "NaN", "Infinity", "-Infinity", "1", "", "0x10", None, True, False, [], [1], {}, {"a": 1},
                       rng.randint(-10 ** 6, 10 ** 6), rng.uniform(-1e6, 1e6)])


def ws_message(rng, fz):
    """A JSON text of the page's shapes, hostile where it can be."""
    shape = rng.randrange(10)
    if shape <= 3:
        message = {"type": "at", "index": hostile_number(rng, fz), "time": hostile_number(rng, fz)}
    elif shape <= 5:
        message = {"type": "hello", "width": hostile_number(rng, fz), "height": hostile_number(rng, fz),
                   "rendition": rng.choice(sorted(fz.renditions) + ["", "x" * 5000, "9999x9999", None, 1, ["720x1280"],
                                                                   "\u00e9\u0000"])}
    elif shape == 6:   # sane values: the server does real work
        message = rng.choice([{"type": "at", "index": rng.randrange(max(1, fz.total)), "time": rng.uniform(0, 3)},
                              {"type": "hello", "width": rng.choice([360, 720, 1080]),
                               "height": rng.choice([640, 1280, 1920]), "rendition": rng.choice(sorted(fz.renditions)
                                                                                                 or ["720x1280"])}])
    elif shape == 7:   # wrong types and extra or missing fields
        message = rng.choice([{"type": rng.choice([1, None, [], "AT", "at ", "", "window", "swipe"]), "index": 0},
                              {"type": "at"}, {"type": "hello"}, {"type": "at", "index": 0, "time": 0,
                                                                  "extra": {"nested": [1, 2, {"x": None}]}},
                              {"index": 0}, [], [1, 2], "at", 1, None])
    elif shape == 8:   # huge arrays and deep nesting, under the 16 KiB limit or over it
        n = rng.choice([100, 1000, 3000, 8000])
        message = rng.choice([{"type": "at", "index": [0] * n, "time": 0},
                              {"type": "hello", "width": list(range(n)), "height": 1},
                              "DEEP:" + str(n)])
    else:
        message = {"type": "at", "index": hostile_number(rng, fz), "time": hostile_number(rng, fz),
                   "type2": "hello", "width": hostile_number(rng, fz)}
    if isinstance(message, str) and message.startswith("DEEP:"):
        n = int(message[5:])
        return rng.choice(["[" * n + "]" * n, '{"a":' * n + "1" + "}" * n,
                           '{"type":"at","index":' + "[" * n + "]" * n + "}"])
    return json.dumps(message, allow_nan=True)   # NaN and Infinity as bare words: not JSON, as a client may send


def ws_handshake(fz, rng, conn, variant="good"):
    key = base64.b64encode(rng.randbytes(16)).decode()
    headers = [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Key", key),
               ("Sec-WebSocket-Version", "13"), ("Origin", fz.origin)]
    method = "GET"
    if variant == "no-key":
        headers = [h for h in headers if h[0] != "Sec-WebSocket-Key"]
    elif variant == "version-8":
        headers[3] = ("Sec-WebSocket-Version", "8")
    elif variant == "other-origin":
        headers[4] = ("Origin", "http://evil.example")
    elif variant == "post":
        method = "POST"
    elif variant == "bad-key":
        headers[2] = ("Sec-WebSocket-Key", "x" * rng.choice([1, 100, 10000]))
    elif variant == "no-upgrade":
        headers = headers[1:]
    elif variant == "extensions":
        headers.append(("Sec-WebSocket-Extensions", "permessage-deflate; client_max_window_bits"))
        headers.append(("Sec-WebSocket-Protocol", "chat, " + "x" * 1000))
    raw = request(method, "/api/ws", headers, fz=fz)
    conn.send(raw)
    status, headers, _ = conn.read_response()
    if status == 101 and variant != "bad-key":
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        if (headers.get("sec-websocket-accept") or [""])[0] != accept:
            raise ValueError("bad Sec-WebSocket-Accept")
    return raw, status


def ws_drain(conn, seconds, pong=None):
    """Reads what the server sends for up to `seconds`; 'open', 'closed' (close frame or EOF) or 'reset'; 'pong'
    as soon as a pong with payload `pong` comes (when given)."""
    deadline = time.monotonic() + seconds
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return "open"
            conn.sock.settimeout(left)
            chunk = conn.sock.recv(65536)
            if not chunk:
                return "closed"
            conn.buf += chunk
            # A close frame from the server (unmasked: opcode 8 in the first byte of some frame) ends the session.
            while len(conn.buf) >= 2:
                b0, b1 = conn.buf[0], conn.buf[1]
                n, skip = b1 & 0x7F, 2
                if n == 126:
                    if len(conn.buf) < 4:
                        break
                    n, skip = struct.unpack("!H", conn.buf[2:4])[0], 4
                elif n == 127:
                    if len(conn.buf) < 10:
                        break
                    n, skip = struct.unpack("!Q", conn.buf[2:10])[0], 10
                if len(conn.buf) < skip + n:
                    break
                payload, conn.buf = conn.buf[skip:skip + n], conn.buf[skip + n:]
                if b0 & 0x0F == 0x8:
                    return "closed"
                if b0 & 0x0F == 0xA and pong is not None and payload == pong:
                    return "pong"
    except socket.timeout:
        return "open"
    except OSError:
        return "reset"


def attack_ws(fz, case):
    rng = case.rng
    variant = "good" if rng.random() < 0.85 else rng.choice(["no-key", "version-8", "other-origin", "post", "bad-key",
                                                              "no-upgrade", "extensions"])
    try:
        conn = Conn(fz.host, fz.port, fz.args.timeout)
    except OSError as error:
        fz.status(case.cls, outcome_of(error))
        fz.check_alive("connect", case, "/api/ws")
        return
    sent = []
    try:
        fz.note(case, f"handshake {variant}")
        fz.count(case.cls)
        try:
            raw, status = ws_handshake(fz, rng, conn, variant)
        except (OSError, Closed, ValueError) as error:
            fz.status(case.cls, "handshake-" + outcome_of(error))
            if outcome_of(error) == "timeout":
                fz.fail("hung", case, f"WebSocket handshake ({variant}): no answer within {fz.args.timeout:.0f} s",
                        variant)
            elif outcome_of(error) == "garbled":
                fz.fail("garbled answer", case, f"WebSocket handshake ({variant}): {error}", variant)
            else:
                fz.check_alive(f"WebSocket handshake {outcome_of(error)}", case, variant)
            return
        fz.status(case.cls, f"handshake-{status}")
        if status >= 500 and status != 503:
            fz.fail("5xx", case, f"WebSocket handshake ({variant}) answered {status}", raw)
        if status != 101:
            return
        # In a lockstep session each message is followed by a ping, and the next waits for its pong: the server
        # reads frames in order, so a message that kills it is the last one sent (the others race).
        lockstep = rng.random() < 0.5
        state, ended_by_us = "open", False
        for _ in range(rng.randint(1, 25)):
            action = rng.randrange(20)
            terminal = False
            if action <= 9:
                text = ws_message(rng, fz)
                data, what = frame(rng, 0x1, text.encode()), text
            elif action == 10:    # non-JSON text, invalid UTF-8
                text = rng.choice(["hello", "", "{", "}" * 100, '{"type":"at"', "\u00e9" * 1000])
                payload = text.encode() if rng.random() < 0.8 else b"\xff\xfe\xc0\xaf"
                data, what = frame(rng, 0x1, payload), payload
            elif action == 11:    # binary
                payload = rng.randbytes(rng.choice([0, 10, 1000, 16000]))
                data, what = frame(rng, 0x2, payload), f"binary {len(payload)} bytes"
            elif action == 12:    # a message fragmented into frames, sometimes with a ping between
                text = ws_message(rng, fz).encode()
                cut = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, rng.randint(1, 4))))
                pieces = [text[a:b] for a, b in zip([0] + cut, cut + [len(text)])]
                frames = []
                for i, piece in enumerate(pieces):
                    frames.append(frame(rng, 0x1 if i == 0 else 0x0, piece, fin=i == len(pieces) - 1))
                    if rng.random() < 0.3 and i < len(pieces) - 1:
                        frames.append(frame(rng, 0x9, b"between"))
                data, what = b"".join(frames), f"fragmented {text[:200]!r} in {len(pieces)}"
            elif action == 13:    # ping and pong
                payload = rng.randbytes(rng.choice([0, 10, 125]))
                data, what = frame(rng, rng.choice([0x9, 0xA]), payload), "ping/pong"
            elif action == 14:    # oversized: over the 16 KiB message limit (one frame or fragments)
                n = rng.choice([16385, 20000, 70000, 1 << 20])
                payload = b'{"type":"at","index":0,"x":"' + b"x" * n + b'"}'
                if rng.random() < 0.5:
                    data = frame(rng, 0x1, payload)
                else:
                    data = frame(rng, 0x1, payload[:n // 2], fin=False) + frame(rng, 0x0, payload[n // 2:])
                what, terminal = f"oversized text of {len(payload)} bytes", True
            elif action == 15:    # a close frame, good or bad
                payload = rng.choice([struct.pack("!H", 1000), struct.pack("!H", 1000) + b"bye", b"", b"\x03",
                                      struct.pack("!H", 999), struct.pack("!H", 5000) + b"\xff",
                                      struct.pack("!H", 1000) + b"x" * 200])
                data, what, terminal = frame(rng, 0x8, payload, length=None), f"close {payload[:20]!r}", True
                ended_by_us = True
            elif action == 16:    # an unmasked frame (a protocol error from a client)
                data, what, terminal = frame(rng, 0x1, b'{"type":"at","index":0,"time":0}', mask=False), \
                    "unmasked text", True
            elif action == 17:    # reserved opcodes, RSV bits, fragmented or long control frames
                data = rng.choice([frame(rng, rng.choice([3, 4, 5, 6, 7, 0xB, 0xC, 0xF]), b"x"),
                                   frame(rng, 0x1, b"{}", rsv=rng.choice([1, 2, 4, 7])),
                                   frame(rng, 0x9, b"x", fin=False),
                                   frame(rng, 0x9, b"x" * 200),
                                   frame(rng, 0x0, b"orphan continuation"),
                                   frame(rng, 0x1, b"[", fin=False) + frame(rng, 0x1, b"]")])
                what, terminal = f"bad frame {data[:12]!r}", True
            elif action == 18:    # a length that lies (huge), then close the socket
                lie = rng.choice([2 ** 62, 2 ** 63 - 1, 2 ** 64 - 1, 70000])
                data = frame(rng, 0x1, b"{}", length=lie)[:14] + b"{}"
                what, terminal = f"length lie {data[:10]!r}", True
            else:                 # a burst of sane `at` messages (a fast swiper)
                texts = [json.dumps({"type": "at", "index": rng.randrange(max(1, fz.total)), "time": 0})
                         for _ in range(rng.randint(2, 30))]
                data, what = b"".join(frame(rng, 0x1, t.encode()) for t in texts), f"burst of {len(texts)} at"
            sent.append(what)
            fz.note(case, (f"WebSocket{' (lockstep)' if lockstep else ''}, the last of {len(sent)} messages:",
                           *sent[-3:]))
            fz.count(case.cls)
            try:
                conn.send(data)
                if lockstep and not terminal:
                    token = b"fz%d" % len(sent)
                    conn.send(frame(rng, 0x9, token))
                    state = ws_drain(conn, fz.args.timeout, pong=token)
                    if state == "open":
                        fz.fail("hung", case, f"no pong within {fz.args.timeout:.0f} s after {what!r}", sent[-3:])
                        break
                    if state == "pong":
                        state = "open"
                        continue
                    break
            except OSError:
                state = "reset"
                break
            state = ws_drain(conn, rng.choice([0.0, 0.02, 0.1, 0.3]) if not terminal else 0.0)
            if state != "open" or terminal:
                break
        fz.status(case.cls, f"ws-{state}")
        if state == "open":
            # End the session: a close frame (unless one was sent) and the server's close within the timeout.
            if not ended_by_us:
                try:
                    conn.send(frame(rng, 0x8, struct.pack("!H", 1000)))
                except OSError:
                    state = "reset"
            if state == "open":
                state = ws_drain(conn, fz.args.timeout)
                if state == "open":
                    fz.fail("hung", case, f"WebSocket not closed {fz.args.timeout:.0f} s after the client's last "
                            f"frame ({sent[-1]!r})", sent)
                fz.status(case.cls, f"ws-end-{state}")
        if state == "reset":
            fz.check_alive("WebSocket reset", case, sent[-3:] if sent else variant)
        elif state == "closed" and not ended_by_us:
            # The server ended the session: fine after a protocol error, but it may have died.
            fz.check_alive("WebSocket closed by the server", case, sent[-3:])
    finally:
        conn.close()


ATTACKS = {
    "path": (attack_path, 22),
    "query": (attack_query, 10),
    "headers": (attack_headers, 16),
    "method": (attack_method, 8),
    "raw": (attack_raw, 16),
    "pipeline": (attack_pipeline, 8),
    "ws": (attack_ws, 20),
}


def run_case(fz, number):
    case = Case(number, fz.args.seed)
    names = list(ATTACKS)
    case.cls = case.rng.choices(names, weights=[ATTACKS[n][1] for n in names])[0]
    if fz.args.only and case.cls not in fz.args.only:
        return
    try:
        ATTACKS[case.cls][0](fz, case)
    except Exception as error:   # noqa: BLE001 - a bug of the fuzzer's own must not end the run silently
        fz.fail("fuzzer error", case, f"{type(error).__name__}: {error}", "")
    with fz.lock:
        last = fz.in_flight.pop(threading.get_ident(), None)
        if last:
            fz.recent.append(last)


# --------------------------------------------------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", help="the server's address, http://127.0.0.1:PORT/")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--pid", type=int, help="the server's process: must stay alive, VmRSS under --max-rss-mib")
    parser.add_argument("--max-rss-mib", type=float, default=1024)
    parser.add_argument("--max-requests", type=int, default=200_000)
    parser.add_argument("--threads", type=int, default=3, help="concurrent cases (at most 8)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds every socket waits")
    parser.add_argument("--slow", type=float, default=5.0,
                        help="seconds within which a request that needs no transcoding must be answered")
    parser.add_argument("--check-every", type=int, default=200, help="requests between /healthz checks")
    parser.add_argument("--case", type=int, action="append", help="replay only these case numbers")
    parser.add_argument("--only", action="append", choices=list(ATTACKS), help="run only these attack classes")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    args.threads = max(1, min(8, args.threads))

    parts = urllib.parse.urlsplit(args.url)
    try:
        if parts.scheme != "http" or not ipaddress.ip_address(parts.hostname).is_loopback:
            raise ValueError
    except ValueError:
        raise SystemExit(f"serve-fuzz: {args.url}: only http:// on a loopback address (127.0.0.1) is fuzzed")
    fz = Fuzz(args, parts.hostname, parts.port or 80)
    problem = fz.healthz()
    if problem:
        print(f"serve-fuzz: the server does not answer: {problem}", file=sys.stderr)
        return 2
    learn(fz)
    print(f"serve-fuzz: {args.url} — {len(fz.cards)} cards, {len(fz.urls)} media URLs, seed {args.seed}, "
          f"{args.seconds:g} s, {args.threads} threads", flush=True)

    started = time.monotonic()
    numbers = iter(args.case) if args.case else iter(range(1, 1 << 62))
    numbers_lock = threading.Lock()

    def worker():
        while not fz.stop.is_set() and time.monotonic() - started < args.seconds:
            with numbers_lock:
                number = next(numbers, None)
            if number is None:
                return
            run_case(fz, number)

    monitor = threading.Thread(target=fz.monitor, daemon=True)
    monitor.start()
    threads = [threading.Thread(target=worker, daemon=True) for _ in range(1 if args.case else args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        # A case ends within a few timeouts; a thread still stuck past that is left (daemon) and reported.
        t.join(max(1.0, args.seconds - (time.monotonic() - started)) + 6 * args.timeout)
    stuck = sum(t.is_alive() for t in threads)
    fz.stop.set()
    if stuck:
        fz.fail("fuzzer stuck", None, f"{stuck} thread(s) still in a case at the end", list(fz.in_flight.values()))
    if not fz.dead.is_set():
        fz.check_alive("final /healthz")
    elapsed = time.monotonic() - started

    # Summary
    print(f"serve-fuzz: ran {elapsed:.0f} s; requests by class: "
          + ", ".join(f"{c} {n}" for c, n in sorted(fz.by_class.items())))
    for cls in sorted({c for c, _ in fz.statuses}):
        seen = sorted(((str(s), n) for (c, s), n in fz.statuses.items() if c == cls))
        print(f"  {cls:9s} " + ", ".join(f"{s}: {n}" for s, n in seen))
    if args.pid:
        print(f"  peak VmRSS {fz.peak_rss:.0f} MiB (limit {args.max_rss_mib:g})")
    if fz.failures:
        print("failures (the first 3 of each kind and class; replay one with --seed "
              f"{args.seed} --case N):")
        for kind, number, cls, text, req in fz.failures:
            print(f"  [{kind}] case {number} ({cls}): {text}\n      request: {req}")
        print("  by kind: " + ", ".join(f"{k} {n}" for k, n in fz.failure_kinds.items()))
    real = sum(n for k, n in fz.failure_kinds.items() if not k.startswith("suspect"))
    print(f"serve-fuzz: {fz.requests} requests, {real} failures")
    return 1 if real else 0


if __name__ == "__main__":
    sys.exit(main())
