#!/usr/bin/env bash
# Regenerates Fixtures/duration/: clips whose container claims another duration than their pictures have, made with
# the ffmpeg CLI from lavfi sources (no third-party media) and a few bytes patched by python3, then verified: each
# file's claim (read from its boxes, or from ffprobe) and the end of what ffmpeg decodes must differ as named.
#
#   bash Fixtures/duration/generate.sh      (also run by Fixtures/generate.sh)
#
#   frag_unknown_duration.mp4  fragmented MP4 (frag_keyframe+empty_moov+default_base_moof, no mfra), H.264 320x240
#                              30 fps 2.5 s + AAC mono; mvhd and the video's mdhd in timescale 30000; mvhd, mehd, tkhd
#                              and mdhd durations all ones ("unknown"): the header claims 0xFFFFFFFF / 30000 =
#                              143,165.6 s (ffprobe says so too)
#   moov_claims_long.mp4       plain MP4 (moov at the end), H.264 2 s + AAC; mvhd and tkhd claim 3,600 s (the sample
#                              tables hold 2 s)
#   truncated.ts               MPEG-TS H.264 4 s + AAC, cut at 45 % of its bytes, mid-packet
#   no_duration.webm           WebM VP9 2 s written to a pipe: no duration, no cues
#
# Same conventions as Fixtures/generate.sh: single-threaded encoders with bitexact flags, no metadata.
set -euo pipefail
shopt -s inherit_errexit
export LC_ALL=C
cd "$(dirname "${BASH_SOURCE[0]}")"
for tool in ffmpeg ffprobe python3; do
  command -v "$tool" >/dev/null || { echo "generate.sh: $tool not found" >&2; exit 1; }
done

FF=(ffmpeg -nostdin -hide_banner -loglevel error -y)
DET=(-map_metadata -1 -map_chapters -1 -fflags +bitexact -flags:v +bitexact -flags:a +bitexact)
X264=(-c:v libx264 -threads 1 -pix_fmt yuv420p -preset fast -crf 32)
log() { printf '%s\n' "$*" >&2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
rm -f frag_unknown_duration.mp4 moov_claims_long.mp4 truncated.ts no_duration.webm

# patch.py IN OUT MODE: rewrites the boxes of an MP4. MODE "unknown": mvhd, tkhd and mehd durations all ones (a mehd
# is added to mvex when missing), mfra dropped. MODE "long": mvhd and tkhd durations set to 3,600 s.
cat > "$TMP/patch.py" <<'PY'
import struct, sys
src, dst, mode = sys.argv[1:4]
data = open(src, "rb").read()
def boxes(off, end):
    while off + 8 <= end:
        size, kind = struct.unpack(">I4s", data[off:off + 8])
        yield kind.decode("latin1"), off, size
        off += size
timescale = None
def rebuild(off, end):
    global timescale
    out = b""
    for kind, at, size in boxes(off, end):
        body = bytearray(data[at + 8:at + size])
        if kind == "mfra" and mode == "unknown":
            continue
        if kind in ("moov", "trak", "mvex", "mdia"):
            body = bytearray(rebuild(at + 8, at + size))
            if kind == "mvex" and mode == "unknown" and b"mehd" not in bytes(body):
                body = bytearray(struct.pack(">I4sII", 16, b"mehd", 0, 0xFFFFFFFF)) + body
        if kind == "mvhd":
            assert body[0] == 0, "mvhd version 0 expected"
            timescale = struct.unpack(">I", body[12:16])[0]
            body[16:20] = struct.pack(">I", 0xFFFFFFFF if mode == "unknown" else 3600 * timescale)
        elif kind == "tkhd":
            assert body[0] == 0, "tkhd version 0 expected"
            body[20:24] = struct.pack(">I", 0xFFFFFFFF if mode == "unknown" else 3600 * timescale)
        elif kind == "mehd":
            n = 8 if body[0] == 1 else 4
            body[4:4 + n] = b"\xff" * n
        elif kind == "mdhd" and mode == "unknown":
            assert body[0] == 0, "mdhd version 0 expected"
            body[16:20] = b"\xff" * 4
        out += struct.pack(">I4s", len(body) + 8, kind.encode("latin1")) + bytes(body)
    return out
open(dst, "wb").write(rebuild(0, len(data)))
PY

log "duration/frag_unknown_duration.mp4"
"${FF[@]}" -f lavfi -i "testsrc2=size=320x240:rate=30:duration=2.5" \
  -f lavfi -i "sine=frequency=440:sample_rate=44100:duration=2.5" \
  "${X264[@]}" -g 30 -c:a aac -b:a 32k -ac 1 "${DET[@]}" \
  -movflags frag_keyframe+empty_moov+default_base_moof -movie_timescale 30000 -video_track_timescale 30000 \
  -f mp4 "$TMP/frag.mp4"
python3 "$TMP/patch.py" "$TMP/frag.mp4" frag_unknown_duration.mp4 unknown

log "duration/moov_claims_long.mp4"
"${FF[@]}" -f lavfi -i "testsrc2=size=320x240:rate=30:duration=2" \
  -f lavfi -i "sine=frequency=440:sample_rate=44100:duration=2" \
  "${X264[@]}" -g 30 -c:a aac -b:a 32k -ac 1 "${DET[@]}" "$TMP/long.mp4"
python3 "$TMP/patch.py" "$TMP/long.mp4" moov_claims_long.mp4 long

log "duration/truncated.ts"
"${FF[@]}" -f lavfi -i "testsrc2=size=320x240:rate=30:duration=4" \
  -f lavfi -i "sine=frequency=440:sample_rate=44100:duration=4" \
  "${X264[@]}" -g 30 -c:a aac -b:a 32k -ac 1 "${DET[@]}" -f mpegts "$TMP/whole.ts"
size=$(stat -c %s "$TMP/whole.ts")
head -c $(( size * 45 / 100 / 188 * 188 + 100 )) "$TMP/whole.ts" > truncated.ts

log "duration/no_duration.webm"
"${FF[@]}" -f lavfi -i "testsrc2=size=160x120:rate=25:duration=2" \
  -c:v libvpx-vp9 -threads 1 -row-mt 0 -deadline good -cpu-used 8 -b:v 0 -crf 45 -pix_fmt yuv420p -g 25 \
  "${DET[@]}" -f webm pipe:1 | cat > no_duration.webm

# ---------------------------------------------------------------------------
# Verification: the claim in the header and the end of what ffmpeg decodes (last frame's pts + duration).
# ---------------------------------------------------------------------------
python3 - <<'PY'
import json, struct, subprocess, sys
def fail(msg):
    sys.exit("generate.sh: FAILED: " + msg)
def decoded_end(path):
    out = subprocess.run(["ffmpeg", "-v", "error", "-noautorotate", "-i", path, "-map", "0:v:0", "-fps_mode",
                          "passthrough", "-f", "framemd5", "-"], capture_output=True, text=True).stdout
    tb, end, n = None, 0.0, 0
    for line in out.splitlines():
        if line.startswith("#tb 0:"):
            a, b = line.split(":")[1].strip().split("/")
            tb = int(a) / int(b)
        elif line and not line.startswith("#"):
            f = [x.strip() for x in line.split(",")]
            end = max(end, (int(f[2]) + int(f[3])) * tb)
            n += 1
    return end, n
def mp4_field(path, kind, offset):
    data = open(path, "rb").read()
    def find(off, end):
        while off + 8 <= end:
            size, k = struct.unpack(">I4s", data[off:off + 8])
            if k.decode() == kind:
                return off + 8
            if k.decode() in ("moov", "trak", "mvex"):
                found = find(off + 8, off + size)
                if found: return found
            off += size
    at = find(0, len(data))
    return struct.unpack(">I", data[at + offset:at + offset + 4])[0]
def claim(path):
    return float(json.loads(subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of",
                                            "json", path], capture_output=True, text=True).stdout)["format"]["duration"])

end, n = decoded_end("frag_unknown_duration.mp4")
scale = mp4_field("frag_unknown_duration.mp4", "mvhd", 12)
header = mp4_field("frag_unknown_duration.mp4", "mvhd", 16) / scale
if scale != 30000 or abs(header - 143165.577) > 0.01 or mp4_field("frag_unknown_duration.mp4", "mehd", 4) != 0xFFFFFFFF:
    fail(f"frag_unknown_duration.mp4: mvhd claims {header} s in timescale {scale}")
if abs(claim("frag_unknown_duration.mp4") - 143165.577) > 0.1:
    fail(f"frag_unknown_duration.mp4: ffprobe says {claim('frag_unknown_duration.mp4')} s, not 143,165.6 s")
if not (2.4 < end < 2.7) or n < 70:
    fail(f"frag_unknown_duration.mp4 decodes {n} frames ending at {end} s")
print(f"frag_unknown_duration.mp4: header claims {header:.3f} s, ffprobe {claim('frag_unknown_duration.mp4')} s, "
      f"{n} frames decode, ending at {end:.3f} s", file=sys.stderr)

end, n = decoded_end("moov_claims_long.mp4")
header = mp4_field("moov_claims_long.mp4", "mvhd", 16) / mp4_field("moov_claims_long.mp4", "mvhd", 12)
if header != 3600 or not (1.9 < end < 2.2):
    fail(f"moov_claims_long.mp4: claims {header} s, decodes to {end} s")
print(f"moov_claims_long.mp4: header claims {header} s, ffprobe {claim('moov_claims_long.mp4')} s, "
      f"decodes to {end:.3f} s", file=sys.stderr)

end, n = decoded_end("truncated.ts")
if not (1.0 < end < 3.0):
    fail(f"truncated.ts decodes to {end} s")
print(f"truncated.ts: ffprobe {claim('truncated.ts')} s, {n} frames decode, ending at {end:.3f} s", file=sys.stderr)

end, n = decoded_end("no_duration.webm")
info = json.loads(subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration:stream=duration",
                                  "-of", "json", "no_duration.webm"], capture_output=True, text=True).stdout)
if not (1.9 < end < 2.1) or "duration" in info["streams"][0]:
    fail(f"no_duration.webm: decodes to {end} s, streams {info['streams']}")
print(f"no_duration.webm: ffprobe estimates {info['format'].get('duration')} s, decodes to {end:.3f} s", file=sys.stderr)
PY
ls -l frag_unknown_duration.mp4 moov_claims_long.mp4 truncated.ts no_duration.webm >&2
