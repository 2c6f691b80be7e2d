#!/usr/bin/env bash
# framemd5 decoding, side by side in one run: `videofeed dump CLIP --format framemd5` against
#   ffmpeg -nostdin -v error -noautorotate -i CLIP -map 0:v:0 -fps_mode passthrough -f framemd5 -
# (issue 15's comparison; -noautorotate so that a rotated clip is hashed as stored by both, as ours is), each with
# its default threads (ffmpeg: FFmpeg's automatic count, cores + 1 frame threads; ours: the same since issue 15).
# Per clip: one warm-up of each, then PAIRS alternating runs (ours, ffmpeg, ours, ffmpeg, ...), both writing to
# /dev/null. Wall time is measured around each process, CPU time (user + system, all threads) from its rusage
# (wait4). Prints per clip the median wall and CPU of each tool, the ratio of the medians (ours / ffmpeg) and the
# spread of the per-pair wall ratios, and first checks that both tools print the same hash column.
#
#   [VIDEOFEED=…] [PAIRS=7] [EXTRA="--threads 2"] bash Benchmarks/decode-vs-ffmpeg.sh CLIP...
#
# VIDEOFEED  the binary (default: the release build, `swift build -c release --show-bin-path`; `make release`)
# PAIRS      alternating pairs per clip after the warm-up (default 7)
# EXTRA      extra arguments for `videofeed dump` (e.g. `--threads 2` to compare against a fixed count)
# With no CLIP, makes /tmp/videofeed-bench/testsrc2_1080x1920_10s.mp4 (H.264 1080x1920 30 fps 10 s, x264 veryfast
# crf 23, as `Fixtures/generate.sh --bench-thumbs` makes its clips) once and uses it.
set -euo pipefail
export LC_ALL=C
root=$(cd "$(dirname "$0")/.." && pwd)
VIDEOFEED=${VIDEOFEED:-$(cd "$root" && swift build -c release --show-bin-path)/videofeed}
pairs=${PAIRS:-7}

die() { echo "decode-vs-ffmpeg: $*" >&2; exit 1; }
[ -x "$VIDEOFEED" ] || die "no videofeed binary at $VIDEOFEED (make release, or set VIDEOFEED)"
for tool in ffmpeg python3; do command -v $tool >/dev/null || die "$tool is missing (make deps)"; done
[[ "$pairs" =~ ^[1-9][0-9]*$ ]] || die "PAIRS must be a positive integer"
clips=("$@")
if [ ${#clips[@]} -eq 0 ]; then
  clip=/tmp/videofeed-bench/testsrc2_1080x1920_10s.mp4
  if [ ! -f "$clip" ]; then
    mkdir -p "$(dirname "$clip")"
    echo "making $clip" >&2
    ffmpeg -nostdin -v error -y -f lavfi -i "testsrc2=size=1080x1920:rate=30:duration=10" \
      -c:v libx264 -preset veryfast -crf 23 -pix_fmt yuv420p "$clip.part.mp4"
    mv "$clip.part.mp4" "$clip"
  fi
  clips=("$clip")
fi
for clip in "${clips[@]}"; do [ -f "$clip" ] || die "$clip: no such file"; done

echo "videofeed: $VIDEOFEED; $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%F %H:%M UTC')"
python3 - "$VIDEOFEED" "$pairs" "${EXTRA:-}" "${clips[@]}" <<'PY'
import os, shlex, statistics, subprocess, sys, time

videofeed, pairs, extra, clips = sys.argv[1], int(sys.argv[2]), shlex.split(sys.argv[3]), sys.argv[4:]

def commands(clip):
    ours = [videofeed, "dump", clip, "--format", "framemd5", *extra]
    ffmpeg = ["ffmpeg", "-nostdin", "-v", "error", "-noautorotate", "-i", clip, "-map", "0:v:0",
              "-fps_mode", "passthrough", "-f", "framemd5", "-"]
    return ours, ffmpeg

def run(argv, stdout=subprocess.DEVNULL):
    """Wall seconds, CPU seconds (user + system of the child, all its threads) and the exit status."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"decode-vs-ffmpeg: {shlex.join(argv)} exited with {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime

def hashes(argv):
    out = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, check=True).stdout.decode()
    return [line.rsplit(",", 1)[1].strip() for line in out.splitlines() if line and not line.startswith("#")]

for clip in clips:
    ours, ffmpeg = commands(clip)
    a, b = hashes(ours), hashes(ffmpeg)   # also the warm-up
    if a != b:
        sys.exit(f"decode-vs-ffmpeg: {clip}: the hash columns differ ({len(a)} vs {len(b)} frames)")
    wall = {"ours": [], "ffmpeg": []}
    cpu = {"ours": [], "ffmpeg": []}
    for _ in range(pairs):
        for name, argv in (("ours", ours), ("ffmpeg", ffmpeg)):
            w, c = run(argv)
            wall[name].append(w)
            cpu[name].append(c)
    med = {k: (statistics.median(wall[k]), statistics.median(cpu[k])) for k in wall}
    pair = sorted(o / f for o, f in zip(wall["ours"], wall["ffmpeg"]))
    print(f"\n{clip}: {len(a)} frames, identical hashes; {pairs} alternating pairs")
    print(f"  ours:   {shlex.join(ours)}")
    print(f"  ffmpeg: {shlex.join(ffmpeg)}")
    for k in ("ours", "ffmpeg"):
        print(f"  {k:7s} wall median {med[k][0]:.3f} s (min {min(wall[k]):.3f}, max {max(wall[k]):.3f});"
              f" CPU median {med[k][1]:.3f} s")
    print(f"  ours / ffmpeg: wall {med['ours'][0] / med['ffmpeg'][0]:.3f}x (per pair {pair[0]:.2f} .. {pair[-1]:.2f},"
          f" median {statistics.median(pair):.3f}), CPU {med['ours'][1] / med['ffmpeg'][1]:.3f}x")
PY
