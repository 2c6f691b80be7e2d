#!/usr/bin/env python3
"""When does Chromium's requestVideoFrameCallback fire after play() on a video paused on its first frame?

The neighbour-swipe figure of issue 12 is "key press -> requestVideoFrameCallback of the new card". The page keeps
each neighbour paused on its first frame, already presented (the poster is hidden on that frame's callback), so the
callback after play() is the *second* frame's: one frame interval of the rendition after the swipe. This probe asks
whether any way of showing the card makes Chromium call back for the frame it already holds instead:

  plain    the video visible and paused on frame 0, then play()
  unhide   the video visibility:hidden while it loads, made visible together with play()
  display  the video display:none while it loads, shown together with play()
  seek     currentTime = 0 (a seek to the frame it shows) together with play()
  mse      through Media Source Extensions as the page plays (init and first fragments appended), then play()
  append   MSE with only the init appended while it waits; the first fragments (fetched already) appended
           together with play(): the first frame is decoded and presented after the call

For each, it prints the milliseconds from the call to the callback's expectedDisplayTime and which frame the callback
reports (its mediaTime less the start of what is buffered: 0 = the first frame, 1/fps = the second; the fragmented
clip's first picture is not at 0, as x264's B-frames delay it).

    python3 scripts/rvfc-probe.py [--fps 10] [--runs 8]
    python3 scripts/rvfc-probe.py --batch-item BATCH/phone/ITEM [--batch-item ...] [--rendition 720x1280]

With --batch-item (an item's folder in `videofeed transcode` output), the clip is that rendition's init.mp4 and
seg-0.m4s, with the codecs its master.m3u8 names, and only the modes the page has used run (`mse`, `append`), each
after the video waited 1.5 s as a neighbour does.

Needs the ffmpeg CLI, Playwright (PyPI) and Debian's chromium (make browser-deps). Exit status 0, or 2 when it
cannot run.
"""
import argparse
import asyncio
import functools
import http.server
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading

PAGE = """<!doctype html><html><body style="margin:0;background:#000">
<video id="v" src="clip.mp4" muted playsinline preload="auto" style="width:360px;height:640px"></video>
<script>
const v = document.getElementById('v');
let media = null, buffer = null;
// MSE: the fragmented clip split at its first moof; `whole` appends both now, else the fragments wait for run().
window.prepare = async whole => {
  const bytes = new Uint8Array(await (await fetch('clip-frag.mp4')).arrayBuffer());
  let at = 0;
  while (at + 8 <= bytes.length) {
    const size = new DataView(bytes.buffer).getUint32(at);
    if (String.fromCharCode(...bytes.subarray(at + 4, at + 8)) === 'moof') break;
    at += size;
  }
  media = bytes.subarray(at);
  const source = new MediaSource();
  v.removeAttribute('src');
  v.src = URL.createObjectURL(source);
  await new Promise(r => source.addEventListener('sourceopen', r, { once: true }));
  buffer = source.addSourceBuffer(CODEC);
  const append = b => new Promise(r => { buffer.addEventListener('updateend', r, { once: true }); buffer.appendBuffer(b); });
  await append(bytes.subarray(0, at));
  if (whole) {
    // Parked on the first picture, as the page's rewind() does (not at 0, before it).
    await append(media);
    media = null;
    if (Math.abs(v.currentTime - v.buffered.start(0)) > 0.001) {
      const seeked = new Promise(r => v.addEventListener('seeked', r, { once: true }));
      v.currentTime = v.buffered.start(0);
      await seeked;
    }
  }
};
window.run = mode => new Promise(done => {
  const t0 = performance.now();
  if (mode === 'unhide') v.style.visibility = 'visible';
  if (mode === 'display') v.style.display = '';
  if (mode === 'seek') v.currentTime = 0;
  if (mode === 'append') buffer.appendBuffer(media);
  v.requestVideoFrameCallback((now, meta) =>
    done({ ms: (meta.expectedDisplayTime || now) - t0, mediaTime: meta.mediaTime,
           first: v.buffered.length ? v.buffered.start(0) : 0 }));
  v.play();
});
</script></body></html>"""

HIDE = {"unhide": "v.style.visibility = 'hidden'", "display": "v.style.display = 'none'"}


async def probe(url, runs, modes=("plain", "unhide", "display", "seek", "mse", "append"), wait_ms=300):
    from playwright.async_api import async_playwright
    async with async_playwright() as p:
        args = ["--autoplay-policy=no-user-gesture-required"] + (["--no-sandbox"] if os.geteuid() == 0 else [])
        browser = await p.chromium.launch(executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"), args=args)
        page = await browser.new_page()
        results = {}
        for mode in modes:
            rows = []
            for _ in range(runs):
                await page.goto(url)
                if mode in HIDE:
                    await page.evaluate(HIDE[mode].replace("v.", "document.getElementById('v')."))
                if mode in ("mse", "append"):
                    await page.evaluate(f"prepare({'true' if mode == 'mse' else 'false'})")
                if mode != "append":
                    await page.wait_for_function("document.getElementById('v').readyState >= 2")
                await page.wait_for_timeout(wait_ms)
                rows.append(await page.evaluate(f"run('{mode}')"))
            results[mode] = rows
        await browser.close()
        return results


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def served(work, run):
    """Calls run(base URL) with `work` served on a free port; 2 when Playwright is missing, else run's result."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=work))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        return run(f"http://127.0.0.1:{server.server_address[1]}")
    except ImportError:
        print("rvfc-probe: Playwright is missing (make browser-deps)", file=sys.stderr)
        return 2
    finally:
        server.shutdown()


def codecs_of(item, rendition):
    """The CODECS attribute master.m3u8 gives `rendition`/index.m3u8."""
    lines = open(os.path.join(item, "master.m3u8")).read().splitlines()
    for previous, line in zip(lines, lines[1:]):
        if line.strip() == f"{rendition}/index.m3u8" and 'CODECS="' in previous:
            return previous.split('CODECS="', 1)[1].split('"', 1)[0]
    raise ValueError(f"{item}/master.m3u8 names no {rendition}/index.m3u8 with CODECS")


def probe_batch(options):
    work = tempfile.mkdtemp(prefix="rvfc-probe-")
    try:
        pages = []
        for n, item in enumerate(options.batch_item):
            folder = os.path.join(work, str(n))
            os.makedirs(folder)
            with open(os.path.join(folder, "clip-frag.mp4"), "wb") as out:
                for name in ("init.mp4", "seg-0.m4s"):
                    with open(os.path.join(item, options.rendition, name), "rb") as f:
                        out.write(f.read())
            try:
                codecs = codecs_of(item, options.rendition)
            except ValueError as error:
                print(f"rvfc-probe: {error}", file=sys.stderr)
                return 2
            with open(os.path.join(folder, "index.html"), "w") as f:
                f.write(PAGE.replace("CODEC", f"'video/mp4; codecs=\"{codecs}\"'"))
            pages.append((os.path.basename(item.rstrip("/")), n))
        def run(base):
            print(f"{options.rendition}: init + seg-0, {options.runs} page loads per mode, 1.5 s wait")
            print(f"{'item':40} {'mode':7} median ms  max ms  frame reported")
            for name, n in pages:
                results = asyncio.run(probe(f"{base}/{n}/index.html", options.runs, ("mse", "append"), 1500))
                for mode, rows in results.items():
                    ms = [r["ms"] for r in rows]
                    frames = sorted({round(r["mediaTime"] - r["first"], 3) for r in rows})
                    print(f"{name:40} {mode:7} {statistics.median(ms):9.1f} {max(ms):7.1f}  "
                          f"{', '.join(f'{t:.3f} s' for t in frames)}", flush=True)
            return 0
        return served(work, run)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fps", type=int, default=10, help="the clip's frame rate (default 10, like fire2's ~10.5)")
    parser.add_argument("--runs", type=int, default=8, help="page loads per mode (default 8)")
    parser.add_argument("--batch-item", action="append", default=[], help="a batch item folder (repeatable)")
    parser.add_argument("--rendition", default="720x1280", help="the batch items' rendition (default 720x1280)")
    options = parser.parse_args()
    if options.batch_item:
        for item in options.batch_item:
            needed = [os.path.join(item, "master.m3u8")] + [os.path.join(item, options.rendition, name)
                                                            for name in ("init.mp4", "seg-0.m4s")]
            missing = [path for path in needed if not os.path.isfile(path)]
            if missing:
                print(f"rvfc-probe: {item} is not a batch item folder with rendition {options.rendition}: "
                      f"no {', '.join(missing)} (videofeed transcode SOURCE --out DIR writes DIR/<public_id>/...)",
                      file=sys.stderr)
                return 2
        return probe_batch(options)
    if not shutil.which("ffmpeg"):
        print("rvfc-probe: the ffmpeg CLI is missing (make deps)", file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="rvfc-probe-")
    try:
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
                        f"testsrc2=size=720x1280:rate={options.fps}", "-t", "4", "-c:v", "libx264",
                        "-pix_fmt", "yuv420p", "-movflags", "+faststart", os.path.join(work, "clip.mp4")],
                       check=True)
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", os.path.join(work, "clip.mp4"), "-c", "copy",
                        "-movflags", "+frag_keyframe+empty_moov+default_base_moof", "-frag_duration", "1000000",
                        os.path.join(work, "clip-frag.mp4")], check=True)
        with open(os.path.join(work, "index.html"), "w") as f:
            f.write(PAGE.replace("CODEC", "'video/mp4; codecs=\"avc1.64001f\"'"))
        results = served(work, lambda base: asyncio.run(probe(f"{base}/index.html", options.runs)))
        if results == 2:
            return 2
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{options.fps} fps clip (frame interval {1000 / options.fps:.0f} ms), {options.runs} page loads per mode")
    print("mode     median ms  max ms  frame reported (mediaTime less the first buffered time)")
    for mode, rows in results.items():
        ms = [r["ms"] for r in rows]
        frames = sorted({round(r["mediaTime"] - r["first"], 3) for r in rows})
        print(f"{mode:8} {statistics.median(ms):9.1f} {max(ms):7.1f}  {', '.join(f'{t:.3f} s' for t in frames)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
