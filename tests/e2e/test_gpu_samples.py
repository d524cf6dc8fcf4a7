#!/usr/bin/env python3
"""The GPU samples recorded by `ringside record` (world size 1, one GPU):
samples/gpu_train.py (DDP over NCCL) and samples/nccl_allreduce_loop.py.

Skips (exit 77, with the reason) without PyTorch, a CUDA GPU or NCCL, as on CI
machines. On a GPU machine it checks that the job's output and exit status are
unchanged, and that the trace holds NCCL calls (through the wrapper, or, where
PyTorch links NCCL statically, through the profiler plugin alone) with their
GPU side: times, algorithm, protocol, channels.

usage: test_gpu_samples.py --ringside PATH --python PATH --samples DIR"""
import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--ringside", required=True)
ap.add_argument("--python", required=True)
ap.add_argument("--samples", required=True)
args = ap.parse_args()

probe = subprocess.run([args.python, "-c",
                        "import torch, torch.distributed as d; "
                        "print(int(torch.cuda.is_available() and d.is_available() and d.is_nccl_available()))"],
                       capture_output=True, text=True)
if probe.returncode != 0 or probe.stdout.strip() != "1":
    print("skipped: no PyTorch with CUDA and NCCL here", probe.stderr.strip()[-200:])
    sys.exit(77)

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(script, extra, steps_arg):
    d = tempfile.mkdtemp(prefix="ringside-gpu-")
    trace = os.path.join(d, "t.sqlite")
    cmd = [args.python, os.path.join(args.samples, script)] + extra
    base = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    traced = subprocess.run([args.ringside, "record", "-q", "-o", trace, "--"] + cmd,
                            capture_output=True, text=True, timeout=600)
    check(base.returncode == 0 and traced.returncode == base.returncode,
          f"{script}: exit {base.returncode} untraced, {traced.returncode} traced ({traced.stderr[-300:]})")
    # Losses are deterministic lines; timings are not.
    lines = lambda out: [l for l in out.splitlines() if l.startswith(steps_arg)]
    check(lines(base.stdout) == lines(traced.stdout), f"{script}: same '{steps_arg}' lines traced and untraced")
    if not os.path.exists(trace):
        check(False, f"{script}: trace written")
        return None
    return sqlite3.connect(f"file:{trace}?mode=ro", uri=True)


db = run("gpu_train.py", ["--steps", "10"], "step ")
if db is not None:
    n, gpu, alg = db.execute("select count(*), count(gpu_start_ns), count(protocol) from collective"
                             " where library = 'nccl'").fetchone()
    check(n >= 10, f"gpu_train: >= 10 NCCL calls recorded ({n})")
    check(gpu >= 10, f"gpu_train: GPU times for >= 10 calls ({gpu})")
    check(alg >= 10, f"gpu_train: protocol for >= 10 calls ({alg})")
    meta = dict(db.execute("select key, value from meta"))
    print("meta:", {k: v for k, v in meta.items() if "nccl" in k or "interposition" in k or "cupti" in k})
    c = db.execute("select count(*) from communicator where library = 'nccl'").fetchone()[0]
    check(c >= 1, f"gpu_train: NCCL communicator recorded ({c})")
db = run("nccl_allreduce_loop.py", ["--max-bytes", "16M", "--iters", "5", "--warmup", "2"], "# all-reduce")
if db is not None:
    n = db.execute("select count(*) from collective where op = 'allreduce' and library = 'nccl'").fetchone()[0]
    check(n >= 7 * 8, f"allreduce loop: every call recorded ({n})")
print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
