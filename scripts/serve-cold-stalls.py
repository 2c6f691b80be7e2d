#!/usr/bin/env python3
"""Cold jumps in Chromium, and what follows them: time to the first frame, then stalls while the item plays.

Usage:
  python3 scripts/serve-cold-stalls.py BASE_URL FEED.json INDEX [INDEX ...] [--watch 5]

BASE_URL is a fresh `videofeed serve FEED.json --cache EMPTY_DIR` (for instance with and without --first-segment);
FEED.json the same feed (for each index's public_id). For each INDEX, in one page: `location.hash = '#i=INDEX'`,
then every 20 ms the card of that item is sampled: the first frame is when its video plays with currentTime > 0;
after it, a stall is a stretch of more than 150 ms in which currentTime does not move while the video is not
paused, over the next --watch seconds. Prints one JSON line per jump (first_ms, stalls, stalled_ms) and a summary.
Needs Playwright and Debian's chromium (make browser-deps).
"""
import argparse
import json
import time

from playwright.sync_api import sync_playwright

SAMPLE = """([watch, pid]) => new Promise(done => {
  let first = null, last = null, lastMove = null, stalled = 0, stalls = 0, inStall = false;
  const t0 = window.__t0;
  const iv = setInterval(() => {
    const card = document.querySelector(`.card.active[data-public-id="${pid}"]`);
    const v = card && card.querySelector('video');
    const now = performance.now();
    const finish = () => { if (inStall) stalled += now - lastMove; clearInterval(iv);
                           done({first_ms: first === null ? null : Math.round(first), stalls, stalled_ms: Math.round(stalled)}); };
    if (now - t0 > 15000 + watch * 1000) return finish();
    if (!v) return;
    if (first === null) {
      if (v.currentTime > 0 && !v.paused) { first = now - t0; last = v.currentTime; lastMove = now; }
      return;
    }
    if (v.currentTime !== last) {
      if (inStall) { stalled += now - lastMove; inStall = false; }
      last = v.currentTime; lastMove = now;
    } else if (!v.paused && now - lastMove > 150 && !inStall) { stalls++; inStall = true; }
    if (now - t0 - first > watch * 1000) finish();
  }, 20);
})"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url")
    ap.add_argument("feed")
    ap.add_argument("indices", type=int, nargs="+")
    ap.add_argument("--watch", type=float, default=5.0, help="seconds watched after the first frame (default 5)")
    a = ap.parse_args()
    feed = json.load(open(a.feed))
    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                    args=["--no-sandbox", "--autoplay-policy=no-user-gesture-required"])
        page = browser.new_context(viewport={"width": 405, "height": 720}, device_scale_factor=2).new_page()
        page.goto(a.url, wait_until="load")
        time.sleep(4)
        for n in a.indices:
            page.evaluate("(n) => { window.__t0 = performance.now(); location.hash = '#i=' + n; }", n)
            row = {"index": n, "public_id": feed[n]["public_id"],
                   **page.evaluate(SAMPLE, [a.watch, feed[n]["public_id"]])}
            rows.append(row)
            print(json.dumps(row), flush=True)
        browser.close()
    played = [r for r in rows if r["first_ms"] is not None]
    if played:
        print("jumps %d, first frame mean %.0f ms, stalls %d in %d jumps, stalled mean %.0f ms per jump" % (
            len(played), sum(r["first_ms"] for r in played) / len(played), sum(r["stalls"] for r in played),
            sum(1 for r in played if r["stalls"]), sum(r["stalled_ms"] for r in played) / len(played)))


if __name__ == "__main__":
    main()
