"""Reads the viewer's screenshots: 8-bit RGB PNGs with unfiltered rows (gui/model/png_writer.cpp).

Standard library only (struct + zlib, no PIL). Checks the signature, every chunk's CRC, the pixel
format and the filter bytes, so that a damaged file fails an assertion instead of reading as pixels.
"""
import struct
import zlib


def read_png(path):
    """(width, height, rows): rows[y] holds image row y as bytes R, G, B, R, G, B, ..."""
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
            assert depth == 8 and ctype == 2, "expected 8-bit RGB"
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = w * 3 + 1
    rows = []
    for y in range(h):
        assert raw[y * stride] == 0, "unexpected filter"
        rows.append(raw[y * stride + 1:(y + 1) * stride])
    return w, h, rows
