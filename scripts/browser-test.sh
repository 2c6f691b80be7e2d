#!/usr/bin/env bash
# The transcoder's outputs play in a real browser: transcodes Fixtures/transcode/ and a few Fixtures/media/ files with
# the built videofeed (debug unless VIDEOFEED is set), then plays every rendition's fast-start MP4, every media
# playlist (init + segments through MSE) and every preview MP4 in headless Chromium (scripts/browser-check.py) and
# checks every WebP preview is a WebP animation (a still's is one picture); then plays the AV1 renditions of a few
# sources (--codecs h264,av1) the same ways, with our codecs strings. Needs `make browser-deps`.
set -euo pipefail
cd "$(dirname "$0")/.."
VIDEOFEED=${VIDEOFEED:-$(swift build --show-bin-path)/videofeed}
work=$(mktemp -d /tmp/vfe-browser.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/feed"
cp Fixtures/transcode/*.mp4 Fixtures/transcode/*.mkv Fixtures/transcode/*.ts "$work/feed/"
for f in h264_portrait.mp4 rotate90.mp4 animated.gif image.jpg cover.mp3 vfr.mp4 mpeg4.avi; do cp "Fixtures/media/$f" "$work/feed/"; done
"$VIDEOFEED" transcode "$work/feed" --out "$work/out" -q
items=()
while IFS= read -r f; do items+=("$f"); done < <(find "$work/out" \( -name '*.mp4' ! -name init.mp4 -o -name index.m3u8 \) | sort)
# The AV1 set beside the ladder (--codecs h264,av1): each AV1 rendition's MP4 and media playlist, with the codecs
# string our renditions.jsonl gives it, so Chromium's isTypeSupported judges our string, not ffprobe's.
mkdir -p "$work/av1-feed"
for f in Fixtures/transcode/rotated_phone.mp4 Fixtures/transcode/hdr10_pq.mp4 Fixtures/media/h264_portrait.mp4; do
  cp "$f" "$work/av1-feed/"
done
"$VIDEOFEED" transcode "$work/av1-feed" --out "$work/av1-out" --codecs h264,av1 --preview-seconds 0 -q
while IFS= read -r f; do items+=("$f"); done < <(python3 - "$work/av1-out" <<'PY'
import json, os, sys
out = sys.argv[1]
count = 0
for line in open(os.path.join(out, "renditions.jsonl")):
    for r in json.loads(line)["renditions"]:
        if r["name"].endswith("-av1"):
            assert r["codecs"].startswith("av01."), r
            for path in (r["mp4"], r["playlist"]):
                print(os.path.join(out, path) + "#codecs=" + r["codecs"])
            count += 1
assert count >= 3, "fewer AV1 renditions than sources"
PY
)
echo "browser-test: ${#items[@]} outputs of $(ls "$work/feed" | wc -l) sources"
for webp in $(find "$work/out" -name preview.webp); do
  python3 - "$webp" <<'PY'
import sys
data = open(sys.argv[1], 'rb').read()
# An animation (ANIM + ANMF frames); a still's preview, every frame the same, is one plain WebP picture.
assert data[:4] == b'RIFF' and data[8:12] == b'WEBP', sys.argv[1]
assert (b'ANIM' in data[:64] and data.count(b'ANMF') >= 1) or data[12:16] in (b'VP8 ', b'VP8L'), sys.argv[1]
PY
done
python3 scripts/browser-check.py "${items[@]}"
