"""`ringside record` owns nothing of the job's fate (RELIABILITY.md item 24).

Before the job starts, a problem with the command line or with where the output goes is a usage
error: exit 2, the job does not run. Once the job ran, record's exit status is the job's, whatever
happens to ringside's own writing or merging; rank files that were not merged are kept, and one
line says how to merge them later.

Scenarios (each runs the C++ Gloo sample, 2 ranks, for well under a second):
  record-full-disk       output and rank folder on a 1 MiB tmpfs the job fills: exit 0 (the job's),
                         rank files kept, the hint line; `ringside merge` of the kept folder later
                         gets every call the rank files hold (skipped when mount is refused)
  record-unwritable      --dir or -o below a regular file, or on a read-only mount: exit 2 for
                         both, before the job
  record-merge-fails     the job plants a folder at the output path (exit 0), or removes the
                         output's folder and exits 3: the job's status, rank files kept, the hint
  record-concurrent      a second recording into the same rank folder (same -o, or same --dir):
                         refused with exit 2 before its job; the first's trace complete
  record-other-runs      rank files of another run id appear in the rank folder during the run:
                         left out of the trace; `ringside merge` refuses to mix two runs and
                         takes one with --run-id; the line of `record --no-merge` into that
                         folder merges just its run
  record-stderr-closed   record's stderr is a pipe nobody reads: still the job's status
"""

import os
import re
import shlex
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as u  # noqa: E402

SHORT_RUN = ["--iters", "3", "--bytes", "256"]
HINT = re.compile(r"^ringside record: merge failed \((.+)\); rank files kept in (\S+); "
                  r"run: (ringside merge .+)$", re.M)


def env_for(ctx, **extra):
    return u.clean_env(GLOO_STORE_DIR=ctx.mkdir("store"), **extra)


def sample_in_shell(ctx, before="", after=""):
    """A command that runs the Gloo sample inside sh -c with shell code around it."""
    sample = " ".join(shlex.quote(a) for a in [ctx.gloo_sample, *SHORT_RUN])
    return ["/bin/sh", "-c", f"{before}{sample} >/dev/null && {{ :; {after} }}"]


def calls_in(path):
    t = u.Trace(path)
    try:
        return t.scalar("SELECT count(*) FROM collective")
    finally:
        t.close()


def check_hint(res, rank_dir):
    """The one line a failed merge leaves; returns the command it suggests, as argv."""
    found = HINT.findall(res.stderr)
    u.check(len(found) == 1, f"expected one 'merge failed (...); rank files kept in DIR; run: "
                             f"ringside merge ...' line\n{res.describe()}")
    _, where, command = found[0]
    u.check_eq(os.path.realpath(where), os.path.realpath(rank_dir), "folder named by the hint")
    return shlex.split(command)


def later_merge(ctx, command, output):
    """Runs the hint's `ringside merge ...` with the trace going to `output` instead."""
    argv = list(command)
    u.check_eq(argv[:2], ["ringside", "merge"], "the hint's command")
    i = argv.index("-o")
    argv[i + 1] = output
    return u.run([ctx.ringside, *argv[1:], "-q"], env=u.clean_env(), timeout=60, cwd=ctx.scratch)


def mount_tmpfs(mnt, options):
    r = u.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", mnt], timeout=30)
    return r.returncode == 0, (r.stderr.strip() or str(r.returncode))


# --------------------------------------------------------------------------- full disk

def full_disk(ctx):
    ctx.need_gloo_sample()
    mnt = ctx.mkdir("tiny")
    # 2 MiB: two rank files of schema v3 (16 KiB pages, 12 tables, the WAL) need about 1 MiB.
    ok, why = mount_tmpfs(mnt, "size=2m")
    if not ok:
        u.skip(f"cannot mount a tmpfs here ({why}); needs root and mount permission")
    try:
        trace_path = os.path.join(mnt, "t.sqlite")
        rank_dir = trace_path + ".ranks"
        # Each rank runs the sample (its rank file is complete when it exits), then fills the
        # disk: the merge after the job finds no space. (How the collector stops tracing when
        # the disk fills under it is test_faults.py's full-fs.)
        # Neither fills it before both samples have exited (each one's last rows are written
        # at its exit).
        filler = shlex.quote(os.path.join(mnt, "filler"))
        done = shlex.quote(ctx.path("sample-done"))
        fill = (f"touch {done}.$RANK; i=0; while [ ! -e {done}.0 ] || [ ! -e {done}.1 ]; do "
                f"[ $i -lt 400 ] || exit 9; sleep 0.02; i=$((i+1)); done; "
                f"dd if=/dev/zero of={filler}.$RANK bs=4k 2>/dev/null; exit 0;")
        res = ctx.record(["--ranks", "2", "-o", trace_path, "-q"],
                         sample_in_shell(ctx, after=fill), env=env_for(ctx), timeout=60)
        u.check_eq(res.returncode, 0, f"record's exit status (the job exited 0)\n{res.describe()}")
        command = check_hint(res, rank_dir)
        u.check("full" in HINT.findall(res.stderr)[0][0],
                f"the merge did not fail for want of space\n{res.describe()}")
        files = u.rank_files(rank_dir)
        u.check_eq(len(files), 2, f"rank files kept after the merge failed\n{res.describe()}")
        recorded = sum(calls_in(f) for f in files)
        u.check(recorded > 0, "the rank files hold no call")
        # Later, with space elsewhere: everything the rank files hold comes back.
        merged = ctx.path("later.sqlite")
        later_merge(ctx, command, merged).expect(0)
        u.check_eq(calls_in(merged), recorded, "calls in the later merge vs in the rank files")
    finally:
        u.run(["umount", "-l", mnt], timeout=30)


# --------------------------------------------------------------------------- before the job

def check_refused(ctx, args, what, marker):
    res = ctx.record(args, ["/bin/sh", "-c", f"touch {shlex.quote(marker)}"], timeout=30)
    u.check_eq(res.returncode, 2, f"exit status of record with {what}\n{res.describe()}")
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    u.check_eq(len(lines), 1, f"lines on stderr with {what} ({lines})")
    u.check(lines[0].startswith("ringside record: "), f"not record's line: {lines[0]!r}")
    u.check(not os.path.exists(marker), f"the job ran although record refused ({what})")


def unwritable(ctx):
    marker = ctx.path("job-ran")
    blocker = ctx.path("a-regular-file")
    with open(blocker, "w") as f:
        f.write("not a folder\n")
    below = os.path.join(blocker, "sub")
    check_refused(ctx, ["-o", ctx.path("t.sqlite"), "--dir", below], "--dir below a file", marker)
    check_refused(ctx, ["-o", os.path.join(below, "t.sqlite")], "-o below a file", marker)
    check_refused(ctx, ["-o", ctx.path("t.sqlite"), "--dir", blocker], "--dir naming a file",
                  marker)
    # A folder that exists but cannot be written: a read-only mount (root writes through
    # permission bits), or mode 0555 for anyone else.
    ro = ctx.mkdir("read-only")
    if os.geteuid() == 0:
        ok, why = mount_tmpfs(ro, "ro,size=64k")
        if not ok:
            print(f"note: read-only cases not run: cannot mount a tmpfs ({why})")
            return
    else:
        os.chmod(ro, 0o555)
    try:
        check_refused(ctx, ["-o", ctx.path("t.sqlite"), "--dir", ro], "--dir read-only", marker)
        check_refused(ctx, ["-o", ctx.path("t.sqlite"), "--dir", os.path.join(ro, "ranks")],
                      "--dir inside a read-only folder", marker)
        check_refused(ctx, ["-o", os.path.join(ro, "t.sqlite"), "--dir", ctx.path("ranks")],
                      "-o in a read-only folder", marker)
    finally:
        if os.geteuid() == 0:
            u.run(["umount", "-l", ro], timeout=30)
        else:
            os.chmod(ro, 0o755)


# --------------------------------------------------------------------------- a merge that fails

def merge_fails(ctx):
    ctx.need_gloo_sample()
    # 1. The job exits 0 after planting a folder where the trace goes.
    trace_path, rank_dir = ctx.path("t.sqlite"), ctx.path("ranks")
    res = ctx.record(["--ranks", "2", "-o", trace_path, "--dir", rank_dir, "-q"],
                     sample_in_shell(ctx, after=f"mkdir -p {shlex.quote(trace_path)};"),
                     env=env_for(ctx), timeout=60)
    u.check_eq(res.returncode, 0, f"record's exit status (the job exited 0)\n{res.describe()}")
    command = check_hint(res, rank_dir)
    u.check_eq(len(u.rank_files(rank_dir)), 2, "rank files kept after the failed merge")
    merged = ctx.path("later.sqlite")
    later_merge(ctx, command, merged).expect(0)
    u.check(calls_in(merged) > 0, "the later merge holds no call")

    # 2. The job exits 3 after removing the folder the trace goes to.
    out_dir = ctx.mkdir("vanishing")
    trace_path, rank_dir = os.path.join(out_dir, "t.sqlite"), ctx.path("ranks3")
    res = ctx.record(["--ranks", "2", "-o", trace_path, "--dir", rank_dir, "-q"],
                     sample_in_shell(ctx, after=f"rm -rf {shlex.quote(out_dir)}; exit 3;"),
                     env=env_for(ctx), timeout=60)
    u.check_eq(res.returncode, 3, f"record's exit status (the job exited 3)\n{res.describe()}")
    check_hint(res, rank_dir)
    u.check_eq(len(u.rank_files(rank_dir)), 2, "rank files kept after the failed merge")


# --------------------------------------------------------------------------- two recordings

def concurrent(ctx):
    ctx.need_gloo_sample()
    go = ctx.path("go")
    for n, (case, second_args) in enumerate((
            ("same -o", lambda t, d: ["-o", t]),
            ("same --dir", lambda t, d: ["-o", t + "-other", "--dir", d]))):
        for f in (go, ctx.path("first-started.0"), ctx.path("first-started.1")):
            if os.path.exists(f):
                os.remove(f)
        trace_path = ctx.path(f"t{n}.sqlite")
        rank_dir = trace_path + ".ranks"
        first_args = ["-o", trace_path] + (["--dir", rank_dir] if "dir" in case else [])
        # The first job holds until the second recording has been tried.
        wait = (f"touch {shlex.quote(ctx.path('first-started'))}.$RANK; i=0; "
                f"while [ ! -e {shlex.quote(go)} ] && [ $i -lt 400 ]; do sleep 0.05; "
                f"i=$((i+1)); done; ")
        first = u.spawn([ctx.ringside, "record", "--ranks", "2", "-q", *first_args, "--",
                         *sample_in_shell(ctx, before=wait)], env=env_for(ctx), cwd=ctx.scratch)
        try:
            deadline = time.monotonic() + 20
            while not all(os.path.exists(ctx.path(f"first-started.{r}")) for r in (0, 1)):
                u.check(time.monotonic() < deadline and first.poll() is None,
                        f"{case}: the first recording's job did not start")
                time.sleep(0.05)
            marker = ctx.path("second-ran")
            second = ctx.record(["--ranks", "2", *second_args(trace_path, rank_dir)],
                                ["/bin/sh", "-c", f"touch {shlex.quote(marker)}"], timeout=30)
            u.check_eq(second.returncode, 2, f"{case}: exit status of the second recording"
                                             f"\n{second.describe()}")
            u.check(not os.path.exists(marker), f"{case}: the second recording's job ran")
            lines = [line for line in second.stderr.splitlines() if line.strip()]
            u.check(len(lines) == 1 and "another `ringside record`" in lines[0],
                    f"{case}: the second recording's message ({lines})")
            with open(go, "w"):
                pass
            out, err = first.communicate(timeout=60)
        finally:
            if first.poll() is None:
                u._kill_group(first)
                first.communicate()
        u.check_eq(first.returncode, 0, f"{case}: the first recording's exit status\n{err}")
        trace = u.Trace(trace_path)
        u.check_eq(trace.ranks(), [0, 1], f"{case}: ranks in the first recording's trace")
        u.check_eq(trace.scalar("SELECT count(*) FROM rank"), 2,
                   f"{case}: rank files merged into the first recording's trace")
        u.check_seq_matches(trace, 2)
        trace.close()
        os.remove(go)


# --------------------------------------------------------------------------- run ids

def other_runs(ctx):
    ctx.need_gloo_sample()
    trace_path, rank_dir = ctx.path("t.sqlite"), ctx.path("ranks")
    # Each rank also runs a world of another run (its own run id and rendezvous) into the same
    # rank folder, as a process started by hand with RINGSIDE_DIR would.
    other = (f"RINGSIDE_RUN_ID=someone-else GLOO_STORE_DIR={shlex.quote(ctx.mkdir('store2'))} "
             + " ".join(shlex.quote(a) for a in [ctx.gloo_sample, *SHORT_RUN]) + " >/dev/null;")
    res = ctx.record(["--ranks", "2", "-o", trace_path, "--dir", rank_dir, "--keep-rank-files",
                      "-q"], sample_in_shell(ctx, after=other), env=env_for(ctx), timeout=60)
    res.expect(0)
    u.check("written by another run" in res.stderr, f"no line about the other run's rank "
                                                   f"files\n{res.describe()}")
    trace = u.Trace(trace_path)
    u.check_eq(trace.scalar("SELECT count(*) FROM rank"), 2, "rank files merged into the trace")
    run_id = trace.meta().get("run_id")
    trace.close()
    files = u.rank_files(rank_dir)
    u.check_eq(len(files), 4, "rank files kept in the folder (2 of each run)")
    ids = sorted(u.rank_file_meta(f).get("run_id") for f in files)
    u.check_eq(ids, sorted([run_id, run_id, "someone-else", "someone-else"]), "run ids")

    # `ringside merge` of that folder: refused in one line naming two files, then one run.
    res = u.run([ctx.ringside, "merge", rank_dir, "-o", ctx.path("mixed.sqlite"), "-q"],
                env=u.clean_env(), timeout=60)
    u.check_eq(res.returncode, 1, f"merge of two runs' rank files\n{res.describe()}")
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    u.check(len(lines) == 1 and "--run-id" in lines[0] and lines[0].count("rank-") == 2,
            f"merge's refusal ({lines})")
    u.check(not os.path.exists(ctx.path("mixed.sqlite")), "merge wrote a mixed trace")
    for rid in (run_id, "someone-else"):
        out = ctx.path(f"only-{rid}.sqlite")
        u.run([ctx.ringside, "merge", rank_dir, "--run-id", rid, "-o", out, "-q"],
              env=u.clean_env(), timeout=60).expect(0)
        t = u.Trace(out)
        u.check_eq(t.scalar("SELECT count(*) FROM rank"), 2, f"rank files merged for run {rid}")
        t.close()

    # One more run into that folder, unmerged: the command it prints merges just that run.
    res = ctx.record(["--ranks", "2", "-o", ctx.path("n.sqlite"), "--dir", rank_dir,
                      "--no-merge"], [ctx.gloo_sample, *SHORT_RUN], env=env_for(ctx), timeout=60)
    res.expect(0)
    found = re.findall(r"merge them with: (ringside merge .+)$", res.stderr, re.M)
    u.check(len(found) == 1, f"--no-merge's line\n{res.describe()}")
    later_merge(ctx, shlex.split(found[0]), ctx.path("later.sqlite")).expect(0)
    t = u.Trace(ctx.path("later.sqlite"))
    u.check_eq(t.scalar("SELECT count(*) FROM rank"), 2, "rank files merged by the printed command")
    t.close()


# --------------------------------------------------------------------------- stderr

def stderr_closed(ctx):
    ctx.need_gloo_sample()
    proc = subprocess.Popen([ctx.ringside, "record", "--ranks", "2", "-o", ctx.path("t.sqlite"),
                             "--", ctx.gloo_sample, *SHORT_RUN], env=env_for(ctx),
                            cwd=ctx.scratch, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    proc.stderr.close()  # nobody reads record's stderr: writing to it raises SIGPIPE
    try:
        status = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            u._kill_group(proc)
            proc.wait()
    u.check_eq(status, 0, "record's exit status with its stderr closed (the job exited 0; "
                          "-13 is SIGPIPE)")
    u.check(os.path.isfile(ctx.path("t.sqlite")), "no trace was written")


if __name__ == "__main__":
    sys.exit(u.main({
        "record-full-disk": full_disk,
        "record-unwritable": unwritable,
        "record-merge-fails": merge_fails,
        "record-concurrent": concurrent,
        "record-other-runs": other_runs,
        "record-stderr-closed": stderr_closed,
    }))
