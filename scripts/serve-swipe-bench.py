#!/usr/bin/env python3
"""Swipe to first painted frame in Chromium, against `videofeed serve` (issue 12, "How it is judged").

Usage:
  python3 scripts/serve-swipe-bench.py BASE_URL --swipes 200 --seed 1 --json OUT
      [--cold-url URL] [--cold-jumps 20] [--cold-stride 7] [--dwell 1-3] [--timeout 15]

Playwright drives Debian's /usr/bin/chromium ($CHROMIUM overrides; no Playwright browser download), headless, with
--autoplay-policy=no-user-gesture-required, in a portrait 405x720 viewport at deviceScaleFactor 2 (a phone's
1080x1920-class screen: the page plays the 720x1280 rendition).

Neighbour series (BASE_URL): --swipes key presses, ArrowDown (about 85 %) or ArrowUp, each after a seeded dwell of
1-3 s on the item: the item swiped to is always the prefetched neighbour (current ± 1). Cold series (--cold-url,
default BASE_URL, in a fresh browser context): --cold-jumps jumps by setting `location.hash = '#i=N'` to items
never within 3 of any item the viewer was on (N = last + --cold-stride, wrapping over the feed's total); a target
that is not cold by that rule ends the series early, and each jump is also classified by the server's own answer
(`hit` of the swipe) and by whether the page had the card listed already — serve a fresh cache with a long feed for
this series (Benchmarks/serve-bench.sh does). With --warm-listing the script first lists the cold server's whole
feed through /api/feed?pending=1 (the feed's pages read, nothing made: a whole card's manifest job would make the
item's first segments too), so the jumps measure a cold item rather than the reading of the feed's pages.

The page's contract (Sources/FeedServer/Web): `window.videofeed` with `index`, `publicId`, `cards`,
`lastSwipe = {at, firstFrameMs, hit}`, and a `videofeed:firstframe` event on window, `{detail: {index, publicId,
ms}}`, dispatched from the requestVideoFrameCallback of a card's first painted frame. The figure does not rest on
the page's bookkeeping: this script installs its own listeners before the page's code runs. The swipe starts at the
key press — the `timeStamp` of the keydown event Chromium makes from page.keyboard.press (the browser's input time,
as a phone's touch event carries the hardware time) — and ends when the page's firstframe event for the new index
reaches the script's listener. A jump starts at performance.now() in the same task that sets `location.hash`. Also
recorded per swipe: the time from performance.now() read right before page.keyboard.press (which adds Playwright's
and CDP's round trip, a few ms), the page's own `ms`, `lastSwipe`, and whether the target card was listed.

Output: p50/p95/max per series (nearest rank; a swipe with no first frame within --timeout counts as infinitely
slow), the server's hit/miss (page's lastSwipe.hit, and the change of the prefetch counters in /metrics), JSON
with every swipe. Exit status: 0 measured, 1 some swipes got no first frame, 2 page or browser unusable.
"""

import argparse
import http.client
import json
import re
import math
import os
import random
import sys
import time
import urllib.parse

import serve_metrics

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")

INIT_SCRIPT = r"""
(() => {
  const bench = { frames: [], keys: [], errors: [], hashes: [] };
  Object.defineProperty(window, '__bench', { value: bench });
  window.addEventListener('videofeed:firstframe', (e) => {
    const d = e.detail || {};
    bench.frames.push({ t: performance.now(), index: d.index, publicId: d.publicId, ms: d.ms });
  }, true);
  window.addEventListener('keydown', (e) => {
    bench.keys.push({ t: e.timeStamp, now: performance.now(), key: e.key });
  }, true);
  window.addEventListener('hashchange', (e) => {
    bench.hashes.push({ t: e.timeStamp, now: performance.now(), url: e.newURL });
  }, true);
  // Media and script errors (capture: a <video>'s error event does not bubble).
  window.addEventListener('error', (e) => {
    const target = e.target && e.target.tagName ? e.target.tagName + ' ' + (e.target.currentSrc || '') : '';
    bench.errors.push({ t: performance.now(), message: String(e.message || (e.target && e.target.error &&
      e.target.error.message) || 'error'), target });
  }, true);
})();
"""

STATE_JS = """() => {
  const v = window.videofeed;
  if (!v) return null;
  const cards = v.cards;
  const n = typeof cards === 'number' ? cards : Array.isArray(cards) ? cards.length
          : (cards && typeof cards.length === 'number' ? cards.length : null);
  return { index: v.index, publicId: v.publicId, cards: n, lastSwipe: v.lastSwipe ? {...v.lastSwipe} : null,
           total: v.total ?? null };
}"""

WAIT_FRAME_JS = """([index, since]) => window.__bench.frames.find(f => f.index === index && f.t >= since) || null"""


def percentile(values, p):
    """Nearest-rank percentile (p in 0..100) of numbers, inf allowed."""
    if not values:
        return None
    s = sorted(values)
    k = max(0, min(len(s) - 1, math.ceil(p * len(s) / 100) - 1))
    return s[k]


def stats(values):
    if not values:
        return {"count": 0}
    finite = [v for v in values if math.isfinite(v)]

    def show(v):
        return None if v is None or not math.isfinite(v) else round(v, 1)
    return {"count": len(values), "timeouts": len(values) - len(finite),
            "p50_ms": show(percentile(values, 50)), "p95_ms": show(percentile(values, 95)),
            "max_ms": show(max(values)), "min_ms": show(min(values)) if finite else None,
            "mean_ms": round(sum(finite) / len(finite), 1) if finite else None}


def http_get(base_url, path):
    url = urllib.parse.urlsplit(base_url)
    conn = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=60)
    try:
        conn.request("GET", url.path.rstrip("/") + path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def prefetch_delta(before, after):
    if not before or not after:
        return {"unavailable": True}
    out = {}
    for key in ("videofeed_prefetch_hits_total", "videofeed_prefetch_misses_total",
                "videofeed_segments_transcoded_total", "videofeed_jobs_cancelled_total"):
        if key in after or key in before:
            out[key] = after.get(key, 0) - before.get(key, 0)
    return out


def feed_total(base_url):
    status, body = http_get(base_url, "/api/feed?limit=1")
    if status != 200:
        raise OSError(f"/api/feed answered {status}: {body[:200]!r}")
    page = json.loads(body)
    return page.get("total")


class Bench:
    def __init__(self, args, browser):
        self.args, self.browser = args, browser
        self.first_play_ms = {}
        self.listing_warmed_s = None
        # Media segments the page asked for, by rendition name (which codec and rung it played).
        self.segments_by_rendition = {}

    def count_segment(self, url):
        m = re.search(r"/media/.*/([^/]+)/seg-\d+\.m4s", url)
        if m:
            self.segments_by_rendition[m.group(1)] = self.segments_by_rendition.get(m.group(1), 0) + 1

    def open(self, url):
        context = self.browser.new_context(viewport={"width": 405, "height": 720}, device_scale_factor=2,
                                           is_mobile=False, has_touch=False)
        context.add_init_script(INIT_SCRIPT)
        page = context.new_page()
        console = []
        page.on("console", lambda m: console.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
        page.on("request", lambda r: self.count_segment(r.url))
        page.goto(url, wait_until="load", timeout=self.args.timeout * 1000)
        try:
            page.wait_for_function("() => !!window.videofeed", timeout=self.args.timeout * 1000)
        except Exception:
            raise SystemExit(self.fail(f"{url}: the page has no window.videofeed after {self.args.timeout:g} s "
                                       "(the page API of docs/serve.md is missing)", console))
        try:
            # A cold server lists its first page (a manifest per card) before anything plays: allow a minute for
            # the first card to play (its firstframe event, or its playhead moving once the page is ready).
            page.wait_for_function(
                """() => { const v = window.videofeed;
                           return window.__bench.frames.length > 0 || (v.ready !== false && v.currentTime > 0); }""",
                timeout=max(60, self.args.timeout) * 1000)
        except Exception:
            raise SystemExit(self.fail(f"{url}: the first card did not play within {max(60, self.args.timeout):g} s",
                                       console))
        first = page.evaluate("performance.now()")
        state = page.evaluate(STATE_JS)
        return context, page, console, state, first

    def fail(self, message, console=None):
        print(f"serve-swipe-bench: {message}", file=sys.stderr)
        for line in (console or [])[:20]:
            print(f"  console {line}", file=sys.stderr)
        return 2

    def wait_frame(self, page, index, since):
        try:
            handle = page.wait_for_function(WAIT_FRAME_JS, arg=[index, since], polling=5,
                                            timeout=self.args.timeout * 1000)
            return handle.json_value()
        except Exception:
            return None

    def swipe(self, page, key, expected, listed):
        t_input = page.evaluate("performance.now()")
        page.keyboard.press(key)
        frame = self.wait_frame(page, expected, t_input)
        after = page.evaluate("""(since) => ({ key: window.__bench.keys.find(k => k.now >= since) || null,
                                               errors: window.__bench.errors.filter(e => e.t >= since) })""",
                              t_input)
        state = page.evaluate(STATE_JS)
        return self.row(key, expected, listed, t_input, frame, after, state, after["key"]["t"] if after["key"] else None)

    def jump(self, page, target, listed):
        t_input = page.evaluate("(n) => { const t = performance.now(); location.hash = '#i=' + n; return t; }",
                                target)
        frame = self.wait_frame(page, target, t_input)
        after = page.evaluate("(since) => ({ errors: window.__bench.errors.filter(e => e.t >= since) })", t_input)
        state = page.evaluate(STATE_JS)
        return self.row("#i=%d" % target, target, listed, t_input, frame, after, state, None)

    def row(self, action, expected, listed, t_input, frame, after, state, t_event):
        # The key press is the keydown event's own timestamp (read by this script's listener, registered before
        # the page's code); the jump is performance.now() in the same task that sets the hash.
        start = t_event if t_event is not None else t_input
        ms = (frame["t"] - start) if frame else math.inf
        last = (state or {}).get("lastSwipe") or {}
        return {
            "action": action, "to": expected, "listed_before": listed,
            "ms": round(ms, 2) if math.isfinite(ms) else None,
            "ms_from_dispatch": round(frame["t"] - t_input, 2) if frame else None,
            "page_ms": frame.get("ms") if frame else None,
            "page_index": (state or {}).get("index"), "public_id": (frame or {}).get("publicId"),
            "hit": last.get("hit"), "page_first_frame_ms": last.get("firstFrameMs"),
            "errors": after.get("errors", [])[:5],
            "_ms": ms,
        }

    def alive(self, url, when):
        """The series is void if the server went away (the page can go on from Chromium's memory cache)."""
        try:
            status, _ = http_get(url, "/healthz")
            if status == 200:
                return
        except (OSError, http.client.HTTPException) as error:
            status = error
        raise SystemExit(self.fail(f"{url} does not answer /healthz {when} ({status}): the server went away, "
                                   "the series is void"))

    def attach_hits(self, page, rows, sources):
        """The server's `swipe` answer may come after the first frame: take each swipe's hit from the page's
        `videofeed.swipes` at the end of the series (in order, the page's swipes of these input sources)."""
        swipes = page.evaluate("() => (window.videofeed.swipes || []).map(s => ({index: s.index, hit: s.hit, "
                               "source: s.source, at: s.at}))")
        swipes = [s for s in swipes if s.get("source") in sources]
        if len(swipes) < len(rows):
            return
        for row, swipe in zip(rows, swipes[len(swipes) - len(rows):]):
            if swipe.get("index") == row["to"] and swipe.get("hit") is not None:
                row["hit"] = swipe["hit"]

    # Series -----------------------------------------------------------------------------------------------------------
    def neighbours(self):
        args = self.args
        total = feed_total(args.base_url)
        before = serve_metrics.fetch(args.base_url, timeout=60)
        context, page, console, state, first = self.open(args.base_url)
        rng = random.Random(f"{args.seed}/neighbours")
        index = state["index"] if isinstance(state.get("index"), int) else 0
        rows = []
        print(f"neighbour series: {args.base_url}, {total} items, item {index} playing "
              f"{first:.0f} ms after navigation start", file=sys.stderr)
        lo, hi = args.dwell
        visited = {index}
        self.first_play_ms = {"neighbour": round(first, 1)}
        for n in range(args.swipes):
            dwell = rng.uniform(lo, hi)
            forward = index == 0 or rng.random() < args.next_share
            expected = index + 1 if forward else index - 1
            if total:
                expected %= total
            elif expected < 0:
                expected = 0
            listed = (page.evaluate(STATE_JS) or {}).get("cards")
            started = time.monotonic()
            row = self.swipe(page, "ArrowDown" if forward else "ArrowUp", expected,
                             listed is not None and expected < listed)
            row["n"] = n
            row["dwell_s"] = round(dwell, 3)
            row["first_visit"] = expected not in visited
            visited.add(expected)
            rows.append(row)
            if row["ms"] is None:
                print(f"  swipe {n}: no first frame of item {expected} within {args.timeout:g} s "
                      f"(page index {row['page_index']})", file=sys.stderr)
                actual = row["page_index"]
                index = actual if isinstance(actual, int) else expected
            else:
                index = expected
            if args.verbose:
                print(f"  {n:3d} {row['action']:<9} -> {expected:3d}  {row['ms']} ms  hit {row['hit']}",
                      file=sys.stderr)
            if n % 20 == 19:
                self.alive(args.base_url, f"after {n + 1} swipes")
            time.sleep(max(0.0, dwell - (time.monotonic() - started)))
        time.sleep(1.0)
        self.alive(args.base_url, f"at the end of the {len(rows)} swipes")
        self.attach_hits(page, rows, ("key",))
        after = serve_metrics.fetch(args.base_url, timeout=60)
        context.close()
        return rows, prefetch_delta(before, after), console

    def cold(self):
        args = self.args
        url = args.cold_url or args.base_url
        total = feed_total(url)
        if args.warm_listing:
            # The feed's pages read before the series (the listing's own cost is not the item's), with pending=1:
            # nothing is made, the items stay cold (a whole card's manifest job makes its first segments too).
            started, cursor, pages = time.monotonic(), None, 0
            while True:
                status, body = http_get(url, "/api/feed?pending=1&limit=50" + (f"&cursor={cursor}" if cursor else ""))
                if status != 200:
                    raise SystemExit(self.fail(f"{url}: /api/feed answered {status} while warming the listing"))
                pages += 1
                cursor = json.loads(body).get("next_cursor")
                if not cursor:
                    break
            self.listing_warmed_s = round(time.monotonic() - started, 1)
            print(f"cold series: listed all {total} items ({pages} pages of 50) in {self.listing_warmed_s} s "
                  "before the series", file=sys.stderr)
        before = serve_metrics.fetch(url, timeout=60)
        context, page, console, state, first = self.open(url)
        rng = random.Random(f"{args.seed}/cold")
        index = state["index"] if isinstance(state.get("index"), int) else 0
        visited = [index]
        rows = []
        self.first_play_ms["cold"] = round(first, 1)
        print(f"cold series: {url}, {total} items, item {index} playing {first:.0f} ms after navigation start",
              file=sys.stderr)
        lo, hi = args.dwell

        def distance(a, b):
            d = abs(a - b)
            return min(d, total - d) if total else d

        for n in range(args.cold_jumps):
            target = index + args.cold_stride
            if total:
                target %= total
            if any(distance(target, v) <= 3 for v in visited):
                print(f"  cold series ends after {n} jumps: item {target} was near an item visited "
                      f"(feed of {total}); use a longer feed or a fresh server", file=sys.stderr)
                break
            time.sleep(rng.uniform(lo, hi))
            listed = (page.evaluate(STATE_JS) or {}).get("cards")
            row = self.jump(page, target, listed is not None and target < listed)
            row["n"] = n
            rows.append(row)
            visited.append(target)
            if row["ms"] is None:
                print(f"  jump {n}: no first frame of item {target} within {args.timeout:g} s "
                      f"(page index {row['page_index']})", file=sys.stderr)
            if args.verbose:
                print(f"  {n:3d} jump -> {target:3d}  {row['ms']} ms  hit {row['hit']}  listed {row['listed_before']}",
                      file=sys.stderr)
            index = target
        time.sleep(1.0)
        self.alive(url, f"at the end of the {len(rows)} jumps")
        self.attach_hits(page, rows, ("hash",))
        after = serve_metrics.fetch(url, timeout=60)
        context.close()
        return rows, prefetch_delta(before, after), console


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base_url")
    parser.add_argument("--swipes", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="write every swipe and the summary here")
    parser.add_argument("--cold-url", help="server for the cold-jump series (default BASE_URL)")
    parser.add_argument("--cold-jumps", type=int, default=20)
    parser.add_argument("--cold-stride", type=int, default=7)
    parser.add_argument("--warm-listing", action="store_true",
                        help="list the cold server's whole feed (pending=1: nothing made) before the cold series")
    parser.add_argument("--next-share", type=float, default=0.85, help="share of ArrowDown among the swipes")
    parser.add_argument("--dwell", default="1-3", help="seconds on each item, LO-HI (seeded uniform)")
    parser.add_argument("--timeout", type=float, default=15.0, help="seconds to wait for a first frame")
    parser.add_argument("--headed", action="store_true")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    if not args.base_url.endswith("/"):
        args.base_url += "/"
    if args.cold_url and not args.cold_url.endswith("/"):
        args.cold_url += "/"
    lo, _, hi = args.dwell.partition("-")
    args.dwell = (float(lo), float(hi or lo))
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("serve-swipe-bench: Playwright is missing (make browser-deps)", file=sys.stderr)
        return 2
    if not os.access(CHROMIUM, os.X_OK):
        print(f"serve-swipe-bench: no chromium at {CHROMIUM} (make browser-deps)", file=sys.stderr)
        return 2
    try:
        http_get(args.base_url, "/healthz")
    except OSError as error:
        print(f"serve-swipe-bench: {args.base_url} is not serving: {error}", file=sys.stderr)
        return 2

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=not args.headed,
                                    args=["--no-sandbox", "--autoplay-policy=no-user-gesture-required"])
        bench = Bench(args, browser)
        version = browser.version
        neighbour_rows, neighbour_metrics, neighbour_console = bench.neighbours() if args.swipes else ([], {}, [])
        cold_rows, cold_metrics, cold_console = bench.cold() if args.cold_jumps else ([], {}, [])
        browser.close()

    def series(rows, server):
        hits = sum(1 for r in rows if r["hit"] is True)
        misses = sum(1 for r in rows if r["hit"] is False)
        out = stats([r["_ms"] for r in rows])
        out["from_dispatch"] = stats([r["ms_from_dispatch"] if r["ms_from_dispatch"] is not None else math.inf
                                      for r in rows])
        page_ms = [r["page_ms"] for r in rows if isinstance(r["page_ms"], (int, float))]
        out["page_reported"] = stats(page_ms)
        out["page_hits"], out["page_misses"] = hits, misses
        out["server_metrics_delta"] = server
        out["media_errors"] = sum(len(r["errors"]) for r in rows)
        return out

    def by_source(rows):
        """Per source clip (public_id without its repeat suffix _N): the frame rate of a clip shows here."""
        groups = {}
        for r in rows:
            key = (r.get("public_id") or "?").rsplit("_", 1)[0]
            groups.setdefault(key, []).append(r["_ms"])
        return {k: stats(v) for k, v in sorted(groups.items())}

    down = [r for r in neighbour_rows if r["action"] == "ArrowDown"]
    up = [r for r in neighbour_rows if r["action"] == "ArrowUp"]
    summary = {
        "base_url": args.base_url, "cold_url": args.cold_url or args.base_url, "seed": args.seed,
        "chromium": version, "viewport": "405x720 @2x", "dwell_s": list(args.dwell),
        "neighbour": series(neighbour_rows, neighbour_metrics),
        "neighbour_next": stats([r["_ms"] for r in down]),
        "neighbour_previous": stats([r["_ms"] for r in up]),
        "neighbour_first_visit": stats([r["_ms"] for r in neighbour_rows if r["first_visit"]]),
        "neighbour_revisit": stats([r["_ms"] for r in neighbour_rows if not r["first_visit"]]),
        "neighbour_hits_only": stats([r["_ms"] for r in neighbour_rows if r["hit"] is True]),
        "neighbour_misses_only": stats([r["_ms"] for r in neighbour_rows if r["hit"] is False]),
        "cold": series(cold_rows, cold_metrics),
        "cold_server_miss_only": stats([r["_ms"] for r in cold_rows if r["hit"] is False]),
        "cold_listed_before": stats([r["_ms"] for r in cold_rows if r["listed_before"]]),
        "cold_not_listed_before": stats([r["_ms"] for r in cold_rows if not r["listed_before"]]),
        "neighbour_by_source": by_source(neighbour_rows),
        "cold_by_source": by_source(cold_rows),
        "targets": {"neighbour_p95_ms": 100, "cold_p95_ms": 1500},
        "first_play_after_navigation_ms": bench.first_play_ms,
        "cold_listing_warmed_s": bench.listing_warmed_s,
        "segments_by_rendition": dict(sorted(bench.segments_by_rendition.items())),
        "console": (neighbour_console + cold_console)[:50],
    }
    n95 = summary["neighbour"].get("p95_ms")
    c95 = summary["cold"].get("p95_ms")
    summary["neighbour_target_met"] = (n95 is not None and n95 <= 100) if neighbour_rows else None
    summary["cold_target_met"] = (c95 is not None and c95 <= 1500) if cold_rows else None

    def line(name, s):
        if not s.get("count"):
            return f"  {name:<34} none"
        return (f"  {name:<34} {s['count']:>4}  p50 {s['p50_ms']!s:>8} ms  p95 {s['p95_ms']!s:>8} ms  "
                f"max {s['max_ms']!s:>8} ms" + (f"  ({s['timeouts']} without a first frame)" if s["timeouts"] else ""))

    print(f"serve-swipe-bench: Chromium {version}, 405x720 @2x, seed {args.seed}, dwell {args.dwell[0]:g}-"
          f"{args.dwell[1]:g} s")
    nb, cd = summary["neighbour"], summary["cold"]
    print(line("neighbour swipes", nb))
    print(line("  ArrowDown (next)", summary["neighbour_next"]))
    print(line("  ArrowUp (previous)", summary["neighbour_previous"]))
    print(line("  item not visited before", summary["neighbour_first_visit"]))
    print(line("  item visited before", summary["neighbour_revisit"]))
    print(line("  server hit", summary["neighbour_hits_only"]))
    print(line("  server miss", summary["neighbour_misses_only"]))
    print(line("  from before page.keyboard", nb["from_dispatch"]))
    print(line("  page's own ms", nb["page_reported"]))
    print(f"  server hit/miss (page lastSwipe.hit): {nb['page_hits']}/{nb['page_misses']}; /metrics change "
          f"{nb['server_metrics_delta']}")
    for name, st in summary["neighbour_by_source"].items():
        print(line("  " + name, st))
    print(f"  first card playing {bench.first_play_ms.get('neighbour')} ms after navigation start")
    print(line("cold jumps (#i=N)", cd))
    print(line("  listed before the jump", summary["cold_listed_before"]))
    print(line("  not listed before", summary["cold_not_listed_before"]))
    print(line("  page's own ms", cd["page_reported"]))
    print(line("  server miss", summary["cold_server_miss_only"]))
    print(f"  server hit/miss (page lastSwipe.hit): {cd['page_hits']}/{cd['page_misses']}; /metrics change "
          f"{cd['server_metrics_delta']}")
    if neighbour_rows:
        print(f"  target neighbour p95 <= 100 ms: {'met' if summary['neighbour_target_met'] else 'MISSED'}")
    if cold_rows:
        print(f"  target cold jump p95 <= 1500 ms: {'met' if summary['cold_target_met'] else 'MISSED'}")
    errors = nb["media_errors"] + cd["media_errors"]
    if errors:
        print(f"  {errors} error events during swipes (see JSON)")
    if args.json:
        for r in neighbour_rows + cold_rows:
            r.pop("_ms", None)
        summary["neighbour_swipes"] = neighbour_rows
        summary["cold_jumps"] = cold_rows
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
            f.write("\n")
    timeouts = (nb.get("timeouts") or 0) + (cd.get("timeouts") or 0)
    return 1 if timeouts else 0


if __name__ == "__main__":
    sys.exit(main())
