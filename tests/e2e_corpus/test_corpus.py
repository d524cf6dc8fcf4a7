"""A corpus of training loops (corpus_train.py), each recorded with `ringside record --ranks N`
on Debian's python3-torch, each with the truth its report must state:

  * the number of steps (detected from the calls: no markers);
  * when a late rank was injected, the first finding is late-ranks and its sentence names the
    culprit by the waiting it caused ("rank 2 caused 83% of the waiting ...");
  * when none was, no problem finding without a cause: every problem is a cause (oversubscribed,
    descheduled, computes-more) or names a rank such a finding names (its host's, for
    oversubscribed); late-ranks defers to oversubscribed/descheduled when they explain its culprit
    (analysis_cpu.cpp). Three ranks on two cores (oversub) must be named oversubscribed;
  * no link is blamed for a late rank (no slow-link finding names one of its links).

One scenario per job, a few seconds each; skipped (77) without python3-torch or taskset.
"""

import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import e2e_util as u  # noqa: E402

TRAIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus_train.py")

# name: (ranks, steps the report must find, extra arguments, late rank or None)
JOBS = {
    "bn-cnn": (2, 10, [], None),
    "buckets": (3, 8, [], None),
    "nosync": (2, 6, [], None),
    "metric": (2, 10, [], None),
    "eval": (2, 12, ["--eval-every", "4"], None),
    "unused": (2, 10, [], None),
    "two-groups": (3, 8, [], None),
    "late-once": (3, 10, ["--late-rank", "1", "--late-ms", "600", "--late-step", "5"], 1),
    "late-every": (3, 10, ["--late-rank", "2", "--late-ms", "40"], 2),
    "oversub": (3, 6, [], None),
}


def run_job(ctx, name, attempt=1):
    ranks, steps, extra, late = JOBS[name]
    ctx.need_torch()
    command = [ctx.python, TRAIN, "--shape", name, "--steps", str(steps), *extra]
    if name == "oversub":
        if shutil.which("taskset") is None:
            u.skip("no taskset to put three ranks on two cores")
        if (os.cpu_count() or 1) < 2:
            u.skip("fewer than two cores")
        command = ["taskset", "-c", "0,1", *command]
    trace = ctx.path(f"{name}.sqlite" if attempt == 1 else f"{name}-{attempt}.sqlite")
    ctx.record(["--ranks", str(ranks), "-q", "-o", trace], command, timeout=240).expect(0)
    res = u.run([ctx.ringside, "report", "--format", "json", trace], timeout=120).expect(0)
    return json.loads(res.stdout), steps, late


def names_link_of(message, rank):
    return re.search(rf"(^|\D){rank}\s*->|->\s*{rank}(\D|$)", message) is not None


# The findings that say why a rank is late (analysis_cpu.cpp): a problem in a job with no injected
# fault must be one of them, or name a rank one of them names.
CAUSES = ("oversubscribed", "descheduled", "computes-more")


def explained(findings, rank):
    for f in findings:
        if f["rule"] not in CAUSES:
            continue
        if re.search(rf"\brank {rank}\b", f["message"]):
            return True
        ranks = re.search(r"ranks ([\d,]+)", f.get("evidence", ""))  # oversubscribed: the host's
        if f["rule"] == "oversubscribed" and ranks and str(rank) in ranks.group(1).split(","):
            return True
    return False


def unexplained(findings):
    """The problem findings no cause explains (none of CAUSES, naming no rank such a one names)."""
    out = []
    for f in findings:
        if f["severity"] != "problem" or f["rule"] in CAUSES:
            continue
        rank = re.search(r"\brank (\d+)\b", f["message"])
        if not (rank and explained(findings, int(rank.group(1)))):
            out.append(f["message"])
    return out


def check_job(ctx, name, attempt=1):
    rep, steps, late = run_job(ctx, name, attempt)
    found = rep["steps"]
    print(f"{name}: {found['count']} steps, source {found['source']}, confidence "
          f"{found.get('confidence')}, left out {found.get('left_out_calls')}: "
          f"{found.get('left_out')!r}")
    findings = rep["findings"]
    for f in findings:
        print(f"  {f['severity']} {f['rule']}: {f['message']}")
    u.check_eq(found["count"], steps, f"{name}: steps ({found.get('note')})")
    u.check(found["source"] in ("stored", "detected"), f"{name}: steps from the calls")
    blamed = {r["rank"]: r.get("caused_wait_ns", 0) for r in rep["ranks"]}
    print(f"  caused wait per rank: {blamed}")
    if late is not None:
        u.check(findings, f"{name}: no finding for a late rank")
        first = findings[0]
        u.check_eq(first["rule"], "late-ranks", f"{name}: first finding ({first['message']})")
        u.check(re.search(rf"\brank {late} caused \d+% of the waiting", first["message"]),
                f"{name}: culprit rank {late} named in {first['message']!r}")
        u.check_eq(max(blamed, key=blamed.get), late, f"{name}: most caused wait")
        for f in findings:
            u.check(not (f["rule"] == "slow-link" and names_link_of(f["message"], late)),
                    f"{name}: a link of late rank {late} blamed: {f['message']}")
        return
    if name == "oversub":
        u.check(any(f["rule"] == "oversubscribed" for f in findings),
                f"{name}: no oversubscribed finding names the cause")
    problems = unexplained(findings)
    if problems and attempt == 1 and name != "oversub":
        # A job with nothing injected can still have a rank truly late for a few steps when
        # another process on this shared 2-core machine takes its core for a moment (CI's
        # parallel tests): the CPU samples, 10 ms apart against 2 ms steps, may then not show
        # the cause past the rules' thresholds (e.g. the extra wait for a core 280 us a step
        # against 285 needed). Such a late rank is real, not a false finding; the job runs once
        # more, and a problem without a cause in both runs fails.
        print(f"  {name}: unexplained in run 1 (running again): {problems}")
        check_job(ctx, name, attempt=2)
        return
    for message in problems:
        u.check(False, f"{name}: a problem without a cause (no {'/'.join(CAUSES)} finding names "
                       f"its rank or host): {message}")


def scenario(name):
    return lambda ctx: check_job(ctx, name)


if __name__ == "__main__":
    sys.exit(u.main({name: scenario(name) for name in JOBS}))
