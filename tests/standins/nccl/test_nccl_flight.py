"""NCCL calls in the flight recorder (docs/flight-recorder.md, "NCCL"), on the stand-in NCCL
(tests/standins/nccl: CPU collectives between real processes, the profiler plugin fed like NCCL
feeds it) under `ringside record`:

  healthy     3 ranks, 200 all-reduces, plugin on: no watchdog line, no autopsy finding, every
              ring call of NCCL `done` (the plugin saw its kernel channels end), exit status 0
  no-plugin   the same with a plugin that cannot load: the ring's NCCL calls stay `queued`
              (completion unknown), still no verdict and no `exit-open` dump
  stall       rank 1 stops calling before its 50th loop all-reduce (--hang-timeout 2 --on-hang
              kill): the watchdog names rank 1 (stuck-collective) and the seq; rank 1's ring holds
              its last calls, done; the report's first finding names rank 1
  error       the stand-in's own timeout (2 s) fails the waiting ranks' call (ncclRemoteError):
              their rings hold it `failed` and an `error` dump with the result's name
  abort       the job ends with ncclCommAbort: an `error` dump naming the communicator
"""

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--app", required=True)
ap.add_argument("--preload", required=True)
ap.add_argument("--ringside", required=True)
args = ap.parse_args()

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from standin_util import EXTRA, check, clean_env, finish  # noqa: E402

ROOT = tempfile.mkdtemp(prefix="ringside-nccl-flight-")  # every job's folder, removed at the end
AUTOPSY_RULES = ("stuck-collective", "collective-mismatch", "rank-exited", "messages-undelivered", "peer-never-sent")


def record(world, app_args, *, record_args=(), **extra):
    """`ringside record --ranks world` of the stand-in app; returns (process, trace path)."""
    d = tempfile.mkdtemp(dir=ROOT)
    trace = os.path.join(d, "t.sqlite")
    env = clean_env(FAKE_NCCL_DIR=d, RINGSIDE_PRELOAD=args.preload, **extra)
    if EXTRA:
        env["LD_PRELOAD"] = EXTRA
    argv = [args.ringside, "record", "-q", "--ranks", str(world), "--grace-s", "3", *record_args, "-o", trace,
            "--", args.app, *app_args]
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=180)
    return p, trace


def rows(trace, sql, *params):
    if not os.path.exists(trace):
        return []
    with sqlite3.connect(f"file:{trace}?mode=ro", uri=True) as db:
        return db.execute(sql, params).fetchall()


def first_finding(trace):
    p = subprocess.run([args.ringside, "report", trace, "--format", "json"], capture_output=True, text=True,
                       timeout=120)
    try:
        first = (json.loads(p.stdout).get("findings") or [{}])[0]
    except json.JSONDecodeError:
        return None, f"report failed: {p.stderr.strip()}"
    return first.get("rule"), first.get("message", "")


def states(trace):
    return dict(rows(trace, "SELECT state, count(*) FROM flight_call WHERE library = 'nccl' GROUP BY state"))


# ---- healthy, with the plugin that record sets ----
p, trace = record(3, ["--loop", "200"], record_args=["--hang-timeout", "2"])
check(p.returncode == 0, f"healthy: exit {p.returncode}: {p.stderr}")
check("hang (" not in p.stderr, f"healthy: no watchdog verdict: {p.stderr}")
s = states(trace)
print("healthy: ring states", s)
check(s.get("done", 0) >= 3 * 64 and set(s) == {"done"}, f"healthy: every NCCL ring call done (plugin): {s}")
rule, message = first_finding(trace)
check(rule not in AUTOPSY_RULES, f"healthy: no autopsy finding: {rule}: {message}")
ops = rows(trace, "SELECT DISTINCT op, dtype, bytes FROM flight_call WHERE rank = 0 AND library = 'nccl' AND bytes = 4")
check(("allreduce", "f32", 4) in ops, f"healthy: the ring keeps op, dtype and bytes: {ops}")

# ---- healthy, no completion source: calls stay queued, still no verdict ----
p, trace = record(3, ["--loop", "200"], record_args=["--hang-timeout", "2"],
                  NCCL_PROFILER_PLUGIN="/nonexistent/plugin.so")
check(p.returncode == 0 and "hang (" not in p.stderr, f"no plugin: exit {p.returncode}, no verdict: {p.stderr}")
s = states(trace)
print("no plugin: ring states", s)
check(set(s) == {"queued"}, f"no plugin: the ring's NCCL calls are queued (API returned, completion unknown): {s}")
reasons = rows(trace, "SELECT DISTINCT reason FROM flight_dump")
check(("exit-open",) not in reasons, f"no plugin: queued calls are not open at exit: {reasons}")
rule, message = first_finding(trace)
check(rule not in AUTOPSY_RULES, f"no plugin: no autopsy finding: {rule}: {message}")

# ---- rank 1 stops calling ----
p, trace = record(3, ["--loop", "100", "--stall-rank", "1", "--stall-at", "50"],
                  record_args=["--hang-timeout", "2", "--on-hang", "kill"], FAKE_NCCL_TIMEOUT_S=60)
line = next((l for l in p.stderr.splitlines() if "hang (" in l), "")
print("stall:", line)
check("hang (stuck-collective): rank 1 never entered allreduce" in line, f"stall: the watchdog names rank 1: {p.stderr}")
last = rows(trace, "SELECT max(seq) FROM flight_call WHERE rank = 1 AND library = 'nccl' AND bytes = 4")
waiting = rows(trace, "SELECT DISTINCT state FROM flight_call WHERE rank IN (0, 2) AND library = 'nccl' AND seq = ?",
               (last[0][0] + 1) if last and last[0][0] is not None else -1)
check(last and last[0][0] is not None and f"#{last[0][0] + 1} " in line,
      f"stall: the verdict's seq is the one after rank 1's last ring call ({last}): {line}")
check(waiting == [("entered",)], f"stall: ranks 0 and 2 are inside the call rank 1 never made: {waiting}")
done1 = rows(trace, "SELECT count(*) FROM flight_call WHERE rank = 1 AND library = 'nccl' AND state = 'done'")
check(done1 and done1[0][0] >= 50, f"stall: rank 1's ring holds its last calls, done: {done1}")
rule, message = first_finding(trace)
check(rule == "stuck-collective" and "rank 1 " in message, f"stall: the report's first finding: {rule}: {message}")

# ---- an error return (the stand-in's timeout: ncclRemoteError) ----
p, trace = record(3, ["--loop", "20", "--stall-rank", "1", "--stall-at", "10", "--stall-s", "4"],
                  record_args=["--hang-timeout", "0"], FAKE_NCCL_TIMEOUT_S=1)
check(p.returncode != 0, f"error: the job fails as it would untraced: {p.returncode}")
dumps = rows(trace, "SELECT rank, reason, detail FROM flight_dump WHERE reason = 'error'")
print("error: dumps", dumps)
check({r for r, _, d in dumps if d and "ncclAllReduce returned 6 (ncclRemoteError)" in d} == {0, 2},
      f"error: ranks 0 and 2 stamp an error dump with the result: {dumps}")
failed = rows(trace, "SELECT DISTINCT rank FROM flight_call WHERE state = 'failed' ORDER BY rank")
check(failed == [(0,), (2,)], f"error: the failed call is in the ring of ranks 0 and 2: {failed}")

# ---- ncclCommAbort ----
p, trace = record(2, ["--abort"], record_args=["--hang-timeout", "2"])
check(p.returncode == 0, f"abort: exit {p.returncode}: {p.stderr}")
dumps = rows(trace, "SELECT rank, detail FROM flight_dump WHERE reason = 'error'")
print("abort: dumps", dumps)
check(len(dumps) == 2 and all(d and d.startswith("ncclCommAbort on nccl/") for _, d in dumps),
      f"abort: an error dump per rank naming the communicator: {dumps}")

shutil.rmtree(ROOT, ignore_errors=True)
finish()
