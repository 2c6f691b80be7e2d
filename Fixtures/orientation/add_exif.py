#!/usr/bin/env python3
"""Writes a copy of a baseline JPEG with an EXIF APP1 segment carrying one tag, Orientation (0x0112).

    python3 add_exif.py IN.jpg ORIENTATION OUT.jpg

The segment goes right after SOI (before any other marker), little-endian TIFF ("II*\\0"), IFD0 with one entry:
exactly what a camera or `exiftool -Orientation#=N` leaves for the decoder to read. Standard library only, so the
output is the same bytes on every run.
"""
import struct
import sys


def exif_segment(orientation: int) -> bytes:
    tiff = b"II*\x00" + struct.pack("<I", 8)              # header, IFD0 at offset 8
    tiff += struct.pack("<H", 1)                           # one entry
    tiff += struct.pack("<HHIHH", 0x0112, 3, 1, orientation, 0)  # Orientation, SHORT, count 1, value (padded)
    tiff += struct.pack("<I", 0)                           # no next IFD
    body = b"Exif\x00\x00" + tiff
    return b"\xff\xe1" + struct.pack(">H", len(body) + 2) + body


def main() -> None:
    source, orientation, target = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if not 1 <= orientation <= 8:
        sys.exit("add_exif.py: orientation must be 1-8")
    data = open(source, "rb").read()
    if data[:2] != b"\xff\xd8":
        sys.exit(f"add_exif.py: {source} is not a JPEG")
    open(target, "wb").write(data[:2] + exif_segment(orientation) + data[2:])


main()
