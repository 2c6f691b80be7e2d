#!/usr/bin/env python3
"""Checks, for every media file of a folder, that where `videofeed probe --json` says the video ends (`videoEnd`,
read from its packets: what `TranscodePlan` takes as the duration and `videofeed serve` lists) is within one frame of
the end of the last frame ffmpeg decodes (`ffmpeg -noautorotate -i F -map 0:v:0 -fps_mode passthrough -f framemd5 -`,
its last frame's pts + duration), and shows the container's claim (ffprobe's duration) beside both.

Both ends are on the item's timeline, which starts at the container's start (every stream's earliest time, ffprobe's
format start_time): ffmpeg runs with `-copyts` and the start is subtracted. (Without `-copyts`, ffmpeg starts its output
at the mapped video's own start: a TS whose audio starts 0.73 s before its video, test-009.ts, ends 0.73 s earlier.)

    python3 scripts/duration-conformance.py [--bin videofeed] FOLDER

Prints a Markdown table: file, claim, decoded end, videofeed's end, how it was found and the bytes it read, the time
the probe took, and a verdict. Files without a video stream, stills and files only one side opens are listed apart.
Exit status 1 when any end is off by more than one frame (or is incomplete where ffmpeg decodes the whole file).
"""
import argparse, json, os, subprocess, sys, time

SKIP_SUFFIXES = (".md", ".tsv", ".json", ".jsonl", ".sh", ".py", ".framemd5", ".txt")


def decoded(path):
    """(end in seconds, frame duration in seconds, frames) of what ffmpeg decodes of the first video stream."""
    run = subprocess.run(["ffmpeg", "-v", "error", "-copyts", "-noautorotate", "-i", path, "-map", "0:v:0", "-fps_mode",
                          "passthrough", "-f", "framemd5", "-"], capture_output=True, text=True, timeout=600)
    tb, end, frames, gaps, last = None, None, 0, [], None
    for line in run.stdout.splitlines():
        if line.startswith("#tb 0:"):
            num, den = line.split(":")[1].strip().split("/")
            tb = int(num) / int(den)
        elif line and not line.startswith("#") and tb:
            fields = [f.strip() for f in line.split(",")]
            pts, duration = int(fields[2]), int(fields[3])
            end = max(end or 0, (pts + duration) * tb)
            if last is not None and pts > last:
                gaps.append((pts - last) * tb)
            last = pts
            frames += 1
    gaps.sort()
    start = claim(path)[1] or 0
    return None if end is None else end - start, (gaps[len(gaps) // 2] if gaps else 0.04), frames


def claim(path):
    """(duration, start_time) of the container, as ffprobe reports them (None when it does not)."""
    run = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration,start_time", "-of", "json",
                          path], capture_output=True, text=True, timeout=120)
    def number(key):
        try:
            return float(json.loads(run.stdout)["format"][key])
        except (ValueError, KeyError):
            return None
    return number("duration"), number("start_time")


def ours(binary, path):
    start = time.monotonic()
    run = subprocess.run([binary, "probe", "--json", path], capture_output=True, text=True, timeout=600)
    took = time.monotonic() - start
    try:
        entry = json.loads(run.stdout)[0]
    except (ValueError, IndexError):
        return None, took
    return entry, took


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", default=".build/debug/videofeed")
    parser.add_argument("folder")
    args = parser.parse_args()
    files = sorted(f for f in os.listdir(args.folder)
                   if os.path.isfile(os.path.join(args.folder, f)) and not f.endswith(SKIP_SUFFIXES))
    bad = 0
    print("| file | claim (s) | decoded end (s) | videofeed end (s) | found by | read | probe time | verdict |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in files:
        path = os.path.join(args.folder, name)
        entry, took = ours(args.bin, path)
        end, frame, frames = decoded(path)
        said = claim(path)[0]
        fmt = lambda v: "-" if v is None else f"{v:.3f}"
        found = (entry or {}).get("videoEnd")
        info = (entry or {}).get("info") or {}
        video = [s for s in info.get("streams", []) if s.get("kind") == "video"]
        if entry is None or entry.get("error"):
            verdict = "videofeed fails" + ("" if end is None else " (ffmpeg decodes)")
            bad += end is not None and not (entry or {}).get("error", {}).get("kind") in ("policyViolation",
                                                                                           "limitExceeded")
        elif not video or all(s.get("isAttachedPicture") for s in video) or frames <= 1:
            verdict = "no video to end (still, cover or audio)"
        elif found is None:
            verdict = "no end found" + ("" if end is None else " — ffmpeg decodes")
            bad += end is not None
        elif end is None:
            verdict = "ffmpeg decodes nothing"
        else:
            off = found["end"] - end
            ok = abs(off) <= frame + 0.002 and found["isComplete"]
            verdict = ("within a frame" if ok else "OFF") + f" ({off * 1000:+.0f} ms, frame {frame * 1000:.0f} ms)"
            bad += not ok
        how = "-" if not found else found["method"] + ("" if found["isComplete"] else " (incomplete)")
        read = "-" if not found else f"{(found['bytesRead'] + 1023) // 1024} KB"
        print(f"| {name} | {fmt(said)} | {fmt(end)} | {fmt(found and found['end'])} | {how} | {read} | "
              f"{took * 1000:.0f} ms | {verdict} |")
    print(f"\n{len(files) - bad}/{len(files)} files pass")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
