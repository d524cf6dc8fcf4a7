#!/usr/bin/env python3
"""Traced vs untraced cost of Gloo calls, interleaved in one run.

Usage: tools/perf/overhead.py BUILD_DIR [--rounds N] [--ddp] [--python PATH] [--quick]

Runs perf_gloo_loop (tools/perf/perf_gloo_loop.cpp) untraced and under libringside_preload.so, alternating,
and prints per-call times and the traced/untraced ratio (medians over rounds):
  * 1 rank, barrier and 4-byte all-reduce: the added cost per wrapped call (ns)
  * 1 KiB all-reduce on 2 and 4 ranks: the issue's small-message loop
  * with --ddp: samples/ddp_train.py step time on 2 ranks (needs python3-torch, or --python the
    pip environment's python from scripts/setup-pip-torch.sh); --cases none: only that
Ratios, not absolute times, are the figures to compare on a noisy 2-core box.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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
    a = ap.parse_args()
    build = os.path.abspath(a.build)
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
