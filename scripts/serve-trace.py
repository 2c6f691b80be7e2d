#!/usr/bin/env python3
"""A viewer trace for serve-replay.py (and `videofeed simulate serve`), made deterministically from a seed.

Usage:
  python3 scripts/serve-trace.py --viewers 8 --items 12 --seconds 60 --seed 1 --dwell 1,3 --jump 0.33 \\
      --arrival 10 [--out TRACE.csv]          # to stdout without --out

Output: CSV with the header `viewer,time_s,index`, one row per move, sorted by time (then viewer). At `time_s`
viewer `viewer` shows feed item `index` (0-based, in /api/feed's listing order); a viewer's first row is its arrival.

Each viewer v (0..N-1) has its own RNG, random.Random(f"{seed}/{v}") (Python's Mersenne Twister seeded with that
string), and draws, in this order:
  - its arrival: uniform(0, SPREAD_S); it shows item 0 then (the top of the feed, as a page opened at / does);
  - then, until the time reaches SECONDS: a dwell uniform(MIN, MAX) on the item; the next row comes at
    arrival + the dwells so far, if that is before SECONDS (else the viewer's trace ends); its item: with r =
    random() < P a jump to a uniformly chosen other item (randrange(M - 1), skipping the current one), with
    r < P + 0.1 back (index - 1; at item 0, where the page has nothing before, next instead), else next (index + 1,
    wrapping to 0 after M - 1, as the page's feed wraps).
Times are rounded to the millisecond. 1 - P - 0.1 must not be negative.

Standard library only.
"""

import argparse
import csv
import random
import sys


def viewer_rows(viewer, args):
    rng = random.Random(f"{args.seed}/{viewer}")
    t = rng.uniform(0, args.arrival)
    index = 0
    rows = []
    while t < args.seconds:
        rows.append((viewer, round(t, 3), index))
        t += rng.uniform(args.dwell[0], args.dwell[1])
        r = rng.random()
        if r < args.jump and args.items > 1:
            other = rng.randrange(args.items - 1)
            index = other if other < index else other + 1
        elif r < args.jump + 0.1 and index > 0:
            index -= 1
        else:
            index = (index + 1) % args.items
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--viewers", type=int, required=True)
    parser.add_argument("--items", type=int, required=True, help="items in the feed (indices 0..M-1)")
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dwell", default="1,3", help="MIN,MAX seconds on an item (uniform)")
    parser.add_argument("--jump", type=float, default=0.33, help="probability of a jump to a random item")
    parser.add_argument("--arrival", type=float, default=10.0, help="viewers arrive uniformly within this (s)")
    parser.add_argument("--out", help="write here (default: stdout)")
    args = parser.parse_args()
    try:
        args.dwell = tuple(float(x) for x in args.dwell.split(","))
        if len(args.dwell) != 2 or not 0 < args.dwell[0] <= args.dwell[1]:
            raise ValueError
    except ValueError:
        parser.error("--dwell is MIN,MAX with 0 < MIN <= MAX")
    if not 0 <= args.jump <= 0.9:
        parser.error("--jump must be from 0 to 0.9 (back takes 0.1)")
    if args.items < 1 or args.viewers < 1:
        parser.error("--items and --viewers must be at least 1")
    rows = [row for v in range(args.viewers) for row in viewer_rows(v, args)]
    rows.sort(key=lambda r: (r[1], r[0]))
    out = open(args.out, "w", newline="") if args.out else sys.stdout
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["viewer", "time_s", "index"])
    for viewer, t, index in rows:
        writer.writerow([viewer, f"{t:.3f}", index])
    if args.out:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
