#!/usr/bin/env python3
"""ringside's NCCL profiler plugin driven as NCCL drives it where NCCL's
contract is easy to get wrong (docs/nccl.md, "What NCCL does"), through every
interface version (v1..v6) of the plugin driver:

- pxn: proxy ops another process posted, with a foreign pid and with pid 0,
  whose context and parent lie in a PROT_NONE page: the driver dies on any
  access; recorded without a collective;
- group: 10,000 calls in one group, every coll event after every API event:
  no GPU row, stream or transfer attributed to another call; the calls whose
  slots were reused counted in stale_parent;
- graph (v5+): 10,000 replays of a captured group after 3,000 later calls:
  no replay lands on a later call;
- declined: init fails (RINGSIDE_DISABLE) or a communicator's context is null,
  and NCCL goes on calling startEvent/stopEvent: nothing crashes, nothing is
  recorded.

usage: test_nccl_contract.py PLUGIN_DRIVER LIBRINGSIDE_PRELOAD"""
import glob
import os
import sqlite3
import subprocess
import sys
import tempfile

driver, plugin = sys.argv[1:3]
N, API_POOL, COLL_POOL = 10000, 2048, 8192
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL", what)


def run(version, mode, **extra):
    d = tempfile.mkdtemp(prefix=f"ringside-nccl-{mode}-v{version}-")
    env = dict(os.environ, RINGSIDE_DIR=d, RINGSIDE_BUFFER_MB="256", RINGSIDE_MESSAGE_ROWS="100000000",
               RINGSIDE_EXIT_TIMEOUT_MS="240000", **extra)
    for k in ("LD_PRELOAD", "NCCL_PROFILER_PLUGIN", "RANK", "WORLD_SIZE", "RINGSIDE_NCCL_EVENT_MASK"):
        env.pop(k, None)
    if "RINGSIDE_DISABLE" not in extra:
        env.pop("RINGSIDE_DISABLE", None)
    p = subprocess.run([driver, plugin, str(version), mode], env=env, capture_output=True, text=True, timeout=600)
    check(p.returncode == 0 and f"plugin_driver {mode} done" in p.stdout,
          f"v{version} {mode}: driver ran (status {p.returncode}: a foreign pointer touched?) {p.stdout} {p.stderr[-2000:]}")
    files = glob.glob(os.path.join(d, "*.sqlite"))
    return p, files


def one(db, sql):
    return db.execute(sql).fetchone()[0]


def counters(db):
    row = db.execute("select value from meta where key = 'nccl_profiler_events'").fetchone()
    return dict(kv.split("=") for kv in (row[0].split() if row else []))


for v in range(1, 7):
    # ---- PXN ----
    _, files = run(v, "pxn")
    check(len(files) == 1, f"v{v} pxn: one rank file")
    if files:
        db = sqlite3.connect(f"file:{files[0]}?mode=ro", uri=True)
        check(one(db, "select count(*) from transfer where collective_id is null and channel = 5 and bytes = 4096")
              == 20, f"v{v} pxn: 20 transfers kept apart")
        check(one(db, "select count(*) from transfer where collective_id is not null") == 0,
              f"v{v} pxn: no PXN transfer attributed to a local call")
        c = counters(db)
        check(c.get("pxn_remote") == "10" and c.get("stale_parent") == "0", f"v{v} pxn: counters {c}")
        db.close()

    # ---- a group of 10,000 calls ----
    _, files = run(v, "group")
    check(len(files) == 1, f"v{v} group: one rank file")
    if files:
        db = sqlite3.connect(f"file:{files[0]}?mode=ro", uri=True)
        check(one(db, "select count(*) from collective") == N, f"v{v} group: {N} calls")
        check(one(db, "select count(*) from collective where channels != 1 + count % 61") == 0,
              f"v{v} group: every GPU row from the call's own coll event")
        if v >= 5:
            check(one(db, "select count(*) from collective where stream = count + 1") == API_POOL,
                  f"v{v} group: the last {API_POOL} calls have their stream")
            check(one(db, "select count(*) from collective where stream is not null and stream != 0"
                          " and stream != count + 1") == 0, f"v{v} group: no call has another's stream")
        check(one(db, "select count(*) from transfer t join collective c on t.collective_id = c.id"
                      " where t.bytes != 1000 + c.count") == 0, f"v{v} group: no transfer under another call")
        stale_coll = N - COLL_POOL
        check(one(db, "select count(*) from transfer where collective_id is not null") == 2 * (N - stale_coll),
              f"v{v} group: transfers of the calls whose coll slot held")
        check(one(db, "select count(*) from transfer where collective_id is null") == 2 * stale_coll,
              f"v{v} group: transfers of stale coll handles kept apart")
        if v >= 3:
            check(one(db, "select count(*) from collective where gpu_start_ns is not null") == N - stale_coll,
                  f"v{v} group: GPU spans of the calls whose coll slot held")
        c = counters(db)
        want = (N - API_POOL if v >= 5 else 0) + stale_coll * (3 if v >= 3 else 2)
        check(c.get("stale_parent") == str(want), f"v{v} group: stale_parent {c.get('stale_parent')} != {want}")
        check(one(db, "select value from meta where key = 'events_dropped'") == "0", f"v{v} group: no event dropped")
        db.close()

    # ---- graph replays ----
    if v >= 5:
        _, files = run(v, "graph")
        check(len(files) == 1, f"v{v} graph: one rank file")
        if files:
            db = sqlite3.connect(f"file:{files[0]}?mode=ro", uri=True)
            check(one(db, "select count(*) from collective") == 2 * 10 + 3000 + 2 * 10000, f"v{v} graph: calls")
            check(one(db, "select count(*) from collective where count >= 100000 and stream = 20480 + count - 100000")
                  == 20, f"v{v} graph: early replays belong to the captured calls")
            check(one(db, "select count(*) from collective where count < 3000 and stream = count + 1") == 3000,
                  f"v{v} graph: later calls keep their stream")
            check(one(db, "select count(*) from collective where stream is not null and stream != 0 and stream !="
                          " case when count >= 100000 then 20480 + count - 100000 else count + 1 end") == 0,
                  f"v{v} graph: no replay attributed to a later call")
            check(one(db, "select count(*) from transfer t join collective c on t.collective_id = c.id"
                          " where t.bytes != 1000 + c.count") == 0, f"v{v} graph: transfers under their own call")
            c = counters(db)
            check(c.get("stale_parent") == "20000", f"v{v} graph: stale_parent {c.get('stale_parent')}")
            check(one(db, "select value from meta where key = 'events_dropped'") == "0", f"v{v} graph: no drop")
            db.close()

    # ---- init declined, NCCL goes on ----
    p, files = run(v, "declined", RINGSIDE_DISABLE="1")
    check("init declined" in p.stdout and not files, f"v{v} declined: init failed, no file ({files})")
    p, files = run(v, "declined")
    check("init accepted" in p.stdout and len(files) == 1, f"v{v} declined: other communicator's file")
    if files:
        db = sqlite3.connect(f"file:{files[0]}?mode=ro", uri=True)
        check(one(db, "select count(*) from collective") == 0 and one(db, "select count(*) from transfer") == 0,
              f"v{v} declined: nothing recorded from a null context")
        db.close()

print(f"{len(failures)} checks failed")
sys.exit(1 if failures else 0)
