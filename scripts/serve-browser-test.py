#!/usr/bin/env python3
"""Browser tests of the `videofeed serve` page, in headless Chromium through Playwright.

Usage: python3 scripts/serve-browser-test.py [--only NAME[,NAME]] [--timeout S] [--screenshot PATH] [--policy NAME]
       BASE_URL

BASE_URL is a running server, e.g. `videofeed serve Fixtures/serve/feed.json --port 8090 --cache /tmp/servecache`
then `python3 scripts/serve-browser-test.py http://127.0.0.1:8090`. The checks read the listing from
BASE_URL/api/feed and work with any feed; Fixtures/serve/feed.json is the one they are meant for (a rotated HEVC
10-bit HDR phone clip, an interlaced MPEG-2 TS, a GIF, a JPEG, VP9, a truncated MP4 that must fail).

Checks (one line each, PASS or FAIL with the detail):
  load       the page loads with no script error and shows the first item's poster (its <img> loaded, the URL the
             listing gives); window.videofeed says index 0 and the listing's first public_id
  keys       ArrowDown, ArrowUp, j and k each move exactly one card (the index changes by one and stays there), the
             URL hash follows, lastSwipe gets its first-frame time and a `videofeed:firstframe` event fires
  wheel      a trackpad-like burst of wheel events moves exactly one card; a single notch moves back one
  touch      a touch swipe up (CDP touch events) moves one card down, a swipe down moves back, a short drag moves none
  scroll     plain scrolling (scroll-snap fallback: scrollTo the third card) makes the third card current
  play:ID    every item in turn, reached by ArrowDown from the first (the page asked for pages of 3): a video item plays (the active <video>'s
             played ranges reach 0.8 s or 60 % of its length, no `error` event, no error card, its picture has the
             listing's aspect ratio, so rotated clips are upright); an item the listing marks with `error`, or
             whose media fails, shows its error card with its public_id and a message
  goes-on    after the error card, the next ArrowDown plays the next item
  paging     the first page held 3 cards and the next pages came as the viewer went on (?limit=3)
  wrap       ArrowDown from the last item shows the first one again (position = total, index 0) and it plays; at
             most the page window's cards (5 with the default policy: current ± 2) hold a MediaSource after going
             around the feed
  media      every /media/ request of that walk was answered 2xx/304 (a segment the listing names but the server
             cannot make fails here even when the page plays around it); the one exception is the poster of an item
             the listing marks with `error`, which the page asks for while the card is still pending
  controls   the mute button unmutes the playing video and mutes it again; a click on the video pauses it and a
             second click resumes it; the progress bar moves while it plays, and while it is paused it is still and
             the page asks for no animation frames
  reload     a reload resumes at the same item (#i=…&item=…), and #item=<public_id> / #i=N open that item
  start      a swipe to a prefetched neighbour starts it alone: the <video> of the card that joins the window is
             added after the new card's first frame (its firstframe event), not in the same task as the key press
  held       a prefetched neighbour holds its first segment: its <video> has the init only (readyState 1, nothing
             buffered) until the swipe, and the first frame reported after the swipe is the rendition's first
             (a neighbour paused on its first frame, already presented, is reported one frame interval later, with
             its second); back to the card left, it is attached afresh and starts from its first frame again
  jump       #i=N to an item not listed yet (pages of 3): when the page asks for its listing page, only the current
             card holds a <video> and a poster (the old neighbours let go, so the request does not wait behind
             theirs for one of the browser's six connections); then N plays and its neighbours are attached again
  abandon    with every card but the first listed pending and the one-card requests held unanswered (as a cold
             server holds them while it makes manifests), a jump far away aborts the requests of the cards let go
             (items 1 and 2), not the current card's
  overlay    `d` shows the debug overlay with the engine's window from the WebSocket (states of current ± 2) and
             the last swipe's first-frame time; `d` again hides it
  window     the page's window is the server's policy's (--policy, the name the server was started with; default
             staged): its `policy` message names it and window.videofeed.pageWindow is the window PAGE_WINDOWS gives
             for it (the default's: +2/-2, posters ±3); one card past `behind` into the feed, exactly the cards from
             current - behind to current + ahead hold a <video> (error cards aside) and the posters loaded are those
             within ±posters; a page whose WebSocket never answers keeps the default's window

--screenshot PATH saves a screenshot (405x720 portrait viewport) of the first card playing, for docs/.

Chromium is /usr/bin/chromium (Debian's package; $CHROMIUM overrides) with --autoplay-policy=no-user-gesture-required;
Playwright's own browser downloads are not used. Exit status: 0 all passed, 1 some failed, 2 could not run.
"""

import argparse
import json
import os
import re
import sys
import time
import urllib.parse
import urllib.request

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
VIEWPORT = {"width": 405, "height": 720}
SETTLE_S = 0.6          # after a move, the index must stay put this long (exactly one card)
# The page window (ahead, behind, posters) of each policy the `window` check knows (Sources/Prefetch/PageWindow.swift:
# attached to the farthest offsets the policy prepares to a first frame, posters one card beyond); forwardN is (N, 0,
# N + 1).
PAGE_WINDOWS = {"staged": (2, 2, 3), "window": (2, 2, 3), "tiktokLike": (4, 0, 5), "swipeAware": (1, 0, 2)}

# Runs in the page before its scripts: every media `error` event (they do not bubble; a capturing listener on
# window sees them) and every `videofeed:firstframe` event are recorded.
INIT_SCRIPT = """
window.__test = { mediaErrors: [], firstFrames: [] };
addEventListener('error', e => {
  const t = e.target;
  if (t instanceof HTMLMediaElement) {
    const card = t.closest('.card');
    window.__test.mediaErrors.push({ publicId: card ? card.dataset.publicId : null,
      code: t.error ? t.error.code : null, message: t.error ? t.error.message : '' });
  }
}, true);
addEventListener('videofeed:firstframe', e => window.__test.firstFrames.push({ ...e.detail, t: performance.now() }));
// Every <video> the page adds, and when.
window.__test.videosAdded = [];
new MutationObserver(records => {
  for (const r of records) for (const n of r.addedNodes) {
    if (n.nodeName === 'VIDEO') {
      const card = n.closest('.card');
      window.__test.videosAdded.push({ t: performance.now(), publicId: card ? card.dataset.publicId : null });
    }
  }
}).observe(document, { childList: true, subtree: true });
// Animation frames the page asks for (the progress bar's loop; a touch glide's).
window.__test.frames = 0;
const pageFrame = window.requestAnimationFrame.bind(window);
window.requestAnimationFrame = cb => { window.__test.frames++; return pageFrame(cb); };
// Every listing request, with how many cards held a <video> or a poster when it was sent.
// Listing requests the page aborted (through their AbortSignal), by URL.
window.__test.listings = [];
window.__test.aborted = [];
const pageFetch = window.fetch;
window.fetch = function (input, init) {
  const url = String((input && input.url) || input);
  if (url.includes('/api/feed')) {
    window.__test.listings.push({ url, videos: document.querySelectorAll('video').length,
      posters: document.querySelectorAll('img.poster[src]').length });
    if (init && init.signal) init.signal.addEventListener('abort', () => window.__test.aborted.push(url));
  }
  return pageFetch.apply(this, arguments);
};
"""

# The current card's <video> as numbers: how much of it has played, its size, its state.
JS_ACTIVE_VIDEO = """() => {
  const card = document.querySelector('.card.active');
  const v = card && card.querySelector('video');
  if (!v) return { card: !!card, failed: !!card && card.classList.contains('failed') };
  let played = 0;
  for (let i = 0; i < v.played.length; i++) played += v.played.end(i) - v.played.start(i);
  return { card: true, failed: card.classList.contains('failed'), played, currentTime: v.currentTime,
           duration: v.duration, paused: v.paused, muted: v.muted, error: v.error ? v.error.code : null,
           width: v.videoWidth, height: v.videoHeight, readyState: v.readyState };
}"""


class CheckFailed(Exception):
    pass


def fail(message):
    raise CheckFailed(message)


def fetch_listing(base):
    """Every item of /api/feed, following next_cursor."""
    items, cursor = [], None
    for _ in range(100):
        url = base + "/api/feed?limit=50" + ("&cursor=" + urllib.parse.quote(cursor) if cursor else "")
        with urllib.request.urlopen(url, timeout=30) as r:
            page = json.load(r)
        items += page.get("resources", [])
        cursor = page.get("next_cursor")
        if not cursor:
            return items
    raise RuntimeError("the listing did not end after 100 pages")


class Run:
    def __init__(self, args, pw):
        self.args = args
        self.base = args.base.rstrip("/")
        self.items = fetch_listing(self.base)
        if not self.items:
            raise RuntimeError("the listing is empty")
        self.browser = pw.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--autoplay-policy=no-user-gesture-required"])
        self.results = []

    # --- helpers ---
    def page(self, hash_="", touch=False, before=None):
        """A new page at `hash_` (after `before(page)`, e.g. routes, when given), its page's `ready`."""
        ctx = self.browser.new_context(viewport=VIEWPORT, has_touch=touch)
        ctx.add_init_script(INIT_SCRIPT)
        page = ctx.new_page()
        if before:
            before(page)
        page.set_default_timeout(self.args.timeout * 1000)
        page.errors = []
        page.on("pageerror", lambda e: page.errors.append(str(e)))
        page.bad_media = []      # (status, path) of every /media/ answer that was not 2xx/304
        page.on("response", lambda r: page.bad_media.append((r.status, urllib.parse.urlsplit(r.url).path))
                if "/media/" in r.url and r.status >= 400 else None)
        page.goto(self.base + "/" + hash_)
        page.wait_for_function("window.videofeed && window.videofeed.ready")
        return page

    def state(self, page):
        return page.evaluate("""() => { const v = window.videofeed; return { index: v.index, position: v.position,
            publicId: v.publicId, cards: v.cards, attached: v.attached, lastSwipe: v.lastSwipe, errors: v.errors,
            window: v.window, hash: location.hash, socket: v.socket, rendition: v.rendition }; }""")

    def wait_index(self, page, index, what):
        try:
            page.wait_for_function("i => window.videofeed.index === i", arg=index, timeout=10000)
        except Exception:
            raise CheckFailed(f"{what}: index is {self.state(page)['index']}, wanted {index}; {self.moves(page)}")
        time.sleep(SETTLE_S)
        got = self.state(page)["index"]
        if got != index:
            raise CheckFailed(f"{what}: moved on to {got} after reaching {index} (more than one card); {self.moves(page)}")

    @staticmethod
    def moves(page):
        return "moves: " + ", ".join(f"{s['source']}→{s['index']}" for s in page.evaluate("window.videofeed.swipes"))

    def expect_still(self, page, index, what):
        time.sleep(SETTLE_S + 0.2)
        got = self.state(page)["index"]
        if got != index:
            raise CheckFailed(f"{what}: index went to {got}, wanted it to stay {index}")

    def wait_playing(self, page, item):
        """Waits until the active video has played enough; returns its facts."""
        want = min(0.8, 0.6 * float(item.get("duration") or 1))
        try:
            page.wait_for_function(f"""() => {{
                const s = ({JS_ACTIVE_VIDEO})();
                return s.failed || s.error != null || (s.played >= {want} && s.width > 0);
            }}""", timeout=self.args.timeout * 1000)
        except Exception:
            facts = page.evaluate(JS_ACTIVE_VIDEO)
            raise CheckFailed(f"did not play {want:.1f} s within {self.args.timeout:.0f} s: {facts}")
        facts = page.evaluate(JS_ACTIVE_VIDEO)
        errors = [e for e in page.evaluate("window.__test.mediaErrors") if e["publicId"] == item["public_id"]]
        if facts.get("failed") or facts.get("error") is not None or errors:
            message = page.evaluate("() => { const e = document.querySelector('.card.active .error .message'); return e ? e.textContent : ''; }")
            raise CheckFailed(f"media error: {message or errors or facts}")
        return facts

    def check(self, name, fn):
        if self.args.only and not any(name == o or name.startswith(o + ":") for o in self.args.only):
            return
        t = time.monotonic()
        try:
            detail = fn() or ""
            ok = True
        except CheckFailed as e:
            ok, detail = False, str(e)
        except Exception as e:  # a Playwright timeout or a broken page
            ok, detail = False, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        self.results.append((name, ok))
        print(f"{'PASS' if ok else 'FAIL'}  {name}  {detail}  ({time.monotonic() - t:.1f} s)", flush=True)

    def close(self, page):
        errors = page.errors
        page.context.close()
        if errors:
            raise CheckFailed(f"script errors: {errors[:3]}")

    # --- checks ---
    def load(self):
        page = self.page()
        first = self.items[0]
        try:
            page.wait_for_function("""() => { const img = document.querySelector('.card.active .poster');
                return img && img.complete && img.naturalWidth > 0; }""", timeout=15000)
        except Exception:
            if first.get("poster"):
                raise CheckFailed("the first card's poster did not load")
        s = self.state(page)
        src = page.evaluate("() => document.querySelector('.card.active .poster').getAttribute('src')")
        if s["index"] != 0 or s["publicId"] != first["public_id"]:
            raise CheckFailed(f"current is {s['index']} {s['publicId']}, wanted 0 {first['public_id']}")
        if first.get("poster") and src != first["poster"]:
            raise CheckFailed(f"poster src {src}, the listing says {first['poster']}")
        self.close(page)
        return f"poster {src} shown, {s['cards']} cards"

    def rendition_rule(self):
        """util.js pickAmong on every case of Fixtures/rendition-rule.json, the cases the server's rule
        (RenditionRule) is tested on: the page and the server pick the same rendition."""
        cases = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Fixtures",
                                            "rendition-rule.json")))["cases"]
        page = self.page()
        got = page.evaluate("""async (cases) => {
            const util = await import('/app/util.js');
            return cases.map(c => {
                const rs = c.renditions.map(([width, height, bandwidth]) => ({ width, height, bandwidth, codec: 'h264' }));
                const r = util.pickAmong(rs, c.box[0], c.box[1], c.bps);
                return r ? rs.indexOf(r) : null;
            });
        }""", cases)
        self.close(page)
        wrong = [f"{c['name']}: {g} (the server's: {c['expect']})" for c, g in zip(cases, got) if g != c["expect"]]
        if wrong:
            raise CheckFailed("; ".join(wrong))
        return f"{len(cases)} cases as the server picks them"

    def keys(self):
        page = self.page()
        moves = [("ArrowDown", 1), ("ArrowUp", 0), ("j", 1), ("j", 2), ("k", 1)]
        for key, want in moves:
            page.keyboard.press(key)
            self.wait_index(page, want, key)
        s = self.state(page)
        if f"i={s['index']}" not in s["hash"]:
            raise CheckFailed(f"the URL hash {s['hash']} does not say i={s['index']}")
        sw = s["lastSwipe"]
        if not sw or sw["source"] != "key" or sw["index"] != 1:
            raise CheckFailed(f"lastSwipe is {sw}")
        # The first frame after the last swipe (the item may be an error card: then go on to a playing one).
        page.wait_for_function("() => window.videofeed.lastSwipe.firstFrameMs != null || window.videofeed.errors.length",
                               timeout=15000)
        frames = page.evaluate("window.__test.firstFrames")
        sw = self.state(page)["lastSwipe"]
        if not frames:
            raise CheckFailed("no videofeed:firstframe event")
        self.close(page)
        return (f"5 moves of one card; last swipe first frame {sw['firstFrameMs']} ms, hit {sw['hit']}; "
                f"{len(frames)} firstframe events")

    def wheel(self):
        page = self.page()
        page.mouse.move(200, 360)
        # One trackpad flick: 10 wheel events 16 ms apart by their own timestamps (as the OS stamps them), however
        # late the busy page gets them; the page must count them as one gesture.
        cdp = page.context.new_cdp_session(page)
        t0 = time.time()
        for k in range(10):
            cdp.send("Input.dispatchMouseEvent", {"type": "mouseWheel", "x": 200, "y": 360, "deltaX": 0,
                                                  "deltaY": 40 - 3 * k, "timestamp": t0 + 0.016 * k})
            time.sleep(0.016)
        self.wait_index(page, 1, "a burst of 10 wheel events")
        page.mouse.wheel(0, -100)      # one mouse-wheel notch up (well after the burst: wait_index settled)
        self.wait_index(page, 0, "one wheel notch up")
        page.mouse.wheel(0, 100)
        self.wait_index(page, 1, "one wheel notch down")
        self.close(page)
        return "a 10-event burst moved one card, single notches one each"

    def touch(self):
        page = self.page(touch=True)
        cdp = page.context.new_cdp_session(page)

        def swipe(y0, y1, steps=8):
            cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": 200, "y": y0}]})
            for k in range(1, steps + 1):
                cdp.send("Input.dispatchTouchEvent",
                         {"type": "touchMove", "touchPoints": [{"x": 200, "y": y0 + (y1 - y0) * k / steps}]})
                time.sleep(0.012)
            cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})

        swipe(560, 200)
        self.wait_index(page, 1, "a swipe up")
        swipe(200, 560)
        self.wait_index(page, 0, "a swipe down")
        swipe(400, 395, steps=2)
        self.expect_still(page, 0, "a 5 px drag")
        s = self.state(page)
        if not s["lastSwipe"] or s["lastSwipe"]["source"] != "touch":
            raise CheckFailed(f"lastSwipe is {s['lastSwipe']}")
        self.close(page)
        return "swipe up → 1, swipe down → 0, a 5 px drag → no move"

    def scroll(self):
        if len(self.items) < 3:
            return "skipped: fewer than 3 items"
        page = self.page()
        page.evaluate("() => { const f = document.getElementById('feed'); f.scrollTo({ top: 2 * f.clientHeight }); }")
        self.wait_index(page, 2, "scrollTo the third card")
        self.close(page)
        return "a plain scroll to the third card made it current"

    def feed_through(self):
        """play:<id> for every item in turn, goes-on after an error card, then wrap at the end."""
        limit = 3 if len(self.items) > 3 else None   # page through the listing 3 items at a time
        try:
            page = self.page(f"?limit={limit}" if limit else "")
        except Exception as e:
            message = f"the page did not open: {e}"
            self.check("play", lambda: fail(message))
            return
        first_cards = self.state(page)["cards"]
        after_error = None                 # the error card just passed, if any
        for k, item in enumerate(self.items):
            def play_one(item=item, k=k):
                if k > 0:
                    page.keyboard.press("ArrowDown")
                    try:
                        page.wait_for_function("i => window.videofeed.index === i", arg=k, timeout=10000)
                    except Exception:
                        raise CheckFailed(f"ArrowDown did not reach index {k}")
                s = self.state(page)
                if s["publicId"] != item["public_id"]:
                    raise CheckFailed(f"index {k} shows {s['publicId']}")
                if item.get("error"):
                    return self.error_card(page, item)
                facts = self.wait_playing(page, item)
                self.expect_aspect(item, facts)
                s = self.state(page)
                sw = s["lastSwipe"]
                return (f"played {facts['played']:.2f} s of {facts['duration']:.2f} s, picture {facts['width']}x"
                        f"{facts['height']}, rendition {s['rendition']}"
                        + (f", first frame {sw['firstFrameMs']} ms after the key, hit {sw['hit']}" if sw else ""))
            self.check("play:" + item["public_id"], play_one)
            if after_error is not None:
                ok = self.results[-1][1] if self.results and self.results[-1][0] == "play:" + item["public_id"] else False
                def goes_on(prev=after_error, item=item, ok=ok):
                    if not ok:
                        raise CheckFailed(f"{item['public_id']} after the error card of {prev} did not play")
                    return f"after the error card of {prev}, ArrowDown played {item['public_id']}"
                self.check("goes-on", goes_on)
            after_error = item["public_id"] if item.get("error") else None

        def paging():
            s = self.state(page)
            if not limit:
                return "skipped: 3 items or fewer"
            if first_cards >= len(self.items) or s["cards"] < len(self.items):
                raise CheckFailed(f"{first_cards} cards after the first page of {limit}, {s['cards']} at the end")
            return (f"pages of {limit}: {first_cards} cards at first, {s['cards']} by the last item, "
                    f"in the listing's order")
        self.check("paging", paging)

        def wrap():
            n = len(self.items)
            page.keyboard.press("ArrowDown")
            self.wait_index(page, 0, "ArrowDown from the last item")
            s = self.state(page)
            if s["publicId"] != self.items[0]["public_id"] or s["position"] != n:
                raise CheckFailed(f"after the last item: {s['publicId']} at position {s['position']}")
            if not self.items[0].get("error"):
                self.wait_playing(page, self.items[0])
            w = page.evaluate("window.videofeed.pageWindow")
            most = w["ahead"] + w["behind"] + 1
            if s["attached"] > most:
                raise CheckFailed(f"{s['attached']} cards hold a MediaSource (at most {most}: current "
                                  f"+{w['ahead']}/-{w['behind']})")
            if "i=0" not in s["hash"]:
                raise CheckFailed(f"hash {s['hash']} after the wrap")
            return f"position {n} shows index 0 {s['publicId']} again and plays; {s['attached']} cards attached"
        self.check("wrap", wrap)

        def media():
            warnings = page.evaluate("window.videofeed.warnings")
            # The page lists cards before their manifest is made (pending) and shows their posters at once, so the
            # poster of an item that turns out broken is asked for; its refusal is that item's error, not a fault.
            broken = [it["public_id"] for it in self.items if it.get("error")]
            excused = [(st, path) for st, path in page.bad_media
                       if path.endswith("/poster.jpg") and 400 <= st < 500 and any(f"/{b}." in path for b in broken)]
            bad = [x for x in page.bad_media if x not in excused]
            if bad:
                raise CheckFailed(f"{len(bad)} media requests failed: "
                                  + "; ".join(f"HTTP {st} {path}" for st, path in bad[:4])
                                  + (f"; the page got round it: {warnings}" if warnings else ""))
            note = f"; {len(excused)} poster(s) of broken items refused" if excused else ""
            return ("every poster, init and segment the page asked for was served" + note
                    + (f"; warnings {warnings}" if warnings else ""))
        self.check("media", media)
        self.close(page)

    def error_card(self, page, item):
        try:
            page.wait_for_selector(".card.active.failed .error", state="visible", timeout=10000)
        except Exception:
            raise CheckFailed("no error card shown")
        text = page.inner_text(".card.active .error")
        if item["public_id"] not in text:
            raise CheckFailed(f"the error card does not name {item['public_id']}: {text!r}")
        message = page.inner_text(".card.active .error .message").strip()
        if not message:
            raise CheckFailed("the error card has no message")
        if item["public_id"] not in self.state(page)["errors"]:
            raise CheckFailed(f"window.videofeed.errors is {self.state(page)['errors']}")
        return f"error card: {message[:100]}"

    @staticmethod
    def expect_aspect(item, facts):
        w, h = item.get("width"), item.get("height")
        if not w or not h:
            return
        want, got = w / h, facts["width"] / facts["height"]
        if abs(got - want) / want > 0.03:
            raise CheckFailed(f"picture {facts['width']}x{facts['height']}, the listing says {w}x{h} (turned or stretched)")

    def controls(self):
        page = self.page()
        first = next((i for i, it in enumerate(self.items) if not it.get("error")), None)
        if first is None:
            return "skipped: no playable item"
        if first:
            page.goto(f"{self.base}/#i={first}")
            page.reload()
            page.wait_for_function("window.videofeed && window.videofeed.ready")
        self.wait_playing(page, self.items[first])
        if not page.evaluate(JS_ACTIVE_VIDEO)["muted"]:
            raise CheckFailed("the video did not start muted")
        page.click("#mute")
        page.wait_for_function(f"() => !({JS_ACTIVE_VIDEO})().muted", timeout=5000)
        page.keyboard.press("m")
        page.wait_for_function(f"() => ({JS_ACTIVE_VIDEO})().muted", timeout=5000)
        bar = "() => { const b = document.querySelector('.card.active .progress .bar'); " \
              "const m = /scaleX\\(([0-9.e-]+)\\)/.exec(b ? b.style.transform : ''); return m ? Number(m[1]) : -1; }"
        before = page.evaluate(bar)
        page.wait_for_function(f"x => ({bar})() !== x", arg=before, timeout=5000)
        page.mouse.click(200, 300)
        page.wait_for_function(f"() => ({JS_ACTIVE_VIDEO})().paused", timeout=5000)
        t = page.evaluate(JS_ACTIVE_VIDEO)["currentTime"]
        time.sleep(0.3)
        frames, held = page.evaluate("window.__test.frames"), page.evaluate(bar)
        time.sleep(0.5)
        if page.evaluate(JS_ACTIVE_VIDEO)["currentTime"] != t:
            raise CheckFailed("the paused video went on playing")
        idle = page.evaluate("window.__test.frames") - frames
        if idle > 2 or page.evaluate(bar) != held:
            raise CheckFailed(f"while paused the progress bar asked for {idle} animation frames in 0.5 s "
                              f"(moved from {held} to {page.evaluate(bar)})")
        page.mouse.click(200, 300)
        page.wait_for_function(f"() => !({JS_ACTIVE_VIDEO})().paused", timeout=5000)
        page.wait_for_function(f"x => ({bar})() !== x", arg=held, timeout=5000)
        self.close(page)
        return (f"mute button and m toggle sound; a click pauses, a second resumes; the progress bar moves while "
                f"playing and is still, with {idle} animation frames in 0.5 s, while paused")

    def reload(self):
        n = len(self.items)
        k = min(3, n - 1)
        page = self.page()
        for _ in range(k):
            page.keyboard.press("ArrowDown")
        self.wait_index(page, k, f"{k} × ArrowDown")
        want = self.items[k]["public_id"]
        page.reload()
        page.wait_for_function("window.videofeed && window.videofeed.ready")
        s = self.state(page)
        if s["index"] != k or s["publicId"] != want:
            raise CheckFailed(f"after reload at {s['hash']}: {s['index']} {s['publicId']}, wanted {k} {want}")
        j = min(5, n - 1)
        by_id = self.items[j]["public_id"]
        page.goto(f"{self.base}/#item={urllib.parse.quote(by_id, safe='/')}")
        page.reload()
        page.wait_for_function("window.videofeed && window.videofeed.ready")
        s2 = self.state(page)
        if s2["publicId"] != by_id or s2["index"] != j:
            raise CheckFailed(f"#item={by_id} opened {s2['index']} {s2['publicId']}")
        page.goto(f"{self.base}/#i={n - 1}")
        page.reload()
        page.wait_for_function("window.videofeed && window.videofeed.ready")
        s3 = self.state(page)
        if s3["index"] != n - 1:
            raise CheckFailed(f"#i={n - 1} opened {s3['index']}")
        self.close(page)
        return f"reload resumed at {k} {want}; #item= opened {j}, #i={n - 1} opened {n - 1}"

    def start(self):
        page = self.page()
        page.wait_for_function("window.videofeed.attached >= 3 && "
                               "document.querySelectorAll('.card.has-frame, .card.ready').length >= 3")
        page.evaluate("window.__test.videosAdded = []; window.__test.firstFrames = []")
        page.keyboard.press("ArrowDown")
        self.wait_index(page, 1, "ArrowDown")
        page.wait_for_function("window.__test.firstFrames.length >= 1 && window.__test.videosAdded.length >= 1",
                               timeout=10000)
        frame = page.evaluate("window.__test.firstFrames[0]")
        added = page.evaluate("window.__test.videosAdded[0]")
        if not self.state(page)["lastSwipe"].get("hit"):
            raise CheckFailed("the swipe to item 1 was not a hit")
        if added["t"] < frame["t"]:
            raise CheckFailed(f"the <video> of {added['publicId']} was added {frame['t'] - added['t']:.1f} ms before "
                              f"the new card's first frame ({frame['ms']} ms after the key)")
        self.close(page)
        return (f"first frame {frame['ms']} ms after the key; {added['publicId']}'s <video> added "
                f"{added['t'] - frame['t']:.1f} ms after it")

    def held(self):
        page = self.page()
        video = "document.querySelector('.card[data-pos=\"' + {} + '\"] video')"
        holds = ("(() => {{ const v = " + video + "; return !!v && v.readyState === 1 && v.buffered.length === 0 && "
                 "v.closest('.card').classList.contains('ready'); }})()")
        reported = []
        for pos, key in ((1, "ArrowDown"), (0, "ArrowUp")):
            page.wait_for_function(holds.format(pos), timeout=10000)
            page.evaluate("window.__test.firstFrames = []")
            page.keyboard.press(key)
            self.wait_index(page, pos, key)
            page.wait_for_function("window.__test.firstFrames.length >= 1", timeout=10000)
            frame = page.evaluate("window.__test.firstFrames[0]")
            start = page.evaluate("(() => { const v = " + video.format(pos) + "; return v.buffered.start(0); })()")
            if frame.get("mediaTime") is None or abs(frame["mediaTime"] - start) > 0.001:
                raise CheckFailed(f"{key} to {pos}: the first frame reported is at {frame.get('mediaTime')} s, the "
                                  f"rendition's first at {start:.3f} s ({frame['ms']} ms after the key)")
            reported.append(f"{key} {frame['ms']} ms")
        self.close(page)
        return "first frame reported is the rendition's first: " + ", ".join(reported)

    def jump(self):
        n = len(self.items)
        if n < 8:
            raise CheckFailed(f"needs a feed of at least 8 items (pages of 3), this one has {n}")
        page = self.page("?limit=3")
        page.wait_for_function("window.videofeed.attached >= 3 && window.videofeed.cards === 6")
        page.evaluate("window.__test.listings = []")
        target = n - 1
        page.evaluate(f"location.hash = '#i={target}'")
        self.wait_index(page, target, f"#i={target}")
        sent = page.evaluate("window.__test.listings")
        first = next((x for x in sent if "cursor=6" in x["url"]), None)
        if first is None:
            raise CheckFailed(f"no listing request for cursor=6 after #i={target}: {sent}")
        if first["videos"] > 1 or first["posters"] > 1:
            raise CheckFailed(f"the listing request went out with {first['videos']} <video>s and "
                              f"{first['posters']} posters held (only the current card's may be)")
        page.wait_for_function(f"() => !({JS_ACTIVE_VIDEO})().paused", timeout=self.args.timeout * 1000)
        page.wait_for_function("window.videofeed.attached >= 3", timeout=self.args.timeout * 1000)
        self.close(page)
        return (f"#i={target}: listing page asked for with {first['videos']} <video> and {first['posters']} poster "
                "held; the item plays, its neighbours attached again")

    def abandon(self):
        """A card the page lets go takes its fill (the one-card listing request that makes its manifest) with it;
        the current card's fill stays. The server is made slow here: every card but the first is listed pending,
        and the one-card requests are held unanswered, as a cold server holds them while it makes manifests."""
        n = len(self.items)
        if n < 8:
            raise CheckFailed(f"needs a feed of at least 8 items, this one has {n}")
        held = []

        def listing(route):
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(route.request.url).query)
            if "item" in query:
                held.append(route)      # a card asked for whole: not answered while the check runs, the page must let it go
                return
            response = route.fetch()
            page_json = response.json()
            for card in page_json.get("resources", []):
                if card.get("index", 0) != 0:
                    card["pending"] = True
                    card.pop("renditions", None)
            route.fulfill(response=response, json=page_json)

        listings = re.compile(r"/api/feed\?")
        page = self.page(before=lambda p: p.route(listings, listing))
        try:
            return self.abandon_on(page, n, held)
        finally:
            # Also when the check failed: the held requests are answered (failed), then the page goes.
            for route in held:
                try:
                    route.abort()
                except Exception:
                    pass        # the page's abort already ended it
            page.unroute(listings)
            page.context.close()

    def abandon_on(self, page, n, held):
        # The neighbours of item 0 ask for their cards whole (GET /api/feed?item=<public_id>).
        fills = "ids => u => ids.some(id => u.endsWith('item=' + encodeURIComponent(id)))"
        neighbours = [self.items[1]["public_id"], self.items[2]["public_id"]]
        page.wait_for_function(f"ids => window.__test.listings.filter(x => ({fills})(ids)(x.url)).length >= 2",
                               arg=neighbours, timeout=self.args.timeout * 1000)
        target = n - 1
        page.evaluate(f"location.hash = '#i={target}'")
        self.wait_index(page, target, f"#i={target}")
        try:
            page.wait_for_function(f"ids => window.__test.aborted.filter(({fills})(ids)).length >= 2",
                                   arg=neighbours, timeout=10000)
        except Exception:
            raise CheckFailed(f"the fills of items 1 and 2 were not aborted after #i={target}: aborted "
                              f"{page.evaluate('window.__test.aborted')}, held {[r.request.url for r in held]}")
        aborted = page.evaluate("window.__test.aborted")
        if any(u.endswith("item=" + urllib.parse.quote(self.items[target]["public_id"], safe="")) for u in aborted):
            raise CheckFailed(f"the current card's fill (item {target}) was aborted: {aborted}")
        if page.errors:
            raise CheckFailed(f"script errors: {page.errors[:3]}")
        short = sorted({u.rsplit("?", 1)[1] for u in aborted})
        return f"after #i={target} the page aborted {', '.join(short)}; the current card's fill stayed"

    def overlay(self):
        page = self.page()
        page.keyboard.press("ArrowDown")
        self.wait_index(page, 1, "ArrowDown")
        page.keyboard.press("d")
        page.wait_for_selector("#debug", state="visible", timeout=5000)
        try:
            page.wait_for_function("() => window.videofeed.window && window.videofeed.window.current === 1",
                                   timeout=15000)
        except Exception:
            raise CheckFailed(f"no window from the server for index 1 (WebSocket {self.state(page)['socket']}); "
                              f"overlay says {page.inner_text('#debug')!r}")
        page.wait_for_function("() => window.videofeed.lastSwipe.firstFrameMs != null || window.videofeed.errors.length",
                               timeout=15000)
        time.sleep(0.3)
        text = page.inner_text("#debug")
        w = self.state(page)["window"]
        states = [f"{i['index']}" for i in w["items"]]
        if not all(s in text for s in states) or "window" not in text or not any(
                st in text for st in ("ready", "working", "queued", "failed", "pending")):
            raise CheckFailed(f"the overlay does not show the window {w}: {text!r}")
        if "first frame" not in text:
            raise CheckFailed(f"the overlay has no first-frame time: {text!r}")
        page.keyboard.press("d")
        page.wait_for_selector("#debug", state="hidden", timeout=5000)
        self.close(page)
        line = next((l for l in text.splitlines() if l.startswith("window")), "")
        return f"overlay: {line.strip()}"

    def page_window(self):
        name = self.args.policy
        m = re.fullmatch(r"forward(\d+)", name)
        expected = (int(m.group(1)), 0, int(m.group(1)) + 1) if m else PAGE_WINDOWS.get(name)
        if expected is None:
            raise CheckFailed(f"no page window known for policy {name!r} (PAGE_WINDOWS)")
        ahead, behind, posters = expected
        # Without the server's word (a WebSocket that never answers), the default policy's window.
        quiet = self.page(before=lambda p: p.route_web_socket("**/api/ws", lambda ws: None))
        fallback = quiet.evaluate("[window.videofeed.pageWindow, window.videofeed.policy]")
        self.close(quiet)
        if fallback != [{"ahead": 2, "behind": 2, "posters": 3}, None]:
            raise CheckFailed(f"with no word from the server the page keeps {fallback}, not the default +2/-2 ±3")
        page = self.page()
        try:
            page.wait_for_function("n => window.videofeed.policy === n", arg=name, timeout=15000)
        except Exception:
            raise CheckFailed(f"the page was not told policy {name!r}: policy {page.evaluate('window.videofeed.policy')!r}"
                              f", WebSocket {self.state(page)['socket']}")
        got = page.evaluate("window.videofeed.pageWindow")
        if (got["ahead"], got["behind"], got["posters"]) != expected:
            raise CheckFailed(f"policy {name}: page window {got}, wanted ahead {ahead}, behind {behind}, "
                              f"posters {posters}")
        # One card past `behind` into the feed: a card behind the window is there to be let go.
        c = behind + 1
        if len(self.items) < c + ahead + 2:
            raise CheckFailed(f"needs a feed of at least {c + ahead + 2} items, this one has {len(self.items)}")
        for k in range(1, c + 1):
            page.keyboard.press("ArrowDown")
            self.wait_index(page, k, f"ArrowDown to {k}")
        cards_js = '''() => Array.from(document.querySelectorAll('.card')).map(el => ({ pos: +el.dataset.pos,
            video: !!el.querySelector('video'), poster: !!el.querySelector('img.poster[src]'),
            failed: el.classList.contains('failed') || el.classList.contains('gone') }))'''

        def attached_now():
            cards = page.evaluate(cards_js)
            want = sorted(x["pos"] for x in cards if c - behind <= x["pos"] <= c + ahead and not x["failed"])
            have = sorted(x["pos"] for x in cards if x["video"])
            return cards, want, have
        deadline = time.monotonic() + self.args.timeout
        while True:
            cards, want, have = attached_now()
            if want == have or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        time.sleep(1.0)             # and it stays so
        cards, want, have = attached_now()
        if want != have:
            raise CheckFailed(f"policy {name} at position {c}: cards {have} hold a <video>, wanted {want}")
        count = page.evaluate("window.videofeed.attached")
        if count != len(want):
            raise CheckFailed(f"window.videofeed.attached is {count}, {len(want)} cards hold a <video>")
        far = [x["pos"] for x in cards if x["poster"] and abs(x["pos"] - c) > posters]
        missing = [x["pos"] for x in cards if not x["poster"] and not x["failed"] and abs(x["pos"] - c) <= posters]
        if far or missing:
            raise CheckFailed(f"posters past ±{posters} of {c}: {far}; missing within: {missing}")
        self.close(page)
        return (f"policy {name}: page window +{ahead}/-{behind} posters ±{posters}; at position {c} cards {have} "
                f"attached; no word from the server: the default's +2/-2 ±3")

    def screenshot(self, path):
        first = next((i for i, it in enumerate(self.items) if not it.get("error")), 0)
        page = self.page(f"#i={first}")
        self.wait_playing(page, self.items[first])
        time.sleep(0.4)
        page.screenshot(path=path)
        page.context.close()
        print(f"screenshot of {self.items[first]['public_id']} playing: {path}")

    def run(self):
        self.check("load", self.load)
        self.check("rendition-rule", self.rendition_rule)
        self.check("keys", self.keys)
        self.check("wheel", self.wheel)
        self.check("touch", self.touch)
        self.check("scroll", self.scroll)
        group = ("play", "goes-on", "paging", "wrap", "media")      # one walk through the feed: all or none of them
        if not self.args.only or any(o.startswith(group) for o in self.args.only):
            only, self.args.only = self.args.only, None
            try:
                self.feed_through()
            finally:
                self.args.only = only
        self.check("controls", self.controls)
        self.check("reload", self.reload)
        self.check("start", self.start)
        self.check("held", self.held)
        self.check("jump", self.jump)
        self.check("abandon", self.abandon)
        self.check("overlay", self.overlay)
        self.check("window", self.page_window)
        if self.args.screenshot:
            self.screenshot(self.args.screenshot)
        self.browser.close()
        failed = [n for n, ok in self.results if not ok]
        print(f"{len(self.results) - len(failed)}/{len(self.results)} checks passed"
              + (f"; failed: {', '.join(failed)}" if failed else ""))
        return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", help="the server, e.g. http://127.0.0.1:8090")
    parser.add_argument("--only", type=lambda s: s.split(","), default=None,
                        help="comma-separated check names (play, play:<public_id>, wrap, ...)")
    parser.add_argument("--timeout", type=float, default=45, help="seconds an item may take to play (default 45)")
    parser.add_argument("--screenshot", metavar="PATH", help="save a screenshot of a card playing")
    parser.add_argument("--policy", default="staged",
                        help="the --policy the server runs (the `window` check's expected page window; default staged)")
    args = parser.parse_args()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("serve-browser-test: Playwright is missing (pip install playwright)", file=sys.stderr)
        return 2
    if not os.path.exists(CHROMIUM):
        print(f"serve-browser-test: {CHROMIUM} not found (apt-get install chromium)", file=sys.stderr)
        return 2
    with sync_playwright() as pw:
        try:
            run = Run(args, pw)
        except Exception as e:
            print(f"serve-browser-test: cannot start: {e}", file=sys.stderr)
            return 2
        return run.run()


if __name__ == "__main__":
    sys.exit(main())
