#!/usr/bin/env bash
# Issue 15's playback figures: how smoothly the item on screen plays while the window around it is prefetched, on
# real clips and on the synthetic bench clip (`videofeed play --json`, per-swipe playback statistics summed).
#
#   bash Benchmarks/playback-smoothness.sh [MEDIA_DIR]      (default ../shared/media; VIDEOFEED=path to pick the binary)
#
# Sessions, each on the same folder of real clips (the eleven below, copied into a temporary feed folder):
#   patient  — 10 forward swipes, 3 s on each item (11 items watched), policies window (default) and forward1;
#   random   — 300 random swipes with wrap-around, 400–800 ms on each item, policy window;
# and the patient session on ten copies of the synthetic 1080x1920 bench clip (Fixtures/generate.sh --bench).
# Prints one line per session: frames shown on time / due, stalls, dwells with a stall, hits, the time for a swipe to
# return its frame on a hit (p50, p99), and to a cold item's first frame on a miss (p50, p95). The random session is
# the player's swipe latency as a viewer gets it: live, nothing settled before a swipe.
# Run it on a machine as quiet as you can get: playback is real time, and other work makes frames late.
set -euo pipefail
cd "$(dirname "$0")/.."
MEDIA=${1:-../shared/media}
CLIPS="sample.mp4 bbb_800x640_768kbps_30fps_avc_pyramid_3b.mp4 fire2.mp4 test-009.ts h265_bframes.mp4
hdr10-video-with-sdr-container.mp4 sample_with_color_info.mp4 bear-vp9.webm sample_av1.mp4 var_fps_video.mp4
big_buck_bunny_432_433.webm"
if [ -z "${VIDEOFEED:-}" ]; then
    swift build -c release --product videofeed >/dev/null
    VIDEOFEED=$(swift build -c release --show-bin-path)/videofeed
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/real" "$work/synthetic"
for clip in $CLIPS; do cp "$MEDIA/$clip" "$work/real/"; done
CLIP=Fixtures/bench/bench_1080x1920_30s.mp4
[ -f "$CLIP" ] || bash Fixtures/generate.sh --bench >/dev/null
for i in $(seq -w 0 9); do cp "$CLIP" "$work/synthetic/item$i.mp4"; done

summary() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
name, path = sys.argv[1], sys.argv[2]
d = json.load(open(path))
p, m = d["playback"], d["metrics"]
def pct(values, q):
    # Nearest rank: the smallest value with at least q % of the values at or below it.
    values = sorted(values)
    return values[min(len(values) - 1, max(0, -(-q * len(values) // 100) - 1))] if values else 0
hits = [s["timeToFirstFrameMs"] for s in d["swipes"] if s["result"] == "hit"]
misses = [s["timeToFirstFrameMs"] for s in d["swipes"] if s["result"] == "miss"]
print(f"{name:<34} on time {p['framesOnTime']:>6}/{p['framesDue']:<6} ({p['onTimePercent']:6.2f} %)  "
      f"stalls {p['stalls']:>4} ({p['stallSeconds'] * 1000:7.0f} ms) in {p['dwellsWithStalls']:>3} of {p['dwells']:>3} dwells  "
      f"hits {m['hits']}/{m['swipes']}  hit p50 {pct(hits, 50):.3f} p99 {pct(hits, 99):.3f} ms  "
      f"miss p50 {pct(misses, 50):.1f} p95 {pct(misses, 95):.1f} ms  peak {m['peakDecodedBytes'] / 1048576:.0f} MiB")
EOF
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
patient=n,n,n,n,n,n,n,n,n,n
for policy in window forward1; do
    "$VIDEOFEED" play "$work/real" --swipes $patient --dwell-ms 3000 --policy $policy --json > "$work/out.json" || true
    summary "real, patient, $policy" "$work/out.json"
done
"$VIDEOFEED" play "$work/real" --random 300 --seed 1 --wrap --dwell-ms 400-800 --json > "$work/out.json" || true
summary "real, 300 random swipes, window" "$work/out.json"
"$VIDEOFEED" play "$work/synthetic" --swipes $patient --dwell-ms 3000 --json > "$work/out.json" || true
summary "synthetic 1080x1920, patient, window" "$work/out.json"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
