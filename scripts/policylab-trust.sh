#!/usr/bin/env bash
# PolicyLab's trust experiment: the same swipe trace drives the live engine (`videofeed play --trace`) and the
# simulator (`videofeed simulate --trace`) with a cost profile calibrated on the same file, and the two are compared:
# hit rate and time to first frame p50/p95/p99 per policy. See docs/policylab.md.
#
#   bash scripts/policylab-trust.sh [OUT_DIR]        (default: out/policylab-trust)
# Environment: POLICIES (default window,forward2,tiktokLike), SWIPES (80), SEED (7), ITEMS (10),
# MODEL (the viewer: mostly sub-1.2 s looks, 15 % back swipes, 20 % jumps). Needs the bench clip (bash Fixtures/generate.sh --bench).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-out/policylab-trust}
POLICIES=${POLICIES:-window,forward2,tiktokLike}
SWIPES=${SWIPES:-80}
SEED=${SEED:-7}
ITEMS=${ITEMS:-10}
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
echo "== play (the live engine), measuring the machine's other work during each run"
python3 - "$BIN" "$OUT" "$POLICIES" "$ITEMS" <<'PY'
import json, os, subprocess, sys, time
binary, out, policies, items = sys.argv[1], sys.argv[2], sys.argv[3].split(","), sys.argv[4]
tick = os.sysconf("SC_CLK_TCK")
def busy():  # CPU-seconds all processes spent so far, from /proc/stat
    fields = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / tick  # all but idle and iowait
loads = {}
for policy in policies:
    before, start = busy(), time.monotonic()
    with open(f"{out}/play-{policy}.json", "w") as f:
        child = subprocess.Popen([binary, "play", f"{out}/feed", "--sort", "name", "--wrap", "--trace",
                                  f"{out}/trace.csv", "--policy", policy, "--json"], stdout=f)
        _, status, usage = os.wait4(child.pid, 0)
    wall, total = time.monotonic() - start, busy() - before
    ours = usage.ru_utime + usage.ru_stime
    loads[policy] = max(0.0, (total - ours) / wall)
    print(f"play --policy {policy}: {wall:.1f} s, our CPU {ours:.1f} s, other work {loads[policy]:.2f} cores")
json.dump(loads, open(f"{out}/other-load.json", "w"))
PY
echo "== simulate: the machine ours, then shared with the other work measured during each live run"
"$BIN" simulate --trace "$OUT/trace.csv" --items "$ITEMS" --wrap --costs "$OUT/profile.json" \
    --policies "$POLICIES" --json --swipe-log > "$OUT/simulate.json"
for policy in ${POLICIES//,/ }; do
    load=$(python3 -c "import json; print(round(json.load(open('$OUT/other-load.json'))['$policy'], 2))")
    "$BIN" simulate --trace "$OUT/trace.csv" --items "$ITEMS" --wrap --costs "$OUT/profile.json" \
        --policies "$policy" --background-load "$load" --json --swipe-log > "$OUT/simulate-shared-$policy.json"
done
echo "== load average after: $(cut -d" " -f1-3 /proc/loadavg)"
python3 - "$OUT" "$POLICIES" <<'PY'
import json, sys
out, policies = sys.argv[1], sys.argv[2].split(",")
sim = {r["policy"]: r for r in json.load(open(f"{out}/simulate.json"))["results"]}
loads = json.load(open(f"{out}/other-load.json"))
def row(name, label, r):
    return (f"{name:12} {label:22} {100 * r['hits'] / max(r['swipes'], 1):6.1f} {r['timeToFirstFrameP50']:8.2f} "
            f"{r['timeToFirstFrameP95']:8.2f} {r['timeToFirstFrameP99']:8.2f} {r['stalls']:6d}")
print(f"{'policy':12} {'run':22} {'hit %':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'stalls':>6}")
for p in policies:
    live = json.load(open(f"{out}/play-{p}.json"))
    name = live["policy"]
    shared = json.load(open(f"{out}/simulate-shared-{p}.json"))["results"][0]
    print(row(name, "play", live["metrics"]))
    print(row(name, "simulate (machine ours)", sim[name]))
    print(row(name, f"simulate (+{loads[p]:.2f} busy)", shared))
    # Swipe by swipe: where the two disagree on hit or miss.
    steps = {s["swipe"]: s for s in live["swipes"]}
    differ = [o["step"] for o in sim[name]["outcomes"] if (steps[o["step"]]["result"] == "hit") != o["hit"]]
    print(f"{'':12} swipes where play and simulate (machine ours) differ on hit/miss: {differ or 'none'}")
PY
