#!/usr/bin/env bash
# Regenerates the EXIF orientation fixtures in Fixtures/orientation/ with the ffmpeg CLI and add_exif.py, from a
# lavfi picture only (no third-party media), and verifies each with ffprobe: the frame's display matrix must be
# there (the JPEG decoder turns EXIF Orientation into frame side data; the stream has none).
#
#   bash Fixtures/orientation/generate.sh
#
#   exif_1.jpg … exif_8.jpg   the same 64x48 stored picture (mid-grey; a red 16x16 block top-left, green top-right,
#                             blue bottom-left, bottom-right grey) tagged with EXIF Orientation 1 … 8
#   stream_matrix.mov         exif_6.jpg's frame (EXIF 6: 90 deg clockwise) stream-copied into MOV with a stream
#                             display matrix of 180 deg: where the stream has a matrix it wins over the frame's
#
# Needs ffmpeg/ffprobe (written against FFmpeg 5.1, Debian 12) and python3. Same conventions as Fixtures/generate.sh:
# bitexact, single-threaded, no metadata, so a rerun on the same FFmpeg build gives byte-identical files.
set -euo pipefail
shopt -s inherit_errexit
export LC_ALL=C
cd "$(dirname "${BASH_SOURCE[0]}")"

for tool in ffmpeg ffprobe python3; do
  command -v "$tool" >/dev/null || { echo "generate.sh: $tool not found" >&2; exit 1; }
done

FF=(ffmpeg -nostdin -hide_banner -loglevel error -y)
DET=(-map_metadata -1 -map_chapters -1 -fflags +bitexact -flags:v +bitexact)
die() { printf 'generate.sh: FAILED: %s\n' "$*" >&2; exit 1; }

base=$(mktemp --suffix=.jpg)
trap 'rm -f "$base"' EXIT
# Blocks on the 16x16 MCU grid of 4:2:0, so JPEG keeps their colours clean.
"${FF[@]}" -f lavfi -i "color=c=0x808080:size=64x48:rate=1" -frames:v 1 \
  -vf "drawbox=x=0:y=0:w=16:h=16:c=red:t=fill,drawbox=x=48:y=0:w=16:h=16:c=lime:t=fill,drawbox=x=0:y=32:w=16:h=16:c=blue:t=fill" \
  -c:v mjpeg -q:v 2 -pix_fmt yuvj420p "${DET[@]}" -f image2 -update 1 "$base"

for n in 1 2 3 4 5 6 7 8; do
  python3 add_exif.py "$base" "$n" "exif_$n.jpg"
  side=$(ffprobe -v error -select_streams v:0 -show_frames "exif_$n.jpg" | grep -E '^(side_data_type|rotation)=' \
    | tr '\n' ' ' || true)
  if [[ $n == 1 ]]; then
    [[ -z $side ]] || die "exif_1.jpg: unexpected frame side data '$side'"
  else
    [[ $side == *displaymatrix* ]] || die "exif_$n.jpg: no frame display matrix ('$side')"
  fi
  size=$(stat -c %s "exif_$n.jpg")
  (( size < 4096 )) || die "exif_$n.jpg: $size bytes, over the 4 KB budget"
  printf 'exif_%s.jpg  %s bytes  side data: %s\n' "$n" "$size" "${side:-none}" >&2
done

# The stream's display matrix (the `rotate` tag on a stream copy) against the frame's EXIF one.
"${FF[@]}" -i exif_6.jpg -c copy -metadata:s:v:0 rotate=180 -map_metadata -1 -fflags +bitexact stream_matrix.mov
probe=$(ffprobe -v error -show_streams -show_frames stream_matrix.mov | grep -E '^rotation=' | tr '\n' ' ')
[[ $probe == *"rotation=-180"* && $probe == *"rotation=-90"* ]] || die "stream_matrix.mov: rotations '$probe'"
printf 'stream_matrix.mov  %s bytes  %s\n' "$(stat -c %s stream_matrix.mov)" "$probe" >&2
