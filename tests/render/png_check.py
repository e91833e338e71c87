#!/usr/bin/env python3
"""What a screenshot shows, read with the standard library only (no PIL):
prints its size, the share of pixels that are not white (ink) and the share
that are strongly coloured (a channel spread over 64: the figures' bars and
lines; the page's text and tables are grey).

usage: png_check.py SHOT.png
prints: WIDTHxHEIGHT INK_PERCENT COLOURED_PERCENT
Exits non-zero when the file is not an 8-bit RGB/RGBA PNG."""
import struct
import sys
import zlib


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit("%s: not a PNG" % path)
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            if depth != 8 or colour not in (2, 6):
                sys.exit("%s: colour type %d depth %d, expected 8-bit RGB(A)" % (path, colour, depth))
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + ((a + b) >> 1)) & 255
            elif f == 4:
                line[x] = (line[x] + paeth(a, b, c)) & 255
        rows.append(line)
        prev = line
    return width, height, bpp, rows


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    width, height, bpp, rows = read_png(sys.argv[1])
    ink = coloured = 0
    for line in rows:
        for x in range(0, len(line), bpp):
            r, g, b = line[x], line[x + 1], line[x + 2]
            if r & g & b != 255:
                ink += 1
                if max(r, g, b) - min(r, g, b) > 64:
                    coloured += 1
    total = float(width * height)
    print("%dx%d %.2f %.2f" % (width, height, 100 * ink / total, 100 * coloured / total))


if __name__ == "__main__":
    main()
