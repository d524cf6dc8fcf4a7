"""End to end: ring and tree bench traces -> `ringside diff --format json`.

Checks one verdict per allreduce size bucket, and that each bucket's verdict and speed-up agree
with an independent reading of the same two traces: per call (comm, seq), the time from the last
rank's arrival to the last rank's return, the lower median per bucket, as docs/analyzer.md
defines the diff. (An earlier version compared against the bench's printed means; those come
from two separate bench runs on a shared 2-core machine and disagreed at 4 KiB now and then.)
The bench's own timings are printed for the reader. Also runs the other formats once.
Usage: diff_e2e.py RINGSIDE
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

SIZES = {4096: "4K", 1 << 20: "1M"}
TOLERANCE = 1.05  # the diff calls a bucket "on par" within 5%


def bucket_medians(path):
    """{bucket low end: lower median of last_end - last_start over the allreduce calls}."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = db.execute("SELECT max(bytes), max(end_ns) - max(start_ns) FROM collective"
                      " WHERE op = 'allreduce' AND end_ns IS NOT NULL GROUP BY comm, seq").fetchall()
    db.close()
    by = {}
    for nbytes, dur in rows:
        lo = 0 if nbytes == 0 else 1 << (nbytes.bit_length() - 1)
        by.setdefault(lo, []).append(max(0, dur))
    return {lo: sorted(v)[(len(v) - 1) // 2] for lo, v in by.items()}


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=300, **kw)


def main():
    ringside = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        bench_ms = {}
        for algo in ("ring", "tree"):
            r = run([ringside, "bench", "--ranks", "3", "--algo", algo, "--sizes", "4K,1M",
                     "--iters", "20", "--warmup", "5", "--json", f"{algo}.json", "-o", f"{algo}.sqlite"], cwd=tmp)
            if r.returncode != 0:
                print(r.stdout, r.stderr)
                print(f"bench --algo {algo} failed: exit {r.returncode}")
                return 1
            with open(os.path.join(tmp, f"{algo}.json")) as f:
                for row in json.load(f)["rows"]:
                    if row.get("time_us") is not None:
                        bench_ms[(algo, row["bytes"])] = row["time_us"]
        r = run([ringside, "diff", "ring.sqlite", "tree.sqlite", "--format", "json"], cwd=tmp)
        if r.returncode != 0:
            print(r.stderr)
            print(f"diff failed: exit {r.returncode}")
            return 1
        d = json.loads(r.stdout)
        assert d["schema"] == "ringside-diff/1", d["schema"]
        assert d["schema_version"] == 1
        assert d["label_a"] == "ringside-ring" and d["label_b"] == "ringside-tree", (
            d["label_a"], d["label_b"])
        rows = [row for row in d["rows"] if row["op"] == "allreduce"]
        buckets = sorted(row["size_lo"] for row in rows)
        want = sorted(1 << (size.bit_length() - 1) for size in SIZES)
        assert buckets == want, f"allreduce buckets {buckets}, want {want}"
        # Every row is judged or says why not (too few calls, inside the noise).
        for row in rows:
            assert bool(row["verdict"]) != bool(row["note"]), row
        assert len(d["verdicts"]) == sum(1 for row in d["rows"] if row["verdict"])
        stakes = [abs(next(r["at_stake_ns"] for r in d["rows"] if r["verdict"] == v)) for v in d["verdicts"]]
        assert stakes == sorted(stakes, reverse=True), f"verdicts not by time at stake: {stakes}"
        med_ring = bucket_medians(os.path.join(tmp, "ring.sqlite"))
        med_tree = bucket_medians(os.path.join(tmp, "tree.sqlite"))
        for row in rows:
            size = next(s for s in SIZES if row["size_lo"] <= s < row["size_hi"])
            ring, tree = bench_ms[("ring", size)], bench_ms[("tree", size)]
            verdict = row["verdict"] or row["note"]
            assert not row["verdict"] or verdict in d["verdicts"], verdict
            assert row["count_a"] > 0 and row["count_b"] > 0, row
            ma, mb = med_ring[row["size_lo"]], med_tree[row["size_lo"]]
            print(f"{SIZES[size]}: trace medians ring {ma / 1e3:.1f} us, tree {mb / 1e3:.1f} us "
                  f"(bench means ring {ring:.1f} us, tree {tree:.1f} us); diff speedup {row['speedup']:.2f}: "
                  f"{verdict}")
            assert row["median_a_ns"] == ma and row["median_b_ns"] == mb, (row, ma, mb)
            want = ma / mb
            assert abs(row["speedup"] - want) <= 1e-6 * want, (row["speedup"], want)
            if not row["verdict"]:
                continue  # inside the noise: said, not judged
            if max(ma, mb) <= TOLERANCE * min(ma, mb):
                assert "on par" in verdict, verdict
                continue
            winner = "ringside-tree" if mb < ma else "ringside-ring"
            if not verdict.startswith(winner + " "):
                print(f"{SIZES[size]}: the traces say {winner} wins, diff says: {verdict}")
                return 1
        for fmt in ("text", "md", "html", "csv"):
            r = run([ringside, "diff", "ring.sqlite", "tree.sqlite", "--format", fmt,
                     "-o", f"diff.{fmt}"], cwd=tmp)
            if r.returncode != 0 or os.path.getsize(os.path.join(tmp, f"diff.{fmt}")) == 0:
                print(r.stderr)
                print(f"diff --format {fmt} failed: exit {r.returncode}")
                return 1
        with open(os.path.join(tmp, "diff.text")) as f:
            text = f.read()
        assert text.index("Verdicts") < text.index("Collectives by op and size"), text
        print("diff e2e ok")
        return 0


if __name__ == "__main__":
    sys.exit(main())
