#!/usr/bin/env python3
"""How far to trust `videofeed simulate serve`: one trace, predicted and measured live, side by side.

Usage:
  VIDEOFEED=.build/release/videofeed python3 scripts/serve-trust.py FOLDER [--costs PROFILE.json] \
      [--viewers 8] [--seconds 60] [--dwell 1,3] [--jump 0.33] [--arrival 10] [--seed 1] [--runs 2] \
      [--workers N] [--policy NAME] [--sort newest|name] [--label TEXT] [--json OUT]

For FOLDER (what `videofeed serve FOLDER` serves) it
  1. draws a viewer trace (scripts/serve-trace.py with the options above),
  2. predicts it: `videofeed simulate serve FOLDER --trace T --json` (with --costs, --workers, --policy, --sort),
  3. measures it --runs times: scripts/serve-replay.py T --serve FOLDER, each on a fresh server with a cold cache
     (real HTTP and WebSocket viewers following the page's behaviour, viewer model 1),
  4. compares the first frame's p50 and p95 over every move (predicted against the median of the runs) within 25 %
     or 10 ms, whichever is larger, and the hit rate within 0.05, and prints one table row per figure.

VIDEOFEED names the binary (default: $(swift build --show-bin-path)/videofeed). Costs should be calibrated on the
machine that serves, while it is otherwise idle: `videofeed simulate calibrate --serve FOLDER --out PROFILE.json`.
Exit status: 0 when every figure is within its tolerance, 1 when one is not, 2 when something could not run.
Standard library only.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def binary():
    if os.environ.get("VIDEOFEED"):
        return os.environ["VIDEOFEED"]
    out = subprocess.run(["swift", "build", "--show-bin-path"], cwd=os.path.dirname(HERE), capture_output=True,
                         text=True, check=True)
    return os.path.join(out.stdout.strip(), "videofeed")


def close(predicted, measured, relative=0.25, absolute=10.0):
    """Whether a predicted figure is within `relative` of the measured one or `absolute` of it, whichever is larger."""
    return abs(predicted - measured) <= max(relative * abs(measured), absolute)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder")
    parser.add_argument("--costs")
    parser.add_argument("--viewers", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--dwell", default="1,3")
    parser.add_argument("--jump", type=float, default=0.33)
    parser.add_argument("--arrival", type=float, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--workers", type=int)
    parser.add_argument("--policy")
    parser.add_argument("--sort", choices=["newest", "name"], default="newest",
                        help="the folder's order (serve --sort), for the simulation and the live server alike")
    parser.add_argument("--label", default="")
    parser.add_argument("--json")
    parser.add_argument("--keep", help="keep the trace, the prediction and the live runs' JSON in this folder")
    args = parser.parse_args()
    videofeed = binary()
    items = [n for n in os.listdir(args.folder) if not n.startswith(".")]
    with tempfile.TemporaryDirectory(prefix="serve-trust.") as work:
        trace = os.path.join(work, "trace.csv")
        subprocess.run([sys.executable, os.path.join(HERE, "serve-trace.py"), "--viewers", str(args.viewers),
                        "--items", str(len(items)), "--seconds", str(args.seconds), "--seed", str(args.seed),
                        "--dwell", args.dwell, "--jump", str(args.jump), "--arrival", str(args.arrival),
                        "--out", trace], check=True)
        simulate = [videofeed, "simulate", "serve", args.folder, "--trace", trace, "--json", "--per-move"]
        simulate += ["--sort", args.sort]
        serve_args = ["--serve-arg=--sort", f"--serve-arg={args.sort}"]
        if args.costs:
            simulate += ["--costs", args.costs]
        if args.workers:
            simulate += ["--workers", str(args.workers)]
            serve_args += ["--serve-arg=--workers", f"--serve-arg={args.workers}"]
        if args.policy:
            simulate += ["--policy", args.policy]
            serve_args += ["--serve-arg=--policy", f"--serve-arg={args.policy}"]
        done = subprocess.run(simulate, capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stderr, file=sys.stderr)
            print("serve-trust: the simulation failed", file=sys.stderr)
            return 2
        predicted = json.loads(done.stdout)
        runs = []
        for n in range(args.runs):
            out = os.path.join(work, f"live-{n}.json")
            done = subprocess.run([sys.executable, os.path.join(HERE, "serve-replay.py"), trace, "--serve",
                                   args.folder, "--json", out] + serve_args,
                                  env=dict(os.environ, VIDEOFEED=videofeed), capture_output=True, text=True)
            if done.returncode == 2 or not os.path.exists(out):
                print(done.stdout + done.stderr, file=sys.stderr)
                print("serve-trust: the live replay could not run", file=sys.stderr)
                return 2
            with open(out) as f:
                runs.append(json.load(f))
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
            for name in os.listdir(work):
                with open(os.path.join(work, name)) as src, open(os.path.join(args.keep, name), "w") as dst:
                    dst.write(src.read())
            with open(os.path.join(args.keep, "predicted.json"), "w") as f:
                json.dump(predicted, f, indent=1)
    rows = []
    for name, get, tolerance in [
        ("first frame p50 (ms)", lambda r: r["first_frame_ms"]["p50"], "ms"),
        ("first frame p95 (ms)", lambda r: r["first_frame_ms"]["p95"], "ms"),
        ("hit rate", lambda r: r["hit_rate"], "rate"),
    ]:
        measured = [get(r) for r in runs]
        m = statistics.median(measured)
        p = get(predicted)
        ok = close(p, m) if tolerance == "ms" else abs(p - m) <= 0.05
        rows.append({"figure": name, "predicted": p, "measured": measured, "median": m, "ok": ok})
    label = args.label or os.path.basename(os.path.normpath(args.folder))
    print(f"{label}: {args.viewers} viewers, {args.seconds:.0f} s, {len(items)} items, dwell {args.dwell} s, "
          f"jump {args.jump}, seed {args.seed}; {len(runs)} live runs; errors "
          f"{[r['errors']['count'] for r in runs]}")
    for row in rows:
        fmt = (lambda v: f"{v:.3f}") if row["figure"] == "hit rate" else (lambda v: f"{v:.0f}")
        print(f"  {row['figure']:<22} predicted {fmt(row['predicted']):>7}   measured "
              f"{' / '.join(fmt(v) for v in row['measured']):<20} {'ok' if row['ok'] else 'OUTSIDE'}")
    extra = {k: predicted.get(k) for k in ("first_frame_ms_miss", "stalls", "cpu_use", "peak_queue", "moves")}
    print(f"  predicted besides: {json.dumps(extra)}")
    print("  measured besides: " + json.dumps([{"miss": r.get("first_frame_ms_miss"), "stalls": r.get("stalls"),
                                                "moves": r.get("moves")} for r in runs]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"label": label, "rows": rows, "predicted": predicted, "measured": runs}, f, indent=1)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
