#!/usr/bin/env python3
"""Replays a viewer trace against a live `videofeed serve`: real HTTP and WebSocket viewers following the page's
rules, measuring each move's first frame, the server's hit answer, card and poster times, stalls and errors. The
"live" side of the trust check against the virtual-time simulator (`videofeed simulate serve`), which follows the
same VIEWER MODEL below: this docstring is the contract between them.

Usage:
  python3 scripts/serve-replay.py TRACE.csv --url http://127.0.0.1:PORT/ [--json OUT] [options]
  VIDEOFEED=/path/to/videofeed python3 scripts/serve-replay.py TRACE.csv --serve FOLDER [--json OUT]
  scripts/serve-replay.sh FOLDER TRACE.csv [OUT.json]            # the same as --serve, VIDEOFEED as above

  --serve FOLDER  start a fresh server on FOLDER with a fresh (cold) cache in a temporary folder
                  (serve_process.ServeProcess: `videofeed serve FOLDER --port 0 --cache TMP/cache --log-level
                  warning`), wait until it listens, replay, stop it. Binary: $VIDEOFEED, else
                  $(swift build --show-bin-path)/videofeed. --serve-arg ARG (repeatable) passes ARG on.
  --box WxH       the viewer's box in device pixels (default 540x960)
  --tail S        a viewer leaves S seconds after its last row (default 3)
  --json OUT      write the summary (below) as JSON; a short summary goes to stdout either way

Trace: CSV with the header `viewer,time_s,index` (scripts/serve-trace.py makes one), rows in any order (sorted by
time, then viewer, then file order). At time_s (seconds from the replay's start) viewer `viewer` shows feed item
`index` (0-based, in /api/feed's listing order; taken modulo the listing's total once the listing has ended).

VIEWER MODEL (version 1). Constants, from the page (Sources/FeedServer/Web): KEEP = 2, POSTERS = 3 (view.js),
PAGE = 10 listing items per page (feed.js), HOLD = 3 s (view.js HOLD_MS), AHEAD = 4 s (card.js AHEAD_S), EARLY = 4 s
(EARLY_S), SHORT = 1.5 s (SHORT_S), TURN = 3 s (NEIGHBOUR_WAIT_MS), CONNECTIONS = 6 (a browser's HTTP/1.1
connections per host), AT_EVERY = 1 s (app.js). Every request is a GET; its time is from its issue (before it
waits for a connection slot or a turn) to its body's last byte.

  Listing. A viewer knows the items it has listed: pages GET /api/feed?limit=10&pending=1[&cursor=C] (C: the
  previous page's next_cursor), loaded one at a time, in order, when an index it needs is not listed yet; the listing
  has ended when a page has no next_cursor, and then index j means j mod total. A card is taken as its page listed it;
  a *pending* card (listed before the server made its manifest: no renditions) is replaced by its whole card once
  filled: GET /api/feed?item=PUBLIC_ID (feed.js fill/lookup), one request per item per viewer, shared by whoever
  needs it (current or neighbour). A card with `error`, or a filled card without renditions, is a failed item: no
  media is asked for it.

  Window. window(i) = {i, i+1, i+2, i-1, i-2}: ahead wraps (mod total, once the listing has ended), behind stops at
  0 (a page that opened at the top has no card before the first). posters(i): the same with 3 for 2.

  Rendition: util.js pickRendition for the box, every rendition playable: the smallest by width x height among those
  with width >= W or height >= H, else the largest (ties: listing order). The card's segment grid: rendition
  `segment_durations` (start_k = sum of the durations before k; duration = their sum).

  Arrival (the viewer's first row): open WS /api/ws; then the first move. Messages sent are the page's (socket.js,
  app.js): `hello` {type, rendition, width, height, bandwidth: null} before the first `at` (rendition: the name
  pickRendition gives for the move's card, else for the first listed card with renditions, else null; sent again
  before a later `at` when the last hello named none and one is known now); `at` {type, index, item, time}. The
  server's `feed` and `window` messages are read and ignored.

  Each row (a move to index i at time T; a row for the item already current is skipped):
    1. Abandon: every request still in flight for an item outside window(i) is abandoned (its connection closed;
       card fills too), posters outside posters(i) too, and so are all requests of the item that was current
       (the page frees a played card and attaches it afresh when it comes back into the window). What the viewer
       holds (read) for items inside window(i) is kept; outside, forgotten (posters outside posters(i) likewise).
    2. If i is not listed: listing pages until it is (part of the move's first frame, as the page waits for them).
    3. Send `at` {index: the card's listing `index`, item: its public_id, time: 0} (after `hello` if due). The
       server's `swipe` answer {index, item, hit} for this `at` gives the move's hit (the item's first segment, in
       the rendition the server picks for this viewer, was in the server's cache when the move arrived).
    4. At once, concurrently: the poster (unless held or already asked for), and, if the card is pending and not
       filled, its fill (timed as the move's `card`: from T to the whole card read). Then (the card whole): the
       rendition's init and seg-0 at once (unless already held or asked for: a neighbour preload asked first; those
       requests are shared). first_frame = seconds from T until both init and seg-0 bodies are read (0 when the
       viewer held both at T: a `ready` move). `poster` = from T to the poster read, over moves whose poster was not
       held at T. A failed item, or an init/seg-0 that fails, makes a failed move (no first frame).
    5. Neighbours start when the current item's first frame is in (or it failed), at HOLD after T at the latest,
       or at once when the move was ready. In this order, for d = +1, -1, +2, -2 (skipping indices before 0, listing
       pages loaded as needed): its poster; then, each in its own sequence, all concurrently: its fill if pending,
       then its init and seg-0 at once, then, for the cards ahead (d > 0), its segments k >= 1 with start_k < EARLY,
       one after another (kept for the swipe). Then the posters of the rest of posters(i), d = -3, +3. Every
       neighbour media request (not posters, not fills) first waits for its turn: while the current item is short
       (its first frame in, less than SHORT seconds read ahead of its playhead, and more segments to read), at most
       TURN seconds; a neighbour that becomes current stops waiting.
    6. Playback: the playhead starts at 0 at the first frame and runs in real time; it stops while a segment it has
       reached is not read yet. seg-k (k >= 1) is asked for (unless held or asked for) once seg-(k-1) is read and the
       playhead reaches start_k - AHEAD (at once for the early ones). A stall: the playhead reaches start_k before
       seg-k is read (counted once; its length until the segment is read, or the next move). After the last segment
       the item loops from what is held: nothing more is asked for. A segment past seg-0 that fails ends playback
       (the page ends the item there). While the item is current, every AT_EVERY seconds after T: `at`
       {index, item, time: playhead mod duration, rounded to the ms}.
    7. The next row moves again (1.); a move before its first frame is `unfinished` (its hit still counts).
  Leaving: LEAVE (--tail, 3 s) after the viewer's last row every request is abandoned and the WebSocket closed.
  Request limits: at most CONNECTIONS requests of a viewer are on the wire at once; the rest wait in issue order.
  Connections are kept alive and reused.

Where the page does more than this (not modelled): retries of failed requests, the bandwidth estimate and rung
switches (a loopback viewer stays on its box's rung), the 250 ms a ready card's neighbours wait for its next frame,
a prefetch of seg-(k+1) while seg-k is appended, the browser's HTTP cache, a played card kept attached until the
neighbours are preloaded; a neighbour's early segments follow the side it was on when its preload started (the page
re-decides on every window change).

JSON (--json) keys: model, trace {file, viewers, rows, moves, seconds}, url, box, first_frame_ms {p50, p95, n}
(over moves with a first frame), first_frame_ms_hit and first_frame_ms_miss (split by the server's answer),
first_frame_ms_ready / first_frame_ms_not_ready, moves, answered, hits, hit_rate (hits / answered), ready,
ready_rate, unfinished, failed (+ failed_examples), skipped_rows, card_ms and poster_ms {p50, p95, n} (over moves
that needed them), stalls, stall_s, requests {count, abandoned, by_kind {kind: {count, p50_ms, p95_ms}}}, errors
{count, examples} (HTTP status >= 400, broken connections, WebSocket failures, a move without a swipe answer),
per_viewer [{viewer, moves, first_frame_ms {p50, p95, n}, hit_rate, stalls}], per_move [{viewer, t, index, item,
hit, ready, first_frame_ms, card_ms, stalls, failed}] (by trace time), wall_s. Percentiles: nearest-rank
(serve_ws.percentile: sorted(values)[ceil(p * n / 100) - 1]).

Exit status: 0 when errors is 0, 1 otherwise, 2 when the server could not be used.

Standard library only.
"""

import argparse
import collections
import csv
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import rendition_rule  # the one rendition rule, checked against the server's cases at start
from serve_process import ServeProcess
from serve_ws import WebSocket, WebSocketClosed, percentile

MODEL = "serve-replay viewer model 1"
KEEP = 2
POSTERS = 3
PAGE = 10
HOLD_S = 3.0
AHEAD_S = 4.0
EARLY_S = 4.0
SHORT_S = 1.5
TURN_S = 3.0
CONNECTIONS = 6
AT_EVERY_S = 1.0
POLL_S = 0.02


def pick_rendition(renditions, w, h):
    """util.js pickRendition(renditions, w, h) with every rendition playable and no bandwidth cap: the one rule."""
    return rendition_rule.pick(renditions, w, h)


def segment_starts(rendition):
    """(starts, duration) from `segment_durations`, or None when they are missing or do not match `segments`."""
    d = rendition.get("segment_durations")
    if not isinstance(d, list) or len(d) != len(rendition.get("segments") or []):
        return None
    starts, t = [], 0.0
    for x in d:
        starts.append(t)
        t += float(x)
    return starts, t


def stats_ms(values):
    values = [v for v in values if v is not None]
    if not values:
        return {"p50": None, "p95": None, "n": 0}
    return {"p50": round(1000 * percentile(values, 50), 1), "p95": round(1000 * percentile(values, 95), 1),
            "n": len(values)}


# --------------------------------------------------------------------------------------------------------------------

class Run:
    """Everything recorded, shared by the viewers."""

    def __init__(self):
        self.lock = threading.Lock()
        self.requests = []      # (viewer, kind, status, seconds, path)
        self.errors = []
        self.moves = []

    def request(self, viewer, kind, status, seconds, path):
        with self.lock:
            self.requests.append((viewer, kind, status, seconds, path))

    def error(self, text):
        with self.lock:
            self.errors.append(text)


class Slots:
    """At most n requests of a viewer on the wire; the others wait in issue order (FIFO)."""

    def __init__(self, n):
        self.n, self.used, self.queue, self.cond = n, 0, collections.deque(), threading.Condition()

    def acquire(self, req):
        with self.cond:
            self.queue.append(req)
            while True:
                if req.abandoned:
                    self.queue.remove(req)
                    self.cond.notify_all()
                    return False
                if self.queue[0] is req and self.used < self.n:
                    self.queue.popleft()
                    self.used += 1
                    self.cond.notify_all()
                    return True
                self.cond.wait()

    def release(self):
        with self.cond:
            self.used -= 1
            self.cond.notify_all()

    def wake(self):
        with self.cond:
            self.cond.notify_all()


class Abandoned(Exception):
    pass


class Request:
    """One GET on its own thread (a kept-alive connection of the viewer's, or a new one); `turn`, when given, is
    waited for before a connection slot."""

    def __init__(self, viewer, kind, path, turn=None):
        self.viewer, self.kind, self.path, self.turn = viewer, kind, path, turn
        self.issued = time.monotonic()
        self.finished = None
        self.status = None        # HTTP status, "error" or "abandoned"
        self.body = b""
        self.abandoned = False
        self.conn = None
        self.lock = threading.Lock()
        self.done = threading.Event()
        threading.Thread(target=self._run, daemon=True, name=f"v{viewer.number}-{kind}").start()

    @property
    def ok(self):
        return isinstance(self.status, int) and 200 <= self.status < 400

    @property
    def failed(self):
        return self.done.is_set() and not self.ok

    def _run(self):
        v = self.viewer
        if self.turn:
            self.turn(self)
        if not v.slots.acquire(self):
            return self._finish("abandoned")
        try:
            self._fetch()
        finally:
            v.slots.release()

    def _fetch(self):
        v = self.viewer
        for attempt in (0, 1):
            conn, reused = None, False
            try:
                # The viewer's lock is never taken under a request's: Viewer.move holds the viewer's lock while it
                # cancels requests (the request's lock), so taking a connection under the request's lock deadlocked.
                # A retry goes on a new connection, as a browser's does: the other idle ones may be stale too.
                conn, reused = v.take_connection(fresh=attempt > 0)
                with self.lock:
                    if self.abandoned:
                        raise Abandoned()
                    self.conn = conn
                conn.request("GET", v.prefix + self.path)
                response = conn.getresponse()
                body = response.read()
                with self.lock:
                    self.conn = None
                    reuse = not response.will_close and not self.abandoned
                if reuse:
                    v.give_connection(conn)
                else:
                    conn.close()
                return self._finish(response.status, body)
            except (OSError, http.client.HTTPException, Abandoned) as error:
                with self.lock:
                    self.conn = None
                if conn is not None:
                    conn.close()
                if self.abandoned:
                    return self._finish("abandoned")
                if attempt == 0 and reused and isinstance(error, (http.client.RemoteDisconnected, BrokenPipeError,
                                                                  ConnectionResetError)):
                    continue    # a kept-alive connection the server closed meanwhile: once more on a new one
                v.rec.error(f"viewer {v.number}: GET {self.path}: {type(error).__name__}: {error}")
                return self._finish("error")

    def _finish(self, status, body=b""):
        self.status, self.body = status, body
        self.finished = time.monotonic()
        v = self.viewer
        v.rec.request(v.number, self.kind, status, self.finished - self.issued, self.path)
        if isinstance(status, int) and status >= 400:
            v.rec.error(f"viewer {v.number}: GET {self.path} -> {status}: {body[:160]!r}")
        self.done.set()

    def cancel(self):
        with self.lock:
            if self.done.is_set():
                return
            self.abandoned = True
            conn = self.conn
        if conn is not None and conn.sock is not None:
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.viewer.slots.wake()


class Item:
    """What a viewer asked for and holds of one feed index: requests by URL (shared), its rendition."""

    def __init__(self, index):
        self.index = index
        self.requests = {}
        self.rendition = None
        self.preloading = False
        self.dropped = False

    def held(self, url):
        r = self.requests.get(url)
        return r is not None and r.done.is_set() and r.ok


class Move:
    def __init__(self, viewer, number, index, started, trace_t):
        self.viewer, self.number, self.index, self.started, self.trace_t = viewer, number, index, started, trace_t
        self.public_id = None
        self.card_index = None
        self.hit = None
        self.answered = False
        self.ready = False
        self.first_frame = None
        self.card_s = None
        self.poster_req = None
        self.failed = None
        self.at_sent = False
        self.gone = threading.Event()      # superseded by the next move or the viewer left
        self.shown = threading.Event()     # first frame in, or failed
        self.play_start = None
        self.stall_total = 0.0
        self.stalled_since = None
        self.stalls = 0
        self.duration = None
        self.next_at = started + AT_EVERY_S

    def playhead(self, now):
        if self.play_start is None:
            return 0.0
        stalled = self.stall_total + (now - self.stalled_since if self.stalled_since is not None else 0.0)
        return max(0.0, now - self.play_start - stalled)


class Viewer(threading.Thread):
    def __init__(self, number, rows, args, run, t0):
        super().__init__(name=f"viewer-{number}", daemon=True)
        self.number, self.rows, self.args, self.rec, self.t0 = number, rows, args, run, t0
        url = urllib.parse.urlsplit(args.url)
        self.host, self.port, self.prefix = url.hostname, url.port or 80, url.path.rstrip("/")
        self.box = args.box
        self.lock = threading.RLock()
        self.page_lock = threading.Lock()
        self.cards = {}           # listing index -> card (whole once filled)
        self.cursor = None        # next page's cursor (None: the first page)
        self.ended = False
        self.total = None
        self.fills = {}           # index -> Request (GET /api/feed?item=)
        self.items = {}           # index -> Item
        self.posters = {}         # index -> Request
        self.slots = Slots(CONNECTIONS)
        self.idle = []
        self.ws = None
        self.send_lock = threading.Lock()
        self.hello_rendition = "unsent"
        self.awaiting = []        # moves whose `at` awaits its swipe answer
        self.current = None
        self.moves = []
        self.leaving = False

    # connections ---------------------------------------------------------------------------------------------------
    def take_connection(self, fresh=False):
        with self.lock:
            if self.idle and not fresh:
                return self.idle.pop(), True
        return http.client.HTTPConnection(self.host, self.port, timeout=self.args.timeout), False

    def give_connection(self, conn):
        with self.lock:
            if not self.leaving:
                self.idle.append(conn)
                return
        conn.close()

    # listing ---------------------------------------------------------------------------------------------------------
    def resolve(self, index):
        """`index` as listed (mod total once the listing ended), loading pages until it is; None if it cannot be."""
        with self.page_lock:
            while True:
                if self.ended and self.total:
                    index %= self.total
                if index in self.cards:
                    return index
                if self.ended or self.leaving:
                    return None
                query = {"limit": str(PAGE), "pending": "1"}
                if self.cursor is not None:
                    query["cursor"] = self.cursor
                req = Request(self, "listing", "/api/feed?" + urllib.parse.urlencode(query))
                req.done.wait()
                if not req.ok:
                    return None
                page = json.loads(req.body)
                resources = page.get("resources") or []
                with self.lock:
                    for card in resources:
                        position = len(self.cards)
                        self.cards[position] = card
                    if page.get("next_cursor") and resources:
                        self.cursor = page["next_cursor"]
                    else:
                        self.ended = True
                        self.total = len(self.cards)

    def fill(self, index, start=True):
        """The fill request of a pending card (shared), or None when the card is whole."""
        with self.lock:
            card = self.cards[index]
            if not card.get("pending"):
                return None
            req = self.fills.get(index)
            if (req is None or req.abandoned) and start:
                req = self.fills[index] = Request(self, "card", "/api/feed?item=" + urllib.parse.quote(
                    card["public_id"], safe=""))
            return req

    def whole(self, index, req):
        """Waits for a fill; the whole card (replacing the pending one), or None."""
        while not req.done.wait(POLL_S):
            if req.abandoned:
                break
        if not req.ok:
            return None
        try:
            full = (json.loads(req.body).get("resources") or [None])[0]
        except ValueError:
            full = None
        with self.lock:
            if not full or full.get("public_id") != self.cards[index].get("public_id"):
                self.rec.error(f"viewer {self.number}: GET {req.path}: no such item in the answer")
                return None
            self.cards[index] = full
            return full

    def window(self, i, reach):
        out = {i}
        for d in range(1, reach + 1):
            out.add((i + d) % self.total if self.ended and self.total else i + d)
            if i - d >= 0:
                out.add(i - d)
        return out

    # media -----------------------------------------------------------------------------------------------------------
    def item(self, index):
        with self.lock:
            it = self.items.get(index)
            if it is None or it.dropped:
                it = self.items[index] = Item(index)
            return it

    def get(self, it, kind, url, neighbour=False):
        with self.lock:
            req = it.requests.get(url)
            if req is None or req.abandoned or (req.done.is_set() and not req.ok):
                req = it.requests[url] = Request(self, kind, url,
                                                 turn=(lambda r, it=it: self.turn(it, r)) if neighbour else None)
            return req

    def poster(self, index):
        with self.lock:
            card = self.cards.get(index)
            if not card or not card.get("poster"):
                return None
            req = self.posters.get(index)
            if req is None or req.abandoned:
                req = self.posters[index] = Request(self, "poster", card["poster"])
            return req

    def short(self, mv, now):
        """The current item plays with less than SHORT seconds read ahead and more segments to read."""
        if mv is None or mv.play_start is None or mv.gone.is_set():
            return False
        it = self.items.get(mv.card_index)
        if it is None or it.rendition is None:
            return False
        grid = segment_starts(it.rendition)
        if not grid:
            return False
        starts, duration = grid
        segments = it.rendition["segments"]
        end = None
        for k, url in enumerate(segments):
            if not it.held(url):
                end = starts[k]
                break
        if end is None:
            return False
        return end - mv.playhead(now) < SHORT_S

    def turn(self, it, req):
        """neighbourTurn: wait while the current item is short, TURN seconds at most."""
        until = time.monotonic() + TURN_S
        while time.monotonic() < until and not req.abandoned:
            mv = self.current
            if mv is not None and mv.card_index == it.index and not mv.gone.is_set():
                return
            if not self.short(mv, time.monotonic()):
                return
            time.sleep(0.1)

    def drop(self, index):
        it = self.items.pop(index, None)
        if it:
            it.dropped = True
            for req in it.requests.values():
                req.cancel()
        fill = self.fills.get(index)
        if fill and not fill.done.is_set():
            fill.cancel()

    # WebSocket -------------------------------------------------------------------------------------------------------
    def send(self, message):
        try:
            with self.send_lock:
                self.ws.send_text(json.dumps(message))
            return True
        except (OSError, WebSocketClosed) as error:
            self.rec.error(f"viewer {self.number}: WebSocket send {message.get('type')}: {error}")
            return False

    def read_ws(self):
        while True:
            try:
                text = self.ws.receive()
            except (OSError, WebSocketClosed) as error:
                if not self.leaving:
                    self.rec.error(f"viewer {self.number}: WebSocket closed early: {error}")
                return
            try:
                message = json.loads(text)
            except (ValueError, TypeError):
                continue
            if message.get("type") != "swipe":
                continue
            with self.lock:
                for n, mv in enumerate(self.awaiting):
                    if mv.public_id == message.get("item"):
                        del self.awaiting[:n + 1]
                        mv.hit = bool(message.get("hit"))
                        mv.answered = True
                        break

    def say_hello(self, card):
        source = card if card.get("renditions") else next(
            (c for _, c in sorted(self.cards.items()) if c.get("renditions")), None)
        r = pick_rendition(source.get("renditions"), *self.box) if source else None
        name = r["name"] if r else None
        if self.hello_rendition == "unsent" or (self.hello_rendition is None and name is not None):
            self.hello_rendition = name
            self.send({"type": "hello", "rendition": name, "width": self.box[0], "height": self.box[1],
                       "bandwidth": None})

    # a move ----------------------------------------------------------------------------------------------------------
    def move(self, index, trace_t):
        now = time.monotonic()
        with self.lock:
            previous = self.current
            if previous is not None:
                previous.gone.set()
            if self.ended and self.total:
                index %= self.total
            mv = Move(self, len(self.moves), index, now, trace_t)
            self.moves.append(mv)
            self.current = mv
            keep, posters = self.window(index, KEEP), self.window(index, POSTERS)
            for j in list(self.items):
                if j not in keep or (previous is not None and j == previous.card_index):
                    self.drop(j)
            for j, fill in list(self.fills.items()):
                if j not in keep and not fill.done.is_set():
                    fill.cancel()
            for j in list(self.posters):
                if j not in posters:
                    self.posters.pop(j).cancel()
        threading.Thread(target=self.play, args=(mv,), daemon=True, name=f"v{self.number}-move").start()
        threading.Thread(target=self.keep_window, args=(mv,), daemon=True, name=f"v{self.number}-window").start()

    def play(self, mv):
        try:
            self._play(mv)
        except Exception as error:  # a bug here must not look like a passing run
            self.rec.error(f"viewer {self.number}: move {mv.number}: {type(error).__name__}: {error}")
        finally:
            mv.shown.set()

    def _play(self, mv):
        i = self.resolve(mv.index)
        if i is None:
            if not mv.gone.is_set():
                mv.failed = f"index {mv.index} not listed"
            return
        mv.card_index = i
        with self.lock:
            card = self.cards[i]
            mv.public_id = card["public_id"]
            it = self.items.get(i)
            r0 = it.rendition if it else None
            mv.ready = bool(r0) and it.held(r0["init"]) and it.held(r0["segments"][0])
            poster_held = i in self.posters and self.posters[i].ok
        if mv.gone.is_set():
            return
        self.say_hello(card)
        with self.lock:
            self.awaiting.append(mv)
        mv.at_sent = self.send({"type": "at", "index": card.get("index", i), "item": mv.public_id, "time": 0})
        if not poster_held:
            mv.poster_req = self.poster(i)
        fill = self.fill(i)
        if fill is not None:
            card = self.whole(i, fill)
            mv.card_s = time.monotonic() - mv.started
            if card is None:
                if not mv.gone.is_set():
                    mv.failed = f"card {mv.public_id}: {fill.status}"
                return
        if card.get("error") or not card.get("renditions"):
            mv.failed = f"{mv.public_id}: {card.get('error') or 'no renditions'}"
            return
        if mv.gone.is_set():
            return
        it = self.item(i)
        with self.lock:
            if it.rendition is None:
                it.rendition = pick_rendition(card["renditions"], *self.box)
        r = it.rendition
        grid = segment_starts(r)
        if not grid or not r["segments"]:
            mv.failed = f"{mv.public_id}: no segment grid"
            return
        starts, mv.duration = grid
        segments = r["segments"]
        init = self.get(it, "init", r["init"])
        seg0 = self.get(it, "segment", segments[0])
        for req in (init, seg0):
            while not req.done.wait(POLL_S):
                if mv.gone.is_set():
                    return
        if not (init.ok and seg0.ok):
            if not mv.gone.is_set():
                mv.failed = f"{mv.public_id}: init {init.status}, seg-0 {seg0.status}"
            return
        shown = max(mv.started, init.finished, seg0.finished)
        mv.first_frame = shown - mv.started
        mv.play_start = shown
        mv.shown.set()
        # Playback: seg-k once seg-(k-1) is read and the playhead reaches start_k - AHEAD.
        for k in range(1, len(segments)):
            ask_at = mv.play_start + mv.stall_total + starts[k] - AHEAD_S
            if mv.gone.wait(max(0.0, ask_at - time.monotonic())):
                return
            req = self.get(it, "segment", segments[k])
            need_at = mv.play_start + mv.stall_total + starts[k]
            if not req.done.wait(max(0.0, need_at - time.monotonic())):
                if mv.gone.is_set():
                    return
                mv.stalls += 1
                mv.stalled_since = need_at
                while not req.done.wait(POLL_S) and not mv.gone.is_set():
                    pass
                end = req.finished if req.done.is_set() else time.monotonic()
                mv.stall_total += max(0.0, end - need_at)
                mv.stalled_since = None
            if not req.ok:
                return

    def keep_window(self, mv):
        try:
            if not mv.ready:
                mv.shown.wait(HOLD_S)
            else:
                mv.shown.wait(1.0)     # only to learn the item's index (listing) and rendition
            if mv.gone.is_set() or mv.card_index is None:
                return
            i = mv.card_index
            for d in (1, -1, 2, -2):
                if mv.gone.is_set():
                    return
                j = self.resolve(i + d) if i + d >= 0 else None
                if j is None or j == i:
                    continue
                self.poster(j)
                it = self.item(j)
                with self.lock:
                    if it.preloading:
                        continue
                    it.preloading = True
                threading.Thread(target=self.preload, args=(it, d > 0), daemon=True,
                                 name=f"v{self.number}-preload").start()
            for d in (-3, 3):
                if mv.gone.is_set():
                    return
                j = self.resolve(i + d) if i + d >= 0 else None
                if j is not None and j != i:
                    self.poster(j)
        except Exception as error:
            self.rec.error(f"viewer {self.number}: window of move {mv.number}: {type(error).__name__}: {error}")

    def preload(self, it, ahead):
        try:
            j = it.index
            fill = self.fill(j)
            card = self.whole(j, fill) if fill is not None else self.cards[j]
            if card is None or it.dropped or card.get("error") or not card.get("renditions"):
                return
            with self.lock:
                if it.rendition is None:
                    it.rendition = pick_rendition(card["renditions"], *self.box)
            r = it.rendition
            grid = segment_starts(r)
            if not grid or not r["segments"]:
                return
            starts, _ = grid
            init = self.get(it, "init", r["init"], neighbour=True)
            seg0 = self.get(it, "segment", r["segments"][0], neighbour=True)
            for req in (init, seg0):
                while not req.done.wait(POLL_S):
                    if it.dropped:
                        return
            if not ahead or not (init.ok and seg0.ok):
                return
            for k in range(1, len(r["segments"])):
                if starts[k] >= EARLY_S or it.dropped:
                    break
                mv = self.current
                if mv is not None and mv.card_index == j and not mv.gone.is_set():
                    break       # current now: its playback asks for what follows
                req = self.get(it, "segment", r["segments"][k], neighbour=True)
                while not req.done.wait(POLL_S):
                    if it.dropped:
                        return
                if not req.ok:
                    break
        except Exception as error:
            self.rec.error(f"viewer {self.number}: preload {it.index}: {type(error).__name__}: {error}")

    # the viewer's life -----------------------------------------------------------------------------------------------
    def wait_until(self, t):
        """Sleeps until replay time t, sending the current move's `at` every AT_EVERY seconds meanwhile."""
        while True:
            now = time.monotonic()
            if now >= self.t0 + t:
                return
            mv = self.current
            wake = self.t0 + t
            if mv is not None and mv.at_sent and mv.card_index is not None and not mv.gone.is_set():
                if now >= mv.next_at:
                    playhead = mv.playhead(now)
                    if mv.duration:
                        playhead %= mv.duration
                    self.send({"type": "at", "index": self.cards[mv.card_index].get("index", mv.card_index),
                               "item": mv.public_id, "time": round(playhead, 3)})
                    while mv.next_at <= now:
                        mv.next_at += AT_EVERY_S
                wake = min(wake, mv.next_at)
            time.sleep(max(0.0, min(wake - time.monotonic(), 0.25)))

    def run(self):
        try:
            self.live()
        except Exception as error:
            self.rec.error(f"viewer {self.number}: {type(error).__name__}: {error}")
        finally:
            self.leave()

    def live(self):
        self.wait_until(self.rows[0][0])
        try:
            self.ws = WebSocket(self.host, self.port, self.prefix + "/api/ws", timeout=self.args.timeout)
        except (OSError, WebSocketClosed) as error:
            self.rec.error(f"viewer {self.number}: WebSocket /api/ws: {error}")
            return
        self.ws.sock.settimeout(None)
        threading.Thread(target=self.read_ws, daemon=True, name=f"v{self.number}-ws").start()
        for t, index in self.rows:
            self.wait_until(t)
            mv = self.current
            current = mv.card_index if mv is not None and mv.card_index is not None else (
                mv.index if mv is not None else None)
            target = index % self.total if self.ended and self.total else index
            if mv is not None and target == current:
                self.rec.skipped += 1
                continue
            self.move(index, t)
        self.wait_until(self.rows[-1][0] + self.args.tail)

    def leave(self):
        with self.lock:
            self.leaving = True
            if self.current is not None:
                self.current.gone.set()
            for j in list(self.items):
                self.drop(j)
            for req in list(self.posters.values()) + list(self.fills.values()):
                req.cancel()
            idle, self.idle = self.idle, []
        # Let the last swipe answers come in.
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            with self.lock:
                if not any(mv.at_sent and not mv.answered for mv in self.moves):
                    break
            time.sleep(0.05)
        if self.ws:
            self.ws.close()
        for conn in idle:
            conn.close()


# --------------------------------------------------------------------------------------------------------------------

def read_trace(path):
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = {"viewer", "time_s", "index"} - set(reader.fieldnames or [])
        if missing:
            raise ValueError(f"{path}: no column {', '.join(sorted(missing))} (header viewer,time_s,index)")
        rows = [(float(r["time_s"]), r["viewer"].strip(), int(r["index"]), n) for n, r in enumerate(reader)]
    if any(t < 0 or i < 0 for t, _, i, _ in rows):
        raise ValueError(f"{path}: negative time or index")
    rows.sort(key=lambda r: (r[0], r[1], r[3]))
    viewers = {}
    for t, v, i, _ in rows:
        viewers.setdefault(v, []).append((t, i))
    return viewers, len(rows)


def summarize(args, viewers, trace_rows, run, wall):
    moves = [mv for v in viewers for mv in v.moves]
    answered = [mv for mv in moves if mv.answered]
    hits = [mv for mv in answered if mv.hit]
    for mv in moves:
        if mv.at_sent and not mv.answered:
            run.error(f"viewer {mv.viewer.number}: move {mv.number} to {mv.public_id}: no swipe answer")
    ff = lambda ms: stats_ms([mv.first_frame for mv in ms])
    posters = [mv.poster_req.finished - mv.started for mv in moves
               if mv.poster_req is not None and mv.poster_req.ok and mv.poster_req.finished is not None]
    by_kind = {}
    for _, kind, status, seconds, _ in run.requests:
        by_kind.setdefault(kind, []).append((status, seconds))
    requests = {
        "count": len(run.requests),
        "abandoned": sum(1 for r in run.requests if r[2] == "abandoned"),
        "by_kind": {k: {"count": len(v), **{key + "_ms": val for key, val in stats_ms(
            [s for st, s in v if st != "abandoned"]).items() if key != "n"}} for k, v in sorted(by_kind.items())},
    }
    per_viewer = []
    for v in viewers:
        a = [mv for mv in v.moves if mv.answered]
        per_viewer.append({"viewer": v.number, "moves": len(v.moves), "first_frame_ms": ff(v.moves),
                           "hit_rate": round(sum(1 for mv in a if mv.hit) / len(a), 3) if a else None,
                           "stalls": sum(mv.stalls for mv in v.moves)})
    failed = [mv for mv in moves if mv.failed]
    return {
        "model": MODEL,
        "trace": {"file": args.trace, "viewers": len(viewers), "rows": trace_rows, "moves": len(moves),
                  "seconds": max((v.rows[-1][0] for v in viewers), default=0)},
        "url": args.url, "box": list(args.box),
        "first_frame_ms": ff(moves),
        "first_frame_ms_hit": ff([mv for mv in moves if mv.hit is True]),
        "first_frame_ms_miss": ff([mv for mv in moves if mv.hit is False]),
        "first_frame_ms_ready": ff([mv for mv in moves if mv.ready]),
        "first_frame_ms_not_ready": ff([mv for mv in moves if not mv.ready]),
        "moves": len(moves), "answered": len(answered), "hits": len(hits),
        "hit_rate": round(len(hits) / len(answered), 3) if answered else None,
        "ready": sum(1 for mv in moves if mv.ready),
        "ready_rate": round(sum(1 for mv in moves if mv.ready) / len(moves), 3) if moves else None,
        "unfinished": sum(1 for mv in moves if mv.first_frame is None and not mv.failed),
        "failed": len(failed), "failed_examples": sorted({mv.failed for mv in failed})[:10],
        "skipped_rows": run.skipped,
        "card_ms": stats_ms([mv.card_s for mv in moves]),
        "poster_ms": stats_ms(posters),
        "stalls": sum(mv.stalls for mv in moves),
        "stall_s": round(sum(mv.stall_total for mv in moves), 3),
        "requests": requests,
        "errors": {"count": len(run.errors), "examples": run.errors[:10]},
        "per_viewer": per_viewer,
        "per_move": [{"viewer": mv.viewer.number, "t": mv.trace_t, "index": mv.card_index, "item": mv.public_id,
                      "hit": mv.hit, "ready": mv.ready,
                      "first_frame_ms": None if mv.first_frame is None else round(1000 * mv.first_frame, 1),
                      "card_ms": None if mv.card_s is None else round(1000 * mv.card_s, 1),
                      "stalls": mv.stalls, "failed": mv.failed}
                     for mv in sorted(moves, key=lambda mv: (mv.trace_t, str(mv.viewer.number)))],
        "wall_s": round(wall, 1),
    }


def videofeed_binary():
    if os.environ.get("VIDEOFEED"):
        return os.environ["VIDEOFEED"]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run(["swift", "build", "--show-bin-path"], cwd=root, capture_output=True, text=True)
    return os.path.join(out.stdout.strip(), "videofeed")


def main():
    rendition_rule.check()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="a running server (what `videofeed serve` printed)")
    where.add_argument("--serve", metavar="FOLDER", help="start a fresh server (cold cache) on FOLDER")
    parser.add_argument("--serve-arg", action="append", default=[], help="passed on to `videofeed serve`")
    parser.add_argument("--box", default="540x960", help="WxH device pixels")
    parser.add_argument("--tail", type=float, default=3.0)
    parser.add_argument("--timeout", type=float, default=60.0, help="one request's socket timeout (s)")
    parser.add_argument("--json")
    args = parser.parse_args()
    try:
        w, h = (int(x) for x in args.box.lower().split("x"))
        args.box = (w, h)
    except ValueError:
        parser.error("--box is WxH")
    try:
        trace, trace_rows = read_trace(args.trace)
    except (OSError, ValueError, KeyError) as error:
        print(f"serve-replay: {error}", file=sys.stderr)
        return 2
    server = work = None
    if args.serve:
        work = tempfile.mkdtemp(prefix="serve-replay-")
        try:
            server = ServeProcess(videofeed_binary(), args.serve, work, args.serve_arg)
        except (OSError, RuntimeError) as error:
            print(f"serve-replay: {error}", file=sys.stderr)
            shutil.rmtree(work, ignore_errors=True)
            return 2
        args.url = server.url
    if not args.url.endswith("/"):
        args.url += "/"
    try:
        url = urllib.parse.urlsplit(args.url)
        try:
            conn = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=10)
            conn.request("GET", url.path.rstrip("/") + "/healthz")
            health = conn.getresponse()
            health.read()
            conn.close()
            if health.status != 200:
                raise OSError(f"/healthz answered {health.status}")
        except (OSError, http.client.HTTPException) as error:
            print(f"serve-replay: {args.url} is not serving: {error}", file=sys.stderr)
            return 2
        run = Run()
        run.skipped = 0
        t0 = time.monotonic()
        viewers = [Viewer(name, trace[name], args, run, t0)
                   for name in sorted(trace, key=lambda k: (int(k) if k.isdigit() else 1 << 62, k))]
        for v in viewers:
            v.start()
        end = max(v.rows[-1][0] for v in viewers) + args.tail
        for v in viewers:
            v.join(max(1.0, t0 + end + args.timeout + 10 - time.monotonic()))
            if v.is_alive():
                run.error(f"viewer {v.number}: still running {args.timeout + 10:.0f} s after the end")
        wall = time.monotonic() - t0
        if server is not None and not server.alive:
            run.error("the server exited during the replay: " + server.log(400))
        summary = summarize(args, viewers, trace_rows, run, wall)
    finally:
        if server is not None:
            server.stop()
        if work:
            shutil.rmtree(work, ignore_errors=True)

    s = summary
    print(f"serve-replay: {s['trace']['viewers']} viewers, {s['moves']} moves ({s['skipped_rows']} rows skipped), "
          f"wall {s['wall_s']} s, box {args.box[0]}x{args.box[1]}, {args.url}")
    fmt = lambda d: f"p50 {d['p50']} ms, p95 {d['p95']} ms (n {d['n']})"
    print(f"  first frame: {fmt(s['first_frame_ms'])}")
    print(f"    hit: {fmt(s['first_frame_ms_hit'])}; miss: {fmt(s['first_frame_ms_miss'])}")
    print(f"    ready (held by the viewer): {fmt(s['first_frame_ms_ready'])}; not ready: "
          f"{fmt(s['first_frame_ms_not_ready'])}")
    print(f"  hit rate {s['hit_rate']} ({s['hits']}/{s['answered']} answered); ready rate {s['ready_rate']}; "
          f"unfinished {s['unfinished']}; failed {s['failed']}")
    print(f"  card: {fmt(s['card_ms'])}; poster: {fmt(s['poster_ms'])}")
    print(f"  stalls {s['stalls']} ({s['stall_s']} s); requests {s['requests']['count']} "
          f"({s['requests']['abandoned']} abandoned); errors {s['errors']['count']}")
    for text in s["errors"]["examples"]:
        print(f"    error: {text}")
    for text in s["failed_examples"]:
        print(f"    failed: {text}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(s, f, indent=1)
            f.write("\n")
    return 0 if s["errors"]["count"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
