"""End to end (issue 28): nothing the user has is lost, and no failure reads as success.

- An output that is one of the verb's inputs is refused with one line and exit 2, -f or not,
  by device and inode (a symbolic or hard link to the input too): report, diff, export, merge
  (a rank file in an input folder too), bench (--json naming RINGSIDE_TOPOLOGY), view; the
  input is unchanged.
- A configuration file that is a FIFO or /dev/zero (RINGSIDE_TOPOLOGY for bench --algo
  multipath and record --allreduce multipath, report --topology) neither hangs nor eats memory:
  one line, and the run goes on (bench, record) or stops (report).
- A symbolic link among the folders above an output or input is followed (record -o link/t.sqlite,
  merge link/dir, merge --realign link/t.sqlite); a link as the last component is still refused.
- Standard output that cannot be written (> /dev/full) is exit 1 and "ringside VERB: cannot write
  standard output: No space left on device" (simulate, bench, report, export -o -, --help);
  bench's launcher lines say "ringside bench:"; report --format csv -o DIR makes DIR 0700.
Usage: inputs_outputs_e2e.py BIN_DIR (holding ringside, and gloo_collectives when built)
"""
import hashlib
import os
import stat
import subprocess
import sys
import tempfile

failures = []
FULL = "No space left on device"


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def run(args, cwd, env=None, stdout=subprocess.PIPE, timeout=60):
    # A verb that blocks on a FIFO would hang for ever: a failure, not a hung test.
    try:
        return subprocess.run(args, stdout=stdout, stderr=subprocess.PIPE, text=True,
                              timeout=timeout, cwd=cwd, env=env)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, -1, "", f"timed out: {' '.join(args)}")


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def refused(r, what, output, words="an output never replaces its input"):
    check(r.returncode == 2, f"{what}: exit {r.returncode}, not 2: {r.stderr.strip()}")
    check(words in r.stderr and output in r.stderr, f"{what}: message {r.stderr.strip()!r}")
    check(len(r.stderr.strip().splitlines()) == 1, f"{what}: not one line: {r.stderr!r}")


def output_is_input(ringside, bindir, tmp):
    trace, other = "t.sqlite", "b.sqlite"
    sums = {trace: digest(os.path.join(tmp, trace)), other: digest(os.path.join(tmp, other))}
    os.symlink(trace, os.path.join(tmp, "sym.sqlite"))
    os.link(os.path.join(tmp, trace), os.path.join(tmp, "hard.sqlite"))
    with open(os.path.join(tmp, "topo.txt"), "w") as f:
        f.write("ringside-topology 1\nnode h0 ranks 0-1\n")
    sums["topo.txt"] = digest(os.path.join(tmp, "topo.txt"))
    for out in (trace, "sym.sqlite", "hard.sqlite"):
        for force in ([], ["-f"]):
            cases = {
                "report": [ringside, "report", trace, "-o", out],
                "report --format csv": [ringside, "report", trace, "--format", "csv", "-o", out],
                "diff (B)": [ringside, "diff", other, trace, "-o", out],
                "diff (A)": [ringside, "diff", trace, other, "-o", out],
                "export": [ringside, "export", "--perfetto", trace, "-o", out],
                "merge": [ringside, "merge", "-q", trace, "-o", out],
            }
            for what, args in cases.items():
                if what.startswith("report") or what.startswith("diff"):
                    if force:
                        continue  # report and diff always replace an earlier report: no -f
                r = run(args + force, tmp)
                refused(r, f"{what} -o {out} {' '.join(force)}", out)
    r = run([ringside, "report", trace, "--topology", "topo.txt", "-o", "topo.txt"], tmp)
    refused(r, "report -o its --topology", "topo.txt")
    # merge: a rank file inside an input folder is an input (the output of an earlier merge
    # there is not: it is replaced with -f as before).
    ranks = os.path.join(tmp, "ranks")
    rank_file = sorted(n for n in os.listdir(ranks) if n.endswith(".sqlite"))[0]
    sums[rank_file] = digest(os.path.join(ranks, rank_file))
    r = run([ringside, "merge", "-q", "-f", "ranks", "-o", "ranks/" + rank_file], tmp)
    refused(r, "merge DIR -o DIR/<rank file> -f", rank_file)
    check(digest(os.path.join(ranks, rank_file)) == sums[rank_file], "merge replaced a rank file")
    for args in ([], ["-f"]):
        r = run([ringside, "merge", "-q", "ranks", "-o", "ranks/merged.sqlite"] + args, tmp)
        check(r.returncode == 0, f"merge DIR -o DIR/merged.sqlite {args}: exit {r.returncode}: "
              f"{r.stderr.strip()}")
    # bench: its one input file is RINGSIDE_TOPOLOGY.
    env = dict(os.environ, RINGSIDE_TOPOLOGY=os.path.join(tmp, "topo.txt"))
    r = run([ringside, "bench", "--ranks", "2", "--sizes", "4K", "--iters", "1", "--warmup",
             "0", "--algo", "ring", "--json", "topo.txt"], tmp, env=env)
    refused(r, "bench --json RINGSIDE_TOPOLOGY", "topo.txt")
    # view (when built): the screenshot, the state and the CSV never replace a trace or the
    # topology; refused before any window is opened.
    if os.access(os.path.join(bindir, "ringside-view"), os.X_OK):
        for option in ("--screenshot", "--state-out", "--export-csv", "--dump-layout"):
            for out in (trace, "sym.sqlite", "hard.sqlite"):
                r = run([ringside, "view", trace, option, out], tmp)
                refused(r, f"view {option} {out}", out)
            r = run([ringside, "view", trace, other, option, other], tmp)
            refused(r, f"view A B {option} B", other)
        r = run([ringside, "view", trace, "--topology", "topo.txt", "--state-out", "topo.txt"],
                tmp)
        refused(r, "view --state-out its --topology", "topo.txt")
    for name, want in sums.items():
        path = os.path.join(ranks, name) if name == rank_file else os.path.join(tmp, name)
        check(digest(path) == want, f"{name} changed")
    check(os.path.islink(os.path.join(tmp, "sym.sqlite")), "the symbolic link was replaced")


def blocking_configs(ringside, bindir, tmp):
    fifo = os.path.join(tmp, "topo.fifo")
    os.mkfifo(fifo)
    for topo in (fifo, "/dev/zero"):
        env = dict(os.environ, RINGSIDE_TOPOLOGY=topo)
        r = run([ringside, "bench", "--ranks", "2", "--sizes", "4K", "--iters", "1", "--warmup",
                 "0", "--algo", "multipath"], tmp, env=env, timeout=60)
        check(r.returncode == 0, f"bench --algo multipath, RINGSIDE_TOPOLOGY={topo}: exit "
              f"{r.returncode}: {r.stderr.strip()[-400:]}")
        check("not a regular file" in r.stdout + r.stderr,
              f"bench, RINGSIDE_TOPOLOGY={topo}: no line says why the topology is not used: "
              f"{(r.stdout + r.stderr)[-600:]!r}")
        r = run([ringside, "report", "t.sqlite", "--topology", topo], tmp, timeout=20)
        check(r.returncode == 1 and "not a regular file" in r.stderr,
              f"report --topology {topo}: exit {r.returncode}: {r.stderr.strip()!r}")
    job = os.path.join(bindir, "gloo_collectives")
    if os.access(job, os.X_OK):
        env = dict(os.environ, RINGSIDE_TOPOLOGY=fifo, GLOO_STORE_DIR=os.path.join(tmp, "gs"))
        r = run([ringside, "record", "--ranks", "2", "--allreduce", "multipath", "-q", "-o",
                 "mp.sqlite", "--", job, "--only", "allreduce", "--iters", "2"], tmp, env=env,
                timeout=120)
        check(r.returncode == 0 and os.path.isfile(os.path.join(tmp, "mp.sqlite")),
              f"record --allreduce multipath, RINGSIDE_TOPOLOGY=FIFO: exit {r.returncode}: "
              f"{r.stderr.strip()[-600:]}")
    else:
        print("note: no gloo_collectives in this build; record --allreduce multipath not run")


def linked_folders(ringside, bench, tmp):
    real = os.path.join(tmp, "real")
    os.mkdir(real)
    os.symlink(real, os.path.join(tmp, "link"))
    # An output below a linked folder: written (record ran the whole job and then failed).
    r = run([ringside, "record", "--ranks", "2", "-q", "-o", "link/rec.sqlite", "--"] + bench,
            tmp, stdout=subprocess.DEVNULL, timeout=120)
    check(r.returncode == 0 and os.path.isfile(os.path.join(real, "rec.sqlite")),
          f"record -o link/rec.sqlite: exit {r.returncode}: {r.stderr.strip()[-400:]}")
    check("merge failed" not in r.stderr, f"record -o link/...: {r.stderr.strip()[-400:]}")
    r = run([ringside, "merge", "-q", "ranks", "-o", "link/m.sqlite"], tmp)
    check(r.returncode == 0 and os.path.isfile(os.path.join(real, "m.sqlite")),
          f"merge -o link/m.sqlite: exit {r.returncode}: {r.stderr.strip()}")
    # An input folder reached through a link.
    os.mkdir(os.path.join(real, "ranks"))
    for name in os.listdir(os.path.join(tmp, "ranks")):
        if name.startswith("rank") and name.endswith(".sqlite"):
            os.link(os.path.join(tmp, "ranks", name), os.path.join(real, "ranks", name))
    r = run([ringside, "merge", "-q", "link/ranks", "-o", "viadir.sqlite"], tmp)
    check(r.returncode == 0, f"merge link/ranks: exit {r.returncode}: {r.stderr.strip()}")
    r = run([ringside, "merge", "--realign", "link/m.sqlite"], tmp)
    check(r.returncode == 0, f"merge --realign link/m.sqlite: exit {r.returncode}: "
          f"{r.stderr.strip()}")
    # A link as the last component is still refused (the output and an in-place trace).
    os.symlink(os.path.join(real, "m.sqlite"), os.path.join(tmp, "last.sqlite"))
    before = digest(os.path.join(real, "m.sqlite"))
    r = run([ringside, "merge", "-q", "-f", "ranks", "-o", "last.sqlite"], tmp)
    check(r.returncode != 0 and "symbolic link" in r.stderr,
          f"merge -o LINK: exit {r.returncode}: {r.stderr.strip()}")
    r = run([ringside, "merge", "--realign", "last.sqlite"], tmp)
    check(r.returncode != 0, f"merge --realign LINK: exit {r.returncode}: {r.stderr.strip()}")
    check(os.path.islink(os.path.join(tmp, "last.sqlite")), "the last-component link replaced")
    check(digest(os.path.join(real, "m.sqlite")) == before, "the link's target changed")


def standard_output(ringside, tmp):
    with open("/dev/full", "w") as full:
        cases = {
            "simulate": [ringside, "simulate", "--sizes", "25M"],
            "report": [ringside, "report", "t.sqlite"],
            "export": [ringside, "export", "--perfetto", "t.sqlite", "-o", "-"],
            "bench": [ringside, "bench", "--ranks", "2", "--sizes", "4K", "--iters", "1",
                      "--warmup", "0", "--algo", "ring"],
        }
        for verb, args in cases.items():
            r = run(args, tmp, stdout=full, timeout=60)
            want = f"ringside {verb}: cannot write standard output: {FULL}"
            check(r.returncode == 1, f"{verb} > /dev/full: exit {r.returncode}, not 1")
            check(want in r.stderr, f"{verb} > /dev/full: {r.stderr.strip()!r}, not {want!r}")
            check("ringside record:" not in r.stderr, f"{verb}: says 'ringside record:': "
                  f"{r.stderr.strip()!r}")
        r = run([ringside, "--help"], tmp, stdout=full)
        check(r.returncode == 1 and f"cannot write standard output: {FULL}" in r.stderr,
              f"--help > /dev/full: exit {r.returncode}: {r.stderr.strip()!r}")
    # Written standard output is still exit 0.
    r = run([ringside, "simulate", "--sizes", "25M"], tmp)
    check(r.returncode == 0 and "ring" in r.stdout, f"simulate: exit {r.returncode}")
    # The CSV folder is private like every output folder (0700), whatever the umask.
    old = os.umask(0o022)
    try:
        r = run([ringside, "report", "t.sqlite", "--format", "csv", "-o", "csv"], tmp)
    finally:
        os.umask(old)
    mode = stat.S_IMODE(os.stat(os.path.join(tmp, "csv")).st_mode) if r.returncode == 0 else -1
    check(mode == 0o700, f"report --format csv -o DIR: exit {r.returncode}, mode {mode:o}")


def main():
    bindir = os.path.abspath(sys.argv[1])
    ringside = os.path.join(bindir, "ringside")
    # The job recorded: Gloo's all-reduce (what the preload library traces).
    bench = [ringside, "bench", "--sizes", "4K", "--iters", "1", "--warmup", "0", "--algo",
             "gloo"]
    with tempfile.TemporaryDirectory() as tmp:
        r = run([ringside, "record", "--ranks", "2", "--keep-rank-files", "--dir", "ranks", "-q",
                 "-o", "t.sqlite", "--"] + bench, tmp, stdout=subprocess.DEVNULL, timeout=120)
        if r.returncode != 0:
            print(r.stderr)
            print(f"record failed: exit {r.returncode}")
            return 1
        r = run([ringside, "merge", "-q", "ranks", "-o", "b.sqlite"], tmp)
        if r.returncode != 0:
            print(r.stderr)
            return 1
        output_is_input(ringside, bindir, tmp)
        blocking_configs(ringside, bindir, tmp)
        linked_folders(ringside, bench, tmp)
        standard_output(ringside, tmp)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
