#!/usr/bin/python3
"""End-to-end runs of `ringside bench` (standard library only).

Scenarios:
  local-trace        ringside bench --ranks 3 --algo ring,tree,gloo --sizes 1K,64K --iters 3
                     --json out.json -o t.sqlite: exit 0, zero wrong everywhere, the JSON rows,
                     and a trace with every algorithm's calls and every phase on every rank.
  external-launcher  two ranks started here with RANK/WORLD_SIZE/MASTER_* (no --ranks), as
                     torchrun would: rank 0 prints the table, rank 1 prints nothing on stdout,
                     rank 0 merges the trace.
  too-many-ranks     ringside bench --ranks 1000 --sizes 4K --iters 1 on a machine with fewer
                     than 125 CPUs: exit 2 within seconds, one line naming the limit, nothing
                     started (it used to run for minutes without a line).
Exit status: 0 pass, 1 fail, 77 skipped (with the reason).
"""
import argparse
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys

FAILURES = []


def check(condition, what):
    if not condition:
        FAILURES.append(what)
        print("FAIL: " + what, file=sys.stderr)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def table_rows(stdout):
    """The table's rows: lines after the column titles, split on whitespace."""
    lines = stdout.splitlines()
    start = next((i for i, l in enumerate(lines) if l.split()[:3] == ["size", "count", "algo"]),
                 None)
    if start is None:
        return []
    return [l.split() for l in lines[start + 1:] if l.strip()]


def check_table(stdout, ranks, algos, sizes):
    check(stdout.startswith("ringside bench: %d ranks on 1 host" % ranks),
          "header names the ranks and one host: " + stdout[:120])
    check("all ranks share one host" in stdout, "one-host note printed")
    check("lower-bound style" in stdout and "ignores reduction cost" in stdout,
          "model caveat printed")
    rows = table_rows(stdout)
    check(len(rows) == len(algos) * len(sizes),
          "%d table rows, expected %d:\n%s" % (len(rows), len(algos) * len(sizes), stdout))
    for row in rows:
        # size is two words ("1 KiB"): size unit count algo time algbw busbw model wrong
        check(len(row) == 9, "row has 9 fields: %s" % row)
        if len(row) == 9:
            check(row[3] in algos, "algo %s" % row[3])
            check(row[8] == "0", "zero wrong in %s" % row)
            check(float(row[4]) > 0, "positive time in %s" % row)
    for line in stdout.splitlines():
        check(len(line) <= 100, "line fits 100 columns: " + line)


def check_trace(path, ranks, expect_gloo):
    check(os.path.isfile(path), "trace written: " + path)
    if not os.path.isfile(path):
        return
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    libs = set(db.execute("SELECT DISTINCT rank, library FROM collective WHERE op = 'allreduce'"))
    wanted = ["ringside-ring", "ringside-tree"] + (["gloo"] if expect_gloo else [])
    for rank in range(ranks):
        for lib in wanted:
            check((rank, lib) in libs, "rank %d has %s all-reduce calls (got %s)"
                  % (rank, lib, sorted(libs)))
    algos = set(r[0] for r in db.execute(
        "SELECT DISTINCT algorithm FROM collective WHERE library = 'gloo'"))
    if expect_gloo:
        check(algos == {"ring"}, "gloo calls say algorithm ring: %s" % algos)
    bad = db.execute("SELECT count(*) FROM collective WHERE status != 0 OR end_ns IS NULL"
                     ).fetchone()[0]
    check(bad == 0, "no failed or unfinished calls (%d)" % bad)
    phases = set(r[0] for r in db.execute("SELECT DISTINCT phase FROM transfer"))
    for phase in ["reduce-scatter", "all-gather", "reduce", "broadcast"]:
        check(phase in phases, "transfers with phase %s (got %s)" % (phase, sorted(
            p for p in phases if p)))
    for rank in range(ranks):
        n = db.execute("SELECT count(*) FROM transfer WHERE rank = ?", (rank,)).fetchone()[0]
        check(n > 0, "rank %d recorded transfers" % rank)
    meta = dict(db.execute("SELECT key, value FROM meta"))
    check(meta.get("cut_off_ranks", "x") == "", "no cut-off ranks: %r" % meta.get("cut_off_ranks"))
    check(meta.get("missing_ranks", "x") == "", "no missing ranks: %r" % meta.get("missing_ranks"))
    db.close()


def local_trace(args):
    algos = ["ring", "tree", "gloo"]
    sizes = ["1K", "64K"]
    cmd = [args.ringside, "bench", "--ranks", "3", "--algo", ",".join(algos), "--sizes",
           ",".join(sizes), "--iters", "3", "--json", "out.json", "-o", "t.sqlite"]
    env = dict(os.environ)
    for key in ["RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LD_PRELOAD"]:
        env.pop(key, None)
    p = subprocess.run(cmd, cwd=args.workdir, env=env, capture_output=True, text=True,
                       timeout=150)
    print(p.stdout)
    print(p.stderr, file=sys.stderr)
    check(p.returncode == 0, "exit status 0, got %d" % p.returncode)
    check_table(p.stdout, 3, algos, sizes)
    try:
        with open(os.path.join(args.workdir, "out.json")) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        check(False, "out.json parses: %s" % e)
        doc = {}
    if doc:
        check(doc.get("schema") == "ringside-bench/1", "schema ringside-bench/1")
        check(doc.get("ranks") == 3, "ranks 3")
        check(len(doc.get("hosts", [])) == 1, "one host")
        check(isinstance(doc.get("alpha_s"), float) and doc["alpha_s"] > 0, "alpha_s > 0")
        check(isinstance(doc.get("beta_s_per_byte"), float), "beta_s_per_byte is a number")
        rows = doc.get("rows", [])
        check(len(rows) == 6, "6 rows, got %d" % len(rows))
        for row in rows:
            check(row.get("wrong") == 0, "zero wrong: %s" % row)
            check(row.get("algo") in algos, "algo: %s" % row)
            check(row.get("bytes") in (1024, 65536), "bytes: %s" % row)
            check(row.get("count") == row.get("bytes", 0) // 4, "count: %s" % row)
            for key in ["time_us", "algbw_gbps", "busbw_gbps", "model_us"]:
                check(isinstance(row.get(key), (int, float)), "%s is a number: %s" % (key, row))
    check_trace(os.path.join(args.workdir, "t.sqlite"), 3, True)
    check(not os.path.exists(os.path.join(args.workdir, "t.sqlite.ranks")),
          "rank files removed after the merge")

    # Usage errors exit 2 and start nothing.
    p = subprocess.run([args.ringside, "bench", "--sizes", "4K:1K"], env=env,
                       capture_output=True, text=True, timeout=30)
    check(p.returncode == 2 and "ends below" in p.stderr, "bad --sizes: exit 2 (%d, %s)"
          % (p.returncode, p.stderr.strip()))
    p = subprocess.run([args.ringside, "bench", "-o", "t.sqlite"], cwd=args.workdir, env=env,
                       capture_output=True, text=True, timeout=30)
    check(p.returncode == 2 and "exists" in p.stderr, "existing -o: exit 2 (%d, %s)"
          % (p.returncode, p.stderr.strip()))


def external_launcher(args):
    port = free_port()
    procs = []
    for rank in range(2):
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        env.update({"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2",
                    "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
        procs.append(subprocess.Popen(
            [args.ringside, "bench", "--algo", "ring,tree,gloo", "--sizes", "4K,16K", "--iters",
             "2", "--warmup", "1", "-o", "ext.sqlite"],
            cwd=args.workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        outs.append(out)
        print(out)
        print(err, file=sys.stderr)
        check(p.returncode == 0, "rank exit status 0, got %d" % p.returncode)
    check_table(outs[0], 2, ["ring", "tree", "gloo"], ["4K", "16K"])
    check(outs[1] == "", "rank 1 prints nothing on stdout: %r" % outs[1][:200])
    check_trace(os.path.join(args.workdir, "ext.sqlite"), 2, True)


def too_many_ranks(args):
    cpus = len(os.sched_getaffinity(0))
    if cpus * 8 >= 1000:
        print("skipped: %d CPUs may run 1000 local ranks" % cpus, file=sys.stderr)
        return 77
    env = dict(os.environ)
    for key in ["RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LD_PRELOAD"]:
        env.pop(key, None)
    cmd = [args.ringside, "bench", "--ranks", "1000", "--sizes", "4K", "--iters", "1"]
    # Its own session, so that on a timeout the ranks it started end with it (by group id).
    p = subprocess.Popen(cmd, cwd=args.workdir, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        check(False, "bench --ranks 1000 answers within 5 s")
        return None
    print(err, file=sys.stderr)
    check(p.returncode == 2, "exit status 2, got %d" % p.returncode)
    check(out == "", "nothing on stdout: %r" % out[:200])
    check(len(err.splitlines()) == 1 and "--ranks 1000" in err and "at most %d" % (cpus * 8) in err,
          "one line naming the limit: %r" % err)
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenario", required=True,
                        choices=["local-trace", "external-launcher", "too-many-ranks"])
    parser.add_argument("--ringside", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    args.ringside = os.path.abspath(args.ringside)
    args.workdir = os.path.abspath(args.workdir)
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    p = subprocess.run([args.ringside, "bench", "--help"], capture_output=True, text=True)
    if p.returncode != 0:
        print("skipped: this ringside has no bench verb", file=sys.stderr)
        return 77
    if "gloo" not in p.stdout:
        print("skipped: built without Gloo", file=sys.stderr)
        return 77
    scenarios = {"local-trace": local_trace, "external-launcher": external_launcher,
                 "too-many-ranks": too_many_ranks}
    if scenarios[args.scenario](args) == 77:
        return 77
    if FAILURES:
        print("%d check(s) failed" % len(FAILURES), file=sys.stderr)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
