"""Validates a `ringside export --perfetto` file against the trace-event rules and the trace.

Usage: check_perfetto.py FILE.json RANKS [TRACE.sqlite] [--all-flows]

The trace-event rules (what Perfetto and chrome://tracing need to draw a file as written):
- valid JSON: {"displayTimeUnit": "ns", "traceEvents": [...]}; every event has a known phase,
  integer pid (and tid where the phase needs one), numeric ts;
- complete events ("X") on one track (pid, tid) nest: two slices are disjoint or one holds the
  other, never a partial overlap; dur >= 0;
- begin/end events ("B"/"E"), if any, balance per track, in time order;
- counters ("C") have numeric, finite values; each counter track's points are in time order;
- flow events ("s"/"f") come in pairs per (cat, name, id), each inside a slice of its own track
  (the "f" binds to its enclosing slice: "bp":"e");
- every track with slices is named (thread_name), every rank is a named process.
With TRACE.sqlite, also what the export says about the trace: one slice per call and per message,
the message count and the bytes (the counter's integral) per link equal the trace's.
--all-flows: every send has its arrow to its receive (a trace with no message cut off).
Times are compared exactly, in integer nanoseconds (ts is microseconds with 3 decimals).
Standard library only.
"""
import bisect
import json
import math
import re
import sqlite3
import sys
from collections import defaultdict
from decimal import Decimal

PHASES = set("XBEiIsftCMbenO")
NAME = re.compile(r"^(send|recv) (\d+|\?)->(\d+|\?)( [a-z-]+)? \d+(\.\d)? (B|KiB|MiB|GiB|TiB)"
                  r"( \(never completed\))?$")
errors = []


def fail(msg):
    errors.append(msg)
    if len(errors) > 20:
        report()


def report():
    for e in errors[:20]:
        print("FAIL: " + e)
    if len(errors) > 20:
        print("... and more")
    sys.exit(1)


def ns(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
        fail("%s: not a number: %r" % (what, value))
        return 0
    return int((Decimal(value) * 1000).to_integral_value())


def check_nesting(slices):
    """slices: {(pid, tid): [(start, end, name)]}; a partial overlap is an error."""
    partial = 0
    for track, items in slices.items():
        items.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for start, end, name in items:
            while stack and stack[-1][1] <= start:
                stack.pop()
            if stack and end > stack[-1][1]:
                partial += 1
                if partial <= 5:
                    fail("track %s: %r [%d, %d] partially overlaps %r [%d, %d]" %
                         (track, name, start, end, stack[-1][2], stack[-1][0], stack[-1][1]))
                continue
            stack.append((start, end, name))
    if partial > 5:
        fail("%d slices partially overlap another on their track" % partial)


def check_begin_end(events):
    stacks = defaultdict(list)
    last = {}
    for e in events:
        if e["ph"] not in "BE":
            continue
        key = (e["pid"], e["tid"])
        t = ns(e["ts"], "B/E ts")
        if t < last.get(key, t):
            fail("B/E out of time order on %s" % (key,))
        last[key] = t
        if e["ph"] == "B":
            stacks[key].append(e.get("name"))
        elif not stacks[key]:
            fail("E without B on %s" % (key,))
        else:
            stacks[key].pop()
    for key, st in stacks.items():
        if st:
            fail("%d B without E on %s" % (len(st), key))


def check_flows(events, slices):
    ends = defaultdict(lambda: {"s": [], "f": []})
    for e in events:
        if e["ph"] in "sft":
            if e["ph"] == "t":
                continue
            ends[(e.get("cat"), e.get("name"), e.get("id"))][e["ph"]].append(e)
    by_track = {}
    for track, items in slices.items():
        by_track[track] = sorted(items)
    for key, sides in ends.items():
        if len(sides["s"]) != 1 or len(sides["f"]) != 1:
            fail("flow %s: %d starts and %d ends" % (key, len(sides["s"]), len(sides["f"])))
            continue
        for e in (sides["s"][0], sides["f"][0]):
            if e["ph"] == "f" and e.get("bp") != "e":
                fail("flow end %s does not bind to its enclosing slice (bp)" % (key,))
            t = ns(e["ts"], "flow ts")
            items = by_track.get((e["pid"], e["tid"]), [])
            i = bisect.bisect_right(items, (t, math.inf, ""))
            # The slice that starts last at or before t must hold it (slices do not overlap
            # partially, and ringside's lanes hold no nested slices).
            if i == 0 or not (items[i - 1][0] <= t <= items[i - 1][1]) or \
                    items[i - 1][1] == items[i - 1][0]:
                fail("flow %s: %s at %d binds to no slice on track %s" %
                     (key, e["ph"], t, (e["pid"], e["tid"])))
    return len(ends)


def check_counters(events):
    """Returns {(pid, name, key): [(ts, value)]} after checking values and order."""
    tracks = defaultdict(list)
    for e in events:
        if e["ph"] != "C":
            continue
        args = e.get("args")
        if not isinstance(args, dict) or not args:
            fail("counter without values: %r" % e)
            continue
        for k, v in args.items():
            if isinstance(v, bool) or not isinstance(v, (int, Decimal)) or \
                    not math.isfinite(float(v)):
                fail("counter %r: value %r is not a number" % (e.get("name"), v))
                continue
            tracks[(e["pid"], e.get("name"), k)].append((ns(e["ts"], "counter ts"), v))
    for key, points in tracks.items():
        for (t1, _), (t2, _) in zip(points, points[1:]):
            if t2 <= t1:
                fail("counter %s: points out of time order (%d then %d)" % (key, t1, t2))
                break
    return tracks


def counter_bytes(points):
    """The bytes a rate counter says were carried: its integral, up to its last point."""
    total = Decimal(0)
    for (t1, v), (t2, _) in zip(points, points[1:]):
        total += Decimal(v) * (t2 - t1) / Decimal(10**9)
    return total


def check_against_trace(trace, colls, xfers, counters, flows, all_flows):
    db = sqlite3.connect("file:%s?mode=ro" % trace, uri=True)
    n_calls = db.execute("SELECT count(*) FROM collective").fetchone()[0]
    if n_calls != len(colls):
        fail("%d collective slices, the trace has %d calls" % (len(colls), n_calls))
    n_xfers = db.execute("SELECT count(*) FROM transfer WHERE CASE WHEN side = 'send' "
                         "THEN src_rank ELSE dst_rank END IS NOT NULL").fetchone()[0]
    if n_xfers != len(xfers):
        fail("%d transfer slices, the trace has %d messages with a recording rank" %
             (len(xfers), n_xfers))
    want = {(s, d): (n, b) for s, d, n, b in db.execute(
        "SELECT src_rank, dst_rank, count(*), sum(bytes) FROM transfer WHERE side = 'send' "
        "AND src_rank IS NOT NULL GROUP BY 1, 2")}
    got = defaultdict(int)
    for e in xfers:
        if e["args"]["side"] == "send":
            got[(e["args"]["src"], e["args"]["dst"] if e["args"]["dst"] >= 0 else None)] += 1
    for link in set(want) | set(got):
        if want.get(link, (0, 0))[0] != got.get(link, 0):
            fail("link %s->%s: %d send slices, the trace has %d sends" %
                 (link[0], link[1], got.get(link, 0), want.get(link, (0, 0))[0]))
    for (src, dst), (n, nbytes) in want.items():
        if dst is None:
            continue
        points = counters.get((src, "link %d->%d" % (src, dst)))
        if points is None:
            fail("link %d->%d: no bytes/s counter" % (src, dst))
            continue
        carried = counter_bytes(points)
        if abs(carried - nbytes) > Decimal(nbytes) / 1000 + len(points):
            fail("link %d->%d: the counter integrates to %s bytes, the trace has %d" %
                 (src, dst, carried, nbytes))
    sends = sum(n for n, _ in want.values())
    if flows > sends:
        fail("%d flows for %d sends" % (flows, sends))
    if all_flows and flows != sends:
        fail("%d of %d sends have an arrow to their receive" % (flows, sends))
    db.close()


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    all_flows = "--all-flows" in sys.argv
    path, ranks = args[0], int(args[1])
    trace = args[2] if len(args) > 2 else None
    with open(path, encoding="utf-8") as f:
        doc = json.load(f, parse_float=Decimal)
    if doc.get("displayTimeUnit") != "ns":
        fail("displayTimeUnit %r" % doc.get("displayTimeUnit"))
    events = doc["traceEvents"]
    for e in events:
        if e.get("ph") not in PHASES:
            fail("unknown phase: %r" % e)
        elif not isinstance(e.get("pid"), int) or isinstance(e.get("pid"), bool):
            fail("pid is not an integer: %r" % e)
        elif e["ph"] in "XBEsfM" and not isinstance(e.get("tid"), int):
            fail("tid is not an integer: %r" % e)
        elif e["ph"] != "M":
            ns(e.get("ts"), "ts of %s" % e.get("name"))
    if errors:
        report()
    names = {e["pid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "process_name"}
    if sorted(names) != list(range(ranks)):
        fail("processes %s, want ranks 0..%d" % (sorted(names), ranks - 1))
    for pid, name in names.items():
        if not name.startswith("rank %d" % pid):
            fail("process %d named %r" % (pid, name))
    tracks = {(e["pid"], e["tid"]) for e in events
              if e["ph"] == "M" and e["name"] == "thread_name"}
    complete = [e for e in events if e["ph"] == "X"]
    slices = defaultdict(list)
    for e in complete:
        start = ns(e["ts"], "ts")
        dur = ns(e.get("dur"), "dur")
        if dur < 0:
            fail("negative dur: %r" % e)
        slices[(e["pid"], e["tid"])].append((start, start + dur, e.get("name")))
        if (e["pid"], e["tid"]) not in tracks:
            fail("slice on an unnamed track: %r" % e)
    check_nesting(slices)
    check_begin_end(events)
    flows = check_flows(events, slices)
    counters = check_counters(events)
    colls = [e for e in complete if e.get("cat") == "collective"]
    xfers = [e for e in complete if e.get("cat") == "transfer"]
    if not colls or not xfers:
        fail("%d collectives, %d transfers" % (len(colls), len(xfers)))
    if {e["pid"] for e in colls} != set(range(ranks)):
        fail("collectives on processes %s" % sorted({e["pid"] for e in colls}))
    for e in colls:
        for key in ("op", "bytes", "comm", "seq", "library", "algorithm"):
            if key not in e["args"]:
                fail("collective without %s: %r" % (key, e))
                break
    for e in xfers:
        for key in ("src", "dst", "bytes", "side", "phase", "step", "chunk"):
            if key not in e["args"]:
                fail("transfer without %s: %r" % (key, e))
                break
        if not NAME.match(e["name"]):
            fail("transfer name %r does not say side, link, phase and size" % e["name"])
    link_counters = {(pid, name): pts for (pid, name, _), pts in counters.items()}
    if trace:
        check_against_trace(trace, colls, xfers, link_counters, flows, all_flows)
    if errors:
        report()
    print("ok: %d collectives, %d transfers, %d flows, %d counter tracks, %d tracks, %d ranks" %
          (len(colls), len(xfers), flows, len(counters), len(tracks), len(names)))


if __name__ == "__main__":
    main()
