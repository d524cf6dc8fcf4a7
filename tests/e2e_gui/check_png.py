"""Checks a screenshot: PNG structure, size, not blank.

  check_png.py PNG WIDTH HEIGHT RANKS   the viewer's (screenshot_test.sh): its own PNG format, more
                                        than 20 colours, one colour per rank lane
  check_png.py --page PNG WIDTH HEIGHT  headless Chromium's, of an HTML report
                                        (tests/e2e_report/html_screenshot.sh): more than 8 colours
                                        among pixels sampled every 7 columns of every 16th row
"""
import colorsys
import sys

from png_rgb import read_png  # beside this script (tests/e2e_gui/)


def check_page(path, want_w, want_h):
    w, h, rows = read_png(path, browser=True)
    assert (w, h) == (want_w, want_h), "size %dx%d, want %dx%d" % (w, h, want_w, want_h)
    colors = set()
    for y in range(0, h, 16):
        for x in range(0, w, 7):
            colors.add(rows[y][x * 3:x * 3 + 3])
    assert len(colors) > 8, "only %d colors: blank page?" % len(colors)
    print("ok: %dx%d, %d colors sampled" % (w, h, len(colors)))


def check_viewer(path, want_w, want_h, ranks):
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


if sys.argv[1] == "--page":
    check_page(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
else:
    check_viewer(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
