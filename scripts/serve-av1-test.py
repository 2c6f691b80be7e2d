#!/usr/bin/env python3
"""The page picks AV1 where the browser's MSE takes it (issue 37), in headless Chromium.

Usage: python3 scripts/serve-av1-test.py --videofeed BIN [ITEM ...]

ITEM is a media file or folder (default: three clips of Fixtures: a 720x1280 phone clip, a rotated phone clip, a long
GOP with B-frames). They are copied to a fresh folder and served by `videofeed serve --codecs h264,av1 --sort name` on a
free port with a fresh cache. Two sessions at 405x720 CSS pixels, device scale 2 (the 720x1280 rung), each watching
the first card and then swiping to the next two:

  av1     Chromium as it is (its MSE takes av01): the first card, shown at once on a cold server, plays the H.264
          ladder (its AV1 first segment is not made: `ready: false`), and the two cards swiped to, attached ahead,
          play their AV1 renditions; the page's `hello` says `codec: "av1"`, its `at` messages the codec of the card
          on screen, and each card's playhead moves past 0.5 s
  h264    the same page where MediaSource.isTypeSupported says no to av01 (a browser without AV1): only H.264
          renditions are asked for, `hello` says `codec: "h264"`, and each card plays

No page errors in either. Exit status: 0 passed, 1 a check failed, 2 could not run.
"""

import argparse
import json
import os
import re
import shutil
import sys
import tempfile

from serve_process import ServeProcess, media_files

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
DEFAULT_ITEMS = [os.path.join(ROOT, "Fixtures", p) for p in
                 ("media/h264_portrait.mp4", "transcode/rotated_phone.mp4", "transcode/long_gop_b.mp4")]
NO_AV1 = r"""
(() => {
  for (const C of [window.MediaSource, window.ManagedMediaSource]) {
    if (!C) continue;
    const own = C.isTypeSupported.bind(C);
    C.isTypeSupported = type => !/av01/.test(String(type)) && own(type);
  }
})();
"""
MEDIA = re.compile(r"/media/[^?]*/([^/?]+)/(init\.mp4|seg-\d+\.m4s)")


def session(browser, url, name, refuse_av1):
    context = browser.new_context(viewport={"width": 405, "height": 720}, device_scale_factor=2)
    if refuse_av1:
        context.add_init_script(NO_AV1)
    page = context.new_page()
    asked, sent, errors = [], [], []
    page.on("request", lambda r: asked.append(m.group(1)) if (m := MEDIA.search(r.url)) else None)
    page.on("websocket", lambda ws: ws.on("framesent", lambda f: sent.append(f)))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url + "/", wait_until="load", timeout=120_000)
    page.wait_for_function("() => window.videofeed && window.videofeed.ready", timeout=120_000)
    played = []
    for n in range(3):
        if n:
            page.keyboard.press("ArrowDown")
            page.wait_for_function(f"() => window.videofeed.index === {n}", timeout=60_000)
        page.wait_for_function("() => window.videofeed.currentTime > 0.5", timeout=90_000)
        played.append(page.evaluate("() => window.videofeed.rendition"))
    shown = page.evaluate("() => window.videofeed.errors")
    context.close()
    hellos, ats = [], []
    for f in sent:
        try:
            msg = json.loads(f if isinstance(f, str) else f.decode())
        except ValueError:
            continue
        if isinstance(msg, dict) and msg.get("type") == "hello":
            hellos.append(msg)
        if isinstance(msg, dict) and msg.get("type") == "at":
            ats.append(msg)
    return {"session": name, "asked": asked, "played": played, "hellos": hellos, "ats": ats,
            "errors": errors + list(shown or [])}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--videofeed", required=True)
    ap.add_argument("items", nargs="*")
    args = ap.parse_args()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("serve-av1-test: needs playwright (make browser-deps)", file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="vfe-av1-")
    server = None
    failures = []
    try:
        folder = os.path.join(work, "feed")
        os.makedirs(folder)
        for n, path in enumerate(media_files(args.items or DEFAULT_ITEMS, {".mp4", ".mov", ".mkv", ".webm", ".ts"})):
            shutil.copy(path, os.path.join(folder, f"{n:02d}_{os.path.basename(path)}"))
        server = ServeProcess(args.videofeed, folder, work, ["--codecs", "h264,av1", "--sort", "name"])
        with sync_playwright() as pw:
            launch = ["--autoplay-policy=no-user-gesture-required"] + (["--no-sandbox"] if os.geteuid() == 0 else [])
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=launch)
            for name, refuse in (("av1", False), ("h264", True)):
                r = session(browser, server.url, name, refuse)
                av1 = [a for a in r["asked"] if a.endswith("-av1")]
                h264 = [a for a in r["asked"] if not a.endswith("-av1")]
                print(f"serve-av1-test: {name}: played {r['played']}; asked {len(av1)} AV1 and {len(h264)} H.264 "
                      f"files; hello codecs {sorted({str(h.get('codec')) for h in r['hellos']})}")
                want_av1 = name == "av1"
                if not r["asked"]:
                    failures.append(f"{name}: the page asked for no media segment")
                played_av1 = [bool(p and p.endswith("-av1")) for p in r["played"]]
                if want_av1 and played_av1 != [False, True, True]:
                    failures.append(f"{name}: expected the cold first card on H.264 and the next two on AV1: "
                                    f"{r['played']}")
                if not want_av1 and (av1 or any(played_av1)):
                    failures.append(f"{name}: AV1 asked for or played where the browser refuses it: {r['played']}")
                at_codecs = {a.get("codec") for a in r["ats"] if a.get("codec")}
                if at_codecs != ({"h264", "av1"} if want_av1 else {"h264"}):
                    failures.append(f"{name}: `at` said codecs {sorted(at_codecs)}")
                codecs = [h.get("codec") for h in r["hellos"] if h.get("rendition")]
                if not codecs or any(c != name for c in codecs):
                    failures.append(f"{name}: hello said {codecs}")
                if r["errors"]:
                    failures.append(f"{name}: page errors {r['errors'][:3]}")
            browser.close()
        if not server.alive:
            failures.append("the server died: " + server.log())
    except Exception as e:  # noqa: BLE001 - any failure to run is exit status 2
        print(f"serve-av1-test: could not run: {e}", file=sys.stderr)
        if server:
            print(server.log(), file=sys.stderr)
        return 2
    finally:
        if server:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print("serve-av1-test: FAILED " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
