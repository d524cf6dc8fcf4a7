"""Privacy of what `ringside record` writes (README.md, "Privacy"; storage/privacy.h).

Scenarios:
  privacy-modes   under umask 022 the trace and rank files are 0600 and the rank folder 0700;
                  with --share they follow the umask (0644, 0755); what report -o, diff -o,
                  export and the CSV tables write from it is 0600 too (0644 with RINGSIDE_SHARE)
  privacy-redact  --redact: no trace of `--api-key=SECRET` (on record's command line) or of the
                  traced processes' program folder in any file written (trace, rank files, -wal,
                  -shm); without it both are there
"""

import os
import stat
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as u  # noqa: E402


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def record_sample(ctx, out, extra_args, sample=None, tail=()):
    ctx.need_gloo_sample()
    ctx.need_preload()
    # bash starts the sample, so record's own command line can hold arguments the sample
    # would refuse: `bash -c 'exec "$0" --iters 2' SAMPLE TAIL...`.
    res = ctx.record(["--ranks", "2", "--keep-rank-files", "-q", "-o", out, *extra_args],
                     ["bash", "-c", 'exec "$0" --iters 2 --only allreduce',
                      sample or ctx.gloo_sample, *tail], timeout=120)
    res.expect(0)
    return out, out + ".ranks"


def privacy_modes(ctx):
    os.umask(0o022)
    trace, ranks = record_sample(ctx, ctx.path("private.sqlite"), [])
    files = u.rank_files(ranks)
    u.check(len(files) == 2, f"rank files in {ranks}: {files}")
    u.check_eq(oct(mode(trace)), oct(0o600), "mode of the trace")
    u.check_eq(oct(mode(ranks)), oct(0o700), "mode of the rank folder")
    for f in files:
        u.check_eq(oct(mode(f)), oct(0o600), f"mode of {f}")

    trace, ranks = record_sample(ctx, ctx.path("shared.sqlite"), ["--share"])
    u.check_eq(oct(mode(trace)), oct(0o644), "mode of the trace with --share")
    u.check_eq(oct(mode(ranks)), oct(0o755), "mode of the rank folder with --share")
    for f in u.rank_files(ranks):
        u.check_eq(oct(mode(f)), oct(0o644), f"mode of {f} with --share")

    # Reports and exports quote the trace (host names, the command line): private as well.
    for share in (False, True):
        env = dict(os.environ)
        env.pop("RINGSIDE_SHARE", None)
        if share:
            env["RINGSIDE_SHARE"] = "1"
        tag = "shared" if share else "private"
        outs = {
            "report": ["report", trace, "--format", "json", "-o", ctx.path(tag + "-r.json")],
            "diff": ["diff", trace, trace, "-o", ctx.path(tag + "-d.txt")],
            "export": ["export", "--perfetto", trace, "-o", ctx.path(tag + "-p.json")],
        }
        for verb, argv in outs.items():
            u.run([ctx.ringside, *argv], env=env, timeout=60).expect(0)
            want = 0o644 if share else 0o600
            u.check_eq(oct(mode(argv[-1])), oct(want), f"mode of {verb}'s output ({tag})")


def files_holding(folder, needle):
    """Every file under `folder` whose bytes contain `needle` (a -wal or -shm included)."""
    hits = []
    for root, _, names in os.walk(folder):
        for name in names:
            p = os.path.join(root, name)
            with open(p, "rb") as f:
                if needle in f.read():
                    hits.append(p)
    return hits


def privacy_redact(ctx):
    ctx.need_gloo_sample()
    # The traced processes' own command line names a folder with the secret in it.
    secret_dir = ctx.mkdir("SECRET-project")
    sample = os.path.join(secret_dir, "gloo_collectives")
    os.symlink(ctx.gloo_sample, sample)

    plain = ctx.mkdir("plain")
    record_sample(ctx, os.path.join(plain, "t.sqlite"), [], sample, ["--api-key=SECRET"])
    hits = files_holding(plain, b"SECRET")
    u.check(any(h.endswith("t.sqlite") for h in hits), f"without --redact the trace should hold "
            f"the command line (the test would see nothing otherwise): {hits}")
    u.check(any("/rank-" in h for h in hits), f"without --redact: rank files {hits}")

    redacted = ctx.mkdir("redacted")
    trace, ranks = record_sample(ctx, os.path.join(redacted, "t.sqlite"), ["--redact"], sample,
                                 ["--api-key=SECRET"])
    u.check_eq(files_holding(redacted, b"SECRET"), [], "files holding SECRET with --redact")
    t = u.Trace(trace)
    meta = t.meta()
    t.close()
    u.check_eq(meta.get("command_line"), "bash <redacted> <redacted> <redacted> <redacted>",
               "the trace's command_line")
    u.check_eq(meta.get("rank.0.command_line"),
               "gloo_collectives <redacted> <redacted> <redacted> <redacted>",
               "rank 0's command line")


if __name__ == "__main__":
    sys.exit(u.main({
        "privacy-modes": privacy_modes,
        "privacy-redact": privacy_redact,
    }))
