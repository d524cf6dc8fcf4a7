#!/usr/bin/python3
"""tests/e2e_clock: one time line across hosts whose clocks differ (docs/clock-alignment.md).

Emulated hosts (clock_cluster.py): each rank in its own time namespace (CLOCK_MONOTONIC hours
from the others'), its own hostname, and a wall clock off by milliseconds (libfaketime). The test
knows the truth, and checks what `ringside merge` aligned:
  hosts       Gloo sample, 3 hosts, wall clocks at 0, +8 ms and -6 ms: every domain within
              100 us of the truth, no message received before it was sent, no bound unmet, and
              arrival skews like those of the same job on one clock; figures with call bounds
              only and with the wall clocks alone are printed.
  drift-step  a 60+ s run: host 1's wall clock steps by +0.5 s midway (NTP stepping it), host 2's
              monotonic clock runs 20 ppm fast (1.2 ms over the run; clockshift.cpp): within 100 us at the start and at
              the end.
  one-clock   ranks of one host: the model is the identity, every aligned time equals the
              recorded one to the nanosecond.
Exit 77 (skipped, with the reason) without root, time namespaces or libfaketime.
"""
import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import clock_cluster as cc  # noqa: E402

SKIP = 77
LIMIT_NS = 100_000  # the accuracy goal per domain


def fail(why):
    print("FAIL: " + why, flush=True)
    sys.exit(1)


def check(cond, why):
    if not cond:
        fail(why)
    print("ok: " + why, flush=True)


class Ctx:
    def __init__(self, args):
        self.ringside = args.ringside
        self.preload = args.preload
        self.sample = args.gloo_sample
        self.rate_lib = args.clockshift
        self.scratch = tempfile.mkdtemp(prefix="ringside-clock-")
        self.port = 29700 + os.getpid() % 200

    def env(self, rank, world, ranks_dir, run_id):
        env = {k: v for k, v in os.environ.items() if not k.startswith("RINGSIDE_")}
        env.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(self.port), RINGSIDE_DIR=ranks_dir, RINGSIDE_RUN_ID=run_id,
                   LD_PRELOAD=self.preload,
                   # The Gloo sample's file store: a folder of this job's own (a store left by
                   # an earlier run on the same port would fail the rendezvous).
                   GLOO_STORE_DIR=os.path.join(os.path.dirname(ranks_dir), "gloo-store"))
        return env

    def run_job(self, name, hosts, argv, timeout):
        """Runs argv as one rank per host; returns (merged trace, merge stderr)."""
        out = os.path.join(self.scratch, name)
        ranks = os.path.join(out, "ranks")
        os.makedirs(ranks)
        procs = []
        started = time.monotonic()
        for h in hosts:
            log = open(os.path.join(out, "%s.log" % h.name), "w")
            procs.append(cc.spawn(h, argv, self.env(h.index, len(hosts), ranks, name), out, log,
                                  self.rate_lib))
        deadline = started + timeout
        while any(p.poll() is None for p in procs):
            cc.apply_steps(hosts, out, started)
            if time.monotonic() > deadline:
                for p in procs:
                    p.kill()
                fail("%s: the job did not finish within %d s" % (name, timeout))
            time.sleep(0.05)
        for h, p in zip(hosts, procs):
            with open(os.path.join(out, "%s.log" % h.name)) as f:
                log = f.read()
            if p.returncode != 0:
                fail("%s: rank %d exited %d: %s" % (name, h.index, p.returncode, log[-800:]))
            # A shim ld.so could not load (a build folder relinked or removed under the test):
            # that host's clock was not the one the truth assumes. Seen: h2 without its 20 ppm
            # drift, "1.34 ms error" (20 ppm of 67 s), which read like an alignment fault.
            unloaded = [l for l in log.splitlines() if "cannot be preloaded" in l]
            if unloaded:
                fail("%s: on %s a preload library did not load, so its clocks are not the "
                     "emulated ones: %s" % (name, h.name, unloaded[0]))
        self.port += 1
        trace = os.path.join(out, "trace.sqlite")
        r = subprocess.run([self.ringside, "merge", ranks, "-o", trace, "-q"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        print(r.stderr.strip(), flush=True)
        if r.returncode != 0:
            fail("%s: merge exited %d: %s" % (name, r.returncode, r.stderr.strip()))
        return trace, r.stderr

    def realign(self, trace, evidence):
        r = subprocess.run([self.ringside, "merge", "--realign", trace, "--clock-evidence", evidence],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        if r.returncode != 0:
            fail("realign (%s) exited %d: %s" % (evidence, r.returncode, r.stderr.strip()))


def errors(db, hosts):
    """Per host: (error at its first call, error at its last call), ns."""
    out = {}
    for h in hosts:
        lo, hi = db.execute("SELECT min(start_ns), max(end_ns) FROM collective_data WHERE rank = ?",
                            (h.index,)).fetchone()
        out[h.name] = [cc.model_f(db, h.index, t) - cc.truth_f(hosts, h, t) for t in (lo, hi)]
    return out


def print_errors(label, errs):
    worst = max(abs(e) for pair in errs.values() for e in pair)
    print("%s: worst error %.1f us; per host (start, end) us: %s" % (
        label, worst / 1000.0,
        ", ".join("%s %.1f/%.1f" % (h, a / 1000.0, b / 1000.0) for h, (a, b) in errs.items())),
        flush=True)
    return worst


def meta(db, key):
    row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def arrival_skews(db, aligned):
    """Per all-reduce (comm, seq) across all ranks: last entry - first entry, ns."""
    col = "start_aligned_ns" if aligned else "start_ns"
    rows = db.execute("SELECT max(%s) - min(%s) FROM collective WHERE op = 'allreduce'"
                      " GROUP BY comm, seq HAVING count(*) > 1" % (col, col)).fetchall()
    return [r[0] for r in rows]


def wall_clock_skews(db):
    """The same, with each rank mapped through its wall clock at trace start (the naive way)."""
    rows = db.execute(
        "SELECT max(c.start_ns - r.start_ns + r.start_unix_ns) - min(c.start_ns - r.start_ns +"
        " r.start_unix_ns) FROM collective AS c JOIN rank AS r ON r.rank = c.rank"
        " WHERE c.op = 'allreduce' GROUP BY c.comm, c.seq HAVING count(*) > 1").fetchall()
    return [r[0] for r in rows]


def scenario_hosts(ctx):
    argv = [ctx.sample, "--iters", "40", "--bytes", "65536", "--sleep-ms", "5"]
    hosts = [cc.Host(0, 3600, "+0"), cc.Host(1, 7200, "+0.008"), cc.Host(2, 10800, "-0.006")]
    trace, merged = ctx.run_job("hosts", hosts, argv, timeout=120)
    check("3 clock domains" in merged, "merge says it aligned 3 clock domains")
    db = sqlite3.connect(trace)
    check(db.execute("SELECT count(*) FROM clock_domain").fetchone()[0] == 3, "3 domains stored")
    check(sorted(r[0] for r in db.execute("SELECT host FROM clock_domain")) == ["h0", "h1", "h2"],
          "one domain per emulated host")
    worst = print_errors("calls and messages", errors(db, hosts))
    check(worst <= LIMIT_NS, "every domain within 100 us of the truth (worst %.1f us)" % (worst / 1e3))
    check(meta(db, "clock_messages_before_sent") == "0" and int(meta(db, "clock_messages_checked")) > 0,
          "no message received before it was sent (%s checked)" % meta(db, "clock_messages_checked"))
    check(meta(db, "clock_bounds_violated") == "0", "every bound met")
    skews = arrival_skews(db, True)
    naive = wall_clock_skews(db)
    print("median arrival skew: aligned %.1f us, through wall clocks %.1f us" % (
        statistics.median(skews) / 1e3, statistics.median(naive) / 1e3), flush=True)
    db.close()

    # The same job on one clock: arrival skews of the same size.
    one = [cc.Host(i, 3600, "+0") for i in range(3)]
    trace1, _ = ctx.run_job("hosts-one-clock", one, argv, timeout=120)
    db1 = sqlite3.connect(trace1)
    skews1 = arrival_skews(db1, False)
    db1.close()
    m, m1 = statistics.median(skews), statistics.median(skews1)
    print("median arrival skew on one clock: %.1f us" % (m1 / 1e3), flush=True)
    check(m <= 2 * m1 + LIMIT_NS and m1 <= 2 * m + LIMIT_NS,
          "arrival skews agree with the one-clock run (%.1f vs %.1f us)" % (m / 1e3, m1 / 1e3))

    # Figures: call bounds only, and the wall clocks alone.
    for evidence in ("calls", "none"):
        ctx.realign(trace, evidence)
        db = sqlite3.connect(trace)
        print_errors("evidence=" + evidence, errors(db, hosts))
        db.close()
    ctx.realign(trace, "calls,messages")

    # The report names the domains and no clock-made straggler.
    r = subprocess.run([ctx.ringside, "report", trace], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=120)
    check(r.returncode == 0, "report runs on the aligned trace")
    check("1h" not in r.stdout.split("\n", 3)[0], "the report's span is not hours")


def scenario_drift_step(ctx):
    # ~65 s: an all-reduce every 50 ms.
    argv = [ctx.sample, "--only", "allreduce", "--iters", "1250", "--bytes", "16384",
            "--sleep-ms", "50", "--timeout-s", "120"]
    hosts = [cc.Host(0, 3600, "+0"), cc.Host(1, 7200, "+0.008", step=(30, "+0.508")),
             cc.Host(2, 10800, "-0.006", rate=1.00002)]
    trace, _ = ctx.run_job("drift-step", hosts, argv, timeout=240)
    db = sqlite3.connect(trace)
    lo, hi = db.execute("SELECT min(start_ns), max(end_ns) FROM collective_data WHERE rank = 0").fetchone()
    span_s = (hi - lo) / 1e9
    check(span_s >= 60, "the recording spans %.1f s (>= 60 s)" % span_s)
    errs = errors(db, hosts)
    worst = print_errors("drift and step", errs)
    check(worst <= LIMIT_NS, "start and end of every domain within 100 us (worst %.1f us)" % (worst / 1e3))
    drift = db.execute("SELECT drift_ppm FROM clock_domain WHERE host = 'h2'").fetchone()[0]
    print("h2 drift fitted: %.2f ppm (truth -20 ppm against the reference)" % drift, flush=True)
    check(abs(drift + 20) < 2, "the 20 ppm fast clock is seen (%.2f ppm)" % drift)
    anchors = db.execute("SELECT count(*) FROM clock_anchor_data WHERE rank = 1").fetchone()[0]
    check(anchors >= 50, "wall-clock anchors about once a second (%d on h1)" % anchors)
    jump = db.execute("SELECT max(unix_ns - clock_ns) - min(unix_ns - clock_ns) FROM clock_anchor_data"
                      " WHERE rank = 1").fetchone()[0]
    check(jump > 400_000_000, "h1's wall clock stepped while recording (%.3f s)" % (jump / 1e9))


def scenario_one_clock(ctx):
    argv = [ctx.sample, "--iters", "5"]
    hosts = [cc.Host(i, 0, "+0") for i in range(2)]
    # No namespace offsets, no fake wall clock: plain ranks of one host.
    for h in hosts:
        h.mono_s = 0
    trace, merged = ctx.run_job("one-clock", hosts, argv, timeout=120)
    db = sqlite3.connect(trace)
    check(db.execute("SELECT count(*) FROM clock_domain").fetchone()[0] == 1, "one clock domain")
    check(db.execute("SELECT count(*) FROM clock_segment").fetchone()[0] == 0, "no mapping pieces")
    check(meta(db, "clock_method") == "identity", "clock_method identity")
    for view in ("collective", "transfer"):
        n, same = db.execute("SELECT count(*), sum(start_aligned_ns = start_ns AND"
                             " (end_ns IS NULL OR end_aligned_ns = end_ns)) FROM %s" % view).fetchone()
        check(n > 0 and n == same, "%s: all %d aligned times equal the recorded ones" % (view, n))
    check("clock domains" not in merged, "merge prints nothing about clocks for one host")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--scenario", required=True, choices=["hosts", "drift-step", "one-clock"])
    p.add_argument("--ringside", required=True)
    p.add_argument("--preload", required=True)
    p.add_argument("--gloo-sample", required=True)
    p.add_argument("--clockshift", required=True)
    p.add_argument("--keep", action="store_true")
    args = p.parse_args()
    why = cc.can_run()
    if why is not None and args.scenario != "one-clock":
        print("SKIP: " + why)
        sys.exit(SKIP)
    if why is not None and os.geteuid() != 0:
        print("SKIP: " + why)
        sys.exit(SKIP)
    for path in (args.ringside, args.preload, args.gloo_sample, args.clockshift):
        if not os.path.isfile(path):
            fail("%s is not built (build every target before running this test)" % path)
    ctx = Ctx(args)
    ok = False
    try:
        {"hosts": scenario_hosts, "drift-step": scenario_drift_step,
         "one-clock": scenario_one_clock}[args.scenario](ctx)
        ok = True
    finally:
        if ok and not args.keep:
            shutil.rmtree(ctx.scratch, ignore_errors=True)
        else:
            print("scratch folder kept: " + ctx.scratch)


if __name__ == "__main__":
    main()
