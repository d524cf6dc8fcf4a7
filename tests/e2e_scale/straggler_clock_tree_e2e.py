#!/usr/bin/env python3
"""A straggler deep in a tree of hosts is named, not lost in the clocks' compounded uncertainty.

128 generated ranks, one per host, on clocks of their own, running tree all-reduces of 1 MiB with
every message recorded on both sides; rank 127, a leaf seven host levels down, enters every call
600 us late. Each host is placed through its parent's messages, so its uncertainty against the
reference grows by about +/-110 us per level (+/-770 us at the leaves) and the sum of two hosts'
uncertainties passes 600 us. The merge keeps the fit's tree of domains (clock_domain.parent,
parent_uncertainty_ns): between rank 127's host and its parent's, who exchanged messages, the
clocks are known to +/-110 us, and the report names rank 127 as the late rank. Also checked:
  - the tree: rooted at the reference, each host hung from its parent in the all-reduce's tree;
  - soundness: every host's error against the truth (trace_gen starts each rank at true time 0,
    so rank.start_ns maps to the same instant on every host) lies within its uncertainty, and
    every pair's relative error within the bound along the tree between them (trace_gen's
    latencies are the same both ways, so the errors here are near 0; tests/unit/align
    PairBoundsFollowTheTreeOfMessages makes them 60 us);
  - the same trace with the tree taken out (as a model written before schema 7 reads) gives the
    clock-uncertainty warning, as before.

usage: straggler_clock_tree_e2e.py TRACE_GEN RINGSIDE
"""
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_256_e2e import findings  # noqa: E402

RANKS = 128
STRAGGLER = 127
DELAY_US = 600


def run(argv):
    p = subprocess.run(argv, capture_output=True, text=True, check=False)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(argv[:2])} exited {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def aligned(segments, t):
    """t mapped as storage::ClockMap does (the first piece also covers every time before it)."""
    if not segments:
        return t
    lo, _hi, ref, offset, rate = segments[0]
    for s in segments:
        if s[0] <= t:
            lo, _hi, ref, offset, rate = s
    return t + offset + round((t - ref) * rate)


def model(trace):
    db = sqlite3.connect(f"file:{trace}?mode=ro", uri=True)
    domains = {d: (u, p, pu) for d, u, p, pu in db.execute(
        "SELECT id, uncertainty_ns, parent, parent_uncertainty_ns FROM clock_domain")}
    segments = {}
    for row in db.execute("SELECT domain, lo_ns, hi_ns, ref_ns, offset_ns, rate FROM clock_segment "
                          "ORDER BY domain, lo_ns"):
        segments.setdefault(row[0], []).append(row[1:])
    # Each domain's error: where its first rank's start (true time 0) lands, against the reference.
    start = {}
    for domain, rank, start_ns in db.execute(
            "SELECT k.domain, r.rank, r.start_ns FROM clock_rank k JOIN rank r ON r.rank = k.rank "
            "ORDER BY r.rank"):
        start.setdefault(domain, aligned(segments.get(domain, []), start_ns))
    db.close()
    err = {d: start[d] - start[0] for d in domains}
    return domains, err


def pair_bound(domains, a, b):
    """ClockModel::pairUncertaintyNs: the tree path between a and b, at most the sum."""
    best = domains[a][0] + domains[b][0]
    up, at, dist = {}, a, 0
    while at is not None and at not in up:
        up[at] = dist
        _, parent, bound = domains[at]
        at, dist = parent, dist + (bound or 0)
    at, dist = b, 0
    for _ in range(len(domains) + 1):
        if at in up:
            return min(best, dist + up[at])
        _, parent, bound = domains[at]
        if parent is None:
            break
        at, dist = parent, dist + bound
    return best


def check_tree(trace, failures):
    domains, err = model(trace)
    if len(domains) != RANKS:
        failures.append(f"{len(domains)} clock domains, want {RANKS}")
        return
    for d, (u, parent, bound) in domains.items():
        want = None if d == 0 else (d - 1) // 2  # host h's parent in the all-reduce's tree
        if parent != want:
            failures.append(f"domain {d} hangs from {parent}, want {want}")
        if abs(err[d]) > u:
            failures.append(f"domain {d} is {err[d]} ns off the truth, beyond its ±{u} ns")
    worst = 0.0
    for a in domains:
        for b in domains:
            bound = pair_bound(domains, a, b)
            if abs(err[a] - err[b]) > bound:
                failures.append(f"domains {a}, {b}: {err[a] - err[b]} ns apart, beyond ±{bound} ns")
            worst = max(worst, abs(err[a] - err[b]) / max(bound, 1))
    leaf, parent = STRAGGLER, (STRAGGLER - 1) // 2
    link = pair_bound(domains, leaf, parent)
    total = domains[leaf][0] + domains[parent][0]
    print(f"  straggler's host vs its parent's: ±{link / 1000:.0f} us along the tree, "
          f"±{total / 1000:.0f} us by the sum; worst |error| / bound over all pairs {worst:.2f}")
    if not link < DELAY_US * 1000 / 2 < total:
        failures.append(f"the pair bound ±{link} ns (sum ±{total} ns) does not show the case")


def main():
    gen, ringside = sys.argv[1], sys.argv[2]
    failures = []
    with tempfile.TemporaryDirectory(prefix="ringside-clock-tree-") as tmp:
        ranks_dir, trace, old = f"{tmp}/ranks", f"{tmp}/trace.sqlite", f"{tmp}/no-tree.sqlite"
        run([gen, "--out", ranks_dir, "--ranks", str(RANKS), "--hosts", str(RANKS), "--algo", "tree",
             "--collectives", "8", "--steps", "4", "--bytes", "1M", "--receives", "--host-clocks",
             "--straggler", f"{STRAGGLER}:{DELAY_US}", "--no-fsync"])
        run([ringside, "merge", ranks_dir, "-o", trace, "-q"])
        check_tree(trace, failures)
        found = findings(run([ringside, "report", trace]))
        print(f"  findings:\n{found}")
        if f"rank {STRAGGLER} arrives last" not in found or "beyond the clock uncertainty" not in found:
            failures.append(f"rank {STRAGGLER} is not named a late rank beyond the clock uncertainty")
        if "within the clock uncertainty" in found:
            failures.append("a clock-uncertainty warning with the tree of domains")
        shutil.copyfile(trace, old)
        db = sqlite3.connect(old)
        db.execute("UPDATE clock_domain SET parent = NULL, parent_uncertainty_ns = NULL")
        db.commit()
        db.close()
        found = findings(run([ringside, "report", old]))
        print(f"  without the tree:\n{found}")
        if f"rank {STRAGGLER} arrived last in 100% of steps, within the clock uncertainty" not in found:
            failures.append("without the tree the straggler is not the clock-uncertainty warning")
    print("\n".join(f"FAIL: {f}" for f in failures[:20]) if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
