"""Bounded recording (docs/recording.md) on the PyTorch DDP sample.

  * window-steps-2: a 40-step run with --steps 10:20 holds exactly the calls and messages of
    steps 10..19 (the same counts per step as a full run of the same job) and the setup calls
    before the first step marker; nothing of steps 0..9 or 20..39. The meta says so.
    Both window scenarios: no message ends before it starts.
  * window-trigger-2: a run with --trigger-file; the test touches the file after the job printed
    step 20: the first recorded call starts after the touch, and the meta lists the trigger.
  * window-detail-2: --detail calls has no transfer rows; --detail links gives the same per-link
    bytes and message counts (the per-link total rows' slot) in `report --json` as messages.
Each scenario records one to three jobs of a few seconds.
"""

import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as u  # noqa: E402

STEPS = 40


def record(ctx, name, record_args, job_args=()):
    ctx.need_ddp_sample()
    trace_path = ctx.path(name + ".sqlite")
    res = ctx.record(["--ranks", 2, "-o", trace_path, *record_args],
                     [ctx.python, ctx.ddp_sample, "--steps", STEPS, "--mark-steps", "0",
                      "--log-every", "0", *job_args], timeout=120)
    res.expect(0)
    return trace_path


def per_step(trace_path, rank):
    """Calls and messages (send and recv rows of this rank) per step index, from the markers;
    index -1: before the first marker (setup)."""
    t = u.Trace(trace_path)
    marks = [r[0] for r in t.rows(
        "SELECT start_ns FROM step_marker_data WHERE rank = ? ORDER BY start_ns", (rank,))]
    u.check_eq(len(marks), STEPS, f"rank {rank}: step markers kept")

    def step_of(ns):
        i = -1
        while i + 1 < len(marks) and marks[i + 1] <= ns:
            i += 1
        return i

    calls, messages = {}, {}
    starts = {}
    for cid, start in t.rows("SELECT id, start_ns FROM collective WHERE rank = ?", (rank,)):
        s = step_of(start)
        calls[s] = calls.get(s, 0) + 1
        starts[cid] = s
    for (cid,) in t.rows("SELECT collective_id FROM transfer WHERE rank = ?", (rank,)):
        s = starts.get(cid, "none")
        messages[s] = messages.get(s, 0) + 1
    meta = t.meta()
    t.close()
    return calls, messages, meta


def check_message_times(trace_path):
    """Every kept message ends after it starts: a completion whose post was left out by the
    window was once paired with a later post on the same buffer (issue 24)."""
    t = u.Trace(trace_path)
    total, backwards = t.rows("SELECT count(*), count(*) FILTER (WHERE end_ns < start_ns) "
                              "FROM transfer")[0]
    t.close()
    u.check(total > 0, "the window kept messages")
    u.check_eq(backwards, 0, f"messages that end before they start (of {total})")


def scenario_steps(ctx):
    full = record(ctx, "full", [])
    win = record(ctx, "window", ["--steps", "10:20"])
    check_message_times(win)
    for rank in (0, 1):
        f_calls, f_msgs, _ = per_step(full, rank)
        w_calls, w_msgs, meta = per_step(win, rank)
        print(f"rank {rank}: full {sorted(f_calls.items())}\n"
              f"        window {sorted(w_calls.items())}")
        kept = [-1] + list(range(10, 20))
        u.check_eq(sorted(w_calls), kept, f"rank {rank}: steps with calls")
        for s in kept:
            u.check_eq(w_calls.get(s), f_calls.get(s), f"rank {rank} step {s}: calls")
            u.check_eq(w_msgs.get(s, 0), f_msgs.get(s, 0), f"rank {rank} step {s}: messages")
        u.check("none" not in w_msgs, f"rank {rank}: every message belongs to a kept call")
        key = f"rank.{rank}."
        u.check("steps 10:20" in meta.get(key + "recording_window", ""),
                f"meta recording_window: {meta.get(key + 'recording_window')!r}")
        changes = meta.get(key + "recording_window_changes", "")
        u.check("open at" in changes and "(step 10)" in changes and "(step 20)" in changes,
                f"meta recording_window_changes: {changes!r}")
        left_out = sum(f_calls.values()) - sum(w_calls.values())
        u.check_eq(meta.get(key + "left_out_calls"), str(left_out), "meta left_out_calls")
        u.check_eq(meta.get(key + "transfers_unmatched"), "0", "meta transfers_unmatched")
    text = u.run([ctx.ringside, "report", win], timeout=120).expect(0).stdout
    u.check("recording was bounded" in text, "text report: the bounded-recording line")


def scenario_trigger(ctx):
    ctx.need_ddp_sample()
    ctx.need_ringside()
    trace_path = ctx.path("trigger.sqlite")
    trigger = ctx.path("go")
    # 60 steps of about 20 ms (rank 1 sleeps, rank 0 waits for it in the all-reduce).
    argv = [ctx.ringside, "record", "--ranks", 2, "-o", trace_path, "--trigger-file", trigger,
            "--", ctx.python, ctx.ddp_sample, "--steps", 60, "--mark-steps", "0",
            "--slow-rank", "1", "--slow-ms", "20"]
    proc = subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE, text=True,
                            stderr=subprocess.PIPE, env=u.clean_env(), cwd=ctx.scratch,
                            start_new_session=True)
    touched_ns = None
    try:
        for line in proc.stdout:
            if touched_ns is None and line.startswith("step   20/"):
                with open(trigger, "w"):
                    pass
                touched_ns = time.monotonic_ns()
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    u.check_eq(proc.returncode, 0, f"record's exit status (stderr: {err[-2000:]})")
    u.check(touched_ns is not None, "the job printed step 20")
    check_message_times(trace_path)
    t = u.Trace(trace_path)
    first = t.scalar("SELECT min(start_ns) FROM collective")
    calls = t.scalar("SELECT count(*) FROM collective")
    before = t.scalar("SELECT count(*) FROM transfer WHERE start_ns < ?", (touched_ns,))
    meta = t.meta()
    t.close()
    print(f"touched at {touched_ns}, first call at {first} (+{(first - touched_ns) / 1e6:.1f} ms), "
          f"{calls} calls")
    u.check(calls >= 20, f"calls after the trigger recorded ({calls})")
    u.check(first > touched_ns, f"first recorded call {first} after the touch {touched_ns}")
    u.check_eq(before, 0, "messages before the touch")
    for rank in (0, 1):
        changes = meta.get(f"rank.{rank}.recording_window_changes", "")
        # The close's time is the rank's own clock at its start (0.000 s, more on a loaded machine).
        u.check(re.match(r"close at [0-9.]+ s \(start\); open at", changes) is not None and "(trigger)" in changes,
                f"rank {rank}: meta recording_window_changes {changes!r}")
        u.check(int(meta.get(f"rank.{rank}.left_out_calls", "0")) >= 20,
                f"rank {rank}: calls before the trigger counted as left out")


def link_figures(ctx, trace_path):
    res = u.run([ctx.ringside, "report", "--format", "json", trace_path], timeout=120)
    res.expect(0)
    links = json.loads(res.stdout)["links"]
    return {(l["src"], l["dst"]): (l["bytes"], l["messages"]) for l in links}


def scenario_detail(ctx):
    job = ["--hidden", "256", "--bucket-cap-mb", "0.1"]  # several buckets: several calls a step
    calls = record(ctx, "calls", ["--detail", "calls", "--steps", "2:6"], job)
    t = u.Trace(calls)
    u.check_eq(t.scalar("SELECT count(*) FROM transfer"), 0, "--detail calls: transfer rows")
    u.check(t.scalar("SELECT count(*) FROM collective") > 0, "--detail calls: calls kept")
    meta = t.meta()
    t.close()
    u.check_eq(meta.get("rank.0.recording_detail"), "calls", "meta recording_detail")
    u.check(int(meta.get("rank.0.left_out_messages", "0")) > 0, "meta left_out_messages")

    messages = record(ctx, "messages", ["--detail", "messages", "--steps", "2:6"], job)
    links = record(ctx, "links", ["--detail", "links", "--steps", "2:6"], job)
    t = u.Trace(links)
    rows, other = t.rows("SELECT count(*), count(*) FILTER (WHERE chunk != -2 OR slot < 1) "
                         "FROM transfer")[0]
    meta = t.meta()
    t.close()
    u.check(rows > 0 and other == 0, f"--detail links: only per-link total rows ({rows}, {other})")
    u.check(int(meta["rank.0.messages_in_link_totals"]) > rows // 2,
            "meta messages_in_link_totals")
    want, got = link_figures(ctx, messages), link_figures(ctx, links)
    print(f"messages: {want}\nlinks:    {got}")
    u.check_eq(got, want, "per-link bytes and messages, links vs messages")
    t = u.Trace(links)
    sums = {(s, d): n for s, d, n in t.rows(
        "SELECT src_rank, dst_rank, sum(slot) FROM transfer WHERE side = 'send' "
        "GROUP BY src_rank, dst_rank")}
    t.close()
    u.check_eq(sums, {k: v[1] for k, v in want.items()}, "per-link message counts (slot sums)")


if __name__ == "__main__":
    sys.exit(u.main({"window-steps-2": scenario_steps, "window-trigger-2": scenario_trigger,
                     "window-detail-2": scenario_detail}))
