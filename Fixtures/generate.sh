#!/usr/bin/env bash
# Regenerates every committed fixture of VideoFeedEngine with the ffmpeg CLI:
#   media/    small playable files (one per codec / container / edge case)
#   bad/      inputs that must be rejected cleanly
#   golden/   <file>.framemd5 of the first video stream of every media/ file
#   expected.tsv  ffprobe facts about every media/ file
#   feed.json     the bundled demo feed (one item per media/ file)
#
#   bash Fixtures/generate.sh           regenerate all of the above (and verify it)
#   bash Fixtures/generate.sh --bench   ONLY make bench/bench_1080x1920_30s.mp4 (not committed)
#   bash Fixtures/generate.sh --bench-thumbs   ONLY make bench/thumbs/clip_NNN.mp4, 100 clips for the thumbnail
#                                       batch benchmark (not committed): 10 distinct encodes, each hard-linked 10 times
#
# Needs ffmpeg/ffprobe (written against FFmpeg 5.1, Debian 12), coreutils and python3.
# Encoders run single-threaded with bitexact flags and no metadata so that a rerun
# on the same FFmpeg/x264/x265/libvpx/libaom build gives byte-identical files.
set -euo pipefail
export LC_ALL=C
cd "$(dirname "${BASH_SOURCE[0]}")"

for tool in ffmpeg ffprobe python3; do
  command -v "$tool" >/dev/null || { echo "generate.sh: $tool not found" >&2; exit 1; }
done

FF=(ffmpeg -nostdin -hide_banner -loglevel error -y)
# Output-side determinism flags (mux + encoder), shared by every encode.
DET=(-map_metadata -1 -map_chapters -1 -fflags +bitexact -flags:v +bitexact -flags:a +bitexact)
X264=(-c:v libx264 -threads 1 -pix_fmt yuv420p)
X265_PARAMS="log-level=error:pools=none:frame-threads=1"

log() { printf '%s\n' "$*" >&2; }
die() { printf 'generate.sh: FAILED: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------------------
# --bench: the large decode benchmark input only.
# ---------------------------------------------------------------------------
if [[ "${1:-}" == "--bench" ]]; then
  mkdir -p bench
  out=bench/bench_1080x1920_30s.mp4
  log "making $out (H.264 1080x1920 30 fps 30 s, veryfast crf 23)"
  "${FF[@]}" -f lavfi -i "testsrc2=size=1080x1920:rate=30:duration=30" \
    -c:v libx264 -preset veryfast -crf 23 -pix_fmt yuv420p "${DET[@]}" "$out"
  ffprobe -v error -select_streams v:0 -show_entries stream=codec_name,width,height,avg_frame_rate,nb_frames \
    -show_entries format=duration,size -of default=nw=1 "$out" >&2
  exit 0
elif [[ "${1:-}" == "--bench-thumbs" ]]; then
  # 100 inputs of H.264 1080x1920 30 fps 10 s. Encoding 100 distinct clips would take ~10 min and ~700 MB on the
  # 2-core machine, so 10 distinct encodes (testsrc2 with a different hue each) are each hard-linked 10 times:
  # 100 separate files for every tool alike, about 70 MB on disk.
  mkdir -p bench/thumbs
  for k in $(seq 0 9); do
    src=bench/thumbs/clip_$(printf '%03d' "$k").mp4
    if [[ ! -f "$src" ]]; then
      log "making $src (H.264 1080x1920 30 fps 10 s, veryfast crf 23, hue $((k * 36)))"
      "${FF[@]}" -f lavfi -i "testsrc2=size=1080x1920:rate=30:duration=10,hue=h=$((k * 36))" \
        -c:v libx264 -preset veryfast -crf 23 -pix_fmt yuv420p "${DET[@]}" "$src"
    fi
    for copy in $(seq 1 9); do
      ln -f "$src" "bench/thumbs/clip_$(printf '%03d' $((copy * 10 + k))).mp4"
    done
  done
  ls bench/thumbs | wc -l >&2
  exit 0
elif [[ $# -gt 0 ]]; then
  echo "usage: bash Fixtures/generate.sh [--bench | --bench-thumbs]" >&2
  exit 2
fi

start=$(date +%s)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

rm -rf media bad golden expected.tsv feed.json
mkdir -p media bad golden

# ---------------------------------------------------------------------------
# media/
# ---------------------------------------------------------------------------

log "media/h264_portrait.mp4"
# 720x1280 portrait, x264 default B-frames, AAC sine; plain mp4 => moov at the END.
"${FF[@]}" -f lavfi -i "testsrc2=size=720x1280:rate=30:duration=2" \
  -f lavfi -i "sine=frequency=440:sample_rate=44100:duration=2" \
  "${X264[@]}" -preset fast -crf 30 -g 60 \
  -c:a aac -b:a 64k -ac 1 "${DET[@]}" -shortest media/h264_portrait.mp4

log "media/hevc.mp4"
"${FF[@]}" -f lavfi -i "testsrc2=size=320x240:rate=25:duration=1" \
  -c:v libx265 -preset fast -crf 30 -pix_fmt yuv420p -tag:v hvc1 -x265-params "$X265_PARAMS" \
  "${DET[@]}" media/hevc.mp4

log "media/hevc_10bit.mp4"
"${FF[@]}" -f lavfi -i "testsrc2=size=320x240:rate=25:duration=1" \
  -c:v libx265 -preset fast -crf 30 -pix_fmt yuv420p10le -profile:v main10 -tag:v hvc1 \
  -x265-params "$X265_PARAMS" "${DET[@]}" media/hevc_10bit.mp4

log "media/vp9.webm"
"${FF[@]}" -f lavfi -i "testsrc2=size=320x240:rate=25:duration=1" \
  -f lavfi -i "sine=frequency=660:sample_rate=48000:duration=1" \
  -c:v libvpx-vp9 -threads 1 -row-mt 0 -deadline good -cpu-used 8 -b:v 0 -crf 40 -pix_fmt yuv420p \
  -c:a libopus -b:a 32k -ac 1 "${DET[@]}" -shortest media/vp9.webm

log "media/av1.mp4"
"${FF[@]}" -f lavfi -i "testsrc2=size=320x240:rate=25:duration=1" \
  -c:v libaom-av1 -threads 1 -row-mt 0 -cpu-used 8 -usage good -crf 40 -b:v 0 -pix_fmt yuv420p \
  "${DET[@]}" media/av1.mp4

log "media/mpeg4.avi"
"${FF[@]}" -f lavfi -i "testsrc2=size=320x240:rate=25:duration=1" \
  -c:v mpeg4 -threads 1 -q:v 6 -pix_fmt yuv420p "${DET[@]}" media/mpeg4.avi

# rotate90 / rotate270: the UPRIGHT picture is 240x320 (portrait): mid-gray, pure red
# 48x48 square top-left, pure blue 48x48 square bottom-right. The stored frames are
# the upright picture turned the other way (320x240), and the container's display
# matrix tells the player to turn them back.
UPRIGHT="color=c=0x808080:size=240x320:rate=25:duration=1,format=yuv444p"
UPRIGHT+=",drawbox=x=0:y=0:w=48:h=48:color=0xFF0000@1:t=fill"
UPRIGHT+=",drawbox=x=192:y=272:w=48:h=48:color=0x0000FF@1:t=fill"

# ffprobe prints the display matrix rotation counter-clockwise: a file that needs
# a 90 deg CLOCKWISE turn prints "rotation of -90.00 degrees".
probe_rotation() { # file -> ffprobe's displaymatrix rotation (empty if none)
  ffprobe -v error -select_streams v:0 -show_entries stream_side_data=rotation -of default=nw=1:nk=1 "$1" | tr -d ' \n'
}

make_rotated() { # cw_degrees transpose_filter out
  local cw=$1 tr=$2 out=$3 want got value
  "${FF[@]}" -f lavfi -i "$UPRIGHT,$tr" "${X264[@]}" -preset medium -crf 18 "${DET[@]}" "$TMP/stored_$cw.mp4"
  want=$(( cw == 90 ? -90 : 90 ))
  # The "rotate" tag is only turned into a display matrix on stream copy, and its
  # sign convention changed between FFmpeg releases (5.1 writes rotate=N as N deg
  # counter-clockwise). Try both spellings and keep the one ffprobe reads back right.
  for value in $(( (360 - cw) % 360 )) "$cw"; do
    "${FF[@]}" -i "$TMP/stored_$cw.mp4" -map 0:v -c copy -metadata:s:v:0 rotate="$value" \
      "${DET[@]}" "$out"
    got=$(probe_rotation "$out")
    [[ "$got" == "$want" ]] && return 0
  done
  die "$out: display matrix rotation is '$got', wanted $want"
}
log "media/rotate90.mp4"
make_rotated 90 "transpose=cclock" media/rotate90.mp4   # stored = upright turned 90 CCW
log "media/rotate270.mp4"
make_rotated 270 "transpose=clock" media/rotate270.mp4  # stored = upright turned 90 CW

log "media/odd_161x121.mkv"
# VP9 4:2:0 accepts odd sizes (chroma 81x61). testsrc2/color round yuv sizes to even,
# so use the RGB testsrc and convert.
"${FF[@]}" -f lavfi -i "testsrc=size=161x121:rate=25:duration=1,format=yuv420p" \
  -c:v libvpx-vp9 -threads 1 -row-mt 0 -deadline good -cpu-used 8 -b:v 0 -crf 40 -pix_fmt yuv420p \
  "${DET[@]}" media/odd_161x121.mkv

log "media/vfr.mp4"
# 0-1 s at 10 fps, 1-2 s at 30 fps, then one 0.25 s hold: three different frame durations.
"${FF[@]}" -f lavfi -i "testsrc2=size=320x240:rate=30:duration=2.25" \
  -vf "select='between(t,1,2)+not(mod(n,3))*lt(t,1)+eq(n,67)'" -fps_mode vfr \
  "${X264[@]}" -preset fast -crf 30 -video_track_timescale 90000 "${DET[@]}" media/vfr.mp4

log "media/black_start.mp4"
"${FF[@]}" -f lavfi -i "color=c=black:size=320x240:rate=25:duration=1" \
  -f lavfi -i "testsrc2=size=320x240:rate=25:duration=2" \
  -filter_complex "[0:v][1:v]concat=n=2:v=1:a=0[v]" -map "[v]" \
  "${X264[@]}" -preset fast -crf 28 "${DET[@]}" media/black_start.mp4

log "media/cover.mp3"
"${FF[@]}" -f lavfi -i "testsrc2=size=200x200:rate=1" -frames:v 1 \
  -vf "drawbox=x=50:y=50:w=100:h=100:color=0xFF8000@1:t=fill" -c:v png -flags:v +bitexact \
  -f image2 -update 1 "$TMP/cover.png"
"${FF[@]}" -f lavfi -i "sine=frequency=523.25:sample_rate=44100:duration=2" -i "$TMP/cover.png" \
  -map 0:a -map 1:v -c:a libmp3lame -b:a 64k -ac 1 -c:v copy -disposition:v:0 attached_pic \
  "${DET[@]}" -id3v2_version 3 -write_xing 1 \
  -metadata title="Fixture Tone" -metadata artist="VideoFeedEngine" -metadata album="Fixtures" \
  -metadata:s:v:0 title="Album cover" -metadata:s:v:0 comment="Cover (front)" \
  media/cover.mp3

log "media/image.png"
"${FF[@]}" -f lavfi -i "testsrc2=size=320x200:rate=1" -frames:v 1 -c:v png \
  "${DET[@]}" -f image2 -update 1 media/image.png

log "media/image.jpg"
"${FF[@]}" -f lavfi -i "testsrc2=size=400x300:rate=1" -frames:v 1 -c:v mjpeg -q:v 4 -pix_fmt yuvj420p \
  "${DET[@]}" -f image2 -update 1 media/image.jpg

log "media/animated.gif"
"${FF[@]}" -f lavfi -i "testsrc=size=160x120:rate=10:duration=1" \
  -vf "split[a][b];[a]palettegen=max_colors=64:stats_mode=full[p];[b][p]paletteuse=dither=none" \
  -loop 0 "${DET[@]}" media/animated.gif

# ---------------------------------------------------------------------------
# bad/
# ---------------------------------------------------------------------------
log "bad/"
: > bad/empty.mp4
head -c 2048 media/h264_portrait.mp4 > bad/truncated.mp4
python3 -c 'import random,sys; random.seed(1); sys.stdout.buffer.write(bytes(random.getrandbits(8) for _ in range(65536)))' > bad/random.mp4
cat > bad/text.txt <<'EOF'
This is not a video.
It is plain UTF-8 text used to check that the engine rejects non-media input
without crashing, whatever the file name claims.
EOF
cp bad/text.txt bad/text.mp4
"${FF[@]}" -f lavfi -i "sine=frequency=440:sample_rate=44100:duration=1" \
  -c:a aac -b:a 64k -ac 1 "${DET[@]}" bad/audio_only.m4a
# An H.264 elementary stream that grows midway: 3 frames at 64x64, 2 at 128x128, 3 at 64x64. Opened with a limit
# between the two sizes, decoding must fail with limitExceeded at the growth, never skip the large frames silently.
grow=$(mktemp -d)
"${FF[@]}" -f lavfi -i "color=blue:s=64x64:r=25" -frames:v 3 "${X264[@]}" -bf 0 -bsf:v h264_mp4toannexb "${DET[@]}" -f h264 "$grow/a.h264"
"${FF[@]}" -f lavfi -i "color=red:s=128x128:r=25" -frames:v 2 "${X264[@]}" -bf 0 -bsf:v h264_mp4toannexb "${DET[@]}" -f h264 "$grow/b.h264"
cat "$grow/a.h264" "$grow/b.h264" "$grow/a.h264" > bad/grows_midway.h264
rm -r "$grow"

# ---------------------------------------------------------------------------
# golden/<file>.framemd5 — exactly the command documented in README.md.
# ---------------------------------------------------------------------------
log "golden/"
for f in media/*; do
  name=$(basename "$f")
  ffmpeg -nostdin -hide_banner -loglevel error -noautorotate -i "$f" \
    -map 0:v:0 -fps_mode passthrough -f framemd5 - > "golden/$name.framemd5"
done

# ---------------------------------------------------------------------------
# expected.tsv and feed.json, from ffprobe.
# ---------------------------------------------------------------------------
log "expected.tsv, feed.json"
python3 - <<'PY'
import json, os, subprocess, datetime

# Feed / table order (newest first in feed.json).
ORDER = ["h264_portrait.mp4", "hevc.mp4", "hevc_10bit.mp4", "vp9.webm", "av1.mp4", "mpeg4.avi",
         "rotate90.mp4", "rotate270.mp4", "odd_161x121.mkv", "vfr.mp4", "black_start.mp4",
         "cover.mp3", "image.png", "image.jpg", "animated.gif"]
present = sorted(os.listdir("media"))
assert sorted(ORDER) == present, f"ORDER out of date: {sorted(ORDER)} vs {present}"
STILL = {"png", "jpg"}

def probe(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-show_format", "-show_streams", "-of", "json", path],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)

pixfmts = json.loads(subprocess.run(["ffprobe", "-v", "error", "-show_pixel_formats", "-of", "json"],
                                    check=True, capture_output=True, text=True).stdout)["pixel_formats"]
depth_of = {p["name"]: max((c["bit_depth"] for c in p.get("components", [])), default=0) for p in pixfmts}

rows, feed = [], []
t0 = datetime.datetime(2026, 11, 1, 10, 0, 0, tzinfo=datetime.timezone.utc)
for i, name in enumerate(ORDER):
    path = os.path.join("media", name)
    info = probe(path)
    v = next(s for s in info["streams"] if s["codec_type"] == "video")
    rot_ccw = 0
    for sd in v.get("side_data_list", []):
        if sd.get("side_data_type") == "Display Matrix":
            rot_ccw = int(round(float(sd.get("rotation", 0))))
    rot_cw = (-rot_ccw) % 360
    depth = v.get("bits_per_raw_sample")
    if not depth or depth == "N/A":
        depth = depth_of.get(v.get("pix_fmt"), 0)
    duration = info["format"].get("duration", "N/A")
    with open(os.path.join("golden", name + ".framemd5")) as g:
        frames = sum(1 for line in g if line.strip() and not line.startswith("#"))
    attached = int(v.get("disposition", {}).get("attached_pic", 0))
    w, h = int(v["width"]), int(v["height"])
    rows.append([name, v["codec_name"], w, h, v.get("pix_fmt", ""), int(depth), rot_cw,
                 duration, frames, attached, v.get("avg_frame_rate", "0/0")])

    stem, ext = name.rsplit(".", 1)
    stems = [n.rsplit(".", 1)[0] for n in ORDER]  # public_ids must be unique: image.png/image.jpg keep their type
    dw, dh = (h, w) if rot_cw in (90, 270) else (w, h)
    item = {
        "public_id": "fixtures/" + (stem if stems.count(stem) == 1 else stem + "_" + ext),
        "created_at": (t0 - datetime.timedelta(hours=i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "url": "media/" + name,
        "format": ext,
        "bytes": os.path.getsize(path),
        "width": dw,
        "height": dh,
    }
    if ext not in STILL:
        item["duration"] = round(float(duration), 3)
    feed.append(item)

with open("expected.tsv", "w") as f:
    f.write("\t".join(["file", "codec", "width", "height", "pix_fmt", "bit_depth", "rotation_cw",
                       "duration", "frames", "attached_pic", "avg_frame_rate"]) + "\n")
    for r in rows:
        f.write("\t".join(str(c) for c in r) + "\n")
with open("feed.json", "w") as f:
    json.dump(feed, f, indent=2)
    f.write("\n")
PY

# ---------------------------------------------------------------------------
# Verification: fail loudly if a fixture does not test what it claims to.
# ---------------------------------------------------------------------------
log "verifying"
python3 - <<'PY'
import json, subprocess, re, os, sys

def run(args, **kw):
    return subprocess.run(args, capture_output=True, **kw)

def fail(msg):
    sys.exit("generate.sh: FAILED: " + msg)

# h264_portrait: B-frames present, moov after mdat.
types = run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pict_type",
             "-of", "default=nw=1:nk=1", "media/h264_portrait.mp4"], text=True).stdout.split()
if "B" not in types:
    fail("h264_portrait.mp4 has no B-frames: %s" % "".join(types))
data = open("media/h264_portrait.mp4", "rb").read()
if not (0 <= data.find(b"mdat") < data.find(b"moov")):
    fail("h264_portrait.mp4: moov is not at the end")

# truncated.mp4 must fail with "moov atom not found".
err = run(["ffprobe", "-v", "error", "bad/truncated.mp4"], text=True)
if err.returncode == 0 or "moov atom not found" not in err.stderr:
    fail("bad/truncated.mp4 did not fail with 'moov atom not found': " + err.stderr)
if os.path.getsize("bad/truncated.mp4") != 2048 or os.path.getsize("bad/random.mp4") != 65536:
    fail("bad/ sizes")
if os.path.getsize("bad/empty.mp4") != 0:
    fail("bad/empty.mp4 not empty")
streams = json.loads(run(["ffprobe", "-v", "error", "-show_streams", "-of", "json", "bad/audio_only.m4a"],
                         text=True).stdout)["streams"]
if [s["codec_type"] for s in streams] != ["audio"] or streams[0]["codec_name"] != "aac":
    fail("bad/audio_only.m4a must be a single AAC stream")

# vfr.mp4: frame durations really differ.
pts = [float(x) for x in run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
       "frame=pts_time", "-of", "default=nw=1:nk=1", "media/vfr.mp4"], text=True).stdout.split() if x]
durs = {round(b - a, 4) for a, b in zip(pts, pts[1:])}
if len(durs) < 2:
    fail("vfr.mp4 is constant frame rate: %s" % durs)

# Rotation: raw (stored) frames vs what an autorotating player shows.
def grab(path, *opts):
    r = run(["ffmpeg", "-nostdin", "-v", "info"] + list(opts) +
            ["-i", path, "-frames:v", "1", "-pix_fmt", "rgb24", "-f", "rawvideo", "-y", "/dev/stdout"])
    m = re.search(rb"Output #0.*?Video: rawvideo[^\n]*?, (\d+)x(\d+)", r.stderr, re.S)
    w, h = int(m.group(1)), int(m.group(2))
    assert len(r.stdout) == w * h * 3
    px = lambda x, y: tuple(r.stdout[(y * w + x) * 3:(y * w + x) * 3 + 3])
    return w, h, {"TL": px(24, 24), "TR": px(w - 25, 24), "BL": px(24, h - 25), "BR": px(w - 25, h - 25)}

def colour(p):
    r, g, b = p
    if r > 200 and g < 50 and b < 50: return "red"
    if b > 200 and r < 50 and g < 50: return "blue"
    if all(100 < c < 160 for c in p): return "gray"
    return "other%s" % (p,)

expect_raw = {"rotate90.mp4": {"BL": "red", "TR": "blue"}, "rotate270.mp4": {"TR": "red", "BL": "blue"}}
for name, raw_corners in expect_raw.items():
    path = "media/" + name
    w, h, c = grab(path, "-noautorotate")
    got = {k: colour(v) for k, v in c.items()}
    want = {k: raw_corners.get(k, "gray") for k in c}
    if (w, h) != (320, 240) or got != want:
        fail(f"{name} stored frame {w}x{h} {got}, wanted 320x240 {want}")
    w, h, c = grab(path)
    got = {k: colour(v) for k, v in c.items()}
    want = {"TL": "red", "TR": "gray", "BL": "gray", "BR": "blue"}
    if (w, h) != (240, 320) or got != want:
        fail(f"{name} autorotated frame {w}x{h} {got}, wanted 240x320 {want}")

# black_start: first second black, then content.
def yavg(t):
    r = run(["ffmpeg", "-nostdin", "-v", "error", "-ss", str(t), "-i", "media/black_start.mp4", "-frames:v", "1",
             "-pix_fmt", "gray", "-f", "rawvideo", "-"])
    return sum(r.stdout) / len(r.stdout), max(r.stdout)
if yavg(0.0)[1] > 20 or yavg(0.9)[1] > 20 or yavg(1.5)[0] < 40:
    fail("black_start.mp4 is not black-then-content")

# odd_WxH: stored size really is W x H.
for name in os.listdir("media"):
    m = re.search(r"_(\d+)x(\d+)\.", name)
    if m:
        s = json.loads(run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                            "stream=width,height", "-of", "json", "media/" + name], text=True).stdout)["streams"][0]
        if (s["width"], s["height"]) != (int(m.group(1)), int(m.group(2))):
            fail(f"{name} is {s['width']}x{s['height']}")

# cover.mp3: attached picture.
info = json.loads(run(["ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json",
                       "media/cover.mp3"], text=True).stdout)
v = [s for s in info["streams"] if s["codec_type"] == "video"]
if len(v) != 1 or v[0]["disposition"]["attached_pic"] != 1 or (v[0]["width"], v[0]["height"]) != (200, 200):
    fail("cover.mp3 attached picture")
if info["format"].get("tags", {}).get("title") != "Fixture Tone":
    fail("cover.mp3 ID3 tags")

# Goldens: one non-empty file per media/ file, frame count matches ffprobe's count.
for name in sorted(os.listdir("media")):
    lines = [l for l in open("golden/" + name + ".framemd5") if l.strip() and not l.startswith("#")]
    if not lines:
        fail("golden/%s.framemd5 is empty" % name)
    n = run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_frames", "-show_entries",
             "stream=nb_read_frames", "-of", "default=nw=1:nk=1", "media/" + name], text=True).stdout.strip()
    if int(n) != len(lines):
        fail(f"golden/{name}.framemd5 has {len(lines)} frames, ffprobe decodes {n}")
print("verified %d media fixtures" % len(os.listdir("media")), file=sys.stderr)
PY

# duration/: containers that claim another duration than their pictures have (its own script, verified there).
bash duration/generate.sh

log "done in $(( $(date +%s) - start )) s; $(du -sh --exclude=bench . | cut -f1) in Fixtures/ (bench/ excluded)"
