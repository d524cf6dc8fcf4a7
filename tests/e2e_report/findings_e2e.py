#!/usr/bin/env python3
"""The findings on real DDP runs (issue 11), 4 ranks on one host, ~20 s in all:

- the multi-bucket run (--hidden 1024 --bucket-cap-mb 1): no algorithm finding that names the
  tree, and the what-if does not call the tree best: on one host a rank's tree edges share its
  one link, so the report prices the tree as `ringside bench` does, slower than the ring (bench
  measured it 7 % slower a call on such a job; the per-edge price used to warn "tree predicted
  29% faster", issue 26); no idle-links finding (a ring on one host uses 4 of its 12 links by
  design);
  and the first finding is about waiting for late ranks (late-ranks or waiting) with its
  per-step cost, or, on a 2-core host its 4 ranks crowd, the oversubscribed finding late-ranks
  defers to when it names the late rank and its share of the waiting;
- a balanced, healthy run (the default sample with rank 0's per-step loss print off,
  --log-every 0): no problem-level finding at all, and no idle-links finding;
- the multi-bucket run's start-up broadcast (DDP's parameters, 4.2 MiB over links 0->1, 0->2
  and 1->3) made to look as a crowded host made it once (this test then failed now and then):
  the relay's link 1->3 >= 6x slower than its two peers, by ending their receives earlier. One
  call never names a slow link (docs/analyzer.md "Slow links, judged call by call").

Usage: findings_e2e.py RINGSIDE PYTHON SAMPLE. Exits 77 when PYTHON cannot import torch.
"""
import json
import re
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

SKIP = 77


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def record(ringside, python, sample, out, extra):
    cmd = [ringside, "record", "--ranks", "4", "-o", out, "--", python, sample] + extra
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    if r.returncode != 0:
        fail("record failed: %s\n%s" % (" ".join(cmd), r.stderr[-2000:]))


def report(ringside, trace):
    r = subprocess.run([ringside, "report", "--format", "json", trace], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        fail("report failed: " + r.stderr)
    return json.loads(r.stdout)


def findings(ringside, trace):
    return report(ringside, trace)["findings"]


def late_relay(trace, out):
    """A copy of `trace` whose broadcasts have link 1->3 >= 6x slower than 0->1 and 0->2: in the
    largest (DDP's parameters) their receives end when they would at 6x 1->3's rate, in the
    others (a few bytes) at that rate too (never later than they did). Busy time starts when the
    sender entered the call (docs/metrics.md). Returns 1->3's factor over all broadcasts."""
    shutil.copyfile(trace, out)
    db = sqlite3.connect(out)
    rows = db.execute(
        "SELECT t.id, t.src_rank, t.dst_rank, t.start_ns, t.end_ns, t.bytes, c.seq FROM transfer t "
        "JOIN collective c ON c.id = t.collective_id WHERE c.op = 'broadcast' "
        "AND t.side = 'recv'").fetchall()
    entry = {(seq, r): t for seq, r, t in db.execute(
        "SELECT seq, rank, start_ns FROM collective WHERE op = 'broadcast'")}
    links = {}  # (src, dst) -> [(row id, moving from, end, bytes)]
    for i, src, dst, st, en, size, seq in rows:
        moving = max(st, min(entry.get((seq, src), st), en))
        links.setdefault((src, dst), []).append((i, moving, en, size))
    if sorted(links) != [(0, 1), (0, 2), (1, 3)]:
        fail("the broadcasts are not over links 0->1, 0->2, 1->3: %s" % sorted(links))
    big = max(links[(1, 3)], key=lambda r: r[3])
    ns_per_byte = (big[2] - big[1]) / big[3] / 6
    busy = {}
    for k in ((0, 1), (0, 2)):
        for i, mv, en, size in links[k]:
            end = min(en, mv + int(size * ns_per_byte))
            db.execute("UPDATE transfer_data SET end_ns = ? WHERE id = ?", (end, i))
            busy[k] = busy.get(k, 0) + end - mv
    db.commit()
    db.close()
    relay = sum(en - mv for _, mv, en, _ in links[(1, 3)])
    return relay / max(1, max(busy.values()))


def main():
    ringside, python, sample = sys.argv[1:4]
    probe = subprocess.run([python, "-c", "import torch, torch.distributed as d; "
                            "assert d.is_gloo_available()"], capture_output=True, text=True)
    if probe.returncode != 0:
        print("skip: %s cannot import torch with Gloo (install python3-torch)" % python)
        sys.exit(SKIP)
    with tempfile.TemporaryDirectory(prefix="ringside-findings-") as tmp:
        multi = os.path.join(tmp, "multi.sqlite")
        record(ringside, python, sample, multi,
               ["--hidden", "1024", "--bucket-cap-mb", "1", "--steps", "20"])
        doc = report(ringside, multi)
        fs = doc["findings"]
        print(json.dumps(fs, indent=1))
        print(json.dumps(doc.get("what_if"), indent=1))
        tree = [f for f in fs if f["rule"] == "algorithm" and "tree predicted" in f["message"]]
        if tree:
            fail("a tree finding on one host, where the tree shares each rank's link: %s" % tree[0])
        whatifs = doc.get("what_if") or []
        if not whatifs:
            fail("no what-if on the multi-bucket run")
        if any(w.get("best") == "tree" for w in whatifs):
            fail("the what-if calls the tree best on one host: %s" % whatifs)
        tree_rows = [a for w in whatifs for a in w.get("algorithms", []) if a.get("algorithm") == "tree"]
        if not any((a.get("predicted_ns") or -1) > 0 for a in tree_rows):
            fail("the what-if does not predict the tree: %s" % whatifs)
        if any(f["rule"] == "idle-links" for f in fs):
            fail("idle-links finding for a ring on one host")
        # oversubscribed judges the host, not the job: 4 ranks on a 2-core CI machine shared
        # with builds get it (a problem, so first); the rest must still lead with the waiting.
        # Where it names the late rank busy on that host, late-ranks defers to it (its cause,
        # docs/analyzer.md): then it is the waiting finding and must say the rank's share.
        deferred = [f for f in fs if f["rule"] in ("oversubscribed", "descheduled") and
                    re.search(r"rank \d+ (is late )?\(it caused \d+% of the waiting\)", f["message"])]
        if deferred:
            if any(f["rule"] == "late-ranks" for f in fs):
                fail("late-ranks beside the cause it defers to: %s" % deferred[0])
            fs = [f for f in fs if f["rule"] != "oversubscribed" or f is deferred[0]]
        else:
            fs = [f for f in fs if f["rule"] != "oversubscribed"]
        first = fs[0]
        if not deferred and (first["rule"] not in ("late-ranks", "waiting") or "wait" not in first["message"]):
            fail("the first finding is not about waiting for late ranks: %s" % first)
        if deferred and first is not deferred[0]:
            fail("the late rank's cause is not the first finding: %s" % first)
        if first["rule"] == "waiting" and "per rank and step" not in first["message"]:
            fail("the waiting finding has no per-step cost: %s" % first)
        costs = [(f["severity"], f["cost_ns"]) for f in fs]
        for (s1, c1), (s2, c2) in zip(costs, costs[1:]):
            if s1 == s2 and c1 < c2:
                fail("findings not ordered by time at stake: %s" % costs)

        late = os.path.join(tmp, "late-relay.sqlite")
        factor = late_relay(multi, late)
        slow = [f for f in findings(ringside, late) if f["rule"] == "slow-link"]
        print("start-up broadcast with link 1->3 %.1fx slower than its peers: %s" % (factor, slow))
        if factor < 6 or slow:
            fail("one slow broadcast named a slow link (%.1fx): %s" % (factor, slow))

        healthy = os.path.join(tmp, "healthy.sqlite")
        record(ringside, python, sample, healthy, ["--log-every", "0"])
        fs = findings(ringside, healthy)
        print(json.dumps(fs, indent=1))
        bad = [f for f in fs if f["severity"] == "problem" and f["rule"] != "oversubscribed"]
        if bad or any(f["rule"] == "idle-links" for f in fs):
            fail("findings on a healthy run: %s" % fs)
    print("ok")


if __name__ == "__main__":
    main()
