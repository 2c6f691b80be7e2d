#!/usr/bin/env bash
# `make bench-serve`'s figures for two `videofeed` builds side by side in one run (issue 35, point 6: "no worse than
# today's, measured side by side with the old build in one run"):
#
#   bash Benchmarks/serve-compare.sh OLD_BINARY NEW_BINARY
#   bash Benchmarks/serve-compare.sh /work/wt-old/.build/release/videofeed /work/wt-new/.build/release/videofeed
#
# Each binary is run from its own build folder (the page's files are its resource bundle beside it). The feeds are
# Benchmarks/serve-bench.sh's (real phone clips from $MEDIA and a synthetic 1080x1920 clip, cycled to ITEMS and
# COLD_ITEMS items), plus a folder of real clips: symlinks to every video of $MEDIA/MANIFEST.tsv but the corrupt
# ones, photos, audio only, and sample.avi (sample.mp4's public ID). Measurements, each with a fresh `serve` on a
# free port and a fresh cache, old then new, ROUNDS times (A B A B ...), the same seed and inputs for both:
#
#   swipe  scripts/serve-swipe-bench.py, SWIPES neighbour swipes on the bench's feed (1-3 s dwell)
#   real   the same, REAL_SWIPES neighbour swipes on the real-clips folder (--sort name)
#   cold   COLD_JUMPS cold jumps on the long feed after listing it (--warm-listing), as serve-bench.sh
#   load   scripts/serve-load.py, VIEWERS viewers for LOAD_SECONDS s, resident memory through --pid; the identity
#          reference is a batch made once by NEW_BINARY (`videofeed transcode`), so an old build that made other
#          bytes shows as mismatches
#
# Prints a table: metric, old per round, new per round, median new / median old (> 1: the new build is slower or
# larger). Every run's JSON and server log stay under $WORK.
#
# Knobs (environment): ROUNDS=2 PHASES="swipe real cold load" SWIPES=60 REAL_SWIPES=20 COLD_JUMPS=20 COLD_STRIDE=7
# VIEWERS=20 LOAD_SECONDS=120 SEED=1 ITEMS=16 COLD_ITEMS=150 MEDIA=../shared/media WORK=(mktemp).
# Exit status: 0 all ran, 2 the comparison could not run. Standard library Python and bash only.
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 OLD_BINARY NEW_BINARY" >&2; exit 2; }
OLD=$(realpath "$1")
NEW=$(realpath "$2")
for b in "$OLD" "$NEW"; do [ -x "$b" ] || { echo "serve-compare: no videofeed at $b" >&2; exit 2; }; done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
ROUNDS=${ROUNDS:-2}
PHASES=${PHASES:-swipe real cold load}
SWIPES=${SWIPES:-60}
REAL_SWIPES=${REAL_SWIPES:-20}
COLD_JUMPS=${COLD_JUMPS:-20}
COLD_STRIDE=${COLD_STRIDE:-7}
VIEWERS=${VIEWERS:-20}
LOAD_SECONDS=${LOAD_SECONDS:-120}
SEED=${SEED:-1}
ITEMS=${ITEMS:-16}
COLD_ITEMS=${COLD_ITEMS:-150}
if [ -z "${MEDIA:-}" ]; then
    MEDIA=$ROOT/../shared/media
    [ -d "$MEDIA" ] || MEDIA=/work/shared/media
fi
WORK=${WORK:-$(mktemp -d /tmp/serve-compare.XXXXXX)}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
[ -f "$MEDIA/MANIFEST.tsv" ] || { echo "serve-compare: no $MEDIA/MANIFEST.tsv (MEDIA=... to change)" >&2; exit 2; }
MEDIA=$(cd "$MEDIA" && pwd)
command -v ffmpeg >/dev/null || { echo "serve-compare: the ffmpeg CLI is missing (make deps)" >&2; exit 2; }
[ -x /usr/bin/chromium ] && python3 -c 'import playwright' 2>/dev/null \
    || { echo "serve-compare: chromium or Playwright missing (make browser-deps)" >&2; exit 2; }

say() { printf '\n== %s (%s; load average %s)\n' "$1" "$(date -u +%H:%M:%S)" "$(cut -d' ' -f1-3 /proc/loadavg)"; }
echo "old: $OLD"
echo "new: $NEW"
echo "work: $WORK; rounds $ROUNDS; phases: $PHASES"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$WORK/load-average"

# --- inputs --------------------------------------------------------------------------------------------------------
say "feeds"
SYNTH=$WORK/media/synthetic_1080x1920.mp4
mkdir -p "$WORK/media" "$WORK/real"
[ -f "$SYNTH" ] || ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=size=1080x1920:rate=30:duration=10 \
    -c:v libx264 -preset veryfast -crf 23 -pix_fmt yuv420p -movflags +faststart "$SYNTH"
python3 - "$MEDIA" "$SYNTH" "$WORK" "$ITEMS" "$COLD_ITEMS" <<'EOF'
import json, os, sys
media, synth, work, items, cold_items = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
listed = {}
with open(os.path.join(media, "MANIFEST.tsv")) as f:
    for line in f.read().splitlines()[1:]:
        cols = line.split("\t")
        if cols and cols[0]:
            listed[cols[0]] = cols
# The bench's feed: as Benchmarks/serve-bench.sh.
wanted = [
    ("phone/android_4k60_rot90", "portrait_4k60.mp4"),
    ("phone/iphone_hlg_dv_rot90", "sample_with_color_info.mp4"),
    ("phone/rotate_and_reflect", "sample_rotate_and_reflect.mp4"),
    ("phone/hdr10_hevc10", "hdr10-video-with-sdr-container.mp4"),
    ("phone/android_fire_rot180_vfr", "fire2.mp4"),
]
sources = [("synthetic/testsrc2_1080x1920", synth)]
for public_id, name in wanted:
    path = os.path.join(media, name)
    if name in listed and os.path.isfile(path):
        sources.append((public_id, path))
    else:
        print(f"serve-compare: {name} is not in {media}/MANIFEST.tsv; left out", file=sys.stderr)
def feed(n):
    out = []
    for i in range(n):
        public_id, path = sources[i % len(sources)]
        out.append({"public_id": f"{public_id}_{i // len(sources)}",
                    "created_at": f"2026-11-{20 - (i * 7) % 19:02d}T{(i * 5) % 24:02d}:{(i * 13) % 60:02d}:00Z",
                    "url": path, "format": os.path.splitext(path)[1][1:], "bytes": os.path.getsize(path)})
    return out
json.dump(feed(items), open(os.path.join(work, "feed.json"), "w"), indent=1)
json.dump(feed(cold_items), open(os.path.join(work, "cold-feed.json"), "w"), indent=1)
# The real clips: every video but the corrupt ones, photos and audio only (MANIFEST.tsv's description and codec), one
# file per base name (two files of one base name share a public ID: sample.mp4 is kept, sample.avi left out).
real, bases = [], set()
for name, cols in listed.items():
    codec, notable = cols[3] if len(cols) > 3 else "", cols[7] if len(cols) > 7 else ""
    base = os.path.splitext(name)[0]
    if ("CORRUPT" in notable or "AUDIO-ONLY" in notable or "PHOTO" in notable or "JPEG" in notable
            or "HEIC" in notable or codec.split("+")[0] in ("png", "mjpeg", "mp3") or name.endswith((".avif", ".heic"))
            or base in bases or not os.path.isfile(os.path.join(media, name))):
        continue
    bases.add(base)
    real.append(name)
for name in sorted(real):
    link = os.path.join(work, "real", name)
    if not os.path.lexists(link):
        os.symlink(os.path.join(media, name), link)
print(f"feed.json: {items} items, cold-feed.json: {cold_items} items, from {len(sources)} sources; "
      f"real/: {len(real)} clips: {' '.join(sorted(real))}")
EOF

NEED_BATCH=
case " $PHASES " in *" load "*) NEED_BATCH=1 ;; esac
if [ -n "$NEED_BATCH" ] && [ ! -f "$WORK/batch/renditions.jsonl" ]; then
    say "the load test's reference: NEW transcode feed.json --out batch"
    rm -rf "$WORK/batch"
    "$NEW" transcode "$WORK/feed.json" --out "$WORK/batch" -q
fi

# --- servers -------------------------------------------------------------------------------------------------------
SERVER_PID=
start_server() {  # RUN BINARY SOURCE [serve options...]: fresh cache, free port; sets SERVER_PID and URL
    local run=$1 bin=$2 source=$3
    shift 3
    rm -rf "$WORK/cache-$run"
    "$bin" serve "$source" --port 0 --cache "$WORK/cache-$run" "$@" >"$WORK/$run.serve.out" 2>"$WORK/$run.serve.log" &
    SERVER_PID=$!
    URL=
    for _ in $(seq 150); do
        grep -q '^listening on ' "$WORK/$run.serve.out" 2>/dev/null && break
        kill -0 "$SERVER_PID" 2>/dev/null || { tail -20 "$WORK/$run.serve.log" >&2; return 1; }
        sleep 0.1
    done
    URL=$(sed -n 's/^listening on //p' "$WORK/$run.serve.out" | head -1)
    [ -n "$URL" ] || { echo "serve-compare: serve $run did not start" >&2; return 1; }
}
stop_server() {  # prints "gone" when the server had exited by itself
    if [ -n "$SERVER_PID" ]; then
        if kill -0 "$SERVER_PID" 2>/dev/null; then
            kill -TERM "$SERVER_PID" 2>/dev/null || true
            wait "$SERVER_PID" 2>/dev/null || true
        else
            wait "$SERVER_PID" 2>/dev/null || true
            echo "gone"
        fi
        SERVER_PID=
    fi
}
trap 'stop_server >/dev/null' EXIT

run_phase() {  # PHASE LABEL BINARY ROUND
    local phase=$1 label=$2 bin=$3 round=$4 run="$1-$2-$4" status=0
    say "$phase, $label, round $round"
    case $phase in
        swipe) start_server "$run" "$bin" "$WORK/feed.json" || return 0
               python3 scripts/serve-swipe-bench.py "$URL" --swipes "$SWIPES" --cold-jumps 0 --seed "$SEED" \
                   --json "$WORK/$run.json" | sed -n '1,2p' || status=$? ;;
        real)  start_server "$run" "$bin" "$WORK/real" --sort name || return 0
               python3 scripts/serve-swipe-bench.py "$URL" --swipes "$REAL_SWIPES" --cold-jumps 0 --seed "$SEED" \
                   --json "$WORK/$run.json" | sed -n '1,2p' || status=$? ;;
        cold)  start_server "$run" "$bin" "$WORK/cold-feed.json" || return 0
               python3 scripts/serve-swipe-bench.py "$URL" --swipes 0 --cold-jumps "$COLD_JUMPS" \
                   --cold-stride "$COLD_STRIDE" --warm-listing --seed "$SEED" --json "$WORK/$run.json" \
                   | sed -n '/cold jumps/p' || status=$? ;;
        load)  start_server "$run" "$bin" "$WORK/feed.json" || return 0
               python3 scripts/serve-load.py "$URL" --viewers "$VIEWERS" --seconds "$LOAD_SECONDS" --seed "$SEED" \
                   --batch "$WORK/batch" --pid "$SERVER_PID" --json "$WORK/$run.json" | sed -n '1,12p' || status=$? ;;
    esac
    if [ "$(stop_server)" = gone ]; then
        echo "serve-compare: the server of $run exited by itself; the run is void" >&2
        echo "$run" >>"$WORK/void"
    fi
    printf '%s\t%s\n' "$run" "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$WORK/load-average"
}

for round in $(seq 1 "$ROUNDS"); do
    for phase in $PHASES; do
        run_phase "$phase" old "$OLD" "$round"
        run_phase "$phase" new "$NEW" "$round"
    done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$WORK/load-average"

# --- the table -----------------------------------------------------------------------------------------------------
say "figures"
python3 - "$WORK" "$ROUNDS" "$PHASES" <<'EOF'
import json, os, statistics, sys
work, rounds, phases = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
void = set(open(os.path.join(work, "void")).read().split()) if os.path.exists(os.path.join(work, "void")) else set()
def read(phase, label, r):
    run = f"{phase}-{label}-{r}"
    path = os.path.join(work, run + ".json")
    if run in void or not os.path.exists(path):
        return None
    return json.load(open(path))
def get(d, *keys):
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d
metrics = []  # (phase, name, extractor)
if "swipe" in phases:
    metrics += [("swipe", "neighbour swipe p50 ms (bench feed)", lambda j: get(j, "neighbour", "p50_ms")),
                ("swipe", "neighbour swipe p95 ms (bench feed)", lambda j: get(j, "neighbour", "p95_ms")),
                ("swipe", "neighbour swipe max ms (bench feed)", lambda j: get(j, "neighbour", "max_ms")),
                ("swipe", "  swipes without a first frame", lambda j: get(j, "neighbour", "timeouts")),
                ("swipe", "  server misses", lambda j: get(j, "neighbour", "page_misses"))]
if "real" in phases:
    metrics += [("real", "neighbour swipe p50 ms (real clips)", lambda j: get(j, "neighbour", "p50_ms")),
                ("real", "neighbour swipe p95 ms (real clips)", lambda j: get(j, "neighbour", "p95_ms")),
                ("real", "neighbour swipe max ms (real clips)", lambda j: get(j, "neighbour", "max_ms")),
                ("real", "  swipes without a first frame", lambda j: get(j, "neighbour", "timeouts")),
                ("real", "  server misses", lambda j: get(j, "neighbour", "page_misses"))]
if "cold" in phases:
    metrics += [("cold", "cold jump p50 ms", lambda j: get(j, "cold", "p50_ms")),
                ("cold", "cold jump p95 ms", lambda j: get(j, "cold", "p95_ms")),
                ("cold", "cold jump max ms", lambda j: get(j, "cold", "max_ms")),
                ("cold", "  jumps without a first frame", lambda j: get(j, "cold", "timeouts"))]
if "load" in phases:
    def kind(k, f):
        return lambda j: get(j, "per_kind", k, f)
    metrics += [("load", "load: requests over 5 s", lambda j: j.get("over_stall")),
                ("load", "load: 5xx", lambda j: j.get("server_errors")),
                ("load", "load: failed requests", lambda j: j.get("failures")),
                ("load", "load: requests", lambda j: j.get("requests")),
                ("load", "load: segment p95 ms", kind("segment", "p95_ms")),
                ("load", "load: segment p99 ms", kind("segment", "p99_ms")),
                ("load", "load: init p95 ms", kind("init", "p95_ms")),
                ("load", "load: poster p95 ms", kind("poster", "p95_ms")),
                ("load", "load: card fill p95 ms", kind("card", "p95_ms")),
                ("load", "load: ws-swipe p95 ms", kind("ws-swipe", "p95_ms")),
                ("load", "load: VmHWM MiB", lambda j: get(j, "rss", "vmhwm_mib")),
                ("load", "load: responses differing from the batch", lambda j: j.get("mismatches"))]
def show(v):
    return "void" if v is None else f"{v:g}" if isinstance(v, (int, float)) else str(v)
print(f"| metric | old ({', '.join(f'r{r}' for r in range(1, rounds + 1))}) | new (same) | median new / old |")
print("| --- | --- | --- | --- |")
for phase, name, f in metrics:
    old = [read(phase, "old", r) for r in range(1, rounds + 1)]
    new = [read(phase, "new", r) for r in range(1, rounds + 1)]
    ov = [f(j) if j else None for j in old]
    nv = [f(j) if j else None for j in new]
    o = [v for v in ov if isinstance(v, (int, float))]
    n = [v for v in nv if isinstance(v, (int, float))]
    ratio = "-"
    if o and n:
        mo, mn = statistics.median(o), statistics.median(n)
        ratio = f"{mn / mo:.2f}" if mo else ("1.00" if mn == 0 else "inf")
    print(f"| {name} | {', '.join(show(v) for v in ov)} | {', '.join(show(v) for v in nv)} | {ratio} |")
if void:
    print(f"void runs (server exited by itself): {' '.join(sorted(void))}")
print("load average per run:")
print(open(os.path.join(work, "load-average")).read().rstrip())
print(f"files: {work}")
EOF
