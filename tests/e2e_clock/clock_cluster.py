"""tests/e2e_clock/clock_cluster.py: several "hosts" with their own clocks on one machine.

Each emulated host is a process tree in its own time namespace (`unshare --time --fork
--monotonic S --boottime S`: its own CLOCK_MONOTONIC, hours from the others', as another
machine's), with its own hostname (`--uts`) and, through Debian's libfaketime, a wall clock off
by milliseconds (FAKETIME="+0.008", FAKETIME_DONT_FAKE_MONOTONIC=1), optionally stepped while it
runs (FAKETIME read from a file that changes), and optionally a monotonic clock that runs fast
(samples/topology/clockshift.cpp, a clock_gettime shim: raw = t0 + (real - t0) * rate, t0 given
by the test; libfaketime's own rate rebases CLOCK_MONOTONIC onto its fake wall clock, which no
host does).

The truth: host i's raw monotonic time is true + offset_i (+ the drift term); the reference
time line is host 0's clock. truth_f(host, raw) is what aligned - raw must be.

Standard library only. Needs root (time and UTS namespaces) and libfaketime: can_run() says why
not.
"""
import os
import shutil
import subprocess
import time

FAKETIME_LIBS = ["/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
                 "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"]


def faketime_lib():
    for lib in FAKETIME_LIBS:
        if os.path.exists(lib):
            return lib
    return None


def can_run():
    """None when this machine can emulate hosts' clocks, else the reason."""
    if os.geteuid() != 0:
        return "needs root for time and UTS namespaces"
    if shutil.which("unshare") is None:
        return "unshare (util-linux) not found"
    if faketime_lib() is None:
        return "libfaketime not found (Debian package faketime)"
    r = subprocess.run(["unshare", "--time", "--fork", "--monotonic", "3600", "--boottime", "3600",
                        "--uts", "cat", "/proc/self/timens_offsets"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0 or "3600" not in r.stdout:
        return "time namespaces are not available here (unshare --time: %s)" % r.stdout.strip()
    return None


class Host:
    def __init__(self, index, mono_s, wall="+0", rate=None, step=None):
        self.index = index
        self.name = "h%d" % index
        self.mono_s = mono_s      # time namespace offset of CLOCK_MONOTONIC, seconds
        self.wall = wall          # libfaketime offset of the wall clock, e.g. "+0.008"
        self.rate = rate          # e.g. 1.00002: every clock of the process runs that fast
        self.step = step          # (after_s, new_wall): the wall clock steps while running
        self.spawned_mono_ns = None  # the root namespace's monotonic time at spawn

    def t0_ns(self):
        """Where a drifting clock starts to drift, on the host's own monotonic clock."""
        return self.spawned_mono_ns + self.mono_s * 1_000_000_000


def _monotonic_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def spawn(host, argv, env, scratch, log, rate_lib=None):
    """Starts argv as host `host`; returns the Popen."""
    lib = faketime_lib()
    env = dict(env)
    preload = env.get("LD_PRELOAD", "")
    env["LD_PRELOAD"] = ((lib or "") + " " + preload).strip()
    host.spawned_mono_ns = _monotonic_ns()
    if host.rate is not None:
        # The shim first: it reads the clocks through libfaketime (wall) and libc (monotonic).
        env["LD_PRELOAD"] = rate_lib + " " + env["LD_PRELOAD"]
        env["RINGSIDE_CLOCKSHIFT_PPM"] = "%.6f" % ((host.rate - 1) * 1e6)
        env["RINGSIDE_CLOCKSHIFT_ORIGIN_NS"] = str(host.t0_ns())
    env["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
    if host.step is not None:
        # Read again every second: the step lands within a second of the file's change.
        stamp = os.path.join(scratch, "faketime-%s" % host.name)
        with open(stamp, "w") as f:
            f.write(host.wall + "\n")
        env["FAKETIME_TIMESTAMP_FILE"] = stamp
        env["FAKETIME_CACHE_DURATION"] = "1"
        env.pop("FAKETIME", None)
    else:
        env["FAKETIME"] = host.wall
    cmd = ["unshare", "--time", "--fork", "--monotonic", str(host.mono_s), "--boottime",
           str(host.mono_s), "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', host.name] + argv
    return subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)


def apply_steps(hosts, scratch, started):
    """Writes each stepping host's new wall offset once its time has come (call in a loop)."""
    now = time.monotonic() - started
    for h in hosts:
        if h.step is not None and now >= h.step[0] and not getattr(h, "stepped", False):
            with open(os.path.join(scratch, "faketime-%s" % h.name), "w") as f:
                f.write(h.step[1] + "\n")
            h.stepped = True


def truth_f(hosts, host, raw_ns):
    """aligned - raw for a raw time of `host`, on host 0's clock (the reference)."""
    ref = hosts[0]
    f = (ref.mono_s - host.mono_s) * 1_000_000_000
    if host.rate is not None:
        # clockshift.cpp: raw = t0 + (real - t0) * rate.
        t0 = host.t0_ns()
        real = t0 + (raw_ns - t0) / host.rate
        f += real - raw_ns
    return f


def model_f(db, rank, raw_ns):
    """aligned - raw of the trace's clock model (as the views compute it)."""
    row = db.execute(
        "SELECT p.offset_ns + CAST(round((?1 - p.ref_ns) * p.rate) AS INTEGER) FROM clock_rank AS k"
        " JOIN clock_segment AS p ON p.domain = k.domain WHERE k.rank = ?2 AND p.lo_ns <= ?1"
        " ORDER BY p.lo_ns DESC LIMIT 1", (raw_ns, rank)).fetchone()
    return row[0] if row else 0
