#!/usr/bin/env python3
"""Transcodes every media file of a folder with `videofeed transcode` and checks each rendition against the source
with the ffmpeg CLI: decodes with `ffmpeg -v error` and no message, the frame count follows the source (or the frame
rate cap), the duration is within one frame of the source's video, the picture is upright and square-pixel (its
aspect is the source's display aspect after ffmpeg's autorotation), HDR sources come out BT.709, and the CMAF
segments joined after their init show every video frame and audio packet at the fast-start MP4's times. Prints a Markdown
table; exit 1 if any check failed.

    python3 scripts/transcode-conformance.py [--bin videofeed] [--out DIR] FOLDER
"""
import argparse, json, os, subprocess, sys, tempfile


def probe(path, *args):
    out = subprocess.run(["ffprobe", "-v", "error", "-of", "json", *args, path], capture_output=True, text=True)
    return json.loads(out.stdout or "{}")


def video_facts(path):
    """Frames decoded, first frame start to last frame end, upright display size, transfer, from ffprobe."""
    frames = probe(path, "-select_streams", "v:0", "-show_entries",
                   "frame=best_effort_timestamp_time,duration_time,pkt_duration_time,width,height,"
                   "sample_aspect_ratio:frame_side_data", "-show_frames").get("frames", [])
    stream = (probe(path, "-select_streams", "v:0", "-show_streams").get("streams") or [{}])[0]
    times = [float(f["best_effort_timestamp_time"]) for f in frames if "best_effort_timestamp_time" in f]
    durations = [float(f.get("duration_time") or f.get("pkt_duration_time") or 0) for f in frames]
    # A frame without a duration (the last one, often) lasts as long as the usual gap between frames.
    gaps = sorted(b - a for a, b in zip(sorted(times), sorted(times)[1:]) if b > a)
    usual = gaps[len(gaps) // 2] if gaps else 0
    durations = [d if d > 0 else usual for d in durations]
    span = (max(t + d for t, d in zip(times, durations)) - min(times)) if times else 0
    w, h = int(stream.get("width", 0)), int(stream.get("height", 0))
    sar = stream.get("sample_aspect_ratio", "1:1")
    num, den = (int(x) for x in sar.split(":")) if ":" in sar and sar != "0:1" else (1, 1)
    width = w * num / den if num and den else w
    rotation = 0
    for side in stream.get("side_data_list", []):
        rotation = int(side.get("rotation", rotation) or 0)
    if abs(rotation) % 180 == 90:
        width, h = h, width
    rate = stream.get("avg_frame_rate", "0/1").split("/")
    fps = float(rate[0]) / float(rate[1]) if len(rate) == 2 and float(rate[1]) else 0
    return dict(frames=len(frames), span=span, aspect=width / h if h else 0, fps=fps,
                transfer=stream.get("color_transfer"), width=w, height=h)


def packet_times(path, stream):
    """Presentation times (ms) of every packet of the first `stream` ("v" or "a") stream, as ffprobe reads them."""
    data = probe(path, "-select_streams", stream + ":0", "-show_entries", "packet=pts_time")
    return [round(float(p["pts_time"]) * 1000) for p in data.get("packets", []) if "pts_time" in p]


def segments_problem(out, rendition):
    """The rendition's init + media segments joined must show the fast-start MP4's video frames and audio packets at
    the same times (each segment is its own encoder session; its timeline must still be the whole item's)."""
    segments = rendition.get("segments") or []
    if not segments or not rendition.get("init"):
        return None
    joined = os.path.join(out, "segments-joined.mp4")
    with open(joined, "wb") as f:
        for part in [rendition["init"]] + segments:
            with open(os.path.join(out, part), "rb") as g:
                f.write(g.read())
    mp4 = os.path.join(out, rendition["mp4"])
    problem = None
    if sorted(packet_times(joined, "v")) != sorted(packet_times(mp4, "v")):
        problem = "segment video times"
    elif packet_times(joined, "a") != packet_times(mp4, "a"):
        problem = "segment audio times"
    os.unlink(joined)
    return problem


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    parser.add_argument("--bin", default=None)
    parser.add_argument("--out", default=None)
    parser.add_argument("--max-fps", type=float, default=60)
    args = parser.parse_args()
    binary = args.bin or os.path.join(subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"],
                                                     capture_output=True, text=True).stdout.strip(), "videofeed")
    out = args.out or tempfile.mkdtemp(prefix="vfe-tconf.")
    run = subprocess.run([binary, "transcode", args.folder, "--out", out, "--ladder", "720x1280", "-q",
                          "--preview-seconds", "0"], capture_output=True, text=True)
    print(run.stdout.strip())
    records = [json.loads(l) for l in open(os.path.join(out, "renditions.jsonl"))]
    print("\n| file | source | rendition | frames (src → out) | duration s (src → out) | aspect (src → out) | transfer | ffmpeg -v error | verdict |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    failures = 0
    for record in sorted(records, key=lambda r: r["public_id"]):
        source = record["source"]
        name = os.path.basename(source)
        if record["status"] != "ok":
            print(f"| {name} | | failed: {record.get('error', '')[:90]} | | | | | | expected only for files that decode to nothing |")
            continue
        rendition = record["renditions"][0]
        mp4 = os.path.join(out, rendition["mp4"])
        src, made = video_facts(source), video_facts(mp4)
        def messages(path):
            text = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-f", "null", "-"], capture_output=True,
                                  text=True).stderr
            return {line.split("] ", 1)[-1] for line in text.splitlines() if line.strip()}
        # A message the source gives as well (ffmpeg's null muxer on some VFR timings) is not the rendition's fault.
        errors = "\n".join(sorted(messages(mp4) - messages(source)))
        still = record.get("still", False)
        capped = src["fps"] > args.max_fps * 1.05
        problems = []
        if errors:
            problems.append("decode messages")
        if not still and not capped and made["frames"] != src["frames"]:
            problems.append("frame count")
        frame = 1 / src["fps"] if src["fps"] else 0.04
        if not still and abs(made["span"] - src["span"]) > frame + 0.002:
            problems.append("duration")
        if src["aspect"] and abs(made["aspect"] - src["aspect"]) / src["aspect"] > 0.02:
            problems.append("aspect")
        if made["transfer"] not in ("bt709",):
            problems.append("transfer")
        segment_problem = segments_problem(out, rendition)
        if segment_problem:
            problems.append(segment_problem)
        failures += bool(problems)
        print(f"| {name} | {src['width']}x{src['height']} | {made['width']}x{made['height']} {rendition['codecs']} | "
              f"{src['frames']} → {made['frames']}{' (still)' if still else ''} | {src['span']:.3f} → {made['span']:.3f} | "
              f"{src['aspect']:.3f} → {made['aspect']:.3f} | {src['transfer']} → {made['transfer']} | "
              f"{'none' if not errors else errors.splitlines()[0][:40]} | {'ok' if not problems else ', '.join(problems)} |")
    print(f"\noutputs in {out}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
