"""End to end: numbers and strings in a trace never size what ringside allocates or writes.

One changed row used to make `report --format html` write gigabytes (a transfer's dst_rank of
4096: a 4097 x 4097 traffic matrix), a meta world_size of a million ended in std::bad_alloc, a
1 MiB name made `export --perfetto` write gigabytes, and `--topology /dev/zero` read without end
(issue 16, docs/schema.md "Reading safely"). Each case here runs `report` (text, html, json),
`diff` and `export --perfetto` (and `merge` for a rank file stating a world of a million) under a
1 GiB address-space limit and a 10 s timeout, and checks the exit status, the output's size and
the one line that names the row or the file.
Usage: hostile_sizes_e2e.py RINGSIDE [SANITIZER]
(SANITIZER: the build's RINGSIDE_SANITIZE; a sanitizer reserves terabytes of address space, so
there only the time and output limits apply.)
"""
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time

from bad_input_e2e import copy_and_edit as edited  # a copy of t.sqlite with SQL applied

MEMORY_LIMIT = 1 << 30
TIMEOUT_S = 10


def limit_memory():
    if len(sys.argv) > 2 and sys.argv[2]:
        return
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run(args, cwd):
    start = time.monotonic()
    try:
        r = subprocess.run(args, capture_output=True, timeout=TIMEOUT_S, cwd=cwd,
                           preexec_fn=limit_memory)
    except subprocess.TimeoutExpired as e:
        return None, time.monotonic() - start, e
    return r, time.monotonic() - start, None


class Checks:
    def __init__(self, ringside, tmp):
        self.ringside, self.tmp, self.failures = ringside, tmp, []

    def verb(self, args, max_bytes, want_rc=0, want_text=None):
        """Runs ringside ARGS; checks exit status, output size and (if given) a line of output."""
        what = " ".join(args)
        r, took, timeout = run([self.ringside] + args, self.tmp)
        if timeout is not None:
            self.failures.append(f"{what}: still running after {TIMEOUT_S} s")
            return
        out = r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")
        if r.returncode != want_rc:
            self.failures.append(f"{what}: exit {r.returncode}, want {want_rc}: {out[-300:]!r}")
        elif len(r.stdout) > max_bytes:
            self.failures.append(f"{what}: {len(r.stdout)} bytes of output, want <= {max_bytes}")
        elif "bad_alloc" in out or "out of memory" in out:
            self.failures.append(f"{what}: ran out of memory: {out[-300:]!r}")
        elif want_text is not None and want_text not in out:
            self.failures.append(f"{what}: no {want_text!r} in the output: {out[-400:]!r}")
        else:
            print(f"ok  {what}: {len(r.stdout)} bytes in {took:.2f} s")

    def every_verb(self, trace, max_bytes, want_text=None):
        for fmt in ("text", "html", "json"):
            self.verb(["report", "--format", fmt, trace], max_bytes, want_text=want_text)
        self.verb(["diff", "--format", "html", "t.sqlite", trace], max_bytes)
        self.verb(["export", "--perfetto", trace, "-o", "-"], max_bytes)


def rank_file(tmp, world):
    """Rank 0's part of the bench trace, as a rank file that states a world of `world` ranks."""
    name = "rank-0.sqlite"
    edited(tmp, name, "DELETE FROM rank WHERE rank != 0",
           f"UPDATE rank SET world_size = {world}",
           "DELETE FROM collective_data WHERE rank != 0",
           "DELETE FROM transfer_data WHERE rank != 0",
           "DELETE FROM meta", "INSERT INTO meta VALUES ('end_state', 'clean')")
    return name


def main():
    ringside = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([ringside, "bench", "--ranks", "3", "--algo", "ring", "--sizes", "4K",
                            "--iters", "2", "-o", "t.sqlite"], capture_output=True, text=True,
                           timeout=120, cwd=tmp)
        if r.returncode != 0:
            print(r.stdout, r.stderr)
            print(f"bench failed: exit {r.returncode}")
            return 1
        c = Checks(ringside, tmp)
        # A valid trace's outputs are far below 1 MB; a hostile one may add a little.
        limit = 2 << 20

        # One transfer's dst_rank beyond the world: the row is skipped with one warning.
        first = "(SELECT min(id) FROM transfer_data)"
        t = edited(tmp, "dst4096.sqlite",
                   f"UPDATE transfer_data SET dst_rank = 4096 WHERE id = {first}")
        c.every_verb(t, limit, "dst_rank 4096 is outside the world of 3 ranks; skipped")

        # A rank id of 2^31-1 in a collective and a transfer row.
        t = edited(tmp, "rankmax.sqlite",
                   "UPDATE collective_data SET rank = 2147483647 WHERE id = 3",
                   "UPDATE transfer_data SET src_rank = 2147483647 WHERE id = 5")
        c.every_verb(t, limit, "rank 2147483647 is outside the world of 3 ranks; skipped")

        # A meta world_size of a million: no world x world matrix, no million lanes.
        t = edited(tmp, "world1m.sqlite",
                   "UPDATE meta SET value = '1000000' WHERE key = 'world_size'")
        c.every_verb(t, limit, "traffic matrix left out: 1000000 ranks")

        # A world_size beyond any plausible world is ignored.
        t = edited(tmp, "world2g.sqlite",
                   "UPDATE meta SET value = '2147483647' WHERE key = 'world_size'")
        c.every_verb(t, limit, "meta world_size 2147483647 is more than 1048576 ranks; ignored")

        # 1 MiB strings in every name and in the rank rows: cut when read.
        big = "x" * (1 << 20)
        t = edited(tmp, "bigstr.sqlite", f"UPDATE string SET value = value || '{big}'",
                   f"UPDATE rank SET host = '{big}', command_line = '{big}'")
        c.every_verb(t, limit)

        # merge of a rank file that states a world of a million: the missing ranks as a range.
        rank0 = rank_file(tmp, 1000000)
        c.verb(["merge", "-q", "-o", "merged1m.sqlite", rank0], limit)
        con = sqlite3.connect(os.path.join(tmp, "merged1m.sqlite"))
        missing = con.execute("SELECT value FROM meta WHERE key = 'missing_ranks'").fetchone()
        con.close()
        if missing is None or missing[0] != "1-999999":
            c.failures.append(f"merge: missing_ranks {str(missing)[:100]!r}, want '1-999999'")
        else:
            print("ok  merge: missing_ranks 1-999999")
        c.every_verb("merged1m.sqlite", limit, "missing_ranks lists 999999 ranks; only the first 1024 are shown")

        # Topology files: regular files only, at most 16 MiB, one line of error.
        with open(os.path.join(tmp, "huge.topo"), "wb") as f:
            f.truncate(17 << 20)
        for topo, want in (("/dev/zero", "/dev/zero: not a regular file"),
                           ("huge.topo", "a topology file may have at most 16 MiB")):
            for verb in (["report", "--topology", topo, "t.sqlite"],
                         ["diff", "--topology", topo, "t.sqlite", "t.sqlite"]):
                c.verb(verb, 0, want_rc=1, want_text=want)

        for f in c.failures:
            print("FAIL", f)
        return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
