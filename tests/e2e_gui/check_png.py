"""Checks a viewer screenshot: PNG structure, size, not blank, one colour per rank lane."""
import colorsys
import sys

from png_rgb import read_png  # beside this script (tests/e2e_gui/)

path, want_w, want_h, ranks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
w, h, rows = read_png(path)
assert (w, h) == (want_w, want_h), f"size {w}x{h}, expected {want_w}x{want_h}"
pixels = {}
for row in rows:
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
