#!/usr/bin/env python3
"""The autopsy at generated scale (issue 25; 4,096 ranks by default, CI passes 1,024): for each fault trace_gen injects at the job's
last all-reduce (a rank that never enters it, a rank that dies before it, a rank calling
allgather, a rank passing twice the bytes, a rank whose cable goes down), `ringside report
--format json` names the right rule and culprit first (for the cut: its links, each touching it),
and the report (the autopsy included) takes at most 5 s. Calls only (no messages, but the cut's
first message on each of its links) and 4 all-reduces keep the traces small; the rank files go to /dev/shm when it exists
(tmpfs), written without fsync (--no-fsync: the generator's files need no durability).

usage: autopsy_scale_e2e.py TRACE_GEN RINGSIDE [RANKS]
"""
import json
import os
import subprocess
import sys
import tempfile
import time

FAULTS = [  # (fault kind, the rule of the first finding, the culprit: modulo the ranks)
    ("stuck", "stuck-collective", 1234),
    ("dead", "rank-exited", 77),
    ("desync-op", "collective-mismatch", 4095),
    ("desync-size", "collective-mismatch", 0),
    ("cut", "messages-undelivered", 777),  # its links, "each touches rank 777"
]
LIMIT_S = 5.0


def run(argv):
    start = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, check=False)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(argv[:3])} exited {p.returncode}: {p.stderr.strip()}")
    return p.stdout, time.monotonic() - start


def cut_named(verdict, rank):
    """A cut cable's verdict: its links (links_from -> culprits), each with `rank` at one end, and
    the message saying they all touch it."""
    links = list(zip(verdict.get("links_from", []), verdict.get("culprits", [])))
    return (len(links) >= 2 and all(rank in link for link in links) and
            f"(each touches rank {rank})" in verdict.get("message", ""))


def main():
    gen, ringside = sys.argv[1], sys.argv[2]
    ranks = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    failures = []
    with tempfile.TemporaryDirectory(prefix="ringside-autopsy-", dir=base) as tmp:
        for kind, rule, culprit in FAULTS:
            culprit %= ranks
            waiting = ranks if kind == "cut" else ranks - 1  # the cut rank waits in the call too
            fault = f"{kind}:{culprit}@3"
            trace = f"{tmp}/{kind}.sqlite"
            _, gen_s = run([gen, "--merged", trace, "--ranks", str(ranks), "--collectives", "4",
                            "--steps", "2", "--calls-only", "--no-fsync", "--fault", fault])
            out, report_s = run([ringside, "report", "--format", "json", trace])
            report = json.loads(out)
            autopsy, findings = report.get("autopsy", []), report.get("findings", [])
            first = findings[0] if findings else {}
            print(f"  {ranks} ranks, --fault {fault}: generated and merged in {gen_s:.1f} s, "
                  f"report (autopsy included) {report_s:.2f} s; first finding: "
                  f"[{first.get('rule')}] {first.get('message')}")
            if not autopsy or autopsy[0].get("rule") != rule:
                failures.append(f"{fault}: first verdict {autopsy[:1]}, expected {rule}")
            elif kind == "cut" and not cut_named(autopsy[0], culprit):
                failures.append(f"{fault}: the links at rank {culprit} not named: {autopsy[0]}")
            elif kind != "cut" and autopsy[0].get("culprits") != [culprit]:
                failures.append(f"{fault}: culprits {autopsy[0].get('culprits')}, expected [{culprit}]")
            elif autopsy[0].get("seq") != 3 or len(autopsy[0].get("waiting", [])) != waiting:
                failures.append(f"{fault}: seq {autopsy[0].get('seq')}, "
                                f"{len(autopsy[0].get('waiting', []))} waiting (expected 3, {waiting})")
            if first.get("rule") != rule:
                failures.append(f"{fault}: first finding is {first.get('rule')}, expected {rule}")
            if report_s > LIMIT_S:
                failures.append(f"{fault}: report took {report_s:.2f} s (at most {LIMIT_S} s)")
            os.remove(trace)
    for f in failures:
        print(f"FAIL: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
