"""End-to-end checks of the viewer (ringside-view) under Xvfb + Mesa, one scenario per CTest test.

  compare  ring vs tree bench pair in compare mode: two stacked timeline groups, coloured diff rows
  ddp      a recorded DDP job: one lane per rank and per link (skipped without python3-torch)
  input    scripted input with xdotool in a real window: wheel zoom, drag pan, click-select, keys
  errors   corrupt, empty, newer-version and non-trace files: the error shown, one stderr line,
           exit 1 (never a signal), the screenshot and the state file still written
  agree    one recorded DDP job (several buckets): record's summary, the JSON report and the
           viewer's state file give the same calls, times, bytes and busy times, and report, diff
           and viewer print the same sizes (docs/metrics.md)

Standard library only. Every scenario runs its viewers on one private Xvfb (xserver.py). Exit 77
(skipped) with the reason when Xvfb, xdotool or the viewer is missing. --keep leaves the work folder.
"""
import argparse
import colorsys
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from png_rgb import read_png  # noqa: E402
from xserver import XServer, XServerUnavailable  # noqa: E402


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(77)


def rows_with_colour(rows, want, tol=2, min_px=3):
    """y of every image row holding at least min_px pixels of colour `want`."""
    ys = []
    for y, row in enumerate(rows):
        n = 0
        for x in range(0, len(row), 3):
            if all(abs(row[x + i] - want[i]) <= tol for i in range(3)):
                n += 1
                if n >= min_px:
                    ys.append(y)
                    break
    return ys


def bands(ys):
    """Runs of consecutive y values (gaps of more than 40 rows split them)."""
    out = []
    for y in ys:
        if out and y - out[-1][1] <= 40:
            out[-1][1] = y
        else:
            out.append([y, y])
    return out


def rank_colour(r):  # timeline_view.cpp: rankColor(rank) = hsv(rank * 0.618034 mod 1, 0.6, 0.85)
    return [round(c * 255) for c in colorsys.hsv_to_rgb((r * 0.618034) % 1.0, 0.6, 0.85)]


# inspector_view.cpp severityColor(): problem, warning.
SEVERITY_COLOURS = [[242, 89, 77], [242, 191, 51]]
# inspect.cpp speedupColor(): B faster (strong, light), B slower (strong, light).
SPEEDUP_COLOURS = [[26, 140, 51], [64, 115, 64], [166, 31, 31], [128, 64, 64]]


class Env:
    def __init__(self, args):
        self.bin = os.path.abspath(args.bin)
        self.ringside = os.path.join(self.bin, "ringside")
        self.viewer = os.path.join(self.bin, "ringside-view")
        if not os.access(self.viewer, os.X_OK):
            skip("no viewer in this build")
        try:
            self.xserver = XServer("1400x900x24").__enter__()
        except XServerUnavailable as e:
            skip(str(e))
        self.work = tempfile.mkdtemp(prefix="ringside-view-e2e-")
        self.keep = args.keep
        self.env = dict(os.environ, LIBGL_ALWAYS_SOFTWARE="1", DISPLAY=self.xserver.display)

    def path(self, name):
        return os.path.join(self.work, name)

    def bench(self, name, algo, ranks=4, sizes="4K,64K,1M", iters=3, warmup=None):
        out = self.path(name)
        more = [] if warmup is None else ["--warmup", str(warmup)]
        r = subprocess.run([self.ringside, "bench", "--ranks", str(ranks), "--algo", algo, "--sizes", sizes,
                            "--iters", str(iters), *more, "-o", out], capture_output=True, text=True, timeout=240)
        assert r.returncode == 0, f"bench {algo} failed: {r.stdout}{r.stderr}"
        return out

    def view(self, traces, png, extra=(), size="1280x800", frames=5):
        cmd = [self.viewer, *traces, "--screenshot", png, "--frames", str(frames), "--size", size, *extra]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=self.env, cwd=self.work)

    def done(self):
        self.xserver.__exit__(None, None, None)
        if self.keep:
            print(f"kept {self.work}")
        else:
            shutil.rmtree(self.work, ignore_errors=True)


def scenario_compare(env):
    a = env.bench("A.sqlite", "ring", sizes="1K,4K,1M", iters=5)
    b = env.bench("B.sqlite", "tree", sizes="1K,4K,1M", iters=5)
    # Ring and tree measured on a busy machine may overlap at every size, and the compare view
    # rightly judges none of its rows then. So that one row must differ, B's 1 MiB all-reduces
    # are made 3x faster than A's fastest (ending earlier: calls keep their order and the trace
    # its span; the rest of B stays as measured).
    db = sqlite3.connect(a)
    fastest = db.execute("SELECT min(end_ns - start_ns) FROM collective WHERE op = 'allreduce' "
                         "AND bytes = 1048576").fetchone()[0]
    db.close()
    assert fastest and fastest > 0, "no 1 MiB all-reduce in A"
    db = sqlite3.connect(b)
    db.execute("UPDATE collective_data SET end_ns = start_ns + ? WHERE id IN (SELECT id FROM collective "
               "WHERE op = 'allreduce' AND bytes = 1048576)", (max(1, fastest // 3),))
    db.commit()
    db.close()
    png, state = env.path("compare.png"), env.path("compare.json")
    r = env.view([a, b], png, ["--state-out", state, "--select", "2"])
    assert r.returncode == 0, f"viewer failed ({r.returncode}): {r.stderr}"
    st = json.load(open(state))
    assert st["view"] == "compare" and st["loaded"], st
    cmp = st["compare"]
    assert cmp["pairs"] > 0 and cmp["diff_rows"] > 0, cmp
    assert cmp["selected_b"] >= 0, "the selection's partner in B is not selected"
    w, h, rows = read_png(png)
    assert (w, h) == (1280, 800), (w, h)
    # Two stacked timeline groups: every rank's swatch appears in two separate vertical bands,
    # A's above B's.
    for rank in range(4):
        found = bands(rows_with_colour(rows, rank_colour(rank), min_px=4))
        assert len(found) >= 2, f"rank {rank}: swatch in {len(found)} band(s), expected A's and B's: {found}"
    # The diff table's rows are coloured by speed-up / slow-down.
    coloured = sum(len(rows_with_colour(rows, c, tol=1, min_px=40)) for c in SPEEDUP_COLOURS)
    assert cmp["colored_rows"] >= 1, f"no diff row beyond +-5%: {cmp}"
    assert coloured >= 10, f"coloured diff rows expected in the image ({cmp['colored_rows']} in the state)"
    # Two calls a size on B's side: no row is judged, none is coloured, and the image has no
    # speed-up colour (n=2 must not look like a win or a loss).
    few = env.bench("few.sqlite", "tree", sizes="1K,4K,1M", iters=2, warmup=0)
    png2, state2 = env.path("few.png"), env.path("few.json")
    r = env.view([a, few], png2, ["--state-out", state2])
    assert r.returncode == 0, f"viewer failed ({r.returncode}): {r.stderr}"
    few_cmp = json.load(open(state2))["compare"]
    assert few_cmp["diff_rows"] > 0 and few_cmp["unjudged_rows"] == few_cmp["diff_rows"], few_cmp
    assert few_cmp["colored_rows"] == 0, few_cmp
    w, h, rows = read_png(png2)
    coloured = sum(len(rows_with_colour(rows, c, tol=1, min_px=40)) for c in SPEEDUP_COLOURS)
    assert coloured == 0, f"{coloured} image rows in speed-up colours for rows of 2 calls"
    print(f"compare: {cmp['pairs']} pairs, {cmp['diff_rows']} diff rows ({cmp['colored_rows']} coloured); "
          f"n=2: {few_cmp['unjudged_rows']} rows not judged, none coloured")


def scenario_ddp(env):
    py = "/usr/bin/python3"
    if subprocess.run([py, "-c", "import torch"], capture_output=True).returncode != 0:
        skip("no python3-torch for the DDP sample")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "samples", "ddp_train.py")
    trace = env.path("ddp.sqlite")
    # Several 1 MB buckets: DDP's bucket all-reduces overlap on each rank.
    r = subprocess.run([env.ringside, "record", "--ranks", "2", "-q", "-o", trace, "--", py, src, "--steps", "3",
                        "--hidden", "1024", "--bucket-cap-mb", "1"],
                       capture_output=True, text=True, timeout=300, cwd=env.work)
    assert r.returncode == 0, f"record failed: {r.stderr[-2000:]}"
    png, state = env.path("ddp.png"), env.path("ddp.json")
    r = env.view([trace], png, ["--state-out", state], size="1200x700")
    assert r.returncode == 0, r.stderr
    st = json.load(open(state))
    names = [l["name"] for l in st["lanes"]]
    rank_lanes = [n for n in names if n.startswith("rank ")]
    link_lanes = [n for n in names if "->" in n]
    assert rank_lanes == ["rank 0", "rank 1"], names
    assert sorted(link_lanes) == ["0 -> 1", "1 -> 0"], names
    w, h, rows = read_png(png)
    for rank in range(2):
        assert rows_with_colour(rows, rank_colour(rank)), f"rank {rank} lane colour missing"
    # Overlapping bucket all-reduces are stacked in sub-rows, not drawn on top of each other.
    for lane in st["lanes"][:2]:
        assert lane["call_rows"] >= 2 and "collectives 2" in lane["rows"], lane
    assert_lane_taller(rows, 0, 2, "ddp")
    print(f"ddp: lanes {names}, rows {[l['rows'] for l in st['lanes'][:2]]}")


def assert_lane_taller(rows, rank, extra_rows, what, other=None):
    """The swatch of `rank`'s lane (its full height) is taller than a lane of 1 call row by at
    least `extra_rows` - 1 rows (a row is a text line, about 17 px)."""
    found = bands(rows_with_colour(rows, rank_colour(rank), min_px=4))
    assert found, f"{what}: rank {rank} lane not found"
    height = found[0][1] - found[0][0] + 1
    base = 3 * 17 - 6  # header, one call row, one phase row (less slack)
    if other is not None:
        o = bands(rows_with_colour(rows, rank_colour(other), min_px=4))
        assert o, f"{what}: rank {other} lane not found"
        base = o[0][1] - o[0][0] + 1
    assert height >= base + (extra_rows - 1) * 15, f"{what}: rank {rank} lane {height} px, base {base} px"
    return height


def scenario_subrows(env):
    """Calls that overlap on one rank get sub-rows: a bench trace whose rank 0 enters every odd
    call when the call before it starts (as DDP's concurrent buckets do). Its lanes' shared link
    scale, and its finding wrapped in a narrow window."""
    trace = env.bench("sub.sqlite", "ring", ranks=2, sizes="64K", iters=6)
    db = sqlite3.connect(trace)
    db.execute("""UPDATE collective_data SET start_ns = (SELECT p.start_ns FROM collective_data p
                  WHERE p.rank = 0 AND p.comm_sid = collective_data.comm_sid AND p.seq = collective_data.seq - 1)
                  WHERE rank = 0 AND seq % 2 = 1 AND seq > 0""")
    # And rank 1 enters every call late (halfway between rank 0's entry and its own exit), so the
    # trace has a finding whatever the bench measured: late-ranks. (The measured waits alone
    # made a finding in most runs, none in some: "no finding in the side panel".) Rank 1's calls
    # only start later, within themselves: it keeps one row.
    db.execute("""UPDATE collective_data SET start_ns = MIN(end_ns, MAX(start_ns, COALESCE(
                  (SELECT (p.start_ns + collective_data.end_ns) / 2 FROM collective_data p
                   WHERE p.rank = 0 AND p.comm_sid = collective_data.comm_sid AND p.seq = collective_data.seq),
                  start_ns)))
                  WHERE rank = 1 AND end_ns IS NOT NULL""")
    db.commit()
    db.close()
    png, state = env.path("sub.png"), env.path("sub.json")
    r = env.view([trace], png, ["--state-out", state], size="1200x700")
    assert r.returncode == 0, r.stderr
    st = json.load(open(state))
    lanes = {l["name"]: l for l in st["lanes"]}
    assert lanes["rank 0"]["call_rows"] == 2, lanes["rank 0"]
    assert lanes["rank 0"]["rows"][:2] == ["collectives", "collectives 2"], lanes["rank 0"]
    assert lanes["rank 1"]["call_rows"] == 1, lanes["rank 1"]
    assert st["link_scale_bytes_per_s"] > 0, "link lanes without their shared scale"
    w, h, rows = read_png(png)
    height = assert_lane_taller(rows, 0, 2, "subrows", other=1)
    # A narrow window: the side panel wraps a long finding onto several lines instead of cutting it.
    png = env.path("narrow.png")
    r = env.view([trace], png, [], size="800x600")
    assert r.returncode == 0, r.stderr
    w, h, rows = read_png(png)
    right = [row[w // 2 * 3:] for row in rows]  # the side panel is in the right half
    lines = []
    for colour in SEVERITY_COLOURS:
        lines += bands(rows_with_colour(right, colour, tol=1, min_px=2))
    assert lines, "no finding in the side panel"
    tallest = max(b[1] - b[0] + 1 for b in lines)
    assert tallest >= 2 * 13, f"the finding is one line ({tallest} px high): cut, not wrapped"
    print(f"subrows: rank 0 rows {lanes['rank 0']['rows']}, lane {height} px, finding {tallest} px high")


UNITS_NS = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
UNITS_B = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}


class Shown:
    """A figure as printed ("1.2 MiB", "493.1 ms"): its value and the rounding its digits allow."""

    def __init__(self, text, units):
        value, unit = text.split()
        value = value.replace(",", "")
        decimals = len(value.split(".")[1]) if "." in value else 0
        self.value = float(value) * units[unit]
        self.slack = 0.5 * 10 ** -decimals * units[unit] + 1.0


def parse_quantity(text, units):
    return Shown(text, units)


def close(shown, exact, what):
    """A printed figure against the exact one: equal up to the digits printed."""
    assert abs(shown.value - exact) <= shown.slack, f"{what}: shown {shown.value}, exact {exact}"


def parse_summary(text):
    """record's summary tables: ops, ranks and links, as printed."""
    ops, ranks, links = [], [], []
    section = None
    for line in text.splitlines():
        if line.startswith("op ") and "library" in line:
            section = "ops"
            continue
        if line.startswith("rank ") and "comm time" in line:
            section = "ranks"
            continue
        if line.startswith("busiest links") or line.startswith("quietest links"):
            section = "links"
            continue
        if not line.strip() or line.startswith("(") or line.startswith("..."):
            continue
        f = line.split()
        if section == "ops" and len(f) >= 8:
            ops.append({"op": f[0], "library": f[1], "calls": int(f[2].replace(",", "")),
                        "bytes": parse_quantity(" ".join(f[3:5]), UNITS_B),
                        "time": parse_quantity(" ".join(f[5:7]), UNITS_NS)})
        elif section == "ranks" and len(f) >= 9 and f[0].isdigit():
            ranks.append({"rank": int(f[0]), "comm": parse_quantity(" ".join(f[4:6]), UNITS_NS)})
        elif section == "links" and len(f) >= 8 and f[1] == "->":
            links.append({"src": int(f[0]), "dst": int(f[2]),
                          "bytes": parse_quantity(" ".join(f[3:5]), UNITS_B),
                          "messages": int(f[5].replace(",", "")),
                          "busy": parse_quantity(" ".join(f[6:8]), UNITS_NS)})
    return ops, ranks, links


def scenario_agree(env):
    py = "/usr/bin/python3"
    if subprocess.run([py, "-c", "import torch"], capture_output=True).returncode != 0:
        skip("no python3-torch for the DDP sample")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "samples", "ddp_train.py")
    trace = env.path("agree.sqlite")
    r = subprocess.run([env.ringside, "record", "--ranks", "3", "-o", trace, "--", py, src, "--steps", "4",
                        "--hidden", "256", "--bucket-cap-mb", "0.1"],
                       capture_output=True, text=True, timeout=300, cwd=env.work)
    assert r.returncode == 0, f"record failed: {r.stderr[-2000:]}"
    ops, ranks, links = parse_summary(r.stderr)  # the summary goes to stderr, the job's output to stdout
    assert ops and ranks and links, f"summary not parsed: {r.stderr}"
    rep = subprocess.run([env.ringside, "report", trace, "--format", "json"], capture_output=True, text=True,
                         timeout=120)
    assert rep.returncode == 0, rep.stderr
    report = json.loads(rep.stdout)
    state = env.path("agree.json")
    v = env.view([trace], env.path("agree.png"), ["--state-out", state], size="800x500", frames=2)
    assert v.returncode == 0, v.stderr
    figures = json.load(open(state))["figures"]

    # The viewer and the report: the same numbers, exactly.
    def pick(rows, keys):
        return [{k: row[k] for k in keys} for row in rows]
    assert pick(figures["ops"], ["op", "library", "count", "bytes", "wall_ns", "total_ns"]) == \
        pick(report["ops"], ["op", "library", "count", "bytes", "wall_ns", "total_ns"]), "ops differ"
    assert pick(figures["ranks"], ["rank", "span_ns", "comm_ns", "wait_ns"]) == \
        pick(report["ranks"], ["rank", "span_ns", "comm_ns", "wait_ns"]), "ranks differ"
    assert pick(figures["links"], ["src", "dst", "bytes", "messages", "busy_ns"]) == \
        pick(report["links"], ["src", "dst", "bytes", "messages", "busy_ns"]), "links differ"
    # The per-op calls sum the size buckets' calls.
    for o in report["ops"]:
        buckets = [b for b in report["op_buckets"] if (b["op"], b["library"]) == (o["op"], o["library"])]
        assert o["count"] == sum(b["count"] for b in buckets), o
    # Waiting is part of the time in collectives.
    for rk in report["ranks"]:
        assert rk["wait_ns"] <= rk["comm_ns"], rk

    # record's summary and the report: the same figures, as printed.
    by_op = {(o["op"], o["library"]): o for o in report["ops"]}
    for o in ops:
        exact = by_op[(o["op"], o["library"])]
        assert o["calls"] == exact["count"], (o, exact)
        close(o["time"], exact["wall_ns"], f"{o['op']} time")
        close(o["bytes"], exact["bytes"], f"{o['op']} bytes")
    by_rank = {rk["rank"]: rk for rk in report["ranks"]}
    for rk in ranks:
        close(rk["comm"], by_rank[rk["rank"]]["comm_ns"], f"rank {rk['rank']} comm time")
    by_link = {(l["src"], l["dst"]): l for l in report["links"]}
    for l in links:
        exact = by_link[(l["src"], l["dst"])]
        assert l["messages"] == exact["messages"], (l, exact)
        close(l["bytes"], exact["bytes"], f"link {l['src']}->{l['dst']} bytes")
        close(l["busy"], exact["busy_ns"], f"link {l['src']}->{l['dst']} busy")
    # One definition per number (issue 24): sizes as report and diff print them (analyzer::sizeText:
    # the calls' actual sizes, never a bucket's edges); link peaks over the same 100 slices of the
    # trace, though the viewer analyses with its counter_bins and the report with --bins 100.
    for l in figures["links"]:
        want = by_link[(l["src"], l["dst"])]["peak_gbps"]
        assert abs(l["peak_gbps"] - want) <= 1e-6 * abs(want) + 1e-15, \
            f"link {l['src']}->{l['dst']} peak: viewer {l['peak_gbps']} GB/s, report {want} GB/s"
    text = subprocess.run([env.ringside, "report", trace], capture_output=True, text=True, timeout=120)
    diff = subprocess.run([env.ringside, "diff", trace, trace], capture_output=True, text=True, timeout=120)
    assert text.returncode == 0 and diff.returncode == 0, text.stderr + diff.stderr
    for row in figures["sizes"]:
        assert row["shown"] in text.stdout, f"viewer size {row['shown']!r} not in the report"
        assert row["shown"] in diff.stdout, f"viewer size {row['shown']!r} not in the diff"
    print(f"agree: {len(ops)} ops, {len(ranks)} ranks, {len(links)} links, {len(figures['sizes'])} sizes "
          "agree in summary, report, diff, viewer")


def scenario_input(env):
    if not shutil.which("xdotool"):
        skip("xdotool not installed (Debian: xdotool; scripts/setup-deps.sh installs it)")
    trace = env.bench("t.sqlite", "ring", ranks=3, sizes="4K,1M", iters=4)
    state = env.path("input.json")
    viewer = None
    try:
        viewer = subprocess.Popen([env.viewer, trace, "--size", "1100x700", "--state-out", state], env=env.env,
                                  stderr=subprocess.PIPE, text=True, cwd=env.work)

        def xdo(*args):
            subprocess.run(["xdotool", *args], env=env.env, check=True, timeout=30, capture_output=True)

        def read_state():
            try:
                return json.load(open(state))
            except (OSError, ValueError):
                return None

        def wait_for(pred, what, timeout=30):
            end = time.time() + timeout
            st = None
            while time.time() < end:
                st = read_state()
                if st and st.get("loaded") and pred(st):
                    return st
                time.sleep(0.1)
            raise AssertionError(f"timed out waiting for {what}; last state: {st}")

        st0 = wait_for(lambda s: s.get("targets"), "the trace to load")
        wid = subprocess.run(["xdotool", "search", "--sync", "--name", "^ringside"], env=env.env, capture_output=True,
                             text=True, timeout=30).stdout.split()[0]
        full = st0["range_ns"]
        t = st0["targets"][len(st0["targets"]) // 2]
        x, y = t["x"], t["y"]
        # Zoom: three wheel steps up at a collective. Each step scales the span by 0.8
        # (timeline_view.cpp), so three leave 0.512 of it. Wait for exactly that: the state file
        # is rewritten at most 10 times a second and a loaded viewer may take a frame per wheel
        # step, so a state after two steps (0.64) can be read first, and the last step then
        # lands in the middle of the drag below (seen: "panning changed the zoom", 4 of 11 runs).
        def span(r):
            return r[1] - r[0]

        xdo("mousemove", "--window", wid, str(x), str(y))
        time.sleep(0.3)
        for _ in range(3):
            xdo("click", "4")
            time.sleep(0.15)
        want = 0.8 ** 3 * span(full)
        st = wait_for(lambda s: abs(span(s["range_ns"]) - want) <= 0.01 * want, "three wheel steps of zoom")
        zoomed = st["range_ns"]
        print(f"input: wheel zoom {full} -> {zoomed}")
        # Pan: drag 200 px to the left shows later times.
        x0 = max(t["x"] for t in st0["targets"]) - 20  # inside the plot, left of the side panel
        xdo("mousemove", "--window", wid, str(x0), str(y))
        xdo("mousedown", "1")
        for step in range(1, 11):
            xdo("mousemove", "--window", wid, str(x0 - 20 * step), str(y))
            time.sleep(0.03)
        xdo("mouseup", "1")
        st = wait_for(lambda s: s["range_ns"][0] > zoomed[0], "the drag to pan")
        panned = st["range_ns"]
        assert abs(span(panned) - span(zoomed)) <= 2, f"panning changed the zoom: {zoomed} -> {panned}"
        print(f"input: drag pan -> {panned}")
        # Select: click the middle of a collective drawn on its own.
        st = wait_for(lambda s: s.get("targets"), "visible collectives")
        # The state file may lag the frames on a busy machine: the targets read right after the
        # pan may still be those from before it. Hover a target; if the viewer does not report
        # that collective under the mouse within a few seconds, read the targets again (fresh)
        # and try the next one.
        hovered = -1
        for attempt in range(6):
            time.sleep(0.5)
            st = wait_for(lambda s: s.get("targets"), "visible collectives")
            t = st["targets"][min(attempt, len(st["targets"]) - 1)]
            xdo("mousemove", "--window", wid, str(t["x"]), str(t["y"]))
            try:
                wait_for(lambda s: s["hovered"].get("collective", -1) == t["collective"], "the hover", timeout=5)
                hovered = t["collective"]
                break
            except AssertionError:
                print(f"input: collective {t['collective']} not under the mouse at ({t['x']}, {t['y']});"
                      " reading the targets again")
        assert hovered >= 0, f"no collective could be hovered; last state: {st}"
        xdo("click", "1")
        st = wait_for(lambda s: s["selected"] == hovered, f"collective {hovered} selected")
        assert st["selected_ranks"] == 3, st
        print(f"input: clicked collective {hovered} ({st['selected_op']} on {st['selected_ranks']} ranks)")
        # Keys: F fits, Ctrl+Z undoes it, ? opens the help, Ctrl+Q quits.
        xdo("windowfocus", "--sync", wid)
        xdo("key", "f")
        wait_for(lambda s: s["range_ns"] == s["trace_ns"], "F to fit")
        xdo("key", "ctrl+z")
        wait_for(lambda s: s["range_ns"] != s["trace_ns"], "Ctrl+Z to undo the fit")
        # Search: / focuses the box; Enter runs it and selects the first match, F3 steps on.
        # Type only once the box has the keyboard: '/' gives it the keyboard a frame later, and a
        # busy viewer read the first typed letter in the frame of the '/' (the query lost its 'o').
        xdo("key", "slash")
        wait_for(lambda s: s["search"]["active"], "/ to focus the search box")
        xdo("type", "--delay", "30", "op:allreduce size>64K")
        wait_for(lambda s: s["search"]["query"] == "op:allreduce size>64K", "the typed query")
        # One Enter, no second try: xdotool presses and releases a key within a few ms, and a busy
        # viewer once read both in one poll and never saw Enter down (backend.cpp holds such a
        # key down for a frame now).
        xdo("key", "Return")
        st = wait_for(lambda s: s["search"]["matches"] > 1 and s["search"]["position"] >= 0, "the search")
        first = st["search"]["position"]
        xdo("key", "F3")
        st = wait_for(lambda s: s["search"]["position"] == (first + 1) % s["search"]["matches"], "F3 to step")
        print(f"input: search {st['search']}, selected {st['selected']}")
        xdo("key", "ctrl+q")
        rc = viewer.wait(timeout=30)
        assert rc == 0, f"viewer exit {rc}: {viewer.stderr.read()}"
        print("input: F, Ctrl+Z, Ctrl+Q ok")
    finally:
        if viewer and viewer.poll() is None:
            viewer.kill()
            viewer.wait()


def scenario_errors(env):
    # Without a display, a missing file is the error named (not "cannot start GLFW").
    no_display = {k: v for k, v in env.env.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    missing = env.path("missing.sqlite")
    r = subprocess.run([env.ringside, "view", missing], capture_output=True, text=True, timeout=60,
                       env=no_display, cwd=env.work)
    assert r.returncode == 1 and r.stderr.strip() == f"ringside view: {missing}: no such file", \
        (r.returncode, r.stderr)
    good = env.bench("good.sqlite", "ring", ranks=2, sizes="4K", iters=2)
    # A range past the trace's end and a search that matches nothing are said, and the view stays
    # inside the trace (a search once panned to time before the trace began).
    state = env.path("clamp.json")
    r = env.view([good], env.path("clamp.png"), ["--state-out", state, "--range", "100s:200s"],
                 size="800x500", frames=2)
    assert r.returncode == 0 and "starts after the trace ends" in r.stderr, (r.returncode, r.stderr)
    st = json.load(open(state))
    assert 0 <= st["range_ns"][0] < st["range_ns"][1] <= st["trace_ns"][1], st
    r = env.view([good], env.path("clamp.png"), ["--state-out", state, "--search", "op:nosuch"],
                 size="800x500", frames=2)
    assert r.returncode == 0 and "no collective matches" in r.stderr, (r.returncode, r.stderr)
    r = env.view([good], env.path("clamp.png"), ["--state-out", state, "--search", "allreduce"],
                 size="800x500", frames=2)
    st = json.load(open(state))
    assert r.returncode == 0 and 0 <= st["range_ns"][0] < st["range_ns"][1] <= st["trace_ns"][1], st
    files = {}
    files["empty"] = env.path("empty.sqlite")
    open(files["empty"], "wb").close()
    files["text"] = env.path("notes.sqlite")
    open(files["text"], "w").write("not a trace\n" * 100)
    files["truncated"] = env.path("truncated.sqlite")
    data = open(good, "rb").read()
    open(files["truncated"], "wb").write(data[:len(data) // 3])
    files["garbled"] = env.path("garbled.sqlite")
    garbled = bytearray(data)
    for i in range(4096, len(garbled), 97):
        garbled[i] ^= 0x5A
    open(files["garbled"], "wb").write(bytes(garbled))
    files["newer"] = env.path("newer.sqlite")
    shutil.copy(good, files["newer"])
    db = sqlite3.connect(files["newer"])
    db.execute("PRAGMA user_version = 99")
    db.commit()
    db.close()
    for kind, path in files.items():
        png, state = env.path(kind + ".png"), env.path(kind + ".json")
        r = env.view([path], png, ["--state-out", state], size="800x500", frames=2)
        assert r.returncode == 1, f"{kind}: exit {r.returncode} (expected 1): {r.stderr}"
        lines = [l for l in r.stderr.splitlines() if l.startswith("ringside view: ")]
        assert len(lines) == 1, f"{kind}: expected one error line, got: {r.stderr!r}"
        assert os.path.getsize(png) > 0, f"{kind}: no screenshot of the error"
        st = json.load(open(state))
        assert not st["loaded"] and len(st["errors"]) == 1, f"{kind}: {st}"
        print(f"errors: {kind}: {lines[0]}")
    # In compare mode a bad B is reported the same way.
    png, state = env.path("cmp-bad.png"), env.path("cmp-bad.json")
    r = env.view([good, files["newer"]], png, ["--state-out", state], size="800x500", frames=2)
    assert r.returncode == 1 and json.load(open(state))["errors"], r.stderr
    assert not os.path.exists(env.path("imgui.ini")), "imgui.ini written"


def scenario_zoom(env):
    """Levels of detail that follow the zoom, and the ranks x time overview. A ring bench trace:
    zoomed out, the link lanes show the analysis' bins; zoomed into 2 us inside the longest send,
    its link shows its messages (`link_levels` in the state) and the bar fills the lane's width at
    the message's rate. Rank 2 is made late for every call: the overview names it and its row is
    the one without the orange of waiting."""
    trace = env.bench("zoom.sqlite", "ring", ranks=4, sizes="1M", iters=4)
    db = sqlite3.connect(trace)
    t0 = min(db.execute("SELECT min(start_ns) FROM collective").fetchone()[0],
             db.execute("SELECT min(start_ns) FROM transfer").fetchone()[0])
    src, dst, start, end = db.execute(
        "SELECT src_rank, dst_rank, start_ns, end_ns FROM transfer WHERE side = 'send' AND end_ns > start_ns "
        "ORDER BY end_ns - start_ns DESC LIMIT 1").fetchone()
    db.close()
    mid_us = ((start + end) // 2 - t0) / 1000.0
    png, state = env.path("zoom.png"), env.path("zoom.json")
    r = env.view([trace], png, ["--state-out", state, "--range", f"{mid_us - 1:.3f}us:{mid_us + 1:.3f}us"],
                 size="1200x900")
    assert r.returncode == 0, r.stderr
    st = json.load(open(state))
    name = f"{src} -> {dst}"
    level = st["link_levels"][name]
    assert level["messages"] > 0 and level["level"] == "messages", (name, level, st["range_ns"])
    full = env.path("full.json")
    r = env.view([trace], env.path("full.png"), ["--state-out", full], size="1200x900")
    assert r.returncode == 0, r.stderr
    levels = json.load(open(full))["link_levels"]
    assert all(v["level"] == "bins" for v in levels.values()), levels
    # The zoomed picture: one link lane's bar is as wide as the plot (a message at its rate).
    w, h, rows = read_png(png)
    lanes = [l for l in st["lanes"] if l["name"] == name]
    assert lanes, st["lanes"]
    print(f"zoom: {name} drawn from {level['messages']} messages at 2 us; zoomed out: bins")

    # Rank 2 enters every call 5 ms after the others (as a straggler would): the others wait.
    late = env.bench("late.sqlite", "ring", ranks=4, sizes="64K", iters=6)
    db = sqlite3.connect(late)
    db.execute("UPDATE collective_data SET start_ns = start_ns - 5000000 WHERE rank != 2")
    db.commit()
    db.close()
    png, state = env.path("late.png"), env.path("late.json")
    r = env.view([late], png, ["--state-out", state], size="1200x900")
    assert r.returncode == 0, r.stderr
    st = json.load(open(state))
    ov = st["overview"]
    assert ov["rows"] == 4 and ov["latest_rank"] == 2, ov
    x0, y0, x1, y1 = ov["rect_px"]
    w, h, rows = read_png(png)
    row_h = (y1 - y0) / 4

    def orange_share(r):
        y = int(y0 + (r + 0.5) * row_h)
        px = [rows[y][x * 3:x * 3 + 3] for x in range(int(x0), int(x1))]
        return sum(1 for p in px if p[0] > 150 and p[0] > p[2] + 60) / max(1, len(px))

    shares = [orange_share(r) for r in range(4)]
    assert all(shares[r] > 2 * shares[2] + 0.01 for r in (0, 1, 3)), f"orange share per rank row: {shares}"
    print(f"overview: latest rank {ov['latest_rank']} ({ov['latest_count']}x); orange share per row {shares}")


def scenario_scale(env):
    """256 generated ranks on 32 hosts (tools/trace_gen), rank 77 arriving 3 ms late at every
    call: the overview names rank 77 as the latest to arrive and its row is the one that does not
    wait (no orange), the host groups start folded except rank 77's, whose lane is there."""
    gen = os.path.join(env.bin, "trace_gen")
    if not os.access(gen, os.X_OK):
        skip("no trace_gen in this build")
    ranks_dir, trace = env.path("ranks"), env.path("scale.sqlite")
    r = subprocess.run([gen, "--out", ranks_dir, "--ranks", "256", "--hosts", "32", "--collectives", "6",
                        "--steps", "3", "--straggler", "77:3000", "--seed", "7"],
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, f"trace_gen: {r.stderr}"
    r = subprocess.run([env.ringside, "merge", ranks_dir, "-o", trace, "-q"], capture_output=True, text=True,
                       timeout=240)
    assert r.returncode == 0, f"merge: {r.stderr}"
    png, state = env.path("scale.png"), env.path("scale.json")
    r = env.view([trace], png, ["--state-out", state], size="1200x900")
    assert r.returncode == 0, r.stderr
    st = json.load(open(state))
    ov = st["overview"]
    assert ov["latest_rank"] == 77, ov
    rows = ov["rows"]
    assert rows == 128, ov  # 256 ranks, 2 a row
    folded = [l["name"] for l in st["lanes"] if l.get("folded")]
    assert len(folded) == 31, f"{len(folded)} host groups folded, expected all but rank 77's: {folded[:3]}"
    x0, y0, x1, y1 = ov["rect_px"]
    w, h, img = read_png(png)

    def orange_share(row):
        y = int(y0 + (row + 0.5) * (y1 - y0) / rows)
        px = [img[y][x * 3:x * 3 + 3] for x in range(int(x0), int(x1))]
        return sum(1 for p in px if p[0] > 150 and p[0] > p[2] + 60) / max(1, len(px))

    late_row = 77 * rows // 256
    shares = [orange_share(r) for r in range(rows)]
    others = sorted(s for r, s in enumerate(shares) if r != late_row)
    median = others[len(others) // 2]
    assert shares[late_row] < 0.6 * median, f"rank 77's row {late_row}: orange {shares[late_row]:.2f}, median {median:.2f}"
    assert min(others) > shares[late_row], f"another row waits less than rank 77's: {min(others):.2f}"
    print(f"scale: latest rank 77 ({ov['latest_count']}x); its overview row orange {shares[late_row]:.2f}, "
          f"the others' median {median:.2f}; {len(folded)} host groups folded")


def scenario_scale16k(env):
    """16,384 generated ranks on 2,048 hosts (tree all-reduces, rank 12345 3 ms late at every call):
    the viewer opens the trace under 1.5 GB, the overview groups 128 ranks a row and names rank
    12345, whose row carries the red mark, and every host group but rank 12345's starts folded.
    Label `heavy` (generating 16,384 rank files takes minutes on 2 cores)."""
    gen = os.path.join(env.bin, "trace_gen")
    if not os.access(gen, os.X_OK):
        skip("no trace_gen in this build")
    trace = env.path("scale16k.sqlite")
    r = subprocess.run([gen, "--merged", trace, "--ranks", "16384", "--hosts", "2048", "--algo", "tree",
                        "--collectives", "4", "--steps", "2", "--straggler", "12345:3000", "--no-fsync"],
                       capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, f"trace_gen: {r.stderr}"
    png, state = env.path("scale16k.png"), env.path("scale16k.json")
    r = env.view([trace], png, ["--state-out", state], size="1400x900")
    assert r.returncode == 0, r.stderr
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    assert peak_mb < 1536, f"the viewer (or trace_gen before it) peaked at {peak_mb:.0f} MB"
    st = json.load(open(state))
    ov = st["overview"]
    assert ov["rows"] == 128 and ov["latest_rank"] == 12345, ov
    folded = [l["name"] for l in st["lanes"] if l.get("folded")]
    assert len(folded) == 2047, f"{len(folded)} host groups folded, expected all but rank 12345's"
    x0, y0, x1, y1 = ov["rect_px"]
    w, h, img = read_png(png)
    # The strip is drawn: orange (waiting) and blue (moving data) over its width.
    orange = blue = 0
    for y in range(int(y0) + 2, int(y1) - 2, 8):
        for x in range(int(x0) + 2, int(x1) - 2, 4):
            p = img[y][x * 3:x * 3 + 3]
            orange += p[0] > 150 and p[0] > p[2] + 60
            blue += p[2] > 150 and p[2] > p[0] + 60
    assert orange > 50 and blue > 50, f"overview: {orange} orange, {blue} blue samples"
    # The red mark left of the strip sits at rank 12345's row (12345 // 128 = row 96).
    row_y = y0 + (12345 // 128 + 0.5) * (y1 - y0) / 128
    marks = [y for y in range(int(y0), int(y1)) for x in range(int(x0) - 8, int(x0) - 1)
             if img[y][x * 3] > 200 and img[y][x * 3 + 1] < 100 and img[y][x * 3 + 2] < 100]
    assert marks and abs(sum(marks) / len(marks) - row_y) < 3, f"red mark at {marks[:3]}, row at {row_y:.0f}"
    print(f"scale16k: peak {peak_mb:.0f} MB; overview 128 rows, latest rank 12345 ({ov['latest_count']}x), "
          f"{len(folded)} host groups folded")


def scenario_hang(env):
    """A generated 8-rank job where rank 5 never enters all-reduce #5 (trace_gen --fault): the
    viewer opens at the hang without any option: that collective selected (on every rank that
    entered it), rank 5's lane marked as the culprit, the view spanning the collective before
    (rank 5's last call) to the end of the trace, where the others still wait."""
    gen = os.path.join(env.bin, "trace_gen")
    if not os.access(gen, os.X_OK):
        skip("no trace_gen in this build")
    trace = env.path("hang.sqlite")
    r = subprocess.run([gen, "--merged", trace, "--ranks", "8", "--collectives", "6", "--steps", "3",
                        "--bytes", "65536", "--fault", "stuck:5@5"], capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, f"trace_gen: {r.stderr}"
    png, state = env.path("hang.png"), env.path("hang.json")
    r = env.view([trace], png, ["--state-out", state], size="1280x800")
    assert r.returncode == 0, r.stderr
    st = json.load(open(state))
    focus = st.get("hang_focus")
    assert focus and focus["rule"] == "stuck-collective" and focus["culprits"] == [5], focus
    assert st["selected"] == focus["collective"], (st["selected"], focus)
    assert st.get("selected_ranks") == 7, st.get("selected_ranks")  # every rank but the stuck one
    names = [l["name"] for l in st["lanes"]]
    assert "rank 5 << stuck-collective" in names, names[:10]
    assert sum(1 for n in names if "<<" in n) == 1, names
    t0, t1 = st["range_ns"]
    r2 = subprocess.run([env.ringside, "report", "--format", "json", trace], capture_output=True, text=True)
    rep = json.loads(r2.stdout)
    start = rep["window"]["start_ns"]
    by_seq = {c["seq"]: c for c in rep["collectives"]}
    assert t0 <= by_seq[4]["first_start_ns"] - start, (t0, by_seq[4])
    assert t1 >= rep["window"]["end_ns"] - start, (t1, rep["window"])
    w, h, _ = read_png(png)
    assert (w, h) == (1280, 800), (w, h)
    print(f"hang: opened at collective {focus['collective']} (#5), rank 5 marked, view {t0}..{t1} ns; {png}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--scenario", required=True, choices=["compare", "ddp", "input", "errors", "agree", "subrows", "zoom", "scale", "scale16k", "hang"])
    p.add_argument("--bin", required=True, help="the build's bin folder (ringside, ringside-view)")
    p.add_argument("--keep", action="store_true")
    args = p.parse_args()
    env = Env(args)
    try:
        globals()["scenario_" + args.scenario](env)
    finally:
        env.done()
    print("OK")


if __name__ == "__main__":
    main()
