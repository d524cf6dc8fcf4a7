#!/usr/bin/env python3
"""Traced vs untraced cost of Gloo calls, interleaved in one run.

Usage: tools/perf/overhead.py BUILD_DIR [--rounds N] [--ddp] [--python PATH] [--quick]
       tools/perf/overhead.py BUILD_DIR --torchrun PATH [--rounds N] [--steps S]

Runs perf_gloo_loop (tools/perf/perf_gloo_loop.cpp) untraced and under libringside_preload.so, alternating,
and prints per-call times and the traced/untraced ratio (medians over rounds):
  * 1 rank, barrier and 4-byte all-reduce: the added cost per wrapped call (ns)
  * 1 KiB all-reduce on 2 and 4 ranks: the issue's small-message loop
  * with --ddp: samples/ddp_train.py step time on 2 ranks (needs python3-torch, or --python the
    pip environment's python from scripts/setup-pip-torch.sh); --cases none: only that
  * with --torchrun PATH (pip's torchrun, beside the python of scripts/setup-pip-torch.sh): the
    DDP sample as people run it, `torchrun --standalone --nproc-per-node 2 ddp_train.py` untraced
    and under `ringside record` (default detail), one discarded pair first, then N pairs in
    ABBA order; per job rank 0's median step wall time and its process's CPU time per step; the
    figures are the ratios of the medians, with the spread of the per-pair ratios (docs/bench.md,
    "Tracing overhead on pip torch")
Ratios, not absolute times, are the figures to compare on a noisy 2-core box.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

# tools/perf/overhead.py -> the checkout (samples/ddp_train.py)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_ranks(cmd, world, traced, build, extra_env=None):
    """Starts `world` ranks of cmd; returns rank 0's stdout."""
    store = tempfile.mkdtemp(prefix="ringside-bench-store-")
    rank_dir = tempfile.mkdtemp(prefix="ringside-bench-ranks-")
    procs = []
    for r in range(world):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(world), LOCAL_RANK=str(r),
                   GLOO_STORE_DIR=store, MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(20000 + os.getpid() % 20000 + world))
        env.pop("LD_PRELOAD", None)
        if traced:
            env["LD_PRELOAD"] = os.path.join(build, "lib", "libringside_preload.so")
            env["RINGSIDE_DIR"] = rank_dir
        env.update(extra_env or {})
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (o, e) in zip(procs, outs):
        if p.returncode != 0:
            sys.exit(f"bench: {' '.join(cmd)} failed ({p.returncode}): {e.strip()[-400:]}")
    subprocess.run(["rm", "-rf", store, rank_dir])
    return outs[0][0]


def per_call(out, key):
    m = re.search(key + r"\s+([0-9.]+)", out)
    if not m:
        sys.exit(f"bench: no '{key}' in output:\n{out}")
    return float(m.group(1))


def compare(name, cmd, world, build, rounds, key, unit_scale=1.0, extra_env=None):
    base, traced = [], []
    for _ in range(rounds):  # interleaved: drift hits both sides alike
        base.append(per_call(run_ranks(cmd, world, False, build, extra_env), key) * unit_scale)
        traced.append(per_call(run_ranks(cmd, world, True, build, extra_env), key) * unit_scale)
    b, t = statistics.median(base), statistics.median(traced)
    print(f"{name:<40} {b:12.3f} {t:12.3f} {t - b:+11.3f} {t / b:8.3f}", flush=True)
    return b, t


def torchrun_step_ms(torchrun, steps, traced, build):
    """One torchrun job of the DDP sample: rank 0's (median step wall time, mean step CPU time), ms."""
    job = [torchrun, "--standalone", "--nproc-per-node", "2", os.path.join(ROOT, "samples", "ddp_train.py"),
           "--steps", str(steps), "--log-every", "0", "--report-step-time"]
    # torchrun sets OMP_NUM_THREADS=1 when it is unset (and warns): set it for both sides alike.
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("LD_PRELOAD", None)
    with tempfile.TemporaryDirectory(prefix="ringside-overhead-") as tmp:
        cmd = [os.path.join(build, "bin", "ringside"), "record", "-q", "-o", os.path.join(tmp, "t.sqlite"),
               "--"] + job if traced else job
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if p.returncode != 0 and "step_time_median_ms" not in p.stdout:
        sys.exit(f"bench: {' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()[-400:]}")
    return per_call(p.stdout, "step_time_median_ms"), per_call(p.stdout, "step_cpu_ms")


def compare_torchrun(torchrun, build, rounds, steps):
    """Untraced vs traced torchrun jobs, ABBA-interleaved after a discarded warm-up pair."""
    torchrun_step_ms(torchrun, steps, False, build)  # page cache, the first import of torch
    torchrun_step_ms(torchrun, steps, True, build)
    got = {False: [], True: []}  # traced -> [(wall, cpu)]
    for i in range(rounds):
        for t in ((False, True) if i % 2 == 0 else (True, False)):
            got[t].append(torchrun_step_ms(torchrun, steps, t, build))
        (bw, bc), (tw, tc) = got[False][-1], got[True][-1]
        print(f"   pair {i + 1:2d}: wall {bw:7.3f} {tw:7.3f} ({tw / bw:.3f})  cpu {bc:7.3f} {tc:7.3f} "
              f"({tc / bc:.3f})  load {os.getloadavg()[0]:.1f}", flush=True)
    for k, name in ((0, "wall, median step"), (1, "CPU of rank 0's process, mean step")):
        base = [x[k] for x in got[False]]
        traced = [x[k] for x in got[True]]
        ratios = [t / b for b, t in zip(base, traced)]
        b, t = statistics.median(base), statistics.median(traced)
        q = statistics.quantiles(ratios, n=4) if len(ratios) >= 2 else [ratios[0]] * 3
        print(f"{name:<40} {b:12.3f} {t:12.3f} {t - b:+11.3f} {t / b:8.3f}")
        print(f"   per-pair ratios: median {statistics.median(ratios):.3f}, quartiles {q[0]:.3f}-"
              f"{q[2]:.3f}, range {min(ratios):.3f}-{max(ratios):.3f} ({rounds} pairs)", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build", help="build folder (holds bin/perf_gloo_loop and lib/libringside_preload.so)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--ddp", action="store_true", help="also time the DDP sample's steps")
    ap.add_argument("--quick", action="store_true", help="fewer iterations (smoke run)")
    ap.add_argument("--cases", default="wrapper,2,4",
                    help="comma list of wrapper, 2, 4 (ranks of the 1 KiB loop); default all")
    ap.add_argument("--python", default="/usr/bin/python3",
                    help="python that runs the DDP sample (default Debian's, with python3-torch)")
    ap.add_argument("--loop-iters", type=int, default=20000, help="iterations of the 1 KiB loops")
    ap.add_argument("--torchrun", help="pip's torchrun: time the DDP sample under torchrun only")
    ap.add_argument("--steps", type=int, default=300, help="DDP steps per torchrun job (--torchrun)")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    if a.torchrun:
        print(f"{'case':<40} {'untraced':>12} {'traced':>12} {'delta':>11} {'ratio':>8}")
        print(f"-- DDP sample under torchrun, 2 ranks, ms per step, {a.steps} steps a job "
              f"(pairs: untraced traced (ratio))")
        compare_torchrun(a.torchrun, build, a.rounds, a.steps)
        return
    loop = os.path.join(build, "bin", "perf_gloo_loop")
    k = 10 if a.quick else 1
    print(f"{'case':<40} {'untraced':>12} {'traced':>12} {'delta':>11} {'ratio':>8}")
    print("-- per call, microseconds (medians of %d interleaved rounds)" % a.rounds)
    cases = set(a.cases.split(","))
    if "wrapper" in cases:
        compare("1 rank barrier (wrapper cost)", [loop, "--op", "barrier", "--iters", str(400000 // k)], 1, build,
                a.rounds, "us_per_call")
        compare("1 rank allreduce 4 B (wrapper cost)", [loop, "--op", "allreduce", "--bytes", "4",
                "--iters", str(400000 // k)], 1, build, a.rounds, "us_per_call")
    for world in (2, 4):
        if str(world) in cases:
            compare(f"{world} ranks allreduce 1 KiB", [loop, "--op", "allreduce", "--bytes", "1024",
                    "--iters", str(a.loop_iters // k)], world, build, a.rounds, "us_per_call")
    if a.ddp:
        ddp = [a.python, os.path.join(ROOT, "samples", "ddp_train.py"), "--steps", str(60 // k),
               "--report-step-time"]
        print("-- DDP sample, mean step time, milliseconds")
        compare("2 ranks ddp_train.py step", ddp, 2, build, a.rounds, "step_time_ms")


if __name__ == "__main__":
    main()
