#!/usr/bin/env bash
# Thumbnail throughput, side by side in one hyperfine run, on 100 clips (H.264 1080x1920, 10 s, keyframes at 0 and
# 8.33 s) made by `bash Fixtures/generate.sh --bench-thumbs`. Every contender writes one JPEG per clip fitted in
# 320x320 (180x320 for these portrait clips) at 10 % of the duration (1 s), JOBS files at a time. Three comparisons,
# each like with like:
#
#   keyframe, one process per file   the frame at the keyframe at or before 1 s (frame 0 here)
#     videofeed-per-file   `videofeed thumbs FOLDER --at 10% --jobs 1 …` per file (a folder holding it) with
#                          `xargs -P JOBS`
#     ffmpegthumbnailer    `ffmpegthumbnailer -s 320 -t 10%` per file (the keyframe at or after 10 %: frame 250 here)
#     ffmpeg-keyframe      `ffmpeg -ss 1 -noaccurate_seek -i F -frames:v 1 …` per file (the keyframe the seek lands on)
#   exact, one process per file      the first frame at or after 1 s (31 frames decoded)
#     videofeed-exact-per-file   the same as videofeed-per-file with --exact
#     ffmpeg-exact         `ffmpeg -ss 1 -i F -frames:v 1 …` per file
#   one process for the batch        what a batch gains by not starting a process per file
#     videofeed / videofeed-exact   `videofeed thumbs DIR --jobs JOBS` (one process)
#     bare-loop / bare-loop-exact   Benchmarks/ThumbsLoop: the same Media calls in a plain loop on JOBS threads
#
# Printed: each contender's median wall, clips/s and CPU (user + system, children included); the ratios within each
# comparison; and the cost of process starts, (per-file − batch) / files, for videofeed.
#
#   Benchmarks/compare-thumbs.sh [JOBS]        JOBS defaults to the number of cores; RUNS=5 by default
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${1:-$(nproc)}
dir=$root/Fixtures/bench/thumbs
[ "$(ls "$dir"/*.mp4 2>/dev/null | wc -l)" -ge 100 ] || bash "$root/Fixtures/generate.sh" --bench-thumbs
for tool in hyperfine ffmpegthumbnailer ffmpeg; do
  command -v $tool >/dev/null || { echo "compare-thumbs: $tool is missing (make bench-deps)" >&2; exit 2; }
done
(cd "$root" && swift build -c release --product videofeed >/dev/null)
(cd "$root/Benchmarks" && swift build -c release --product ThumbsLoop >/dev/null)
bin="$(cd "$root" && swift build -c release --show-bin-path)/videofeed"
loop="$(cd "$root/Benchmarks" && swift build -c release --show-bin-path)/ThumbsLoop"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
count=$(ls "$dir"/*.mp4 | wc -l)
scale="scale=320:320:force_original_aspect_ratio=decrease"
# One process per file ($1 in COMMAND is the clip). `videofeed thumbs` takes a folder: each clip gets one of its own.
per_file() { echo "ls $dir/*.mp4 | xargs -P $jobs -I{} sh -c '$1' _ {}"; }
per_folder() { echo "ls -d $work/one/* | xargs -P $jobs -I{} sh -c '$1' _ {}"; }
for f in "$dir"/*.mp4; do
  mkdir -p "$work/one/$(basename "$f" .mp4)"
  ln "$f" "$work/one/$(basename "$f" .mp4)/" 2>/dev/null || cp "$f" "$work/one/$(basename "$f" .mp4)/"
done

echo "$count clips in $dir, jobs: $jobs, $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC')"
hyperfine --warmup 1 --runs "${RUNS:-5}" --export-json "$work/result.json" \
  --prepare "rm -rf $work/out && mkdir -p $work/out" \
  -n videofeed-per-file "$(per_folder "$bin thumbs \"\$1\" --out $work/out/\$(basename \"\$1\") --size 320x320 --at 10% --jobs 1 --quiet")" \
  -n ffmpegthumbnailer "$(per_file "ffmpegthumbnailer -i \"\$1\" -o $work/out/\$(basename \"\$1\" .mp4).jpg -s 320 -t 10% -q 8 2>/dev/null")" \
  -n ffmpeg-keyframe "$(per_file "ffmpeg -nostdin -v error -ss 1 -noaccurate_seek -i \"\$1\" -frames:v 1 -vf $scale -q:v 3 -y $work/out/\$(basename \"\$1\" .mp4).jpg")" \
  -n videofeed-exact-per-file "$(per_folder "$bin thumbs \"\$1\" --out $work/out/\$(basename \"\$1\") --size 320x320 --at 10% --exact --jobs 1 --quiet")" \
  -n ffmpeg-exact "$(per_file "ffmpeg -nostdin -v error -ss 1 -i \"\$1\" -frames:v 1 -vf $scale -q:v 3 -y $work/out/\$(basename \"\$1\" .mp4).jpg")" \
  -n videofeed "$bin thumbs $dir --out $work/out --size 320x320 --at 10% --jobs $jobs --quiet" \
  -n videofeed-exact "$bin thumbs $dir --out $work/out --size 320x320 --at 10% --exact --jobs $jobs --quiet" \
  -n bare-loop "$loop $work/out $jobs $dir/*.mp4" \
  -n bare-loop-exact "$loop --exact $work/out $jobs $dir/*.mp4"
python3 - "$work/result.json" "$count" "$jobs" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
wall = {r["command"]: r["median"] for r in results}
# CPU seconds (user + system, the children included) per run: what each contender costs, and much less sensitive
# than wall time to other load on a shared machine.
cpu = {r["command"]: r["user"] + r["system"] for r in results}
n = int(sys.argv[2])
for name, median in wall.items():
    print(f"{name:24s} median {median:7.3f} s  {n / median:6.1f} clips/s  CPU {cpu[name]:7.3f} s")
def ratio(label, base, other):
    print(f"{label:58s} {wall[other] / wall[base]:5.2f}x the throughput, {cpu[other] / cpu[base]:5.2f}x less CPU")
print("\nkeyframe, one process per file:")
ratio("  videofeed vs ffmpegthumbnailer", "videofeed-per-file", "ffmpegthumbnailer")
ratio("  videofeed vs ffmpeg -noaccurate_seek", "videofeed-per-file", "ffmpeg-keyframe")
print("exact frame, one process per file:")
ratio("  videofeed --exact vs ffmpeg -ss", "videofeed-exact-per-file", "ffmpeg-exact")
print("one process for the batch:")
ratio("  videofeed batch vs videofeed per file", "videofeed", "videofeed-per-file")
ratio("  videofeed --exact batch vs per file", "videofeed-exact", "videofeed-exact-per-file")
print(f"  videofeed time / bare loop time: {wall['videofeed'] / wall['bare-loop']:.3f} (target <= 1.2); "
      f"exact: {wall['videofeed-exact'] / wall['bare-loop-exact']:.3f}")
start = (wall["videofeed-per-file"] - wall["videofeed"]) / n * 1000
start_cpu = (cpu["videofeed-per-file"] - cpu["videofeed"]) / n * 1000
print(f"  process start, videofeed: {start:.1f} ms wall per file at {sys.argv[3]} "
      f"at a time, {start_cpu:.1f} ms CPU")
PY
