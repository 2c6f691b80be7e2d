#!/usr/bin/env bash
# Regenerates the sample-aspect-ratio fixtures in Fixtures/aspect/ with the ffmpeg CLI, from lavfi sources only, and
# verifies each with ffprobe right after making it: a file whose container and bitstream do not disagree the way its
# name says stops the script with "FAILED".
#
#   bash Fixtures/aspect/generate.sh
#
#   h263_qcif.3gp        H.263 176x144 (QCIF) in 3GP. The H.263 picture header implies pixels 12:11 wide (FFmpeg's
#                        decoder reports 12:11); the container's pasp box says 1:1, and FFmpeg takes the container's.
#   pasp_over_vui.mp4    H.264 160x120 (4:3) whose SPS VUI says SAR 27:64 while the MP4 pasp box says 1:1, the shape of
#                        a Samsung slow-motion clip: FFmpeg shows it 4:3 (1:1), not 9:16 (27:64).
#   vui_only.mp4         the same picture with the VUI SAR 27:64 and no pasp box: then the bitstream's SAR is the one,
#                        and FFmpeg shows it 9:16.
#
# The rule is libavformat's av_guess_sample_aspect_ratio: the stream's (container's) SAR when it is valid, else the
# codec's (the bitstream's, or a decoded frame's). Needs ffmpeg/ffprobe (FFmpeg 5.1, Debian 12) with libx264 and the
# h264_metadata bitstream filter. Same conventions as Fixtures/generate.sh: single-threaded bitexact encodes.
set -euo pipefail
shopt -s inherit_errexit
export LC_ALL=C
cd "$(dirname "${BASH_SOURCE[0]}")"

for tool in ffmpeg ffprobe; do
  command -v "$tool" >/dev/null || { echo "generate.sh: $tool not found" >&2; exit 1; }
done

FF=(ffmpeg -nostdin -hide_banner -loglevel error -y)
DET=(-map_metadata -1 -map_chapters -1 -fflags +bitexact -flags:v +bitexact)
X264=(-c:v libx264 -threads 1 -preset fast -crf 30 -pix_fmt yuv420p)
SRC="testsrc2=size=160x120:rate=30:duration=0.5"

log() { printf '%s\n' "$*" >&2; }
die() { printf 'generate.sh: FAILED: %s\n' "$*" >&2; exit 1; }
# stream FILE KEYS -> ffprobe's values for the first video stream, comma-separated, in ffprobe's order
stream() { ffprobe -v error -select_streams v:0 -show_entries "stream=$2" -of csv=p=0 "$1"; }
# frame_sar FILE -> the first decoded frame's SAR as ffprobe -show_frames reports it
frame_sar() { ffprobe -v error -select_streams v:0 -read_intervals '%+#1' -show_entries frame=sample_aspect_ratio -of default=nw=1:nk=1 "$1"; }
# bitstream_sar FILE -> the SAR the decoder alone sees (the elementary stream, no container)
bitstream_sar() {
  local tmp; tmp=$(mktemp -d)
  "${FF[@]}" -i "$1" -map 0:v -c copy -f "$2" "$tmp/es"
  stream "$tmp/es" sample_aspect_ratio
  rm -r "$tmp"
}
expect() { [[ "$3" == "$4" ]] || die "$1: $2 is '$3', wanted '$4'"; }
has_pasp() { grep -c pasp "$1" || true; }
check_size() { local n; n=$(stat -c %s "$1"); (( n <= 60 * 1024 )) || die "$1: $n bytes, over 60 KB"; }

rm -f h263_qcif.3gp pasp_over_vui.mp4 vui_only.mp4

log "h263_qcif.3gp"
"${FF[@]}" -f lavfi -i "testsrc2=size=176x144:rate=15:duration=0.5" -c:v h263 -threads 1 -q:v 8 \
  "${DET[@]}" h263_qcif.3gp
expect h263_qcif.3gp "codec,WxH,SAR,DAR" "$(stream h263_qcif.3gp codec_name,width,height,sample_aspect_ratio,display_aspect_ratio)" \
  "h263,176,144,1:1,11:9"
expect h263_qcif.3gp "frame SAR" "$(frame_sar h263_qcif.3gp)" "1:1"
expect h263_qcif.3gp "bitstream SAR" "$(bitstream_sar h263_qcif.3gp h263)" "12:11"
check_size h263_qcif.3gp

log "pasp_over_vui.mp4"
# setsar=1 makes the muxer write pasp 1:1; the bitstream filter rewrites only the SPS.
"${FF[@]}" -f lavfi -i "$SRC,setsar=1" "${X264[@]}" -bsf:v h264_metadata=sample_aspect_ratio=27/64 \
  "${DET[@]}" pasp_over_vui.mp4
expect pasp_over_vui.mp4 "codec,WxH,SAR,DAR" \
  "$(stream pasp_over_vui.mp4 codec_name,width,height,sample_aspect_ratio,display_aspect_ratio)" "h264,160,120,1:1,4:3"
expect pasp_over_vui.mp4 "frame SAR" "$(frame_sar pasp_over_vui.mp4)" "1:1"
expect pasp_over_vui.mp4 "bitstream SAR" "$(bitstream_sar pasp_over_vui.mp4 h264)" "27:64"
expect pasp_over_vui.mp4 "pasp boxes" "$(has_pasp pasp_over_vui.mp4)" 1
check_size pasp_over_vui.mp4

log "vui_only.mp4"
# setsar=0 (unknown) makes the muxer leave pasp out.
"${FF[@]}" -f lavfi -i "$SRC,setsar=0" "${X264[@]}" -bsf:v h264_metadata=sample_aspect_ratio=27/64 \
  "${DET[@]}" vui_only.mp4
expect vui_only.mp4 "codec,WxH,SAR,DAR" \
  "$(stream vui_only.mp4 codec_name,width,height,sample_aspect_ratio,display_aspect_ratio)" "h264,160,120,27:64,9:16"
expect vui_only.mp4 "frame SAR" "$(frame_sar vui_only.mp4)" "27:64"
expect vui_only.mp4 "pasp boxes" "$(has_pasp vui_only.mp4)" 0
check_size vui_only.mp4

log "done: $(du -ch h263_qcif.3gp pasp_over_vui.mp4 vui_only.mp4 | tail -1 | cut -f1) in Fixtures/aspect/"
