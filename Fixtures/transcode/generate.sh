#!/usr/bin/env bash
# Regenerates the transcoder fixtures in Fixtures/transcode/ with the ffmpeg CLI, from lavfi sources only
# (testsrc2 for pictures, sine for audio; no third-party media), and verifies each file with ffprobe right after
# making it: a file that does not have the property it is named for stops the script with "FAILED".
#
#   bash Fixtures/transcode/generate.sh
#
#   rotated_phone.mp4  H.264 stored 480x272 + display matrix (90 deg clockwise), AAC-LC stereo 44.1 kHz
#   hdr10_pq.mp4       HEVC Main10 BT.2020 / SMPTE 2084 (PQ), VUI + colr + mastering display + MaxCLL, AAC 48 kHz
#   hlg.mp4            HEVC Main10 BT.2020 / ARIB STD-B67 (HLG), VUI + colr, no audio
#   hdr10_rotated_phone.mp4  HEVC Main10 PQ stored 320x180 + display matrix (90 deg clockwise), AAC stereo 48 kHz
#   interlaced.ts      MPEG-2 720x576i25 top field first (50 fields/s of motion), MP2 stereo, MPEG-TS
#   mono_22k.mkv       H.264 + mono AAC at 22.05 kHz
#   surround.mp4       H.264 + 5.1 AAC at 48 kHz
#   anamorphic.mkv     H.264 stored 352x288 with SAR 16:11 (shown 512x288), no audio
#   long_gop_b.mp4     H.264 640x360 30 fps 5.2 s, B-frames, keyint 250 (one keyframe), AAC stereo
#
# Needs ffmpeg/ffprobe (written against FFmpeg 5.1, Debian 12, built with libzimg), coreutils and python3.
# Same conventions as Fixtures/generate.sh: encoders run single-threaded with bitexact flags and no metadata, so a
# rerun on the same FFmpeg/x264/x265 build gives byte-identical files.
set -euo pipefail
shopt -s inherit_errexit  # a failing ffmpeg inside $(...) stops the script too
export LC_ALL=C
cd "$(dirname "${BASH_SOURCE[0]}")"

for tool in ffmpeg ffprobe python3; do
  command -v "$tool" >/dev/null || { echo "generate.sh: $tool not found" >&2; exit 1; }
done
[[ "$(ffmpeg -hide_banner -filters 2>/dev/null)" =~ [[:space:]]zscale[[:space:]] ]] || { echo "generate.sh: ffmpeg has no zscale filter" >&2; exit 1; }

FF=(ffmpeg -nostdin -hide_banner -loglevel error -y)
# Output-side determinism flags (mux + encoder), shared by every encode.
DET=(-map_metadata -1 -map_chapters -1 -fflags +bitexact -flags:v +bitexact -flags:a +bitexact)
X264=(-c:v libx264 -threads 1 -pix_fmt yuv420p)
X265_PARAMS="log-level=error:pools=none:frame-threads=1"

log() { printf '%s\n' "$*" >&2; }
die() { printf 'generate.sh: FAILED: %s\n' "$*" >&2; exit 1; }

start=$(date +%s)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

FILES=(rotated_phone.mp4 hdr10_pq.mp4 hlg.mp4 hdr10_rotated_phone.mp4 interlaced.ts mono_22k.mkv surround.mp4 anamorphic.mkv long_gop_b.mp4 one_keyframe.ts cut_mid_gop.ts)
rm -f "${FILES[@]}"

# ---------------------------------------------------------------------------
# Verification helpers (each dies with the file name and what was wrong).
# ---------------------------------------------------------------------------
MAX_BYTES=$((150 * 1024))    # per file
MAX_TOTAL=$((750 * 1024))    # all files together

# probe FILE STREAM SECTION=KEY1,KEY2,.. -> the values, one a line, in the order asked for (ffprobe prints them in
# its own order), one group per stream/frame/packet when the section repeats. The copies of the streams that
# ffprobe also prints inside [PROGRAM] (MPEG-TS) are skipped.
probe() {
  ffprobe -v error -select_streams "$2" -show_entries "$3" -of default "$1" \
    | awk -v keys="${3#*=}" 'BEGIN { n = split(keys, k, ",") }
        /^\[PROGRAM\]/ { inprog = 1 } /^\[\/PROGRAM\]/ { inprog = 0 } /^\[/ || inprog { next }
        { i = index($0, "="); v[substr($0, 1, i - 1)] = substr($0, i + 1); seen++ }
        seen == n { for (j = 1; j <= n; j++) print v[k[j]]; seen = 0 }'
}
# expect FILE WHAT GOT WANT
expect() {
  [[ "$3" == "$4" ]] || die "$1: $2 is '$3', wanted '$4'"
}
# expect_between FILE WHAT VALUE LO HI (numbers, inclusive)
expect_between() {
  python3 -c 'import sys; v, lo, hi = map(float, sys.argv[1:]); sys.exit(0 if lo <= v <= hi else 1)' "$3" "$4" "$5" \
    || die "$1: $2 is $3, wanted $4..$5"
}
# Common checks: decodes without a single error message, size budget, container duration.
check_common() { # file min_duration max_duration
  local f=$1 errs size dur
  errs=$(ffmpeg -nostdin -v error -i "$f" -f null - 2>&1) || die "$f: ffmpeg could not decode it: $errs"
  [[ -z "$errs" ]] || die "$f: decoding printed errors: $errs"
  size=$(stat -c %s "$f")
  (( size <= MAX_BYTES )) || die "$f: $size bytes, over the $MAX_BYTES byte budget"
  dur=$(ffprobe -v error -show_entries format=duration -of default=nw=1:nk=1 "$f")
  expect_between "$f" "duration" "$dur" "$2" "$3"
}
# check_video FILE CODEC WIDTH HEIGHT PIX_FMT
check_video() {
  expect "$1" "video codec,WxH,pix_fmt" "$(probe "$1" v:0 stream=codec_name,width,height,pix_fmt | paste -sd, -)" \
    "$2,$3,$4,$5"
  expect "$1" "number of video streams" "$(probe "$1" v stream=index | wc -l)" 1
}
# check_audio FILE CODEC CHANNELS SAMPLE_RATE LAYOUT
check_audio() {
  expect "$1" "audio codec,channels,rate,layout" \
    "$(probe "$1" a:0 stream=codec_name,channels,sample_rate,channel_layout | paste -sd, -)" "$2,$3,$4,$5"
  expect "$1" "number of audio streams" "$(probe "$1" a stream=index | wc -l)" 1
}
check_no_audio() {
  expect "$1" "number of audio streams" "$(probe "$1" a stream=index | wc -l)" 0
}
# The 2 or 6 sine channels really are different tones (a broken join/upmix would make them equal or silent).
check_distinct_channels() { # file channels
  local f=$1 n=$2
  "${FF[@]}" -i "$f" -map 0:a:0 -t 1 -c:a pcm_s16le -f s16le "$TMP/pcm.raw"
  python3 - "$f" "$n" "$TMP/pcm.raw" <<'PY' || exit 1
import array, sys
name, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = array.array("h"); s.frombytes(open(path, "rb").read())
chans = [s[c::n] for c in range(n)]
for c, x in enumerate(chans):
    if max(abs(v) for v in x) < 1000:
        sys.exit(f"generate.sh: FAILED: {name}: audio channel {c} is (nearly) silent")
def crossings(x):
    return sum(1 for a, b in zip(x, x[1:]) if (a < 0) != (b < 0))
zc = [crossings(x) for x in chans]
if len(set(zc)) != n:
    sys.exit(f"generate.sh: FAILED: {name}: channels are not distinct tones (zero crossings per second {zc})")
PY
}
# Color tags as ffprobe reads them (container first, codec parameters otherwise).
check_color() { # file primaries transfer space range
  expect "$1" "color primaries,transfer,space,range" \
    "$(probe "$1" v:0 stream=color_primaries,color_transfer,color_space,color_range | paste -sd, -)" "$2,$3,$4,$5"
}
# The same facts from the HEVC bitstream alone (VUI), with the container removed.
check_vui() { # file primaries transfer space
  "${FF[@]}" -i "$1" -map 0:v:0 -c copy -f hevc "$TMP/vui.hevc"
  expect "$1" "bitstream VUI primaries,transfer,space" \
    "$(probe "$TMP/vui.hevc" v:0 stream=color_primaries,color_transfer,color_space | paste -sd, -)" "$2,$3,$4"
}
# The mp4 'colr' box is of type nclx with the given ISO/IEC 23091-2 code points.
check_colr_box() { # file primaries transfer matrix
  python3 - "$@" <<'PY' || exit 1
import struct, sys
name, want = sys.argv[1], tuple(int(x) for x in sys.argv[2:5])
data = open(name, "rb").read()
i = data.find(b"colrnclx")
if i < 0:
    sys.exit(f"generate.sh: FAILED: {name}: no 'colr' nclx box in the container")
got = struct.unpack(">HHH", data[i + 8:i + 14])
if got != want:
    sys.exit(f"generate.sh: FAILED: {name}: colr nclx is {got}, wanted {want}")
PY
}
# Mean luma (8-bit) of the frame at time T of FILE after the filter chain VF (empty: as decoded).
mean_y() { # file|lavfi:graph t vf
  local in=(-i "$1")
  [[ "$1" == lavfi:* ]] && in=(-f lavfi -i "${1#lavfi:}")
  "${FF[@]}" -ss "$2" "${in[@]}" -frames:v 1 -vf "${3:+$3,}format=gray" -f rawvideo "$TMP/y.raw"
  python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); print("%.2f" % (sum(d) / len(d)))' "$TMP/y.raw"
}

# Two sine tones, one per channel, as a stereo stream [a] (needs two lavfi sine inputs at positions $1 and $2).
STEREO_JOIN() { printf '[%s:a][%s:a]join=inputs=2:channel_layout=stereo[a]' "$1" "$2"; }

# ---------------------------------------------------------------------------
# rotated_phone.mp4
# ---------------------------------------------------------------------------
log "rotated_phone.mp4"
# The UPRIGHT picture is portrait 272x480: testsrc2 (moving, with readable text) plus a white 40x40 square top-left
# (testsrc2's own colours there are red bars and a dark text box: white stands out in every corner).
# It is stored turned 90 deg counter-clockwise (480x272, landscape), and the display matrix tells the player to
# turn it back 90 deg clockwise (ffprobe: "rotation of -90.00 degrees"). FFmpeg 5.1 has no -display_rotation
# (that came in 6.0), so, as Fixtures/generate.sh does for rotate90.mp4, the "rotate" stream tag is written on a
# stream copy, trying both sign conventions and keeping the one ffprobe reads back as -90.
"${FF[@]}" -f lavfi -i "testsrc2=size=272x480:rate=30:duration=2.5,drawbox=x=0:y=0:w=40:h=40:color=0xFFFFFF@1:t=fill,transpose=cclock" \
  -f lavfi -i "sine=frequency=440:sample_rate=44100:duration=2.5" \
  -f lavfi -i "sine=frequency=660:sample_rate=44100:duration=2.5" \
  -filter_complex "$(STEREO_JOIN 1 2)" -map 0:v -map "[a]" \
  "${X264[@]}" -preset medium -crf 28 -g 60 \
  -c:a aac -profile:a aac_low -b:a 64k -ar 44100 "${DET[@]}" "$TMP/phone_stored.mp4"
ok=""
for value in 270 90; do
  "${FF[@]}" -i "$TMP/phone_stored.mp4" -map 0 -c copy -metadata:s:v:0 rotate="$value" \
    "${DET[@]}" rotated_phone.mp4
  if [[ "$(probe rotated_phone.mp4 v:0 stream_side_data=rotation | tr -d ' \n')" == "-90" ]]; then ok=1; break; fi
done
[[ -n "$ok" ]] || die "rotated_phone.mp4: no spelling of the rotate tag gives a display matrix of -90"
check_common rotated_phone.mp4 2.4 2.6
check_video rotated_phone.mp4 h264 480 272 yuv420p
expect rotated_phone.mp4 "avg_frame_rate" "$(probe rotated_phone.mp4 v:0 stream=avg_frame_rate)" 30/1
check_audio rotated_phone.mp4 aac 2 44100 stereo
expect rotated_phone.mp4 "audio profile" "$(probe rotated_phone.mp4 a:0 stream=profile)" LC
check_distinct_channels rotated_phone.mp4 2
# Where the white square is: bottom-left of the stored frame, top-left once autorotated to 272x480.
python3 - <<'PY' || exit 1
import re, subprocess, sys
def grab(*opts):
    r = subprocess.run(["ffmpeg", "-nostdin", "-v", "info", *opts, "-i", "rotated_phone.mp4", "-frames:v", "1",
                        "-pix_fmt", "rgb24", "-f", "rawvideo", "-y", "/dev/stdout"], capture_output=True)
    m = re.search(rb"Output #0.*?Video: rawvideo[^\n]*?, (\d+)x(\d+)", r.stderr, re.S)
    w, h = int(m.group(1)), int(m.group(2))
    px = lambda x, y: tuple(r.stdout[(y * w + x) * 3:(y * w + x) * 3 + 3])
    white = lambda p: min(p) > 200
    return (w, h), {k: white(p) for k, p in {"TL": px(20, 20), "TR": px(w - 21, 20), "BL": px(20, h - 21),
                                           "BR": px(w - 21, h - 21)}.items()}
for opts, size, corner in ((["-noautorotate"], (480, 272), "BL"), ([], (272, 480), "TL")):
    got_size, whites = grab(*opts)
    want = {k: k == corner for k in whites}
    if got_size != size or whites != want:
        sys.exit(f"generate.sh: FAILED: rotated_phone.mp4 {' '.join(opts) or 'autorotated'}: {got_size} white={whites}, "
                 f"wanted {size} white only at {corner}")
PY

# ---------------------------------------------------------------------------
# hdr10_pq.mp4, hlg.mp4
# ---------------------------------------------------------------------------
# An SDR testsrc2 graded into HDR: BT.709 -> BT.2020 primaries, SDR white placed at npl=100 cd/m2 and encoded with
# the HDR transfer. So a correct HDR->SDR conversion (linearise with npl=100, back to BT.709) gives back the SDR
# brightness, whereas showing the code values as if they were BT.709 looks dim and grey.
SDR_SRC="testsrc2=size=320x180:rate=25:duration=2"
to_hdr() { # transfer -> filter chain
  printf '%s,format=gbrp,zscale=tin=bt709:pin=bt709:min=gbr:t=%s:p=bt2020:m=bt2020nc:r=tv:npl=100,format=yuv420p10le' \
    "$SDR_SRC" "$1"
}
# HDR10 static metadata: a P3-D65 1000 cd/m2 mastering display; MaxCLL/MaxFALL as measured on this content
# (the brightest pixel of testsrc2 graded at npl=100 is ~99 cd/m2, the brightest frame average ~83 cd/m2).
MASTER_DISPLAY="G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1)"
MAX_CLL="100,83"

# The brightness round trip: the HDR file converted back to SDR BT.709 (the simplest correct tone map, valid
# here because nothing exceeds 100 cd/m2) must be within 10% of the SDR source's mean luma (both with BT.709 luma
# weights), and shown as if it were BT.709 it must be clearly different (otherwise the HDR transfer was not applied).
# The round trip is not exact even before encoding: 4:2:0 chroma in a non-constant-luminance PQ/HLG signal and
# 10-bit rounding on the steep part of the curve bring testsrc2 back ~5% brighter (x265 adds ~1-2%); a wrong
# conversion (no inverse transfer, another npl, PQ read as BT.709) is off by 20% or more.
check_hdr_roundtrip() { # file [sdr source graph, default $SDR_SRC]
  local f=$1 src=${2:-$SDR_SRC} sdr back naive
  sdr=$(mean_y "lavfi:$src" 1 "format=gbrp,zscale=tin=bt709:pin=bt709:min=gbr:t=bt709:p=bt709:m=bt709:r=tv")
  back=$(mean_y "$f" 1 "zscale=t=bt709:p=bt709:m=bt709:r=tv:npl=100")
  naive=$(mean_y "$f" 1 "")
  expect_between "$f" "mean luma after HDR->SDR (SDR source: $sdr)" "$back" \
    "$(python3 -c "print($sdr * 0.9)")" "$(python3 -c "print($sdr * 1.1)")"
  python3 -c 'import sys; s, n = map(float, sys.argv[1:]); sys.exit(0 if abs(n - s) > 10 else 1)' "$sdr" "$naive" \
    || die "$f: its code values look like the SDR source (mean luma $naive vs $sdr): HDR transfer not applied"
}

log "hdr10_pq.mp4"
"${FF[@]}" -f lavfi -i "$(to_hdr smpte2084)" \
  -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=2" \
  -f lavfi -i "sine=frequency=554.37:sample_rate=48000:duration=2" \
  -filter_complex "$(STEREO_JOIN 1 2)" -map 0:v -map "[a]" \
  -c:v libx265 -preset fast -crf 26 -pix_fmt yuv420p10le -profile:v main10 -tag:v hvc1 \
  -color_primaries bt2020 -color_trc smpte2084 -colorspace bt2020nc -color_range tv \
  -x265-params "$X265_PARAMS:colorprim=bt2020:transfer=smpte2084:colormatrix=bt2020nc:range=limited:master-display=$MASTER_DISPLAY:max-cll=$MAX_CLL" \
  -c:a aac -b:a 64k -ar 48000 "${DET[@]}" hdr10_pq.mp4
check_common hdr10_pq.mp4 1.95 2.1
check_video hdr10_pq.mp4 hevc 320 180 yuv420p10le
expect hdr10_pq.mp4 "profile,tag,avg_frame_rate" \
  "$(probe hdr10_pq.mp4 v:0 stream=profile,codec_tag_string,avg_frame_rate | paste -sd, -)" "Main 10,hvc1,25/1"
check_color hdr10_pq.mp4 bt2020 smpte2084 bt2020nc tv
check_vui hdr10_pq.mp4 bt2020 smpte2084 bt2020nc
check_colr_box hdr10_pq.mp4 9 16 9
expect hdr10_pq.mp4 "first frame's HDR side data" \
  "$(ffprobe -v error -select_streams v:0 -read_intervals '%+#1' -show_entries frame_side_data=side_data_type,max_luminance,max_content,max_average \
     -of default=nw=1 hdr10_pq.mp4 | grep -v 'User Data Unregistered' | paste -sd, -)" \
  "side_data_type=Mastering display metadata,max_luminance=10000000/10000,side_data_type=Content light level metadata,max_content=100,max_average=83"
check_audio hdr10_pq.mp4 aac 2 48000 stereo
check_distinct_channels hdr10_pq.mp4 2
check_hdr_roundtrip hdr10_pq.mp4

log "hlg.mp4"
# HLG carries no HDR10 static metadata (no mastering display / MaxCLL SEI): HLG is scene-referred.
"${FF[@]}" -f lavfi -i "$(to_hdr arib-std-b67)" \
  -c:v libx265 -preset fast -crf 26 -pix_fmt yuv420p10le -profile:v main10 -tag:v hvc1 \
  -color_primaries bt2020 -color_trc arib-std-b67 -colorspace bt2020nc -color_range tv \
  -x265-params "$X265_PARAMS:colorprim=bt2020:transfer=arib-std-b67:colormatrix=bt2020nc:range=limited" \
  "${DET[@]}" hlg.mp4
check_common hlg.mp4 1.95 2.1
check_video hlg.mp4 hevc 320 180 yuv420p10le
expect hlg.mp4 "profile,tag,avg_frame_rate" \
  "$(probe hlg.mp4 v:0 stream=profile,codec_tag_string,avg_frame_rate | paste -sd, -)" "Main 10,hvc1,25/1"
check_color hlg.mp4 bt2020 arib-std-b67 bt2020nc tv
check_vui hlg.mp4 bt2020 arib-std-b67 bt2020nc
check_colr_box hlg.mp4 9 18 9
check_no_audio hlg.mp4
check_hdr_roundtrip hlg.mp4

# ---------------------------------------------------------------------------
# hdr10_rotated_phone.mp4
# ---------------------------------------------------------------------------
log "hdr10_rotated_phone.mp4"
# What a recent phone records in HDR held upright: HEVC Main 10 PQ, stored landscape with a display matrix. The
# UPRIGHT picture is portrait 180x320 (testsrc2 plus the white 40x40 square top-left of rotated_phone.mp4), stored
# turned 90 deg counter-clockwise (320x180) and graded into PQ as hdr10_pq.mp4 is (SDR white at npl=100), with the
# same HDR10 static metadata; the rotate tag is written on a stream copy as for rotated_phone.mp4. So a transcode
# must both turn it upright and tone-map it.
PHONE_SDR_SRC="testsrc2=size=180x320:rate=25:duration=2,drawbox=x=0:y=0:w=40:h=40:color=0xFFFFFF@1:t=fill"
"${FF[@]}" -f lavfi -i "$PHONE_SDR_SRC,transpose=cclock,format=gbrp,zscale=tin=bt709:pin=bt709:min=gbr:t=smpte2084:p=bt2020:m=bt2020nc:r=tv:npl=100,format=yuv420p10le" \
  -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=2" \
  -f lavfi -i "sine=frequency=660:sample_rate=48000:duration=2" \
  -filter_complex "$(STEREO_JOIN 1 2)" -map 0:v -map "[a]" \
  -c:v libx265 -preset fast -crf 26 -pix_fmt yuv420p10le -profile:v main10 -tag:v hvc1 \
  -color_primaries bt2020 -color_trc smpte2084 -colorspace bt2020nc -color_range tv \
  -x265-params "$X265_PARAMS:colorprim=bt2020:transfer=smpte2084:colormatrix=bt2020nc:range=limited:master-display=$MASTER_DISPLAY:max-cll=$MAX_CLL" \
  -c:a aac -b:a 64k -ar 48000 "${DET[@]}" "$TMP/hdr_phone_stored.mp4"
ok=""
for value in 270 90; do
  "${FF[@]}" -i "$TMP/hdr_phone_stored.mp4" -map 0 -c copy -tag:v hvc1 -metadata:s:v:0 rotate="$value" \
    "${DET[@]}" hdr10_rotated_phone.mp4
  if [[ "$(probe hdr10_rotated_phone.mp4 v:0 stream_side_data=rotation | tr -d ' \n')" == "-90" ]]; then ok=1; break; fi
done
[[ -n "$ok" ]] || die "hdr10_rotated_phone.mp4: no spelling of the rotate tag gives a display matrix of -90"
check_common hdr10_rotated_phone.mp4 1.95 2.1
check_video hdr10_rotated_phone.mp4 hevc 320 180 yuv420p10le
expect hdr10_rotated_phone.mp4 "profile,tag,avg_frame_rate" \
  "$(probe hdr10_rotated_phone.mp4 v:0 stream=profile,codec_tag_string,avg_frame_rate | paste -sd, -)" "Main 10,hvc1,25/1"
check_color hdr10_rotated_phone.mp4 bt2020 smpte2084 bt2020nc tv
check_vui hdr10_rotated_phone.mp4 bt2020 smpte2084 bt2020nc
check_colr_box hdr10_rotated_phone.mp4 9 16 9
expect hdr10_rotated_phone.mp4 "first frame's HDR side data" \
  "$(ffprobe -v error -select_streams v:0 -read_intervals '%+#1' -show_entries frame_side_data=side_data_type,max_luminance,max_content,max_average \
     -of default=nw=1 hdr10_rotated_phone.mp4 | grep -v 'User Data Unregistered' | grep -v 'Display Matrix' | paste -sd, -)" \
  "side_data_type=Mastering display metadata,max_luminance=10000000/10000,side_data_type=Content light level metadata,max_content=100,max_average=83"
check_audio hdr10_rotated_phone.mp4 aac 2 48000 stereo
check_distinct_channels hdr10_rotated_phone.mp4 2
check_hdr_roundtrip hdr10_rotated_phone.mp4 "$PHONE_SDR_SRC"
# Where the white square is once converted back to SDR: bottom-left of the stored frame, top-left once autorotated
# to 180x320 (the PQ code values of SDR white are mid-grey, so the corners are read after zscale to BT.709).
python3 - <<'PY' || exit 1
import re, subprocess, sys
def grab(*opts):
    r = subprocess.run(["ffmpeg", "-nostdin", "-v", "info", *opts, "-i", "hdr10_rotated_phone.mp4", "-frames:v", "1",
                        "-vf", "zscale=t=bt709:p=bt709:m=bt709:r=tv:npl=100,format=rgb24",
                        "-f", "rawvideo", "-y", "/dev/stdout"], capture_output=True)
    m = re.search(rb"Output #0.*?Video: rawvideo[^\n]*?, (\d+)x(\d+)", r.stderr, re.S)
    w, h = int(m.group(1)), int(m.group(2))
    px = lambda x, y: tuple(r.stdout[(y * w + x) * 3:(y * w + x) * 3 + 3])
    white = lambda p: min(p) > 200
    return (w, h), {k: white(p) for k, p in {"TL": px(20, 20), "TR": px(w - 21, 20), "BL": px(20, h - 21),
                                           "BR": px(w - 21, h - 21)}.items()}
for opts, size, corner in ((["-noautorotate"], (320, 180), "BL"), ([], (180, 320), "TL")):
    got_size, whites = grab(*opts)
    want = {k: k == corner for k in whites}
    if got_size != size or whites != want:
        sys.exit(f"generate.sh: FAILED: hdr10_rotated_phone.mp4 {' '.join(opts) or 'autorotated'}: {got_size} "
                 f"white={whites}, wanted {size} white only at {corner}")
PY

# ---------------------------------------------------------------------------
# interlaced.ts
# ---------------------------------------------------------------------------
log "interlaced.ts"
# 50 progressive pictures/s, woven in pairs into 25 frames/s: the top field is picture 2k, the bottom field
# picture 2k+1 (20 ms later), so anything moving combs unless it is deinterlaced top field first.
# -flags:v repeats +bitexact because a later -flags:v replaces DET's rather than adding to it. testsrc2 is costly
# for MPEG-2 at this size: the coarsest quantiser (q 31, RD macroblock decisions), one GOP and no B-frames (which
# cost more than P-frames here: +50 KB) keep it near 120 KB. Reordering is long_gop_b.mp4's job.
"${FF[@]}" -f lavfi -i "testsrc2=size=720x576:rate=50:duration=2,tinterlace=mode=interleave_top,setfield=tff" \
  -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=2" \
  -f lavfi -i "sine=frequency=660:sample_rate=48000:duration=2" \
  -filter_complex "$(STEREO_JOIN 1 2)" -map 0:v -map "[a]" \
  -c:v mpeg2video -threads 1 -pix_fmt yuv420p -q:v 31 -mbd rd -trellis 1 -g 50 -bf 0 -top 1 \
  -c:a mp2 -b:a 96k -ar 48000 "${DET[@]}" -flags:v +bitexact+ilme+ildct -f mpegts interlaced.ts
check_common interlaced.ts 1.95 2.2
check_video interlaced.ts mpeg2video 720 576 yuv420p
expect interlaced.ts "field_order,avg_frame_rate" \
  "$(probe interlaced.ts v:0 stream=field_order,avg_frame_rate | paste -sd, -)" "tt,25/1"
check_audio interlaced.ts mp2 2 48000 stereo
check_distinct_channels interlaced.ts 2
# idet looks at the pictures themselves: most frames must be detected as TFF (none BFF).
idet=$(ffmpeg -nostdin -hide_banner -v info -i interlaced.ts -map 0:v -vf idet -f null - 2>&1 \
       | grep 'Multi frame detection' | tail -1)
[[ "$idet" =~ TFF:\ *([0-9]+)\ *BFF:\ *([0-9]+)\ *Progressive:\ *([0-9]+)\ *Undetermined:\ *([0-9]+) ]] \
  || die "interlaced.ts: no idet summary"
tff=${BASH_REMATCH[1]} bff=${BASH_REMATCH[2]} prog=${BASH_REMATCH[3]} und=${BASH_REMATCH[4]}
(( tff * 10 >= (tff + bff + prog + und) * 8 && bff == 0 )) \
  || die "interlaced.ts: idet says TFF $tff BFF $bff progressive $prog undetermined $und, wanted >= 80% TFF"

# ---------------------------------------------------------------------------
# one_keyframe.ts
# ---------------------------------------------------------------------------
log "one_keyframe.ts"
# H.264 in MPEG-TS with one keyframe (frame 0) in 3.2 s: a demuxer that seeks by searching timestamps lands on
# P-frames that decode to nothing, so a segment after the first must be decoded from the start.
"${FF[@]}" -f lavfi -i "testsrc2=size=160x120:rate=25:duration=3.2" \
  -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=3.2" \
  "${X264[@]}" -preset medium -crf 32 -g 1000 -keyint_min 1000 -sc_threshold 0 -bf 0 \
  -c:a aac -b:a 32k -ac 1 -ar 48000 "${DET[@]}" -f mpegts one_keyframe.ts
check_common one_keyframe.ts 3.1 3.3
check_video one_keyframe.ts h264 160 120 yuv420p
expect one_keyframe.ts "keyframes" \
  "$(ffprobe -v error -select_streams v:0 -show_entries packet=flags -of csv=p=0 one_keyframe.ts | grep -c K)" "1"

# ---------------------------------------------------------------------------
# cut_mid_gop.ts
# ---------------------------------------------------------------------------
log "cut_mid_gop.ts"
# A capture cut where the recorder started: mid-stream, at a TS packet boundary just after a keyframe began. The
# keyframe is lost, the pictures after it refer to it (B-frames) and do not decode, so the first picture is the next
# keyframe's, a GOP later; the muxer sends video ahead of audio, so the video starts after the audio (the
# container's start). Together: no picture in the first second of the item (its first segment), as in a DVB capture
# (video 0.73 s after the audio, first picture 1.29 s in). Interlacing does not matter. The cut pictures make the
# decoder print errors, so check_common is not used and every probe here is quiet.
"${FF[@]}" -f lavfi -i "testsrc2=size=160x120:rate=25:duration=3.2" \
  -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=3.2" \
  "${X264[@]}" -preset medium -crf 36 -g 25 -keyint_min 25 -sc_threshold 0 -bf 2 \
  -c:a aac -b:a 24k -ac 1 -ar 48000 "${DET[@]}" -f mpegts "$TMP/whole.ts"
# The second keyframe's first TS packet is left out: the cut is one 188-byte packet after where it starts.
key=$(ffprobe -v error -select_streams v:0 -show_entries packet=pos,flags -of csv=p=0 "$TMP/whole.ts" \
  | awk -F, '$2 ~ /K/ && ++n == 2 { print $1 }')
(( key % 188 == 0 )) || die "cut_mid_gop.ts: the keyframe is at byte $key, not at a TS packet"
tail -c +$(( key + 188 + 1 )) "$TMP/whole.ts" > cut_mid_gop.ts
size=$(stat -c %s cut_mid_gop.ts)
(( size <= MAX_BYTES )) || die "cut_mid_gop.ts: $size bytes, over the $MAX_BYTES byte budget"
quiet() { ffprobe -v quiet -of default=nw=1:nk=1 "$@" cut_mid_gop.ts | awk 'NR == 1'; }
expect cut_mid_gop.ts "video" "$(quiet -select_streams v:0 -show_entries stream=codec_name,width,height \
  -of csv=p=0)" "h264,160,120"
expect cut_mid_gop.ts "audio" "$(quiet -select_streams a:0 -show_entries stream=codec_name,channels,sample_rate \
  -of csv=p=0)" "aac,48000,1"
cstart=$(quiet -show_entries format=start_time)
vstart=$(quiet -select_streams v:0 -show_entries stream=start_time)
first=$(quiet -select_streams v:0 -show_entries frame=best_effort_timestamp_time)
frames=$(ffmpeg -nostdin -v quiet -i cut_mid_gop.ts -map 0:v:0 -fps_mode passthrough -f framemd5 - | grep -vc '^#')
expect_between cut_mid_gop.ts "video start after the container's" "$(python3 -c "print($vstart - $cstart)")" 0.3 0.9
expect_between cut_mid_gop.ts "first picture after the container's start" "$(python3 -c "print($first - $cstart)")" 1.05 1.6
expect cut_mid_gop.ts "decoded frames" "$frames" 30

# ---------------------------------------------------------------------------
# mono_22k.mkv, surround.mp4
# ---------------------------------------------------------------------------
log "mono_22k.mkv"
"${FF[@]}" -f lavfi -i "testsrc2=size=320x240:rate=25:duration=2" \
  -f lavfi -i "sine=frequency=440:sample_rate=22050:duration=2" \
  "${X264[@]}" -preset medium -crf 28 -g 50 \
  -c:a aac -b:a 32k -ac 1 -ar 22050 "${DET[@]}" mono_22k.mkv
check_common mono_22k.mkv 1.95 2.1
check_video mono_22k.mkv h264 320 240 yuv420p
check_audio mono_22k.mkv aac 1 22050 mono

log "surround.mp4"
# One tone per channel, in 5.1 order FL FR FC LFE BL BR (the LFE one low, 80 Hz).
"${FF[@]}" -f lavfi -i "testsrc2=size=320x240:rate=25:duration=2" \
  -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=2" \
  -f lavfi -i "sine=frequency=550:sample_rate=48000:duration=2" \
  -f lavfi -i "sine=frequency=660:sample_rate=48000:duration=2" \
  -f lavfi -i "sine=frequency=80:sample_rate=48000:duration=2" \
  -f lavfi -i "sine=frequency=330:sample_rate=48000:duration=2" \
  -f lavfi -i "sine=frequency=880:sample_rate=48000:duration=2" \
  -filter_complex "[1:a][2:a][3:a][4:a][5:a][6:a]join=inputs=6:channel_layout=5.1[a]" -map 0:v -map "[a]" \
  "${X264[@]}" -preset medium -crf 28 -g 50 \
  -c:a aac -b:a 160k -ar 48000 "${DET[@]}" surround.mp4
check_common surround.mp4 1.95 2.1
check_video surround.mp4 h264 320 240 yuv420p
check_audio surround.mp4 aac 6 48000 5.1
check_distinct_channels surround.mp4 6

# ---------------------------------------------------------------------------
# anamorphic.mkv
# ---------------------------------------------------------------------------
log "anamorphic.mkv"
# The picture is drawn at 512x288 with square pixels (testsrc2 plus a white-outlined 96x96 square), squeezed to
# 352x288 for storage and marked with pixels 16:11 wide (the 16:9 CIF shape), so it is shown 512x288 again: a
# transcoder that honours the SAR gets square checkerboard cells and a square outline, one that ignores it gets
# them squeezed to 66x96.
"${FF[@]}" -f lavfi -i "testsrc2=size=512x288:rate=25:duration=2,drawbox=x=16:y=96:w=96:h=96:color=white@1:t=4,scale=352:288,setsar=16/11" \
  "${X264[@]}" -preset medium -crf 28 -g 50 "${DET[@]}" anamorphic.mkv
check_common anamorphic.mkv 1.95 2.1
check_video anamorphic.mkv h264 352 288 yuv420p
expect anamorphic.mkv "sample_aspect_ratio,display_aspect_ratio" \
  "$(probe anamorphic.mkv v:0 stream=sample_aspect_ratio,display_aspect_ratio | paste -sd, -)" "16:11,16:9"
# The SAR is in the H.264 VUI too, not only in the Matroska display size.
"${FF[@]}" -i anamorphic.mkv -map 0:v -c copy -f h264 "$TMP/sar.h264"
expect anamorphic.mkv "bitstream SAR" "$(probe "$TMP/sar.h264" v:0 stream=sample_aspect_ratio)" "16:11"
check_no_audio anamorphic.mkv

# ---------------------------------------------------------------------------
# long_gop_b.mp4
# ---------------------------------------------------------------------------
log "long_gop_b.mp4"
# 156 frames, keyint 250 and no scene-cut keyframes: the only keyframe is the first, so segment boundaries and
# seeks cannot lean on source keyframes. testsrc2's pixel-sized detail is what costs bits at this size (180 KB at
# crf 32); a 1-pixel blur halves that and keeps the timecode readable, so every frame stays identifiable.
"${FF[@]}" -f lavfi -i "testsrc2=size=640x360:rate=30:duration=5.2,gblur=sigma=1" \
  -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=5.2" \
  -f lavfi -i "sine=frequency=660:sample_rate=48000:duration=5.2" \
  -filter_complex "$(STEREO_JOIN 1 2)" -map 0:v -map "[a]" \
  "${X264[@]}" -preset medium -crf 32 -bf 3 -g 250 -keyint_min 250 -sc_threshold 0 \
  -c:a aac -b:a 48k -ar 48000 "${DET[@]}" long_gop_b.mp4
check_common long_gop_b.mp4 5.15 5.3
check_video long_gop_b.mp4 h264 640 360 yuv420p
expect long_gop_b.mp4 "avg_frame_rate" "$(probe long_gop_b.mp4 v:0 stream=avg_frame_rate)" 30/1
check_audio long_gop_b.mp4 aac 2 48000 stereo
check_distinct_channels long_gop_b.mp4 2
types=$(probe long_gop_b.mp4 v:0 frame=pict_type | tr -d '\n')
expect long_gop_b.mp4 "frame count" "${#types}" 156
[[ "$types" == I* && "${types:1}" != *I* ]] || die "long_gop_b.mp4: I-frames other than the first: $types"
[[ "$types" == *B* ]] || die "long_gop_b.mp4: no B-frames: $types"
expect long_gop_b.mp4 "keyframe packets" "$(probe long_gop_b.mp4 v:0 packet=flags | grep -c K)" 1

# ---------------------------------------------------------------------------
total=$(cat "${FILES[@]}" | wc -c)
(( total <= MAX_TOTAL )) || die "all files together are $total bytes, over the $MAX_TOTAL byte budget"
log "verified ${#FILES[@]} files, $total bytes, in $(( $(date +%s) - start )) s"
