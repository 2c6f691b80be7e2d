#!/usr/bin/env python3
"""How many viewers two cores serve: for each prefetch policy, the most viewers of `videofeed serve FOLDER` whose
cold first frame (moves that missed the cache) stays within a bound at the 95th percentile, by `videofeed simulate
serve` (virtual time, the server's own scheduler and policy, calibrated costs).

Usage:
  VIDEOFEED=.build/release/videofeed python3 scripts/serve-capacity.py FOLDER --costs PROFILE.json \
      [--policies staged,window,forward2,tiktokLike,swipeAware] [--bound-ms 1000] [--max 64] [--seconds 300] \
      [--dwell 1,3] [--jump 0.33] [--arrival 60] [--seed 1] [--cores 2] [--sort newest|name]

For each policy it searches (by bisection over 1..--max, assuming fewer viewers never do worse) the largest viewer
count whose cold first frame p95 is at most --bound-ms, every viewer drawn for --seed (dwells, a share of jumps to
random items, arrivals spread over --arrival seconds), and prints that count with the figures at it and one above.
Standard library only.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def simulate(args, policy, viewers):
    videofeed = os.environ.get("VIDEOFEED") or os.path.join(
        subprocess.run(["swift", "build", "--show-bin-path"], cwd=os.path.dirname(HERE), capture_output=True,
                       text=True, check=True).stdout.strip(), "videofeed")
    command = [videofeed, "simulate", "serve", args.folder, "--json", "--policy", policy, "--viewers", str(viewers),
               "--seconds", str(args.seconds), "--dwell", args.dwell, "--jump", str(args.jump), "--arrival",
               str(args.arrival), "--seed", str(args.seed), "--cores", str(args.cores), "--sort", args.sort]
    if args.costs:
        command += ["--costs", args.costs]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"serve-capacity: {' '.join(command)} failed:\n{done.stderr}")
    return json.loads(done.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder")
    parser.add_argument("--costs")
    parser.add_argument("--policies", default="staged,window,forward2,tiktokLike,swipeAware")
    parser.add_argument("--bound-ms", type=float, default=1000)
    parser.add_argument("--max", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--dwell", default="1,3")
    parser.add_argument("--jump", type=float, default=0.33)
    parser.add_argument("--arrival", type=float, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cores", type=float, default=2)
    parser.add_argument("--sort", choices=["newest", "name"], default="newest", help="the folder's order (serve --sort)")
    args = parser.parse_args()

    def ok(result):
        return result["first_frame_ms_miss"]["p95"] <= args.bound_ms

    def row(viewers, r):
        miss = r["first_frame_ms_miss"]
        return (f"{viewers:>3} viewers: cold p50 {miss['p50']:.0f} ms p95 {miss['p95']:.0f} ms ({miss['count']} misses), "
                f"hit rate {r['hit_rate']:.3f}, first frame p95 {r['first_frame_ms']['p95']:.0f} ms, "
                f"stalls {r['stalls']}, CPU {r['cpu_use'] * 100:.0f} %")

    print(f"{args.folder}: cold first frame p95 <= {args.bound_ms:.0f} ms, {args.cores:g} cores, {args.seconds:.0f} s, "
          f"dwell {args.dwell} s, jump {args.jump}, arrivals over {args.arrival:.0f} s, seed {args.seed}")
    for policy in args.policies.split(","):
        results = {}

        def at(n):
            if n not in results:
                results[n] = simulate(args, policy, n)
            return results[n]
        if not ok(at(1)):
            print(f"{policy}: none ({row(1, at(1))})")
            continue
        low, high = 1, args.max
        if ok(at(high)):
            print(f"{policy}: at least {high} ({row(high, at(high))})")
            continue
        while high - low > 1:
            middle = (low + high) // 2
            if ok(at(middle)):
                low = middle
            else:
                high = middle
        print(f"{policy}: {low} viewers")
        print(f"    {row(low, at(low))}")
        print(f"    {row(high, at(high))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
