#!/usr/bin/env bash
# Decode throughput, side by side in one run: our CLI (`videofeed dump --format null`, decode and discard) against
# `ffmpeg -threads N -i F -f null -`, same clip, same thread count, timed by hyperfine.
#
#   Benchmarks/compare-decode.sh [CLIP] [THREADS]
#
# CLIP defaults to Fixtures/bench/bench_1080x1920_30s.mp4 (made by `bash Fixtures/generate.sh --bench`),
# THREADS to the number of cores. Prints hyperfine's table and our throughput as a fraction of ffmpeg's.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
clip=${1:-$root/Fixtures/bench/bench_1080x1920_30s.mp4}
threads=${2:-$(nproc)}
[ -f "$clip" ] || bash "$root/Fixtures/generate.sh" --bench
command -v hyperfine >/dev/null || { echo "compare-decode: hyperfine is missing (make bench-deps)" >&2; exit 2; }
(cd "$root" && swift build -c release >/dev/null)
bin="$(cd "$root" && swift build -c release --show-bin-path)/videofeed"
frames=$(ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$clip")
out=$(mktemp)
trap 'rm -f "$out"' EXIT

echo "clip: $clip ($frames frames), threads: $threads, $(nproc) cores"
hyperfine --warmup 1 --runs "${RUNS:-7}" -N --export-json "$out" \
    -n ffmpeg "ffmpeg -nostdin -v error -threads $threads -i $clip -an -f null -" \
    -n videofeed "$bin dump --format null --threads $threads $clip"
python3 - "$out" "$frames" <<'PY'
import json, sys
runs = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
frames = int(sys.argv[2])
ff, vf = runs["ffmpeg"], runs["videofeed"]
for name, r in (("ffmpeg", ff), ("videofeed", vf)):
    print(f"{name:10s} median {r['median']:.3f} s  {frames / r['median']:.1f} frames/s")
print(f"videofeed / ffmpeg throughput: {ff['median'] / vf['median']:.3f}x (target >= 0.97x)")
PY
