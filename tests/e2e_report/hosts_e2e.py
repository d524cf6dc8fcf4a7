"""End to end: `ringside report` on a trace whose ranks ran on two hosts.

A 4-rank ring bench trace has its rank.host rewritten (ranks 0, 1 on node-a; 2, 3 on node-b), so
the ring 0->1->2->3->0 crosses hosts at 1->2 and 3->0. Checks the JSON (hosts, link scopes, the
host x host matrix against the links, idle links without inter-host rank pairs, no clock section
for a trace without a clock model), the text report's host tables and the hosts CSV table; then,
with two boot ids and `merge --realign`, the clock section of the JSON and text reports.
Usage: hosts_e2e.py RINGSIDE
"""
import csv
import io
import json
import sqlite3
import subprocess
import sys
import tempfile


def run(args, cwd):
    return subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=cwd)


def check(ok, what):
    if not ok:
        print("FAIL: " + what)
        sys.exit(1)


def main():
    ringside = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        r = run([ringside, "bench", "--ranks", "4", "--algo", "ring", "--sizes", "64K",
                 "--iters", "3", "--warmup", "1", "-o", "t.sqlite"], tmp)
        check(r.returncode == 0, f"bench: exit {r.returncode} {r.stderr}")
        db = sqlite3.connect(f"{tmp}/t.sqlite")
        db.execute("UPDATE rank SET host = CASE WHEN rank < 2 THEN 'node-a' ELSE 'node-b' END")
        db.commit()
        db.close()

        r = run([ringside, "report", "--format", "json", "t.sqlite"], tmp)
        check(r.returncode == 0, f"report json: exit {r.returncode} {r.stderr}")
        rep = json.loads(r.stdout)
        hosts = [(h["name"], h["ranks"]) for h in rep["hosts"]]
        check(hosts == [("node-a", [0, 1]), ("node-b", [2, 3])], f"hosts {hosts}")
        host_of = {0: 0, 1: 0, 2: 1, 3: 1}
        check([x["host"] for x in rep["ranks"]] == ["node-a", "node-a", "node-b", "node-b"],
              f"ranks' hosts {rep['ranks']}")
        matrix = [[0, 0], [0, 0]]
        for link in rep["links"]:
            want = "intra-host" if host_of[link["src"]] == host_of[link["dst"]] else "inter-host"
            check(link["scope"] == want, f"link {link['src']}->{link['dst']}: {link['scope']}")
            matrix[host_of[link["src"]]][host_of[link["dst"]]] += link["bytes"]
        check(rep["host_traffic"]["bytes"] == matrix,
              f"host matrix {rep['host_traffic']['bytes']} vs links {matrix}")
        check(all(v > 0 for row in matrix for v in row), f"every host pair carried bytes {matrix}")
        for idle in rep["idle_links"]:
            # Between hosts only pairs of hosts are candidates; none is idle in this ring.
            check(idle["src"] is not None and host_of[idle["src"]] == host_of[idle["dst"]],
                  f"idle link {idle}")
        check("clock" not in rep, "a clock section without a clock model")
        inter = sum(h["sent_inter_bytes"] for h in rep["hosts"])
        check(inter == matrix[0][1] + matrix[1][0], f"inter-host bytes {inter}")

        r = run([ringside, "report", "t.sqlite"], tmp)
        check(r.returncode == 0, f"report text: exit {r.returncode}")
        for want in ("Hosts\n", "Ranks (grouped by host)", "Traffic between hosts", "inter-host"):
            check(want in r.stdout, f"text report lacks {want!r}:\n{r.stdout}")
        check("Clocks" not in r.stdout, "text report has a clock section")

        r = run([ringside, "report", "--format", "csv", "--csv-table", "hosts", "t.sqlite"], tmp)
        check(r.returncode == 0, f"report csv hosts: exit {r.returncode} {r.stderr}")
        rows = list(csv.DictReader(io.StringIO(r.stdout)))
        check([row["host"] for row in rows] == ["node-a", "node-b"], f"hosts csv {rows}")
        check(int(rows[0]["sent_inter_bytes"]) == matrix[0][1], f"hosts csv bytes {rows}")

        r = run([ringside, "report", "--format", "html", "t.sqlite"], tmp)
        check(r.returncode == 0 and 'class="host-matrix"' in r.stdout, "html host matrix")

        # Two boot ids: two clock domains once the model is fitted again; the clock section.
        db = sqlite3.connect(f"{tmp}/t.sqlite")
        db.execute("UPDATE rank SET boot_id = CASE WHEN rank < 2 THEN 'boot-a' ELSE 'boot-b' END")
        db.commit()
        db.close()
        r = run([ringside, "merge", "--realign", "t.sqlite"], tmp)
        check(r.returncode == 0, f"merge --realign: exit {r.returncode} {r.stderr}")
        r = run([ringside, "report", "--format", "json", "t.sqlite"], tmp)
        check(r.returncode == 0, f"report json (2 domains): exit {r.returncode}")
        clock = json.loads(r.stdout).get("clock")
        check(clock is not None and [d["ranks"] for d in clock["domains"]] == [[0, 1], [2, 3]],
              f"clock section {clock}")
        check(clock["messages_checked"] > 0, f"no messages between domains checked: {clock}")
        r = run([ringside, "report", "t.sqlite"], tmp)
        check("Clocks" in r.stdout and "messages between domains still appear" in r.stdout,
              f"text report lacks the clock section:\n{r.stdout}")
        check(r.stdout.index("Clocks") < r.stdout.index("Findings"), "clock section after findings")
    print("ok: hosts, link scopes, host matrix, idle links, clock section on a 2-host trace")
    return 0


if __name__ == "__main__":
    sys.exit(main())
