"""The flight recorder's fault corpus (docs/flight-recorder.md): real Gloo jobs over TCP
(samples/gloo_faults, built beside gloo_collectives) in which one rank misbehaves on purpose,
recorded with `ringside record --hang-timeout`. Gloo's own timeout is 15 s in every scenario.

Scenarios:
  flight-healthy-4      no fault: no verdict, every ring call done, exit status 0
  flight-stop-3         rank 1 stops joining at step 5: the watchdog names rank 1, the op, the
                        seq and the step before Gloo's timeout; the trace stores the verdict
  flight-op-3           rank 2 calls all-gather where the others all-reduce (step 3): mismatch
  flight-size-3         rank 2 all-reduces twice the bytes (step 3): mismatch
  flight-exit-4         rank 3 exits (status 3) at step 4: its exit is in the trace (launcher and
                        process), the others' failed calls are dumped, the status is the job's
  flight-sigkill-3      rank 1 SIGKILLs itself at step 4: its ring survives in the trace, its
                        exit is signal 9
  flight-sigstop-3      rank 1 SIGSTOPs itself at step 4: the watchdog names it, --on-hang kill
                        stops the job
  flight-watchdog-8     8 ranks, rank 5 stops joining: the verdict within --hang-timeout + 5 s
                        of the hang (the figure is printed)
  flight-ddp-3          a real PyTorch DDP job (samples/ddp_train.py, steps marked from 0) whose
                        rank 1 computes 60 s before its first backward: --hang-timeout 5
                        --on-hang kill names rank 1 (stuck-collective) at step 0 and stops the
                        job; the report's first finding is the hang, not a late-ranks warning
  flight-linkcut-3      three emulated hosts (network namespaces on a bridge), rank 1's cable
                        set down mid-run: the watchdog and the report name rank 1 (a peer that
                        never sent or messages never delivered); skipped where namespaces
                        cannot be made (not root, no ip)
"""

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as u  # noqa: E402

GLOO_TIMEOUT_S = 15
LINK_RULES = ("peer-never-sent", "messages-undelivered", "stuck-collective")
AUTOPSY_RULES = ("stuck-collective", "collective-mismatch", "rank-exited", "messages-undelivered", "peer-never-sent")


def faults_binary(ctx):
    if not ctx.gloo_sample:
        u.skip("the Gloo samples were not built (libgloo-dev not found at configure time)")
    path = os.path.join(os.path.dirname(ctx.gloo_sample), "gloo_faults")
    if not os.access(path, os.X_OK):
        u.skip(f"samples/gloo_faults was not built ({path})")
    return path


def record_fault(ctx, world, fault_args, *, hang_timeout=3, extra=(), timeout=120):
    """Records gloo_faults on `world` ranks; returns (Result, trace path, verdict seconds after
    start or None, start monotonic ns)."""
    trace = ctx.path("t.sqlite")
    argv = [ctx.ringside, "record", "--ranks", str(world), "-o", trace, "-q", "--grace-s", "5",
            "--hang-timeout", str(hang_timeout), *extra, "--",
            faults_binary(ctx), "--timeout-s", str(GLOO_TIMEOUT_S), *fault_args]
    start = time.monotonic_ns()
    proc = u.spawn(argv, env=u.clean_env(), cwd=ctx.scratch)
    verdict_ns = None
    lines = []
    deadline = time.monotonic() + timeout
    for line in proc.stderr:  # line by line: the time the verdict appears is the figure
        lines.append(line)
        if verdict_ns is None and "hang (" in line:
            verdict_ns = time.monotonic_ns()
        if time.monotonic() > deadline:
            break
    try:
        out = proc.stdout.read()
        proc.wait(timeout=max(1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        u._kill_group(proc)
        raise u.TestFailure(f"record did not end in {timeout} s:\n{''.join(lines)}")
    res = u.Result(argv, proc.returncode, out, "".join(lines), (time.monotonic_ns() - start) / 1e9)
    return res, trace, verdict_ns, start


def rows(trace, sql):
    db = sqlite3.connect(f"file:{trace}?mode=ro", uri=True)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def first_finding(ctx, trace):
    """The report's first finding (rule, message) of the trace, from its JSON."""
    res = u.run([ctx.ringside, "report", trace, "--format", "json"], env=u.clean_env(), timeout=120)
    res.expect(0)
    findings = json.loads(res.stdout).get("findings") or [{}]
    first = findings[0]
    print(f"first finding: {first.get('rule')}: {first.get('message')}")
    return first.get("rule"), first.get("message", "")


def names_rank(text, rank):
    """`rank` named as a rank ("ranks 1,2 entered ...") or as an end of a link a verdict names
    ("link(s) 1->0 stopped delivering": messages-undelivered)."""
    return (re.search(rf"\branks? (\d+,)*{rank}\b", text) is not None or
            re.search(rf"\blink\(s\) (\d+->\d+,)*({rank}->\d+|\d+->{rank})\b", text) is not None)


def check_first_finding(ctx, trace, rules, rank):
    rule, message = first_finding(ctx, trace)
    u.check(rule in rules, f"the report's first finding should be {' or '.join(rules)}: {rule}: {message}")
    u.check(names_rank(message, rank), f"the report's first finding should name rank {rank}: {message}")
    return message


def verdict_line(res):
    for line in res.stderr.splitlines():
        if "hang (" in line:
            return line
    return None


def check_verdict(res, trace, rule, rank, op, step):
    line = verdict_line(res)
    u.check(line is not None, f"no watchdog verdict\n{res.describe()}")
    u.check(f"hang ({rule})" in line, f"expected rule {rule}: {line}")
    u.check(re.search(rf"\brank {rank}\b", line) is not None, f"expected rank {rank} named: {line}")
    u.check(op in line, f"expected op {op} named: {line}")
    u.check(f"step {step}" in line, f"expected step {step} named: {line}")
    u.check(re.search(r"#\d+", line) is not None, f"expected the seq: {line}")
    meta = dict(rows(trace, "SELECT key, value FROM meta WHERE key LIKE 'hang_verdict%'"))
    u.check(meta.get("hang_verdict", "") in line and meta.get("hang_verdict"),
            f"the trace's hang_verdict differs from the line: {meta}")
    dumps = rows(trace, "SELECT DISTINCT rank FROM flight_dump WHERE reason = 'watchdog'")
    u.check(len(dumps) >= 2, f"watchdog dumps in too few rings: {dumps}")
    return line


def flight_healthy_4(ctx):
    res, trace, verdict_ns, _ = record_fault(ctx, 4, ["--fault", "none", "--steps", "20"],
                                             hang_timeout=2)
    res.expect(0)
    u.check(verdict_ns is None, f"a verdict on a healthy job:\n{res.describe()}")
    states = rows(trace, "SELECT state, count(*) FROM flight_call GROUP BY state")
    u.check_eq([s for s, _ in states], ["done"], "call states of a healthy run")
    u.check_eq(rows(trace, "SELECT count(DISTINCT rank) FROM flight_call")[0][0], 4, "ranks with a ring")
    reasons = {r for (r,) in rows(trace, "SELECT reason FROM flight_dump")}
    u.check_eq(reasons, {"end"}, "dump reasons of a healthy run")
    exits = rows(trace, "SELECT rank, exit_status, source FROM rank_exit ORDER BY rank")
    u.check_eq([(r, s) for r, s, _ in exits], [(r, 0) for r in range(4)], "exit statuses")
    rule, message = first_finding(ctx, trace)
    u.check(rule not in AUTOPSY_RULES, f"a false autopsy finding on a healthy job: {rule}: {message}")
    u.check(not [f for f in os.listdir(ctx.scratch) if f.endswith(".ranks")],
            "the rank folder (and its rings) should be gone after the merge")


def flight_stop_3(ctx):
    res, trace, verdict_ns, start = record_fault(
        ctx, 3, ["--fault", "stop", "--rank", "1", "--step", "5", "--sleep-s", "25"])
    u.check(res.returncode != 0, "the job should fail (Gloo's timeout)")
    check_verdict(res, trace, "stuck-collective", 1, "allreduce", 5)
    seq, enter = rows(trace, "SELECT seq, min(enter_ns) FROM flight_call WHERE rank != 1 AND step = 5")[0]
    u.check(verdict_ns is not None, "no verdict time")
    # Before Gloo's timeout would have fired on the waiting ranks.
    latency = (verdict_ns - enter) / 1e9
    print(f"flight-stop-3: verdict {latency:.2f} s after the hang (hang-timeout 3 s, Gloo 15 s)")
    u.check(latency < GLOO_TIMEOUT_S, f"the verdict came {latency:.1f} s after the hang")
    timeouts = rows(trace, "SELECT count(*) FROM flight_dump WHERE reason IN ('timeout', 'error')")[0][0]
    u.check(timeouts >= 1, "the waiting ranks' failed calls should be dumped")
    check_first_finding(ctx, trace, ("stuck-collective",), 1)


def desync(ctx, fault):
    res, trace, _, _ = record_fault(ctx, 3, ["--fault", fault, "--rank", "2", "--step", "3"])
    line = verdict_line(res)
    if line is None:
        # Gloo itself may fail a mismatched call at once (sizes that cannot pair up): then the
        # failed calls are the record, and rank 2's call differs from the others' at that seq.
        calls = rows(trace, "SELECT rank, op, bytes FROM flight_call WHERE step = 3 AND seq = "
                            "(SELECT min(seq) FROM flight_call WHERE step = 3) ORDER BY rank")
        u.check(len(calls) == 3, f"every rank's first call of step 3 in the trace: {calls}\n{res.describe()}")
        odd = [r for r, op, nbytes in calls
               if sum(1 for _, o, b in calls if (o, b) == (op, nbytes)) == 1]
        u.check_eq(odd, [2], "the rank whose call differs")
        failed = rows(trace, "SELECT count(*) FROM flight_dump WHERE reason IN ('error', 'timeout')")[0][0]
        u.check(failed >= 1, "the failed calls should be dumped")
        print(f"{fault}: no hang (Gloo failed the calls at once); the rings show {calls}")
    else:
        check_verdict(res, trace, "collective-mismatch", 2, "allreduce", 3)
    check_first_finding(ctx, trace, ("collective-mismatch",), 2)


def flight_op_3(ctx):
    desync(ctx, "op")


def flight_size_3(ctx):
    desync(ctx, "size")


def flight_exit_4(ctx):
    res, trace, _, _ = record_fault(ctx, 4, ["--fault", "exit", "--rank", "3", "--step", "4"])
    u.check(res.returncode in (1, 3), f"the job's status (3 or a peer's 1)\n{res.describe()}")
    exits = dict((r, (s, src)) for r, s, src in rows(trace, "SELECT rank, exit_status, source FROM rank_exit"))
    u.check_eq(exits.get(3), (3, "launcher"), "rank 3's exit in the trace")
    failed = rows(trace, "SELECT DISTINCT rank FROM flight_call WHERE state = 'failed'")
    u.check(failed, f"the peers' calls should have failed\n{res.describe()}")
    last = rows(trace, "SELECT max(step) FROM flight_call WHERE rank = 3 AND state = 'done'")[0][0]
    u.check_eq(last, 3, "rank 3's last completed step")
    check_first_finding(ctx, trace, ("rank-exited",), 3)


def flight_sigkill_3(ctx):
    res, trace, _, _ = record_fault(ctx, 3, ["--fault", "kill", "--rank", "1", "--step", "4"])
    u.check(res.returncode in (1, 137), f"the job's status\n{res.describe()}")
    sig = rows(trace, "SELECT signal, source FROM rank_exit WHERE rank = 1")
    u.check_eq(sig, [(9, "launcher")], "rank 1's end in the trace")
    calls = rows(trace, "SELECT max(step), count(*) FROM flight_call WHERE rank = 1")[0]
    u.check_eq(calls[0], 3, "rank 1's ring survived SIGKILL up to step 3")
    check_first_finding(ctx, trace, ("rank-exited",), 1)


def flight_sigstop_3(ctx):
    res, trace, verdict_ns, _ = record_fault(
        ctx, 3, ["--fault", "stopsig", "--rank", "1", "--step", "4"], extra=["--on-hang", "kill"])
    check_verdict(res, trace, "stuck-collective", 1, "allreduce", 4)
    u.check("--on-hang kill" in verdict_line(res), "the verdict should say the job is stopped")
    u.check(res.seconds < GLOO_TIMEOUT_S + 10, f"--on-hang kill did not stop the job ({res.seconds:.1f} s)")
    u.check(res.returncode != 0, "a killed job fails")
    check_first_finding(ctx, trace, ("stuck-collective", "rank-exited"), 1)


def flight_watchdog_8(ctx):
    hang_timeout = 5
    res, trace, verdict_ns, _ = record_fault(
        ctx, 8, ["--fault", "stop", "--rank", "5", "--step", "3", "--sleep-s", "30"],
        hang_timeout=hang_timeout, timeout=180)
    check_verdict(res, trace, "stuck-collective", 5, "allreduce", 3)
    enter = rows(trace, "SELECT min(enter_ns) FROM flight_call WHERE rank != 5 AND step = 3 "
                        "AND seq = (SELECT max(seq) FROM flight_call WHERE rank = 5 AND step = 2) + 1")[0][0]
    u.check(enter is not None, "the waiting ranks' entry into the stuck call")
    latency = (verdict_ns - enter) / 1e9
    print(f"flight-watchdog-8: verdict printed {latency:.2f} s after the hang began "
          f"(--hang-timeout {hang_timeout} s: {latency - hang_timeout:.2f} s past it)")
    u.check(latency <= hang_timeout + 5, f"verdict {latency:.1f} s after the hang")
    check_first_finding(ctx, trace, ("stuck-collective",), 5)


def flight_ddp_3(ctx):
    ctx.need_ddp_sample()
    trace = ctx.path("t.sqlite")
    argv = [ctx.ringside, "record", "--ranks", "3", "-o", trace, "-q", "--hang-timeout", "5",
            "--on-hang", "kill", "--", ctx.python, ctx.ddp_sample, "--slow-rank", "1",
            "--slow-ms", "60000", "--mark-steps", "0"]
    res = u.run(argv, env=u.clean_env(), cwd=ctx.scratch, timeout=120)
    line = verdict_line(res)
    u.check(line is not None and "hang (stuck-collective)" in line, f"no stuck-collective verdict\n{res.describe()}")
    u.check(re.search(r"\brank 1\b", line) is not None and "allreduce" in line, f"rank 1's allreduce: {line}")
    u.check(res.returncode == 143, f"the killed job's own status (SIGTERM: 143)\n{res.describe()}")
    u.check(res.seconds < 30, f"--on-hang kill should end the 60 s straggler early ({res.seconds:.1f} s)")
    u.check("step 0" in line, f"the step (ringside_step() markers from 0): {line}")
    message = check_first_finding(ctx, trace, ("stuck-collective",), 1)
    u.check("step 0" in message, f"the report's verdict names the step: {message}")


def emulated_hosts(prefix, world):
    """Network namespaces <prefix>-h0.. (10.77.0.<i+1>/24 on eth0) cabled to a bridge in
    <prefix>-sw (cable s<i>); skips (77) where they cannot be made."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        u.skip("a link cut needs root and ip (network namespaces)")
    cmds = [["netns", "add", f"{prefix}-sw"], ["-n", f"{prefix}-sw", "link", "add", "br0", "type", "bridge"],
            ["-n", f"{prefix}-sw", "link", "set", "br0", "up"]]
    for i in range(world):
        h, e, sw = f"{prefix}-h{i}", f"{prefix}-e{i}", f"{prefix}-s{i}"
        cmds += [["netns", "add", h], ["link", "add", e, "type", "veth", "peer", "name", sw],
                 ["link", "set", e, "netns", h], ["link", "set", sw, "netns", f"{prefix}-sw"],
                 ["-n", h, "link", "set", e, "name", "eth0"], ["-n", f"{prefix}-sw", "link", "set", sw, "name", f"s{i}"],
                 ["-n", f"{prefix}-sw", "link", "set", f"s{i}", "master", "br0"],
                 ["-n", f"{prefix}-sw", "link", "set", f"s{i}", "up"],
                 ["-n", h, "addr", "add", f"10.77.0.{i + 1}/24", "dev", "eth0"],
                 ["-n", h, "link", "set", "eth0", "up"], ["-n", h, "link", "set", "lo", "up"]]
    for cmd in cmds:
        p = subprocess.run(["ip", *cmd], capture_output=True, text=True)
        if p.returncode != 0:
            drop_hosts(prefix, world)
            u.skip(f"cannot make network namespaces here: ip {' '.join(cmd)}: {p.stderr.strip()}")


def drop_hosts(prefix, world):
    for ns in [f"{prefix}-h{i}" for i in range(world)] + [f"{prefix}-sw"]:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def flight_linkcut_3(ctx):
    # Three ranks on emulated hosts (a namespace each, cabled to a bridge); once every rank's
    # ring exists and the job is stepping, rank 1's cable goes down: the watchdog names rank 1
    # (its messages never arrive) before Gloo's 15 s timeout, the report's first finding too.
    world, hang_timeout, prefix = 3, 3, f"rsf{os.getpid() % 100000}"
    binary = faults_binary(ctx)
    emulated_hosts(prefix, world)
    try:
        trace = ctx.path("t.sqlite")
        rank_cmd = (f"GLOO_DEVICE_HOST=10.77.0.$((RANK+1)) exec ip netns exec {prefix}-h$RANK "
                    f"{binary} --timeout-s {GLOO_TIMEOUT_S} --fault none --steps 100000 --step-ms 20")
        argv = [ctx.ringside, "record", "--ranks", str(world), "-o", trace, "-q", "--grace-s", "5",
                "--hang-timeout", str(hang_timeout), "--", "bash", "-c", rank_cmd]
        proc = u.spawn(argv, env=u.clean_env(GLOO_STORE_DIR=ctx.path("store")), cwd=ctx.scratch)
        folder, deadline = trace + ".ranks", time.monotonic() + 30
        # The rank folder (record's default, <output>.ranks) holds one ring per rank once it runs.
        while time.monotonic() < deadline and proc.poll() is None:
            if os.path.isdir(folder) and len([f for f in os.listdir(folder) if f.endswith(".flight")]) == world:
                break
            time.sleep(0.1)
        time.sleep(1.0)  # some steps done on every rank
        u.check(proc.poll() is None, "the job ended before the cut")
        subprocess.run(["ip", "-n", f"{prefix}-sw", "link", "set", "s1", "down"], check=True)
        cut = time.monotonic()
        try:
            out, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            u._kill_group(proc)
            raise u.TestFailure("record did not end in 120 s after the link cut")
    finally:
        drop_hosts(prefix, world)
    res = u.Result(argv, proc.returncode, out, err, time.monotonic() - cut)
    line = verdict_line(res)
    print(f"flight-linkcut-3: {line}")
    u.check(line is not None, f"no watchdog verdict after the link cut\n{res.describe()}")
    u.check(any(f"hang ({r})" in line for r in LINK_RULES), f"a link or peer verdict: {line}")
    u.check(names_rank(line, 1), f"rank 1 (its cable) named: {line}")
    u.check(res.returncode == 1, f"the job's own status (Gloo's timeout: 1)\n{res.describe()}")
    check_first_finding(ctx, trace, LINK_RULES, 1)


if __name__ == "__main__":
    sys.exit(u.main({
        "flight-healthy-4": flight_healthy_4,
        "flight-stop-3": flight_stop_3,
        "flight-op-3": flight_op_3,
        "flight-size-3": flight_size_3,
        "flight-exit-4": flight_exit_4,
        "flight-sigkill-3": flight_sigkill_3,
        "flight-sigstop-3": flight_sigstop_3,
        "flight-watchdog-8": flight_watchdog_8,
        "flight-ddp-3": flight_ddp_3,
        "flight-linkcut-3": flight_linkcut_3,
    }))
