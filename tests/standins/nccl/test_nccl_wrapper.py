#!/usr/bin/env python3
"""ringside's NCCL wrapper and profiler plugin together, against the stand-in
libnccl.so.2: a 2-rank job (init, split, collectives in and outside groups,
send/recv, destroy/abort) recorded under LD_PRELOAD with the same library as
NCCL_PROFILER_PLUGIN.

Checks: the job's output and exit status are unchanged; exact rows (one
communicator id on both ranks, its split child, collectives with group ids,
GPU times, algorithm/protocol/channels, transfers with peer and channel);
NCCL reached through a private dlopen chain; plugin version negotiation
through the stand-in NCCL for v1..v6; dormant without NCCL and with
RINGSIDE_DISABLE; `ringside record` sets NCCL_PROFILER_PLUGIN unless the user
did."""
import argparse
import glob
import os
import sqlite3
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--app", required=True)
ap.add_argument("--app-private", required=True)
ap.add_argument("--workload", required=True)
ap.add_argument("--preload", required=True)
ap.add_argument("--ringside", required=True)
args = ap.parse_args()

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from standin_util import EXTRA, check, clean_env, finish  # noqa: E402

PRELOAD = (EXTRA + " " + args.preload).strip()


def run_job(app, world, traced, app_args=(), **extra):
    """Runs `world` ranks; returns (exit codes, rank 0 stdout, stderr of all, rank files)."""
    ex = tempfile.mkdtemp(prefix="fake-nccl-")
    rf = tempfile.mkdtemp(prefix="ringside-nccl-")
    procs = []
    for r in range(world):
        env = clean_env(RANK=r, WORLD_SIZE=world, FAKE_NCCL_DIR=ex, RINGSIDE_DIR=rf, NCCL_WORKLOAD=args.workload,
                        **extra)
        if traced:
            env["LD_PRELOAD"] = PRELOAD
            env.setdefault("NCCL_PROFILER_PLUGIN", args.preload)
        procs.append(subprocess.Popen([app] + list(app_args), env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=120) for p in procs]
    codes = [p.returncode for p in procs]
    return codes, outs[0][0], "".join(o[1] for o in outs), sorted(glob.glob(os.path.join(rf, "*.sqlite")))


def open_db(path):
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


# ---- 1. output and exit status unchanged ----
base_codes, base_out, base_err, base_files = run_job(args.app, 2, traced=False)
check(base_codes == [0, 0] and base_out.endswith("nccl_app done\n"), f"untraced job ran: {base_codes} {base_err}")
check(base_files == [], "untraced job wrote no rank file")
codes, out, err, files = run_job(args.app, 2, traced=True)
check(codes == base_codes and out == base_out, f"traced job: same output and status ({codes}, {err})")
check(len(files) == 2, f"one rank file per rank: {files}")
codes3, out3, _, _ = run_job(args.app, 2, traced=True, app_args=["--exit", "3"])
check(codes3 == [3, 3] and out3 == base_out, f"exit status 3 kept: {codes3}")

# ---- 2. the rows ----
EXPECT_OPS = ["allreduce", "allreduce", "broadcast", "send", "recv", "reducescatter", "allgather"]
world_ids, split_ids = set(), set()
for path in files:
    db = open_db(path)
    rank, ws, src = db.execute("select rank, world_size, identity_source from rank").fetchone()
    check((ws, src) == (2, "nccl"), f"rank identity from NCCL: {rank} {ws} {src}")
    meta = dict(db.execute("select key, value from meta"))
    check(meta.get("interposition") == "active: nccl", f"r{rank}: interposition {meta.get('interposition')}")
    check(meta.get("nccl_profiler") == "v6", f"r{rank}: plugin v6 negotiated ({meta.get('nccl_profiler')})")
    check("claimed=8 own=0" in meta.get("nccl_profiler_events", ""),
          f"r{rank}: every call claimed by the plugin ({meta.get('nccl_profiler_events')})")
    check(meta.get("nccl_library", "").endswith("libnccl.so.2"), f"r{rank}: nccl_library {meta.get('nccl_library')}")
    comms = {c[0]: c for c in db.execute(
        "select comm, library, comm_rank, comm_size, parent, created_ns, ended_ns, end_state, topology"
        " from communicator")}
    check(len(comms) == 2, f"r{rank}: two communicators {list(comms)}")
    world = [c for c in comms.values() if c[4] is None]
    split = [c for c in comms.values() if c[4] is not None]
    if len(world) == 1 and len(split) == 1:
        w, s = world[0], split[0]
        world_ids.add(w[0])
        split_ids.add(s[0])
        check(w[0].startswith("nccl/") and len(w[0]) == 21, f"r{rank}: world id {w[0]}")
        check((w[2], w[3], w[7]) == (rank, 2, "destroyed"), f"r{rank}: world comm row {w}")
        check((s[2], s[3], s[4], s[7]) == (1 - rank, 2, w[0], "destroyed"), f"r{rank}: split comm row {s}")
        check(w[5] < s[5] < s[6] <= w[6], f"r{rank}: creation/end order")
        check("ring 0:" in (w[8] or ""), f"r{rank}: ring order noted {w[8]}")
    rows = db.execute("select id, comm, seq, op, library, count, bytes, dtype, reduce_op, algorithm, protocol,"
                      " channels, group_id, stream, device, root, status, gpu_start_ns, gpu_end_ns, start_ns, end_ns"
                      " from collective order by id").fetchall()
    world_rows = [r for r in rows if world and r[1] == world[0][0]]
    check([r[3] for r in world_rows] == EXPECT_OPS, f"r{rank}: world ops {[r[3] for r in world_rows]}")
    check([r[2] for r in world_rows] == list(range(7)), f"r{rank}: world seq")
    split_rows = [r for r in rows if split and r[1] == split[0][0]]
    check([(r[3], r[2], r[5]) for r in split_rows] == [("allreduce", 0, 32)], f"r{rank}: split call {split_rows}")
    check(all(r[4] == "nccl" and r[16] == 0 for r in rows), f"r{rank}: library nccl, status 0")
    check(all(r[13] == 0x5000 + rank and r[14] == rank for r in rows), f"r{rank}: stream and device")
    check(all(r[17] is not None and r[18] is not None and r[18] >= r[17] for r in rows), f"r{rank}: GPU times")
    colls = [r for r in rows if r[3] not in ("send", "recv")]
    check(all((r[9], r[10], r[11]) == ("ring", "Simple", 2) for r in colls), f"r{rank}: algorithm/protocol/channels")
    if len(world_rows) == 7:
        ar, ar2, bc, snd, rcv, rs, ag = world_rows
        check((ar[5], ar[6], ar[7], ar[8]) == (1024, 4096, "f32", "sum"), f"r{rank}: allreduce row {ar}")
        check((ar2[7], ar2[8]) == ("i32", "max"), f"r{rank}: allreduce i32 max")
        check(bc[15] == 0 and bc[8] is None, f"r{rank}: broadcast root 0, no reduce op")
        check((rs[5], rs[6]) == (32, 256), f"r{rank}: reduce_scatter counts the whole input {rs[5:7]}")
        check((ag[5], ag[6]) == (16, 128), f"r{rank}: allgather counts this rank's part {ag[5:7]}")
        check(ar[12] is None and rs[12] is None, f"r{rank}: calls outside groups have no group")
        check(ar2[12] is not None and ar2[12] == bc[12], f"r{rank}: grouped allreduce+broadcast share a group")
        check(snd[12] is not None and snd[12] == rcv[12] != bc[12], f"r{rank}: send/recv share another group")
        check(snd[15] == 1 - rank and rcv[15] == 1 - rank, f"r{rank}: send/recv peer")
    t = db.execute("select collective_id, src_rank, dst_rank, bytes, side, channel, step from transfer").fetchall()
    ids = {r[0] for r in rows}
    check(len(t) == 56, f"r{rank}: 56 transfers (7 calls x 2 channels x 2 steps x send+recv), got {len(t)}")
    check(all(x[0] in ids for x in t), f"r{rank}: every transfer belongs to a recorded call")
    check({x[5] for x in t} == {0, 1}, f"r{rank}: transfer channels")
    check(all({x[1], x[2]} == {0, 1} for x in t), f"r{rank}: transfer peers")
    check(all((x[1] == (rank if x[4] == "send" else 1 - rank)) for x in t if x[0] in {r[0] for r in world_rows}),
          f"r{rank}: world transfers from this rank's view")
    db.close()
check(len(world_ids) == 1 and len(split_ids) == 1, f"communicator ids equal on both ranks: {world_ids} {split_ids}")

# ---- 3. abort ----
codes, out, err, files = run_job(args.app, 2, traced=True, app_args=["--abort"])
check(codes == [0, 0], f"--abort ran {codes} {err}")
states = set()
for path in files:
    db = open_db(path)
    states |= {r[0] for r in db.execute("select end_state from communicator where parent is null")}
check(states == {"aborted"}, f"world comm aborted: {states}")

# ---- 4. NCCL through a private dlopen chain ----
codes, out, err, files = run_job(args.app_private, 2, traced=True)
check(codes == [0, 0] and out == base_out, f"private dlopen: same output {codes} {err}")
check(len(files) == 2, f"private dlopen: rank files {files}")
for path in files:
    db = open_db(path)
    n = db.execute("select count(*) from collective where gpu_start_ns is not null").fetchone()[0]
    check(n == 8, f"private dlopen: 8 calls with GPU times, got {n}")

# ---- 5. version negotiation through the stand-in NCCL ----
for v in range(1, 7):
    codes, out, err, files = run_job(args.app, 1, traced=True, FAKE_NCCL_PROFILER_VERSION=v)
    check(codes == [0] and len(files) == 1, f"v{v}: ran {codes} {err}")
    if not files:
        continue
    db = open_db(files[0])
    meta = dict(db.execute("select key, value from meta"))
    check(meta.get("nccl_profiler") == f"v{v}", f"v{v}: negotiated {meta.get('nccl_profiler')}")
    check("claimed=8 own=0" in meta.get("nccl_profiler_events", ""), f"v{v}: claims {meta.get('nccl_profiler_events')}")
    rows = db.execute("select op, algorithm, protocol, gpu_start_ns, group_id from collective order by id").fetchall()
    check(len(rows) == 8, f"v{v}: 8 calls")
    check(all(r[1] == "ring" and r[2] == "Simple" for r in rows if r[0] not in ("send", "recv")),
          f"v{v}: algorithm/protocol")
    check(all((r[3] is not None) == (v >= 3) for r in rows), f"v{v}: GPU times from v3")
    check(len({r[4] for r in rows if r[4] is not None}) == 2, f"v{v}: two groups")

# ---- 6. dormant ----
rf = tempfile.mkdtemp(prefix="ringside-dormant-")
p = subprocess.run(["/bin/sh", "-c", "echo no nccl here"], capture_output=True, text=True,
                   env=clean_env(LD_PRELOAD=PRELOAD, NCCL_PROFILER_PLUGIN=args.preload, RINGSIDE_DIR=rf,
                                 RANK=0, WORLD_SIZE=1))
check(p.returncode == 0 and p.stdout == "no nccl here\n" and os.listdir(rf) == [], "no NCCL: dormant, no file")
codes, out, err, files = run_job(args.app, 2, traced=True, RINGSIDE_DISABLE=1)
check(codes == [0, 0] and out == base_out and files == [], f"RINGSIDE_DISABLE: untouched, no file ({files})")

# ---- 7. ringside record ----
d = tempfile.mkdtemp(prefix="ringside-record-nccl-")
trace = os.path.join(d, "t.sqlite")
env = clean_env(FAKE_NCCL_DIR=d, RINGSIDE_PRELOAD=args.preload)
if EXTRA:
    env["LD_PRELOAD"] = EXTRA  # record puts its library before it
p = subprocess.run([args.ringside, "record", "-q", "--ranks", "2", "-o", trace, "--", args.app], env=env,
                   capture_output=True, text=True, timeout=180)
check(p.returncode == 0 and p.stdout == base_out, f"record: exit {p.returncode}, {p.stderr}")
if os.path.exists(trace):
    db = open_db(trace)
    n = db.execute("select count(*) from collective where library = 'nccl' and gpu_start_ns is not null").fetchone()[0]
    check(n == 16, f"record: 16 NCCL calls with GPU times (plugin set by record), got {n}")
    c = db.execute("select count(distinct comm), count(*) from communicator").fetchone()
    check(c == (2, 4), f"record: 2 communicators on 2 ranks {c}")
    db.close()
p = subprocess.run([args.ringside, "record", "-q", "-f", "--ranks", "2", "-o", trace, "--", args.app],
                   env=dict(env, NCCL_PROFILER_PLUGIN="/nonexistent/plugin.so",
                            FAKE_NCCL_DIR=tempfile.mkdtemp(prefix="fake-nccl-")),  # a fresh unique-id file
                   capture_output=True, text=True,
                   timeout=180)
check(p.returncode == 0 and "/nonexistent/plugin.so" in p.stderr, "record: the user's NCCL_PROFILER_PLUGIN kept")
if os.path.exists(trace):
    db = open_db(trace)
    n, g = db.execute("select count(*), count(gpu_start_ns) from collective").fetchone()
    check((n, g) == (16, 0), f"record with the user's plugin: calls recorded, no GPU side ({n}, {g})")

# ---- 8. rings and trees from NCCL's INFO log ----
logdir = tempfile.mkdtemp(prefix="ringside-nccl-log-")
codes, out, err, files = run_job(args.app, 2, traced=True, NCCL_DEBUG="INFO",
                                 NCCL_DEBUG_FILE=os.path.join(logdir, "nccl-%h.%p.log"))
check(codes == [0, 0] and out == base_out, f"NCCL log: same output {codes} {err}")
for path in files:
    db = open_db(path)
    rank = db.execute("select rank from rank").fetchone()[0]
    topo = dict(db.execute("select coalesce(parent, 'world'), topology from communicator"))
    w = topo.get("world") or ""
    check("ring 0: 0 1" in w and "ring 1: 0 1" in w, f"r{rank}: rings from NCCL's log: {w!r}")
    want_tree = f"tree 0: {1 if rank == 0 else -1}/-1/-1->{rank}->{rank - 1}"
    check(want_tree in w, f"r{rank}: tree from NCCL's log ({want_tree}): {w!r}")
    split = [v for k, v in topo.items() if k != "world"]
    check(len(split) == 1 and "ring 0: 0 1" in (split[0] or ""), f"r{rank}: split comm's ring from the log {split}")
d = tempfile.mkdtemp(prefix="ringside-record-nccl-log-")
trace = os.path.join(d, "t.sqlite")
p = subprocess.run([args.ringside, "record", "-q", "--nccl-log", "--ranks", "2", "-o", trace, "--", args.app],
                   env=dict(clean_env(FAKE_NCCL_DIR=d, RINGSIDE_PRELOAD=args.preload),
                            **({"LD_PRELOAD": EXTRA} if EXTRA else {})),
                   capture_output=True, text=True, timeout=180)
check(p.returncode == 0 and p.stdout == base_out, f"record --nccl-log: exit {p.returncode}, same output; {p.stderr}")
if os.path.exists(trace):
    db = open_db(trace)
    n = db.execute("select count(*) from communicator where topology like '%ring 0: 0 1%'"
                   " and topology like '%tree 0:%'").fetchone()[0]
    check(n == 4, f"record --nccl-log: rings and trees of 2 communicators on 2 ranks ({n})")
check(not os.path.exists(trace + ".ranks"), "record --nccl-log: NCCL's logs removed with the rank files")

finish()
