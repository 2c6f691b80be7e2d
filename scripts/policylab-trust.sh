#!/usr/bin/env bash
# PolicyLab's trust experiment: the same swipe trace drives the live engine (`videofeed play --trace`) and the
# simulator (`videofeed simulate --trace`) with a cost profile calibrated on the same file, and the two are compared:
# hit rate and time to first frame p50/p95/p99 per policy. See docs/policylab.md.
#
#   bash scripts/policylab-trust.sh [OUT_DIR]        (default: out/policylab-trust)
# Environment: POLICIES (default window,forward2,tiktokLike), RUNS (live runs per policy, 3), SWIPES (80),
# SEED (7), ITEMS (10), MODEL (the viewer: mostly sub-1.2 s looks, 15 % back swipes, 20 % jumps).
# Needs the bench clip (bash Fixtures/generate.sh --bench). Run it on a machine as quiet as you can get.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-out/policylab-trust}
POLICIES=${POLICIES:-window,forward2,tiktokLike}
SWIPES=${SWIPES:-80}
SEED=${SEED:-7}
ITEMS=${ITEMS:-10}
RUNS=${RUNS:-3}
MODEL=${MODEL:-mixed,quick=0.95,quickSeconds=1.2,end=0,back=0.15,jump=0.2,burst=0}
CLIP=$PWD/Fixtures/bench/bench_1080x1920_30s.mp4
[ -f "$CLIP" ] || bash Fixtures/generate.sh --bench
swift build -c release >/dev/null
BIN=$(swift build -c release --show-bin-path)/videofeed
mkdir -p "$OUT/feed"
for i in $(seq -w 0 $((ITEMS - 1))); do ln -sf "$CLIP" "$OUT/feed/item$i.mp4"; done

echo "== load average before: $(cut -d" " -f1-3 /proc/loadavg)"
echo "== calibrate"
"$BIN" simulate calibrate "$CLIP" --out "$OUT/profile.json"
echo "== trace ($MODEL, $SWIPES swipes, seed $SEED, $ITEMS items wrapping)"
"$BIN" simulate --model "$MODEL" --swipes "$SWIPES" --seed "$SEED" --items "$ITEMS" --wrap \
    --costs "$OUT/profile.json" --policies window --export-trace "$OUT/trace.csv" >/dev/null
echo "== play (the live engine), $RUNS runs per policy, measuring the machine's other work during each run"
python3 - "$BIN" "$OUT" "$POLICIES" "$RUNS" <<'PY'
import json, os, subprocess, sys, time
binary, out, policies, runs = sys.argv[1], sys.argv[2], sys.argv[3].split(","), int(sys.argv[4])
tick = os.sysconf("SC_CLK_TCK")
def busy():  # CPU-seconds all processes spent so far, from /proc/stat
    fields = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / tick  # all but idle and iowait
loads = {}
for run in range(1, runs + 1):
    for policy in policies:
        before, start = busy(), time.monotonic()
        with open(f"{out}/play-{policy}-{run}.json", "w") as f:
            child = subprocess.Popen([binary, "play", f"{out}/feed", "--sort", "name", "--wrap", "--trace",
                                      f"{out}/trace.csv", "--policy", policy, "--json"], stdout=f)
            _, status, usage = os.wait4(child.pid, 0)
        wall, total = time.monotonic() - start, busy() - before
        ours = usage.ru_utime + usage.ru_stime
        loads.setdefault(policy, []).append(max(0.0, (total - ours) / wall))
        print(f"play --policy {policy} (run {run}): {wall:.1f} s, our CPU {ours:.1f} s, "
              f"other work {loads[policy][-1]:.2f} cores", flush=True)
json.dump({p: sum(v) / len(v) for p, v in loads.items()}, open(f"{out}/other-load.json", "w"))
PY
echo "== simulate: the machine ours, then shared with the other work measured during the live runs"
"$BIN" simulate --trace "$OUT/trace.csv" --items "$ITEMS" --wrap --costs "$OUT/profile.json" \
    --policies "$POLICIES" --json --swipe-log > "$OUT/simulate.json"
for policy in ${POLICIES//,/ }; do
    load=$(python3 -c "import json; print(round(json.load(open('$OUT/other-load.json'))['$policy'], 2))")
    "$BIN" simulate --trace "$OUT/trace.csv" --items "$ITEMS" --wrap --costs "$OUT/profile.json" \
        --policies "$policy" --background-load "$load" --json --swipe-log > "$OUT/simulate-shared-$policy.json"
done
echo "== load average after: $(cut -d" " -f1-3 /proc/loadavg)"
python3 scripts/policylab-trust-compare.py "$OUT" "$POLICIES" "$RUNS"
