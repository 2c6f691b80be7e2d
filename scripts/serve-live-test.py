#!/usr/bin/env python3
"""Browser tests of the `videofeed serve` page on a live feed (issue 38), in headless Chromium through Playwright.

Usage: python3 scripts/serve-live-test.py [--only NAME[,NAME]] [--clip PATH] [--timeout S] BASE_URL FOLDER

BASE_URL is a running `videofeed serve FOLDER`; FOLDER is the folder it serves, which this test changes: it adds
copies of --clip (default Fixtures/media/h264_portrait.mp4; each copied to a hidden name in FOLDER, given a
modification time newer than every file there, then renamed, so the server sees it whole and lists it first) and
removes files. scripts/serve-live-test.sh makes such a folder from Fixtures/media and runs this against it.
The folder needs at least 6 items when the test starts.

Checks (one line each, PASS or FAIL with the detail):
  load     the page loads with no script error; the server's `feed` message reaches it (window.videofeed.generation
           is a number) and the "New videos" pill is hidden (window.videofeed.newItems false)
  newer    on the second card, a clip added to the folder shows the pill (a visible button named "New videos")
           within 10 s, while the viewer's position and item never change; a tap on it shows position 0, the new
           item, which the listing lists first, and it plays (its first frame is reported, its playhead moves);
           the pill goes
  removed  the file of an item two cards ahead (attached, its first segment held) is removed: within 10 s its card
           goes from the page without the viewer moving, and swiping through the whole feed never shows it; no
           error card is shown (window.videofeed.errors), and the listing no longer has it
  gone     with the server's `feed` messages held back from the page (a routed WebSocket) and the browser's cache
           off (routed media), the file of the item playing on screen is removed: swiping on and back, its media answers
           410 and the card shows the calm "This video was removed" card (not the error card:
           window.videofeed.errors stays empty, window.videofeed.removed names it), and swiping on plays the next
  replaced with the browser's cache off, the file of the item playing on screen is replaced (another file under
           its name, newer than every other): swiping on and back, its old media answers 410 and the card asks for
           the item again and plays its new version (another poster URL, the one the listing gives now), neither a
           removed card nor an error; the item, now the newest, brings the "New videos" pill
  paging   pages of 2 (?limit=2): while the viewer goes through the feed a clip is added (every index moves up one)
           and, later, an item the viewer passed is removed (every index after it moves down one); no public_id is
           shown twice and, compared with /api/feed read whole at the end, none is skipped and the order is the
           listing's (the added item is above where the viewer started; the removed one was shown before it went);
           no listing page the page read names an item an earlier one did (the cursor, not the page, keeps them
           apart)
  pull     in a touch context on the first card: a short pull (50 px) does not refresh; after a clip is added and the
           pill shows, a pull of 300 px shows the pull hint while the finger is down and, released, reloads the
           listing and shows the new item at position 0, playing; a swipe down on the second card moves back to
           the first without a refresh

Chromium is /usr/bin/chromium (Debian's package; $CHROMIUM overrides) with --autoplay-policy=no-user-gesture-required,
--no-sandbox when run as root. Exit status: 0 all passed, 1 some failed (each failure says why), 2 could not run.
"""

import argparse
import json
import os
import shutil
import sys
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
VIEWPORT = {"width": 405, "height": 720}
NOTICE_S = 10           # a change of the folder must reach the page within this
# Cards attached on each side of the current one: the page's window (window.videofeed.pageWindow), which the server's
# --policy sets (serve.md, "The page's window"); read from the page once its server has said it (attached_behind()).
SETTLE_S = 0.6          # after a move, the position must stay put this long (exactly one card)

# Runs in the page before its scripts: media `error` events, `videofeed:firstframe` events, and a sample of the
# viewer's position every 50 ms (to prove it never moved while the feed changed).
INIT_SCRIPT = """
window.__test = { mediaErrors: [], firstFrames: [], samples: [] };
addEventListener('error', e => {
  const t = e.target;
  if (t instanceof HTMLMediaElement) {
    const card = t.closest('.card');
    window.__test.mediaErrors.push({ publicId: card ? card.dataset.publicId : null,
      code: t.error ? t.error.code : null, message: t.error ? t.error.message : '' });
  }
}, true);
addEventListener('videofeed:firstframe', e => window.__test.firstFrames.push({ ...e.detail, t: performance.now() }));
window.__test.sampling = false;
setInterval(() => {
  const v = window.videofeed;
  if (!window.__test.sampling || !v) return;
  const f = document.getElementById('feed');
  window.__test.samples.push({ position: v.position, publicId: v.publicId, scrollTop: f ? f.scrollTop : null });
}, 50);
"""

STATE = """() => { const v = window.videofeed; return { ready: v.ready, index: v.index, position: v.position,
    publicId: v.publicId, cards: v.cards, total: v.total, generation: v.generation, newItems: v.newItems,
    errors: v.errors, removed: v.removed, refreshes: v.refreshes, socket: v.socket, lastSwipe: v.lastSwipe }; }"""

# The current card's <video>: how much of it has played.
ACTIVE_VIDEO = """() => {
  const card = document.querySelector('.card.active');
  const v = card && card.querySelector('video');
  if (!v) return { card: !!card, failed: !!card && card.classList.contains('failed'),
                   gone: !!card && card.classList.contains('gone') };
  let played = 0;
  for (let i = 0; i < v.played.length; i++) played += v.played.end(i) - v.played.start(i);
  return { card: true, failed: card.classList.contains('failed'), gone: card.classList.contains('gone'), played,
           currentTime: v.currentTime, paused: v.paused, width: v.videoWidth };
}"""


class CheckFailed(Exception):
    pass


def fetch_listing(base):
    """Every item of /api/feed, following next_cursor (the cursor is opaque: passed back as given)."""
    items, cursor, seen = [], None, set()
    for _ in range(200):
        url = (base + "/api/feed?limit=50&pending=1"
               + ("&cursor=" + urllib.parse.quote(cursor, safe="") if cursor else ""))
        with urllib.request.urlopen(url, timeout=30) as r:
            page = json.load(r)
        for item in page.get("resources", []):
            if item["public_id"] in seen:
                raise CheckFailed(f"the listing read whole names {item['public_id']} twice")
            seen.add(item["public_id"])
            items.append(item)
        cursor = page.get("next_cursor")
        if not cursor:
            return items
    raise CheckFailed("the listing did not end after 200 pages")


class Folder:
    """The served folder: files by public_id, clips added, files removed."""

    def __init__(self, path, clip):
        self.path = os.path.abspath(path)
        self.clip = clip
        self.added = 0

    def file_of(self, public_id):
        """The file whose path relative to the folder, less its extension, is `public_id`."""
        folder, stem = os.path.split(os.path.join(self.path, public_id))
        for name in sorted(os.listdir(folder)):
            if not name.startswith(".") and os.path.splitext(name)[0] == stem:
                return os.path.join(folder, name)
        raise CheckFailed(f"no file in {self.path} for {public_id}")

    def add(self):
        """A copy of the clip, complete when it appears (a hidden name, then a rename) and newer than every file
        there; returns its public_id."""
        self.added += 1
        stem = f"live_{os.getpid()}_{int(time.time())}_{self.added}"
        self.put(os.path.join(self.path, stem + os.path.splitext(self.clip)[1]))
        return stem

    def replace(self, public_id):
        """The clip's bytes under the item's file name, complete when they appear and newer than every file."""
        self.put(self.file_of(public_id))

    def put(self, path):
        self.added += 1
        temp = os.path.join(self.path, f".live_{os.getpid()}_{self.added}.part")
        shutil.copy(self.clip, temp)
        newest = max([os.stat(os.path.join(dp, f)).st_mtime for dp, _, fs in os.walk(self.path) for f in fs
                      if not f.startswith(".")] or [0])
        stamp = max(time.time(), newest + 1)
        os.utime(temp, (stamp, stamp))
        os.rename(temp, path)

    def remove(self, public_id):
        os.remove(self.file_of(public_id))


class Run:
    def __init__(self, args, pw):
        self.args = args
        self.base = args.base.rstrip("/")
        self.folder = Folder(args.folder, args.clip)
        items = fetch_listing(self.base)
        if len(items) < 6:
            raise RuntimeError(f"the feed has {len(items)} items; the test needs at least 6")
        sandbox = ["--no-sandbox"] if os.geteuid() == 0 else []
        self.browser = pw.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=sandbox + ["--autoplay-policy=no-user-gesture-required"])
        self.results = []

    # --- helpers ---
    def page(self, query="", touch=False, before=None):
        ctx = self.browser.new_context(viewport=VIEWPORT, has_touch=touch)
        ctx.add_init_script(INIT_SCRIPT)
        page = ctx.new_page()
        if before:
            before(page)
        page.set_default_timeout(self.args.timeout * 1000)
        page.errors = []
        page.on("pageerror", lambda e: page.errors.append(str(e)))
        page.goto(self.base + "/" + query)
        page.wait_for_function("window.videofeed && window.videofeed.ready")
        # The server's `feed` message (sent when the socket opens) has reached the page.
        try:
            page.wait_for_function("Number.isInteger(window.videofeed.generation)", timeout=NOTICE_S * 1000)
        except Exception:
            raise CheckFailed(f"no generation from the server within {NOTICE_S} s: {self.state(page)}")
        return page

    @staticmethod
    def state(page):
        return page.evaluate(STATE)

    def close(self, page):
        errors = page.errors
        page.context.close()
        if errors:
            raise CheckFailed(f"script errors: {errors[:3]}")

    def attached_behind(self, page):
        """The cards the page keeps attached behind the current one (its window's `behind`), once the server's
        `policy` message said the window (else the page's default)."""
        try:
            page.wait_for_function("window.videofeed.policy !== null", timeout=NOTICE_S * 1000)
        except Exception:
            raise CheckFailed(f"the server's policy did not reach the page within {NOTICE_S} s")
        return page.evaluate("window.videofeed.pageWindow.behind")

    def move(self, page, key="ArrowDown"):
        """One key press; waits until the position has moved by one and stays there; returns the state."""
        before = self.state(page)["position"]
        want = before + (1 if key == "ArrowDown" else -1)
        page.keyboard.press(key)
        try:
            page.wait_for_function("p => window.videofeed.position === p", arg=want, timeout=self.args.timeout * 1000)
        except Exception:
            raise CheckFailed(f"{key} from position {before} did not reach {want}: {self.state(page)}")
        time.sleep(SETTLE_S)
        s = self.state(page)
        if s["position"] != want:
            raise CheckFailed(f"{key} from position {before} went on to {s['position']} (more than one card)")
        return s

    def sampling(self, page, on):
        page.evaluate(f"window.__test.sampling = {'true' if on else 'false'}; "
                      + ("window.__test.samples = [];" if on else ""))

    def still(self, page, position, public_id, what):
        """The viewer's position, item and scroll offset never changed while sampled."""
        samples = page.evaluate("window.__test.samples")
        moved = [s for s in samples if s["position"] != position or s["publicId"] != public_id]
        if moved:
            raise CheckFailed(f"{what}: the viewer moved from {position} {public_id} to {moved[0]['position']} "
                              f"{moved[0]['publicId']}")
        tops = {round(s["scrollTop"]) for s in samples if s["scrollTop"] is not None}
        if len(tops) > 1:
            raise CheckFailed(f"{what}: the feed scrolled under the viewer ({sorted(tops)})")
        return len(samples)

    def wait_new_items(self, page, what):
        try:
            page.wait_for_function("window.videofeed.newItems === true", timeout=NOTICE_S * 1000)
        except Exception:
            raise CheckFailed(f"{what}: no 'New videos' within {NOTICE_S} s: {self.state(page)}")

    def wait_plays(self, page, public_id, what):
        """The current card is `public_id`, reports its first frame and its playhead moves."""
        try:
            page.wait_for_function("id => window.__test.firstFrames.some(f => f.publicId === id)", arg=public_id,
                                   timeout=self.args.timeout * 1000)
            page.wait_for_function(f"() => {{ const s = ({ACTIVE_VIDEO})(); return s.played >= 0.3 && s.width > 0; }}",
                                   timeout=self.args.timeout * 1000)
        except Exception:
            raise CheckFailed(f"{what}: {public_id} did not play: {page.evaluate(ACTIVE_VIDEO)}, "
                              f"{self.state(page)}, media errors {page.evaluate('window.__test.mediaErrors')}")
        frame = next(f for f in page.evaluate("window.__test.firstFrames") if f["publicId"] == public_id)
        return frame

    def check(self, name, fn):
        if self.args.only and name not in self.args.only:
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

    # --- checks ---
    def load(self):
        page = self.page()
        s = self.state(page)
        first = fetch_listing(self.base)[0]["public_id"]
        if s["publicId"] != first or s["position"] != 0:
            raise CheckFailed(f"the page shows {s['position']} {s['publicId']}, the listing starts with {first}")
        time.sleep(1)
        s = self.state(page)
        if s["newItems"]:
            raise CheckFailed("the 'New videos' pill shows on a feed that did not change")
        if page.is_visible("#newer"):
            raise CheckFailed("#newer is visible while window.videofeed.newItems is false")
        self.close(page)
        return f"generation {s['generation']}, total {s['total']}, no pill"

    def newer(self):
        page = self.page()
        s = self.move(page)
        position, public_id = s["position"], s["publicId"]
        self.sampling(page, True)
        added = self.folder.add()
        self.wait_new_items(page, f"{added} added")
        time.sleep(0.5)          # the viewer must stay put after the pill shows too
        self.sampling(page, False)
        n = self.still(page, position, public_id, "while the pill came")
        pill = page.get_by_role("button", name="New videos")
        if not pill.is_visible():
            raise CheckFailed("window.videofeed.newItems is true but no visible button named 'New videos'")
        box = pill.bounding_box()
        if not box or box["y"] > VIEWPORT["height"] / 4:
            raise CheckFailed(f"the pill is not at the top: {box}")
        page.evaluate("window.__test.firstFrames = []")
        pill.click()
        try:
            page.wait_for_function("id => window.videofeed.position === 0 && window.videofeed.publicId === id",
                                   arg=added, timeout=self.args.timeout * 1000)
        except Exception:
            raise CheckFailed(f"after the tap the page shows {self.state(page)}, not 0 {added}")
        first = fetch_listing(self.base)[0]["public_id"]
        if first != added:
            raise CheckFailed(f"the listing starts with {first}, not the added {added}")
        frame = self.wait_plays(page, added, "after the tap")
        s = self.state(page)
        if s["newItems"] or page.is_visible("#newer"):
            raise CheckFailed("the pill stayed after the tap")
        self.close(page)
        return (f"{added}: pill within {NOTICE_S} s, viewer still at {position} {public_id} ({n} samples); "
                f"the tap showed it at 0, first frame {frame['ms']} ms after the tap")

    def removed(self):
        page = self.page()
        page.wait_for_function("window.videofeed.attached >= 3", timeout=self.args.timeout * 1000)
        s = self.state(page)
        cards = page.evaluate("[...document.querySelectorAll('.card')].map(c => c.dataset.publicId)")
        victim = cards[2]
        generation = s["generation"]
        self.sampling(page, True)
        self.folder.remove(victim)
        try:
            page.wait_for_function("""([id, g]) => window.videofeed.generation > g &&
                ![...document.querySelectorAll('.card')].some(c => c.dataset.publicId === id)""",
                                   arg=[victim, generation], timeout=NOTICE_S * 1000)
        except Exception:
            raise CheckFailed(f"{victim} removed: its card is still in the page after {NOTICE_S} s "
                              f"(generation {self.state(page)['generation']}, was {generation})")
        self.sampling(page, False)
        self.still(page, s["position"], s["publicId"], "while the card went")
        seen = [s["publicId"]]
        start = s["publicId"]
        for _ in range(60):
            s = self.move(page)
            if s["publicId"] == start:
                break
            seen.append(s["publicId"])
        else:
            raise CheckFailed(f"did not come round to {start} in 60 swipes")
        if victim in seen:
            raise CheckFailed(f"swiping showed the removed {victim}: {seen}")
        s = self.state(page)
        if s["errors"]:
            raise CheckFailed(f"error cards shown: {s['errors']}")
        listing = [it["public_id"] for it in fetch_listing(self.base)]
        if victim in listing:
            raise CheckFailed(f"the listing still has {victim}")
        missing = [p for p in listing if p not in seen]
        if missing:
            raise CheckFailed(f"swiping round the feed did not show {missing}")
        self.close(page)
        return f"{victim} (2 ahead) went within {NOTICE_S} s without a move; {len(seen)} items swiped round, not it"

    def gone(self):
        held = []

        def socket(ws):
            server = ws.connect_to_server()

            def down(message):
                try:
                    kind = json.loads(message).get("type")
                except Exception:
                    kind = None
                if kind == "feed":
                    held.append(message)
                else:
                    ws.send(message)
            server.on_message(down)
            ws.on_message(lambda message: server.send(message))

        def before(page):
            page.route_web_socket("**/api/ws", socket)
            page.route("**/media/**", lambda route: route.continue_())     # routed: no HTTP cache

        page = self.page(before=before)
        s = self.move(page)
        victim = s["publicId"]
        self.wait_plays(page, victim, "before its file went")
        self.folder.remove(victim)
        # Past the attached window and back: a card still attached holds its segments (a short clip loops from its
        # buffer and asks for nothing); one detached and attached again must ask for its media.
        away = self.attached_behind(page) + 1
        for _ in range(away):
            self.move(page)
        for _ in range(away):
            s = self.move(page, "ArrowUp")
        if s["publicId"] != victim:
            raise CheckFailed(f"back up shows {s['publicId']}, not {victim}")
        try:
            page.wait_for_selector(".card.active.gone .removed", state="visible", timeout=self.args.timeout * 1000)
        except Exception:
            raise CheckFailed(f"no removed card for {victim}: {page.evaluate(ACTIVE_VIDEO)}, {self.state(page)}")
        text = page.inner_text(".card.active .removed")
        if "This video was removed" not in text:
            raise CheckFailed(f"the removed card says {text!r}")
        if page.is_visible(".card.active .error"):
            raise CheckFailed("the error card shows too")
        s = self.state(page)
        if s["errors"]:
            raise CheckFailed(f"window.videofeed.errors counts it: {s['errors']}")
        if victim not in s["removed"]:
            raise CheckFailed(f"window.videofeed.removed is {s['removed']}")
        s = self.move(page)
        self.wait_plays(page, s["publicId"], "the next item after the removed card")
        self.close(page)
        return (f"{victim}: 'This video was removed' from its media's 410 ({len(held)} feed messages held back), "
                f"not an error; then {s['publicId']} played")

    def replaced(self):
        page = self.page(before=lambda p: p.route("**/media/**", lambda route: route.continue_()))
        s = self.move(page)
        victim = s["publicId"]
        self.wait_plays(page, victim, "before its file was replaced")
        poster = "() => document.querySelector('.card.active .poster').getAttribute('src')"
        old = page.evaluate(poster)
        self.folder.replace(victim)
        self.wait_new_items(page, f"{victim} replaced")
        self.move(page)
        page.evaluate("window.__test.firstFrames = []")
        s = self.move(page, "ArrowUp")
        if s["publicId"] != victim:
            raise CheckFailed(f"back up shows {s['publicId']}, not {victim}")
        now = next((it for it in fetch_listing(self.base) if it["public_id"] == victim), None)
        if not now or not now.get("poster") or now["poster"] == old:
            raise CheckFailed(f"the listing does not give {victim} a new version: {now}")
        try:
            page.wait_for_function(f"p => ({poster})() === p", arg=now["poster"], timeout=self.args.timeout * 1000)
        except Exception:
            raise CheckFailed(f"the card still shows {page.evaluate(poster)}, the listing's new version is "
                              f"{now['poster']}: {page.evaluate(ACTIVE_VIDEO)}, {self.state(page)}")
        self.wait_plays(page, victim, "its new version")
        s = self.state(page)
        if s["errors"] or s["removed"] or page.is_visible(".card.active .removed"):
            raise CheckFailed(f"errors {s['errors']}, removed {s['removed']} after the replacement")
        self.close(page)
        return f"{victim}: {old} → {now['poster']} on the same card, playing; the pill came"

    def paging(self):
        pages = []

        def listed(response):
            if "/api/feed?" in response.url and "item=" not in response.url and response.ok:
                try:
                    pages.append((response.url, [r["public_id"] for r in response.json().get("resources", [])]))
                except Exception:
                    pass
        page = self.page("?limit=2", before=lambda p: p.on("response", listed))
        shown = [self.state(page)["publicId"]]
        added = removed = None
        for step in range(1, 80):
            s = self.move(page)
            if s["publicId"] == shown[0] and added and removed:
                break            # round the feed to the first item again
            if s["publicId"] in shown:
                raise CheckFailed(f"{s['publicId']} shown twice (position {s['position']}): {shown}")
            shown.append(s["publicId"])
            if step == 2:
                added = self.folder.add()          # every index after the top moves up one
                page.wait_for_function("g => window.videofeed.generation > g", arg=s["generation"],
                                       timeout=NOTICE_S * 1000)
            elif step == 5:
                removed = shown[1]                 # passed: every index after it moves down one
                self.folder.remove(removed)
                page.wait_for_function("g => window.videofeed.generation > g", arg=s["generation"],
                                       timeout=NOTICE_S * 1000)
        else:
            raise CheckFailed(f"did not come round to {shown[0]} in 80 swipes: {shown}")
        listing = [it["public_id"] for it in fetch_listing(self.base)]
        expected = [p for p in listing if p != added]
        got = [p for p in shown if p != removed]
        if added in shown:
            raise CheckFailed(f"the item added above the viewer's start ({added}) was shown while paging")
        if got != expected:
            skipped = [p for p in expected if p not in got]
            raise CheckFailed(f"shown {got}, the listing (less {added}) is {expected}; skipped {skipped}")
        if self.state(page)["errors"]:
            raise CheckFailed(f"error cards: {self.state(page)['errors']}")
        named = {}
        for url, ids in pages:
            for public_id in ids:
                if public_id in named:
                    raise CheckFailed(f"{public_id} was in two listing pages: {named[public_id]} and {url}")
                named[public_id] = url
        self.close(page)
        return (f"{len(pages)} listing pages, none naming an item twice; pages of 2: {len(shown)} items in the "
                f"listing's order, none twice, none skipped, "
                f"while {added} arrived and {removed} (passed) went")

    def pull(self):
        page = self.page(touch=True)
        cdp = page.context.new_cdp_session(page)

        def drag(y0, y1, steps=10, during=None):
            cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": 200, "y": y0}]})
            for k in range(1, steps + 1):
                cdp.send("Input.dispatchTouchEvent",
                         {"type": "touchMove", "touchPoints": [{"x": 200, "y": y0 + (y1 - y0) * k / steps}]})
                time.sleep(0.016)
            seen = during() if during else None
            cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
            return seen

        drag(150, 200, steps=4)
        time.sleep(1)
        s = self.state(page)
        if s["refreshes"] != 0 or s["position"] != 0:
            raise CheckFailed(f"a 50 px pull refreshed or moved: {s}")
        s = self.move(page)
        added = self.folder.add()
        self.wait_new_items(page, f"{added} added")
        swipe_back = drag(200, 560)
        page.wait_for_function("window.videofeed.position === 0", timeout=10000)
        time.sleep(SETTLE_S)
        if self.state(page)["refreshes"] != 0:
            raise CheckFailed("a swipe down from the second card refreshed the listing")
        hint = drag(120, 420, during=lambda: page.evaluate(
            "() => { const h = document.getElementById('pull'); return { pulling: h.classList.contains('pulling'), "
            "armed: h.classList.contains('armed'), opacity: getComputedStyle(h).opacity }; }"))
        if not hint["pulling"] or not hint["armed"]:
            raise CheckFailed(f"no pull hint while the finger was down: {hint}")
        try:
            page.wait_for_function("id => window.videofeed.refreshes === 1 && window.videofeed.position === 0 && "
                                   "window.videofeed.publicId === id", arg=added, timeout=self.args.timeout * 1000)
        except Exception:
            raise CheckFailed(f"the pull did not show {added} at 0: {self.state(page)}")
        self.wait_plays(page, added, "after the pull")
        if page.evaluate("document.getElementById('pull').classList.contains('pulling')"):
            raise CheckFailed("the pull hint stayed after the release")
        self.close(page)
        return f"a 50 px pull: nothing; a 300 px pull (hint shown, armed) showed {added} at 0, playing"

    def run(self):
        self.check("load", self.load)
        self.check("newer", self.newer)
        self.check("removed", self.removed)
        self.check("gone", self.gone)
        self.check("replaced", self.replaced)
        self.check("paging", self.paging)
        self.check("pull", self.pull)
        self.browser.close()
        failed = [n for n, ok in self.results if not ok]
        print(f"{len(self.results) - len(failed)}/{len(self.results)} checks passed"
              + (f"; failed: {', '.join(failed)}" if failed else ""))
        return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", help="the server, e.g. http://127.0.0.1:8090")
    parser.add_argument("folder", help="the folder the server serves (the test adds and removes files in it)")
    parser.add_argument("--only", type=lambda s: s.split(","), default=None, help="comma-separated check names")
    parser.add_argument("--clip", default=os.path.join(HERE, "..", "Fixtures", "media", "h264_portrait.mp4"),
                        help="the clip copied into the folder as a new item")
    parser.add_argument("--timeout", type=float, default=45, help="seconds an item may take to play (default 45)")
    args = parser.parse_args()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("serve-live-test: Playwright is missing (pip install playwright)", file=sys.stderr)
        return 2
    if not os.path.exists(CHROMIUM):
        print(f"serve-live-test: {CHROMIUM} not found (apt-get install chromium)", file=sys.stderr)
        return 2
    if not os.path.isdir(args.folder) or not os.access(args.folder, os.W_OK):
        print(f"serve-live-test: {args.folder} is not a folder this test can write", file=sys.stderr)
        return 2
    if not os.path.isfile(args.clip):
        print(f"serve-live-test: no clip {args.clip}", file=sys.stderr)
        return 2
    with sync_playwright() as pw:
        try:
            run = Run(args, pw)
        except Exception as e:
            print(f"serve-live-test: cannot start: {e}", file=sys.stderr)
            return 2
        return run.run()


if __name__ == "__main__":
    sys.exit(main())
