#!/usr/bin/env python3
"""Compares `videofeed probe --json` with `ffprobe -show_format -show_streams` field by field for every file of a
folder, and the thumbnails' aspect with the display aspect ffprobe gives.

HEIC/AVIF photos are left to photo-conformance.py (ffprobe 5.1 is no reference for them).

Per file and per video stream: codec, stored size, sample aspect ratio and display aspect ratio (as ffprobe prints
them: from `av_guess_sample_aspect_ratio`, "N/A" when unknown), rotation (clockwise, from the display matrix), pixel
format, average and base frame rate, stream duration; per audio stream the codec; per file the container duration.
Then `videofeed thumbs FOLDER --format png` renders one thumbnail per file (320 wide, height by aspect) and its
aspect is checked against ffprobe's display aspect after rotation, within the rounding of one pixel.

    python3 scripts/probe-conformance.py [--bin videofeed] FOLDER

Prints one line per file (`same` or the fields that differ, `ffprobe=… videofeed=…`), then a summary and a last line
"N/M files same". A file only our open policy refuses (an index bomb, a playlist) is counted apart, as deliberate.
Exit status 1 when any field or thumbnail differs, or only one side fails otherwise.
"""
import argparse, json, os, shutil, struct, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from importlib import import_module

# HEIC/AVIF photos are checked against their own boxes by photo-conformance.py: ffprobe 5.1 is no reference for them.
is_photo = import_module("photo-conformance").is_photo

# Error kinds of the open policy (index bombs, playlists, compressed headers): refusals ffprobe does not make.
REFUSALS = ("policyViolation", "limitExceeded")
SKIP_SUFFIXES = (".md", ".tsv", ".json", ".jsonl", ".sh", ".py", ".framemd5")


def ffprobe(path):
    run = subprocess.run(["ffprobe", "-v", "error", "-show_format", "-show_streams", "-of", "json", path],
                         capture_output=True, text=True, timeout=120)
    return json.loads(run.stdout) if run.returncode == 0 and run.stdout.strip() else None


def frame_orientation(path, stream_index):
    """The display matrix FFmpeg attaches to the stream's first decoded frame (a JPEG's EXIF Orientation), as
    (clockwise rotation ffprobe prints, whether width and height swap), or None when the frame carries none."""
    run = subprocess.run(["ffprobe", "-v", "error", "-select_streams", str(stream_index), "-read_intervals", "%+#1",
                          "-show_frames", "-of", "json", path], capture_output=True, text=True, timeout=120)
    try:
        frames = json.loads(run.stdout).get("frames", [])
    except ValueError:
        return None
    for side in (frames[0].get("side_data_list", []) if frames else []):
        if "displaymatrix" in side.get("side_data_type", "").replace(" ", "").lower():
            # First row of the matrix: "a b u"; a is 0 exactly when the picture is turned a quarter.
            rows = [line.split(":", 1)[1].split() for line in side.get("displaymatrix", "").strip().splitlines()]
            return int(round(-float(side.get("rotation", 0)))) % 360, bool(rows) and int(rows[0][0]) == 0
    return None


def with_frame_orientation(ff, path):
    """Adds to each video stream without a display matrix of its own the one of its first frame (as `frame_matrix`: rotation, quarter turn):
    the orientation FFmpeg gives decoded frames, which is what we honour where the stream has none."""
    for s in ff.get("streams", []):
        if s.get("codec_type") == "video" and not any(d.get("side_data_type") == "Display Matrix"
                                                      for d in s.get("side_data_list", [])):
            found = frame_orientation(path, s["index"])
            if found:
                s["frame_matrix"] = found
    return ff


def ours(binary, path):
    run = subprocess.run([binary, "probe", "--json", path], capture_output=True, text=True, timeout=120)
    try:
        entry = json.loads(run.stdout)[0]
    except (ValueError, IndexError):
        return None, ("other", run.stderr.strip())
    error = entry.get("error") or {}
    return entry.get("info"), (error.get("kind"), error.get("message"))


def ratio(text, sep):
    """ffprobe's "a:b" / "a/b" as (a, b); None for N/A or a missing field."""
    if not text or text == "N/A" or sep not in text:
        return None
    a, b = text.split(sep)
    return int(a), int(b)


def rational(r):
    return (r["numerator"], r["denominator"]) if r else None


def rotation_cw(stream):
    for side in stream.get("side_data_list", []):
        if side.get("side_data_type") == "Display Matrix":
            return int(round(-float(side.get("rotation", 0)))) % 360
    return 0


def seconds(text):
    return None if text in (None, "N/A") else round(float(text), 6)


def compare(ff, vf):
    """The fields that differ, as (name, ffprobe value, videofeed value)."""
    diffs = []

    def check(name, a, b):
        if a != b:
            diffs.append((name, a, b))

    check("duration", seconds(ff["format"].get("duration")),
          None if vf.get("duration") is None else round(vf["duration"], 6))
    streams = {s["index"]: s for s in vf["streams"]}
    check("streams", len(ff["streams"]), len(vf["streams"]))
    for s in ff["streams"]:
        mine = streams.get(s["index"])
        kind = s.get("codec_type")
        if mine is None:
            diffs.append((f"#{s['index']}", kind, None))
            continue
        tag = f"#{s['index']} "
        check(tag + "kind", kind, mine["kind"])
        # A stream FFmpeg knows no codec for (an Apple mebx track): ffprobe leaves codec_name out, we say "none".
        check(tag + "codec", s.get("codec_name", "none"), mine["codec"])
        if kind != "video":
            continue
        check(tag + "size", (s.get("width"), s.get("height")), (mine["width"], mine["height"]))
        sar = ratio(s.get("sample_aspect_ratio"), ":")
        my_sar = rational(mine["sampleAspectRatio"])
        check(tag + "SAR", sar, my_sar if my_sar and my_sar[0] else None)
        check(tag + "DAR", ratio(s.get("display_aspect_ratio"), ":"), rational(mine.get("displayAspectRatio")))
        # With a mirror, ffprobe's angle is the turn made before mirroring; ours (Orientation) the turn after it:
        # mirror-then-turn-by-r is turn-by-(-r)-then-mirror.
        turn = mine["orientation"]["rotation"]
        if "frame_matrix" in s:
            # A frame's matrix (EXIF): ffprobe's angle alone does not say which of the eight orientations it is (a
            # vertical flip prints 0), so compare whether the picture is turned a quarter; Fixtures/orientation's
            # tests check all eight pixel by pixel.
            check(tag + "frame rotation (quarter turn)", s["frame_matrix"][1], turn in (90, 270))
        else:
            check(tag + "rotation", rotation_cw(s), (360 - turn) % 360 if mine["orientation"]["mirrored"] else turn)
        pix = s.get("pix_fmt")
        check(tag + "pix_fmt", None if pix in (None, "unknown") else pix, mine.get("pixelFormat"))
        check(tag + "avg_frame_rate", ratio(s.get("avg_frame_rate"), "/"), rational(mine["averageFrameRate"]))
        check(tag + "r_frame_rate", ratio(s.get("r_frame_rate"), "/"), rational(mine["baseFrameRate"]))
        check(tag + "stream duration", seconds(s.get("duration")),
              None if mine.get("duration") is None else round(mine["duration"], 6))
    return diffs


def shown_aspect(ff):
    """Width over height of the first video stream as a player shows it (SAR and rotation applied), or None."""
    video = [s for s in ff["streams"] if s.get("codec_type") == "video"]
    plain = [s for s in video if not s.get("disposition", {}).get("attached_pic")]
    s = (plain or video or [None])[0]
    if not s or not s.get("width") or not s.get("height"):
        return None
    dar = ratio(s.get("display_aspect_ratio"), ":")
    aspect = dar[0] / dar[1] if dar and dar[1] else s["width"] / s["height"]
    quarter = s["frame_matrix"][1] if "frame_matrix" in s else rotation_cw(s) in (90, 270)
    return 1 / aspect if quarter else aspect


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    return struct.unpack(">II", head[16:24]) if head[:8] == b"\x89PNG\r\n\x1a\n" else None


def thumbnails(binary, files):
    """{source path: (width, height)} of each file's first thumbnail, from one `videofeed thumbs` run over copies
    named so that no two share a public_id (a folder feed skips `sample.mp4` next to `sample.avi`)."""
    work = tempfile.mkdtemp(prefix="vfe-pconf.")
    items, out = os.path.join(work, "items"), os.path.join(work, "out")
    os.mkdir(items)
    copies = {}
    for i, path in enumerate(files):
        copy = os.path.join(items, f"{i:03d}{os.path.splitext(path)[1]}")
        shutil.copyfile(path, copy)
        copies[os.path.realpath(copy)] = path
    subprocess.run([binary, "thumbs", items, "--out", out, "--format", "png", "-q", "--jobs", "1"],
                   capture_output=True, text=True, timeout=1800)
    sizes = {}
    cards = os.path.join(out, "cards.jsonl")
    for line in open(cards) if os.path.exists(cards) else []:
        card = json.loads(line)
        source = os.path.realpath(card.get("source", "").removeprefix("file://"))
        if card.get("status") == "ok" and card.get("thumbnails") and source in copies:
            sizes[copies[source]] = png_size(os.path.join(out, card["thumbnails"][0]))
    shutil.rmtree(work)
    return sizes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--bin", default=os.environ.get("VIDEOFEED"))
    args = parser.parse_args()
    binary = args.bin or os.path.join(subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"],
                                                     capture_output=True, text=True).stdout.strip(), "videofeed")
    files = sorted(os.path.join(root, name) for root, _, names in os.walk(args.folder) for name in names
                   if not name.startswith(".") and not name.endswith(SKIP_SUFFIXES)
                   and not is_photo(os.path.join(root, name)))
    thumbs = thumbnails(binary, files)
    same = bothfail = differ = onlyone = refused = 0
    for path in files:
        name = os.path.relpath(path, args.folder)
        ff = ffprobe(path)
        if ff:
            ff = with_frame_orientation(ff, path)
        vf, error = ours(binary, path)
        if ff is None or vf is None:
            kind, message = error
            if ff is None and vf is None:
                bothfail += 1
                verdict = f"both fail — videofeed: {message}"
            elif vf is None and kind in REFUSALS:
                refused += 1
                verdict = f"refused by the open policy ({kind}, deliberate): {message}"
            else:
                onlyone += 1
                verdict = f"only videofeed fails: {message}" if vf is None else "only ffprobe fails"
            print(f"{name:52} {verdict}")
            continue
        diffs = compare(ff, vf)
        aspect, size = shown_aspect(ff), thumbs.get(path)
        thumb = ", no thumbnail" if aspect else ""
        if aspect and size:
            w, h = size
            # Fitted to 320 wide (or clamped to 4x taller), the short side is rounded: within one pixel.
            want_h = w / aspect
            if abs(h - want_h) > 1 and abs(w - h * aspect) > 1:
                diffs.append(("thumbnail", f"{aspect:.4f} (→ {w}x{round(want_h)})", f"{w}x{h}"))
            thumb = f", thumbnail {w}x{h}"
        if diffs:
            differ += 1
            text = "; ".join(f"{n}: ffprobe={a} videofeed={b}" for n, a, b in diffs)
            print(f"{name:52} differs — {text}")
        else:
            same += 1
            print(f"{name:52} same{thumb}")
    print(f"summary: {same} same, {differ} differ, {bothfail} both fail, {refused} refused by policy, "
          f"{onlyone} only one side fails")
    print(f"{same}/{len(files)} files same")
    sys.exit(0 if differ == 0 and onlyone == 0 else 1)


if __name__ == "__main__":
    main()
