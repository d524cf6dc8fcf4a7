"""The emulated cluster with a clock per host, for tests (standard library only).

samples/topology/emulate.sh builds 4 hosts h0..h3 (network namespaces, a full mesh of shaped
veth links); with --clocks each host also gets a time namespace whose CLOCK_MONOTONIC and
CLOCK_BOOTTIME are hours off the others', a wall clock some milliseconds off and optionally a
drift in ppm (libringside_clockshift.so). The truth lands in OUT/clock-truth.json:

  {"version": 1, "reference": ..., "model": ...,
   "hosts": [{"host": "h0", "index": 0, "ranks": [0, 1], "monotonic_offset_ns": ...,
              "boottime_offset_ns": ..., "wall_offset_ns": ..., "rate_ppm": ..., "rate": ...,
              "rate_origin_ns": ...}, ...]}

host monotonic = t + monotonic_offset_ns + (t + monotonic_offset_ns - rate_origin_ns) * ppm/1e6,
with t the machine's own CLOCK_MONOTONIC; host wall = machine wall + wall_offset_ns.

run_job() records a job 4 hosts x N ranks (one `ringside record --nnodes 4 --node-rank i` per
host, merged), run_bench() `ringside bench` one rank per host. Both raise Skip with the reason
when this machine cannot emulate (emulate.sh's exit 77: not root, no namespaces, no time
namespaces, ...), and return a ClusterRun.
"""
import json
import os
import sqlite3
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
EMULATE = os.path.join(REPO, "samples", "topology", "emulate.sh")
SKIP = 77


class Skip(Exception):
    pass


class EmulationFailed(AssertionError):
    pass


class ClusterRun:
    def __init__(self, out, output):
        self.out = out
        self.output = output  # emulate.sh's stdout and stderr
        self.trace = os.path.join(out, "trace.sqlite")
        self.truth_path = os.path.join(out, "clock-truth.json")
        self.truth = read_truth(out) if os.path.isfile(self.truth_path) else None

    def host_of_rank(self):
        """{rank: host name} from the truth."""
        return {r: h["host"] for h in self.truth["hosts"] for r in h["ranks"]}


def read_truth(out):
    with open(os.path.join(out, "clock-truth.json")) as f:
        return json.load(f)


def _clock_args(clocks, drift, mono_offsets_s, wall_offsets_ms, clockshift):
    args = []
    if clocks:
        args.append("--clocks")
        if mono_offsets_s:
            args += ["--mono-offsets-s", ",".join(str(s) for s in mono_offsets_s)]
        if wall_offsets_ms:
            args += ["--wall-offsets-ms", ",".join(str(s) for s in wall_offsets_ms)]
        if drift:
            args += ["--drift", f"{drift[0]}:{drift[1]}"]
        if clockshift:
            args += ["--clockshift", clockshift]
    return args


def _emulate(args, out, timeout):
    os.makedirs(out, exist_ok=True)
    cmd = ["bash", EMULATE] + [str(a) for a in args]
    print("$ " + " ".join(cmd), flush=True)
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired as e:
        # subprocess killed emulate.sh with SIGKILL: its exit trap never took the namespaces
        # down, and what runs inside them (a launcher waiting for a node that left) would hold
        # their ports for the next attempt. Take them down here.
        prefix = str(args[args.index("--prefix") + 1]) if "--prefix" in args else None
        if prefix:
            subprocess.run(["bash", EMULATE, "down", "--prefix", prefix], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=60)
        output = e.output.decode(errors="replace") if isinstance(e.output, bytes) else (e.output or "")
        raise EmulationFailed(f"emulate.sh did not finish in {timeout} s: {output[-3000:]}")
    print(p.stdout, flush=True)
    if p.returncode == SKIP:
        lines = p.stdout.strip().splitlines()
        raise Skip(lines[-1] if lines else "emulate.sh cannot run here")
    if p.returncode != 0:
        raise EmulationFailed(f"emulate.sh exited {p.returncode}:\n{p.stdout[-3000:]}")
    return ClusterRun(out, p.stdout)


def run_job(ringside, job, *, out, ranks_per_host=2, prefix="rsc", port=29650, case="square",
            clocks=True, drift=None, mono_offsets_s=None, wall_offsets_ms=None, clockshift=None,
            timeout=300, job_hosts=4, launcher=False, node_merge=False):
    """JOB (argv) on job_hosts emulated hosts x ranks_per_host, recorded and merged into out/.
    launcher: JOB starts its own ranks (torchrun), ranks_per_host only places them in the truth.
    node_merge: each host merges its own ranks (`record --node-merge`, into
    out/trace.sqlite.ranks/node-K.sqlite), then one merge of the node traces."""
    args = ["run-job", "--case", case, "--prefix", prefix, "--ringside", ringside, "--out", out,
            "--port", port, "--ranks-per-host", ranks_per_host, "--job-hosts", job_hosts]
    if launcher:
        args.append("--launcher")
    if node_merge:
        args.append("--node-merge")
    args += _clock_args(clocks, drift, mono_offsets_s, wall_offsets_ms, clockshift)
    return _emulate(args + ["--"] + list(job), out, timeout)


def run_bench(ringside, *, out, prefix="rsc", port=29660, case="square", sizes="1M", iters=2,
              algo="ring,tree", clocks=True, drift=None, mono_offsets_s=None,
              wall_offsets_ms=None, clockshift=None, timeout=300):
    """`ringside bench` one rank per emulated host, its trace merged into out/trace.sqlite."""
    args = ["run", "--case", case, "--prefix", prefix, "--ringside", ringside, "--out", out,
            "--port", port, "--sizes", sizes, "--iters", iters, "--algo", algo]
    args += _clock_args(clocks, drift, mono_offsets_s, wall_offsets_ms, clockshift)
    return _emulate(args, out, timeout)


def trace_ranks(trace):
    """[(rank, host, start_ns, start_unix_ns)] of a merged trace, by rank."""
    db = sqlite3.connect(f"file:{trace}?mode=ro", uri=True)
    try:
        return db.execute("SELECT rank, host, start_ns, start_unix_ns FROM rank "
                          "ORDER BY rank").fetchall()
    finally:
        db.close()
