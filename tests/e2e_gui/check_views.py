"""Checks screenshots of the viewer's topology, traffic matrix and statistics views.

  check_views.py topology PNG LAYOUT.json RANKS   idle grey exactly on the idle edges, one node per rank
  check_views.py matrix PNG MATRIX.csv           heat colours present, as many hot cells as the CSV says
  check_views.py stats PNG STATS.csv             a table with text rows, the CSV's rows

The layout JSON comes from `ringside view --dump-layout` (the geometry the frame was drawn with).
Colours: gui/model/palette.cpp (idle grey 158,158,158; the load ramp ends at 225,45,35).
"""
import csv
import json
import sys

from png_rgb import read_png  # beside this script (tests/e2e_gui/)


def near(px, want, tol):
    return all(abs(px[i] - want[i]) <= tol for i in range(3))


def pixel(rows, w, h, x, y):
    x, y = int(round(x)), int(round(y))
    if x < 0 or y < 0 or x >= w or y >= h:
        return (0, 0, 0)
    r = rows[y]
    return tuple(r[3 * x:3 * x + 3])


def around(rows, w, h, x, y, want, tol, radius=1):
    for dy in range(-radius, radius + 1):
        for dx in range(-radius, radius + 1):
            if near(pixel(rows, w, h, x + dx, y + dy), want, tol):
                return True
    return False


def seg_dist(px, py, e):
    x0, y0, x1, y1 = e["x0"], e["y0"], e["x1"], e["y1"]
    dx, dy = x1 - x0, y1 - y0
    l2 = dx * dx + dy * dy
    t = 0 if l2 == 0 else max(0.0, min(1.0, ((px - x0) * dx + (py - y0) * dy) / l2))
    return ((px - x0 - t * dx) ** 2 + (py - y0 - t * dy) ** 2) ** 0.5


def check_topology(png, layout_path, ranks):
    w, h, rows = read_png(png)
    lay = json.load(open(layout_path))
    idle = lay["idle_color"]
    nodes, edges = lay["nodes"], lay["edges"]
    assert len(nodes) == ranks, f"{len(nodes)} nodes, expected {ranks}"
    assert sorted(n["rank"] for n in nodes) == list(range(ranks)), "one node per rank"
    for n in nodes:  # the rank's colour fills its node
        hits = sum(near(pixel(rows, w, h, n["x"] + dx, n["y"] + dy), n["color"], 3)
                   for dx in range(-4, 5) for dy in range(-4, 5) if abs(dx) + abs(dy) > 3)
        assert hits >= 20, f"rank {n['rank']}: its colour {n['color']} on {hits} pixels of its node"
    n_idle = 0
    for e in edges:
        name = f"{e['src']}->{e['dst']}"
        samples = grey = own = 0
        length = ((e["x1"] - e["x0"]) ** 2 + (e["y1"] - e["y0"]) ** 2) ** 0.5
        steps = max(10, int(length))
        for i in range(steps + 1):  # the middle half: away from nodes, arrowheads and crossings at the ends
            t = 0.25 + 0.5 * i / steps
            x, y = e["x0"] + t * (e["x1"] - e["x0"]), e["y0"] + t * (e["y1"] - e["y0"])
            samples += 1
            grey += around(rows, w, h, x, y, idle, 10)
            own += around(rows, w, h, x, y, e["color"], 10)
        if e["idle"]:
            n_idle += 1
            assert e["color"] == idle, f"{name}: idle edge with colour {e['color']}"
            assert grey >= 0.35 * samples, f"{name}: idle grey on {grey} of {samples} samples (dashed)"
            assert grey <= 0.9 * samples, f"{name}: idle line not dashed ({grey} of {samples})"
        else:
            assert e["color"] != idle, f"{name}: used edge drawn in the idle colour"
            assert grey == 0, f"{name}: idle grey on {grey} samples of a link with traffic"
            assert own >= 0.9 * samples, f"{name}: its colour {e['color']} on {own} of {samples} samples"
    # Nowhere else in the graph: idle grey only within 3 px of an idle edge (the legend is outside).
    xs = [n["x"] for n in nodes]
    ys = [n["y"] for n in nodes]
    r = lay["node_radius"]
    stray = 0
    idle_edges = [e for e in edges if e["idle"]]
    for y in range(int(min(ys) - r), int(max(ys) + r)):
        for x in range(int(min(xs) - r), int(max(xs) + r)):
            if near(pixel(rows, w, h, x, y), idle, 6) and all(seg_dist(x, y, e) > 3 for e in idle_edges):
                stray += 1
    assert stray == 0, f"idle grey on {stray} pixels away from the idle edges"
    print(f"{png}: {ranks} nodes, {len(edges)} edges, {n_idle} idle drawn dashed grey, none elsewhere")


def colours(rows):
    seen = {}
    for r in rows:
        for x in range(0, len(r), 3):
            px = r[x:x + 3]
            seen[px] = seen.get(px, 0) + 1
    return seen


def check_matrix(png, csv_path):
    w, h, rows = read_png(png)
    table = list(csv.reader(open(csv_path)))
    assert table[0][0] == "src\\dst", table[0]
    cells = [[int(v) for v in row[1:-1]] for row in table[1:-1]]
    top = max(max(r) for r in cells)
    assert top > 0, "no traffic in the matrix CSV"
    hot = sum(v == top for r in cells for v in r)
    seen = colours(rows)
    red = sum(c for px, c in seen.items() if near(px, (225, 45, 35), 2))
    empty = sum(c for px, c in seen.items() if near(px, (52, 52, 60), 2))
    # The legend bar's last step is red too (at most ~10x12 px); each hot cell is >= 36 px.
    assert red >= hot * 36, f"{red} pixels of the hottest colour for {hot} hottest cells"
    zero = sum(v == 0 for r in cells for v in r)
    assert zero == 0 or empty >= zero * 36, f"{empty} pixels of the empty-cell colour for {zero} empty cells"
    print(f"{png}: {len(cells)}x{len(cells)} matrix, {hot} hottest cells, {zero} empty")


def check_stats(png, csv_path):
    w, h, rows = read_png(png)
    table = list(csv.reader(open(csv_path)))
    assert table[0][:5] == ["op", "library", "size_lo", "size_hi", "count"], table[0]
    assert len(table) > 1, "no rows in the stats CSV"
    # Text lines: pixel rows with bright (text) pixels, in runs; the table adds one run per row.
    bright = [sum(1 for x in range(0, len(r), 3) if r[x] > 200 and r[x + 1] > 200 and r[x + 2] > 200) > 0
              for r in rows]
    runs = sum(1 for y in range(1, h) if bright[y] and not bright[y - 1])
    want = len(table) - 1 + 3  # the rows, the header, the status line, the tabs/filter line
    assert runs >= want, f"{runs} lines of text, expected at least {want}"
    assert len(colours(rows)) > 20, "blank?"
    print(f"{png}: {runs} lines of text for {len(table) - 1} rows")


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "topology":
        check_topology(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif kind == "matrix":
        check_matrix(sys.argv[2], sys.argv[3])
    elif kind == "stats":
        check_stats(sys.argv[2], sys.argv[3])
    else:
        sys.exit("unknown check " + kind)
