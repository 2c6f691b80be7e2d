#!/usr/bin/env python3
"""Native HLS players against `videofeed serve` (issue 34): GStreamer's playbin and ffmpeg's HLS demuxer play cold
items from the `hls` URL of their listing card, and decode every frame the batch (`videofeed transcode`) has.

Usage: python3 scripts/serve-native-test.py --videofeed BIN [--first-frame-limit S] [--json FILE] [ITEM ...]

ITEM is a media file or a folder of them (default: a synthetic 1080x1920 3 s clip with audio, made here with the
ffmpeg CLI, and Fixtures/media/{h264_portrait,rotate90,vp9}). Items the batch cannot transcode are skipped (said).

For each item and each client (gst, ffmpeg):
  1. the batch transcodes the item once (the reference: its renditions.jsonl and playlists);
  2. a copy of the item (its own name, so its own cold version) is renamed into the folder a `videofeed serve
     --refresh 1` started on (with a filler item only), and the listing (`pending=1`: no work) is read until it
     lists it; its card's `hls` is the master playlist: the manifest is not made yet (nothing warmed it, no viewer
     is connected), so the client's first request makes it;
  3. gst: `gst-launch-1.0 -v playbin uri=…` with fakesinks; every video buffer's pts is read from the sink's
     last-message: the distinct pictures must be as many as the batch's rendition of that size has (playbin starts
     with the first variant, the largest);
     ffmpeg: `ffmpeg -i URL -map 0:v:0 -fps_mode passthrough -f framemd5 -` must print exactly what the same
     command prints for the batch's playlist of the first rendition (every picture, bit for bit);
  4. the time from starting the client to its first decoded picture is reported; with --first-frame-limit, a
     1080x1920 item over it fails the check (the benchmark runs it on a release build; `make test` reports only).

Exit status: 0 all passed, 1 some failed (each failure says why), 2 could not run.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

from serve_process import ServeProcess, media_files

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MEDIA_EXT = {".mp4", ".mov", ".m4v", ".mkv", ".webm", ".ts", ".avi", ".flv", ".3gp"}
CLIENT_TIMEOUT_S = 120


def log(*args):
    print("serve-native-test:", *args, flush=True)


def get_json(url, timeout=30):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.load(r)


def make_synthetic(folder):
    path = os.path.join(folder, "tall_1080x1920.mp4")
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=1080x1920:rate=30",
                    "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "3", "-c:v", "libx264",
                    "-preset", "veryfast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", path], check=True)
    return path


def items_from(args, work):
    if not args:
        return [make_synthetic(work)] + [os.path.join(ROOT, "Fixtures/media", n)
                                          for n in ("h264_portrait.mp4", "rotate90.mp4", "vp9.webm")]
    return media_files(args, MEDIA_EXT)


class Server(ServeProcess):
    def __init__(self, videofeed, folder, work):
        super().__init__(videofeed, folder, work, ["--refresh", "1"])

    def card(self, public_id, timeout=30):
        """The pending listing's card of `public_id`, once listed."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            page = get_json(self.url + "/api/feed?pending=1&limit=50")
            for card in page.get("resources", []):
                if card.get("public_id") == public_id:
                    return card
            time.sleep(0.1)
        raise RuntimeError(f"{public_id} was not listed within {timeout} s")


def batch_reference(videofeed, items, work):
    """Transcodes every item once; its record by file name."""
    folder = os.path.join(work, "batch-src")
    os.makedirs(folder)
    for path in items:
        os.symlink(os.path.abspath(path), os.path.join(folder, os.path.basename(path)))
    out = os.path.join(work, "batch")
    subprocess.run([videofeed, "transcode", folder, "--out", out, "-q"], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    records = {}
    jsonl = os.path.join(out, "renditions.jsonl")
    if os.path.exists(jsonl):
        for line in open(jsonl):
            rec = json.loads(line)
            records[os.path.basename(rec.get("source", ""))] = rec
    return out, records


def framemd5(source, extra=()):
    cmd = ["ffmpeg", "-nostdin", "-v", "error", *extra, "-i", source, "-map", "0:v:0", "-fps_mode", "passthrough",
           "-f", "framemd5", "-"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S)
    return [l for l in r.stdout.splitlines() if l and not l.startswith("#")], r.stderr


def run_streaming(cmd, is_frame):
    """Runs `cmd`, returning (seconds to the first stdout line `is_frame` accepts, every stdout line, stderr, code)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = None
    lines = []
    timer = threading.Timer(CLIENT_TIMEOUT_S, proc.kill)
    timer.start()
    try:
        for line in proc.stdout:
            if first is None and is_frame(line):
                first = time.monotonic() - t0
            lines.append(line)
        err = proc.stderr.read()
        proc.wait()
    finally:
        timer.cancel()
    return first, lines, err, proc.returncode


PTS = re.compile(r"\(vs:sink\) \(\d+ bytes, dts: [^,]*, pts: (\d+):(\d+):(\d+)\.(\d+)")
# The sink's caps, as its pad's notify or its last-message's caps event prints them (escaped there).
CAPS = re.compile(r"GstFakeSink:vs.*video/x-raw.*?width\\?=\\?\(int\\?\)(\d+).*?height\\?=\\?\(int\\?\)(\d+)")


def play_gst(url):
    cmd = ["stdbuf", "-oL", "gst-launch-1.0", "-v", "playbin", f"uri={url}",
           "video-sink=fakesink name=vs sync=false silent=false", "audio-sink=fakesink sync=false"]
    first, lines, err, code = run_streaming(cmd, lambda l: PTS.search(l) is not None)
    pts = set()
    size = None
    for line in lines + err.splitlines():
        m = PTS.search(line)
        if m:
            h, mi, s, frac = m.groups()
            pts.add((int(h) * 3600 + int(mi) * 60 + int(s)) * 10**9 + int(frac.ljust(9, "0")[:9]))
        c = CAPS.search(line)
        if c and size is None:
            size = (int(c.group(1)), int(c.group(2)))
    error = None
    if code != 0 or "ERROR" in "".join(lines):
        error = (err.strip() or "".join(l for l in lines if "ERROR" in l)).splitlines()[-3:]
    return first, len(pts), size, error


def play_ffmpeg(url):
    cmd = ["ffmpeg", "-nostdin", "-v", "error", "-i", url, "-map", "0:v:0", "-fps_mode", "passthrough",
           "-f", "framemd5", "-"]
    first, lines, err, code = run_streaming(cmd, lambda l: l and not l.startswith("#"))
    frames = [l.rstrip("\n") for l in lines if l.strip() and not l.startswith("#")]
    return first, frames, (err.strip().splitlines()[-3:] if code != 0 else None)


def place(src_folder, path, name):
    """Copies `path` into the served folder as `name`, whole at once (a hidden copy renamed in)."""
    hidden = os.path.join(src_folder, "." + name + ".part")
    shutil.copyfile(path, hidden)
    os.rename(hidden, os.path.join(src_folder, name))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--videofeed", required=True)
    ap.add_argument("--first-frame-limit", type=float, default=None,
                    help="seconds: a 1080x1920 item's first frame later than this fails (release builds only)")
    ap.add_argument("--clients", default="gst,ffmpeg")
    ap.add_argument("--json", default=None)
    ap.add_argument("items", nargs="*")
    args = ap.parse_args()
    for tool in ("gst-launch-1.0", "ffmpeg", "stdbuf"):
        if not shutil.which(tool):
            log(f"{tool} is missing (make browser-deps installs GStreamer)")
            return 2
    clients = [c for c in args.clients.split(",") if c]
    work = tempfile.mkdtemp(prefix="vfe-native.")
    server = None
    failures, results = [], []
    try:
        items = items_from(args.items, work)
        batch, records = batch_reference(args.videofeed, items, work)
        src = os.path.join(work, "src")
        os.makedirs(src)
        shutil.copyfile(os.path.join(ROOT, "Fixtures/media/image.jpg"), os.path.join(src, "000_filler.jpg"))
        server = Server(args.videofeed, src, work)
        log(server.url)
        for n, path in enumerate(items):
            base = os.path.basename(path)
            rec = records.get(base)
            if not rec or rec.get("status") != "ok" or not rec.get("master"):
                log(f"SKIP {base}: the batch made no playlists ({(rec or {}).get('error', 'no record')})")
                continue
            renditions = rec["renditions"]
            first_r = renditions[0]
            stem, ext = os.path.splitext(base)
            for client in clients:
                name = f"{n:03d}_{client}_{stem}"
                place(src, path, name + ext)
                card = server.card(name)
                hls = card.get("hls")
                label = f"{client} {base}"
                if not hls:
                    failures.append(f"{label}: the card has no hls URL: {card}")
                    continue
                if not card.get("pending"):
                    failures.append(f"{label}: the item was not cold (its manifest was made before the client asked)")
                url = server.url + hls
                result = {"item": base, "client": client, "source": f"{rec.get('width')}x{rec.get('height')}"}
                if client == "gst":
                    first, count, size, error = play_gst(url)
                    want = next((r for r in renditions if size and (r["width"], r["height"]) == size), None)
                    result.update(first_frame_s=first, frames=count, size=size, expected=want and want["frames"])
                    if error:
                        failures.append(f"{label}: playbin failed: {error}")
                    elif want is None:
                        failures.append(f"{label}: playbin decoded {size}, which no rendition has "
                                        f"({[(r['width'], r['height']) for r in renditions]})")
                    elif count != want["frames"]:
                        failures.append(f"{label}: playbin decoded {count} pictures of {want['name']}, "
                                        f"the batch has {want['frames']}")
                else:
                    first, frames, error = play_ffmpeg(url)
                    expected, _ = framemd5(os.path.join(batch, first_r["playlist"]))
                    result.update(first_frame_s=first, frames=len(frames), size=(first_r["width"], first_r["height"]),
                                  expected=len(expected))
                    if error:
                        failures.append(f"{label}: ffmpeg failed: {error}")
                    elif frames != expected:
                        diff = next((i for i, (a, b) in enumerate(zip(frames, expected)) if a != b), min(len(frames), len(expected)))
                        failures.append(f"{label}: ffmpeg decoded {len(frames)} pictures, the batch's playlist "
                                        f"{len(expected)}; first difference at line {diff}")
                results.append(result)
                tall = card.get("width") == 1080 and card.get("height") == 1920 or "1080x1920" in base
                ff = result.get("first_frame_s")
                slow = (args.first_frame_limit is not None and tall and (ff is None or ff > args.first_frame_limit))
                if slow:
                    failures.append(f"{label}: first frame after {ff} s (limit {args.first_frame_limit} s)")
                status = "FAIL" if any(f.startswith(label + ":") for f in failures) else "PASS"
                log(f"{status} {label}: {result['frames']}/{result['expected']} pictures at "
                    f"{result['size']}, first after {ff if ff is None else round(ff, 3)} s")
        if not server.alive:
            failures.append("the server died: " + server.log())
    except Exception as e:  # noqa: BLE001 — a setup failure is reported, not a crash
        log(f"could not run: {e}")
        return 2
    finally:
        if server:
            server.stop()
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
        shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        log("FAIL " + f)
    played = [r for r in results if r.get("first_frame_s") is not None]
    if played:
        times = sorted(r["first_frame_s"] for r in played)
        log(f"{len(results)} plays, first frame median {times[len(times) // 2]:.3f} s, max {times[-1]:.3f} s")
    if not results:
        log("nothing was played")
        return 1
    log("passed" if not failures else f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
