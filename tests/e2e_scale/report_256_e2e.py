#!/usr/bin/env python3
"""256 generated ranks on 32 hosts, rank 77 a straggler (3 ms late at every call) and link
140->141 eight times slower: `ringside merge` then `ringside report`. The text report names both
in its findings and stays within 150 lines; the JSON report keeps the complete tables (every
rank, host and clock domain).

usage: report_256_e2e.py TRACE_GEN RINGSIDE
"""
import json
import subprocess
import sys
import tempfile
import time

STRAGGLER = 77
SLOW = (140, 141)


def run(argv):
    start = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, check=False)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(argv[:2])} exited {p.returncode}: {p.stderr.strip()}")
    print(f"  {argv[0].rsplit('/', 1)[-1]} {argv[1]}: {time.monotonic() - start:.1f} s")
    return p.stdout


def findings(text):
    """The lines of the Findings section."""
    lines = text.splitlines()
    start = lines.index("Findings")
    out = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        out.append(line)
    return "\n".join(out)


def main():
    gen, ringside = sys.argv[1], sys.argv[2]
    failures = []
    with tempfile.TemporaryDirectory(prefix="ringside-scale-") as tmp:
        ranks_dir, trace = f"{tmp}/ranks", f"{tmp}/trace.sqlite"
        run([gen, "--out", ranks_dir, "--ranks", "256", "--hosts", "32", "--collectives", "4",
             "--steps", "2", "--receives", "--straggler", f"{STRAGGLER}:3000",
             "--slow-link", f"{SLOW[0]}-{SLOW[1]}:8", "--seed", "7"])
        run([ringside, "merge", ranks_dir, "-o", trace, "-q"])
        text = run([ringside, "report", trace])
        found = findings(text)
        lines = text.count("\n")
        print(f"  text report: {lines} lines; findings:\n{found}")
        if lines > 150:
            failures.append(f"the text report has {lines} lines (at most 150)")
        if f"rank {STRAGGLER} arrives last" not in found:
            failures.append(f"no finding names the straggler rank {STRAGGLER} as arriving last")
        if f"link {SLOW[0]}->{SLOW[1]} is the bottleneck" not in found:
            failures.append(f"no finding names the slow link {SLOW[0]}->{SLOW[1]}")
        report = json.loads(run([ringside, "report", "--format", "json", trace]))
        complete = {"ranks": (report.get("ranks"), 256), "hosts": (report.get("hosts"), 32),
                    "clock.domains": (report.get("clock", {}).get("domains"), 32),
                    "links": (report.get("links"), 256),  # one per ring link
                    "host_traffic.bytes": (report.get("host_traffic", {}).get("bytes"), 32)}
        for name, (rows, want) in complete.items():
            got = len(rows) if isinstance(rows, list) else None
            if got != want:
                failures.append(f"JSON {name}: {got} rows, want {want}")
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print("PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
