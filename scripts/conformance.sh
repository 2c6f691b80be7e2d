#!/usr/bin/env bash
# Compares `videofeed dump --format framemd5` with ffmpeg's own framemd5 for every file of a folder, then
# `videofeed probe --json` with ffprobe field by field and the thumbnails' aspect with ffprobe's display aspect
# (scripts/probe-conformance.py; its lines follow a "probe:" heading). HEIC/AVIF photos, which FFmpeg 5.1 cannot be
# the reference for, are checked against their own boxes instead (scripts/photo-conformance.py, after "photos:").
#
#   scripts/conformance.sh DIR            (VIDEOFEED=path/to/videofeed to pick the binary)
#
# Every regular file is compared except notes (*.md, *.tsv) and hidden files. One line per file: identical / identical hashes (timestamps differ) / differs / both fail / only ffmpeg fails /
# only videofeed fails; then a summary and a last line "N/M identical", where a file counts as identical when the
# hash columns (the decoded pictures) are equal. Exit status 0 unless a file differs or only one side fails, in the
# decoding or in the probe comparison.
set -uo pipefail

dir=${1:?usage: scripts/conformance.sh DIR}
[ -d "$dir" ] || { echo "conformance: $dir is not a folder" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${VIDEOFEED:-}
if [ -z "$bin" ]; then
    bin="$(cd "$root" && swift build -c release --show-bin-path 2>/dev/null)/videofeed"
    [ -x "$bin" ] || (cd "$root" && swift build -c release >/dev/null) || exit 2
fi
command -v ffmpeg >/dev/null || { echo "conformance: ffmpeg is not installed (make deps)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
total=0; identical=0; bothfail=0; differs=0; onlyone=0

hashes() { grep -v '^#' "$1" | awk -F', *' '{print $6}'; }

while IFS= read -r -d '' file; do
    name=${file#"$dir"/}
    # A HEIF photo: libheif decodes it, not FFmpeg; photo-conformance.py checks it below.
    python3 "$root/scripts/photo-conformance.py" --is-photo "$file" && continue
    total=$((total + 1))
    timeout 120 ffmpeg -nostdin -hide_banner -loglevel error -noautorotate -i "$file" -map 0:v:0 \
        -fps_mode passthrough -f framemd5 - >"$work/ff" 2>"$work/ff.err"
    ff_status=$?
    timeout 120 "$bin" dump --format framemd5 "$file" >"$work/vf" 2>"$work/vf.err"
    vf_status=$?
    ff_frames=$(grep -vc '^#' "$work/ff")
    vf_frames=$(grep -vc '^#' "$work/vf")
    ff_ok=$(( ff_status == 0 && ff_frames > 0 ))
    vf_ok=$(( vf_status == 0 && vf_frames > 0 ))
    if (( ff_ok && vf_ok )); then
        if cmp -s "$work/ff" "$work/vf"; then
            identical=$((identical + 1)); verdict="identical ($vf_frames frames)"
        elif [ "$(hashes "$work/ff")" = "$(hashes "$work/vf")" ]; then
            identical=$((identical + 1)); verdict="identical hashes, header or timestamps differ ($vf_frames frames)"
        else
            differs=$((differs + 1)); verdict="differs (ffmpeg $ff_frames frames, videofeed $vf_frames)"
        fi
    elif (( !ff_ok && !vf_ok )); then
        bothfail=$((bothfail + 1))
        verdict="both fail — videofeed: $(tail -n 1 "$work/vf.err" | sed 's/^videofeed: //')"
    elif (( ff_ok )); then
        onlyone=$((onlyone + 1)); verdict="only videofeed fails: $(tail -n 1 "$work/vf.err")"
    else
        onlyone=$((onlyone + 1)); verdict="only ffmpeg fails ($vf_frames frames from videofeed): $(tail -n 1 "$work/ff.err")"
    fi
    printf '%-52s %s\n' "$name" "$verdict"
done < <(find "$dir" -type f ! -name '*.md' ! -name '*.tsv' ! -name '.*' -print0 | sort -z)

echo "summary: $identical identical, $differs differ, $bothfail both fail, $onlyone only one side fails"
echo "$identical/$total identical"
decode_ok=$(( differs == 0 && onlyone == 0 ))

echo "probe:"
python3 "$root/scripts/probe-conformance.py" --bin "$bin" "$dir"
probe_status=$?

echo "photos:"
python3 "$root/scripts/photo-conformance.py" --bin "$bin" "$dir"
photo_status=$?
(( decode_ok && probe_status == 0 && photo_status == 0 ))
