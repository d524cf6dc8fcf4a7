"""Why a rank is late (issue 24): the CPU samples of a recorded DDP job and the findings on them
(docs/analyzer.md: oversubscribed, computes-more, descheduled).

  * cpu-oversubscribed-3: three ranks of a balanced job pinned to two cores (taskset -c 0,1):
    the first finding names the host's oversubscription (3 ranks on 2 cores); every rank has CPU
    samples and the per-rank CPU figures in the JSON report.
  * cpu-computes-more-2: rank 1 busy-computes 20 ms more per step (ddp_train.py --slow-spin):
    a computes-more finding names rank 1, as the culprit (blame: the waiting it caused).
  * cpu-sleeps-2: rank 1 sleeps 20 ms per step instead: late, but no computes-more finding.
"""
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as u  # noqa: E402

STEPS = 30


def record(ctx, name, ranks, job_args=(), pin=None):
    ctx.need_ddp_sample()
    ctx.need_ringside()
    trace = ctx.path(name + ".sqlite")
    argv = [ctx.ringside, "record", "--ranks", ranks, "-o", trace, "--", ctx.python,
            ctx.ddp_sample, "--steps", STEPS, "--mark-steps", "0", "--log-every", "0", *job_args]
    if pin is not None:
        taskset = shutil.which("taskset")
        if taskset is None:
            u.skip("no taskset (util-linux) to pin the job to two cores")
        argv = [taskset, "-c", pin, *argv]
    u.run([str(a) for a in argv], env=u.clean_env(), timeout=240, cwd=ctx.scratch).expect(0)
    return trace


def report(ctx, trace):
    out = u.run([ctx.ringside, "report", trace, "--format", "json"], timeout=120).expect(0).stdout
    return json.loads(out)


def rules(rep):
    return [f["rule"] for f in rep["findings"]]


def finding(rep, rule):
    for f in rep["findings"]:
        if f["rule"] == rule:
            return f
    return None


def scenario_oversubscribed(ctx):
    if (os.cpu_count() or 0) < 2:
        u.skip("fewer than two CPUs: cannot pin three ranks to two cores")
    trace = record(ctx, "three-on-two", 3, ["--hidden", "256", "--batch-size", "64"], pin="0,1")
    t = u.Trace(trace)
    per_rank = dict(t.rows("SELECT rank, count(*) FROM cpu_sample_data GROUP BY rank"))
    meta = t.meta()
    t.close()
    u.check_eq(sorted(per_rank), [0, 1, 2], "ranks with CPU samples")
    for rank in range(3):
        u.check_eq(meta.get(f"rank.{rank}.cpu_cores_allowed"), "2", f"rank {rank}: cores allowed")
    rep = report(ctx, trace)
    print("findings:", rules(rep), "cpu:", json.dumps(rep["cpu"]))
    u.check_eq(len(rep["cpu"]["ranks"]), 3, "ranks with CPU figures")
    host = rep["cpu"]["hosts"][0]
    u.check_eq((host["cores"], host["ranks"]), (2, 3), "host cores and ranks")
    f = finding(rep, "oversubscribed")
    u.check(f is not None, f"an oversubscribed finding (findings: {rules(rep)})")
    u.check("3 ranks on 2 cores" in f["message"], f"the finding says so: {f['message']!r}")
    u.check_eq(rep["findings"][0]["rule"], "oversubscribed", "the first finding")
    u.check(finding(rep, "computes-more") is None, "a balanced job: no rank computes more")


def scenario_computes_more(ctx):
    trace = record(ctx, "spin", 2, ["--slow-rank", "1", "--slow-ms", "20", "--slow-spin"])
    rep = report(ctx, trace)
    print("findings:", rules(rep), "cpu:", json.dumps(rep["cpu"]))
    f = finding(rep, "computes-more")
    u.check(f is not None, f"a computes-more finding (findings: {rules(rep)})")
    u.check(re.match(r"rank 1 \(it caused \d+% of the waiting\)", f["message"]),
            f"names rank 1 as the culprit: {f['message']!r}")
    cpu = {r["rank"]: r["cpu_ns"] for r in rep["cpu"]["ranks"]}
    u.check(cpu[1] - cpu[0] > 10_000_000, f"rank 1's CPU per step is 20 ms more: {cpu}")


def scenario_sleeps(ctx):
    trace = record(ctx, "sleep", 2, ["--slow-rank", "1", "--slow-ms", "20"])
    rep = report(ctx, trace)
    print("findings:", rules(rep), "cpu:", json.dumps(rep["cpu"]))
    u.check("late-ranks" in rules(rep), f"rank 1 is still late (findings: {rules(rep)})")
    u.check(finding(rep, "computes-more") is None, "a sleeping rank does not compute more")
    cpu = {r["rank"]: r["cpu_ns"] for r in rep["cpu"]["ranks"]}
    u.check(cpu[1] < cpu[0] + 5_000_000, f"its CPU per step is not 20 ms more: {cpu}")


if __name__ == "__main__":
    sys.exit(u.main({"cpu-oversubscribed-3": scenario_oversubscribed,
                     "cpu-computes-more-2": scenario_computes_more,
                     "cpu-sleeps-2": scenario_sleeps}))
