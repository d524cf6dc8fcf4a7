"""Shared helpers for ringside's end-to-end tests (standard library only).

Each test script is run by CTest as
    /usr/bin/python3 tests/e2e/<file>.py --scenario NAME --ringside PATH --preload PATH
        [--gloo-sample PATH] [--ddp-sample PATH] [--python PATH]
and exits 0 (pass), 1 (fail) or 77 (skipped; CTest's SKIP_RETURN_CODE) after printing why.
A scenario is a function taking a Ctx; it raises TestFailure (or AssertionError) to fail and
calls skip() when the machine cannot run it. Nothing ever passes silently.
"""

import argparse
import contextlib
import glob
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback

SKIP = 77

# Sanitizer runs (scripts/test.sh): a runtime that must come first in every job's LD_PRELOAD,
# e.g. libasan.so when the preload library is ASan-instrumented.
EXTRA_PRELOAD = os.environ.get("RINGSIDE_E2E_EXTRA_PRELOAD", "")

# Every collective ringside wraps in Gloo's function-style API, as the trace names them.
GLOO_OPS = ("allreduce", "broadcast", "allgather", "allgatherv", "reduce",
            "gather", "scatter", "alltoall", "alltoallv", "barrier")


class TestFailure(AssertionError):
    pass


class Skipped(Exception):
    pass


def skip(reason):
    raise Skipped(reason)


def check(cond, message):
    if not cond:
        raise TestFailure(message)


def check_eq(got, want, what):
    if got != want:
        raise TestFailure(f"{what}: got {got!r}, expected {want!r}")


# --------------------------------------------------------------------------- processes

class Result:
    """What a finished command left: exit status (shell convention: 128+N for signal N),
    stdout, stderr, wall time."""

    def __init__(self, argv, returncode, stdout, stderr, seconds):
        self.argv = argv
        self.raw_returncode = returncode
        self.returncode = 128 - returncode if returncode < 0 else returncode
        self.stdout = stdout
        self.stderr = stderr
        self.seconds = seconds

    def describe(self):
        return (f"command: {' '.join(self.argv)}\n"
                f"exit status: {self.returncode} ({self.seconds:.1f} s)\n"
                f"--- stdout (last 3000 chars)\n{self.stdout[-3000:]}\n"
                f"--- stderr (last 3000 chars)\n{self.stderr[-3000:]}")

    def expect(self, status=0):
        if self.returncode != status:
            raise TestFailure(f"expected exit status {status}\n{self.describe()}")
        return self


def _kill_group(proc):
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def run(argv, *, env=None, timeout=120, cwd=None, stdin=subprocess.DEVNULL):
    """Runs argv in its own process group; on timeout kills the whole group and fails
    (a hang is a bug: deadlock, lost wake-up, stuck writer)."""
    argv = [str(a) for a in argv]
    start = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace",
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        r = Result(argv, proc.returncode, out, err, time.monotonic() - start)
        raise TestFailure(f"timed out after {timeout} s (deadlock?)\n{r.describe()}")
    finally:
        if proc.poll() is None:
            _kill_group(proc)
    return Result(argv, proc.returncode, out, err, time.monotonic() - start)


def spawn(argv, *, env=None, cwd=None, stdout=None, stderr=None, preexec=None):
    """Starts argv in its own process group (so a test can signal it or its children)."""
    return subprocess.Popen([str(a) for a in argv], env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=stdout if stdout is not None else subprocess.PIPE,
                            stderr=stderr if stderr is not None else subprocess.PIPE,
                            text=True, errors="replace", start_new_session=True,
                            preexec_fn=preexec)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(**extra):
    """The test's environment without anything ringside reads, plus `extra`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("RINGSIDE_") and k not in ("LD_PRELOAD", "RANK", "WORLD_SIZE",
                                                         "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    if EXTRA_PRELOAD:
        env["LD_PRELOAD"] = EXTRA_PRELOAD
    env.update({k: str(v) for k, v in extra.items()})
    return env


def preload_value(preload):
    """LD_PRELOAD for a job traced by hand (the sanitizer runtime first when there is one)."""
    return f"{EXTRA_PRELOAD}:{preload}" if EXTRA_PRELOAD else preload


def children_of(pid):
    """Direct children of pid (Linux /proc)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        kids = children_of(todo.pop())
        out.extend(kids)
        todo.extend(kids)
    return out


def environ_of(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            items = f.read().split(b"\0")
    except OSError:
        return {}
    env = {}
    for item in items:
        if b"=" in item:
            k, _, v = item.partition(b"=")
            env[k.decode(errors="replace")] = v.decode(errors="replace")
    return env


def cmdline_of(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


# --------------------------------------------------------------------------- traces

class Trace:
    """A trace (rank file or merged file), opened read-only."""

    def __init__(self, path):
        check(os.path.isfile(path), f"trace {path} does not exist")
        self.path = path
        self.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)

    def close(self):
        self.db.close()

    def rows(self, sql, params=()):
        return self.db.execute(sql, params).fetchall()

    def scalar(self, sql, params=()):
        row = self.db.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def meta(self):
        return dict(self.rows("SELECT key, value FROM meta"))

    def quick_check(self):
        return self.scalar("PRAGMA quick_check")

    def ranks(self):
        return sorted(r for (r,) in self.rows("SELECT rank FROM rank") if r is not None)


def meta_list(value):
    """A comma separated meta value ('' or None: empty) as a sorted list of ints."""
    if value is None or str(value).strip() == "":
        return []
    return sorted(int(x) for x in str(value).split(",") if x.strip() != "")


def rank_files(folder):
    return sorted(glob.glob(os.path.join(folder, "rank-*.sqlite")))


def quick_check_file(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return db.execute("PRAGMA quick_check").fetchone()[0]
    finally:
        db.close()


def rank_of(path):
    """The rank a rank file's rank row names."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return db.execute("SELECT rank FROM rank").fetchone()[0]
    finally:
        db.close()


def rank_file_meta(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return dict(db.execute("SELECT key, value FROM meta").fetchall())
    finally:
        db.close()


# --------------------------------------------------------------------------- Gloo's algorithms
#
# What Debian's Gloo (0.0~git20220518) sends per function-style collective, derived from its
# sources and confirmed with traces of gloo_collectives (see README "What Gloo sends").
# Every function returns {(src, dst): [bytes of each message]} for the whole call on all ranks.

def _round_up(x, m):
    return (x + m - 1) // m * m


def _check_two_segments(per_rank, n, total_bytes, max_segment):
    # Above 2 * n * max_segment bytes Gloo uses more than two segments per rank and its
    # message pattern is not modelled here (never needed by the tests); refuse, don't guess.
    if per_rank != 2:
        raise ValueError(f"ring model covers buffers up to {2 * n * max_segment} bytes on {n} "
                         f"ranks, not {total_bytes}")


def _ring_segments(n, total_bytes, elem_size, max_segment):
    """How Gloo's ring cuts the buffer: (segment bytes, number of segments, segments per rank)."""
    seg_max = elem_size * (max_segment // elem_size)
    seg = _round_up(min((total_bytes + 2 * n - 1) // (2 * n), seg_max), elem_size)
    num = _round_up(max((total_bytes + seg - 1) // seg, 2 * n), n)
    per_rank = num // n
    _check_two_segments(per_rank, n, total_bytes, max_segment)
    return seg, num, per_rank


def ring_allreduce_messages(n, total_bytes, elem_size, max_segment=1024 * 1024):
    """Gloo's ring allreduce: a reduce-scatter then an allgather, both around the ring in the
    direction rank -> rank-1 (every rank sends to rank-1 and receives from rank+1). The buffer is
    cut into numSegments segments (>= 2 per rank); each phase issues numSegments-2 sends per rank,
    skipping segments past the end of the buffer."""
    msgs = {}
    if n == 1:
        return msgs
    seg, num, per_rank = _ring_segments(n, total_bytes, elem_size, max_segment)
    for r in range(n):
        dst = (r - 1) % n
        for first in ((r + 1) * per_rank, r * per_rank):  # reduce-scatter, allgather
            for i in range(num - 2):
                off = ((first + i) * seg) % (num * seg)
                length = min(seg, total_bytes - off)
                if length > 0:
                    msgs.setdefault((r, dst), []).append(length)
    return msgs


def broadcast_messages(n, nbytes, root):
    """Gloo's broadcast: a binomial tree on ranks renumbered so the root is 0; in step i every
    virtual rank v < 2^i sends the whole buffer to v + 2^i."""
    msgs = {}
    step = 1
    while step < n:
        for v in range(step):
            if v + step < n:
                msgs.setdefault(((v + root) % n, (v + step + root) % n), []).append(nbytes)
        step *= 2
    return msgs


def allgather_messages(n, in_bytes):
    """Ring rank -> rank+1, each block sent as two halves: 2(n-1) messages per rank."""
    msgs = {}
    if n == 1:
        return msgs
    halves = [in_bytes // 2, in_bytes - in_bytes // 2]
    for r in range(n):
        msgs[(r, (r + 1) % n)] = [halves[i & 1] for i in range(2 * (n - 1))]
    return msgs


def allgatherv_messages(n, counts_bytes):
    """Ring rank -> rank+1; in step i rank r forwards block (r - i) mod n."""
    msgs = {}
    for r in range(n):
        for i in range(n - 1):
            msgs.setdefault((r, (r + 1) % n), []).append(counts_bytes[(r - i) % n])
    return msgs


def reduce_messages(n, total_bytes, elem_size, root, max_segment=1024 * 1024):
    """Gloo's reduce: the reduce-scatter half of the ring allreduce (rank -> rank-1), then every
    rank but the root sends its reduced chunk (if not empty) to the root."""
    msgs = {}
    if n == 1:
        return msgs
    seg, num, per_rank = _ring_segments(n, total_bytes, elem_size, max_segment)
    chunk = per_rank * seg
    for r in range(n):
        for i in range(num - 2):
            off = (((r + 1) * per_rank + i) * seg) % (num * seg)
            length = min(seg, total_bytes - off)
            if length > 0:
                msgs.setdefault((r, (r - 1) % n), []).append(length)
    for r in range(n):
        if r == root:
            continue
        length = min(chunk, total_bytes - r * chunk)
        if length > 0:
            msgs.setdefault((r, root), []).append(length)
    return msgs


def gather_messages(n, in_bytes, root):
    return {(r, root): [in_bytes] for r in range(n) if r != root}


def scatter_messages(n, block_bytes, root):
    return {(root, r): [block_bytes] for r in range(n) if r != root}


def alltoallv_messages(n, bytes_from_to):
    """Every rank sends its block for each other rank directly; bytes_from_to(src, dst)."""
    return {(s, d): [bytes_from_to(s, d)] for s in range(n) for d in range(n) if s != d}


def barrier_messages(n):
    """Dissemination barrier: in round k every rank sends an empty message to rank + 2^k."""
    msgs = {}
    d = 1
    while d < n:
        for r in range(n):
            msgs.setdefault((r, (r + d) % n), []).append(0)
        d *= 2
    return msgs


def sum_bytes(msgs):
    return {link: sum(sizes) for link, sizes in msgs.items()}


# --------------------------------------------------------------------------- test driver

class Ctx:
    """What a scenario gets: tool paths, a scratch folder, helpers bound to both."""

    def __init__(self, args, scratch):
        self.ringside = args.ringside
        self.preload = args.preload
        self.gloo_sample = args.gloo_sample
        self.ddp_sample = args.ddp_sample
        self.python = args.python
        self.scratch = scratch

    def path(self, *parts):
        return os.path.join(self.scratch, *parts)

    def mkdir(self, *parts):
        p = self.path(*parts)
        os.makedirs(p, exist_ok=True)
        return p

    # -- requirements (skip with a reason when the machine lacks something)

    def need_ringside(self):
        check(self.ringside and os.access(self.ringside, os.X_OK),
              f"ringside binary not found or not executable: {self.ringside!r}")

    def need_preload(self):
        check(self.preload and os.path.isfile(self.preload),
              f"preload library not found: {self.preload!r}")

    def need_gloo_sample(self):
        if not self.gloo_sample or not os.access(self.gloo_sample, os.X_OK):
            skip("the gloo_collectives sample was not built (libgloo-dev not found at configure time)")

    def need_torch(self):
        if not self.python or not os.access(self.python, os.X_OK):
            skip(f"no system python at {self.python!r}")
        probe = run([self.python, "-c",
                     "import torch, torch.distributed as d; "
                     "assert d.is_available() and d.is_gloo_available(); print(torch.__version__)"],
                    timeout=120)
        if probe.returncode != 0:
            skip(f"{self.python} cannot import torch with Gloo (install python3-torch): "
                 f"{probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else probe.returncode}")
        return probe.stdout.strip()

    def need_ddp_sample(self):
        check(self.ddp_sample and os.path.isfile(self.ddp_sample),
              f"DDP sample not found: {self.ddp_sample!r}")
        return self.need_torch()

    # -- running things

    def record(self, record_args, command, *, timeout=180, env=None, cwd=None):
        """`ringside record RECORD_ARGS -- COMMAND`."""
        self.need_ringside()
        return run([self.ringside, "record", *record_args, "--", *command],
                   env=env if env is not None else clean_env(), timeout=timeout,
                   cwd=cwd or self.scratch)

    def gloo_env(self, rank, world, store_dir, **extra):
        return clean_env(RANK=rank, WORLD_SIZE=world, LOCAL_RANK=rank,
                         MASTER_ADDR="127.0.0.1", MASTER_PORT=extra.pop("MASTER_PORT", 29500),
                         GLOO_STORE_DIR=store_dir, **extra)

    def start_ranks(self, world, command, *, preload=True, rank_dir=None, extra_env=None,
                    store_dir=None, preexec=None, stdout=None):
        """Starts `world` processes of `command` by hand with torchrun-style env (and
        LD_PRELOAD=the preload library when `preload`); returns the Popen objects."""
        store_dir = store_dir or tempfile.mkdtemp(prefix="store-", dir=self.scratch)
        port = free_port()
        procs = []
        for r in range(world):
            env = self.gloo_env(r, world, store_dir, MASTER_PORT=port)
            if preload:
                self.need_preload()
                env["LD_PRELOAD"] = preload_value(self.preload)
                env["RINGSIDE_DIR"] = rank_dir or self.mkdir("ranks")
            env.update({k: str(v) for k, v in (extra_env or {}).items()})
            out = stdout(r) if stdout is not None else None
            procs.append(spawn(command, env=env, cwd=self.scratch, preexec=preexec, stdout=out))
        return procs


def wait_all(procs, timeout):
    """Waits for every Popen; kills all their groups and fails on timeout. Returns Results."""
    deadline = time.monotonic() + timeout
    results = []
    for p in procs:
        left = max(0.1, deadline - time.monotonic())
        try:
            out, err = p.communicate(timeout=left)
        except subprocess.TimeoutExpired:
            for q in procs:
                _kill_group(q)
            raise TestFailure(f"processes still running after {timeout} s (deadlock?): "
                              f"{' '.join(p.args)}")
        results.append(Result(p.args, p.returncode, out or "", err or "", 0.0))
    return results


def main(scenarios, argv=None):
    """Parses the common arguments, runs one scenario, maps the outcome to an exit status."""
    p = argparse.ArgumentParser()
    p.add_argument("--scenario", required=True, choices=sorted(scenarios))
    p.add_argument("--ringside", default=os.environ.get("RINGSIDE_E2E_RINGSIDE", ""))
    p.add_argument("--preload", default=os.environ.get("RINGSIDE_E2E_PRELOAD", ""))
    p.add_argument("--gloo-sample", default=os.environ.get("RINGSIDE_E2E_GLOO_SAMPLE", ""))
    p.add_argument("--ddp-sample", default=os.environ.get("RINGSIDE_E2E_DDP_SAMPLE", ""))
    p.add_argument("--python", default="/usr/bin/python3")
    p.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = p.parse_args(argv)

    scratch = tempfile.mkdtemp(prefix=f"ringside-e2e-{args.scenario}-")
    ctx = Ctx(args, scratch)
    status = 1
    try:
        scenarios[args.scenario](ctx)
        print(f"PASS {args.scenario}")
        status = 0
    except Skipped as e:
        print(f"SKIP {args.scenario}: {e}")
        status = SKIP
    except AssertionError as e:
        print(f"FAIL {args.scenario}: {e}")
        traceback.print_exc()
    except Exception:  # a bug in the test or an unexpected tool behaviour: a failure
        print(f"FAIL {args.scenario}: unexpected exception")
        traceback.print_exc()
    finally:
        if status == 1 or args.keep:
            print(f"scratch folder kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    sys.stdout.flush()
    return status


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True)


def read_json(path):
    with open(path) as f:
        return json.load(f)


# --------------------------------------------------------------------------- trace checks

class Call:
    """One collective call as recorded on one rank."""
    __slots__ = ("id", "rank", "comm", "seq", "op", "bytes", "count", "dtype", "root",
                 "status", "start_ns", "end_ns")

    def __init__(self, row):
        for name, value in zip(self.__slots__, row):
            setattr(self, name, value)


def calls(trace, where="1=1", params=()):
    """Collective calls ordered by rank, comm, seq."""
    return [Call(r) for r in trace.rows(
        "SELECT id, rank, comm, seq, op, bytes, count, dtype, root, status, start_ns, end_ns "
        f"FROM collective WHERE {where} ORDER BY rank, comm, seq", params)]


def calls_by_key(trace, where="1=1", params=()):
    """{(comm, seq): {rank: Call}}"""
    out = {}
    for c in calls(trace, where, params):
        out.setdefault((c.comm, c.seq), {})[c.rank] = c
    return out


def check_seq_matches(trace, world, *, common_prefix_only=False):
    """comm+seq identify one call: every rank of the world recorded it, with the same op (and
    root). With common_prefix_only (a rank died, the others failed wherever they were), only
    the calls below the smallest last seq of any rank are checked."""
    by_key = calls_by_key(trace)
    check(by_key, "no collective calls recorded")
    limit = {}
    if common_prefix_only:
        for comm, r, last in trace.rows("SELECT comm, rank, max(seq) FROM collective "
                                        "GROUP BY comm, rank"):
            limit[comm] = min(limit.get(comm, last), last)
    for (comm, seq), per_rank in sorted(by_key.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        if common_prefix_only and seq >= limit.get(comm, -1):
            continue
        missing = set(range(world)) - set(per_rank)
        check(not missing, f"call comm={comm} seq={seq} ({next(iter(per_rank.values())).op}) "
                           f"missing on ranks {sorted(missing)}")
        ops = {c.op for c in per_rank.values()}
        check(len(ops) == 1, f"call comm={comm} seq={seq} has different ops across ranks: {ops}")
        roots = {c.root for c in per_rank.values()}
        check(len(roots) == 1, f"call comm={comm} seq={seq} has different roots: {roots}")
    return by_key


def element_size(call):
    sizes = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "i8": 1, "u8": 1, "i32": 4, "i64": 8,
             "float32": 4, "float64": 8, "int32": 4, "int64": 8}
    if call.dtype in sizes:
        return sizes[call.dtype]
    if call.count and call.bytes and call.bytes % call.count == 0:
        return call.bytes // call.count
    return 1


def expected_messages(op, world, per_rank):
    """What Gloo sends for one call, from the calls' recorded sizes. None: not modelled."""
    any_call = per_rank[min(per_rank)]
    nbytes, root = any_call.bytes, any_call.root
    if op == "allreduce":
        return ring_allreduce_messages(world, nbytes, element_size(any_call))
    if op == "broadcast":
        return broadcast_messages(world, nbytes, root)
    if op == "allgather":
        return allgather_messages(world, nbytes)
    if op == "allgatherv":
        return allgatherv_messages(world, [per_rank[r].bytes for r in range(world)])
    if op == "reduce":
        return reduce_messages(world, nbytes, element_size(any_call), root)
    if op == "gather":
        return gather_messages(world, nbytes, root)
    if op == "scatter":
        # A non-root rank's payload is its block; the root's may be counted as all blocks.
        return scatter_messages(world, min(c.bytes for c in per_rank.values()), root)
    if op == "alltoall":
        return alltoallv_messages(world, lambda s, d: nbytes // world)
    if op == "barrier":
        return barrier_messages(world)
    return None


def recorded_messages(trace, side="send"):
    """{(comm, seq): {(src, dst): [bytes...]}} from the transfer view, for one side."""
    rows = trace.rows(
        "SELECT c.comm, c.seq, t.src_rank, t.dst_rank, t.bytes FROM transfer AS t "
        "JOIN collective AS c ON c.id = t.collective_id WHERE t.side = ? ORDER BY t.id", (side,))
    out = {}
    for comm, seq, src, dst, nbytes in rows:
        out.setdefault((comm, seq), {}).setdefault((src, dst), []).append(nbytes)
    return out


def check_transfers(trace, world, by_key, *, ops=None, overrides=None):
    """For every complete call whose op Gloo's model covers: the directed links with side='send'
    rows are exactly the model's, and the bytes sent on each link add up to the model's.
    `overrides` maps op -> function(per_rank) -> messages, for ops the model can't derive from
    the recorded sizes (alltoallv). Returns how many calls were checked per op."""
    sent = recorded_messages(trace, "send")
    received = recorded_messages(trace, "recv")
    checked = {}
    for key, per_rank in by_key.items():
        op = per_rank[min(per_rank)].op
        if ops is not None and op not in ops:
            continue
        if len(per_rank) != world:
            continue
        fn = (overrides or {}).get(op)
        want = fn(per_rank) if fn else expected_messages(op, world, per_rank)
        if want is None:
            continue
        got = sent.get(key, {})
        if op == "barrier" and not got:
            continue  # a tracer may skip empty messages; when it records them they must fit
        want_links = {link for link, sizes in want.items()}
        got_links = set(got)
        check(got_links == want_links,
              f"{op} comm={key[0]} seq={key[1]} bytes={per_rank[min(per_rank)].bytes} "
              f"root={per_rank[min(per_rank)].root}: send links {sorted(got_links)}, "
              f"expected {sorted(want_links)}")
        check(sum_bytes(got) == sum_bytes(want),
              f"{op} comm={key[0]} seq={key[1]}: bytes per link {sorted(sum_bytes(got).items())}, "
              f"expected {sorted(sum_bytes(want).items())}")
        got_recv = received.get(key, {})
        if got_recv:
            check(sum_bytes(got_recv) == sum_bytes(want),
                  f"{op} comm={key[0]} seq={key[1]}: received bytes per link "
                  f"{sorted(sum_bytes(got_recv).items())}, expected {sorted(sum_bytes(want).items())}")
        checked[op] = checked.get(op, 0) + 1
    return checked
