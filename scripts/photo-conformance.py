#!/usr/bin/env python3
"""Checks every HEIC/AVIF photo of a folder (a file whose ftyp names a HEIF image: mif1, heic, avif ...) against its
own boxes, since FFmpeg 5.1 cannot be the reference (it cannot open HEIF and misreads AVIF stills).

Per photo, the expected upright size is worked out here from the primary item's properties, independently of
libheif: `ispe` (the stored size; a grid's is the output size), then `clap` (the clean aperture), then `irot` (a
quarter turn swaps the axes); `imir` keeps the size. EXIF Orientation is read too and shown, but never applied: in a
HEIF the transformation properties decide, and EXIF only repeats them (docs/thumbnails.md). Then:
  - `videofeed probe --json`: the item is a photo (`photo` set), its one video stream has the expected size;
  - `videofeed dump --format framemd5`: exactly one picture decodes;
  - `videofeed thumbs --format png`: the thumbnail has the expected aspect, within one pixel.

    python3 scripts/photo-conformance.py [--bin videofeed] FOLDER
    python3 scripts/photo-conformance.py --is-photo FILE     (exit 0 when FILE is a HEIF photo; for the other scripts)

One line per photo (`ok` and what it is, or what failed), then "N/M photos ok". Exit status 1 when any photo fails.
"""
import argparse, json, os, shutil, struct, subprocess, sys, tempfile

IMAGE_BRANDS = {b"mif1", b"mif2", b"heic", b"heix", b"heim", b"heis", b"avif", b"avio"}


def brands(path):
    """The ftyp major and compatible brands, or None when the file starts with no ftyp box."""
    with open(path, "rb") as f:
        head = f.read(256)
    if len(head) < 16 or head[4:8] != b"ftyp":
        return None
    size = min(struct.unpack(">I", head[:4])[0], len(head))
    return [head[8:12]] + [head[i:i + 4] for i in range(16, size - 3, 4)]


def is_photo(path):
    found = brands(path)
    return bool(found) and any(b in IMAGE_BRANDS for b in found)


def boxes(data, start, end):
    """(type, payload start, payload end) of each box in data[start:end]."""
    at = start
    while at + 8 <= end:
        size, kind = struct.unpack(">I4s", data[at:at + 8])
        head = 8
        if size == 1:
            size, head = struct.unpack(">Q", data[at + 8:at + 16])[0], 16
        elif size == 0:
            size = end - at
        if size < head or at + size > end:
            return
        yield kind, at + head, at + size
        at += size


def child(data, start, end, kind):
    return next(((s, e) for k, s, e in boxes(data, start, end) if k == kind), None)


def expected(path):
    """What the primary item's properties say: (width, height) upright, irot angle, imir axis, EXIF orientation."""
    data = open(path, "rb").read()
    meta = child(data, 0, len(data), b"meta")
    if not meta:
        raise ValueError("no meta box")
    start, end = meta[0] + 4, meta[1]  # full box
    pitm = child(data, start, end, b"pitm")
    version = data[pitm[0]]
    primary = struct.unpack(">H" if version == 0 else ">I", data[pitm[0] + 4:pitm[0] + (6 if version == 0 else 8)])[0]
    iprp = child(data, start, end, b"iprp")
    ipco = child(data, iprp[0], iprp[1], b"ipco")
    properties = [(k, s, e) for k, s, e in boxes(data, ipco[0], ipco[1])]
    ipma = child(data, iprp[0], iprp[1], b"ipma")
    version, flags = data[ipma[0]], int.from_bytes(data[ipma[0] + 1:ipma[0] + 4], "big")
    at = ipma[0] + 4
    count = struct.unpack(">I", data[at:at + 4])[0]
    at += 4
    linked = []
    for _ in range(count):
        item = struct.unpack(">H" if version < 1 else ">I", data[at:at + (2 if version < 1 else 4)])[0]
        at += 2 if version < 1 else 4
        n = data[at]
        at += 1
        for _ in range(n):
            if flags & 1:
                index = struct.unpack(">H", data[at:at + 2])[0] & 0x7FFF
                at += 2
            else:
                index = data[at] & 0x7F
                at += 1
            if item == primary and index > 0:
                linked.append(properties[index - 1])
    width = height = 0
    angle, mirror = 0, None
    for kind, s, e in linked:
        if kind == b"ispe":
            width, height = struct.unpack(">II", data[s + 4:s + 12])
        elif kind == b"clap":
            wn, wd, hn, hd = struct.unpack(">IIII", data[s:s + 16])
            width, height = round(wn / wd), round(hn / hd)
        elif kind == b"irot":
            angle = (data[s] & 3) * 90
            if angle % 180:
                width, height = height, width
        elif kind == b"imir":
            mirror = "vertical axis" if data[s] & 1 == 0 else "horizontal axis"
    return (width, height), angle, mirror, exif_orientation(data, start, end, primary)


def exif_orientation(data, start, end, primary):
    """The EXIF Orientation of the file's Exif item, if it has one and says; only read, never applied."""
    try:
        iinf = child(data, start, end, b"iinf")
        version = data[iinf[0]]
        first = iinf[0] + 4 + (2 if version == 0 else 4)
        exif_id = None
        for kind, s, e in boxes(data, first, iinf[1]):
            if kind == b"infe" and data[s] >= 2:
                wide = data[s] >= 3
                item = struct.unpack(">I" if wide else ">H", data[s + 4:s + (8 if wide else 6)])[0]
                at = s + (8 if wide else 6) + 2
                if data[at:at + 4] == b"Exif":
                    exif_id = item
        iloc = child(data, start, end, b"iloc")
        if exif_id is None or not iloc:
            return None
        s = iloc[0]
        version = data[s]
        sizes = data[s + 4], data[s + 5]
        off_size, len_size, base_size = sizes[0] >> 4, sizes[0] & 15, sizes[1] >> 4
        index_size = sizes[1] & 15 if version in (1, 2) else 0
        at = s + 6
        count = struct.unpack(">H" if version < 2 else ">I", data[at:at + (2 if version < 2 else 4)])[0]
        at += 2 if version < 2 else 4
        read = lambda n: (int.from_bytes(data[at:at + n], "big"), at + n)
        for _ in range(count):
            item, at = read(2 if version < 2 else 4)
            if version in (1, 2):
                at += 2
            at += 2
            base, at = read(base_size)
            extents, at = read(2)
            place = None
            for _ in range(extents):
                if index_size:
                    _, at = read(index_size)
                offset, at = read(off_size)
                length, at = read(len_size)
                place = place or (base + offset, length)
            if item == exif_id and place:
                blob = data[place[0]:place[0] + place[1]]
                tiff = blob[4 + struct.unpack(">I", blob[:4])[0]:]
                big = tiff[:2] == b"MM"
                u16 = lambda b: struct.unpack(">H" if big else "<H", b)[0]
                u32 = lambda b: struct.unpack(">I" if big else "<I", b)[0]
                ifd = u32(tiff[4:8])
                for i in range(u16(tiff[ifd:ifd + 2])):
                    entry = tiff[ifd + 2 + 12 * i: ifd + 14 + 12 * i]
                    if u16(entry[:2]) == 0x0112:
                        return u16(entry[8:10])
    except (TypeError, IndexError, struct.error, ValueError):
        return None
    return None


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    return struct.unpack(">II", head[16:24]) if head[:8] == b"\x89PNG\r\n\x1a\n" else None


def check(binary, path, work):
    """What is wrong with `path` as videofeed shows it (empty when nothing), and a description."""
    problems = []
    try:
        (width, height), angle, mirror, exif = expected(path)
    except (TypeError, IndexError, struct.error, ValueError) as error:
        return [f"its boxes cannot be read ({error})"], ""
    what = f"{width}x{height} upright, irot {angle}° anticlockwise" + (f", imir {mirror}" if mirror else "") \
        + (f", EXIF Orientation {exif} (not applied)" if exif else "")
    run = subprocess.run([binary, "probe", "--json", path], capture_output=True, text=True, timeout=300)
    try:
        entry = json.loads(run.stdout)[0]
    except (ValueError, IndexError):
        entry = {}
    info = entry.get("info")
    if not info:
        return [f"probe fails: {(entry.get('error') or {}).get('message', run.stderr.strip())}"], what
    video = [s for s in info.get("streams", []) if s.get("kind") == "video"]
    if not info.get("photo"):
        problems.append("probe does not take it for a photo")
    if len(video) != 1 or (video[0].get("width"), video[0].get("height")) != (width, height):
        problems.append(f"probe size {[(s.get('width'), s.get('height')) for s in video]}, expected {width}x{height}")
    dump = subprocess.run([binary, "dump", "--format", "framemd5", path], capture_output=True, text=True, timeout=300)
    frames = [line for line in dump.stdout.splitlines() if line and not line.startswith("#")]
    if dump.returncode != 0 or len(frames) != 1:
        problems.append(f"dump gave {len(frames)} pictures (exit {dump.returncode}): {dump.stderr.strip()[-200:]}")
    items, out = os.path.join(work, "items"), os.path.join(work, "out")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(items)
    shutil.copyfile(path, os.path.join(items, "photo" + os.path.splitext(path)[1]))
    subprocess.run([binary, "thumbs", items, "--out", out, "--format", "png", "-q", "--jobs", "1"],
                   capture_output=True, text=True, timeout=300)
    size = png_size(os.path.join(out, "photo.png")) if os.path.exists(os.path.join(out, "photo.png")) else None
    if not size:
        problems.append("no thumbnail")
    else:
        w, h = size
        if abs(h - w * height / width) > 1:
            problems.append(f"thumbnail {w}x{h}, expected the aspect of {width}x{height}")
        what += f", thumbnail {w}x{h}"
    return problems, what


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?")
    parser.add_argument("--bin", default=os.environ.get("VIDEOFEED"))
    parser.add_argument("--is-photo", metavar="FILE")
    args = parser.parse_args()
    if args.is_photo:
        sys.exit(0 if is_photo(args.is_photo) else 1)
    if not args.folder:
        parser.error("a folder is needed")
    binary = args.bin or os.path.join(subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"],
                                                     capture_output=True, text=True).stdout.strip(), "videofeed")
    files = sorted(os.path.join(root, name) for root, _, names in os.walk(args.folder) for name in names
                   if not name.startswith(".") and is_photo(os.path.join(root, name)))
    work = tempfile.mkdtemp(prefix="vfe-photo.")
    ok = 0
    try:
        for path in files:
            problems, what = check(binary, path, os.path.join(work, "one"))
            name = os.path.relpath(path, args.folder)
            if problems:
                print(f"{name:52} FAILS — {'; '.join(problems)} ({what})")
            else:
                ok += 1
                print(f"{name:52} ok — {what}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{ok}/{len(files)} photos ok")
    sys.exit(0 if ok == len(files) else 1)


if __name__ == "__main__":
    main()
