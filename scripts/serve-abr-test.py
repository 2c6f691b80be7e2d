#!/usr/bin/env python3
"""The page on slow and changing networks (issue 34): adaptive bitrate and seamless loops, in headless Chromium with
DevTools' network emulation (Network.emulateNetworkConditions, set again every second from a trace).

Usage: python3 scripts/serve-abr-test.py --videofeed BIN [--only slow,fast,swing,loop] [--swipes 20] [--dwell 3]
           [--json FILE] [--check] [ITEM ...]

ITEM is a media file or a folder (default: 12 busy 1080x1920 4 s clips with audio made here — testsrc2 under moving
noise, so every rung's segments come near its peak rate — between the files of Fixtures/media and Fixtures/transcode;
and a 0.1 s 3-frame clip made here for the loop check). The items are copied to a fresh folder in that order, served
by `videofeed serve --sort name` on a free port with a fresh cache; each scenario opens a fresh browser context (no HTTP cache: Network.setCacheDisabled) at
405x720 CSS pixels, device scale 2 (a 810x1440 box: the 720x1280 rung), and swipes down --swipes times, one every
--dwell seconds (ArrowDown), from the first card.

Scenarios (each a line of figures; with --check, a target missed fails):
  slow   1.5 Mb/s down, 300 ms round trip: at most one stall per 5 items, first frame p95 <= 1.5 s
  fast   20 Mb/s, 20 ms: from the second item on, every item plays (at the end of its dwell) the rung its box asks for
  swing  a trace swinging between 0.5 and 8 Mb/s (300 ms round trip): stall time <= 2 % of watch time
  loop   the 0.1 s 3-frame clip watched for 3 s at full speed: it keeps presenting frames through every wrap — no gap
         between two presented frames over 200 ms (a stall), and at least 80 % of the frames 3 s of its loop holds

Measured in the page by this script's own listeners (installed before the page's code): the first frame of a swipe
is the page's `videofeed:firstframe` event, from the key press's own timestamp; a stall is a stretch of more than
150 ms in which the playing card's currentTime does not move while the video is not paused, counted only after the
card's first frame (the wait for a first frame is the first-frame figure, not a stall); watch time is the time a
card plays after its first frame. Stalls and watch time are reported for the whole session and for the swiped items
(the 20 swipes): the targets are checked on the swiped items, as the page load's first card is a cold start on a
cold server (its second segment is made while it plays: about 1 s of stall on a 1080x1920 source, whatever the
network; the cold-jump benchmark measures cold starts). Figures: the estimate (window.videofeed.bandwidth), switches, the rungs played.

Exit status: 0 all passed (or measured, without --check), 1 some failed, 2 could not run.
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import rendition_rule  # the one rendition rule, checked against the server's cases at start
from serve_process import ServeProcess, media_files

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
MEDIA_EXT = {".mp4", ".mov", ".m4v", ".mkv", ".webm", ".ts", ".avi", ".flv", ".3gp", ".gif", ".jpg", ".png"}
# The swinging trace: Mb/s for each second, repeated (between 0.5 and 8).
SWING = [8] * 5 + [0.5] * 5 + [2] * 5 + [0.5] * 3 + [8] * 4 + [1] * 4 + [4] * 4

INIT_SCRIPT = r"""
(() => {
  const s = { frames: [], keys: [], errors: [], stalls: 0, stalledMs: 0, watchMs: 0, cards: [] };
  // Per card: stalls, stalled ms, watched ms.
  Object.defineProperty(window, '__abr', { value: s });
  addEventListener('videofeed:firstframe', e => {
    const d = e.detail || {};
    s.frames.push({ t: performance.now(), index: d.index, publicId: d.publicId, ms: d.ms });
  }, true);
  addEventListener('keydown', e => s.keys.push({ t: e.timeStamp, now: performance.now(), key: e.key }), true);
  addEventListener('error', e => {
    s.errors.push({ t: performance.now(), message: String(e.message || (e.target && e.target.error &&
      e.target.error.message) || 'error') });
  }, true);
  // The playing card's video, every 50 ms: watch time, and stalls after its first frame.
  let cur = null;
  setInterval(() => {
    const now = performance.now();
    const el = document.querySelector('section.card.active');
    const v = el && el.querySelector('video');
    if (!v) { cur = null; return; }
    if (!cur || cur.v !== v) {
      if (cur && cur.stalling) {
        s.stalledMs += cur.last - cur.lastMove;
        s.cards[s.cards.length - 1].stalledMs += cur.last - cur.lastMove;
      }
      cur = { v, t: v.currentTime, lastMove: now, last: now, started: false, stalling: false, id: el.dataset.publicId };
      s.cards.push({ id: cur.id, stalls: 0, stalledMs: 0, watchMs: 0 });
      return;
    }
    const card = s.cards[s.cards.length - 1];
    const dt = now - cur.last;
    cur.last = now;
    if (v.currentTime !== cur.t) {
      cur.t = v.currentTime;
      if (cur.stalling) { s.stalledMs += now - cur.lastMove; card.stalledMs += now - cur.lastMove; cur.stalling = false; }
      cur.lastMove = now;
      cur.started = cur.started || el.classList.contains('has-frame');
    }
    if (!cur.started || v.paused) { cur.lastMove = now; return; }
    s.watchMs += dt;
    card.watchMs += dt;
    if (!cur.stalling && now - cur.lastMove > 150) {
      cur.stalling = true; s.stalls++; card.stalls++;
      (card.at = card.at || []).push(Math.round(cur.lastMove));
    }
  }, 50);
})();
"""

STATE_JS = """() => { const v = window.videofeed; return v ? { index: v.index, publicId: v.publicId, total: v.total,
  rendition: v.rendition, box: v.box, bandwidth: v.bandwidth, samples: v.bandwidthSamples, switches: v.switches.length,
  errors: v.errors, warnings: v.warnings } : null; }"""


def log(*args):
    print("serve-abr-test:", *args, flush=True)


def percentile(values, p):
    if not values:
        return None
    s = sorted(values)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


def make_busy_clips(folder, count):
    paths = []
    for n in range(count):
        path = os.path.join(folder, f"busy_{n:02d}.mp4")
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi",
                        "-i", f"testsrc2=size=1080x1920:rate=30,noise=alls={6 + n % 4}:allf=t,hue=h={n * 29}",
                        "-f", "lavfi", "-i", f"sine=frequency={200 + 40 * n}:sample_rate=48000", "-t", "4",
                        "-c:v", "libx264", "-preset", "ultrafast", "-crf", "28", "-pix_fmt", "yuv420p", "-c:a", "aac",
                        "-shortest", path], check=True)
        paths.append(path)
    return paths


def make_loop_clip(folder):
    path = os.path.join(folder, "zz_loop_3frames.mp4")
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=360x640:rate=30",
                    "-frames:v", "3", "-c:v", "libx264", "-pix_fmt", "yuv420p", path], check=True)
    return path


def listing(url):
    cards, cursor = [], None
    while True:
        q = "/api/feed?limit=50&pending=1" + (f"&cursor={cursor}" if cursor else "")
        with urllib.request.urlopen(url + q, timeout=120) as r:
            page = json.load(r)
        cards += page.get("resources", [])
        cursor = page.get("next_cursor")
        if not cursor:
            return cards


def box_rung(renditions, w, h):
    """util.js pickRendition without a bandwidth (every rendition H.264, which this Chromium plays): the one rule."""
    chosen = rendition_rule.pick(renditions, w, h)
    return chosen["name"] if chosen else None


class Session:
    def __init__(self, browser, url, args):
        self.args = args
        self.context = browser.new_context(viewport={"width": 405, "height": 720}, device_scale_factor=2)
        self.context.add_init_script(INIT_SCRIPT)
        self.page = self.context.new_page()
        self.console = []
        self.page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))
        self.cdp = self.context.new_cdp_session(self.page)
        self.cdp.send("Network.enable")
        self.cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
        self.url = url

    def network(self, mbps, rtt_ms):
        bps = mbps * 1e6 / 8
        self.cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": rtt_ms,
                                                           "downloadThroughput": bps, "uploadThroughput": bps})

    def wait(self, seconds, trace=None, rtt_ms=300, clock=None):
        """Waits `seconds`, setting the network every second from `trace` (Mb/s per second) when given."""
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return
            if trace is not None:
                second = int(time.monotonic() - clock)
                self.network(trace[second % len(trace)], rtt_ms)
            self.page.wait_for_timeout(min(left, 1.0) * 1000)

    def state(self):
        return self.page.evaluate(STATE_JS)

    def close(self):
        self.context.close()


def session(browser, url, args, name, mbps=None, rtt=300, trace=None):
    s = Session(browser, url, args)
    clock = time.monotonic()
    if trace is not None:
        s.network(trace[0], rtt)
    else:
        s.network(mbps, rtt)
    s.page.goto(url + "/", wait_until="load", timeout=120_000)
    s.page.wait_for_function("() => window.videofeed && window.videofeed.ready", timeout=120_000)
    items = []
    # The first card: until its first frame (or the page's playhead moves), at most a minute.
    s.page.wait_for_function("() => window.__abr.frames.length > 0 || window.videofeed.currentTime > 0",
                             timeout=60_000)
    for n in range(args.swipes + 1):
        s.wait(args.dwell, trace, rtt, clock)
        st = s.state()
        items.append({"index": st["index"], "public_id": st["publicId"], "rendition": st["rendition"],
                      "bandwidth": st["bandwidth"]})
        if n == args.swipes:
            break
        t_press = s.page.evaluate("performance.now()")
        s.page.keyboard.press("ArrowDown")
        items[-1]["pressed"] = t_press
    data = s.page.evaluate("() => ({ frames: window.__abr.frames, keys: window.__abr.keys, stalls: window.__abr.stalls, "
                           "stalledMs: window.__abr.stalledMs, watchMs: window.__abr.watchMs, cards: window.__abr.cards, "
                           "errors: window.__abr.errors, switches: window.videofeed.switches, "
                           "warnings: window.videofeed.warnings, shownErrors: window.videofeed.errors, "
                           "box: window.videofeed.box })")
    s.close()
    # First frame of each swipe: from the key press's own timestamp to the firstframe event of the new index.
    firsts = []
    keys = [k for k in data["keys"] if k["key"] == "ArrowDown"]
    for key in keys:
        frame = next((f for f in data["frames"] if f["t"] >= key["now"]), None)
        firsts.append((frame["t"] - key["t"]) if frame else math.inf)
    return {"scenario": name, "items": items, "first_frame_ms": [round(x, 1) if math.isfinite(x) else None for x in firsts],
            "stalls": data["stalls"], "stalled_ms": round(data["stalledMs"]), "watch_ms": round(data["watchMs"]),
            "switches": data["switches"], "errors": data["errors"][:5], "warnings": data["warnings"][:5],
            "shown_errors": data["shownErrors"], "box": data["box"], "cards": data["cards"], "_firsts": firsts}


def loop_check(browser, url, args, cards):
    """Watches the 3-frame clip for 3 s, recording every frame presented (requestVideoFrameCallback)."""
    target = next((c for c in cards if "loop_3frames" in c["public_id"]), None)
    if target is None:
        return None
    s = Session(browser, url, args)
    s.network(1000, 0)
    s.page.goto(url + f"/#i={target['index']}", wait_until="load", timeout=120_000)
    s.page.wait_for_function("() => window.videofeed && window.videofeed.ready && "
                             "window.videofeed.publicId === %s" % json.dumps(target["public_id"]), timeout=60_000)
    s.page.wait_for_function("() => window.videofeed.currentTime > 0 || window.__abr.frames.length > 0", timeout=60_000)
    result = s.page.evaluate("""() => new Promise(done => {
      const v = document.querySelector('section.card.active video');
      const times = [], media = [];
      const t0 = performance.now();
      const on = (now, meta) => { times.push(now); media.push(meta.mediaTime);
                                  if (now - t0 < 3000) v.requestVideoFrameCallback(on);
                                  else done({ times, media, fps: null }); };
      v.requestVideoFrameCallback(on);
    })""")
    s.close()
    times = result["times"]
    gaps = [b - a for a, b in zip(times, times[1:])]
    wraps = sum(1 for a, b in zip(result["media"], result["media"][1:]) if b < a)
    return {"scenario": "loop", "presented": len(times), "max_gap_ms": round(max(gaps), 1) if gaps else None,
            "wraps": wraps, "expected": 90}


def report(r, failures, check):
    name = r["scenario"]
    if name == "loop":
        line = f"loop: {r['presented']} frames presented in 3 s ({r['wraps']} wraps), largest gap {r['max_gap_ms']} ms"
        ok = r["presented"] >= 0.8 * r["expected"] and (r["max_gap_ms"] or 1e9) <= 200
        if not ok:
            failures.append(line)
        log(("PASS " if ok or not check else "FAIL ") + line)
        return
    firsts = r["_firsts"]
    p50, p95 = percentile(firsts, 50), percentile(firsts, 95)
    n_items = len(r["items"])
    swiped = r["cards"][1:]
    s_stalls = sum(c["stalls"] for c in swiped)
    s_stalled = sum(c["stalledMs"] for c in swiped)
    s_watch = sum(c["watchMs"] for c in swiped)
    s_share = s_stalled / s_watch if s_watch else 0
    r["swiped"] = {"items": len(swiped), "stalls": s_stalls, "stalled_ms": round(s_stalled), "watch_ms": round(s_watch)}
    rungs = {}
    for it in r["items"]:
        rungs[it["rendition"]] = rungs.get(it["rendition"], 0) + 1
    share = r["stalled_ms"] / r["watch_ms"] if r["watch_ms"] else 0
    line = (f"{name}: {n_items} items, first frame p50 {p50:.0f} ms p95 {p95:.0f} ms; swiped items: {s_stalls} stalls "
            f"({round(s_stalled)} ms of {s_watch / 1000:.1f} s watched, {100 * s_share:.2f} %); all: {r['stalls']} stalls "
            f"({r['stalled_ms']} ms, {100 * share:.2f} %); "
            f"{len(r['switches'])} switches, rungs {rungs}, estimate at the end {r['items'][-1]['bandwidth'] / 1e6:.2f} Mb/s")
    problems = []
    if r["shown_errors"]:
        problems.append(f"error cards {r['shown_errors']}")
    if name == "slow":
        if s_stalls > len(swiped) // 5:
            problems.append(f"{s_stalls} stalls over {len(swiped)} swiped items (at most {len(swiped) // 5})")
        if not (p95 <= 1500):
            problems.append(f"first frame p95 {p95} ms > 1500 ms")
    if name == "fast":
        box = r["box"]
        wrong = [(it["public_id"], it["rendition"], it["expected"]) for it in r["items"][1:]
                 if it.get("expected") and it["rendition"] != it["expected"]]
        if wrong:
            problems.append(f"{len(wrong)} items below the rung their box ({box['w']}x{box['h']}) asks for: {wrong[:4]}")
    if name == "swing" and s_share > 0.02:
        problems.append(f"stall time {100 * s_share:.2f} % of the swiped items' watch time > 2 %")
    for p in problems:
        failures.append(f"{name}: {p}")
    log(("FAIL " if problems and check else "PASS " if check else "") + line + ("; " + "; ".join(problems) if problems else ""))


def main():
    rendition_rule.check()
    ap = argparse.ArgumentParser()
    ap.add_argument("--videofeed", required=True)
    ap.add_argument("--only", default="slow,fast,swing,loop")
    ap.add_argument("--swipes", type=int, default=20)
    ap.add_argument("--dwell", type=float, default=3)
    ap.add_argument("--json")
    ap.add_argument("--check", action="store_true", help="fail when a target is missed")
    ap.add_argument("items", nargs="*")
    args = ap.parse_args()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        log("Playwright is missing (make browser-deps)")
        return 2
    work = tempfile.mkdtemp(prefix="vfe-abr.")
    server = None
    failures, results = [], []
    try:
        folder = os.path.join(work, "feed")
        os.makedirs(folder)
        if args.items:
            files = media_files(args.items, MEDIA_EXT)
        else:
            made = os.path.join(work, "made")
            os.makedirs(made)
            busy = make_busy_clips(made, 12)
            fixtures = media_files([os.path.join(ROOT, "Fixtures/media"), os.path.join(ROOT, "Fixtures/transcode")],
                                   MEDIA_EXT)
            files = []
            for n in range(max(len(busy), len(fixtures))):
                files += busy[n:n + 1] + fixtures[n:n + 1]
        for n, f in enumerate(files):
            shutil.copyfile(f, os.path.join(folder, f"{n:03d}_{os.path.basename(f)}"))
        if "loop" in args.only:
            make_loop_clip(folder)
        server = ServeProcess(args.videofeed, folder, work, ["--refresh", "0", "--sort", "name"])
        cards = listing(server.url)
        log(f"{server.url}: {len(cards)} items")
        with sync_playwright() as pw:
            launch = ["--autoplay-policy=no-user-gesture-required"] + (["--no-sandbox"] if os.geteuid() == 0 else [])
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=launch)
            try:
                for name in args.only.split(","):
                    if name == "loop":
                        r = loop_check(browser, server.url, args, cards)
                        if r is None:
                            continue
                    elif name == "slow":
                        r = session(browser, server.url, args, name, mbps=1.5, rtt=300)
                    elif name == "fast":
                        r = session(browser, server.url, args, name, mbps=20, rtt=20)
                        full = {c["public_id"]: c for c in listing(server.url)}
                        for it in r["items"]:
                            c = full.get(it["public_id"]) or {}
                            it["expected"] = box_rung(c.get("renditions"), r["box"]["w"], r["box"]["h"])
                    elif name == "swing":
                        r = session(browser, server.url, args, name, trace=SWING, rtt=300)
                        r["trace_mbps"] = SWING
                    else:
                        log(f"no scenario {name}")
                        return 2
                    results.append(r)
                    report(r, failures, args.check)
            finally:
                browser.close()
        if not server.alive:
            failures.append("the server died: " + server.log(1500))
    except Exception as e:  # noqa: BLE001
        log(f"could not run: {e}")
        return 2
    finally:
        if server:
            server.stop()
        if args.json:
            with open(args.json, "w") as f:
                json.dump([{k: v for k, v in r.items() if not k.startswith("_")} for r in results], f, indent=1)
        shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        log("FAIL " + f)
    if args.check:
        log("passed" if not failures else f"{len(failures)} failed")
        return 1 if failures else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
