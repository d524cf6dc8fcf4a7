#!/usr/bin/env python3
"""Merge at 1,024 generated ranks loses no row: 1,024 rank files (128 hosts, binary-tree
all-reduces, sends and receives) merged by `ringside merge`; the merged trace holds exactly the
rows the rank files hold, table by table and rank by rank, and every link's messages and byte
sums per side equal the rank files' (and what the generator says it wrote). A reference for merge
speed work (docs/bench.md): a faster merge may not drop, double or move a row.

usage: merge_rows_1024_e2e.py TRACE_GEN RINGSIDE
"""
import glob
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

RANKS, HOSTS, CALLS, BYTES = 1024, 128, 2, 65536
# Tables whose rows a merge copies (the rank table: one row per file).
TABLES = ("rank", "collective_data", "transfer_data", "communicator_data", "clock_anchor_data",
          "step_marker_data")
LINKS = ("SELECT t.src_rank, t.dst_rank, s.value, count(*), sum(t.bytes) FROM transfer_data AS t"
         " LEFT JOIN string AS s ON s.id = t.side_sid GROUP BY 1, 2, 3")


def run(argv, env=None):
    start = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(argv[:2])} exited {p.returncode}: {p.stderr.strip()}")
    print(f"  {os.path.basename(argv[0])} {argv[1]}: {time.monotonic() - start:.1f} s")
    return p


def counts(db, rank_of_file=None):
    """Rows per table; rows per (table, rank) for the tables with a rank column; links."""
    tables, per_rank = {}, {}
    for table in TABLES:
        tables[table] = db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        if table == "rank":
            continue
        if rank_of_file is None:
            sql = f"SELECT rank, count(*) FROM {table} GROUP BY rank"
            for rank, n in db.execute(sql):
                per_rank[(table, rank)] = n
        else:  # a rank file: its rows are its rank's, whatever they say (NULL is filled)
            per_rank[(table, rank_of_file)] = tables[table]
    links = {(a, b, side): (n, total) for a, b, side, n, total in db.execute(LINKS)}
    return tables, per_rank, links


def add(into, part):
    for key, value in part.items():
        if isinstance(value, tuple):
            old = into.get(key, (0, 0))
            into[key] = (old[0] + value[0], old[1] + value[1])
        else:
            into[key] = into.get(key, 0) + value


def rank_files_reference(folder):
    """What the rank files hold, summed over the files."""
    tables, per_rank, links = {}, {}, {}
    for path in sorted(glob.glob(os.path.join(folder, "rank-*.sqlite"))):
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rank = db.execute("SELECT rank FROM rank").fetchone()[0]
        t, r, l = counts(db, rank)
        db.close()
        add(tables, t)
        add(per_rank, {k: v for k, v in r.items() if v})
        add(links, l)
    return tables, per_rank, links


def compare(what, want, got, failures):
    if want == got:
        return
    keys = sorted(set(want) | set(got), key=repr)
    diff = [f"{k}: rank files {want.get(k)}, merged {got.get(k)}" for k in keys
            if want.get(k) != got.get(k)]
    failures.append(f"{what} differ in {len(diff)} place(s), e.g. " + "; ".join(diff[:3]))


def main():
    gen, ringside = sys.argv[1], sys.argv[2]
    failures = []
    with tempfile.TemporaryDirectory(prefix="ringside-rows1024-") as tmp:
        folder, trace = os.path.join(tmp, "ranks"), os.path.join(tmp, "trace.sqlite")
        # --no-fsync: 1,024 files' fsyncs would take most of a minute on a loaded disk.
        run([gen, "--out", folder, "--ranks", str(RANKS), "--hosts", str(HOSTS), "--algo", "tree",
             "--collectives", str(CALLS), "--steps", "2", "--bytes", str(BYTES), "--receives",
             "--seed", "3", "--no-fsync"])
        env = dict(os.environ, RINGSIDE_TIMINGS="1")
        p = run([ringside, "merge", folder, "-o", trace, "-q"], env=env)
        print("".join(f"    {line}\n" for line in p.stderr.splitlines() if "timing" in line), end="")
        # The run-id pass opens every input: one folded line for them all, not one each.
        opens = [line for line in p.stderr.splitlines() if "timing open" in line]
        folded = [line for line in opens if f"timing open x{RANKS} " in line]
        if len(folded) != 1 or len(opens) > 4:
            failures.append(f"RINGSIDE_TIMINGS printed {len(opens)} 'open' lines, "
                            f"{len(folded)} of them 'open x{RANKS}' (want that one and a few)")
        want_tables, want_ranks, want_links = rank_files_reference(folder)
        db = sqlite3.connect(f"file:{trace}?mode=ro", uri=True)
        got_tables, got_ranks, got_links = counts(db)
        meta = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('ranks', 'missing_ranks')"))
        db.close()
    print(f"  rows: {want_tables}")
    compare("rows per table", want_tables, got_tables, failures)
    compare("rows per rank", want_ranks, got_ranks, failures)
    compare("per-link messages and bytes", want_links, got_links, failures)
    # The generator's own count: a binary tree has RANKS-1 edges, each carrying one reduce and one
    # broadcast message per call, recorded by its sender and (--receives) its receiver.
    want_calls, want_messages = RANKS * CALLS, 4 * (RANKS - 1) * CALLS
    if got_tables.get("collective_data") != want_calls:
        failures.append(f"{got_tables.get('collective_data')} calls merged, generated {want_calls}")
    if got_tables.get("transfer_data") != want_messages:
        failures.append(f"{got_tables.get('transfer_data')} messages merged, "
                        f"generated {want_messages}")
    if sum(n for n, _ in got_links.values()) != want_messages:
        failures.append("the links' messages do not add up to the generated messages")
    if meta.get("ranks") != str(RANKS) or meta.get("missing_ranks"):
        failures.append(f"merge meta: ranks {meta.get('ranks')}, missing {meta.get('missing_ranks')}")
    for f in failures:
        print(f"FAIL: {f}")
    if failures:
        return 1
    print(f"OK: {RANKS} rank files merged without losing a row ({len(got_links)} link sides)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
