#!/usr/bin/env bash
# `videofeed serve` benchmarks of issue 12 ("How it is judged"), one command from a clean checkout:
#
#   bash Benchmarks/serve-bench.sh            # after `make release browser-deps` (or let it build)
#
# 1. builds the release `videofeed`;
# 2. makes a benchmark feed of 1080x1920-class sources under $WORK (a temporary folder): real phone clips from
#    $MEDIA (../shared/media: read from there through a manifest written under $WORK, never copied into the
#    project) and one synthetic 1080x1920 clip made with the ffmpeg CLI (testsrc2, 10 s, 30 fps, H.264), cycled to
#    ITEMS items with distinct public_ids (each its own cached item), in Fixtures/feed.json's manifest format; a feed of
#    SWIPE_ITEMS items (the same sources; by default SWIPES + 20, more than the swipes can reach, so no swipe comes back
#    round the feed to an item from a lap before) for the neighbour swipes; and a longer feed (COLD_ITEMS items) for
#    the cold-jump series, so that every jump lands on an item nothing ever prepared;
# 3. runs `videofeed transcode` over the feed (the batch the load test compares every served segment with);
# 4. swipe benchmark (scripts/serve-swipe-bench.py): `serve` on a free port with a fresh cache, SWIPES neighbour
#    swipes in Chromium (1-3 s dwell) over the swipe feed, reported over all and apart for items not visited before
#    (cold for the viewer) and items visited before (warm); then, that server stopped, a second `serve` with a fresh cache on the long
#    feed for COLD_JUMPS cold jumps (#i=N) after the script listed the whole feed (pending=1: the pages read, no item
#    prepared: the judged figure is the cold item's, not the listing's); then a third for DEEP_JUMPS jumps with
#    nothing listed beforehand (a deep link: the page lists its way to the item), reported beside it;
#    then, with AV1=1, the neighbour swipes and the cold jumps again against `serve --codecs h264,av1` (Chromium
#    plays the AV1 set, made on demand), reported beside the H.264 figures;
# 5. load test (scripts/serve-load.py): a fourth `serve` with a fresh cache, VIEWERS viewers for LOAD_SECONDS seconds,
#    its resident memory sampled through --pid;
# 6. prints the figures against the targets and writes them (JSON of each part, server logs) into $WORK.
#
# Knobs (environment): SWIPES=200 COLD_JUMPS=20 COLD_STRIDE=7 DEEP_JUMPS=6 VIEWERS=20 LOAD_SECONDS=120 SEED=1 ITEMS=16
# SWIPE_ITEMS=SWIPES+20 COLD_ITEMS=150 AV1=1 (0: no AV1 series)
# MEDIA=../shared/media WORK=(mktemp) SKIP_BUILD=1 (use the release binary as built) BIN=path (another videofeed).
# Exit status: 0 every target met, 1 a target missed or a check failed, 2 the benchmark could not run.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
SWIPES=${SWIPES:-200}
COLD_JUMPS=${COLD_JUMPS:-20}
COLD_STRIDE=${COLD_STRIDE:-7}
DEEP_JUMPS=${DEEP_JUMPS:-6}
VIEWERS=${VIEWERS:-20}
LOAD_SECONDS=${LOAD_SECONDS:-120}
SEED=${SEED:-1}
ITEMS=${ITEMS:-16}
SWIPE_ITEMS=${SWIPE_ITEMS:-$((SWIPES + 20))}
COLD_ITEMS=${COLD_ITEMS:-150}
AV1=${AV1:-1}
if [ -z "${MEDIA:-}" ]; then  # the checkout's sibling (as `make conformance`), else this machine's copy
    MEDIA=$ROOT/../shared/media
    [ -d "$MEDIA" ] || MEDIA=/work/shared/media
fi
WORK=${WORK:-$(mktemp -d /tmp/serve-bench.XXXXXX)}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)

say() { printf '\n== %s (%s; load average %s)\n' "$1" "$(date -u +%H:%M:%S)" "$(cut -d' ' -f1-3 /proc/loadavg)"; }

# --- 1. build ----------------------------------------------------------------------------------------------------
if [ -n "${BIN:-}" ]; then
    B=$BIN
else
    if [ -z "${SKIP_BUILD:-}" ]; then
        say "swift build -c release --product videofeed"
        swift build -c release --product videofeed 2>&1 | tail -1
    fi
    B=$(swift build -c release --show-bin-path)/videofeed
fi
[ -x "$B" ] || { echo "serve-bench: no videofeed at $B" >&2; exit 2; }
command -v ffmpeg >/dev/null || { echo "serve-bench: the ffmpeg CLI is missing (make deps)" >&2; exit 2; }
[ -x /usr/bin/chromium ] && python3 -c 'import playwright' 2>/dev/null \
    || { echo "serve-bench: chromium or Playwright missing (make browser-deps)" >&2; exit 2; }
[ -f "$MEDIA/MANIFEST.tsv" ] || { echo "serve-bench: no $MEDIA/MANIFEST.tsv (MEDIA=... to change)" >&2; exit 2; }
MEDIA=$(cd "$MEDIA" && pwd)

# --- 2. the feeds ------------------------------------------------------------------------------------------------
say "feeds in $WORK"
SYNTH=$WORK/media/synthetic_1080x1920.mp4
mkdir -p "$WORK/media"
[ -f "$SYNTH" ] || ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=size=1080x1920:rate=30:duration=10 \
    -c:v libx264 -preset veryfast -crf 23 -pix_fmt yuv420p -movflags +faststart "$SYNTH"
python3 - "$MEDIA" "$SYNTH" "$WORK" "$ITEMS" "$COLD_ITEMS" "$SWIPE_ITEMS" <<'EOF'
import json, os, sys
media, synth, work, items, cold_items = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
swipe_items = int(sys.argv[6])
# Phone clips shown portrait (1080x1920-class or larger), HDR and rotated ones, by MANIFEST.tsv's description.
wanted = [
    ("phone/android_4k60_rot90", "portrait_4k60.mp4"),          # Android 12, 3840x2160 rotated -90 -> 2160x3840, 60 fps
    ("phone/iphone_hlg_dv_rot90", "sample_with_color_info.mp4"), # iPhone 12 Pro Max, HEVC 10-bit HLG + DV, rotated -> 1080x1920
    ("phone/rotate_and_reflect", "sample_rotate_and_reflect.mp4"),  # rotation + mirror -> 720x1080 portrait
    ("phone/hdr10_hevc10", "hdr10-video-with-sdr-container.mp4"),   # HEVC Main10 PQ 1920x1080 + AAC
    ("phone/android_fire_rot180_vfr", "fire2.mp4"),             # Android phone camera, rotated 180, VFR, AAC mono
]
listed = {}
with open(os.path.join(media, "MANIFEST.tsv")) as f:
    for line in f.read().splitlines()[1:]:
        cols = line.split("\t")
        if cols and cols[0]:
            listed[cols[0]] = cols
sources = [("synthetic/testsrc2_1080x1920", synth)]
for public_id, name in wanted:
    path = os.path.join(media, name)
    if name in listed and os.path.isfile(path):
        sources.append((public_id, path))
    else:
        print(f"serve-bench: {name} is not in {media}/MANIFEST.tsv; left out", file=sys.stderr)
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
json.dump(feed(swipe_items), open(os.path.join(work, "swipe-feed.json"), "w"), indent=1)
print(f"feed.json: {items} items, swipe-feed.json: {swipe_items} items, cold-feed.json: {cold_items} items, "
      f"from {len(sources)} sources:")
for public_id, path in sources:
    print(f"  {public_id:<32} {path}")
EOF
for f in "$SYNTH" $(python3 -c 'import json,sys; print(" ".join(sorted({i["url"] for i in json.load(open(sys.argv[1]))})))' "$WORK/feed.json"); do
    ffprobe -v error -select_streams v:0 -show_entries stream=codec_name,width,height,pix_fmt,color_transfer:stream_side_data=rotation \
        -of compact=p=0:nk=1 "$f" | tr '\n' ' ' | sed "s|^|  $(basename "$f"): |"; echo
done | sort -u

# --- 3. the batch (the load test's identity reference) --------------------------------------------------------------
say "videofeed transcode feed.json --out batch"
[ -f "$WORK/batch/renditions.jsonl" ] || rm -rf "$WORK/batch"
"$B" transcode "$WORK/feed.json" --out "$WORK/batch" -q

# --- servers -----------------------------------------------------------------------------------------------------
SERVER_PID=
start_server() {  # NAME FEED [ARG...]: serve FEED (with ARGs) on a free port with a fresh cache; sets SERVER_PID and URL
    local name=$1 feed=$2
    shift 2
    rm -rf "$WORK/cache-$name"
    "$B" serve "$feed" --port 0 --cache "$WORK/cache-$name" "$@" >"$WORK/serve-$name.out" 2>"$WORK/serve-$name.log" &
    SERVER_PID=$!
    SERVER_NAME=$name
    for _ in $(seq 100); do
        grep -q '^listening on ' "$WORK/serve-$name.out" 2>/dev/null && break
        kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/serve-$name.log" >&2; exit 2; }
        sleep 0.1
    done
    URL=$(sed -n 's/^listening on //p' "$WORK/serve-$name.out")
    [ -n "$URL" ] || { echo "serve-bench: serve $name did not start" >&2; exit 2; }
    echo "serve $name: $URL (pid $SERVER_PID, cache $WORK/cache-$name)"
}
EARLY_EXITS=
stop_server() {  # stops the phase's server; one that is gone already voids the phase (its log is printed)
    if [ -n "$SERVER_PID" ]; then
        if kill -0 "$SERVER_PID" 2>/dev/null; then
            kill -TERM "$SERVER_PID" 2>/dev/null || true
            wait "$SERVER_PID" 2>/dev/null || true
        else
            local status=0
            wait "$SERVER_PID" 2>/dev/null || status=$?
            echo "serve-bench: serve $SERVER_NAME (pid $SERVER_PID) exited by itself before the end of its phase," \
                "status $status$([ "$status" -gt 128 ] && echo " (signal $((status - 128)))"); its log:" >&2
            grep -v CancellationError "$WORK/serve-$SERVER_NAME.log" | tail -20 >&2
            EARLY_EXITS="$EARLY_EXITS $SERVER_NAME"
        fi
        SERVER_PID=
    fi
}
trap stop_server EXIT

# --- 4. swipe to first frame in Chromium ---------------------------------------------------------------------------
say "swipe benchmark: $SWIPES neighbour swipes over $SWIPE_ITEMS items"
start_server swipe "$WORK/swipe-feed.json"
set +e
python3 scripts/serve-swipe-bench.py "$URL" --swipes "$SWIPES" --cold-jumps 0 --seed "$SEED" --json "$WORK/swipe.json"
SWIPE_STATUS=$?
set -e
grep VmHWM "/proc/$SERVER_PID/status" >"$WORK/swipe.hwm" 2>/dev/null || true
stop_server
[ "$SWIPE_STATUS" -le 1 ] || { echo "serve-bench: the swipe benchmark could not run (status $SWIPE_STATUS); going on" >&2; rm -f "$WORK/swipe.json"; }

say "swipe benchmark: $COLD_JUMPS cold jumps (the whole feed listed first, pending=1: nothing made)"
start_server cold "$WORK/cold-feed.json"
set +e
python3 scripts/serve-swipe-bench.py "$URL" --swipes 0 --cold-jumps "$COLD_JUMPS" --cold-stride "$COLD_STRIDE" \
    --warm-listing --seed "$SEED" --json "$WORK/cold.json"
COLD_STATUS=$?
set -e
grep VmHWM "/proc/$SERVER_PID/status" >"$WORK/cold.hwm" 2>/dev/null || true
stop_server
[ "$COLD_STATUS" -le 1 ] || { echo "serve-bench: the cold-jump benchmark could not run (status $COLD_STATUS); going on" >&2; rm -f "$WORK/cold.json"; }

if [ "$DEEP_JUMPS" -gt 0 ]; then
    say "swipe benchmark: $DEEP_JUMPS cold jumps with nothing listed beforehand (deep links)"
    start_server deep "$WORK/cold-feed.json"
    set +e
    python3 scripts/serve-swipe-bench.py "$URL" --swipes 0 --cold-jumps "$DEEP_JUMPS" --cold-stride "$COLD_STRIDE" \
        --seed "$SEED" --json "$WORK/deep.json"
    set -e
    stop_server
fi

# --- 4b. the same with the AV1 set (serve --codecs h264,av1): Chromium plays AV1, made for it on demand -----------
if [ "$AV1" = 1 ]; then
    say "AV1 viewer: $SWIPES neighbour swipes, then $COLD_JUMPS cold jumps (serve --codecs h264,av1)"
    start_server av1-swipe "$WORK/swipe-feed.json" --codecs h264,av1
    set +e
    python3 scripts/serve-swipe-bench.py "$URL" --swipes "$SWIPES" --cold-jumps 0 --seed "$SEED" --json "$WORK/av1-swipe.json"
    set -e
    grep VmHWM "/proc/$SERVER_PID/status" >"$WORK/av1-swipe.hwm" 2>/dev/null || true
    stop_server
    start_server av1-cold "$WORK/cold-feed.json" --codecs h264,av1
    set +e
    python3 scripts/serve-swipe-bench.py "$URL" --swipes 0 --cold-jumps "$COLD_JUMPS" --cold-stride "$COLD_STRIDE" \
        --warm-listing --seed "$SEED" --json "$WORK/av1-cold.json"
    set -e
    grep VmHWM "/proc/$SERVER_PID/status" >"$WORK/av1-cold.hwm" 2>/dev/null || true
    stop_server
fi

# --- 5. load -------------------------------------------------------------------------------------------------------
say "load test: $VIEWERS viewers, $LOAD_SECONDS s"
start_server load "$WORK/feed.json"
set +e
python3 scripts/serve-load.py "$URL" --viewers "$VIEWERS" --seconds "$LOAD_SECONDS" --seed "$SEED" \
    --batch "$WORK/batch" --pid "$SERVER_PID" --json "$WORK/load.json"
LOAD_STATUS=$?
set -e
stop_server
[ "$LOAD_STATUS" -le 1 ] || { echo "serve-bench: the load test could not run (status $LOAD_STATUS)" >&2; exit 2; }

# --- 6. the figures ------------------------------------------------------------------------------------------------
say "figures"
EARLY_EXITS="$EARLY_EXITS" python3 - "$WORK" "$B" <<'EOF'
import json, os, subprocess, sys
work, binary = sys.argv[1], sys.argv[2]
def read(name):
    path = os.path.join(work, name)
    return json.load(open(path)) if os.path.exists(path) else None
swipe = read("swipe.json") or {"neighbour": {}, "neighbour_target_met": False, "chromium": "?"}
cold_run = read("cold.json") or {"cold": {}, "cold_target_met": False}
load = json.load(open(os.path.join(work, "load.json")))
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
ffmpeg = subprocess.run(["ffmpeg", "-version"], capture_output=True, text=True).stdout.split("\n")[0]
print(f"machine: {os.cpu_count()} cores ({cpu}), {ffmpeg}, Chromium {swipe['chromium']}; shared, noisy VM")
nb, cold = swipe["neighbour"], cold_run["cold"]
def fmt(v):
    return "-" if v is None else f"{v:g}"
rows = []
rows.append(("neighbour swipe to first painted frame, p95", "<= 100 ms",
             f"p50 {fmt(nb.get('p50_ms'))} / p95 {fmt(nb.get('p95_ms'))} / max {fmt(nb.get('max_ms'))} ms over "
             f"{nb.get('count', 0)} (server hits {nb.get('page_hits')}, misses {nb.get('page_misses')})",
             swipe.get("neighbour_target_met")))
for key, label in (("neighbour_first_visit", "  of which to an item not visited before (cold)"),
                   ("neighbour_revisit", "  of which back to an item visited before (warm)")):
    part = swipe.get(key) or {}
    rows.append((label, "-", f"p50 {fmt(part.get('p50_ms'))} / p95 {fmt(part.get('p95_ms'))} / max "
                 f"{fmt(part.get('max_ms'))} ms over {part.get('count', 0)}", None))
rows.append(("cold jump to first painted frame, p95", "<= 1500 ms",
             f"p50 {fmt(cold.get('p50_ms'))} / p95 {fmt(cold.get('p95_ms'))} / max {fmt(cold.get('max_ms'))} ms over "
             f"{cold.get('count', 0)} (server hits {cold.get('page_hits')}, misses {cold.get('page_misses')})",
             cold_run.get("cold_target_met")))
checks = load["checks"]
rows.append(("load: 5xx", "none", f"{load['server_errors']} of {load['requests']} requests", checks["no_5xx"]))
rows.append(("load: requests over 5 s", "none", f"{load['over_stall']}", checks["no_request_over_stall"]))
rows.append(("load: failed requests", "none", f"{load['failures']}", checks["no_failed_request"]))
rss = load.get("rss") or {}
rows.append(("load: server resident memory", "<= 512 MiB",
             f"peak VmRSS {rss.get('peak_vmrss_mib')} MiB, VmHWM {rss.get('vmhwm_mib')} MiB",
             checks.get("rss_within_limit")))
rows.append(("load: served init/segments identical to the batch's", "all",
             f"{load['files_mismatched']} of {load['files_checked']} distinct files differ "
             f"({load['mismatches']} of {load['identity_checked']} responses)", checks["segments_identical"]))
if not read("swipe.json") or not read("cold.json"):
    print("the swipe benchmark did not run (see its message above): counted as missed")
print("| judged | target | measured | |")
print("| --- | --- | --- | --- |")
for name, target, measured, ok in rows:
    print(f"| {name} | {target} | {measured} | {'met' if ok else 'MISSED' if ok is False else '-'} |")
hwms = {n: open(os.path.join(work, n + ".hwm")).read().split()[1:2] for n in ("swipe", "cold")
        if os.path.exists(os.path.join(work, n + ".hwm"))}
if hwms:
    print("H.264 servers' VmHWM: " + ", ".join(f"{n} {int(v[0]) // 1024} MiB" for n, v in hwms.items() if v))
for name, label in (("av1-swipe.json", "neighbour swipes"), ("av1-cold.json", "cold jumps")):
    part = read(name)
    if not part:
        continue
    key = "neighbour" if name == "av1-swipe.json" else "cold"
    p = part.get(key) or {}
    hwm_path = os.path.join(work, name.replace(".json", ".hwm"))
    hwm = open(hwm_path).read().split()[1:2] if os.path.exists(hwm_path) else []
    print(f"AV1 viewer (serve --codecs h264,av1), {label} (not judged): p50 {fmt(p.get('p50_ms'))} / p95 "
          f"{fmt(p.get('p95_ms'))} / max {fmt(p.get('max_ms'))} ms over {p.get('count', 0)} (server hits "
          f"{p.get('page_hits')}, misses {p.get('page_misses')}); segments asked for by rendition "
          f"{part.get('segments_by_rendition', '-')}; server VmHWM {int(hwm[0]) // 1024 if hwm else '-'} MiB")
deep = read("deep.json")
if deep and deep["cold"].get("count"):
    d = deep["cold"]
    print(f"deep links (cold jumps, nothing listed beforehand, not judged): p50 {fmt(d.get('p50_ms'))} / p95 "
          f"{fmt(d.get('p95_ms'))} / max {fmt(d.get('max_ms'))} ms over {d['count']}")
if os.environ.get("EARLY_EXITS", "").strip():
    print(f"VOID: the server of phase(s) {os.environ['EARLY_EXITS'].strip()} exited by itself before the end")
    rows.append(("servers stayed up", "all", os.environ["EARLY_EXITS"].strip(), False))
print("peer: Media3's preload manager is reported at 200-500 ms to first frame for a preloaded item on phones")
print(f"files: {work}/swipe.json, {work}/cold.json, {work}/deep.json, {work}/load.json, {work}/serve-*.log")
sys.exit(0 if all(ok for *_, ok in rows if ok is not None) else 1)
EOF
