#!/usr/bin/env python3
"""PolicyLab's pictures: hit rate and wasted decoding against the memory budget, for each built-in policy, in three
scenarios (patient watchers, fast scrollers, a slow network). Runs `videofeed simulate --csv` over a budget sweep and
writes docs/policylab-<scenario>.svg (and the numbers as docs/policylab-<scenario>.csv). Python standard library only.

    python3 scripts/policylab-plot.py [--bin PATH] [--swipes N] [--seed S] [--out DIR]
"""
import argparse
import csv
import io
import math
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POLICIES = "window,forward2,tiktokLike,staged,swipeAware"
BUDGETS = ["16MiB", "32MiB", "64MiB", "128MiB", "256MiB", "512MiB"]
SCENARIOS = [
    ("patient", "Patient watchers (model patient, local files)", ["--model", "patient"]),
    ("scroller", "Fast scrollers (model scroller, local files)", ["--model", "scroller"]),
    ("slownet", "Slow network (model mixed, 4 Mbit/s, 100 ms RTT, 2.5 Mbit/s items)",
     ["--model", "mixed", "--bandwidth", "4Mbps", "--rtt", "100ms", "--bitrate", "2.5Mbps"]),
]
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]


def simulate(binary, args, swipes, seed):
    command = [binary, "simulate", "--policies", POLICIES, "--swipes", str(swipes), "--seed", str(seed),
               "--budget", ",".join(BUDGETS), "--csv"] + args
    text = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return text, list(csv.DictReader(io.StringIO(text)))


def panel(x0, y0, w, h, title, ylabel, series, ymin, ymax, yfmt):
    """One line chart: x = budget (log2 scale), one line per policy."""
    out = [f'<g transform="translate({x0},{y0})">',
           f'<text x="{w / 2}" y="-12" text-anchor="middle" font-size="14">{title}</text>',
           f'<rect x="0" y="0" width="{w}" height="{h}" fill="none" stroke="#999"/>']
    budgets = [float(b) for b in sorted({float(r["budget_mib"]) for rows in series.values() for r in rows})]
    lo, hi = math.log2(budgets[0]), math.log2(budgets[-1])
    def px(b): return (math.log2(b) - lo) / (hi - lo) * w
    def py(v): return h - (v - ymin) / (ymax - ymin) * h
    for i in range(5):
        v = ymin + (ymax - ymin) * i / 4
        out.append(f'<line x1="0" x2="{w}" y1="{py(v):.1f}" y2="{py(v):.1f}" stroke="#eee"/>')
        out.append(f'<text x="-6" y="{py(v) + 4:.1f}" text-anchor="end" font-size="11">{yfmt(v)}</text>')
    for b in budgets:
        out.append(f'<text x="{px(b):.1f}" y="{h + 16}" text-anchor="middle" font-size="11">{b:g}</text>')
    out.append(f'<text x="{w / 2}" y="{h + 34}" text-anchor="middle" font-size="12">memory budget (MiB, log scale)</text>')
    out.append(f'<text transform="translate(-46,{h / 2}) rotate(-90)" text-anchor="middle" font-size="12">{ylabel}</text>')
    for (policy, rows), color in zip(series.items(), COLORS):
        points = " ".join(f"{px(float(r['budget_mib'])):.1f},{py(r['value']):.1f}" for r in rows)
        out.append(f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="2"/>')
        for r in rows:
            out.append(f'<circle cx="{px(float(r["budget_mib"])):.1f}" cy="{py(r["value"]):.1f}" r="3" fill="{color}"/>')
    out.append("</g>")
    return out


def svg(title, rows):
    by_policy = {}
    for r in rows:
        by_policy.setdefault(r["policy"], []).append(r)
    hits = {p: [dict(r, value=100 * float(r["hit_rate"])) for r in rs] for p, rs in by_policy.items()}
    waste = {p: [dict(r, value=float(r["wasted_mib"]) / max(int(r["swipes"]), 1)) for r in rs]
             for p, rs in by_policy.items()}
    waste_max = max(r["value"] for rs in waste.values() for r in rs) or 1
    waste_max = math.ceil(waste_max / 50) * 50
    width, height = 900, 400
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="Helvetica, Arial, sans-serif">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="14" font-weight="bold">{title}</text>']
    hit_min = min(r["value"] for rs in hits.values() for r in rs)
    hit_min = max(0, math.floor(hit_min / 5) * 5 - 5)
    out += panel(70, 60, 340, 250, "hit rate", "swipes with the first frame ready (%)", hits, hit_min, 100,
                 lambda v: f"{v:.0f}")
    out += panel(520, 60, 340, 250, "wasted decoding", "MiB decoded, never shown, per swipe", waste, 0, waste_max,
                 lambda v: f"{v:.0f}")
    for i, (policy, color) in enumerate(zip(by_policy, COLORS)):
        x = 90 + i * 160
        out.append(f'<line x1="{x}" x2="{x + 24}" y1="375" y2="375" stroke="{color}" stroke-width="3"/>')
        out.append(f'<text x="{x + 30}" y="379" font-size="12">{policy}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=None, help="the videofeed binary (default: swift build -c release)")
    parser.add_argument("--swipes", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default=os.path.join(ROOT, "docs"))
    args = parser.parse_args()
    binary = args.bin
    if binary is None:
        subprocess.run(["swift", "build", "-c", "release"], cwd=ROOT, check=True, capture_output=True)
        path = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout.strip()
        binary = os.path.join(path, "videofeed")
    for name, title, extra in SCENARIOS:
        text, rows = simulate(binary, extra, args.swipes, args.seed)
        with open(os.path.join(args.out, f"policylab-{name}.csv"), "w") as f:
            f.write(text)
        with open(os.path.join(args.out, f"policylab-{name}.svg"), "w") as f:
            f.write(svg(f"{title}: {args.swipes} swipes, seed {args.seed}", rows))
        print(f"wrote {args.out}/policylab-{name}.svg")


if __name__ == "__main__":
    main()
