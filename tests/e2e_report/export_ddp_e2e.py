#!/usr/bin/env python3
"""`ringside export --perfetto` on a recorded DDP run with several buckets (4 ranks, 10 steps,
about 15 s): concurrent bucket all-reduces put overlapping messages on one link, which the export
must spread over lanes. The export passes check_perfetto.py (trace-event rules, and per link the
trace's message count and bytes; every send has its arrow to its receive).

Usage: export_ddp_e2e.py RINGSIDE PYTHON SAMPLE CHECK_SCRIPT. Exits 77 when PYTHON cannot import
torch with Gloo.
"""
import os
import subprocess
import sys
import tempfile

SKIP = 77


def run(cmd, timeout):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        print("FAIL: %s exited %d\n%s%s" % (" ".join(cmd), r.returncode, r.stdout[-2000:],
                                            r.stderr[-2000:]))
        sys.exit(1)
    return r


def main():
    ringside, python, sample, check = sys.argv[1:5]
    probe = subprocess.run([python, "-c", "import torch, torch.distributed as d; "
                            "assert d.is_gloo_available()"], capture_output=True, text=True)
    if probe.returncode != 0:
        print("skip: %s cannot import torch with Gloo (install python3-torch)" % python)
        sys.exit(SKIP)
    with tempfile.TemporaryDirectory(prefix="ringside-export-ddp-") as tmp:
        trace = os.path.join(tmp, "t.sqlite")
        out = os.path.join(tmp, "t.json")
        run([ringside, "record", "--ranks", "4", "-o", trace, "--", python, sample,
             "--hidden", "1024", "--bucket-cap-mb", "1", "--steps", "10"], 240)
        r = run([ringside, "export", "--perfetto", trace, "-o", out], 120)
        print(r.stderr.strip())
        r = run([sys.executable, check, out, "4", trace, "--all-flows"], 120)
        print(r.stdout.strip())
        with open(out, encoding="utf-8") as f:
            if "(lane 2)" not in f.read():
                print("FAIL: no message lanes on a multi-bucket run (its messages overlap)")
                sys.exit(1)
    print("export ddp e2e ok")


if __name__ == "__main__":
    main()
