"""Nothing the user has is lost, and no failure reads as success (issue 28).

Scenarios (each runs the C++ Gloo sample, 2 ranks, for a few seconds at most):
  record-keeps-other-files  the job writes its own results.sqlite into the rank folder and merges
                            an interim peek.sqlite there during the run: record merges and removes
                            only its rank files; both files stay
  record-waits-for-writers  the launcher exits while its ranks (started in the background) still
                            run: record waits for them (one line saying for whom and how long),
                            merges every call, calls no rank cut off; with --wait-s 0.3 it merges
                            what they wrote so far, calls them still running (not "killed or
                            crashed"), keeps their rank files, and its printed merge gets it all
  record-rank-dir-link      a symbolic link planted at <out>.ranks or <dir>/node-K: refused with
                            exit 2 before the job, nothing written into the link's target
  record-job-fails          every rank fails at once: record says the job failed, exits with its
                            status, still merges
  merge-killed              `ringside merge` of a 4-host job killed at 18 moments (SIGKILL,
                            SIGTERM, SIGINT): a published trace always holds its clock model and
                            steps; SIGTERM/SIGINT leave no temporary file, and the next merge
                            removes what SIGKILL left
  merge-inputs              merge without -k fails on a damaged input; another program's database
                            in the folder is left out with a line; a copied rank file counts once
  merge-hot-journal         a write to a trace killed mid-transaction leaves a hot journal:
                            report and export roll it back instead of failing
"""

import os
import re
import shlex
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as u  # noqa: E402


def env_for(ctx, **extra):
    return u.clean_env(GLOO_STORE_DIR=ctx.mkdir("store"), **extra)


def sample(ctx, *args):
    return " ".join(shlex.quote(a) for a in [ctx.gloo_sample, *args])


def meta_of(path):
    t = u.Trace(path)
    try:
        return t.meta(), t.scalar("SELECT count(*) FROM collective")
    finally:
        t.close()


# --------------------------------------------------------------------------- item 1

def keeps_other_files(ctx):
    ctx.need_gloo_sample()
    job_dir = ctx.mkdir("job")
    trace_path = ctx.path("t.sqlite")
    # Both ranks run the sample; rank 0 then writes the job's own results.sqlite and peeks at
    # the rank folder with an interim merge (rank 1's file may still be open: -k).
    after = (f"if [ \"$RANK\" = 0 ]; then {shlex.quote(ctx.python)} -c "
             f"\"import sqlite3; c = sqlite3.connect('results.sqlite'); "
             f"c.execute('create table r(x)'); c.execute('insert into r values (42)'); "
             f"c.commit()\" && {shlex.quote(ctx.ringside)} merge -q -k . -o peek.sqlite; fi")
    command = ["/bin/sh", "-c",
               f"{sample(ctx, '--only', 'allreduce', '--iters', '2')} >/dev/null && {{ {after}; }}"]
    res = ctx.record(["--ranks", "2", "--dir", ".", "-o", trace_path, "-q"], command,
                     env=env_for(ctx), cwd=job_dir, timeout=60)
    res.expect(0)
    results = os.path.join(job_dir, "results.sqlite")
    u.check(os.path.isfile(results), f"record removed the job's results.sqlite\n{res.describe()}")
    db = sqlite3.connect(results)
    u.check_eq(db.execute("SELECT x FROM r").fetchall(), [(42,)], "the job's results.sqlite")
    db.close()
    u.check(os.path.isfile(os.path.join(job_dir, "peek.sqlite")),
            f"record removed the interim merge peek.sqlite\n{res.describe()}")
    u.check("left alone" in res.stderr, f"no line about the files left alone\n{res.describe()}")
    u.check_eq(u.rank_files(job_dir), [], "rank files left after a merge of complete files")
    meta, calls = meta_of(trace_path)
    u.check_eq(meta.get("ranks"), "2", "ranks merged")
    u.check(calls > 0, "no calls merged")


# --------------------------------------------------------------------------- item 2

ITERS = 30


def background_job(ctx, launcher_sleep, rank_delay=0):
    delay = f"sleep {rank_delay}; " if rank_delay else ""
    ranks = " ".join(
        f"( {delay}RANK={r} WORLD_SIZE=2 {sample(ctx, '--only', 'allreduce', '--iters', str(ITERS), '--sleep-ms', '50')} >/dev/null ) &"
        for r in (0, 1))
    return ["/bin/bash", "-c", f"{ranks} sleep {launcher_sleep}"]


def wait_for_pids_gone(pids, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [p for p in pids if os.path.exists(f"/proc/{p}")]
        if not alive:
            return
        time.sleep(0.1)
    raise u.TestFailure(f"processes {pids} still running after {timeout} s")


def waits_for_writers(ctx):
    ctx.need_gloo_sample()
    # 1. The launcher leaves after 0.3 s; the ranks run about 2 s more.
    trace_path = ctx.path("bg.sqlite")
    res = ctx.record(["-o", trace_path, "-q"], background_job(ctx, 0.3), env=env_for(ctx),
                     timeout=90)
    res.expect(0)
    u.check(re.search(r"still run or write their rank files: pid \d+ .*waiting for them up to 60 s",
                      res.stderr), f"no line saying whom record waits for\n{res.describe()}")
    u.check(re.search(r"they finished after [0-9.]+ s", res.stderr),
            f"no line saying how long record waited\n{res.describe()}")
    meta, _ = meta_of(trace_path)
    t = u.Trace(trace_path)
    per_rank = dict(t.rows("SELECT rank, count(*) FROM collective WHERE op = 'allreduce' "
                           "GROUP BY rank"))
    t.close()
    u.check_eq(per_rank, {0: ITERS, 1: ITERS}, "all-reduces merged per rank")
    u.check_eq(u.meta_list(meta.get("cut_off_ranks")), [], "ranks called cut off")
    u.check_eq(u.meta_list(meta.get("live_ranks")), [], "ranks still running when merged")
    u.check(not os.path.exists(trace_path + ".ranks"), "rank folder left after a full merge")
    u.check("killed or crashed" not in res.stderr, f"ranks called killed\n{res.describe()}")

    # 2. --wait-s 0.3: merged while they still run; kept; called still running, not killed.
    trace_path = ctx.path("early.sqlite")
    store = ctx.mkdir("store2")
    res = ctx.record(["-o", trace_path, "--wait-s", "0.3"], background_job(ctx, 0.3),
                     env=u.clean_env(GLOO_STORE_DIR=store), timeout=90)
    res.expect(0)
    u.check(re.search(r"2 still running after [0-9.]+ s", res.stderr),
            f"no line saying who still runs\n{res.describe()}")
    u.check("killed or crashed" not in res.stderr and "CUT-OFF" not in res.stderr,
            f"live ranks called killed or crashed\n{res.describe()}")
    u.check("STILL RUNNING" in res.stderr, f"the summary does not say they still ran\n"
                                           f"{res.describe()}")
    meta, early_calls = meta_of(trace_path)
    u.check_eq(u.meta_list(meta.get("live_ranks")), [0, 1], "live_ranks")
    u.check_eq(u.meta_list(meta.get("cut_off_ranks")), [], "cut_off_ranks of a live merge")
    report = u.run([ctx.ringside, "report", trace_path], env=u.clean_env(), timeout=60)
    report.expect(0)
    u.check("still running when this trace was merged" in report.stdout and
            "killed or crashed" not in report.stdout,
            f"report of a trace merged while its ranks ran\n{report.describe()}")
    files = u.rank_files(trace_path + ".ranks")
    u.check_eq(len(files), 2, "rank files of the live writers kept")
    pids = [int(re.match(r"rank-.*-(\d+)-\d+\.sqlite$", os.path.basename(f)).group(1))
            for f in files]
    wait_for_pids_gone(pids, 60)
    found = re.findall(r"merge again with: (ringside merge .+)$", res.stderr, re.M)
    u.check(len(found) == 1, f"no merge command for later\n{res.describe()}")
    argv = shlex.split(found[0])
    later = u.run([ctx.ringside, *argv[1:], "-q"], env=u.clean_env(), timeout=60, cwd=ctx.scratch)
    later.expect(0)
    meta, calls = meta_of(trace_path)
    u.check(calls > early_calls, f"the later merge has no more calls ({calls} vs {early_calls})")
    u.check_eq(u.meta_list(meta.get("live_ranks")), [], "live_ranks after the writers ended")
    u.check_eq(u.meta_list(meta.get("cut_off_ranks")), [], "cut_off_ranks after the writers ended")

    # 3. The launcher leaves before its ranks made their first call (no rank file yet): record
    # still waits for them (they are the job's processes), and merges every call.
    trace_path = ctx.path("late.sqlite")
    res = ctx.record(["-o", trace_path, "-q"], background_job(ctx, 0.1, rank_delay=1),
                     env=u.clean_env(GLOO_STORE_DIR=ctx.mkdir("store3")), timeout=90)
    res.expect(0)
    u.check("no rank files were written" not in res.stderr,
            f"record did not wait for ranks that had not written yet\n{res.describe()}")
    t = u.Trace(trace_path)
    per_rank = dict(t.rows("SELECT rank, count(*) FROM collective WHERE op = 'allreduce' "
                           "GROUP BY rank"))
    t.close()
    u.check_eq(per_rank, {0: ITERS, 1: ITERS}, "all-reduces of ranks that started late")


# --------------------------------------------------------------------------- item 8

def rank_dir_link(ctx):
    ctx.need_gloo_sample()
    target = ctx.mkdir("elsewhere")
    marker = ctx.path("job-ran")
    job = ["/bin/sh", "-c", f"touch {shlex.quote(marker)}"]
    os.symlink(target, ctx.path("t.sqlite.ranks"))
    res = ctx.record(["-o", ctx.path("t.sqlite")], job, timeout=30)
    u.check_eq(res.returncode, 2, f"record with a link at <out>.ranks\n{res.describe()}")
    u.check("symbolic link" in res.stderr, f"the refusal does not name the link\n{res.describe()}")
    u.check(not os.path.exists(marker), "the job ran although record refused")
    nodes = ctx.mkdir("nodes")
    os.symlink(target, os.path.join(nodes, "node-0"))
    res = ctx.record(["--nnodes", "2", "--node-rank", "0", "--ranks", "1", "--run-id", "x",
                      "--dir", nodes], job, timeout=30)
    u.check_eq(res.returncode, 2, f"record with a link at <dir>/node-0\n{res.describe()}")
    u.check("symbolic link" in res.stderr, f"the refusal does not name the link\n{res.describe()}")
    u.check(not os.path.exists(marker), "the job ran although record refused")
    u.check_eq(os.listdir(target), [], "files written into the link's target")


# --------------------------------------------------------------------------- minor

def job_fails(ctx):
    ctx.need_gloo_sample()
    trace_path = ctx.path("t.sqlite")
    command = ["/bin/sh", "-c", f"{sample(ctx, '--only', 'allreduce', '--iters', '2')} "
                                f">/dev/null; exit 3"]
    res = ctx.record(["--ranks", "2", "-o", trace_path, "-q"], command, env=env_for(ctx),
                     timeout=60)
    u.check_eq(res.returncode, 3, f"record's status when every rank exits 3\n{res.describe()}")
    u.check(re.search(r"^ringside record: the job failed: exit status 3$", res.stderr, re.M),
            f"no line saying the job failed\n{res.describe()}")
    u.check(os.path.isfile(trace_path), "no trace written for a failed job")


# --------------------------------------------------------------------------- items 5, 9, minor

def trace_gen(ctx):
    path = os.path.join(os.path.dirname(ctx.ringside), "trace_gen")
    if not os.access(path, os.X_OK):
        u.skip(f"trace_gen not built next to ringside ({path})")
    return path


def merge_killed(ctx):
    """A merge killed at any moment never leaves a published trace without its clock model and
    steps (item 5); killed by SIGTERM/SIGINT it leaves no temporary file either (minor)."""
    ranks = ctx.path("ranks")
    u.run([trace_gen(ctx), "--out", ranks, "--ranks", "16", "--hosts", "4", "--collectives",
           "150", "--steps", "10"], timeout=120).expect(0)
    published = 0
    for i, sig in enumerate([9, 15, 2] * 6):
        delay = 0.1 + 0.06 * i
        out = ctx.path(f"t{i}.sqlite")
        proc = u.spawn([ctx.ringside, "merge", ranks, "-o", out, "-q"], env=u.clean_env(),
                       cwd=ctx.scratch)
        time.sleep(delay)
        try:
            os.kill(proc.pid, sig)
        except ProcessLookupError:
            pass
        proc.communicate(timeout=60)
        if os.path.exists(out):
            published += 1
            t = u.Trace(out)
            domains = t.scalar("SELECT count(*) FROM clock_domain")
            steps = t.scalar("SELECT count(*) FROM step")
            t.close()
            u.check_eq(domains, 4, f"clock domains of a trace published by a merge killed "
                                   f"(signal {sig}) after {delay:.2f} s")
            u.check(steps > 0, f"no steps in a trace published by a merge killed after {delay:.2f} s")
        left = [n for n in os.listdir(ctx.scratch) if n.startswith(f"t{i}.sqlite.tmp-")]
        if sig != 9:
            u.check_eq(left, [], f"temporary files left by a merge stopped by signal {sig} "
                                 f"after {delay:.2f} s")
    print(f"{published} of 18 killed merges had published their trace")
    # Those SIGKILL left: an hour old now, the next merge into that output removes them.
    for i in range(0, 18, 3):
        left = [n for n in os.listdir(ctx.scratch) if n.startswith(f"t{i}.sqlite.tmp-")]
        old = time.time() - 3600
        for n in left:
            os.utime(ctx.path(n), (old, old))
        for n in left:
            if os.path.exists(ctx.path(n)) and not n.endswith("-journal"):
                out = ctx.path(f"t{i}.sqlite")
                res = u.run([ctx.ringside, "merge", "-f", ranks, "-o", out, "-q"],
                            env=u.clean_env(), timeout=60, cwd=ctx.scratch)
                res.expect(0)
                u.check(not os.path.exists(ctx.path(n)), f"{n} left after the next merge\n"
                                                          f"{res.describe()}")
                u.check("left by an interrupted merge" in res.stderr, f"no line\n{res.describe()}")
        u.check_eq([n for n in os.listdir(ctx.scratch) if n.startswith(f"t{i}.sqlite.tmp-")], [],
                   f"temporary files beside t{i}.sqlite after the next merge")


def hot_journal(ctx):
    """A writer killed mid-commit leaves a hot journal; the verbs recover it (item 9)."""
    trace = ctx.path("t.sqlite")
    u.run([trace_gen(ctx), "--merged", trace, "--ranks", "4", "--hosts", "2"], timeout=120).expect(0)
    u.run([ctx.ringside, "merge", "--realign", trace], env=u.clean_env(), timeout=60).expect(0)
    code = ("import os, sqlite3, sys\n"
            "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "c.execute('PRAGMA journal_mode=DELETE'); c.execute('PRAGMA cache_size=10')\n"
            "c.execute('BEGIN')\n"
            "c.execute(\"WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 4000)"
            " INSERT INTO meta(key, value) SELECT 'junk' || x, hex(randomblob(600)) FROM n\")\n"
            "c.execute('DELETE FROM clock_domain')\n"
            "os._exit(0)\n")
    u.run([ctx.python, "-c", code, trace], timeout=60).expect(0)
    u.check(os.path.getsize(trace + "-journal") > 0, "no hot journal was left")
    for verb in (["report", trace], ["export", "--perfetto", trace, "-o", ctx.path("t.json")]):
        res = u.run([ctx.ringside, *verb], env=u.clean_env(), timeout=60, cwd=ctx.scratch)
        res.expect(0)
        u.check("readonly" not in res.stderr, f"{verb[0]} after a killed write\n{res.describe()}")
    u.check(not os.path.exists(trace + "-journal"), "the hot journal is still there")
    t = u.Trace(trace)
    u.check_eq(t.scalar("SELECT count(*) FROM meta WHERE key LIKE 'junk%'"), 0, "rolled back rows")
    u.check_eq(t.scalar("SELECT count(*) FROM clock_domain"), 2, "clock domains after rollback")
    t.close()


def merge_inputs(ctx):
    """`ringside merge` without -k fails when an input is unusable (item 7); another program's
    database found in an input folder is left out with a line, not merged and not an error; an
    exact copy of a rank file is merged once."""
    ranks = ctx.path("ranks")
    u.run([trace_gen(ctx), "--out", ranks, "--ranks", "4", "--collectives", "10"],
          timeout=120).expect(0)
    db = sqlite3.connect(os.path.join(ranks, "results.sqlite"))
    db.execute("create table r(x)")
    db.commit()
    db.close()
    one = ctx.path("one.sqlite")
    res = u.run([ctx.ringside, "merge", ranks, "-o", one, "-q"], env=u.clean_env(), timeout=60)
    res.expect(0)
    u.check("left out" in res.stderr and "results.sqlite: not a ringside file" in res.stderr,
            f"no line about the job's own database\n{res.describe()}")
    t = u.Trace(one)
    calls = t.scalar("SELECT count(*) FROM collective")
    link_bytes = t.scalar("SELECT sum(bytes) FROM transfer WHERE rank = 1")
    t.close()
    # An exact copy of rank 1's file beside it: merged once, the same link bytes.
    files = u.rank_files(ranks)
    src = [f for f in files if u.rank_of(f) == 1][0]
    with open(src, "rb") as f_in, open(os.path.join(ranks, "copy-of-rank-1.sqlite"), "wb") as f_out:
        f_out.write(f_in.read())
    two = ctx.path("two.sqlite")
    res = u.run([ctx.ringside, "merge", ranks, "-o", two, "-q"], env=u.clean_env(), timeout=60)
    res.expect(0)
    u.check("a copy of" in res.stderr, f"no line about the copy\n{res.describe()}")
    t = u.Trace(two)
    u.check_eq(t.scalar("SELECT count(*) FROM collective"), calls, "calls with a copied rank file")
    u.check_eq(t.scalar("SELECT sum(bytes) FROM transfer WHERE rank = 1"), link_bytes,
               "rank 1's bytes with its file copied")
    t.close()
    # A damaged rank file: exit 1 naming it without -k, skipped and listed with -k.
    with open(src, "rb") as f_in, open(os.path.join(ranks, "rank-9.sqlite"), "wb") as f_out:
        f_out.write(f_in.read(3000))  # cut off: its header still says ringside
    res = u.run([ctx.ringside, "merge", ranks, "-o", ctx.path("three.sqlite"), "-q"],
                env=u.clean_env(), timeout=60)
    u.check_eq(res.returncode, 1, f"merge with a damaged input, no -k\n{res.describe()}")
    u.check("rank-9.sqlite" in res.stderr, f"the damaged file is not named\n{res.describe()}")
    u.check(not os.path.exists(ctx.path("three.sqlite")), "a trace was written")
    res = u.run([ctx.ringside, "merge", "-k", ranks, "-o", ctx.path("three.sqlite"), "-q"],
                env=u.clean_env(), timeout=60)
    res.expect(0)
    t = u.Trace(ctx.path("three.sqlite"))
    u.check("rank-9.sqlite" in (t.meta().get("skipped_inputs") or ""), "skipped_inputs")
    t.close()


if __name__ == "__main__":
    sys.exit(u.main({
        "record-keeps-other-files": keeps_other_files,
        "record-waits-for-writers": waits_for_writers,
        "record-rank-dir-link": rank_dir_link,
        "record-job-fails": job_fails,
        "merge-killed": merge_killed,
        "merge-hot-journal": hot_journal,
        "merge-inputs": merge_inputs,
    }))
