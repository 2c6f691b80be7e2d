#!/usr/bin/env python3
"""Compares the live runs (play-<policy>-<run>.json) with the simulation (simulate.json, simulate-shared-*.json) of
scripts/policylab-trust.sh:  python3 scripts/policylab-trust-compare.py OUT_DIR POLICIES RUNS

The simulator is deterministic; the live engine on a shared 2-core machine is not, so the simulation is compared
with the spread of the live runs of the same trace. It agrees when
  - its hit rate lies within the live runs' range widened by 2.5 points (two swipes of 80),
  - its TTFF p50 is within 1 ms of every live run (hits: the live engine's call overhead is not simulated),
  - its TTFF p95 and p99 lie within the live runs' range widened by 25 % (the spread of calibration itself).
"""
import json, statistics, sys

out, policies, runs = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
sim = {r["policy"]: r for r in json.load(open(f"{out}/simulate.json"))["results"]}
loads = json.load(open(f"{out}/other-load.json"))


def hit(r): return 100 * r["hits"] / max(r["swipes"], 1)
def cells(r): return [hit(r), r["timeToFirstFrameP50"], r["timeToFirstFrameP95"], r["timeToFirstFrameP99"]]
def row(name, label, values, extra=""):
    return f"{name:12} {label:26} " + " ".join(f"{v:8.2f}" for v in values) + extra


print(f"{'policy':12} {'run':26} {'hit %':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}   miss TTFF median ms")
for p in policies:
    lives = [json.load(open(f"{out}/play-{p}-{k}.json")) for k in range(1, runs + 1)]
    name = lives[0]["policy"]
    shared = json.load(open(f"{out}/simulate-shared-{p}.json"))["results"][0]
    live_cells = [cells(l["metrics"]) for l in lives]
    for k, live in enumerate(lives, 1):
        live_misses = [s["timeToFirstFrameMs"] for s in live["swipes"] if s["result"].startswith("miss")]
        print(row(name, f"play run {k}", live_cells[k - 1],
                  f"   {statistics.median(live_misses):.1f}" if live_misses else ""))
    lo = [min(c) for c in zip(*live_cells)]
    hi = [max(c) for c in zip(*live_cells)]
    for label, r in (("simulate (machine ours)", sim[name]), (f"simulate (+{loads[p]:.2f} busy)", shared)):
        s = cells(r)
        checks = [lo[0] - 2.5 <= s[0] <= hi[0] + 2.5, all(abs(s[1] - c[1]) <= 1 for c in live_cells)]
        checks += [0.75 * lo[i] <= s[i] <= 1.25 * hi[i] for i in (2, 3)]
        misses = [o["timeToFirstFrameMs"] for o in r["outcomes"] if not o["hit"] and o["timeToFirstFrameMs"]]
        print(row(name, label, s, f"   {statistics.median(misses):.1f}" if misses else "")
              + ("   agrees" if all(checks) else "   DISAGREES " + str(checks)))
    for k, live in enumerate(lives, 1):
        steps = {s["swipe"]: s for s in live["swipes"]}
        differ = [o["step"] for o in sim[name]["outcomes"] if (steps[o["step"]]["result"] == "hit") != o["hit"]]
        print(f"{'':12} play run {k} and simulate differ on hit/miss at swipes: {differ or 'none'}")
print("agreement: hit rate within the live range ±2.5 points, TTFF p50 within 1 ms, p95/p99 within the live range ±25 %")
