#!/usr/bin/env python3
"""Merging merged traces: 16 generated ranks on 4 hosts merged in one step, then per node (4 node
traces, merged again, given in shuffled order) and mixed (2 node traces plus the other 8 rank
files). Both results equal the one-step merge: every table row for row (ids included; the meta
table but for merged_at_unix_ns, the merge time), `report --format json` (but for "trace", the
path of the trace) and every `report --format csv` table. Two inputs holding one rank fail the
merge with a one-line message naming the rank.

usage: merge_merged_e2e.py TRACE_GEN RINGSIDE
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile


def run(argv, want_rc=0):
    p = subprocess.run(argv, capture_output=True, text=True, check=False)
    if p.returncode != want_rc:
        sys.exit(f"FAIL: {' '.join(argv)} exited {p.returncode} (want {want_rc}): "
                 f"{p.stderr.strip()}")
    return p


def rows(trace):
    """Every table's rows in storage order; meta without the merge time."""
    db = sqlite3.connect(f"file:{trace}?mode=ro", uri=True)
    out = {}
    for (name,) in db.execute("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name"):
        if name == "meta":
            sql = "SELECT * FROM meta WHERE key != 'merged_at_unix_ns' ORDER BY key"
        else:
            sql = f"SELECT * FROM {name} ORDER BY rowid"
        out[name] = db.execute(sql).fetchall()
    db.close()
    return out


def readers(ringside, trace, tmp, tag):
    """The JSON report without its "trace" field, and the CSV tables by name."""
    report = json.loads(run([ringside, "report", "--format", "json", trace]).stdout)
    report.pop("trace", None)
    folder = os.path.join(tmp, f"{tag}.csv")
    run([ringside, "report", "--format", "csv", trace, "-o", folder])
    csv = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            csv[name] = f.read()
    return report, csv


def main():
    gen, ringside = sys.argv[1], sys.argv[2]
    failures = []
    with tempfile.TemporaryDirectory(prefix="ringside-merge2-") as tmp:
        ranks = os.path.join(tmp, "ranks")
        run([gen, "--out", ranks, "--ranks", "16", "--hosts", "4", "--collectives", "6",
             "--steps", "3", "--receives", "--straggler", "5:1000", "--slow-link", "9-10:4"])
        rank_file = lambda r: os.path.join(ranks, f"rank-{r}.sqlite")  # noqa: E731
        one = os.path.join(tmp, "one.sqlite")
        run([ringside, "merge", ranks, "-o", one, "-q"])
        nodes = []
        for k in range(4):
            node = os.path.join(tmp, f"node-{k}.sqlite")
            run([ringside, "merge", *[rank_file(4 * k + i) for i in range(4)], "-o", node, "-q"])
            nodes.append(node)
        two = os.path.join(tmp, "two.sqlite")
        run([ringside, "merge", nodes[2], nodes[0], nodes[3], nodes[1], "-o", two, "-q"])
        mixed = os.path.join(tmp, "mixed.sqlite")
        run([ringside, "merge", nodes[0], *[rank_file(r) for r in range(4, 8)], nodes[2],
             *[rank_file(r) for r in range(12, 16)], "-o", mixed, "-q"])

        want_rows = rows(one)
        want_json, want_csv = readers(ringside, one, tmp, "one")
        print(f"  one-step merge: {', '.join(f'{n} {len(r)}' for n, r in want_rows.items())}")
        for tag, trace in (("per node", two), ("mixed", mixed)):
            got_rows = rows(trace)
            for name in sorted(set(want_rows) | set(got_rows)):
                if want_rows.get(name) != got_rows.get(name):
                    failures.append(f"{tag}: table {name} differs from the one-step merge "
                                    f"({len(want_rows.get(name, []))} vs "
                                    f"{len(got_rows.get(name, []))} rows)")
            got_json, got_csv = readers(ringside, trace, tmp, tag.replace(" ", "-"))
            if got_json != want_json:
                keys = [k for k in want_json if want_json.get(k) != got_json.get(k)]
                failures.append(f"{tag}: report --format json differs in {keys}")
            for name in sorted(set(want_csv) | set(got_csv)):
                if want_csv.get(name) != got_csv.get(name):
                    failures.append(f"{tag}: report --format csv table {name} differs")

        # A rank in two inputs: exit 1, one line naming the rank.
        p = run([ringside, "merge", nodes[0], rank_file(3), "-o", os.path.join(tmp, "bad.sqlite"),
                 "-q"], want_rc=1)
        err = p.stderr.strip()
        if "\n" in err or "rank 3" not in err:
            failures.append(f"overlap: want one line naming rank 3, got {err!r}")
        if os.path.exists(os.path.join(tmp, "bad.sqlite")):
            failures.append("overlap: an output was written")
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print("PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
