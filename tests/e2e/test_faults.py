"""Failure modes of a traced job (docs/architecture.md, "The writer thread" and "Life cycle").

Scenarios:
  sigkill-rank          a rank SIGKILLed mid-run: the merged trace opens, keeps that rank's events
                        up to its last flush, and meta cut_off_ranks names it
  sigterm-cpp           SIGTERM to C++ ranks running under LD_PRELOAD: exit status stays 143
  sigterm-python        SIGTERM to a plain python under LD_PRELOAD: 143, no rank file
  sigterm-ddp           SIGTERM to DDP ranks under LD_PRELOAD: 143, rank files intact
  unwritable-dir        RINGSIDE_DIR under a regular file: job unchanged, one warning per process
  full-fs               RINGSIDE_DIR on a full tmpfs: the same (skipped when mount is refused)
  file-size-limit       RLIMIT_FSIZE reached while writing: the same, and no SIGXFSZ death
  no-gloo               `record -- /bin/true`, `false`, `sh -c`: status kept, no rank file
  no-gloo-script        `record -- bash script.sh`: output and status kept, no rank file
  memory-cap            RINGSIDE_BUFFER_MB=1, a tight loop and 24 busy threads: drops counted
                        and balanced, job not slowed to a halt
  fork-cpp              fork() from a side thread while collectives run: no deadlock, one
                        rank file per rank, each passes quick_check
  fork-world            a forked child (no exec) runs its own Gloo world: not recorded, but its
                        calls are counted in the parent's file and noted by summary and report
  fork-python           a multiprocessing Pool forking during DDP steps: the same
  launcher-shells       a launcher script and shells inheriting LD_PRELOAD: one rank file per rank
"""

import os
import resource
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as u  # noqa: E402

LONG_RUN = ["--iters", "10000000", "--bytes", "1000", "--sleep-ms", "1"]


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise u.TestFailure(f"timed out after {timeout} s waiting for {what}")


def stop_then_signal(pids, sig):
    """Delivers `sig` to all pids at the same instant: SIGSTOP all, queue sig, SIGCONT all.
    (Otherwise a rank may see its peer's connection drop and fail before its own signal.)"""
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    for pid in pids:
        os.kill(pid, sig)
    for pid in pids:
        os.kill(pid, signal.SIGCONT)


def check_rank_files(rank_dir, count, *, need_collectives=True):
    files = u.rank_files(rank_dir)
    u.check_eq(len(files), count, f"rank files in {rank_dir} ({[os.path.basename(f) for f in files]})")
    for f in files:
        u.check_eq(u.quick_check_file(f), "ok", f"PRAGMA quick_check of {os.path.basename(f)}")
        if need_collectives:
            t = u.Trace(f)
            n = t.scalar("SELECT count(*) FROM collective")
            t.close()
            u.check(n > 0, f"{os.path.basename(f)} holds no collective")
    return files


def warning_lines(stderr):
    return [line for line in stderr.splitlines() if line.strip()]


# --------------------------------------------------------------------------- signals

def sigkill_rank(ctx):
    ctx.need_gloo_sample()
    ctx.need_ringside()
    world, victim = 4, 2
    trace_path, rank_dir = ctx.path("trace.sqlite"), ctx.path("ranks")
    proc = u.spawn([ctx.ringside, "record", "--ranks", world, "-o", trace_path, "--dir", rank_dir,
                    "--keep-rank-files", "--grace-s", "5", "--", ctx.gloo_sample, *LONG_RUN],
                   env=u.clean_env(GLOO_STORE_DIR=ctx.mkdir("store")), cwd=ctx.scratch)
    try:
        def find_victim():
            for pid in u.descendants(proc.pid):
                if u.environ_of(pid).get("RANK") == str(victim) and \
                        any(a.endswith("gloo_collectives") for a in u.cmdline_of(pid)[:1]):
                    return pid
            return None
        wait_for(lambda: find_victim() is not None and len(u.rank_files(rank_dir)) == world,
                 60, f"rank {victim} to start and {world} rank files to appear")
        time.sleep(1.0)
        pid = find_victim()
        kill_ns = time.monotonic_ns()
        os.kill(pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    u.check(proc.returncode > 0, f"ringside record exit status {proc.returncode} after a rank "
                                 f"was killed (expected the job's failure, not 0 or a signal)\n{err}")
    trace = u.Trace(trace_path)
    u.check_eq(trace.quick_check(), "ok", "PRAGMA quick_check of the merged trace")
    u.check_eq(trace.ranks(), list(range(world)), "ranks in table rank")
    meta = trace.meta()
    cut_off = u.meta_list(meta.get("cut_off_ranks"))
    u.check(victim in cut_off, f"meta cut_off_ranks {cut_off} lacks the killed rank {victim}")
    # A survivor that left through the sample's error path (it prints "rank N: FAILED") exited
    # normally, so its file must be complete. A survivor can also die abnormally when its
    # neighbour is killed (Gloo may abort in its event-loop thread); then it is cut off too.
    for r in cut_off:
        if r != victim:
            u.check(f"rank {r}: FAILED" not in err,
                    f"rank {r} exited normally after the kill but is marked cut off\n{err}")
            print(f"note: rank {r} also died abnormally after rank {victim} was killed")
    n_victim = trace.scalar("SELECT count(*) FROM collective WHERE rank = ?", (victim,))
    u.check(n_victim > 100, f"rank {victim} kept only {n_victim} calls after running ~1 s")
    u.check_seq_matches(trace, world, common_prefix_only=True)
    # Everything older than one flush interval (200 ms by default) must have survived.
    clock = trace.scalar("SELECT clock FROM rank WHERE rank = ?", (victim,)) or ""
    if "MONOTONIC" in clock.upper():
        last = trace.scalar("SELECT max(start_ns) FROM collective WHERE rank = ?", (victim,))
        lost_ms = (kill_ns - last) / 1e6
        u.check(lost_ms < 1500, f"rank {victim}'s last recorded call started {lost_ms:.0f} ms "
                                f"before the kill (flush interval 200 ms)")
    else:
        print(f"note: rank clock is {clock!r}, not CLOCK_MONOTONIC; loss window not checked")
    trace.close()


def sigterm_ranks(ctx, command, world, ready, timeout=60):
    """Starts `world` ranks of `command` under LD_PRELOAD, waits for ready(), SIGTERMs them
    all at once and returns their Results."""
    rank_dir = ctx.mkdir("ranks")
    logs = [open(ctx.path(f"stdout.{r}"), "w") for r in range(world)]
    procs = ctx.start_ranks(world, command, rank_dir=rank_dir, stdout=lambda r: logs[r])
    try:
        wait_for(ready, timeout, "the job to get going")
        time.sleep(0.5)
        stop_then_signal([p.pid for p in procs], signal.SIGTERM)
        results = u.wait_all(procs, timeout=30)
    finally:
        for f in logs:
            f.close()
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
    for r, res in enumerate(results):
        u.check_eq(res.returncode, 143, f"exit status of rank {r} after SIGTERM "
                                        f"(stderr: {res.stderr[-500:]!r})")
    return rank_dir


def sigterm_cpp(ctx):
    ctx.need_gloo_sample()
    rank_dir = ctx.path("ranks")
    sigterm_ranks(ctx, [ctx.gloo_sample, *LONG_RUN], 2,
                  lambda: len(u.rank_files(rank_dir)) == 2)
    check_rank_files(rank_dir, 2)


def sigterm_python(ctx):
    ctx.need_preload()
    rank_dir = ctx.mkdir("ranks")
    env = u.clean_env(LD_PRELOAD=u.preload_value(ctx.preload), RINGSIDE_DIR=rank_dir)
    proc = u.spawn([ctx.python, "-c", "import time; print('ready', flush=True); time.sleep(60)"],
                   env=env)
    u.check_eq(proc.stdout.readline(), "ready\n", "python's first line")
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    u.check_eq(128 - proc.returncode if proc.returncode < 0 else proc.returncode, 143,
               "exit status of a traced python after SIGTERM")
    u.check_eq(u.rank_files(rank_dir), [], "rank files of a process without Gloo calls")


def sigterm_ddp(ctx):
    ctx.need_ddp_sample()
    rank_dir = ctx.path("ranks")

    def stepping():
        try:
            with open(ctx.path("stdout.0")) as f:
                return f.read().count("step") >= 3
        except OSError:
            return False
    sigterm_ranks(ctx, [ctx.python, ctx.ddp_sample, "--steps", "1000000"], 2, stepping,
                  timeout=120)
    check_rank_files(rank_dir, 2)


# --------------------------------------------------------------------------- output problems

def compare_with_untraced(ctx, rank_dir, *, args=("--iters", "20", "--bytes", "1000"),
                          preexec=None):
    """Runs the C++ sample on 2 ranks untraced, then traced into rank_dir; the traced job must
    print the same, exit the same, and each traced process may add one warning line."""
    ctx.need_gloo_sample()
    command = [ctx.gloo_sample, *args]
    base = u.wait_all(ctx.start_ranks(2, command, preload=False, preexec=preexec), timeout=120)
    traced = u.wait_all(ctx.start_ranks(2, command, rank_dir=rank_dir, preexec=preexec),
                        timeout=120)
    for r in range(2):
        u.check_eq(traced[r].returncode, base[r].returncode, f"exit status of rank {r}"
                                                             f"\n{traced[r].describe()}")
        u.check_eq(traced[r].stdout, base[r].stdout, f"stdout of rank {r}")
        lines = warning_lines(traced[r].stderr)
        u.check_eq(len(lines), 1, f"warning lines on rank {r}'s stderr ({lines})")
        u.check("ringside" in lines[0].lower(), f"rank {r}'s warning does not say it is "
                                                f"ringside's: {lines[0]!r}")
    return traced


def unwritable_dir(ctx):
    blocker = ctx.path("a-regular-file")
    with open(blocker, "w") as f:
        f.write("not a folder\n")
    # A folder below a regular file can never be created (not even by root).
    compare_with_untraced(ctx, os.path.join(blocker, "ranks"))
    # RINGSIDE_DIR naming the file itself.
    compare_with_untraced(ctx, blocker)


def full_fs(ctx):
    ctx.need_gloo_sample()
    mnt = ctx.mkdir("tiny")
    r = u.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mnt], timeout=30)
    if r.returncode != 0:
        u.skip(f"cannot mount a tmpfs here ({r.stderr.strip() or r.returncode}); needs root "
               f"and mount permission")
    try:
        rank_dir = os.path.join(mnt, "ranks")
        os.makedirs(rank_dir)
        fd = os.open(os.path.join(mnt, "filler"), os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            while True:
                os.write(fd, b"\1" * 4096)
        except OSError:
            pass
        finally:
            os.close(fd)
        compare_with_untraced(ctx, rank_dir)
    finally:
        u.run(["umount", "-l", mnt], timeout=30)


def file_size_limit(ctx):
    limit = 64 * 1024

    def cap():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    rank_dir = ctx.mkdir("ranks")
    compare_with_untraced(ctx, rank_dir, args=("--iters", "300", "--bytes", "64"), preexec=cap)


# --------------------------------------------------------------------------- processes without Gloo

def no_gloo(ctx):
    rank_dir = ctx.path("ranks")
    base = ["-o", ctx.path("t.sqlite"), "--dir", rank_dir, "--keep-rank-files", "-f"]
    for command, status, stdout in (
            (["/bin/true"], 0, ""),
            (["/bin/false"], 1, ""),
            (["/bin/sh", "-c", "echo hello; echo to-stderr >&2; exit 7"], 7, "hello\n")):
        res = ctx.record(base, command, timeout=60)
        u.check_eq(res.returncode, status, f"exit status of `ringside record -- {' '.join(command)}`"
                                           f"\n{res.describe()}")
        u.check_eq(res.stdout, stdout, f"stdout of {' '.join(command)}")
        if "to-stderr" in " ".join(command):
            u.check("to-stderr" in res.stderr, "the job's stderr was not passed through")
        u.check_eq(u.rank_files(rank_dir), [], f"rank files after {' '.join(command)}")


def no_gloo_script(ctx):
    script = ctx.path("job.sh")
    with open(script, "w") as f:
        f.write("#!/bin/bash\n"
                "set -u\n"
                "printf 'b\\na\\nc\\n' | sort | head -n 2\n"
                "ls / >/dev/null && echo listed\n"
                "( echo subshell; /usr/bin/env true )\n"
                f"{ctx.python} -c 'print(6 * 7)'\n"
                "exit 5\n")
    os.chmod(script, 0o755)
    direct = u.run(["/bin/bash", script], env=u.clean_env(), timeout=60)
    u.check_eq(direct.returncode, 5, "exit status of the script run directly")
    rank_dir = ctx.path("ranks")
    res = ctx.record(["-o", ctx.path("t.sqlite"), "--dir", rank_dir, "--keep-rank-files"],
                     ["/bin/bash", script], timeout=60)
    u.check_eq(res.returncode, 5, f"exit status under ringside record\n{res.describe()}")
    u.check_eq(res.stdout, direct.stdout, "stdout under ringside record")
    u.check_eq(u.rank_files(rank_dir), [], "rank files of a script without Gloo calls")


# --------------------------------------------------------------------------- memory cap

def record_capped(ctx, name, args, world=2):
    """Runs the C++ sample untraced, then recorded with a 1 MiB event buffer; returns
    (untraced seconds, traced seconds, per-rank (emitted, recorded, dropped))."""
    start = time.monotonic()
    base = u.wait_all(ctx.start_ranks(world, [ctx.gloo_sample, *args], preload=False), timeout=300)
    untraced_s = time.monotonic() - start
    for res in base:
        res.expect(0)
    trace_path, rank_dir = ctx.path(f"{name}.sqlite"), ctx.path(f"{name}.ranks")
    res = ctx.record(["--ranks", world, "--buffer-mb", "1", "-o", trace_path, "--dir", rank_dir,
                      "--no-merge"], [ctx.gloo_sample, *args], timeout=300,
                     env=u.clean_env(GLOO_STORE_DIR=ctx.mkdir(f"{name}.store")))
    res.expect(0)
    u.check_eq(res.stdout, base[0].stdout, f"{name}: stdout vs the untraced run")
    counts = []
    files = check_rank_files(rank_dir, world)
    for f in files:
        meta = u.rank_file_meta(f)
        emitted, recorded, dropped = (int(meta[k]) for k in
                                      ("events_emitted", "events_recorded", "events_dropped"))
        u.check_eq(recorded + dropped, emitted,
                   f"{name}: recorded + dropped vs emitted in {os.path.basename(f)}")
        u.check_eq(meta.get("end_state"), "clean", f"{name}: end_state of {os.path.basename(f)}")
        counts.append((emitted, recorded, dropped))
    print(f"{name}: untraced {untraced_s:.1f} s, traced (job only) {res.seconds:.1f} s, "
          f"(emitted, recorded, dropped) per rank file: {counts}")
    return untraced_s, res.seconds, counts


def memory_cap(ctx):
    """RINGSIDE_BUFFER_MB=1 (record --buffer-mb 1): memory stays bounded, every event is
    either recorded or counted as dropped, and the job keeps going."""
    ctx.need_gloo_sample()
    # A tight loop of 8-byte all-reduces on one thread: the counters balance and the job is
    # not slowed to a halt (the writer drains often enough that this may drop nothing).
    untraced_s, traced_s, _ = record_capped(
        ctx, "tight", ["--only", "allreduce", "--iters", "5000", "--bytes", "8"])
    u.check(traced_s < 15 * untraced_s + 10,
            f"tight loop: traced run took {traced_s:.1f} s, untraced {untraced_s:.1f} s")
    # The same loop on 24 threads at once (24 communicators): more threads than a 1 MiB
    # budget has per-thread buffers for, so events must be dropped, and counted.
    _, _, counts = record_capped(
        ctx, "threads", ["--only", "allreduce", "--iters", "300", "--bytes", "8", "--threads", "24"])
    u.check(all(d > 0 for _, _, d in counts),
            f"no event dropped with a 1 MiB cap and 24 busy threads: {counts}")


# --------------------------------------------------------------------------- fork and launchers

def fork_cpp(ctx):
    ctx.need_gloo_sample()
    trace_path, rank_dir = ctx.path("t.sqlite"), ctx.path("ranks")
    res = ctx.record(["--ranks", 2, "-o", trace_path, "--dir", rank_dir, "--keep-rank-files"],
                     [ctx.gloo_sample, "--iters", "60", "--bytes", "20000", "--fork-during", "40"],
                     timeout=120, env=u.clean_env(GLOO_STORE_DIR=ctx.mkdir("store")))
    res.expect(0)
    u.check_eq(len([l for l in res.stdout.splitlines() if l.startswith("OK ")]), 10, "OK lines")
    check_rank_files(rank_dir, 2)
    trace = u.Trace(trace_path)
    u.check_eq(trace.ranks(), [0, 1], "ranks in the merged trace")
    trace.close()


def fork_world(ctx):
    """Each rank forks a child (no exec) that runs its own one-rank Gloo world: the child is
    not recorded, but the trace says its calls were missed (issue 16), and so do the summary
    and the report."""
    ctx.need_gloo_sample()
    trace_path, rank_dir = ctx.path("t.sqlite"), ctx.path("ranks")
    res = ctx.record(["--ranks", 2, "-o", trace_path, "--dir", rank_dir, "--keep-rank-files"],
                     [ctx.gloo_sample, "--iters", "1", "--bytes", "256", "--fork-world"],
                     timeout=60, env=u.clean_env(GLOO_STORE_DIR=ctx.mkdir("store")))
    res.expect(0)
    check_rank_files(rank_dir, 2)  # the children left no file of their own
    trace = u.Trace(trace_path)
    meta = trace.meta()
    trace.close()
    for rank in (0, 1):
        calls = int(meta.get(f"rank.{rank}.forked_child_calls", "0"))
        u.check(calls >= 1, f"rank {rank}'s forked child's calls counted: {calls}")
        u.check_eq(meta.get(f"rank.{rank}.forked_children"), "1", f"rank {rank}'s forked children")
    u.check("forked without exec were not recorded" in res.stderr,
            f"the run summary says so\n{res.describe()}")
    rep = u.run([ctx.ringside, "report", trace_path], env=u.clean_env(), timeout=30)
    u.check_eq(rep.returncode, 0, f"report\n{rep.describe()}")
    u.check("ranks 0,1:" in rep.stdout and "forked without exec were not recorded" in rep.stdout,
            f"the report notes the missed calls\n{rep.describe()}")


def fork_python(ctx):
    ctx.need_ddp_sample()
    steps = 8
    trace_path, rank_dir = ctx.path("t.sqlite"), ctx.path("ranks")
    res = ctx.record(["--ranks", 2, "-o", trace_path, "--dir", rank_dir, "--keep-rank-files"],
                     [ctx.python, ctx.ddp_sample, "--steps", steps, "--pool-workers", "2"],
                     timeout=240)
    res.expect(0)
    u.check_eq(len(res.stdout.splitlines()), steps, "loss lines")
    check_rank_files(rank_dir, 2)
    trace = u.Trace(trace_path)
    u.check_eq(trace.ranks(), [0, 1], "ranks in the merged trace")
    trace.close()


def launcher_shells(ctx):
    ctx.need_gloo_sample()
    world = 2
    seen = ctx.path("preload-seen")
    launcher = ctx.path("launch.sh")
    with open(launcher, "w") as f:
        f.write(f"""#!/bin/bash
# A home-made launcher: shells, utilities and python all inherit LD_PRELOAD.
set -eu
echo "${{LD_PRELOAD:-unset}}" > {seen}
export MASTER_ADDR=127.0.0.1 MASTER_PORT=29555 WORLD_SIZE={world} GLOO_STORE_DIR={ctx.mkdir("store")}
ls / > /dev/null
{ctx.python} -c 'import os; print("launcher python", os.getpid() > 0)'
pids=""
for r in $(seq 0 $((WORLD_SIZE - 1))); do
  RANK=$r LOCAL_RANK=$r /bin/sh -c 'sleep 0.1; exec /usr/bin/env "$@"' sh {ctx.gloo_sample} --iters 3 --bytes 256 &
  pids="$pids $!"
done
status=0
for p in $pids; do wait $p || status=$?; done
exit $status
""")
    os.chmod(launcher, 0o755)
    trace_path, rank_dir = ctx.path("t.sqlite"), ctx.path("ranks")
    res = ctx.record(["-o", trace_path, "--dir", rank_dir, "--keep-rank-files"],
                     ["/bin/bash", launcher], timeout=120)
    res.expect(0)
    with open(seen) as f:
        preload = f.read().strip()
    u.check("ringside_preload" in preload, f"the launcher did not inherit LD_PRELOAD ({preload!r})")
    check_rank_files(rank_dir, world)
    trace = u.Trace(trace_path)
    u.check_eq(trace.ranks(), list(range(world)), "ranks in the merged trace")
    trace.close()


if __name__ == "__main__":
    sys.exit(u.main({
        "sigkill-rank": sigkill_rank,
        "sigterm-cpp": sigterm_cpp,
        "sigterm-python": sigterm_python,
        "sigterm-ddp": sigterm_ddp,
        "unwritable-dir": unwritable_dir,
        "full-fs": full_fs,
        "file-size-limit": file_size_limit,
        "no-gloo": no_gloo,
        "no-gloo-script": no_gloo_script,
        "memory-cap": memory_cap,
        "fork-cpp": fork_cpp,
        "fork-world": fork_world,
        "fork-python": fork_python,
        "launcher-shells": launcher_shells,
    }))
