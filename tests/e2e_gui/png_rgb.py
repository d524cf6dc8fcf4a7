"""Reads screenshots: the viewer's (8-bit RGB PNGs with unfiltered rows, gui/model/png_writer.cpp)
and, with browser=True, a browser's (8-bit RGB or RGBA, any row filter).

Standard library only (struct + zlib, no PIL). Checks the signature, every chunk's CRC, the pixel
format and the filter bytes, so that a damaged file fails an assertion instead of reading as pixels.
"""
import struct
import zlib


def _unfilter(f, line, prev, bpp):
    """Undoes PNG row filter f (0-4) in place; prev is the previous row, unfiltered."""
    for i in range(len(line)):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255


def read_png(path, browser=False):
    """(width, height, rows): rows[y] holds image row y as bytes R, G, B, R, G, B, ...

    Only the viewer's format by default; browser=True also takes RGBA (alpha is dropped from the
    rows) and filtered rows (returned unfiltered).
    """
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w, h = 8, b"", None, None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in {kind}"
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            if browser:
                assert depth == 8 and ctype in (2, 6), (depth, ctype)
            else:
                assert depth == 8 and ctype == 2, "expected 8-bit RGB"
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    if not browser:
        stride = w * 3 + 1
        rows = []
        for y in range(h):
            assert raw[y * stride] == 0, "unexpected filter"
            rows.append(raw[y * stride + 1:(y + 1) * stride])
        return w, h, rows
    bpp = 3 if ctype == 2 else 4
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        _unfilter(f, line, prev, bpp)
        prev = line
        rgb = bytearray(w * 3)
        for k in range(3):
            rgb[k::3] = line[k::bpp]
        rows.append(bytes(rgb))
    return w, h, rows
