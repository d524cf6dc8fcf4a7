#!/usr/bin/python3
"""tests/e2e_topology: the emulated cluster with a clock per host (cluster.py, emulate.sh
--clocks), recorded and merged as a user records a job over 4 machines.

Scenarios:
  ddp-clocks    the DDP sample, 4 hosts x 2 ranks, one `record --nnodes 4` per host, host h2's
                monotonic clock 20 ppm fast: 8 ranks on 4 host names, each where the truth
                says, every rank's clock hours off the others' as the truth says, one run id
  bench-clocks  `ringside bench` one rank per host with clocks of their own: 4 ranks, 4 hosts
  node-merge    the DDP sample 4 hosts x 2 ranks, each host's `record --nnodes 4 --node-merge`
                merging its own ranks as its job ends (the 4 at once), then one merge of the 4
                node traces: equal to one merge of the 8 rank files (every table but meta row
                for row, per rank, per link), clocks aligned to the truth
  pip-torchrun  pip's torch (scripts/setup-pip-torch.sh --cached-only) on 2 hosts, each running
                `record --nnodes 2 --node-rank K -- torchrun --nnodes 2 --nproc-per-node 2
                --rdzv-backend c10d --rdzv-endpoint h0:PORT --rdzv-id ID ddp_train.py` (torchrun's
                own rendezvous, host h1's clocks hours and milliseconds off h0's): 4 ranks, two
                per host where torchrun put them, one run id torchelastic:ID in both nodes'
                files, per-rank bytes = steps x gradient bytes, Gloo's ring messages on every
                link (two of them crossing hosts), the steps found, the clocks aligned

Both check the clock alignment against the truth (docs/clock-alignment.md): every rank's
mapping within 100 us of the truth at its first and its last call, every bound met, no message
received before it was sent; ddp-clocks also compares arrival skews with the same job on one
clock (`record --ranks 8` on this machine).
Exit 77 (skipped) when this machine cannot emulate (not root, no namespaces, no time
namespaces) or has no PyTorch (ddp-clocks). Standard library only.
"""
import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster  # noqa: E402

SKIP = 77


def fail(why):
    raise AssertionError(why)


def check(cond, why):
    if not cond:
        fail(why)
    print("ok: " + why)


def check_run(run, world, per_host):
    check(run.truth is not None and len(run.truth["hosts"]) == 4, "clock-truth.json has 4 hosts")
    want_hosts = run.host_of_rank()
    check(sorted(want_hosts) == list(range(world)), f"the truth places ranks 0..{world - 1}")
    rows = cluster.trace_ranks(run.trace)
    check([r[0] for r in rows] == list(range(world)), f"the trace has ranks 0..{world - 1}")
    check({r: h for r, h, _, _ in rows} == want_hosts, "each rank on the host the truth says")
    check(len({h for _, h, _, _ in rows}) == 4, "4 host names")
    # Every rank started within the same minute of the machine's clock: its start on its
    # host's monotonic clock, less the host's offset, agrees with the others'.
    offset = {h["host"]: h["monotonic_offset_ns"] for h in run.truth["hosts"]}
    starts = [s - offset[h] for _, h, s, _ in rows]
    check(max(starts) - min(starts) < 60e9,
          "ranks' monotonic clocks are off by their host's offset (hours), as the truth says")
    check(len({offset[h] for _, h, _, _ in rows}) == 4, "4 different monotonic offsets")
    db = sqlite3.connect(f"file:{run.trace}?mode=ro", uri=True)
    try:
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        n = db.execute("SELECT count(*) FROM collective").fetchone()[0]
    finally:
        db.close()
    check((meta.get("missing_ranks") or "") == "", "no rank missing")
    check(n > 0, f"{n} collectives recorded")
    return meta


LIMIT_NS = 100_000


def truth_f(truth, host, raw):
    """aligned - raw for a raw monotonic time of `host`, on h0's clock (the reference)."""
    by = {h["host"]: h for h in truth["hosts"]}
    h, ref = by[host], by["h0"]
    origin, rate = h["rate_origin_ns"], 1 + h["rate_ppm"] / 1e6
    u = origin + (raw - origin) / rate  # the host's monotonic clock without its drift
    t = u - h["monotonic_offset_ns"]    # the machine's own monotonic time
    return (t + ref["monotonic_offset_ns"]) - raw


def model_f(db, rank, raw):
    row = db.execute(
        "SELECT p.offset_ns + CAST(round((?1 - p.ref_ns) * p.rate) AS INTEGER) FROM clock_rank AS k"
        " JOIN clock_segment AS p ON p.domain = k.domain WHERE k.rank = ?2 AND p.lo_ns <= ?1"
        " ORDER BY p.lo_ns DESC LIMIT 1", (raw, rank)).fetchone()
    return row[0] if row else 0


def check_alignment(run, n_hosts=4):
    db = sqlite3.connect(f"file:{run.trace}?mode=ro", uri=True)
    try:
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        hosts = dict(db.execute("SELECT rank, host FROM rank").fetchall())
        worst, parts = 0, []
        for rank, host in sorted(hosts.items()):
            lo, hi = db.execute("SELECT min(start_ns), max(end_ns) FROM collective_data"
                                " WHERE rank = ?", (rank,)).fetchone()
            errs = [model_f(db, rank, t) - truth_f(run.truth, host, t) for t in (lo, hi)]
            worst = max(worst, *(abs(e) for e in errs))
            parts.append("%d@%s %.1f/%.1f" % (rank, host, errs[0] / 1e3, errs[1] / 1e3))
        print("alignment error per rank (start/end, us): " + ", ".join(parts), flush=True)
        domains = db.execute("SELECT count(*) FROM clock_domain").fetchone()[0]
        skews = [r[0] for r in db.execute(
            "SELECT max(start_aligned_ns) - min(start_aligned_ns) FROM collective"
            " WHERE op = 'allreduce' GROUP BY comm, seq HAVING count(*) > 1")]
    finally:
        db.close()
    check(domains == n_hosts, f"{n_hosts} clock domains, one per emulated host")
    check(worst <= LIMIT_NS, "every rank within 100 us of the truth (worst %.1f us)" % (worst / 1e3))
    check(meta.get("clock_bounds_violated") == "0", "every clock bound met")
    check(meta.get("clock_messages_before_sent") == "0" and int(meta.get("clock_messages_checked", 0)) > 0,
          "no message received before it was sent (%s checked)" % meta.get("clock_messages_checked"))
    return skews


def stragglers(ringside, trace):
    """The report's stragglers (JSON): [(rank, times_last)], most skew first."""
    r = subprocess.run([ringside, "report", trace, "--format", "json"], capture_output=True,
                       text=True, timeout=120)
    check(r.returncode == 0, "report --format json on " + os.path.basename(trace))
    return [(s["rank"], s["times_last"]) for s in json.loads(r.stdout).get("stragglers", [])]


def one_clock_skews(args, out, job):
    trace = os.path.join(out, "one-clock.sqlite")
    r = subprocess.run([args.ringside, "record", "--ranks", "8", "-o", trace, "-q", "--"] + job,
                       capture_output=True, text=True, timeout=240)
    check(r.returncode == 0, "the same job on one clock (record --ranks 8): " + r.stderr[-300:])
    db = sqlite3.connect(f"file:{trace}?mode=ro", uri=True)
    try:
        skews = [row[0] for row in db.execute(
            "SELECT max(start_ns) - min(start_ns) FROM collective WHERE op = 'allreduce'"
            " GROUP BY comm, seq HAVING count(*) > 1")]
    finally:
        db.close()
    return skews, trace


def median(values):
    v = sorted(values)
    return v[len(v) // 2] if v else 0


def require_torch(args):
    probe = subprocess.run([args.python, "-c", "import torch.distributed as d; "
                            "assert d.is_gloo_available()"], capture_output=True, text=True)
    if probe.returncode != 0:
        raise cluster.Skip(f"{args.python} has no PyTorch with Gloo (python3-torch)")


def ddp_clocks(args, out):
    require_torch(args)
    # Rank 5 (on h2, the drifting host) computes 40 ms longer per step: a real straggler, which
    # both runs must name, and no clock-made one.
    job = [args.python, args.ddp_sample, "--steps", "4", "--slow-rank", "5", "--slow-ms", "40"]
    run = cluster.run_job(args.ringside, job,
                          out=out, ranks_per_host=2, prefix="rsc1", port=29651,
                          drift=(2, 20), clockshift=args.clockshift)
    meta = check_run(run, 8, 2)
    skews = check_alignment(run)
    one, one_trace = one_clock_skews(args, out, job)
    m, m1 = median(skews), median(one)
    print("median all-reduce arrival skew: aligned %.1f us, one clock %.1f us" % (m / 1e3, m1 / 1e3))
    # Same job, same machine: the skews are of one size (scheduling on 2 cores varies them).
    check(m <= 3 * m1 + 2 * LIMIT_NS and m1 <= 3 * m + 2 * LIMIT_NS,
          "arrival skews agree with the run on one clock")
    multi, single = stragglers(args.ringside, run.trace), stragglers(args.ringside, one_trace)
    print("stragglers (rank, times last): 4 hosts %s; one clock %s" % (multi[:3], single[:3]))
    check(multi and single and multi[0][0] == 5 and single[0][0] == 5,
          "both runs name rank 5 the straggler")
    check(meta.get("run_id", "").startswith("emulate-"), "one run id for the 4 nodes' files")
    h2 = run.truth["hosts"][2]
    check(h2["rate_ppm"] == 20 and h2["ranks"] == [4, 5], "the truth names h2's 20 ppm drift")


def node_merge(args, out):
    """Each host merges its own ranks as its job ends (`record --nnodes 4 --node-merge`, the 4
    at once), one merge of the 4 node traces gives the trace: equal to one merge of all 8 rank
    files, table by table (meta aside: `record` adds its own), per rank and per link."""
    require_torch(args)
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e_scale"))
    from merge_merged_e2e import rows
    from merge_rows_1024_e2e import compare, counts
    job = [args.python, args.ddp_sample, "--steps", "3"]
    run = cluster.run_job(args.ringside, job, out=out, ranks_per_host=2, prefix="rsc4",
                          port=29671, drift=(1, 20), clockshift=args.clockshift, node_merge=True)
    with open(os.path.join(out, "host1.err"), encoding="utf-8") as f:
        print("host h1's record said:\n" + f.read()[-800:], flush=True)
    check_run(run, 8, 2)
    check_alignment(run)
    ranks_dir = run.trace + ".ranks"
    for k in range(4):
        node = os.path.join(ranks_dir, f"node-{k}.sqlite")
        check(os.path.isfile(node) and len(cluster.trace_ranks(node)) == 2,
              f"host h{k} merged its 2 ranks into node-{k}.sqlite")
    direct = os.path.join(out, "direct.sqlite")
    r = subprocess.run([args.ringside, "merge", ranks_dir, "-o", direct, "-q"],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "one merge of the 4 node folders: " + r.stderr[-300:])
    want, got = rows(direct), rows(run.trace)
    differ = [t for t in sorted(set(want) | set(got)) if t != "meta" and want.get(t) != got.get(t)]
    check(not differ, f"every table but meta row for row as the one-step merge (differ: {differ})")
    failures = []
    dbs = [sqlite3.connect(f"file:{t}?mode=ro", uri=True) for t in (direct, run.trace)]
    for what, a, b in zip(("rows per table", "rows per rank", "links"), counts(dbs[0]),
                          counts(dbs[1])):
        compare(what, a, b, failures)
    metas = [dict(db.execute("SELECT key, value FROM meta WHERE key LIKE 'clock%' OR key IN "
                             "('ranks', 'missing_ranks')")) for db in dbs]
    for db in dbs:
        db.close()
    check(not failures, "rows per table, per rank and per link equal " + "; ".join(failures))
    check(metas[0] == metas[1], f"the clock model's meta equal ({metas[1].get('clock_method')}, "
          f"{metas[1].get('clock_domains')} domains)")


def bench_clocks(args, out):
    # Small buffers: on the 200 Mbit/s emulated links a 1 MiB all-reduce's messages take
    # milliseconds, which leaves the clocks a window as wide; 4 KiB ones take tens of us.
    run = cluster.run_bench(args.ringside, out=out, prefix="rsc2", port=29661, sizes="4K,16K",
                            iters=5, clockshift=args.clockshift)
    check_run(run, 4, 1)
    check_alignment(run)


def e2e_modules():
    """tests/e2e's helpers (Trace, Gloo's message model) and its pip torch environment."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
    import e2e_util
    import test_pip_torch
    return e2e_util, test_pip_torch


HERE = os.path.dirname(os.path.abspath(__file__))
PIP_STEPS = 6


def run_torchrun_hosts(args, out, torchrun, rdzv_id, describe):
    """The DDP sample under torchrun on h0 and h1, each under `record --nnodes 2`; a run that
    hit pip torch's own teardown abort after the last step (tests/e2e/test_pip_torch.py) is run
    again, twice at most. Each attempt has 80 s (it takes ~35): when the abort hits a rank on
    h1, h0's torchrun waits at its rendezvous for the node that left (torch's join timeout is
    15 minutes), so without a limit of its own the attempt outlives the test's 300 s."""
    _, pip = e2e_modules()
    port = 29671
    job = [torchrun, "--nnodes", "2", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
           "--rdzv-endpoint", f"h0:{port}", "--rdzv-id", rdzv_id, args.ddp_sample,
           "--steps", str(PIP_STEPS), "--bucket-cap-mb", pip.BUCKET_MB,
           "--first-bucket-mb", pip.BUCKET_MB, "--describe", describe]
    for attempt in range(3):
        shutil.rmtree(out, ignore_errors=True)
        try:
            return cluster.run_job(args.ringside, job, out=out, prefix="rsc3", port=port + 1,
                                   job_hosts=2, launcher=True, ranks_per_host=2,
                                   mono_offsets_s=[3600, 14400], wall_offsets_ms=[0, 8],
                                   clockshift=args.clockshift, timeout=80)
        except cluster.EmulationFailed as e:
            errs = "".join(open(os.path.join(out, f"host{i}.err"), errors="replace").read()
                           for i in range(2) if os.path.exists(os.path.join(out, f"host{i}.err")))
            steps = len(pip.loss_lines(open(os.path.join(out, "host0.out")).read())) \
                if os.path.exists(os.path.join(out, "host0.out")) else 0
            if attempt == 2 or pip.TORCH_TEARDOWN_ABORT not in errs or steps != PIP_STEPS:
                raise
            print(f"torch aborted a rank at teardown after step {PIP_STEPS} (torch's own); "
                  f"running again: {e}", flush=True)
    raise AssertionError("unreachable")


def pip_torchrun(args, out):
    u, pip = e2e_modules()
    try:
        python, torchrun = pip.pip_python()
    except u.Skipped as e:
        raise cluster.Skip(str(e))
    print(f"pip torch {pip.torch_version(python)} ({python})")
    rdzv_id = f"rs-{os.getpid()}"
    describe = os.path.join(tempfile.mkdtemp(prefix="ringside-describe-"), "describe.json")
    run = run_torchrun_hosts(args, os.path.join(out, "run"), torchrun, rdzv_id, describe)
    check(run.truth is not None and len(run.truth["hosts"]) == 2, "clock-truth.json has 2 hosts")
    rows = cluster.trace_ranks(run.trace)
    check([r[0] for r in rows] == [0, 1, 2, 3], "the trace has ranks 0..3")
    check({r: h for r, h, _, _ in rows} == run.host_of_rank(),
          "ranks 0, 1 on h0 and 2, 3 on h1, where torchrun's rendezvous put them")
    want_id = "torchelastic:" + rdzv_id
    for node in (0, 1):
        folder = os.path.join(run.trace + ".ranks", f"node-{node}")
        ids = {u.rank_file_meta(f).get("run_id") for f in u.rank_files(folder)}
        check(ids == {want_id}, f"node {node}'s 2 rank files carry run id {want_id} ({ids})")
    trace = u.Trace(run.trace)
    try:
        meta = trace.meta()
        check(meta.get("run_id") == want_id and (meta.get("missing_ranks") or "") == "",
              f"merged: run id {meta.get('run_id')}, no rank missing")
        check(all(meta.get(f"rank.{r}.interposition") == "active: gloo" for r in range(4)),
              "every rank: interposition active: gloo")
        grad_bytes = u.read_json(describe)["grad_bytes"]
        for r in range(4):
            got = trace.rows("SELECT sum(bytes) FROM collective WHERE rank = ? AND op = 'allreduce'",
                             (r,))[0][0]
            check(got == PIP_STEPS * grad_bytes,
                  f"rank {r}: all-reduced {got} bytes = {PIP_STEPS} steps x {grad_bytes}")
        checked = u.check_transfers(trace, 4, u.check_seq_matches(trace, 4))
        check(checked.get("allreduce", 0) > PIP_STEPS, f"Gloo's messages on every link ({checked})")
        cross = dict(trace.rows(
            "SELECT t.src_rank || '->' || t.dst_rank, count(*) FROM transfer t JOIN collective c"
            " ON c.id = t.collective_id WHERE c.op = 'allreduce' AND t.side = 'send'"
            " AND t.src_rank / 2 != t.dst_rank / 2 GROUP BY 1"))
        check(set(cross) == {"2->1", "0->3"}, f"ring messages cross the hosts on 2->1, 0->3 ({cross})")
        steps = trace.rows("SELECT step, complete FROM step ORDER BY step")
        check([s for s, c in steps if c == 1] == list(range(PIP_STEPS)),
              f"{PIP_STEPS} complete steps found by merge ({steps})")
    finally:
        trace.close()
    check_alignment(run, n_hosts=2)


SCENARIOS = {"ddp-clocks": ddp_clocks, "bench-clocks": bench_clocks, "pip-torchrun": pip_torchrun,
             "node-merge": node_merge}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--scenario", required=True, choices=sorted(SCENARIOS))
    p.add_argument("--ringside", required=True)
    p.add_argument("--clockshift", default="")
    p.add_argument("--python", default="/usr/bin/python3")
    p.add_argument("--ddp-sample", default=os.path.join(cluster.REPO, "samples", "ddp_train.py"))
    p.add_argument("--keep", action="store_true")
    args = p.parse_args()
    out = tempfile.mkdtemp(prefix=f"ringside-cluster-{args.scenario}-")
    status = 1
    try:
        SCENARIOS[args.scenario](args, out)
        print(f"PASS {args.scenario}")
        status = 0
    except cluster.Skip as e:
        print(f"SKIP {args.scenario}: {e}")
        status = SKIP
    except AssertionError as e:
        print(f"FAIL {args.scenario}: {e}")
    if status == 1 or args.keep:
        print(f"output kept: {out}")
    else:
        shutil.rmtree(out, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
