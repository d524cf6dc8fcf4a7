#!/usr/bin/env python3
"""Merge across nodes, as a job's launcher runs it (docs/multi-node.md, "Merging on the nodes"):
256 generated ranks on 32 hosts, each host on clocks of its own (monotonic hours ahead, wall
clock milliseconds off), rank files in one node-K folder per host (`trace_gen --node-folders
--host-clocks`, the layout of `record --nnodes`). Each node's folder is merged into a node trace,
several at once, then one merge of the 32 node traces gives the trace (the node traces given by
name, and their folder). It must equal the one-step merge of all rank files: every table row for
row (the clock model included; meta but for the merge time), rows per table, per rank and per
link checked against the rank files, and every rank's aligned times on one time line with the
others' (the generator starts every rank at true time 0, so a rank's start_ns is its host's
monotonic offset).

usage: merge_nodes_e2e.py TRACE_GEN RINGSIDE
"""
import concurrent.futures
import os
import sqlite3
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from merge_merged_e2e import rows, run  # noqa: E402
from merge_rows_1024_e2e import add, compare, counts, rank_files_reference  # noqa: E402

RANKS, HOSTS = 256, 32
# Aligned minus true time of every call, across all ranks: within this of each other.
ALIGN_TOLERANCE_NS = 100_000


def timed(what, argv):
    start = time.monotonic()
    p = run(argv)
    print(f"  {what}: {time.monotonic() - start:.1f} s")
    return p


def merge_per_node(ringside, folder, tmp):
    """Every node-K folder merged into tmp/nodes/node-K.sqlite, as many at once as there are
    cores."""
    nodes = sorted(n for n in os.listdir(folder) if n.startswith("node-"))
    os.makedirs(os.path.join(tmp, "nodes"))
    outs = [os.path.join(tmp, "nodes", f"{n}.sqlite") for n in nodes]
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        list(pool.map(lambda n, o: run([ringside, "merge", os.path.join(folder, n), "-o", o, "-q"]),
                      nodes, outs))
    print(f"  {len(nodes)} per-node merges: {time.monotonic() - start:.1f} s")
    return outs


def alignment_spread(trace):
    """(min, max) over all calls of aligned start minus true start (start_ns - rank.start_ns)."""
    db = sqlite3.connect(f"file:{trace}?mode=ro", uri=True)
    try:
        return db.execute("SELECT min(d), max(d), count(DISTINCT host) FROM (SELECT "
                          "c.start_aligned_ns - (c.start_ns - r.start_ns) AS d, r.host AS host "
                          "FROM collective AS c JOIN rank AS r ON r.rank = c.rank)").fetchone()
    finally:
        db.close()


def main():
    gen, ringside = sys.argv[1], sys.argv[2]
    failures = []
    with tempfile.TemporaryDirectory(prefix="ringside-merge-nodes-") as tmp:
        folder = os.path.join(tmp, "ranks")
        timed("generate", [gen, "--out", folder, "--ranks", str(RANKS), "--hosts", str(HOSTS),
                           "--algo", "tree", "--collectives", "4", "--steps", "2", "--bytes", "64K",
                           "--receives", "--node-folders", "--host-clocks", "--straggler", "77:1500",
                           "--slow-link", "200-99:6", "--seed", "5", "--no-fsync"])
        direct = os.path.join(tmp, "direct.sqlite")
        timed("one-step merge", [ringside, "merge", folder, "-o", direct, "-q"])
        nodes = merge_per_node(ringside, folder, tmp)
        # The node traces by name (in another order), and their folder (a folder of merged
        # traces and nothing else: they are merged).
        by_name = os.path.join(tmp, "by-name.sqlite")
        timed("merge of the node traces", [ringside, "merge", *reversed(nodes), "-o", by_name, "-q"])
        trace = os.path.join(tmp, "trace.sqlite")
        timed("merge of their folder", [ringside, "merge", os.path.join(tmp, "nodes"), "-o", trace,
                                        "-q"])
        want = rows(direct)
        for tag, merged in (("by name", by_name), ("folder", trace)):
            got = rows(merged)
            for name in sorted(set(want) | set(got)):
                if want.get(name) != got.get(name):
                    failures.append(f"{tag}: table {name} differs from the one-step merge "
                                    f"({len(want.get(name, []))} vs {len(got.get(name, []))} rows)")
        print(f"  tables: {', '.join(f'{n} {len(r)}' for n, r in sorted(got.items()))}")
        want_tables, want_ranks, want_links = rank_files_reference_nodes(folder)
        db = sqlite3.connect(f"file:{trace}?mode=ro", uri=True)
        got_tables, got_ranks, got_links = counts(db)
        meta = dict(db.execute("SELECT key, value FROM meta"))
        db.close()
        compare("rows per table", want_tables, got_tables, failures)
        compare("rows per rank", want_ranks, got_ranks, failures)
        compare("per-link messages and bytes", want_links, got_links, failures)
        if meta.get("clock_domains") != str(HOSTS) or meta.get("clock_method") != "evidence":
            failures.append(f"clock model: {meta.get('clock_domains')} domains by "
                            f"{meta.get('clock_method')}, want {HOSTS} by evidence")
        if meta.get("ranks") != str(RANKS) or meta.get("missing_ranks"):
            failures.append(f"meta: ranks {meta.get('ranks')}, missing {meta.get('missing_ranks')}")
        lo, hi, hosts = alignment_spread(trace)
        print(f"  aligned - true start over {hosts} hosts: {lo} .. {hi} ns")
        if hosts != HOSTS or hi - lo > ALIGN_TOLERANCE_NS:
            failures.append(f"clocks not aligned: aligned - true start spans {hi - lo} ns over "
                            f"{hosts} hosts (want <= {ALIGN_TOLERANCE_NS})")
    for f in failures:
        print(f"FAIL: {f}")
    if failures:
        return 1
    print(f"OK: {HOSTS} node traces merged equal the one-step merge of {RANKS} rank files")
    return 0


def rank_files_reference_nodes(folder):
    """rank_files_reference over every node-K folder, summed."""
    total = ({}, {}, {})
    for node in sorted(os.listdir(folder)):
        for into, part in zip(total, rank_files_reference(os.path.join(folder, node))):
            add(into, part)
    return total


if __name__ == "__main__":
    sys.exit(main())
