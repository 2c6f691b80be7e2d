#!/usr/bin/env bash
# Thumbnail batch throughput, side by side in one hyperfine run, on 100 clips (H.264 1080x1920, 10 s) made by
# `bash Fixtures/generate.sh --bench-thumbs`. Every contender writes one JPEG per clip fitted in 320x320
# (180x320 for these portrait clips) at 10 % of the duration, JOBS files at a time:
#   videofeed        `videofeed thumbs DIR --size 320x320 --at 10% --jobs JOBS` (one process; the keyframe at or
#                    before 10 %, the default, as ffmpegthumbnailer takes a keyframe)
#   videofeed-exact  the same with --exact (the first frame at or after 10 %, as `ffmpeg -ss` takes)
#   bare-loop        Benchmarks/ThumbsLoop: the same Media calls as `videofeed` in a plain loop on JOBS threads
#   bare-loop-exact  the same with --exact
#   ffmpegthumbnailer  `ffmpegthumbnailer -s 320 -t 10%` per file with `xargs -P JOBS`
#   ffmpeg           `ffmpeg -ss 1 -i F -frames:v 1 -vf scale=320:320:force_original_aspect_ratio=decrease` per
#                    file with `xargs -P JOBS` (-ss before -i: seek, then decode to the exact frame)
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
(cd "$root" && swift build -c release >/dev/null)
(cd "$root/Benchmarks" && swift build -c release --product ThumbsLoop >/dev/null)
bin="$(cd "$root" && swift build -c release --show-bin-path)/videofeed"
loop="$(cd "$root/Benchmarks" && swift build -c release --show-bin-path)/ThumbsLoop"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
count=$(ls "$dir"/*.mp4 | wc -l)

echo "$count clips in $dir, jobs: $jobs, $(nproc) cores"
hyperfine --warmup 1 --runs "${RUNS:-5}" --export-json "$work/result.json" \
  --prepare "rm -rf $work/out && mkdir -p $work/out" \
  -n videofeed "$bin thumbs $dir --out $work/out --size 320x320 --at 10% --jobs $jobs --quiet" \
  -n videofeed-exact "$bin thumbs $dir --out $work/out --size 320x320 --at 10% --exact --jobs $jobs --quiet" \
  -n bare-loop "$loop $work/out $jobs $dir/*.mp4" \
  -n bare-loop-exact "$loop --exact $work/out $jobs $dir/*.mp4" \
  -n ffmpegthumbnailer "ls $dir/*.mp4 | xargs -P $jobs -I{} sh -c \
'ffmpegthumbnailer -i \"\$1\" -o $work/out/\$(basename \"\$1\" .mp4).jpg -s 320 -t 10% -q 8 2>/dev/null' _ {}" \
  -n ffmpeg "ls $dir/*.mp4 | xargs -P $jobs -I{} sh -c \
'ffmpeg -nostdin -v error -ss 1 -i \"\$1\" -frames:v 1 -vf scale=320:320:force_original_aspect_ratio=decrease \
-q:v 3 -y $work/out/\$(basename \"\$1\" .mp4).jpg' _ {}"
python3 - "$work/result.json" "$count" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
runs = {r["command"]: r["median"] for r in results}
# CPU seconds (user + system, the children included) per run: what each contender costs, and much less sensitive
# than wall time to other load on a shared machine.
cpu = {r["command"]: r["user"] + r["system"] for r in results}
n = int(sys.argv[2])
for name, median in runs.items():
    print(f"{name:18s} median {median:7.3f} s  {n / median:6.1f} clips/s  CPU {cpu[name]:7.3f} s")
vf, exact = runs["videofeed"], runs["videofeed-exact"]
print(f"videofeed vs ffmpegthumbnailer:         {runs['ffmpegthumbnailer'] / vf:.2f}x (target >= 8x)")
print(f"videofeed vs ffmpeg CLI:                {runs['ffmpeg'] / vf:.2f}x (target >= 20x)")
print(f"videofeed-exact vs ffmpeg CLI:          {runs['ffmpeg'] / exact:.2f}x (both the exact frame)")
print(f"videofeed time / bare loop time:        {vf / runs['bare-loop']:.3f} (target <= 1.2)")
print(f"videofeed-exact time / bare loop time:  {exact / runs['bare-loop-exact']:.3f}")
print(f"CPU: ffmpegthumbnailer / videofeed:    {cpu['ffmpegthumbnailer'] / cpu['videofeed']:.2f}x")
print(f"CPU: ffmpeg CLI / videofeed:            {cpu['ffmpeg'] / cpu['videofeed']:.2f}x")
PY
