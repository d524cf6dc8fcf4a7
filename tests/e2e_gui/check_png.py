"""Checks a viewer screenshot: PNG structure, size, not blank, one colour per rank lane."""
import colorsys
import struct
import sys
import zlib

path, want_w, want_h, ranks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
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
assert (w, h) == (want_w, want_h), f"size {w}x{h}, expected {want_w}x{want_h}"
raw = zlib.decompress(idat)
stride = w * 3 + 1
pixels = {}
for y in range(h):
    assert raw[y * stride] == 0, "unexpected filter"
    row = raw[y * stride + 1:(y + 1) * stride]
    for x in range(0, len(row), 3):
        px = row[x:x + 3]
        pixels[px] = pixels.get(px, 0) + 1
assert len(pixels) > 20, f"only {len(pixels)} colours: blank?"
# The rank lanes' swatches: hue = rank * 0.618034 (mod 1), s 0.6, v 0.85 (timeline_view.cpp).
for r in range(ranks):
    want = [round(c * 255) for c in colorsys.hsv_to_rgb((r * 0.618034) % 1.0, 0.6, 0.85)]
    n = sum(cnt for px, cnt in pixels.items() if all(abs(px[i] - want[i]) <= 2 for i in range(3)))
    assert n >= 50, f"rank {r}: colour {want} found on {n} pixels"
print(f"{path}: {w}x{h}, {len(pixels)} colours, {ranks} rank colours present")
