#!/usr/bin/env python3
"""How soon `videofeed serve` lists a file after it is complete (issue 38: within 2 s).

Starts `videofeed serve` on an empty temporary folder, then lands each media file of the given folders in it, one at a
time, three ways: written in place (`cp`: open, write, close), renamed in whole (written under a hidden name, then
`rename`), and written slowly (64 KiB every 50 ms, the way an upload trickles in). For each, the time from the file
being complete (the close, or the rename) to its `public_id` in `GET /api/feed?pending=1` is measured, polling every
10 ms; a file listed before it was complete is a failure. Prints one line per way (count, median, p95, max) and exits
1 if any file took longer than --limit seconds or was listed early.

  python3 scripts/serve-arrival.py [--videofeed BIN] [--refresh S] [--limit 2] FOLDER...
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

MEDIA = {".mp4", ".mov", ".m4v", ".webm", ".mkv", ".ts", ".avi", ".flv", ".jpg", ".jpeg", ".png", ".gif", ".heic",
         ".avif", ".mp3", ".webp"}


def listed(base):
    with urllib.request.urlopen(base + "/api/feed?pending=1&limit=50", timeout=10) as answer:
        page = json.load(answer)
    return {r["public_id"] for r in page.get("resources", [])}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--videofeed", default=None)
    parser.add_argument("--refresh", default="10")
    parser.add_argument("--limit", type=float, default=2.0)
    args = parser.parse_args()
    binary = args.videofeed or os.path.join(
        subprocess.check_output(["swift", "build", "--show-bin-path"], text=True).strip(), "videofeed")
    files = sorted(os.path.join(d, f) for d in args.folders for f in os.listdir(d)
                   if os.path.splitext(f)[1].lower() in MEDIA and os.path.isfile(os.path.join(d, f)))
    work = tempfile.mkdtemp(prefix="vfe-arrival-")
    feed, cache = os.path.join(work, "feed"), os.path.join(work, "cache")
    os.mkdir(feed)
    server = subprocess.Popen([binary, "serve", feed, "--port", "0", "--cache", cache, "--refresh", args.refresh],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = server.stdout.readline()
        base = line.strip().split(" ")[-1].rstrip("/")
        results = {"cp": [], "rename": [], "trickle": []}
        early = []
        n = 0
        for path in files:
            for way in results:
                n += 1
                name = f"{n:03d}-{way}"
                ext = os.path.splitext(path)[1].lower()
                target = os.path.join(feed, name + ext)
                seen_early = threading.Event()
                stop = threading.Event()

                def watch():
                    while not stop.is_set():
                        if name in listed(base):
                            seen_early.set()
                            return
                        time.sleep(0.02)

                watcher = threading.Thread(target=watch)
                watcher.start()
                if way == "cp":
                    shutil.copyfile(path, target)
                elif way == "rename":
                    hidden = os.path.join(feed, "." + name + ext)
                    shutil.copyfile(path, hidden)
                    os.rename(hidden, target)
                else:
                    with open(path, "rb") as src, open(target, "wb") as dst:
                        while chunk := src.read(64 * 1024):
                            dst.write(chunk)
                            dst.flush()
                            time.sleep(0.05)
                complete = time.monotonic()
                stop.set()
                watcher.join()
                if seen_early.is_set():
                    early.append(f"{name} ({os.path.basename(path)})")
                while name not in listed(base):
                    if time.monotonic() - complete > 30:
                        break
                    time.sleep(0.01)
                results[way].append(time.monotonic() - complete)
        worst = 0.0
        for way, times in results.items():
            times.sort()
            p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
            worst = max(worst, times[-1])
            print(f"{way:8s} {len(times):3d} files: median {statistics.median(times):.3f} s, p95 {p95:.3f} s, "
                  f"max {times[-1]:.3f} s")
        print(f"{len(files)} source files; listed before complete: {len(early)} {' '.join(early)}")
        if early or worst > args.limit:
            print(f"FAIL: limit {args.limit} s", file=sys.stderr)
            return 1
        return 0
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
