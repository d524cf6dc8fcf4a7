"""Checks a `ringside export --perfetto` file: valid JSON, the trace-event shape,
one process per rank, complete events with the documented args."""
import json
import sys

path, ranks = sys.argv[1], int(sys.argv[2])
with open(path, encoding="utf-8") as f:
    doc = json.load(f)
assert doc["displayTimeUnit"] == "ns", doc.get("displayTimeUnit")
events = doc["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in events
         if e["ph"] == "M" and e["name"] == "process_name"}
assert sorted(names) == list(range(ranks)), names
for pid, name in names.items():
    assert name.startswith("rank %d" % pid), name
complete = [e for e in events if e["ph"] == "X"]
colls = [e for e in complete if e["cat"] == "collective"]
xfers = [e for e in complete if e["cat"] == "transfer"]
assert colls and xfers, (len(colls), len(xfers))
assert {e["pid"] for e in colls} == set(range(ranks))
for e in colls:
    for key in ("op", "bytes", "comm", "seq", "library", "algorithm"):
        assert key in e["args"], (key, e)
    assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0
for e in xfers:
    assert "phase" in e["args"] and "step" in e["args"], e
tracks = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
assert {(e["pid"], e["tid"]) for e in complete} <= tracks
print("ok: %d collectives, %d transfers, %d ranks" % (len(colls), len(xfers), len(names)))
