#!/usr/bin/env python3
"""The findings on real DDP runs (issue 11), 4 ranks on one host, ~20 s in all:

- the multi-bucket run (--hidden 1024 --bucket-cap-mb 1): an algorithm finding that names the
  tree, with the predicted gain and the exact A/B commands; no idle-links finding (a ring on
  one host uses 4 of its 12 links by design);
  and the first finding is about waiting for late ranks (late-ranks or waiting) with its
  per-step cost;
- a balanced, healthy run (the default sample with rank 0's per-step loss print off,
  --log-every 0): no problem-level finding at all, and no idle-links finding.

Usage: findings_e2e.py RINGSIDE PYTHON SAMPLE. Exits 77 when PYTHON cannot import torch.
"""
import json
import os
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


def findings(ringside, trace):
    r = subprocess.run([ringside, "report", "--format", "json", trace], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        fail("report failed: " + r.stderr)
    return json.loads(r.stdout)["findings"]


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
        fs = findings(ringside, multi)
        print(json.dumps(fs, indent=1))
        algo = [f for f in fs if f["rule"] == "algorithm"]
        if not algo:
            fail("no algorithm finding on the multi-bucket run")
        a = algo[0]
        if "tree predicted" not in a["message"] or "per call" not in a["message"]:
            fail("the algorithm finding does not name the tree's gain: " + a["message"])
        if a["cost_ns"] <= 0:
            fail("the algorithm finding has no time at stake")
        want = ("ringside record --ranks 4 --allreduce tree -o tree.sqlite -- %s %s --hidden 1024"
                % (python, sample))
        if want not in a["try"] or ("ringside diff %s tree.sqlite" % multi) not in a["try"]:
            fail("the algorithm finding's try line is not the A/B command: " + a["try"])
        if any(f["rule"] == "idle-links" for f in fs):
            fail("idle-links finding for a ring on one host")
        first = fs[0]
        if first["rule"] not in ("late-ranks", "waiting") or "wait" not in first["message"]:
            fail("the first finding is not about waiting for late ranks: %s" % first)
        if first["rule"] == "waiting" and "per rank and step" not in first["message"]:
            fail("the waiting finding has no per-step cost: %s" % first)
        costs = [(f["severity"], f["cost_ns"]) for f in fs]
        for (s1, c1), (s2, c2) in zip(costs, costs[1:]):
            if s1 == s2 and c1 < c2:
                fail("findings not ordered by time at stake: %s" % costs)

        healthy = os.path.join(tmp, "healthy.sqlite")
        record(ringside, python, sample, healthy, ["--log-every", "0"])
        fs = findings(ringside, healthy)
        print(json.dumps(fs, indent=1))
        bad = [f for f in fs if f["severity"] == "problem"]
        if bad or any(f["rule"] == "idle-links" for f in fs):
            fail("findings on a healthy run: %s" % fs)
    print("ok")


if __name__ == "__main__":
    main()
