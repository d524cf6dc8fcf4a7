"""End to end: `ringside report` and `ringside diff` on bad traces.

A truncated file, random bytes, a foreign SQLite file, a newer-version trace and a trace with no
collectives each give one line on stderr and exit status 1 (never a crash). A trace with a cut-off
rank is reported (exit 0) with the rank flagged.
Usage: bad_input_e2e.py RINGSIDE
"""
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile


def run(args, cwd):
    return subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=cwd)


def copy_and_edit(tmp, name, *statements):
    path = os.path.join(tmp, name)
    shutil.copy(os.path.join(tmp, "t.sqlite"), path)
    con = sqlite3.connect(path)
    for s in statements:
        con.execute(s)
    con.commit()
    con.close()
    return name


def main():
    ringside = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        r = run([ringside, "bench", "--ranks", "3", "--algo", "ring", "--sizes", "4K",
                 "--iters", "2", "-o", "t.sqlite"], tmp)
        if r.returncode != 0:
            print(r.stdout, r.stderr)
            print(f"bench failed: exit {r.returncode}")
            return 1
        with open(os.path.join(tmp, "t.sqlite"), "rb") as f:
            whole = f.read()
        with open(os.path.join(tmp, "truncated.sqlite"), "wb") as f:
            f.write(whole[: len(whole) // 3])
        rng = random.Random(7)
        with open(os.path.join(tmp, "random.sqlite"), "wb") as f:
            f.write(bytes(rng.getrandbits(8) for _ in range(64 * 1024)))
        con = sqlite3.connect(os.path.join(tmp, "foreign.sqlite"))
        con.execute("CREATE TABLE people (name TEXT, age INTEGER)")
        con.execute("INSERT INTO people VALUES ('ada', 36)")
        con.commit()
        con.close()
        copy_and_edit(tmp, "newer.sqlite", "PRAGMA user_version = 99")
        copy_and_edit(tmp, "empty.sqlite", "DELETE FROM collective_data")
        bad = ["truncated.sqlite", "random.sqlite", "foreign.sqlite", "newer.sqlite",
               "empty.sqlite", "missing.sqlite"]
        for name in bad:
            for args in (["report", name], ["report", "--format", "json", name],
                         ["diff", name, "t.sqlite"], ["diff", "t.sqlite", name]):
                r = run([ringside] + args, tmp)
                lines = r.stderr.splitlines()
                what = " ".join(args)
                if r.returncode != 1:
                    failures.append(f"{what}: exit {r.returncode}, want 1 ({r.stderr.strip()})")
                elif len(lines) != 1:
                    failures.append(f"{what}: {len(lines)} lines on stderr, want 1: {r.stderr!r}")
                elif name not in lines[0]:
                    failures.append(f"{what}: the error does not name the file: {lines[0]}")
                elif r.stdout:
                    failures.append(f"{what}: wrote to stdout: {r.stdout[:200]!r}")
                else:
                    print(f"ok  {what}: {lines[0]}")
        # A merged trace records its cut-off ranks in meta (docs/schema.md): rank 2's file never
        # reached its final flush.
        cut = copy_and_edit(tmp, "cut.sqlite",
                            "UPDATE meta SET value = '2' WHERE key = 'cut_off_ranks'",
                            "DELETE FROM meta WHERE key = 'rank.2.end_state'")
        r = run([ringside, "report", cut], tmp)
        if r.returncode != 0:
            failures.append(f"report {cut}: exit {r.returncode}, want 0 ({r.stderr.strip()})")
        elif "CUT OFF" not in r.stdout or "rank(s) 2 cut off" not in r.stdout:
            failures.append(f"report {cut}: rank 2 not flagged as cut off:\n{r.stdout}")
        else:
            print(f"ok  report {cut}: rank 2 flagged")
        r = run([ringside, "report", "--format", "json", cut], tmp)
        rep = json.loads(r.stdout) if r.returncode == 0 else {}
        cut_rows = [x["rank"] for x in rep.get("ranks", []) if x.get("cut_off")]
        rules = [f["rule"] for f in rep.get("findings", [])]
        if rep.get("cut_off_ranks") != [2] or cut_rows != [2] or "cut-off" not in rules:
            failures.append(f"report --format json {cut}: exit {r.returncode}, cut_off_ranks "
                            f"{rep.get('cut_off_ranks')}, ranks cut off {cut_rows}, rules {rules}")
        r = run([ringside, "diff", cut, "t.sqlite"], tmp)
        if r.returncode != 0:
            failures.append(f"diff {cut} t.sqlite: exit {r.returncode}, want 0 ({r.stderr.strip()})")
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
