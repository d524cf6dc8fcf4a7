"""Bad input to the `ringside` command line: one line on stderr, a non-zero exit status that is
not a signal's (< 128), never a crash or a hang (README.md's exit statuses; docs/schema.md,
"Reading safely").

Scenarios:
  cli-no-command       `ringside`, `ringside record`, `ringside record --`, `ringside record -o x`
  cli-unknown-flag     unknown flags and verbs, bad flag values
  merge-bad-input      empty, text, random, fake-SQLite, foreign-SQLite, missing and folder inputs
  merge-damaged-trace  a real rank file truncated, from a newer schema, and with bit flips
  merge-keep-going-corrupt  merge -k lists a damaged rank file as skipped; the report says so
"""

import os
import random
import shutil
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as u  # noqa: E402


def expect_usage_error(ctx, args, what, *, one_line=True):
    res = u.run([ctx.ringside, *args], env=u.clean_env(), timeout=60, cwd=ctx.scratch)
    u.check(0 < res.returncode < 128,
            f"{what}: exit status {res.returncode}, expected an error below 128\n{res.describe()}")
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    if one_line:
        u.check_eq(len(lines), 1, f"{what}: lines on stderr ({lines})")
    else:
        u.check(lines, f"{what}: nothing on stderr")
    u.check("Traceback" not in res.stderr and "terminate called" not in res.stderr,
            f"{what}: crash text on stderr: {res.stderr!r}")
    return res


def cli_no_command(ctx):
    ctx.need_ringside()
    # Without a verb, printing the usage (several lines) is fine.
    expect_usage_error(ctx, [], "`ringside` without a verb", one_line=False)
    expect_usage_error(ctx, ["record"], "`ringside record` without a command")
    expect_usage_error(ctx, ["record", "--"], "`ringside record --` without a command")
    expect_usage_error(ctx, ["record", "-o", ctx.path("x.sqlite")],
                       "`ringside record -o x` without a command")
    expect_usage_error(ctx, ["merge"], "`ringside merge` without inputs")


def cli_unknown_flag(ctx):
    ctx.need_ringside()
    expect_usage_error(ctx, ["--no-such-flag"], "unknown global flag")
    expect_usage_error(ctx, ["frobnicate"], "unknown verb")
    expect_usage_error(ctx, ["record", "--no-such-flag", "--", "/bin/true"], "unknown record flag")
    expect_usage_error(ctx, ["record", "--ranks", "zero", "--", "/bin/true"], "--ranks zero")
    expect_usage_error(ctx, ["record", "--ranks", "-3", "--", "/bin/true"], "--ranks -3")
    expect_usage_error(ctx, ["record", "--ranks"], "--ranks without a value")
    expect_usage_error(ctx, ["merge", "--no-such-flag", ctx.path("a.sqlite")], "unknown merge flag")
    expect_usage_error(ctx, ["simulate"], "simulate without a trace or --sizes")
    expect_usage_error(ctx, ["simulate", "--sizes", "1M", "--inter-bw", "fast"], "simulate --inter-bw fast")
    expect_usage_error(ctx, ["simulate", "--sizes", "1M", "--ranks", "1"], "simulate --ranks 1")
    expect_usage_error(ctx, ["simulate", "--sizes", "0"], "simulate --sizes 0")
    # simulate with sizes: every rank count of the range, each algorithm, valid JSON.
    res = u.run([ctx.ringside, "simulate", "--sizes", "4M,1M", "--ranks", "8:64", "--format", "json"],
                env=u.clean_env(), timeout=60, cwd=ctx.scratch)
    u.check_eq(res.returncode, 0, f"simulate --format json\n{res.describe()}")
    import json
    doc = json.loads(res.stdout)
    u.check_eq([s["ranks"] for s in doc["scales"]], [8, 16, 32, 64], "simulated rank counts")
    u.check(all([a["algorithm"] for a in s["algorithms"]] == ["ring", "tree", "multipath"] and
                all(a["step_ns"] > 0 for a in s["algorithms"]) for s in doc["scales"]),
            f"simulate rows: {doc['scales']}")
    # The job was never started: nothing ran, nothing written.
    u.check_eq(sorted(os.listdir(ctx.scratch)), [], "files left by rejected command lines")


def expect_merge_error(ctx, path, what, *, allow_success=False):
    out = ctx.path("merged.sqlite")
    if os.path.exists(out):
        os.remove(out)
    res = u.run([ctx.ringside, "merge", "-o", out, path], env=u.clean_env(), timeout=60,
                cwd=ctx.scratch)
    u.check(res.raw_returncode >= 0 and res.returncode < 128,
            f"merge of {what}: died with status {res.returncode}\n{res.describe()}")
    if allow_success and res.returncode == 0:
        return res
    u.check(res.returncode != 0, f"merge of {what} succeeded\n{res.describe()}")
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    u.check_eq(len(lines), 1, f"merge of {what}: lines on stderr ({lines})")
    return res


def merge_bad_input(ctx):
    ctx.need_ringside()
    rnd = random.Random(20240601)
    cases = []

    def make(name, data):
        p = ctx.path(name)
        with open(p, "wb") as f:
            f.write(data)
        cases.append((p, name))
    make("empty.sqlite", b"")
    make("text.sqlite", b"this is not a trace\n" * 20)
    make("random.sqlite", bytes(rnd.getrandbits(8) for _ in range(64 * 1024)))
    make("fake-header.sqlite", b"SQLite format 3\0" + bytes(rnd.getrandbits(8) for _ in range(8192)))
    foreign = ctx.path("foreign.sqlite")
    db = sqlite3.connect(foreign)
    db.executescript("CREATE TABLE meta(key TEXT, value TEXT); INSERT INTO meta VALUES('a','b');"
                     "CREATE TABLE pets(name TEXT); INSERT INTO pets VALUES('rex');")
    db.commit()
    db.close()
    cases.append((foreign, "a foreign SQLite database"))
    cases.append((ctx.path("does-not-exist.sqlite"), "a missing file"))
    cases.append((ctx.mkdir("a-folder.sqlite"), "a folder"))
    for path, what in cases:
        expect_merge_error(ctx, path, what)
        # Every verb that reads a trace names the file once, then why ("PATH: not a ringside
        # trace (...)", not "PATH: not a ringside trace: PATH: ...").
        for argv in (["report", path], ["diff", path, path],
                     ["export", "--perfetto", path, "-o", ctx.path("x.json")]):
            res = u.run([ctx.ringside, *argv], env=u.clean_env(), timeout=60, cwd=ctx.scratch)
            u.check(res.returncode != 0, f"{argv[0]} of {what} succeeded\n{res.describe()}")
            line = res.stderr.strip()
            u.check_eq(line.count(path + ":"), 1, f"{argv[0]} of {what}: the path once in {line!r}")


def real_rank_file(ctx):
    """A genuine rank file from a short traced run of the C++ sample (preload, no CLI)."""
    ctx.need_gloo_sample()
    rank_dir = ctx.mkdir("ranks")
    results = u.wait_all(ctx.start_ranks(2, [ctx.gloo_sample, "--iters", "3", "--bytes", "512"],
                                         rank_dir=rank_dir), timeout=120)
    for res in results:
        res.expect(0)
    files = u.rank_files(rank_dir)
    u.check_eq(len(files), 2, "rank files of the short traced run")
    # Sanity: the genuine file merges.
    res = u.run([ctx.ringside, "merge", "-o", ctx.path("good.sqlite"), files[0]],
                env=u.clean_env(), timeout=60)
    u.check_eq(res.returncode, 0, f"merge of a genuine rank file\n{res.describe()}")
    return files[0]


def merge_damaged_trace(ctx):
    ctx.need_ringside()
    good = real_rank_file(ctx)
    with open(good, "rb") as f:
        data = f.read()

    truncated = ctx.path("truncated.sqlite")
    with open(truncated, "wb") as f:
        f.write(data[:len(data) // 2])
    expect_merge_error(ctx, truncated, "a rank file cut in half")

    header_only = ctx.path("header-only.sqlite")
    with open(header_only, "wb") as f:
        f.write(data[:100])
    expect_merge_error(ctx, header_only, "the first 100 bytes of a rank file")

    newer = ctx.path("newer.sqlite")
    shutil.copy(good, newer)
    db = sqlite3.connect(newer)
    version = db.execute("PRAGMA user_version").fetchone()[0]
    db.execute(f"PRAGMA user_version = {version + 100}")
    db.commit()
    db.close()
    expect_merge_error(ctx, newer, f"a rank file of schema version {version + 100}")

    # Bit flips anywhere: an error or a success, never a crash or a hang.
    rnd = random.Random(7)
    flipped = ctx.path("flipped.sqlite")
    for _ in range(25):
        buf = bytearray(data)
        for _ in range(8):
            pos = rnd.randrange(len(buf))
            buf[pos] ^= 1 << rnd.randrange(8)
        with open(flipped, "wb") as f:
            f.write(buf)
        expect_merge_error(ctx, flipped, "a rank file with 8 flipped bits", allow_success=True)


def merge_keep_going_corrupt(ctx):
    """merge -k over two rank files, rank 1's damaged: the trace lists the file as skipped (with
    why), and the report and the summary say rank 1's file was unreadable, not missing."""
    ctx.need_ringside()
    ctx.need_gloo_sample()
    rank_dir = ctx.mkdir("ranks")
    results = u.wait_all(ctx.start_ranks(2, [ctx.gloo_sample, "--iters", "2", "--bytes", "256"],
                                         rank_dir=rank_dir), timeout=60)
    for res in results:
        res.expect(0)
    files = u.rank_files(rank_dir)
    u.check_eq(len(files), 2, "rank files of the short traced run")
    damaged = next(f for f in files if u.rank_of(f) == 1)
    with open(damaged, "r+b") as f:
        f.truncate(os.path.getsize(damaged) // 2)
    out = ctx.path("merged.sqlite")
    res = u.run([ctx.ringside, "merge", "-k", "-o", out, rank_dir], env=u.clean_env(), timeout=30)
    u.check_eq(res.returncode, 0, f"merge -k with one damaged rank file\n{res.describe()}")
    name = os.path.basename(damaged)
    u.check("UNREADABLE RANK FILES" in res.stderr and name in res.stderr,
            f"the summary names the unreadable file\n{res.describe()}")
    u.check("no rank file (never made" not in res.stderr,
            f"the summary must not call the rank's file missing\n{res.describe()}")
    db = u.Trace(out)
    try:
        meta = db.meta()
    finally:
        db.close()
    u.check_eq(meta.get("skipped_inputs"), name, "meta skipped_inputs")
    reasons = meta.get("skipped_input_reasons", "")
    u.check(reasons.startswith(name + ": "),
            f"meta skipped_input_reasons names the file and why: {reasons!r}")
    u.check_eq(meta.get("missing_ranks"), "1", "meta missing_ranks")
    res = u.run([ctx.ringside, "report", out], env=u.clean_env(), timeout=30)
    u.check_eq(res.returncode, 0, f"report\n{res.describe()}")
    u.check("have no trace file" not in res.stdout,
            f"the report must not say the file does not exist\n{res.describe()}")
    u.check("could not be read" in res.stdout and name in res.stdout,
            f"the report says the rank's file was unreadable\n{res.describe()}")


if __name__ == "__main__":
    sys.exit(u.main({
        "cli-no-command": cli_no_command,
        "cli-unknown-flag": cli_unknown_flag,
        "merge-bad-input": merge_bad_input,
        "merge-damaged-trace": merge_damaged_trace,
        "merge-keep-going-corrupt": merge_keep_going_corrupt,
    }))
