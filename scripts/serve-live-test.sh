#!/usr/bin/env bash
# The page on a live feed (issue 38): makes a folder of ten short clips from Fixtures/media (distinct names,
# modification times an hour ago a minute apart, so the listing's order is known), serves it with the built videofeed
# (debug unless VIDEOFEED is set; its log level SERVE_LOG_LEVEL, default warning) on a free port with a fresh cache,
# and runs scripts/serve-live-test.py against it, which adds and removes files in the folder while the page is open.
# Extra arguments go to the Python test (e.g. --only newer,pull). Needs `make browser-deps`. Exit status: the test's
# (0 passed, 1 failed, 2 could not run).
set -euo pipefail
cd "$(dirname "$0")/.."
VIDEOFEED=${VIDEOFEED:-$(swift build --show-bin-path)/videofeed}
work=$(mktemp -d /tmp/vfe-live.XXXXXX)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

folder=$work/feed
mkdir -p "$folder"
now=$(date +%s)
k=0
for clip in h264_portrait.mp4 rotate90.mp4 vfr.mp4 hevc.mp4 black_start.mp4 vp9.webm rotate270.mp4 odd_161x121.mkv \
            mpeg4.avi hevc_10bit.mp4; do
  k=$((k + 1))
  name=$(printf 'clip%02d_%s' "$k" "$clip")
  cp "Fixtures/media/$clip" "$folder/$name"
  touch -d "@$((now - 3600 - k * 60))" "$folder/$name"
done

"$VIDEOFEED" serve "$folder" --port 0 --cache "$work/cache" --log-level "${SERVE_LOG_LEVEL:-warning}" \
  >"$work/serve.out" 2>"$work/serve.err" &
pid=$!
for _ in $(seq 1 300); do
  grep -q "listening on" "$work/serve.out" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null ||
    { cat "$work/serve.err" >&2; echo "serve-live-test: the server did not start" >&2; exit 1; }
  sleep 0.1
done
url=$(sed -n 's/^listening on \(http:[^ ]*\)\/$/\1/p' "$work/serve.out" | head -1)
[ -n "$url" ] || { echo "serve-live-test: no 'listening on' line" >&2; exit 1; }
echo "serve-live-test: $url serving $folder"
status=0
python3 scripts/serve-live-test.py "$url" "$folder" "$@" || status=$?
if ! kill -0 "$pid" 2>/dev/null; then
  echo "serve-live-test: the server died" >&2; tail -n 60 "$work/serve.err" >&2; exit 1
fi
if [ "$status" -ne 0 ]; then
  echo "serve-live-test: failed (the server's log follows)" >&2; tail -n 60 "$work/serve.err" >&2
fi
exit "$status"
