#!/usr/bin/env bash
# Transcoding, side by side in one run: `videofeed transcode` against the ffmpeg CLI with the same settings, i.e.
# the 720x1280 feed rendition as a fast-start MP4 — libx264 `-preset veryfast -crf 23 -profile:v high`, VBV
# maxrate = width*height*3.3 bit/s (scaled by fps/30 above 30 fps) with a buffer twice that, a forced IDR keyframe
# every 2 s, `scale=W:H:flags=bicubic:out_color_matrix=bt709:out_range=tv,format=yuv420p`, AAC 128k stereo,
# `-movflags +faststart`. Six parts, each printed as a Markdown table with the exact commands:
#   1 single clip   one file at a time (videofeed --jobs 1) on a synthetic 1080x1920 10 s clip
#                   (Fixtures/bench/thumbs/clip_000.mp4) and two real clips (MEDIA/sample.mp4, MEDIA/fire2.mp4,
#                   rotated 180°): hyperfine mean ± sd, ours/ffmpeg. ffmpeg autorotates, so its scale size is the
#                   upright size our rendition came out with (read with ffprobe).
#   1b ladder       the same three clips and MEDIA/portrait_4k60.mp4 (a 4K phone clip) to the default ladder (every rung; ours in one pass with --jobs 1)
#                   against one ffmpeg process making the same MP4s (split, one scale and encoder per rung): wall
#                   and CPU, ours/ffmpeg; ours also with every rung's CMAF segments and playlists (the default)
#   2 batch         BATCH_COUNT clips (H.264 1080x1920 30 fps 3 s + AAC, 10 distinct encodes hard-linked, made
#                   once into Fixtures/bench/transcode/): `videofeed transcode DIR --jobs JOBS` (its default:
#                   cores/jobs decoder threads per item, one x264 thread per encoder; and --threads 0, FFmpeg's choice of decoder threads) against `ls DIR/*.mp4 | xargs -P JOBS ffmpeg …` (plain and `-threads 1`)
#   3 segment       one cold segment on demand: `videofeed transcode segment CLIP --index 0|2` against
#                   `ffmpeg [-ss 4] -t 2 -i CLIP …` on the synthetic clip
#   3b first second what `serve` makes first for a cold item (segment 0, 1 s: every rendition from one pass, and the
#                   720x1280 rung alone) against `ffmpeg -t 1 -i CLIP …` (the ladder, the rung), on the synthetic
#                   clip and the three real ones: wall and CPU, process starts, an in-process column
#   4 memory        peak RSS (/usr/bin/time -v) of one single-clip run of each tool
#   5 quality       SSIM (ffmpeg's ssim filter) of each tool's rendition against the source put through the same
#                   scale (bicubic, BT.709 limited), frames paired by index; target: ours >= 0.95 and within 0.005
#                   of ffmpeg's
#   7 AV1           the AV1 rung (--codecs h264,av1) against the H.264 rung of the 720x1280 box on the synthetic
#                   clip and eight real ones: video bytes and SSIM at the defaults, the bytes at equal SSIM
#                   (an --av1-crf sweep, interpolated), wall, CPU and peak RSS of a run with and without AV1
#   6 HDR           our default (tone-mapped) rendition of three HDR clips against an ffmpeg zscale+tonemap (hable)
#                   reference: mean luma (signalstats YAVG over all frames); target: within 10 %
#
#   [VIDEOFEED=…] [BENCH_RUNS=5] [BATCH_COUNT=50] [BATCH_RUNS=…] [JOBS=2] [MEDIA=…] [PARTS="1 1b 2 3 3b 4 5 6 7"] \
#     bash Benchmarks/compare-transcode.sh
#
# VIDEOFEED  the binary (default: the release build, `swift build -c release --show-bin-path`; `make release`)
# BENCH_RUNS hyperfine runs per command after one warm-up (parts 1-3); BATCH_RUNS those of part 2 (default BENCH_RUNS)
# BATCH_COUNT clips in the batch; JOBS files at a time in the batch (default 2, the cores of the project machine)
# MEDIA      the real clips (default ../shared/media beside the repository)
# PARTS      which parts to run (4 and 5 reuse the outputs of part 1's first runs)
# Needs ffmpeg/ffprobe (with zscale), hyperfine, python3 and GNU time (`apt-get install time`): make bench-transcode.
# The defaults take about 40 minutes on 2 cores, most of it part 2 (BATCH_RUNS=3 or BATCH_COUNT=20 shorten it);
# BENCH_RUNS=2 BATCH_COUNT=10 checks the script in about 8. Part 5 also prints each output's frame count, duration,
# timestamps, SAR and audio beside the source's: the ffmpeg CLI retimes a VFR source to constant rate in MP4.
set -euo pipefail
export LC_ALL=C
root=$(cd "$(dirname "$0")/.." && pwd)
VIDEOFEED=${VIDEOFEED:-$(cd "$root" && swift build -c release --show-bin-path)/videofeed}
runs=${BENCH_RUNS:-5}
batch_runs=${BATCH_RUNS:-$runs}
batch_count=${BATCH_COUNT:-50}
jobs=${JOBS:-2}
media=${MEDIA:-$root/../shared/media}
parts=" ${PARTS:-1 1b 2 3 3b 4 5 6 7} "

die() { echo "compare-transcode: $*" >&2; exit 1; }
want() { [[ "$parts" == *" $1 "* ]]; }
q() { printf '%q' "$1"; }   # a path as a shell word (unchanged when it has nothing special)

[ -x "$VIDEOFEED" ] || die "no videofeed binary at $VIDEOFEED (make release, or set VIDEOFEED)"
for tool in hyperfine ffmpeg ffprobe python3; do
  command -v $tool >/dev/null || die "$tool is missing (make bench-deps)"
done
[ -x /usr/bin/time ] || die "/usr/bin/time is missing (apt-get install time)"
[[ "$(ffmpeg -hide_banner -filters 2>/dev/null)" == *" zscale "* ]] || die "this ffmpeg has no zscale filter"
[[ "$runs" =~ ^[1-9][0-9]*$ && "$batch_runs" =~ ^[1-9][0-9]*$ && "$batch_count" =~ ^[1-9][0-9]*$ \
   && "$jobs" =~ ^[1-9][0-9]*$ ]] || die "BENCH_RUNS, BATCH_RUNS, BATCH_COUNT and JOBS must be positive integers"
# Every input a chosen part needs is there before anything runs.
if want 1 || want 4 || want 5; then
  for f in "$media/sample.mp4" "$media/fire2.mp4"; do
    [ -f "$f" ] || die "missing $f (set MEDIA to the folder of the real clips, ../shared/media)"
  done
fi
if want 6; then
  for f in "$media/hdr10-video-with-sdr-container.mp4" "$media/sample_with_color_info.mp4" \
           "$root/Fixtures/transcode/hdr10_pq.mp4" "$root/Fixtures/transcode/hlg.mp4" \
           "$root/Fixtures/transcode/hdr10_rotated_phone.mp4"; do
    [ -f "$f" ] || die "missing $f"
  done
fi
vf=$(q "$VIDEOFEED")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Fields of the first video stream, comma-separated.
probe() { ffprobe -v error -select_streams v:0 -show_entries "stream=$2" -of csv=p=0 "$1" | sed -n 1p | sed 's/,*$//'; }

# Our VBV cap for a WxH rendition of a source at FPS (TranscodePlan: w*h*3.3*max(1, min(fps,60)/30), truncated).
maxrate() {
  python3 -c 'import sys; w, h, r = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
n, _, d = r.partition("/"); fps = float(n) / float(d or 1) if float(d or 1) else 0.0
fps = min(fps if fps > 0 else 30.0, 60.0)
print(int(float(w * h) * 3.3 * max(1.0, min(fps, 60.0) / 30.0)))' "$1" "$2" "$3"
}

# `in_color_matrix=bt709:` for a source whose matrix is unspecified at an HD size (limited range), which we read as
# BT.709 as players do (Media's UntaggedColour; libswscale would take BT.601 and convert); empty otherwise.
inmatrix() {  # SOURCE
  ffprobe -v error -select_streams v:0 -show_entries stream=width,height,color_space,color_range,pix_fmt \
    -of default=nw=1 "$1" | python3 -c 'import sys
f = dict(l.strip().split("=", 1) for l in sys.stdin if "=" in l)
w, h = int(f.get("width") or 0), int(f.get("height") or 0)
hd = max(w, h) >= 1280 or min(w, h) > 576
untagged = f.get("color_space", "unknown") in ("", "unknown")
full = f.get("color_range") == "pc" or f.get("pix_fmt", "").startswith("yuvj")
print("in_color_matrix=bt709:" if untagged and not full and hd else "")'
}

# The ffmpeg CLI's video+audio settings for a WxH rendition of SOURCE, as one string of arguments. A source more
# than 5 % above 60 fps gets the fps cap our filter graph adds.
ffargs() {  # W H SOURCE
  local rate; rate=$(probe "$3" avg_frame_rate)
  local chain="scale=$1:$2:flags=bicubic:$(inmatrix "$3")out_color_matrix=bt709:out_range=tv,format=yuv420p"
  if python3 -c 'import sys; n, _, d = sys.argv[1].partition("/"); sys.exit(0 if float(d or 1) and float(n) / float(d or 1) > 60 * 1.05 else 1)' "$rate"; then
    chain="fps=fps=60,$chain"
  fi
  echo "-vf $chain $(ffenc "$1" "$2" "$rate")"
}

# The encoder settings alone (W H SOURCE-FRAME-RATE).
ffenc() {
  local m; m=$(maxrate "$1" "$2" "$3")
  echo "-c:v libx264 -preset veryfast -crf 23 -profile:v high -maxrate $m -bufsize $((m * 2))" \
       "-force_key_frames 'expr:gte(t,n_forced*2)' -forced-idr 1 -c:a aac -b:a 128k -ac 2"
}

# A folder holding just FILE (hard-linked when it can be), for `videofeed transcode DIR`.
folder_of() {  # FILE DIR
  mkdir -p "$2"
  ln -f "$1" "$2/" 2>/dev/null || cp -f "$1" "$2/"
}

# Peak RSS in MiB from a /usr/bin/time -v report.
max_rss() { awk -F': ' '/Maximum resident set size/ { printf "%.1f", $2 / 1024 }' "$1"; }

# Frames and seconds of the first video stream ("frames duration").
frames_of() { ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets,duration \
  -of csv=p=0 "$1" | sed -n 1p | awk -F, '{ printf "%s %.3f", $2, $1 }'; }

# hyperfine's JSON → one "name mean sd median cpu" line per command.
hf_lines() {
  python3 - "$1" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(r["command"], r["mean"], r["stddev"] or 0.0, r["median"], r["user"] + r["system"])
PY
}

echo "# videofeed transcode vs the ffmpeg CLI"
echo
echo "binary: $VIDEOFEED; $(nproc) cores; $(ffmpeg -version | sed -n 1p | cut -d' ' -f1-3); hyperfine runs: $runs" \
     "(batch: $batch_runs) after 1 warm-up; $(date -u '+%Y-%m-%d %H:%M UTC')"
echo

# ---------------------------------------------------------------------------------------------------------------
# Inputs of parts 1, 3, 4, 5: the synthetic clip and the two real clips.
# ---------------------------------------------------------------------------------------------------------------
synthetic=$root/Fixtures/bench/thumbs/clip_000.mp4
if want 1 || want 3 || want 4 || want 5; then
  [ -f "$synthetic" ] || bash "$root/Fixtures/generate.sh" --bench-thumbs >&2
  [ -f "$synthetic" ] || die "Fixtures/generate.sh --bench-thumbs did not make $synthetic"
fi
names=(clip_000 sample fire2)
declare -A src label size ours_out ff_out ours_rss ff_rss ffcmd ourcmd timed_ours timed_ff
ours_single() { echo "$vf transcode $(q "$1") --out $(q "$2") --ladder 720x1280 --preview-seconds 0 --no-segments --jobs 1 --force -q"; }
ffmpeg_single() { echo "ffmpeg -nostdin -v error -y -i $(q "$1") $(ffargs "$2" "$3" "$1") -movflags +faststart $(q "$4")"; }  # SRC W H OUT
if want 1 || want 4 || want 5; then
  src[clip_000]=$synthetic
  src[sample]=$media/sample.mp4
  src[fire2]=$media/fire2.mp4
  label[clip_000]="synthetic testsrc2 1080x1920 30 fps 10 s, no audio"
  label[sample]="sample.mp4 1080x720 29.97 fps 1.0 s, H.264+AAC"
  label[fire2]="fire2.mp4 1280x720 rotated 180°, VFR ~10.5 fps 2.4 s, H.264+AAC mono"
  for n in "${names[@]}"; do
    [ -f "${src[$n]}" ] || die "missing ${src[$n]} (set MEDIA to the folder of the real clips)"
    folder_of "${src[$n]}" "$work/in/$n"
    input="$work/in/$n/$(basename "${src[$n]}")"
    src[$n]=$input
    ourcmd[$n]=$(ours_single "$work/in/$n" "$work/out/ours-$n")
    # The first run of each tool gives the outputs of parts 4 and 5 and our rendition's size.
    /usr/bin/time -v -o "$work/rss-ours-$n.txt" sh -c "${ourcmd[$n]}" >/dev/null \
      || die "videofeed failed on $input: ${ourcmd[$n]}"
    ours_out[$n]=$(find "$work/out/ours-$n" -name 720x1280.mp4 | sed -n 1p)
    [ -n "${ours_out[$n]}" ] || die "videofeed made no 720x1280.mp4 for $input"
    size[$n]=$(probe "${ours_out[$n]}" width,height | tr , x)
    w=${size[$n]%x*} h=${size[$n]#*x}
    ff_out[$n]=$work/out/ffmpeg-$n.mp4
    ffcmd[$n]=$(ffmpeg_single "$input" "$w" "$h" "${ff_out[$n]}")
    timed_ours[$n]=$(ours_single "$work/in/$n" "$work/out/timed-ours-$n")
    timed_ff[$n]=$(ffmpeg_single "$input" "$w" "$h" "$work/out/timed-ffmpeg-$n.mp4")
    /usr/bin/time -v -o "$work/rss-ffmpeg-$n.txt" sh -c "${ffcmd[$n]}" || die "ffmpeg failed: ${ffcmd[$n]}"
    ours_rss[$n]=$(max_rss "$work/rss-ours-$n.txt")
    ff_rss[$n]=$(max_rss "$work/rss-ffmpeg-$n.txt")
  done
fi

# ---------------------------------------------------------------------------------------------------------------
# 1. Single clip speed
# ---------------------------------------------------------------------------------------------------------------
if want 1; then
  args=()
  for n in "${names[@]}"; do
    # The timed runs write beside the first ones, so parts 4 and 5 keep theirs.
    args+=(-n "ours-$n" "${timed_ours[$n]}" -n "ffmpeg-$n" "${timed_ff[$n]}")
  done
  hyperfine --warmup 1 --runs "$runs" --style none --export-json "$work/single.json" "${args[@]}" >/dev/null
  declare -A mean sd cpu
  while read -r name m s _ c; do mean[$name]=$m sd[$name]=$s cpu[$name]=$c; done < <(hf_lines "$work/single.json")
  echo "## 1. Single clip to the 720x1280 rendition (fast-start MP4), one at a time"
  echo
  echo "| clip | output | ours (s) | ffmpeg (s) | ours / ffmpeg | CPU ours / ffmpeg (s) |"
  echo "| --- | --- | --- | --- | --- | --- |"
  for n in "${names[@]}"; do
    python3 -c 'import sys; l, sz, om, osd, fm, fsd, oc, fc = sys.argv[1:]
om, osd, fm, fsd, oc, fc = map(float, (om, osd, fm, fsd, oc, fc))
print(f"| {l} | {sz} | {om:.3f} ± {osd:.3f} | {fm:.3f} ± {fsd:.3f} | **{om / fm:.2f}** | {oc:.2f} / {fc:.2f} |")' \
      "${label[$n]}" "${size[$n]}" "${mean[ours-$n]}" "${sd[ours-$n]}" "${mean[ffmpeg-$n]}" "${sd[ffmpeg-$n]}" \
      "${cpu[ours-$n]}" "${cpu[ffmpeg-$n]}"
  done
  echo
  echo '```sh'
  for n in "${names[@]}"; do echo "${timed_ours[$n]}"; echo "${timed_ff[$n]}"; done
  echo '```'
  echo
fi

# ---------------------------------------------------------------------------------------------------------------
# 1b. The default ladder: every rung from one pass, against one ffmpeg process making the same MP4s (split + scale)
# ---------------------------------------------------------------------------------------------------------------
if want 1b; then
  [ -f "$synthetic" ] || bash "$root/Fixtures/generate.sh" --bench-thumbs >&2
  ladder_names=(clip_000 sample fire2 portrait_4k60)
  declare -A lsrc llabel
  lsrc[clip_000]=$synthetic; llabel[clip_000]="synthetic testsrc2 1080x1920 30 fps 10 s, no audio"
  lsrc[sample]=$media/sample.mp4; llabel[sample]="sample.mp4 1080x720 29.97 fps 1.0 s, H.264+AAC"
  lsrc[fire2]=$media/fire2.mp4; llabel[fire2]="fire2.mp4 1280x720 rotated 180°, VFR ~10.5 fps 2.4 s, H.264+AAC mono"
  lsrc[portrait_4k60]=$media/portrait_4k60.mp4
  llabel[portrait_4k60]="portrait_4k60.mp4 $(probe "$media/portrait_4k60.mp4" width,height | tr , x) phone clip, $(probe "$media/portrait_4k60.mp4" codec_name)"
  for n in "${ladder_names[@]}"; do
    [ -f "${lsrc[$n]}" ] || die "missing ${lsrc[$n]} (set MEDIA to the folder of the real clips)"
  done
  largs=()
  declare -A lours lseg lff lplain lsizes
  for n in "${ladder_names[@]}"; do
    folder_of "${lsrc[$n]}" "$work/ladder-in/$n"
    input="$work/ladder-in/$n/$(basename "${lsrc[$n]}")"
    lours[$n]="$vf transcode $(q "$work/ladder-in/$n") --out $(q "$work/ladder/ours-$n") --preview-seconds 0 --no-segments --jobs 1 --force -q"
    # What `videofeed transcode` makes by default (but the card preview): the MP4s and every rung's CMAF segments
    # and playlists, from the same encode.
    lseg[$n]="$vf transcode $(q "$work/ladder-in/$n") --out $(q "$work/ladder/ours-seg-$n") --preview-seconds 0 --jobs 1 --force -q"
    sh -c "${lours[$n]}" >/dev/null || die "videofeed failed: ${lours[$n]}"
    # The rungs our default ladder made for this source, largest first, and their upright sizes.
    rungs=$(find "$work/ladder/ours-$n" -name '*.mp4' -printf '%f %p\n' | sort -t x -k1,1nr | cut -d' ' -f2-)
    [ -n "$rungs" ] || die "videofeed made no MP4 for $input"
    rate=$(probe "$input" avg_frame_rate)
    pre=""
    if python3 -c 'import sys; n, _, d = sys.argv[1].partition("/"); sys.exit(0 if float(d or 1) and float(n) / float(d or 1) > 60 * 1.05 else 1)' "$rate"; then
      pre="fps=fps=60,"
    fi
    count=$(echo "$rungs" | wc -l)
    graph="[0:v]${pre}split=$count" plain="$graph"
    for k in $(seq 0 $((count - 1))); do graph+="[s$k]"; plain+="[s$k]"; done
    outs="" pouts="" sizes="" k=0
    while read -r rung; do
      wh=$(probe "$rung" width,height | tr , x)
      w=${wh%x*} h=${wh#*x}
      graph+=";[s$k]scale=$w:$h:flags=bicubic:$(inmatrix "$input")out_color_matrix=bt709:out_range=tv,format=yuv420p[v$k]"
      plain+=";[s$k]scale=$w:$h:flags=bicubic[v$k]"
      outs+=" -map '[v$k]' -map '0:a?' $(ffenc "$w" "$h" "$rate") -movflags +faststart $(q "$work/ladder/ffmpeg-$n-$wh.mp4")"
      pouts+=" -map '[v$k]' -map '0:a?' $(ffenc "$w" "$h" "$rate") -movflags +faststart $(q "$work/ladder/plain-$n-$wh.mp4")"
      sizes+="${sizes:+, }$wh"
      k=$((k + 1))
    done <<< "$rungs"
    lsizes[$n]=$sizes
    lff[$n]="ffmpeg -nostdin -v error -y -i $(q "$input") -filter_complex '$graph'$outs"
    lplain[$n]="ffmpeg -nostdin -v error -y -i $(q "$input") -filter_complex '$plain'$pouts"
    sh -c "${lff[$n]}" || die "ffmpeg failed: ${lff[$n]}"
    largs+=(-n "ours-$n" "${lours[$n]}" -n "ours-seg-$n" "${lseg[$n]}" -n "ffmpeg-$n" "${lff[$n]}"
            -n "plain-$n" "${lplain[$n]}")
  done
  hyperfine --warmup 1 --runs "$runs" --style none --export-json "$work/ladder.json" "${largs[@]}" >/dev/null
  declare -A lmean lsd lcpu
  while read -r name m s _ c; do lmean[$name]=$m lsd[$name]=$s lcpu[$name]=$c; done < <(hf_lines "$work/ladder.json")
  echo "## 1b. Single clip to the default ladder (every rung a fast-start MP4), one at a time"
  echo
  echo "MP4s: \`--no-segments\`, the same outputs as ffmpeg's. + segments: the MP4s and every rung's CMAF segments and"
  echo "playlists (the default outputs but the card preview), against the same ffmpeg run. Plain: ffmpeg with"
  echo "\`scale=W:H:flags=bicubic\` alone, the command a user would type: no conversion to BT.709 limited range, so"
  echo "not the same pictures, shown for what that conversion costs."
  echo
  echo "| clip | rungs | ours, MP4s (s) | ours, + segments (s) | ffmpeg (s) | wall ours / ffmpeg: MP4s, + segments | CPU ours / ffmpeg (s): MP4s, + segments | CPU ratio: MP4s, + segments | ffmpeg, plain scale (s) | wall ours + segments / plain | CPU ours + segments / plain |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  for n in "${ladder_names[@]}"; do
    python3 -c 'import sys; l, sz, om, osd, sm, ssd, fm, fsd, oc, sc, fc, pm, psd, pc = sys.argv[1:]
om, osd, sm, ssd, fm, fsd, oc, sc, fc, pm, psd, pc = map(float, (om, osd, sm, ssd, fm, fsd, oc, sc, fc, pm, psd, pc))
print(f"| {l} | {sz} | {om:.3f} ± {osd:.3f} | {sm:.3f} ± {ssd:.3f} | {fm:.3f} ± {fsd:.3f} | **{om / fm:.2f}**, **{sm / fm:.2f}** | {oc:.2f}, {sc:.2f} / {fc:.2f} | **{oc / fc:.2f}**, **{sc / fc:.2f}** | {pm:.3f} ± {psd:.3f} | {sm / pm:.2f} | {sc / pc:.2f} |")' \
      "${llabel[$n]}" "${lsizes[$n]}" "${lmean[ours-$n]}" "${lsd[ours-$n]}" "${lmean[ours-seg-$n]}" "${lsd[ours-seg-$n]}" \
      "${lmean[ffmpeg-$n]}" "${lsd[ffmpeg-$n]}" "${lcpu[ours-$n]}" "${lcpu[ours-seg-$n]}" "${lcpu[ffmpeg-$n]}" \
      "${lmean[plain-$n]}" "${lsd[plain-$n]}" "${lcpu[plain-$n]}"
  done
  echo
  echo '```sh'
  for n in "${ladder_names[@]}"; do echo "${lours[$n]}"; echo "${lseg[$n]}"; echo "${lff[$n]}"; echo "${lplain[$n]}"; done
  echo '```'
  echo
fi

# ---------------------------------------------------------------------------------------------------------------
# 2. Batch throughput
# ---------------------------------------------------------------------------------------------------------------
if want 2; then
  bench=$root/Fixtures/bench/transcode
  mkdir -p "$bench/distinct"
  distinct=10
  for k in $(seq 0 $((distinct - 1))); do
    d=$bench/distinct/d_$k.mp4
    if [ ! -f "$d" ]; then
      echo "making $d (H.264 1080x1920 30 fps 3 s veryfast crf 23 + AAC stereo 48 kHz, hue $((k * 36)))" >&2
      ffmpeg -nostdin -hide_banner -loglevel error -y \
        -f lavfi -i "testsrc2=size=1080x1920:rate=30:duration=3,hue=h=$((k * 36))" \
        -f lavfi -i "sine=frequency=$((300 + k * 50)):sample_rate=48000:duration=3" \
        -c:v libx264 -threads 1 -preset veryfast -crf 23 -pix_fmt yuv420p -c:a aac -b:a 128k -ac 2 -shortest \
        -map_metadata -1 -fflags +bitexact -flags:v +bitexact -flags:a +bitexact "$d.tmp.mp4"
      mv "$d.tmp.mp4" "$d"
    fi
  done
  dir=$bench/batch-$batch_count
  if [ "$(find "$dir" -name '*.mp4' 2>/dev/null | wc -l)" -ne "$batch_count" ]; then
    rm -rf "$dir" && mkdir -p "$dir"
    for i in $(seq 0 $((batch_count - 1))); do
      ln -f "$bench/distinct/d_$((i % distinct)).mp4" "$dir/clip_$(printf '%03d' "$i").mp4"
    done
  fi
  first=$dir/clip_000.mp4
  bargs=$(ffargs 720 1280 "$first")   # all clips are 1080x1920 30 fps: the 720x1280 rung, 3.04 Mb/s cap
  [ "$(probe "$first" width,height)" = "1080,1920" ] || die "$first is not 1080x1920"
  qd=$(q "$dir")
  declare -A bcmd
  order=(ours ours-threads0 ffmpeg ffmpeg-threads1)
  for v in ours ours-threads0; do
    t=""; [ "$v" = ours ] || t=" --threads ${v#ours-threads}"
    bcmd[$v]="$vf transcode $qd --out $(q "$work/batch/$v") --ladder 720x1280 --preview-seconds 0 --no-segments --jobs $jobs$t --force -q"
  done
  for v in ffmpeg ffmpeg-threads1; do
    t=""; [ "$v" = ffmpeg ] || t=" -threads 1"
    mkdir -p "$work/batch/$v"
    bcmd[$v]="ls $qd/*.mp4 | xargs -P $jobs -I{} sh -c 'ffmpeg -nostdin -v error -y -i \"\$1\" ${bargs//\'/\"}$t -movflags +faststart $(q "$work/batch/$v")/\$(basename \"\$1\")' _ {}"
  done
  args=()
  for v in "${order[@]}"; do args+=(-n "$v" "${bcmd[$v]}"); done
  hyperfine --warmup 1 --runs "$batch_runs" --style none --export-json "$work/batch.json" "${args[@]}" >/dev/null
  # Every contender made every file.
  for v in "${order[@]}"; do
    made=$(find "$work/batch/$v" -name '*.mp4' | wc -l)
    [ "$made" -eq "$batch_count" ] || die "$v made $made of $batch_count files"
  done
  echo "## 2. Batch: $batch_count clips (H.264 1080x1920 30 fps 3 s + AAC) to 720x1280 fast-start MP4s, $jobs at a time"
  echo
  echo "| contender | wall (s) | clips/s | CPU (s) | time / ffmpeg | time / ffmpeg -threads 1 |"
  echo "| --- | --- | --- | --- | --- | --- |"
  python3 - "$work/batch.json" "$batch_count" <<'PY'
import json, sys
runs = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
n = int(sys.argv[2])
names = {"ours": "videofeed (default: cores/jobs decoder threads per item)",
         "ours-threads0": "videofeed --threads 0 (FFmpeg chooses decoder threads)", "ffmpeg": "ffmpeg per file",
         "ffmpeg-threads1": "ffmpeg -threads 1 per file"}
base, base1 = runs["ffmpeg"]["mean"], runs["ffmpeg-threads1"]["mean"]
for key, label in names.items():
    r = runs[key]
    m = r["mean"]
    bold = "**" if key.startswith("ours") else ""
    print(f"| {label} | {m:.2f} ± {r['stddev'] or 0:.2f} | {n / m:.2f} | {r['user'] + r['system']:.1f} "
          f"| {bold}{m / base:.2f}{bold} | {m / base1:.2f} |")
PY
  echo
  echo '```sh'
  for v in "${order[@]}"; do echo "${bcmd[$v]}"; done
  echo '```'
  echo
fi

# ---------------------------------------------------------------------------------------------------------------
# 3. First segment of a cold item (and a mid-item one)
# ---------------------------------------------------------------------------------------------------------------
if want 3; then
  clip=$synthetic
  qc=$(q "$clip")
  sargs=$(ffargs 720 1280 "$clip")
  declare -A scmd
  for k in 0 2; do
    # --first-segment 2: every segment 2 s (the default first one is 1 s), so segment k is ffmpeg's [2k, 2k + 2).
    scmd[ours-$k]="$vf transcode segment $qc --index $k --ladder 720x1280 --first-segment 2 --out $(q "$work/seg/ours-$k")"
    ss=""; [ "$k" = 0 ] || ss="-ss $((k * 2)) "
    scmd[ffmpeg-$k]="ffmpeg -nostdin -v error -y ${ss}-t 2 -i $qc $sargs $(q "$work/seg/ffmpeg-$k.mp4")"
  done
  mkdir -p "$work/seg"
  args=()
  for k in 0 2; do args+=(-n "ours-$k" "${scmd[ours-$k]}" -n "ffmpeg-$k" "${scmd[ffmpeg-$k]}"); done
  hyperfine --warmup 1 --runs "$runs" --style none --export-json "$work/seg.json" "${args[@]}" >/dev/null
  declare -A smean ssd self sframes
  while read -r name m s _ _; do smean[$name]=$m ssd[$name]=$s; done < <(hf_lines "$work/seg.json")
  for k in 0 2; do
    # The milliseconds our command reports itself (open, seek, decode, encode, mux; no process start), median of
    # BENCH_RUNS more runs.
    : > "$work/seg/self-$k.txt"
    for _ in $(seq "$runs"); do sh -c "${scmd[ours-$k]}" >> "$work/seg/self-$k.txt"; done
    self[$k]=$(sed -n 's/.* \([0-9.]*\) ms$/\1/p' "$work/seg/self-$k.txt" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    sframes[ours-$k]=$(sed -n 's/.* \([0-9]*\) frames,.*/\1/p' "$work/seg/self-$k.txt" | tail -1)
    sframes[ffmpeg-$k]=$(frames_of "$work/seg/ffmpeg-$k.mp4" | cut -d' ' -f1)
    [ -n "${self[$k]}" ] || die "no timing in the output of ${scmd[ours-$k]}"
  done
  echo "## 3. One segment of a cold item, made alone (synthetic 1080x1920 clip → 720x1280, 2 s segments)"
  echo
  echo "| segment | ours (ms) | ours, self-reported (ms, median) | ffmpeg (ms) | ours / ffmpeg | frames ours / ffmpeg |"
  echo "| --- | --- | --- | --- | --- | --- |"
  for k in 0 2; do
    python3 -c 'import sys; k, om, osd, me, fm, fsd, fo, ff = sys.argv[1:]
om, osd, fm, fsd = (float(x) * 1000 for x in (om, osd, fm, fsd))
what = "0 (0-2 s)" if k == "0" else f"{k} ({2 * int(k)}-{2 * int(k) + 2} s, a seek)"
print(f"| {what} | {om:.0f} ± {osd:.0f} | {float(me):.0f} | {fm:.0f} ± {fsd:.0f} | **{om / fm:.2f}** | {fo} / {ff} |")' \
      "$k" "${smean[ours-$k]}" "${ssd[ours-$k]}" "${self[$k]}" "${smean[ffmpeg-$k]}" "${ssd[ffmpeg-$k]}" \
      "${sframes[ours-$k]}" "${sframes[ffmpeg-$k]}"
  done
  echo
  echo '```sh'
  for k in 0 2; do echo "${scmd[ours-$k]}"; echo "${scmd[ffmpeg-$k]}"; done
  echo '```'
  echo
fi

# ---------------------------------------------------------------------------------------------------------------
# 3b. What `serve` makes first for a cold item: segment 0 with the default settings (its first second), of every
# rendition from one pass as serve's listing makes them (`--every-rendition`) and of the 720x1280 rung alone, against
# ffmpeg encoding the same second with the same settings (the ladder split three ways, or the one rung); the
# synthetic and the real clips; each tool's process start, and an in-process column
# ---------------------------------------------------------------------------------------------------------------
if want 3b; then
  [ -f "$synthetic" ] || bash "$root/Fixtures/generate.sh" --bench-thumbs >&2
  first_names=(clip_000 sample fire2 portrait_4k60)
  declare -A fsrc fcmd
  fsrc[clip_000]=$synthetic fsrc[sample]=$media/sample.mp4 fsrc[fire2]=$media/fire2.mp4
  fsrc[portrait_4k60]=$media/portrait_4k60.mp4
  mkdir -p "$work/first"
  args=()
  for n in "${first_names[@]}"; do
    src=${fsrc[$n]}
    [ -f "$src" ] || die "missing $src (set MEDIA to the folder of the real clips)"
    fcmd[ours-all-$n]="$vf transcode segment $(q "$src") --index 0 --every-rendition --out $(q "$work/first/ours-all-$n")"
    fcmd[ours-one-$n]="$vf transcode segment $(q "$src") --index 0 --ladder 720x1280 --out $(q "$work/first/ours-one-$n")"
    sh -c "${fcmd[ours-all-$n]}" >/dev/null || die "videofeed failed: ${fcmd[ours-all-$n]}"
    rate=$(probe "$src" avg_frame_rate)
    pre=""
    if python3 -c 'import sys; n, _, d = sys.argv[1].partition("/"); sys.exit(0 if float(d or 1) and float(n) / float(d or 1) > 60 * 1.05 else 1)' "$rate"; then
      pre="fps=fps=60,"
    fi
    # Each rendition's init, largest first (by its folder's name, WxH).
    rungs=$(find "$work/first/ours-all-$n" -name init.mp4 | awk -F/ '{ print $(NF-1) " " $0 }' | sort -t x -k1,1nr \
      | cut -d' ' -f2-)
    count=$(echo "$rungs" | wc -l)
    graph="[0:v]${pre}split=$count"
    for k in $(seq 0 $((count - 1))); do graph+="[s$k]"; done
    outs="" k=0 one=""
    while read -r init; do
      wh=$(probe "$init" width,height | tr , x)
      w=${wh%x*} h=${wh#*x}
      [ -n "$one" ] || one="$w $h"
      graph+=";[s$k]scale=$w:$h:flags=bicubic:$(inmatrix "$src")out_color_matrix=bt709:out_range=tv,format=yuv420p[v$k]"
      outs+=" -map '[v$k]' -map '0:a?' $(ffenc "$w" "$h" "$rate") $(q "$work/first/ffmpeg-all-$n-$wh.mp4")"
      k=$((k + 1))
    done <<< "$rungs"
    fcmd[ffmpeg-all-$n]="ffmpeg -nostdin -v error -y -t 1 -i $(q "$src") -filter_complex '$graph'$outs"
    fcmd[ffmpeg-one-$n]="ffmpeg -nostdin -v error -y -t 1 -i $(q "$src") $(ffargs $one "$src") $(q "$work/first/ffmpeg-one-$n.mp4")"
    for v in all one; do args+=(-n "ours-$v-$n" "${fcmd[ours-$v-$n]}" -n "ffmpeg-$v-$n" "${fcmd[ffmpeg-$v-$n]}"); done
  done
  # Each tool's bare process start (dynamic linking and initialisers), which `serve` does not pay per segment.
  args+=(-n "start-ours" "$vf help >/dev/null" -n "start-ffmpeg" "ffmpeg -hide_banner -version >/dev/null")
  hyperfine --warmup 1 --runs "$runs" --style none --export-json "$work/first.json" "${args[@]}" >/dev/null
  declare -A fmean fsd fcpu fself
  while read -r name m sd _ c; do fmean[$name]=$m fsd[$name]=$sd fcpu[$name]=$c; done < <(hf_lines "$work/first.json")
  for n in "${first_names[@]}"; do
    for v in all one; do
      # What our command reports itself (open, decode, encode, mux; no process start), median of BENCH_RUNS runs.
      : > "$work/first/self-$v-$n.txt"
      for _ in $(seq "$runs"); do sh -c "${fcmd[ours-$v-$n]}" >> "$work/first/self-$v-$n.txt"; done
      fself[$v-$n]=$(sed -n 's/.* \([0-9.]*\) ms$/\1/p' "$work/first/self-$v-$n.txt" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    done
  done
  echo "## 3b. The first second of a cold item as serve makes it (segment 0, 1 s), against ffmpeg encoding the same second"
  echo
  echo "Every rendition: the default ladder from one pass, as serve's listing of a cold item makes it, against ffmpeg's"
  echo "ladder (split, one scale and encoder per rung). One rung: the 720x1280 rung alone. Process starts: ours"
  echo "$(python3 -c "print(round(${fmean[start-ours]} * 1000))") ms, ffmpeg's $(python3 -c "print(round(${fmean[start-ffmpeg]} * 1000))") ms (\`videofeed help\`, \`ffmpeg -version\`); in process: our command's own report"
  echo "against ffmpeg's wall time less its process start."
  echo
  echo "| clip | renditions | ours (ms) | ffmpeg (ms) | wall ours / ffmpeg | CPU ours / ffmpeg (ms) | CPU ratio | in process: ours / ffmpeg (ms) | ratio |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  for n in "${first_names[@]}"; do
    for v in all one; do
      python3 -c 'import sys; n, v, om, osd, fm, fsd, oc, fc, me, fs = sys.argv[1:]
om, osd, fm, fsd, oc, fc, fs = (float(x) * 1000 for x in (om, osd, fm, fsd, oc, fc, fs))
me = float(me); fin = fm - fs
what = "every one" if v == "all" else "720x1280 box"
print(f"| {n} | {what} | {om:.0f} ± {osd:.0f} | {fm:.0f} ± {fsd:.0f} | **{om / fm:.2f}** | {oc:.0f} / {fc:.0f} | **{oc / fc:.2f}** | {me:.0f} / {fin:.0f} | **{me / fin:.2f}** |")' \
        "$n" "$v" "${fmean[ours-$v-$n]}" "${fsd[ours-$v-$n]}" "${fmean[ffmpeg-$v-$n]}" "${fsd[ffmpeg-$v-$n]}" \
        "${fcpu[ours-$v-$n]}" "${fcpu[ffmpeg-$v-$n]}" "${fself[$v-$n]}" "${fmean[start-ffmpeg]}"
    done
  done
  echo
  echo '```sh'
  for n in "${first_names[@]}"; do for v in all one; do echo "${fcmd[ours-$v-$n]}"; echo "${fcmd[ffmpeg-$v-$n]}"; done; done
  echo '```'
  echo
fi

# ---------------------------------------------------------------------------------------------------------------
# 4. Peak memory per job
# ---------------------------------------------------------------------------------------------------------------
if want 4; then
  echo "## 4. Peak memory of one single-clip job (/usr/bin/time -v, max RSS)"
  echo
  echo "| clip | ours (MiB) | ffmpeg (MiB) | ours / ffmpeg |"
  echo "| --- | --- | --- | --- |"
  for n in "${names[@]}"; do
    python3 -c 'import sys; l, o, f = sys.argv[1:]
print(f"| {l} | {float(o):.1f} | {float(f):.1f} | **{float(o) / float(f):.2f}** |")' "${label[$n]}" "${ours_rss[$n]}" "${ff_rss[$n]}"
  done
  echo
  echo "Commands: those of part 1 (their first runs), each under \`/usr/bin/time -v\`."
  echo
fi

# ---------------------------------------------------------------------------------------------------------------
# 5. Quality
# ---------------------------------------------------------------------------------------------------------------
# SSIM "All" of RENDITION against SOURCE put through the rendition's scale, frames paired by index (the ffmpeg CLI
# retimes a VFR source to constant rate in MP4, so timestamps do not pair the same pictures).
ssim_of() {  # RENDITION SOURCE W H
  local graph="[0:v]settb=1/30,setpts=N[a];[1:v]scale=$3:$4:flags=bicubic:$(inmatrix "$2")out_color_matrix=bt709:out_range=tv,"
  graph+="format=yuv420p,settb=1/30,setpts=N[b];[a][b]ssim=shortest=1"
  local v
  v=$(ffmpeg -nostdin -hide_banner -i "$1" -i "$2" -lavfi "$graph" -an -f null - 2>&1 \
      | sed -n 's/.*SSIM Y:.* All:\([0-9.]*\).*/\1/p' | tail -1)
  [ -n "$v" ] || die "no SSIM for $1 against $2"
  echo "$v"
}
# Table rows comparing the shape of two renditions with their source: frame count, duration, timestamps, SAR, audio.
shape_rows() {  # LABEL SOURCE OURS FFMPEG
  python3 - "$@" <<'PY'
import json, subprocess, sys
label, paths = sys.argv[1], sys.argv[2:]
def probe(path):
    run = lambda *a: json.loads(subprocess.run(["ffprobe", "-v", "error", "-of", "json", *a, path], check=True,
                                               capture_output=True, text=True).stdout)
    streams = run("-show_entries", "stream=codec_type,duration,start_time,sample_aspect_ratio,channels,sample_rate")
    pts = sorted(float(p["pts_time"]) for p in run("-select_streams", "v:0", "-show_entries", "packet=pts_time")
                 ["packets"] if p.get("pts_time") not in (None, "N/A"))
    video = next(s for s in streams["streams"] if s["codec_type"] == "video")
    audio = next((s for s in streams["streams"] if s["codec_type"] == "audio"), None)
    return video, audio, [t - pts[0] for t in pts] if pts else []
(sv, sa, spts) = probe(paths[0])
for name, path in zip(("source", "ours", "ffmpeg"), paths):
    v, a, pts = probe(path)
    same = "—" if name == "source" else ("yes" if len(pts) == len(spts) and all(
        abs(x - y) < 0.001 for x, y in zip(pts, spts)) else f"**no** (frame {next((i for i, (x, y) in enumerate(zip(pts, spts)) if abs(x - y) >= 0.001), min(len(pts), len(spts)))} differs)")
    audio = (f"{float(a.get('start_time', 0)):.3f}, {float(a.get('duration', 0)):.3f}, {a.get('channels')}, "
             f"{a.get('sample_rate')}") if a else "none"
    print(f"| {label if name == 'source' else ''} | {name} | {len(pts)} | {float(v.get('duration', 0)):.3f} | {same} "
          f"| {v.get('sample_aspect_ratio', '?')} | {audio} |")
PY
}
if want 5; then
  echo "## 5. Quality: SSIM against the source scaled the same way (bicubic, BT.709 limited)"
  echo
  echo "| clip | size | frames source / ours / ffmpeg | SSIM ours | SSIM ffmpeg | ours − ffmpeg | target |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  for n in "${names[@]}"; do
    w=${size[$n]%x*} h=${size[$n]#*x}
    so=$(ssim_of "${ours_out[$n]}" "${src[$n]}" "$w" "$h")
    sf=$(ssim_of "${ff_out[$n]}" "${src[$n]}" "$w" "$h")
    read -r fs _ <<< "$(frames_of "${src[$n]}")"
    read -r fo _ <<< "$(frames_of "${ours_out[$n]}")"
    read -r ff _ <<< "$(frames_of "${ff_out[$n]}")"
    python3 -c 'import sys; l, sz, fs, fo, ff, so, sf = sys.argv[1:]
so, sf = float(so), float(sf)
ok = "met" if so >= 0.95 and sf - so <= 0.005 else "**missed**"
print(f"| {l} | {sz} | {fs} / {fo} / {ff} | {so:.4f} | {sf:.4f} | **{so - sf:+.4f}** | {ok} |")' \
      "${label[$n]}" "${size[$n]}" "$fs" "$fo" "$ff" "$so" "$sf"
  done
  echo
  echo "What the outputs are made of (timestamps are compared after moving each file's first to 0, within 1 ms):"
  echo
  echo "| clip | file | video frames | video s | timestamps as the source's | SAR | audio: start s, s, channels, Hz |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  for n in "${names[@]}"; do shape_rows "${label[$n]}" "${src[$n]}" "${ours_out[$n]}" "${ff_out[$n]}"; done
  echo
  echo "Renditions: those of part 1's first runs. Per rendition:"
  echo
  echo '```sh'
  echo "ffmpeg -i RENDITION -i SOURCE -lavfi '[0:v]settb=1/30,setpts=N[a];[1:v]scale=W:H:flags=bicubic:out_color_matrix=bt709:out_range=tv,format=yuv420p,settb=1/30,setpts=N[b];[a][b]ssim=shortest=1' -an -f null -"
  echo '```'
  echo
fi

# ---------------------------------------------------------------------------------------------------------------
# 6. HDR tone mapping
# ---------------------------------------------------------------------------------------------------------------
# Mean luma (signalstats YAVG, limited-range code values) over every frame, and the frame count: "YAVG frames".
yavg_of() {
  ffmpeg -nostdin -v error -i "$1" -an -vf signalstats,metadata=print:key=lavfi.signalstats.YAVG:file=- -f null - \
    | awk -F= '/YAVG/ { s += $2; n++ } END { if (n) printf "%.3f %d\n", s / n, n }'
}
if want 6; then
  hdr=("$media/hdr10-video-with-sdr-container.mp4" "$root/Fixtures/transcode/hdr10_pq.mp4" "$root/Fixtures/transcode/hlg.mp4")
  tonemap="zscale=t=linear:npl=100,format=gbrpf32le,zscale=p=bt709,tonemap=tonemap=hable:desat=0,zscale=t=bt709:m=bt709:r=tv,format=yuv420p"
  rows=() cmds=()
  for f in "${hdr[@]}"; do
    [ -f "$f" ] || die "missing $f"
    n=$(basename "$f" .mp4)
    folder_of "$f" "$work/hdr-in/$n"
    input="$work/hdr-in/$n/$(basename "$f")"
    cmd="$vf transcode $(q "$work/hdr-in/$n") --out $(q "$work/hdr/ours-$n") --ladder 720x1280 --preview-seconds 0 --no-segments --jobs 1 --force -q"
    sh -c "$cmd" >/dev/null || die "videofeed failed: $cmd"
    out=$(find "$work/hdr/ours-$n" -name 720x1280.mp4 | sed -n 1p)
    [ -n "$out" ] || die "videofeed made no 720x1280.mp4 for $input"
    grep -q '"tone_mapped":true' "$work/hdr/ours-$n/renditions"*.jsonl || echo "note: videofeed did not tone-map $n" >&2
    sz=$(probe "$out" width,height)
    w=${sz%,*} h=${sz#*,}
    ref=$work/hdr/ffmpeg-$n.mp4
    fcmd="ffmpeg -nostdin -v error -y -i $(q "$input") -vf $tonemap,scale=$w:$h $(ffenc "$w" "$h" "$(probe "$input" avg_frame_rate)") -movflags +faststart $(q "$ref")"
    sh -c "$fcmd" || die "ffmpeg failed: $fcmd"
    read -r yo fo <<< "$(yavg_of "$out")"
    read -r yr fr <<< "$(yavg_of "$ref")"
    { [ -n "${yo:-}" ] && [ -n "${yr:-}" ]; } || die "no YAVG for $n"
    rows+=("$(python3 -c 'import sys; n, sz, fo, fr, yo, yr = sys.argv[1:]
d = (float(yo) - float(yr)) / float(yr)
ok = "met" if abs(d) <= 0.10 else "**missed**"
print(f"| {n} | {sz} | {fo} / {fr} | {float(yo):.2f} | {float(yr):.2f} | **{d * 100:+.2f} %** | {ok} |")' \
      "$(basename "$f")" "${w}x$h" "$fo" "$fr" "$yo" "$yr")")
    cmds+=("$cmd" "$fcmd")
  done
  echo "## 6. HDR: our default (tone-mapped) rendition vs an ffmpeg zscale + tonemap=hable reference, mean luma"
  echo
  echo "| source | size | frames ours / ref | YAVG ours | YAVG ref | ours vs ref | target (±10 %) |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
  echo
  echo '```sh'
  printf '%s\n' "${cmds[@]}"
  echo "ffmpeg -i RENDITION -an -vf signalstats,metadata=print:key=lavfi.signalstats.YAVG:file=- -f null -   # averaged"
  echo '```'
  echo

  # The poster against the rendition's first frame, as a page shows them: both in RGB (the rendition's frame through
  # BT.709 limited range), mean luma with BT.709 weights. serve's poster is `thumbs --at 0s`, 720 wide.
  rgb_luma() {
    ffmpeg -nostdin -v error -i "$1" -frames:v 1 -vf "$2" -f rawvideo -pix_fmt rgb24 - | python3 -c 'import sys
b = sys.stdin.buffer.read(); n = len(b) // 3
print(f"{(0.2126 * sum(b[0::3]) + 0.7152 * sum(b[1::3]) + 0.0722 * sum(b[2::3])) / n:.3f}")'
  }
  posters=("${hdr[@]}" "$media/sample_with_color_info.mp4" "$root/Fixtures/transcode/hdr10_rotated_phone.mp4")
  rows=() cmds=()
  for f in "${posters[@]}"; do
    [ -f "$f" ] || die "missing $f"
    n=$(basename "$f" .mp4)
    folder_of "$f" "$work/poster-in/$n"
    cmd="$vf transcode $(q "$work/poster-in/$n") --out $(q "$work/poster/video-$n") --ladder 720x1280 --preview-seconds 0 --no-segments --jobs 1 --force -q"
    sh -c "$cmd" >/dev/null || die "videofeed failed: $cmd"
    pcmd="$vf thumbs run $(q "$work/poster-in/$n") --out $(q "$work/poster/thumb-$n") --at 0s --size 720x2880 --format png -q"
    sh -c "$pcmd" >/dev/null || die "videofeed failed: $pcmd"
    video=$(find "$work/poster/video-$n" -name 720x1280.mp4 | sed -n 1p)
    poster=$(find "$work/poster/thumb-$n" -name '*.png' | sed -n 1p)
    { [ -n "$video" ] && [ -n "$poster" ]; } || die "no rendition or poster for $n"
    lv=$(rgb_luma "$video" "scale=flags=bicubic+accurate_rnd:in_color_matrix=bt709:in_range=tv:out_range=pc,format=rgb24")
    lp=$(rgb_luma "$poster" "format=rgb24")
    rows+=("$(python3 -c 'import sys; n, lp, lv = sys.argv[1:]
d = (float(lp) - float(lv)) / float(lv)
ok = "met" if abs(d) <= 0.02 else "**missed**"
print(f"| {n} | {float(lp):.2f} | {float(lv):.2f} | **{d * 100:+.2f} %** | {ok} |")' \
      "$(basename "$f")" "$lp" "$lv")")
    cmds+=("$cmd" "$pcmd")
  done
  echo "## 6b. HDR: the poster against the rendition's first frame, mean luma in RGB (BT.709 weights)"
  echo
  echo "| source | poster | first frame | poster vs frame | target (±2 %) |"
  echo "| --- | --- | --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
  echo
  echo '```sh'
  printf '%s\n' "${cmds[@]}"
  echo '```'
fi

# ---------------------------------------------------------------------------------------------------------------
# 7. The AV1 rung against the H.264 rung of the same box (--codecs h264,av1, 720x1280): video bytes and SSIM at the
# default settings, the bytes AV1 needs for the H.264 rung's SSIM (interpolated over an --av1-crf sweep), and what
# one run of each costs (wall, CPU, peak RSS: the AV1 run makes the H.264 rung too)
# ---------------------------------------------------------------------------------------------------------------
if want 7; then
  [ -f "$synthetic" ] || bash "$root/Fixtures/generate.sh" --bench-thumbs >&2
  av1_clips=("$synthetic")
  for f in sample.mp4 fire2.mp4 portrait_4k60.mp4 h265_10bits.mp4 bbb_800x640_768kbps_30fps_avc_pyramid_3b.mp4 \
           sample_with_color_info.mp4 test-009.ts var_fps_video.mp4; do
    [ -f "$media/$f" ] || die "missing $media/$f (set MEDIA to the folder of the real clips)"
    av1_clips+=("$media/$f")
  done
  sweep=(26 30 34 38 46 50 55 60)
  default_crf=$("$VIDEOFEED" transcode --help | sed -n 's/.*--av1-crf <av1-crf>.*default: \([0-9]*\).*/\1/p' | head -1)
  default_crf=${default_crf:-42}
  rows=()
  declare -a av1cmds
  mkdir -p "$work/av1"
  for src in "${av1_clips[@]}"; do
    n=$(basename "${src%.*}")
    folder_of "$src" "$work/av1-in/$n"
    # The command of one transcode of the clip at the 720x1280 box into OUT (EXTRA: its other options).
    av1cmd() { local out=$1; shift; echo "$vf transcode $(q "$work/av1-in/$n") --out $(q "$out") --ladder 720x1280 --preview-seconds 0 --no-segments --jobs 1 --force -q $*"; }
    [ "$n" = clip_000 ] && av1cmds+=("$(av1cmd "$work/av1/$n-h264")" "$(av1cmd "$work/av1/$n-av1" --codecs h264,av1)"
                                     "$(av1cmd "$work/av1/$n-crf${sweep[0]}" --codecs h264,av1 --av1-crf "${sweep[0]}")")
    run() {  # OUT EXTRA... → "wall cpu rss" of that transcode
      local cmd; cmd=$(av1cmd "$@")
      /usr/bin/time -v -o "$1.time" sh -c "$cmd" >/dev/null 2>&1 || die "videofeed failed: $cmd"
      awk -F': ' '/Elapsed \(wall clock\)/ { split($2, t, ":"); w = t[1] * 60 + t[2] } /User time/ { u = $2 } /System time/ { s = $2 }
                  /Maximum resident/ { r = $2 / 1024 } END { printf "%.3f %.3f %.1f", w, u + s, r }' "$1.time"
    }
    vbytes() { ffprobe -v error -select_streams v:0 -show_entries packet=size -of csv=p=0 "$1" | awk '{ s += $1 } END { print s }'; }
    h264_cost=$(run "$work/av1/$n-h264")
    av1_cost=$(run "$work/av1/$n-av1" --codecs h264,av1)
    hmp4=$(find "$work/av1/$n-h264" -name '720x1280.mp4' | head -1)
    amp4=$(find "$work/av1/$n-av1" -name '720x1280-av1.mp4' | head -1)
    [ -n "$hmp4" ] && [ -n "$amp4" ] || die "no 720x1280 renditions for $src"
    wh=$(probe "$hmp4" width,height | tr , x)
    hs=$(ssim_of "$hmp4" "$src" "${wh%x*}" "${wh#*x}"); as=$(ssim_of "$amp4" "$src" "${wh%x*}" "${wh#*x}")
    points="$as:$(vbytes "$amp4")"
    for c in "${sweep[@]}"; do
      run "$work/av1/$n-crf$c" --codecs h264,av1 --av1-crf "$c" >/dev/null
      m=$(find "$work/av1/$n-crf$c" -name '720x1280-av1.mp4' | head -1)
      points+=" $(ssim_of "$m" "$src" "${wh%x*}" "${wh#*x}"):$(vbytes "$m")"
    done
    rows+=("$n|$wh|$(vbytes "$hmp4")|$hs|$(vbytes "$amp4")|$as|$h264_cost|$av1_cost|$points")
  done
  echo "## 7. The AV1 rung against the H.264 rung of the same box (720x1280 box; AV1 preset 8, crf $default_crf by default)"
  echo
  echo "| clip | size | H.264 video bytes | AV1 video bytes | fewer bytes | SSIM H.264 | SSIM AV1 | AV1 bytes at the H.264 SSIM (interpolated) | fewer bytes at equal SSIM | run H.264 only: wall / CPU s / RSS MiB | run with AV1: wall / CPU s / RSS MiB |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  python3 - "${rows[@]}" <<'PY'
import sys
real_h = real_a = 0
real_ds = []
equal = []
for row in sys.argv[1:]:
    n, wh, hb, hs, ab, as_, hc, ac, pts = row.split("|")
    hb, ab, hs, as_ = int(hb), int(ab), float(hs), float(as_)
    pts = sorted((float(p.split(":")[0]), int(p.split(":")[1])) for p in pts.split())
    at = None
    for (s1, b1), (s2, b2) in zip(pts, pts[1:]):
        if s1 <= hs <= s2 and s2 > s1:
            at = b1 + (b2 - b1) * (hs - s1) / (s2 - s1)
            break
    hw, hcpu, hr = hc.split(); aw, acpu, ar = ac.split()
    if n != "clip_000":
        real_h += hb; real_a += ab; real_ds.append(as_ - hs)
        if at: equal.append(1 - at / hb)
    eq = f"{at:.0f}" if at else f"outside {pts[0][0]:.4f}–{pts[-1][0]:.4f}"
    eqs = f"**{100 * (1 - at / hb):.1f} %**" if at else "—"
    print(f"| {n} | {wh} | {hb} | {ab} | **{100 * (1 - ab / hb):.1f} %** | {hs:.4f} | {as_:.4f} ({as_ - hs:+.4f}) | {eq} | {eqs} | {hw} / {hcpu} / {hr} | {aw} / {acpu} / {ar} |")
if real_h:
    print()
    print(f"Real clips together: **{100 * (1 - real_a / real_h):.1f} %** fewer video bytes at the default settings, "
          f"mean SSIM difference {sum(real_ds) / len(real_ds):+.4f}; at equal SSIM, per clip: "
          + ", ".join(f"{100 * e:.1f} %" for e in equal) + f" ({len(equal)} of {len(real_ds)} clips inside the sweep).")
PY
  echo
  echo '```sh'
  printf '%s\n' "${av1cmds[@]}"
  echo "# ... and --av1-crf ${sweep[*]} for every clip; SSIM as in part 5, bytes: ffprobe's video packet sizes"
  echo '```'
  echo
fi
