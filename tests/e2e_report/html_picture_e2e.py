"""The HTML report's pictures say what their legends say (issue: pictures that mislead).

On a real 4-rank bench trace (ring and tree all-reduces, so some links carry bytes in one op and
sit idle in the other):
  - the topology draws a dashed grey line only for links that never carried a byte; a link idle
    during some ops is its blue arrow (once a grey dash under a blue arrow read as a blue dashed
    arrow where the legend says grey);
  - the link heat map has time ticks (0 and fifths of the trace);
  - the traffic matrix shows the bytes in its cells;
  - the bus-bandwidth chart's y ticks are evenly spaced round values (once 0.016, 0.021, ...).
Usage: html_picture_e2e.py RINGSIDE
"""
import os
import re
import subprocess
import sys
import tempfile

RATE = {"B/s": 1, "kB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9}


def main():
    ringside = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        trace, html = os.path.join(d, "t.sqlite"), os.path.join(d, "r.html")
        subprocess.run([ringside, "bench", "--ranks", "4", "--algo", "ring,tree", "--sizes", "4K,256K",
                        "--iters", "2", "-o", trace], check=True, capture_output=True, timeout=240)
        subprocess.run([ringside, "report", "--format", "html", "-o", html, trace], check=True,
                       capture_output=True, timeout=120)
        page = open(html, encoding="utf-8").read()

    topo = page[page.index('class="topology"'):]
    topo = topo[:topo.index("</svg>")]
    arrows = set(re.findall(r'stroke="#1f77b4"[^>]*><title>(\d+)→(\d+):', topo))
    dashed = set(re.findall(r'stroke-dasharray="5,4"[^>]*><title>(\d+)→(\d+) idle', topo))
    assert arrows, "no link arrows in the topology"
    both = arrows & dashed
    assert not both, f"links drawn both as arrows and as idle dashes: {sorted(both)}"

    heat = page[page.index('class="link-heatmap"'):]
    heat = heat[:heat.index("</svg>")]
    ticks = re.findall(r'<text class="tick"[^>]*>([^<]+)</text>', heat)
    assert len(ticks) >= 3 and ticks[0] == "0 ns", f"heat map time ticks: {ticks}"

    matrix = page[page.index('class="traffic-matrix"'):]
    matrix = matrix[:matrix.index("</svg>")]
    cells = re.findall(r'<text class="cell"[^>]*>([^<]+)</text>', matrix)
    assert len(cells) >= 4, f"numbers in the traffic matrix cells: {cells}"

    chart = page[page.index('class="busbw"'):]
    chart = chart[:chart.index("</svg>")]
    labels = re.findall(r'<text x="8" y="[0-9.]+">([0-9.]+) ([kMG]?B/s)</text>', chart)
    values = [float(v) * RATE[u] for v, u in labels]
    assert len(values) >= 3, f"y ticks: {labels}"
    steps = {round(b - a, 3) for a, b in zip(values, values[1:])}
    assert len(steps) == 1, f"uneven y ticks: {labels}"
    step = steps.pop()
    mantissa = step / 10 ** int(f"{step:e}".split("e")[1])
    assert round(mantissa, 6) in (1, 2, 5), f"y tick step {step} is not 1, 2 or 5 x 10^k"
    print(f"OK: {len(arrows)} arrows, {len(dashed)} idle dashes, ticks {ticks}, {len(cells)} cells, "
          f"y step {labels[1]}")


if __name__ == "__main__":
    main()
