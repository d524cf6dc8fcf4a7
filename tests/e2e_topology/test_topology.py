#!/usr/bin/python3
"""tests/e2e_topology: ringside bench across emulated hosts (samples/topology/emulate.sh).

Four network namespaces joined by a full mesh of tc-shaped veth links, one bench rank in each.
Scenarios:
  slow-link  link h1-h2 5x slower: trace complete, the kernel's byte counters agree with the
             trace, and the slow link has the lowest rate while busy (bytes / busy time, from
             the receive side) for both ring and tree.
  square     equal links: the ring leaves the diagonals h0-h2 and h1-h3 idle (trace and kernel
             counters), the double binary tree uses them.
`ringside report --format json --topology` (docs/report-json.md) must say the same: a slow-link
finding naming h1-h2, the lowest busy_gbps on it, and the square's diagonals in idle_links.
  multipath-square     --algo multipath on the square: correct results, every one of the 12
                       directed links carries payload, each about a twelfth (equal rates).
  multipath-ring-only  --algo multipath on the ring-only case (no diagonals): the 8 directed
                       links (the ring both ways) carry about equal payload, the missing
                       diagonals none. Small sizes: about 15 s each; speed is docs/bench.md's.
  ddp-multipath        the DDP sample on the 4 emulated hosts (one rank each, `emulate.sh run-job`)
                       with --allreduce ring, then multipath: the same losses; `ringside diff`
                       shows multipath faster at 1 MiB, and the ring trace's what-if (report
                       --topology) predicted it (diff's what_if_checks). About 25 s; skipped
                       without python3-torch.
  multipath-probe      no topology file on slow-link: multipath's own probe finds h1-h2 slow,
                       the trace has the rates, the plan avoids it, >= 1.3x ring and tree.
  multipath-switch     no topology file on the switch case (one NIC a host): the probe sees the
                       NICs shared and multipath runs as the ring, not slower than it.
  multipath-link-down  the diagonal h1-h3 goes down in the middle of a multipath all-reduce on
                       the square: every rank fails with a one-line error within the bench's
                       timeout (8 s), none hangs, none reports a result. (h1-h3: no rank's
                       connection to the rendezvous store on h0 crosses it, so a cut that falls
                       between two calls, in the bench's barrier, is still found by the next
                       call and not by the store's own 60 s deadline.)

Exit 77 (skipped) when this machine cannot emulate: not root, no namespaces, no tc.
Standard library only.
"""
import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
EMULATE = os.path.join(REPO, "samples", "topology", "emulate.sh")
SKIP = 77

SIDES = {(0, 1), (1, 2), (2, 3), (3, 0)}  # the ring's links (r -> r+1)
DIAGONALS = {(0, 2), (2, 0), (1, 3), (3, 1)}


def skip(why):
    print("SKIP: " + why)
    sys.exit(SKIP)


def fail(why):
    print("FAIL: " + why)
    sys.exit(1)


def check(cond, why):
    if not cond:
        fail(why)
    print("ok: " + why)


def emulate(args, prefix, **kw):
    cmd = ["bash", EMULATE] + args + ["--prefix", prefix]
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    print(p.stdout, flush=True)
    if p.returncode == SKIP:
        skip(p.stdout.strip().splitlines()[-1] if p.stdout.strip() else "emulate.sh cannot run here")
    return p


def our_namespaces(prefix):
    p = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE, text=True)
    return [l.split()[0] for l in p.stdout.splitlines() if l.startswith(prefix + "-h")]


def kernel_bytes(out):
    """{(i, j): tx bytes of h_i's veth toward h_j during the bench} from emulate.sh's file."""
    res = {}
    with open(os.path.join(out, "link-bytes.txt")) as f:
        for line in f:
            i, j, b = line.split()
            res[(int(i), int(j))] = int(b)
    return res


def trace_links(trace, algorithm):
    """{(src, dst): (bytes, busy_s)} per directed link for one algorithm, from the receive side
    (a send 'ends' when the socket buffer took it; a receive when the last byte arrived)."""
    db = sqlite3.connect(trace)
    rows = db.execute(
        "SELECT t.src_rank, t.dst_rank, sum(t.bytes), sum(t.end_ns - t.start_ns) / 1e9 "
        "FROM transfer t JOIN collective c ON c.id = t.collective_id "
        "WHERE t.side = 'recv' AND c.algorithm = ? GROUP BY 1, 2", (algorithm,)).fetchall()
    db.close()
    return {(s, d): (b, busy) for s, d, b, busy in rows}


def check_trace_complete(trace, algos):
    check(os.path.exists(trace), "trace exists: " + trace)
    db = sqlite3.connect(trace)
    hosts = dict(db.execute("SELECT rank, host FROM rank").fetchall())
    check(sorted(hosts) == [0, 1, 2, 3], "all 4 ranks in the trace (%s)" % sorted(hosts))
    check(all(hosts[r] == "h%d" % r for r in hosts), "rank r ran on emulated host h<r>: %s" % hosts)
    per = db.execute("SELECT rank, algorithm, count(*), sum(status != 0) FROM collective "
                     "GROUP BY 1, 2 ORDER BY 1, 2").fetchall()
    db.close()
    for a in algos:
        counts = {r: n for r, al, n, _ in per if al == a}
        check(len(counts) == 4 and len(set(counts.values())) == 1 and min(counts.values()) > 0,
              "%s: the same number of calls on every rank %s" % (a, counts))
    check(all(bad == 0 for *_, bad in per), "no failed calls")


def check_kernel_covers_trace(kb, trace, algos):
    """Every directed link carried at least the payload bytes the trace says (headers, TCP and
    the rendezvous add to it): the trace's bytes really went over the direct link."""
    total = {}
    for a in algos:
        for k, (b, _) in trace_links(trace, a).items():
            total[k] = total.get(k, 0) + b
    for k, b in sorted(total.items()):
        check(kb[k] >= b, "h%d->h%d: kernel %d bytes >= trace %d bytes" % (k[0], k[1], kb[k], b))
    return total


def report_json(args, trace, topo):
    """`ringside report --format json --topology` of the trace (schema ringside-report/1)."""
    p = subprocess.run([args.ringside, "report", "--format", "json", "--topology", topo, trace],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 0, "ringside report --format json --topology ran (%s)" % p.stderr.strip())
    rep = json.loads(p.stdout)
    check(rep.get("schema") == "ringside-report/1", "report schema %s" % rep.get("schema"))
    return rep


def link_of(obj):
    """A report link or idle link as (src, dst) ranks (ranks are hosts here: rank r on h<r>)."""
    return (obj["src"], obj["dst"])


def names_slow_link(message):
    """The slow-link finding names its link as "SRC->DST" ranks."""
    return "1->2" in message or "2->1" in message


def scenario_slow_link(args, prefix, work):
    out = os.path.join(work, "run")
    p = emulate(["run", "--case", "slow-link", "--out", out, "--ringside", args.ringside,
                 "--algo", "ring,tree", "--sizes", "1M,4M", "--iters", "3", "--warmup", "1"],
                prefix, timeout=240)
    check(p.returncode == 0, "bench over the emulated mesh succeeded")
    trace = os.path.join(out, "trace.sqlite")
    check_trace_complete(trace, ["ring", "tree"])
    kb = kernel_bytes(out)
    total = check_kernel_covers_trace(kb, trace, ["ring", "tree"])
    # Ring (0->1->2->3->0) and both trees never connect h0 and h3 in that direction.
    check((0, 3) not in total and kb[(0, 3)] < 1 << 20,
          "h0->h3 carried no payload (kernel %d bytes: rendezvous only)" % kb[(0, 3)])

    slow = {(1, 2), (2, 1)}
    for algo in ("ring", "tree"):
        links = trace_links(trace, algo)
        rate = {k: b / busy for k, (b, busy) in links.items() if busy > 0}
        print("%s: MB/s while busy: %s" % (algo, ", ".join(
            "%d->%d %.1f" % (k[0], k[1], v / 1e6) for k, v in sorted(rate.items(), key=lambda x: x[1]))))
        slow_here = [k for k in rate if k in slow]
        fast = [v for k, v in rate.items() if k not in slow]
        check(slow_here and fast, "%s used the slow link and others" % algo)
        worst_slow = max(rate[k] for k in slow_here)
        check(worst_slow < min(fast), "%s: the slow link h1-h2 has the lowest bytes/busy time" % algo)
        median = sorted(fast)[len(fast) // 2]
        check(worst_slow < 0.5 * median,
              "%s: slow link %.1f MB/s < half the others' median %.1f MB/s (tc: 5x)" %
              (algo, worst_slow / 1e6, median / 1e6))

    rep = report_json(args, trace, os.path.join(out, "topology.txt"))
    findings = rep["findings"]
    hits = [f for f in findings if f["rule"] == "slow-link" and names_slow_link(f["message"])]
    check(hits, "report finds the slow link h1-h2: %s" % [f["message"] for f in findings])
    # busy_gbps comes from the recv rows (a send ends when the socket buffer took it).
    r = {link_of(l): l["busy_gbps"] for l in rep["links"] if l["busy_gbps"] > 0}
    s = [v for k, v in r.items() if k in slow]
    o = [v for k, v in r.items() if k not in slow]
    check(s and o and max(s) < min(o),
          "report: the slow link's busy_gbps is the lowest (%s vs %s)" % (s, o))


def scenario_square(args, prefix, work):
    p = emulate(["up", "--case", "square"], prefix)
    check(p.returncode == 0, "square mesh up")
    runs = {}
    for algo in ("ring", "tree"):
        out = os.path.join(work, algo)
        p = emulate(["run", "--case", "square", "--out", out, "--ringside", args.ringside,
                     "--algo", algo, "--sizes", "1M,4M", "--iters", "3", "--warmup", "1"],
                    prefix, timeout=180)
        check(p.returncode == 0, "%s bench over the square succeeded" % algo)
        trace = os.path.join(out, "trace.sqlite")
        check_trace_complete(trace, [algo])
        runs[algo] = (out, trace, kernel_bytes(out), trace_links(trace, algo))
        check_kernel_covers_trace(runs[algo][2], trace, [algo])

    _, _, kb, ring = runs["ring"]
    check(set(ring) == SIDES, "ring: payload only on the square's sides %s" % sorted(ring))
    side_min = min(kb[k] for k in SIDES)
    for k in DIAGONALS:
        check(kb[k] < side_min / 100,
              "ring: diagonal h%d->h%d idle in the kernel (%d bytes vs sides >= %d)" %
              (k[0], k[1], kb[k], side_min))
    _, _, kb, tree = runs["tree"]
    for k in DIAGONALS:
        check(k in tree and tree[k][0] > 0 and kb[k] >= tree[k][0],
              "tree: diagonal h%d->h%d carries %d payload bytes (kernel %d)" %
              (k[0], k[1], tree[k][0] if k in tree else 0, kb[k]))

    for algo in ("ring", "tree"):
        out, trace, _, _ = runs[algo]
        rep = report_json(args, trace, os.path.join(out, "topology.txt"))
        idle = {link_of(l) for l in rep["idle_links"]}
        if algo == "ring":
            check(DIAGONALS <= idle, "report (ring): diagonals idle %s" % sorted(idle))
        else:
            check(not (DIAGONALS & idle), "report (tree): diagonals used %s" % sorted(idle))


def scenario_multipath(args, prefix, work, case, links):
    out = os.path.join(work, "run")
    p = emulate(["run", "--case", case, "--out", out, "--ringside", args.ringside,
                 "--algo", "multipath", "--sizes", "256K,1M", "--iters", "2", "--warmup", "1"],
                prefix, timeout=180)
    check(p.returncode == 0, "multipath bench over %s succeeded (no wrong element)" % case)
    with open(os.path.join(out, "rank0.err")) as f:
        said = f.read()
    check("multipath: " in said and "capacities from topology" in said,
          "rank 0 said which rings it packed, from the topology file: " + said.strip())
    trace = os.path.join(out, "trace.sqlite")
    check_trace_complete(trace, ["multipath"])
    db = sqlite3.connect(trace)
    libs = {r[0] for r in db.execute("SELECT DISTINCT library FROM collective")}
    db.close()
    check(libs == {"ringside-multipath"}, "calls recorded as ringside-multipath: %s" % libs)
    kb = kernel_bytes(out)
    total = check_kernel_covers_trace(kb, trace, ["multipath"])
    check(set(total) == links, "payload on exactly the cabled directed links: %s" % sorted(total))
    mean = sum(total.values()) / len(total)
    for k in sorted(links):
        check(0.7 * mean <= total[k] <= 1.3 * mean,
              "h%d->h%d carried %d payload bytes, within 30%% of the mean %d (equal rates)" %
              (k[0], k[1], total[k], mean))


def scenario_multipath_probe(args, prefix, work):
    # No topology file: multipath probes every host pair when the communicator is created, finds
    # the slow h1-h2 cable and plans around it, as it does from the topology file.
    out = os.path.join(work, "run")
    p = emulate(["run", "--case", "slow-link", "--probe", "--out", out, "--ringside", args.ringside,
                 "--algo", "ring,tree,multipath", "--sizes", "1M", "--iters", "2", "--warmup", "1"],
                prefix, timeout=180)
    check(p.returncode == 0, "ring, tree and multipath bench over slow-link with no topology file")
    with open(os.path.join(out, "rank0.err")) as f:
        said = f.read()
    check("multipath: " in said and "probe of every host pair" in said,
          "rank 0 planned from the probe: " + said.strip())
    trace = os.path.join(out, "trace.sqlite")
    db = sqlite3.connect(trace)
    meta = dict(db.execute("SELECT key, value FROM meta"))
    db.close()
    probe = meta.get("rank.0.multipath_probe", "")  # merged traces keep each rank's meta as rank.N.KEY
    rates = {}
    for part in probe.split("; ")[0].split(", "):
        m = re.match(r"10\.201\.0\.(\d)->10\.201\.0\.(\d) ([0-9.]+) MB/s$", part)
        if m:
            rates[(int(m.group(1)) - 1, int(m.group(2)) - 1)] = float(m.group(3))
    check(len(rates) == 12, "the trace meta has the 12 measured host pairs: %s" % probe)
    slow = [rates[k] for k in ((1, 2), (2, 1))]
    fast = [v for k, v in rates.items() if k not in ((1, 2), (2, 1))]
    check(max(slow) < 0.5 * min(fast),
          "the probe found h1-h2 slower than every other pair: %s vs %s MB/s" % (slow, fast))
    # The plan leaves h1-h2 out: its rings' transfers never cross it.
    used = trace_links(trace, "multipath")
    check(used and not ({(1, 2), (2, 1)} & set(used)),
          "multipath's transfers avoid h1-h2: %s" % sorted(used))
    with open(os.path.join(out, "bench.json")) as f:
        rows = json.load(f)["rows"]
    t = {r["algo"]: r["time_us"] for r in rows}
    check(t["multipath"] * 1.3 <= min(t["ring"], t["tree"]),
          "multipath %.1f ms at least 1.3x faster than the better of ring %.1f and tree %.1f ms" %
          (t["multipath"] / 1e3, t["ring"] / 1e3, t["tree"] / 1e3))


def scenario_multipath_switch(args, prefix, work):
    # One NIC a host to a switch: every pair measures the NIC's rate on its own, but all at once a
    # host receives one NIC's worth, not three. The ring is already optimal: multipath runs it.
    out = os.path.join(work, "run")
    p = emulate(["run", "--case", "switch", "--probe", "--out", out, "--ringside", args.ringside,
                 "--algo", "ring,multipath", "--sizes", "1M", "--iters", "3", "--warmup", "1"],
                prefix, timeout=180)
    check(p.returncode == 0, "ring and multipath bench over the switch with no topology file")
    with open(os.path.join(out, "rank0.err")) as f:
        said = f.read()
    check("runs as the ring" in said and "each host received" in said,
          "rank 0 found the NICs shared and runs the ring: " + said.strip())
    with open(os.path.join(out, "bench.json")) as f:
        t = {r["algo"]: r["time_us"] for r in json.load(f)["rows"]}
    # The same schedule as the ring: equal but for noise (the bound is loose for CI's machines).
    check(t["multipath"] <= 1.15 * t["ring"],
          "multipath %.1f ms, not slower than the ring %.1f ms" % (t["multipath"] / 1e3, t["ring"] / 1e3))


def scenario_ddp_multipath(args, prefix, work):
    py = "/usr/bin/python3"
    if subprocess.run([py, "-c", "import torch"], capture_output=True).returncode != 0:
        skip("no python3-torch for the DDP sample")
    sample = os.path.join(REPO, "samples", "ddp_train.py")
    losses, traces = {}, {}
    for algo in ("ring", "multipath"):
        out = os.path.join(work, algo)
        # emulate() puts --prefix last: here it must come before the job's "--".
        job = ["--", py, sample, "--steps", "8", "--hidden", "512", "--bucket-cap-mb", "4"]
        cmd = ["bash", EMULATE, "run-job", "--case", "square", "--ranks-per-host", "1", "--out", out,
               "--ringside", args.ringside, "--allreduce", algo, "--prefix", prefix] + job
        print("$ " + " ".join(cmd), flush=True)
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
        print(p.stdout, flush=True)
        if p.returncode == SKIP:
            skip(p.stdout.strip().splitlines()[-1] if p.stdout.strip() else "emulate.sh cannot run here")
        check(p.returncode == 0, "DDP with --allreduce %s over the emulated hosts" % algo)
        with open(os.path.join(out, "host0.out")) as f:
            losses[algo] = [l.split()[-1] for l in f if " loss " in l]
        traces[algo] = os.path.join(out, "trace.sqlite")
    check(losses["ring"] and losses["ring"] == losses["multipath"],
          "the same losses with ring and multipath: %s / %s" % (losses["ring"][-2:], losses["multipath"][-2:]))
    topo = os.path.join(work, "ring", "topology.txt")
    p = subprocess.run([args.ringside, "diff", "--format", "json", "--topology", topo,
                        traces["ring"], traces["multipath"]], capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, "diff ring multipath: " + p.stderr.strip())
    d = json.loads(p.stdout)
    big = [r for r in d["rows"] if r["op"] == "allreduce" and r["size_lo"] >= 1 << 20]
    check(big and all(r["speedup"] > 1.5 for r in big),
          "multipath faster at 1 MiB and up: %s" % [(r["size_lo"], r["speedup"]) for r in big])
    checks = [c for c in d["what_if_checks"] if "predicted multipath" in c]
    check(checks, "the ring trace's what-if predicted multipath: %s" % d["what_if_checks"])
    print("what-if: " + checks[0])


def scenario_multipath_stress(args, prefix, work):
    """Issue 29's failure on the emulated square: PyTorch's queue of tagged all-reduces on two
    worker threads a rank (gloo_collectives --workers 2), ranks 1-3 delayed at random, rerouted to
    multipath (six rings over the square's links): every call gets its own result on every rank."""
    if not args.gloo_sample or not os.path.exists(args.gloo_sample):
        skip("no gloo_collectives sample built")
    calls = int(os.environ.get("RINGSIDE_STRESS_CALLS", "120"))
    out = os.path.join(work, "stress")
    # Each host's Gloo device binds its own address (10.201.0.x on its loopback).
    wrap = ('GLOO_DEVICE_HOST=$(ip -4 -o addr show dev lo | grep -o "10[.]201[.]0[.][0-9]*" | head -1) '
            'exec "$0" "$@"')
    job = ["--", "bash", "-c", wrap, args.gloo_sample, "--workers", "2", "--iters", str(calls),
           "--jitter-ms", "300", "--bytes", str(1 << 20)]
    cmd = ["bash", EMULATE, "run-job", "--case", "square", "--ranks-per-host", "1", "--out", out,
           "--ringside", args.ringside, "--allreduce", "multipath", "--prefix", prefix] + job
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=280)
    print(p.stdout, flush=True)
    if p.returncode == SKIP:
        skip(p.stdout.strip().splitlines()[-1] if p.stdout.strip() else "emulate.sh cannot run here")
    for i in range(4):
        with open(os.path.join(out, "host%d.err" % i)) as f:
            err = f.read()
        check("malformed" not in err and "FAILED" not in err, "host %d: %s" % (i, err[-600:]))
    check(p.returncode == 0, "the job with --allreduce multipath over the emulated hosts")
    with open(os.path.join(out, "host0.out")) as f:
        text = f.read()
    check("OK allreduce ranks=4 calls=%d workers=2" % calls in text, "the sample's checks: " + text[-400:])
    db = sqlite3.connect(os.path.join(out, "trace.sqlite"))
    rows = db.execute("SELECT seq, count(DISTINCT rank), count(DISTINCT bytes) FROM collective "
                      "WHERE library = 'ringside-multipath' GROUP BY seq").fetchall()
    check(len(rows) == calls, "%d distinct rerouted calls, expected %d" % (len(rows), calls))
    check(all(r[1:] == (4, 1) for r in rows), "every call alike on every rank: %s" %
          [r for r in rows if r[1:] != (4, 1)][:5])
    plan = db.execute("SELECT value FROM meta WHERE key LIKE '%multipath_plan' ORDER BY key").fetchall()
    check(plan and "rings over" in plan[0][0], "a plan of several rings: %s" % plan)
    print("plan: " + plan[0][0])
    db.close()


def scenario_link_down(args, prefix, work):
    import threading
    import time
    out = os.path.join(work, "run")
    timeout_s = 8
    # A downed link: 16 MiB calls (about 0.35 s each at 200 Mbit/s, 40 of them), the diagonal
    # h1-h3 cut 7 s after rank 0 made its plan at communicator creation (then the alpha/beta
    # ping-pong, about 3 s, the checked and warm-up calls, then the timed calls): the cut falls
    # inside a timed call or the barrier before one.
    cut_at = []

    def cut():
        err = os.path.join(out, "rank0.err")
        for _ in range(1200):
            if os.path.exists(err) and "multipath:" in open(err).read():
                break
            time.sleep(0.1)
        time.sleep(7.0)
        subprocess.run(["ip", "-n", prefix + "-h1", "link", "set", "to-h3", "down"], check=False)
        cut_at.append(time.monotonic())
    cutter = threading.Thread(target=cut)
    cutter.start()
    p = emulate(["run", "--case", "square", "--out", out, "--ringside", args.ringside,
                 "--algo", "multipath", "--sizes", "16M", "--iters", "40", "--warmup", "1",
                 "--timeout-s", str(timeout_s)], prefix, timeout=180)
    end = time.monotonic()
    cutter.join()
    check(p.returncode != 0, "the bench failed once a link went down (exit %d)" % p.returncode)
    check(cut_at, "the link was cut during the run")
    # Every rank stops within its timeout after the cut (a call in flight, then the timeout, then
    # the abort reaching the others), never the store's 60 s.
    check(end - cut_at[0] < 2 * timeout_s + 10, "all ranks returned %.1f s after the cut" % (end - cut_at[0]))
    for i in range(4):
        with open(os.path.join(out, "rank%d.err" % i)) as f:
            err = [l for l in f.read().splitlines() if l.strip() and "multipath:" not in l]
        check(err, "rank %d said why it failed" % i)
        check(not any("Traceback" in l or "terminate called" in l or "Segmentation" in l for l in err),
              "rank %d failed cleanly: %s" % (i, err[-3:]))
        print("rank %d: %s" % (i, err[-1]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True,
                    choices=["slow-link", "square", "multipath-square", "multipath-ring-only",
                             "multipath-link-down", "ddp-multipath", "multipath-probe",
                             "multipath-switch", "multipath-stress"])
    ap.add_argument("--ringside", required=True)
    ap.add_argument("--gloo-sample", default="")
    args = ap.parse_args()

    if os.geteuid() != 0:
        skip("needs root to create network namespaces")
    for tool in ("ip", "tc", "unshare"):
        if shutil.which(tool) is None and not os.path.exists("/usr/sbin/" + tool):
            skip("'%s' not found" % tool)
    prefix = "rse%d" % os.getpid()  # unique per run: parallel runs never share a namespace
    work = tempfile.mkdtemp(prefix="ringside-e2e-topo-")
    try:
        every = {(i, j) for i in range(4) for j in range(4) if i != j}
        ring_both = SIDES | {(j, i) for i, j in SIDES}
        {"slow-link": scenario_slow_link, "square": scenario_square,
         "multipath-square": lambda *a: scenario_multipath(*a, "square", every),
         "multipath-ring-only": lambda *a: scenario_multipath(*a, "ring-only", ring_both),
         "multipath-link-down": scenario_link_down,
         "ddp-multipath": scenario_ddp_multipath,
         "multipath-probe": scenario_multipath_probe,
         "multipath-switch": scenario_multipath_switch,
         "multipath-stress": scenario_multipath_stress,
         }[args.scenario](args, prefix, work)
    finally:
        emulate(["down"], prefix)
        left = our_namespaces(prefix)
        if left:
            fail("namespaces left behind: %s" % left)
    shutil.rmtree(work, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
