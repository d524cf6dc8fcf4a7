#!/usr/bin/env python3
"""ringside's NCCL profiler plugin, every interface version (v1..v6): the
plugin driver feeds the same NCCL event sequence through ncclProfiler_vN with
no NCCL and no wrapper; the plugin must record the same calls, with what each
version can tell (algorithm, protocol, channels, GPU times, groups, streams,
per-peer transfers with channels).

usage: test_nccl_plugin.py PLUGIN_DRIVER LIBRINGSIDE_PRELOAD"""
import glob
import os
import sqlite3
import subprocess
import sys
import tempfile

driver, plugin = sys.argv[1:3]
COMM = "nccl/00c0ffee12345678"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL", what)


def run(version):
    d = tempfile.mkdtemp(prefix=f"ringside-nccl-v{version}-")
    env = dict(os.environ, RINGSIDE_DIR=d)
    for k in ("LD_PRELOAD", "NCCL_PROFILER_PLUGIN", "RANK", "WORLD_SIZE", "RINGSIDE_DISABLE"):
        env.pop(k, None)
    p = subprocess.run([driver, plugin, str(version)], env=env, capture_output=True, text=True, timeout=60)
    check(p.returncode == 0 and p.stdout == "plugin_driver done\n", f"v{version}: driver ran ({p.returncode}, {p.stderr})")
    files = glob.glob(os.path.join(d, "*.sqlite"))
    check(len(files) == 1, f"v{version}: one rank file, got {files}")
    return sqlite3.connect(f"file:{files[0]}?mode=ro", uri=True)


for v in range(1, 7):
    db = run(v)
    meta = dict(db.execute("select key, value from meta"))
    check(meta.get("nccl_profiler") == f"v{v}", f"v{v}: meta nccl_profiler {meta.get('nccl_profiler')}")
    check(meta.get("end_state") == "clean", f"v{v}: end_state clean")
    check("own=4" in meta.get("nccl_profiler_events", ""), f"v{v}: counters {meta.get('nccl_profiler_events')}")
    rows = db.execute(
        "select id, comm, seq, op, library, count, bytes, dtype, algorithm, protocol, channels, root,"
        " gpu_start_ns, gpu_end_ns, group_id, stream, start_ns, end_ns from collective order by seq").fetchall()
    check([r[3] for r in rows] == ["allreduce", "send", "recv", "broadcast"], f"v{v}: ops {[r[3] for r in rows]}")
    if len(rows) != 4:
        continue
    ar, snd, rcv, bc = rows
    check(all(r[1] == COMM and r[4] == "nccl" and r[7] == "f32" for r in rows), f"v{v}: comm/library/dtype {rows}")
    check([r[2] for r in rows] == [0, 1, 2, 3], f"v{v}: seq")
    check((ar[5], ar[6], snd[5], snd[6], bc[5]) == (1024, 4096, 256, 1024, 64), f"v{v}: counts and bytes")
    check((ar[8], ar[9], ar[10]) == ("ring", "Simple", 2), f"v{v}: allreduce algorithm/protocol/channels {ar[8:11]}")
    check((bc[8], bc[9], bc[10], bc[11]) == ("tree", "LL", 2, 1), f"v{v}: broadcast tree/LL/2 root 1 {bc[8:12]}")
    check(snd[11] == 1 and rcv[11] == 1, f"v{v}: send/recv peer in root")
    check((snd[10] == 2) == (v >= 4), f"v{v}: p2p channels known from v4 ({snd[10]})")
    # GPU times: from kernel channels (v3: observed by the host, v4+: the GPU timer)
    for r in rows:
        has = r[12] is not None and r[13] is not None
        check(has == (v >= 3), f"v{v}: {r[3]} GPU times {'expected' if v >= 3 else 'not expected'}: {r[12:14]}")
        if has:
            check(r[13] >= r[12], f"v{v}: {r[3]} gpu_end >= gpu_start")
            check(abs(r[12] - r[16]) < 10**9, f"v{v}: {r[3]} GPU start near the call ({r[12] - r[16]} ns)")
    # groups: the send and the recv were grouped by the user, the others not
    check(snd[14] is not None and snd[14] == rcv[14], f"v{v}: send/recv share a group {snd[14]} {rcv[14]}")
    check(ar[14] is None and bc[14] is None, f"v{v}: single calls are in no group {ar[14]} {bc[14]}")
    # streams come with the API events (v5+)
    check(all((r[15] == 0xabc) == (v >= 5) for r in rows), f"v{v}: streams {[r[15] for r in rows]}")
    # transfers: per step, with peer and channel
    t = db.execute("select collective_id, src_rank, dst_rank, bytes, side, phase, step, channel, start_ns, end_ns"
                   " from transfer").fetchall()
    check(len(t) == 24, f"v{v}: 24 transfers, got {len(t)}")
    check({x[7] for x in t} == {0, 1}, f"v{v}: channels {set(x[7] for x in t)}")
    check({x[6] for x in t} == {0, 1}, f"v{v}: steps")
    check(sum(x[3] for x in t) == 10752, f"v{v}: transfer bytes {sum(x[3] for x in t)}")
    check(all((x[1], x[2]) == ((0, 1) if x[4] == "send" else (1, 0)) for x in t), f"v{v}: peers")
    check(all(x[9] >= x[8] for x in t), f"v{v}: transfer end >= start")
    by_coll = {}
    for x in t:
        by_coll.setdefault(x[0], []).append(x)
    check(len(by_coll.get(ar[0], [])) == 8 and len(by_coll.get(snd[0], [])) == 4 and len(by_coll.get(rcv[0], [])) == 4,
          f"v{v}: transfers per call")
    check(all(x[5] == "broadcast" for x in by_coll.get(bc[0], [])), f"v{v}: broadcast phase")
    check(all(x[4] == "send" for x in by_coll.get(snd[0], [])), f"v{v}: send side")
    # the communicator, as far as the plugin was told
    comms = db.execute("select comm, library, comm_size, topology from communicator").fetchall()
    check(len(comms) == 1 and comms[0][0] == COMM and comms[0][1] == "nccl", f"v{v}: communicator {comms}")
    if comms:
        check((comms[0][2] == 2) == (v >= 4), f"v{v}: comm size known from v4 ({comms[0][2]})")
        check("ring 0: 1 -> 0 -> 1" in (comms[0][3] or ""), f"v{v}: ring order from the proxy ({comms[0][3]})")
    db.close()

print(f"{6 * 1 - len(set(f.split(':')[0] for f in failures))} versions passed, {len(failures)} checks failed")
sys.exit(1 if failures else 0)
