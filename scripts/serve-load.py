#!/usr/bin/env python3
"""Load test for `videofeed serve`: simulated viewers swiping on loopback (issue 12, "How it is judged: Load").

Usage:
  python3 scripts/serve-load.py BASE_URL --viewers 20 --seconds 120 --seed 1 --batch DIR [--pid PID] [--json OUT]
  python3 scripts/serve-load.py BASE_URL --viewers 4 --seconds 10 --batch DIR          # smoke (CI)

BASE_URL is the address `videofeed serve` printed (http://127.0.0.1:PORT/). DIR is the output of
`videofeed transcode SOURCE --out DIR` for the same SOURCE with the same transcode options: the batch writes
DIR/<folder>/..., the server serves /media/<folder>/... at the same relative paths (docs/transcode.md,
docs/serve.md), so every init and media segment served must be byte-identical to DIR's file.

Each viewer is a thread with its own seeded RNG (seed, viewer number). It
  - opens the WebSocket /api/ws (a minimal RFC 6455 client over a socket: upgrade, masked text frames, frame
    reader on its own thread), sends `hello` with a rendition name and a box in device pixels;
  - lists /api/feed page by page (with `cursor`) as it advances, wrapping at `total` once known, as the page does:
    `pending=1` (answered at once; a card whose manifest is not made yet is listed pending), then
    `limit=1&cursor=I` for a pending card it is about to watch (its whole card, made for it);
  - swipes: mostly next, sometimes back, sometimes a jump of several items; dwells 0.3-3 s on each item;
  - sends `at` on each swipe and about once a second while dwelling (playhead = time on the item, looping); as the
    page does, a swipe's `at` goes out before the new item's pending card is asked for whole (the page makes the card
    current, tells the server, then fills it), so the server knows which item the viewer waits for;
  - fetches what a player would: the poster, the rendition's init and seg-0 at once, the next segment as the
    playhead nears it (seg-k when the playhead reaches (k - 0.5) segment durations); about 1 in 8 media requests
    is a Range request (checked against the same bytes of DIR's file); on a revisit about half of the init and
    segment requests carry If-None-Match with the ETag seen before (304 expected).

Every request's status and latency are recorded (HTTP: from sending the request to the last body byte; `ws-swipe`:
from sending an `at` that changes item to the server's `swipe` answer). With --pid the server's resident memory is
sampled from /proc/PID/status (VmRSS every 0.25 s, VmHWM at the end).

Checks (exit status 1 when one fails): no 5xx; no request over --stall (5 s); no failed request (other status,
connection error, WebSocket closed early); every init/segment byte-identical (sha256) to DIR's file at the same
relative path (absent in DIR counts as a mismatch); peak resident memory <= --rss-limit-mib (512 MiB) with --pid.
Exit status 2: the server or DIR could not be used at all.

Standard library only.
"""

import argparse
import hashlib
import http.client
import json
import os
import random
import sys
import threading
import time
import urllib.parse

import serve_metrics
from serve_ws import WebSocket, WebSocketClosed, percentile

MEDIA_KINDS = ("init", "segment")


# --------------------------------------------------------------------------------------------------------------------
# Shared results

class Results:
    def __init__(self):
        self.lock = threading.Lock()
        self.records = []          # (kind, status, seconds, bytes, path, start offset)
        self.t0 = time.monotonic()
        self.failures = []         # text
        self.mismatches = []       # text
        self.identity_checked = 0
        self.checked_files = set()
        self.mismatch_files = set()
        self.swipes = {"hit": 0, "miss": 0}
        self.sent = {"hello": 0, "at": 0}
        self.actions = {"next": 0, "back": 0, "jump": 0}
        self.windows = 0

    def record(self, kind, status, seconds, size, path):
        # (kind, status, seconds, bytes, path, start in seconds from the run's start)
        started = time.monotonic() - seconds - self.t0
        with self.lock:
            self.records.append((kind, status, seconds, size, path, started))

    def fail(self, text):
        with self.lock:
            if len(self.failures) < 10000:
                self.failures.append(text)


class BatchFiles:
    """sha256 of DIR's files by relative path, computed once."""

    def __init__(self, root):
        self.root = os.path.realpath(root)
        self.lock = threading.Lock()
        self.digests = {}

    def read(self, relative):
        path = os.path.realpath(os.path.join(self.root, relative))
        if not path.startswith(self.root + os.sep) or not os.path.isfile(path):
            return None
        with open(path, "rb") as f:
            return f.read()

    def size(self, relative):
        path = os.path.realpath(os.path.join(self.root, relative))
        if not path.startswith(self.root + os.sep) or not os.path.isfile(path):
            return None
        return os.path.getsize(path)

    def digest(self, relative):
        with self.lock:
            if relative in self.digests:
                return self.digests[relative]
        data = self.read(relative)
        value = hashlib.sha256(data).hexdigest() if data is not None else None
        with self.lock:
            self.digests[relative] = value
        return value


# --------------------------------------------------------------------------------------------------------------------
# One viewer

RENDITION_CHOICES = [  # (weight, rendition name, box in device pixels)
    (5, "720x1280", (810, 1440)),   # a 405x720 CSS viewport at DPR 2 (the swipe benchmark's)
    (3, "540x960", (540, 960)),
    (2, "360x640", (360, 640)),
]


def choose_rendition(card, name, box):
    """The rendition the page plays: the one named, else the smallest covering the box, else the largest
    (docs/serve.md; the server applies the same rule)."""
    renditions = card.get("renditions") or []
    if not renditions:
        return None
    for r in renditions:
        if r.get("name") == name:
            return r
    for r in reversed(renditions):
        if r["width"] >= box[0] or r["height"] >= box[1]:
            return r
    return renditions[0]


class Viewer(threading.Thread):
    def __init__(self, number, args, results, batch, deadline):
        super().__init__(name=f"viewer-{number}", daemon=True)
        self.number, self.args, self.results, self.batch, self.deadline = number, args, results, batch, deadline
        self.rng = random.Random(f"{args.seed}/{number}")
        url = urllib.parse.urlsplit(args.base_url)
        self.host, self.port = url.hostname, url.port or 80
        self.prefix = url.path.rstrip("/")
        self.conn = None
        self.cards = {}            # index -> card
        self.next_cursor = ""      # "" = first page not asked yet; None = end
        self.total = None
        self.etags = {}            # path -> ETag
        self.ws = None
        self.pending_at = []       # send times of `at` messages that changed item (FIFO)
        self.pending_lock = threading.Lock()
        self.previous = None       # the item of the last `at`
        self.announced = None      # an item whose `at` went out before its card was asked for whole
        weights = [w for w, _, _ in RENDITION_CHOICES]
        _, self.rendition_name, self.box = self.rng.choices(RENDITION_CHOICES, weights=weights)[0]
        self.stop_reading = False

    # HTTP ------------------------------------------------------------------------------------------------------------
    def request(self, kind, path, headers=None):
        """GET path; returns (status, headers dict, body) or None after a connection error (recorded)."""
        headers = dict(headers or {})
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.args.timeout)
            start = time.monotonic()
            try:
                self.conn.request("GET", self.prefix + path, headers=headers)
                response = self.conn.getresponse()
                body = response.read()
                elapsed = time.monotonic() - start
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as error:
                # A kept-alive connection the server closed between requests: retry once on a new one.
                self.conn.close()
                self.conn = None
                if attempt == 0 and time.monotonic() - start < 1.0:
                    continue
                self.results.record(kind, "error", time.monotonic() - start, 0, path)
                self.results.fail(f"viewer {self.number}: GET {path}: {type(error).__name__}: {error}")
                return None
            except (OSError, http.client.HTTPException) as error:
                self.conn.close()
                self.conn = None
                self.results.record(kind, "error", time.monotonic() - start, 0, path)
                self.results.fail(f"viewer {self.number}: GET {path}: {type(error).__name__}: {error}")
                return None
            self.results.record(kind, response.status, elapsed, len(body), path)
            if response.getheader("Connection", "").lower() == "close":
                self.conn.close()
                self.conn = None
            return response.status, {k.lower(): v for k, v in response.getheaders()}, body
        return None

    def media(self, kind, path, revisit=False):
        """Fetches a media file as a player would, checking its bytes against the batch's."""
        headers, want_range, conditional = {}, None, False
        if kind in MEDIA_KINDS and revisit and path in self.etags and self.rng.random() < 0.5:
            headers["If-None-Match"] = self.etags[path]
            conditional = True
        elif kind in MEDIA_KINDS and self.rng.random() < 1 / 8:
            # A range inside the file (its size from the batch's copy), as a player resuming a download asks.
            size = self.batch.size(urllib.parse.unquote(path[len("/media/"):])) or 1
            lower = self.rng.randrange(0, size)
            upper = lower + self.rng.randrange(0, 65536)
            headers["Range"] = f"bytes={lower}-{upper}"
            want_range = (lower, upper)
            kind = kind + "-range"
        answer = self.request(kind, path, headers)
        if answer is None:
            return
        status, response_headers, body = answer
        if status >= 500:
            self.results.fail(f"viewer {self.number}: GET {path} {headers or ''} -> {status}: {body[:200]!r}")
            return
        if conditional:
            if status != 304:
                self.results.fail(f"viewer {self.number}: GET {path} If-None-Match -> {status}, expected 304")
            return
        if "etag" in response_headers:
            self.etags[path] = response_headers["etag"]
        if kind not in MEDIA_KINDS and not kind.endswith("-range"):
            if status != 200:
                self.results.fail(f"viewer {self.number}: GET {path} -> {status}: {body[:200]!r}")
            return
        relative = urllib.parse.unquote(path[len("/media/"):])
        if want_range is None:
            if status != 200:
                self.results.fail(f"viewer {self.number}: GET {path} -> {status}: {body[:200]!r}")
                return
            expected = self.batch.digest(relative)
            with self.results.lock:
                self.results.identity_checked += 1
                self.results.checked_files.add(relative)
                if expected is None:
                    self.results.mismatch_files.add(relative)
                    self.results.mismatches.append(f"{relative}: not in the batch folder")
                elif hashlib.sha256(body).hexdigest() != expected:
                    self.results.mismatch_files.add(relative)
                    self.results.mismatches.append(f"{relative}: served {len(body)} bytes, sha256 differs from "
                                                   "the batch's")
            return
        data = self.batch.read(relative)
        lower, upper = want_range
        if status == 416:
            # Only right when the range starts past the end of the file served (its size in Content-Range).
            served = response_headers.get("content-range", "")
            size = int(served.rpartition("/")[2]) if served.rpartition("/")[2].isdigit() else None
            if size is None or lower < size:
                self.results.fail(f"viewer {self.number}: GET {path} Range {lower}-{upper} -> 416 "
                                  f"Content-Range {served!r}")
            elif data is not None and size != len(data):
                with self.results.lock:
                    self.results.identity_checked += 1
                    self.results.checked_files.add(relative)
                    self.results.mismatch_files.add(relative)
                    self.results.mismatches.append(f"{relative}: served {size} bytes, the batch's has {len(data)}")
            return
        content_range = response_headers.get("content-range", "")
        try:
            unit, _, rest = content_range.partition(" ")
            span, _, size = rest.partition("/")
            first, _, last = span.partition("-")
            first, last, size = int(first), int(last), int(size)
        except ValueError:
            first = last = size = None
        if (status != 206 or unit != "bytes" or size is None or first != lower or last != min(upper, size - 1)
                or len(body) != last - first + 1):
            self.results.fail(f"viewer {self.number}: GET {path} Range {lower}-{upper} -> {status} "
                              f"Content-Range {content_range!r}, {len(body)} bytes")
            return
        with self.results.lock:
            self.results.identity_checked += 1
            self.results.checked_files.add(relative)
            if data is None:
                self.results.mismatch_files.add(relative)
                self.results.mismatches.append(f"{relative}: not in the batch folder")
            elif size != len(data):
                self.results.mismatch_files.add(relative)
                self.results.mismatches.append(f"{relative}: served {size} bytes (Range {lower}-{upper}), the "
                                               f"batch's has {len(data)}")
            elif body != data[first:last + 1]:
                self.results.mismatch_files.add(relative)
                self.results.mismatches.append(f"{relative} bytes {first}-{last}: differ from the batch's")

    def listing(self, kind, query):
        """GET /api/feed with `query`: the page, or None (the failure recorded)."""
        answer = self.request(kind, "/api/feed?" + urllib.parse.urlencode(query))
        if answer is None:
            return None
        status, _, body = answer
        if status != 200:
            self.results.fail(f"viewer {self.number}: GET /api/feed {query} -> {status}: {body[:200]!r}")
            return None
        return json.loads(body)

    def load_page(self):
        if self.next_cursor is None:
            return False
        query = {"limit": str(self.args.page_size), "pending": "1"}
        if self.next_cursor:
            query["cursor"] = self.next_cursor
        page = self.listing("feed", query)
        if page is None:
            return False
        for card in page.get("resources", []):
            self.cards[card["index"]] = card
        self.next_cursor = page.get("next_cursor")
        if page.get("total") is not None:
            self.total = page["total"]
        return True

    def fill(self, index):
        """The whole card of a pending one (`limit=1&cursor=I`, as the page asks for the card it is about to play)."""
        page = self.listing("card", {"limit": "1", "cursor": str(index)})
        if page is None:
            return None
        for card in page.get("resources", []):
            if card.get("index") == index and not card.get("pending"):
                self.cards[index] = card
                return card
        self.results.fail(f"viewer {self.number}: GET /api/feed card {index}: not in the answer")
        return None

    def card(self, index):
        """The card at feed index `index` (wrapped once the total is known), loading pages as needed."""
        while True:
            if self.total:
                index %= self.total
            if index in self.cards:
                card = self.cards[index]
                if card.get("pending"):
                    self.arrive(index)
                    card = self.fill(index) or card
                return index, card
            if self.next_cursor is None or not self.load_page():
                # Past the end of an open-ended listing: wrap over what was loaded.
                n = len(self.cards)
                if n == 0:
                    return None, None
                index %= n
                if self.total is None:
                    self.total = n

    def arrive(self, index):
        """Tells the server the viewer is at `index` (`at`, playhead 0), timing the swipe answer when it moved."""
        if index != self.previous:
            with self.pending_lock:
                self.pending_at.append(time.monotonic())
        self.ws_send({"type": "at", "index": index, "time": 0.0})
        self.previous = index
        self.announced = index

    # WebSocket --------------------------------------------------------------------------------------------------------
    def ws_send(self, message):
        try:
            self.ws.send_text(json.dumps(message))
            with self.results.lock:
                self.results.sent[message["type"]] += 1
        except (OSError, WebSocketClosed) as error:
            self.results.fail(f"viewer {self.number}: WebSocket send {message}: {error}")

    def read_ws(self):
        while True:
            try:
                text = self.ws.receive()
            except (OSError, WebSocketClosed) as error:
                if not self.stop_reading:
                    self.results.fail(f"viewer {self.number}: WebSocket closed early: {error}")
                return
            try:
                message = json.loads(text)
            except (ValueError, TypeError):
                self.results.fail(f"viewer {self.number}: WebSocket sent a non-JSON message {text[:100]!r}")
                continue
            if message.get("type") == "swipe":
                with self.pending_lock:
                    sent = self.pending_at.pop(0) if self.pending_at else None
                if sent is not None:
                    self.results.record("ws-swipe", "ok", time.monotonic() - sent, 0, "/api/ws")
                with self.results.lock:
                    self.results.swipes["hit" if message.get("hit") else "miss"] += 1
            elif message.get("type") == "window":
                with self.results.lock:
                    self.results.windows += 1

    # The viewer's life -------------------------------------------------------------------------------------------------
    def run(self):
        try:
            self.live()
        except Exception as error:  # a bug here must not look like a passing run
            self.results.fail(f"viewer {self.number}: {type(error).__name__}: {error}")
        finally:
            self.stop_reading = True
            if self.ws:
                self.ws.close()
            if self.conn:
                self.conn.close()

    def live(self):
        start = time.monotonic()
        try:
            self.ws = WebSocket(self.host, self.port, self.prefix + "/api/ws", timeout=self.args.timeout)
        except (OSError, WebSocketClosed) as error:
            self.results.record("ws-connect", "error", time.monotonic() - start, 0, "/api/ws")
            self.results.fail(f"viewer {self.number}: WebSocket /api/ws: {error}")
            return
        self.results.record("ws-connect", 101, time.monotonic() - start, 0, "/api/ws")
        self.ws.sock.settimeout(None)
        reader = threading.Thread(target=self.read_ws, name=f"ws-{self.number}", daemon=True)
        reader.start()
        self.ws_send({"type": "hello", "rendition": self.rendition_name, "width": self.box[0],
                      "height": self.box[1]})
        index, card = self.card(self.rng.randrange(0, 3))
        visited = set()
        while card is not None and time.monotonic() < self.deadline:
            revisit = index in visited
            visited.add(index)
            arrived = time.monotonic()
            if self.announced != index:
                self.arrive(index)
            self.announced = None
            dwell = self.rng.uniform(0.3, 3.0)
            rendition = choose_rendition(card, self.rendition_name, self.box)
            if card.get("poster"):
                self.media("poster", card["poster"], revisit)
            durations = rendition.get("segment_durations", []) if rendition else []
            fetched = set()
            if rendition:
                self.media("init", rendition["init"], revisit)
            duration = card.get("duration") or sum(durations) or 1.0
            next_at = arrived + 1.0
            while True:
                now = time.monotonic()
                if now >= self.deadline or now - arrived >= dwell:
                    break
                playhead = (now - arrived) % duration if duration > 0 else 0.0
                if rendition:
                    # seg-k once the playhead reaches (k - 0.5) segment lengths (seg-0 at once); after a loop the
                    # player has them all.
                    edge, k = 0.0, 0
                    for k, d in enumerate(durations):
                        if k not in fetched and playhead >= edge - d / 2:
                            fetched.add(k)
                            self.media("segment", rendition["segments"][k], revisit)
                            break
                        edge += d
                now = time.monotonic()
                if now >= next_at:
                    self.ws_send({"type": "at", "index": index, "time": round((now - arrived) % duration, 3)})
                    next_at += 1.0
                time.sleep(min(0.05, max(0.0, arrived + dwell - time.monotonic())))
            if time.monotonic() >= self.deadline:
                break
            roll = self.rng.random()
            if roll < 0.75:
                action, step = "next", 1
            elif roll < 0.88:
                action, step = "back", -1
            else:
                action, step = "jump", self.rng.choice([-1, 1]) * self.rng.randint(3, 8)
            with self.results.lock:
                self.results.actions[action] += 1
            target = index + step
            if target < 0:
                target = (target % self.total) if self.total else 0
            index, card = self.card(target)
        # Let the last answers arrive.
        time.sleep(0.2)


# --------------------------------------------------------------------------------------------------------------------

def read_status(pid):
    values = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    key, value = line.split(":", 1)
                    values[key] = int(value.split()[0]) * 1024
    except OSError:
        return None
    return values


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base_url")
    parser.add_argument("--viewers", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--batch", required=True, help="videofeed transcode's output for the same source/options")
    parser.add_argument("--pid", type=int, help="the server's pid: sample its resident memory")
    parser.add_argument("--json", help="write the summary as JSON here")
    parser.add_argument("--page-size", type=int, default=10)
    parser.add_argument("--stall", type=float, default=5.0, help="a request slower than this fails the run (s)")
    parser.add_argument("--timeout", type=float, default=60.0, help="give up on one request after this (s)")
    parser.add_argument("--rss-limit-mib", type=float, default=512)
    args = parser.parse_args()
    if not args.base_url.endswith("/"):
        args.base_url += "/"
    if not os.path.isdir(args.batch):
        print(f"serve-load: {args.batch} is not a folder (make it with videofeed transcode SOURCE --out DIR)",
              file=sys.stderr)
        return 2
    url = urllib.parse.urlsplit(args.base_url)
    try:
        conn = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=10)
        conn.request("GET", url.path.rstrip("/") + "/healthz")
        health = conn.getresponse()
        health.read()
        conn.close()
        if health.status != 200:
            raise OSError(f"/healthz answered {health.status}")
    except (OSError, http.client.HTTPException) as error:
        print(f"serve-load: {args.base_url} is not serving: {error}", file=sys.stderr)
        return 2
    if args.pid and read_status(args.pid) is None:
        print(f"serve-load: no process {args.pid}", file=sys.stderr)
        return 2

    results = Results()
    batch = BatchFiles(args.batch)
    before = serve_metrics.fetch(args.base_url)
    rss = {"peak": 0, "samples": 0, "hwm": None, "first": None, "series": []}
    done = threading.Event()

    def sample():
        t0 = time.monotonic()
        while not done.is_set():
            values = read_status(args.pid)
            if values:
                rss["peak"] = max(rss["peak"], values.get("VmRSS", 0))
                rss["samples"] += 1
                if rss["first"] is None:
                    rss["first"] = values.get("VmRSS")
                if rss["samples"] % 4 == 1:   # one a second in the JSON
                    rss["series"].append((round(time.monotonic() - t0, 1),
                                          round(values.get("VmRSS", 0) / 1048576, 1)))
            done.wait(0.25)

    sampler = threading.Thread(target=sample, daemon=True) if args.pid else None
    if sampler:
        sampler.start()
    started = time.monotonic()
    deadline = started + args.seconds
    viewers = [Viewer(n, args, results, batch, deadline) for n in range(args.viewers)]
    for v in viewers:
        v.start()
        time.sleep(min(0.1, args.seconds / max(1, args.viewers) / 10))  # not all in the same millisecond
    for v in viewers:
        v.join(args.seconds + args.timeout + 30)
        if v.is_alive():
            results.fail(f"{v.name} still running {args.timeout + 30:.0f} s after the end")
    wall = time.monotonic() - started
    done.set()
    if sampler:
        sampler.join()
        values = read_status(args.pid) or {}
        rss["hwm"] = values.get("VmHWM")
        rss["peak"] = max(rss["peak"], values.get("VmRSS", 0))
    after = serve_metrics.fetch(args.base_url)
    alive = bool(after) and (not args.pid or read_status(args.pid) is not None)

    # Summary ------------------------------------------------------------------------------------------------------
    records = results.records
    kinds = {}
    for kind, status, seconds, size, path, _ in records:
        kinds.setdefault(kind, []).append((status, seconds, size))
    statuses = {}
    for _, status, _, _, _, _ in records:
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    server_errors = [r for r in records if isinstance(r[1], int) and r[1] >= 500]
    stalled = [r for r in records if r[2] > args.stall]
    per_kind = {}
    for kind, rows in sorted(kinds.items()):
        times = [s for _, s, _ in rows]
        per_kind[kind] = {
            "count": len(rows), "bytes": sum(b for _, _, b in rows),
            "p50_ms": round(1000 * percentile(times, 50), 1), "p95_ms": round(1000 * percentile(times, 95), 1),
            "p99_ms": round(1000 * percentile(times, 99), 1), "max_ms": round(1000 * max(times), 1),
        }
    peak = max(rss["peak"], rss["hwm"] or 0) if args.pid else None
    delta = {}
    for name in sorted(set(after) | set(before)):
        if name.startswith(("videofeed_", "serve_")) or "prefetch" in name or "segments" in name:
            d = after.get(name, 0) - before.get(name, 0)
            if d:
                delta[name] = d
    checks = {
        "no_5xx": not server_errors,
        "no_request_over_stall": not stalled,
        "no_failed_request": not results.failures,
        "segments_identical": not results.mismatches and results.identity_checked > 0,
    }
    checks["server_alive_at_end"] = alive
    if args.pid:
        checks["rss_within_limit"] = peak is not None and peak <= args.rss_limit_mib * 1024 * 1024
    summary = {
        "base_url": args.base_url, "viewers": args.viewers, "seconds": args.seconds, "wall_seconds": round(wall, 1),
        "seed": args.seed, "requests": len(records), "statuses": statuses, "per_kind": per_kind,
        "server_errors": len(server_errors), "over_stall": len(stalled), "stall_seconds": args.stall,
        "stalled": [{"kind": k, "status": s, "ms": round(1000 * t), "path": p, "started_s": round(at, 1)}
                    for k, s, t, _, p, at in sorted(stalled, key=lambda r: r[5])[:100]],
        "over_stall_by_start": {"first_30_s": sum(1 for r in stalled if r[5] < 30),
                                "after_30_s": sum(1 for r in stalled if r[5] >= 30)},
        "failures": len(results.failures), "failure_examples": results.failures[:20],
        "identity_checked": results.identity_checked, "mismatches": len(results.mismatches),
        "files_checked": len(results.checked_files), "files_mismatched": len(results.mismatch_files),
        "mismatched_files": sorted(results.mismatch_files)[:200],
        "mismatch_examples": results.mismatches[:20],
        "swipe_answers": dict(results.swipes), "windows": results.windows, "messages_sent": dict(results.sent),
        "actions": dict(results.actions),
        "rss": None if not args.pid else {
            "peak_vmrss_mib": round(rss["peak"] / 1048576, 1), "vmhwm_mib": round((rss["hwm"] or 0) / 1048576, 1),
            "first_vmrss_mib": round((rss["first"] or 0) / 1048576, 1), "samples": rss["samples"],
            "limit_mib": args.rss_limit_mib, "series_s_mib": rss["series"]},
        "server_metrics_delta": delta,
        "checks": checks, "passed": all(checks.values()),
    }

    print(f"serve-load: {args.viewers} viewers, {args.seconds:g} s (wall {wall:.1f} s), seed {args.seed}: "
          f"{len(records)} requests, statuses {statuses}")
    print(f"  {'kind':<14}{'count':>7}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}{'max ms':>10}{'MiB':>9}")
    for kind, k in per_kind.items():
        print(f"  {kind:<14}{k['count']:>7}{k['p50_ms']:>10}{k['p95_ms']:>10}{k['p99_ms']:>10}{k['max_ms']:>10}"
              f"{k['bytes'] / 1048576:>9.1f}")
    print(f"  actions {results.actions}; WebSocket sent {results.sent}, swipe answers {results.swipes} "
          f"(hits/misses), {results.windows} window messages")
    print(f"  5xx: {len(server_errors)}; over {args.stall:g} s: {len(stalled)}; failed requests: "
          f"{len(results.failures)}; identity: {results.identity_checked} files/ranges checked, "
          f"{len(results.mismatches)} mismatches ({len(results.mismatch_files)} of "
          f"{len(results.checked_files)} distinct files)")
    if stalled:
        print(f"    over {args.stall:g} s by start: {sum(1 for r in stalled if r[5] < 30)} started in the first 30 s, "
              f"{sum(1 for r in stalled if r[5] >= 30)} later")
    for r in sorted(stalled, key=lambda r: -r[2])[:10]:
        print(f"    slow: {r[0]} {r[1]} {r[2] * 1000:.0f} ms {r[4]} (started at {r[5]:.1f} s)")
    for text in results.failures[:10]:
        print(f"    failed: {text}")
    for text in results.mismatches[:10]:
        print(f"    mismatch: {text}")
    if args.pid:
        print(f"  server memory: peak VmRSS {rss['peak'] / 1048576:.1f} MiB, VmHWM {(rss['hwm'] or 0) / 1048576:.1f}"
              f" MiB (limit {args.rss_limit_mib:g} MiB; {rss['samples']} samples; VmRSS at the start "
              f"{(rss['first'] or 0) / 1048576:.1f} MiB)")
        series = rss["series"]
        if series:
            marks = [series[min(len(series) - 1, int(len(series) * q))] for q in (0, 0.25, 0.5, 0.75, 1.0)]
            print("  VmRSS over the run: " + ", ".join(f"{mib:.0f} MiB at {t:.0f} s" for t, mib in marks))
    if delta:
        print("  server metrics (change): " + ", ".join(f"{k} {v:g}" for k, v in delta.items()))
    print("  checks: " + ", ".join(f"{k} {'ok' if v else 'FAILED'}" for k, v in checks.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
            f.write("\n")
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
