"""End to end: no verb writes through a planted link or replaces what is not a regular file.

For every verb that writes a file (record, merge, export, report -o, report --format csv -o DIR,
diff -o, bench -o, bench --json): symbolic links to a victim planted at the temporary names the
verbs used before (<out>.partial, <out>.tmp) leave the victim untouched and the output is written;
a link at the output itself, a FIFO and (as root) a character device are refused with one line
and exit status 1 (2 where the verb checks before starting a job), even with --force; the victim,
the link, the FIFO and the device stay as they were. And `report`/`diff` > /dev/full say why.
Usage: output_files_e2e.py RINGSIDE
"""
import os
import stat
import subprocess
import sys
import tempfile

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def run(args, cwd, stdout=subprocess.PIPE):
    # A verb that opens a FIFO at its output blocks for ever: a failure, not a hung test.
    try:
        return subprocess.run(args, stdout=stdout, stderr=subprocess.PIPE, text=True,
                              timeout=20, cwd=cwd)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, -1, "", f"timed out: {' '.join(args)}")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def main():
    ringside = os.path.abspath(sys.argv[1])
    bench = [ringside, "bench", "--sizes", "4K", "--iters", "1", "--warmup", "0"]
    is_root = os.geteuid() == 0
    with tempfile.TemporaryDirectory() as tmp:
        r = run([ringside, "record", "--ranks", "2", "--keep-rank-files", "-q", "-o", "t.sqlite",
                 "--"] + bench, tmp, stdout=subprocess.DEVNULL)
        if r.returncode != 0:
            print(r.stderr)
            print(f"record failed: exit {r.returncode}")
            return 1
        trace = os.path.join(tmp, "t.sqlite")
        ranks = os.path.join(tmp, "t.sqlite.ranks")
        victim = os.path.join(tmp, "victim")
        with open(victim, "wb") as f:
            f.write(b"precious")

        # verb name -> (command writing OUT, whether it takes --force, exit status of a refusal)
        verbs = {
            "record": (lambda out: [ringside, "record", "--ranks", "2", "-q", "-o", out, "--"] +
                       bench, True, 2),
            "merge": (lambda out: [ringside, "merge", "-q", ranks, "-o", out], True, 1),
            "export": (lambda out: [ringside, "export", "--perfetto", trace, "-o", out], True, 1),
            "report": (lambda out: [ringside, "report", "--format", "json", "-o", out, trace],
                       False, 1),
            "diff": (lambda out: [ringside, "diff", "-o", out, trace, trace], False, 1),
            "bench": (lambda out: [ringside, "bench", "--ranks", "2", "--sizes", "4K", "--iters",
                                   "1", "--warmup", "0", "-o", out], True, 2),
            "bench-json": (lambda out: [ringside, "bench", "--ranks", "2", "--sizes", "4K",
                                        "--iters", "1", "--warmup", "0", "--json", out], False, 2),
        }
        for name, (command, has_force, refusal) in verbs.items():
            work = os.path.join(tmp, name)
            os.mkdir(work)
            out = os.path.join(work, "out")
            victim = os.path.join(work, "victim")
            with open(victim, "wb") as f:
                f.write(b"precious")
            # 1. Links at the old fixed temporary names: not followed, the output is written.
            for planted in (out + ".partial", out + ".tmp"):
                os.symlink(victim, planted)
            r = run(command(out), work, stdout=subprocess.DEVNULL)
            check(r.returncode == 0, f"{name}: exit {r.returncode} with links at temporary "
                  f"names: {r.stderr.strip()}")
            check(read(victim) == b"precious", f"{name}: victim changed through a temporary name")
            check(os.path.isfile(out) and not os.path.islink(out), f"{name}: no output written")
            check(os.path.islink(out + ".partial") and os.path.islink(out + ".tmp"),
                  f"{name}: planted links removed")
            # 2. A link, a FIFO or a device at the output: refused, even with --force.
            targets = [("link", lambda p: os.symlink(victim, p), "a symbolic link"),
                       ("fifo", lambda p: os.mkfifo(p), "a FIFO")]
            if is_root:
                targets.append(("device", lambda p: os.mknod(p, stat.S_IFCHR | 0o666,
                                                              os.makedev(1, 3)),
                                "a character device"))
            for kind, make, words in targets:
                target = os.path.join(work, kind + ".out")
                try:
                    make(target)
                except PermissionError as e:  # mknod without CAP_MKNOD
                    print(f"note: {name}: no {kind} test: {e}")
                    continue
                before = os.lstat(target)
                args = command(target)
                if has_force:  # before the job's command, if there is one
                    args.insert(args.index("--") if "--" in args else len(args), "--force")
                r = run(args, work, stdout=subprocess.DEVNULL)
                lines = r.stderr.strip().splitlines()
                check(r.returncode == refusal,
                      f"{name}: {kind} at the output: exit {r.returncode}, not {refusal}")
                check(any(f"{target}: {words}, not a regular file; not replaced" in line
                          for line in lines), f"{name}: {kind}: message {r.stderr.strip()!r}")
                after = os.lstat(target)
                check((after.st_mode, after.st_ino) == (before.st_mode, before.st_ino),
                      f"{name}: the {kind} at the output was replaced")
                check(read(victim) == b"precious", f"{name}: victim changed through the {kind}")
            leftovers = [n for n in os.listdir(work) if ".tmp-" in n]
            check(not leftovers, f"{name}: temporary files left: {leftovers}")

        # report --format csv -o DIR: a link planted at one table's file, or as the folder.
        work = os.path.join(tmp, "csv")
        os.makedirs(os.path.join(work, "tables"))
        os.symlink(victim, os.path.join(work, "tables", "links.csv"))
        r = run([ringside, "report", "--format", "csv", "-o", "tables", trace], work)
        check(r.returncode == 1 and "links.csv: a symbolic link, not a regular file; not "
              "replaced" in r.stderr, f"report csv: link at a table: {r.returncode} {r.stderr!r}")
        os.mkdir(os.path.join(work, "elsewhere"))
        os.symlink(os.path.join(work, "elsewhere"), os.path.join(work, "linked"))
        r = run([ringside, "report", "--format", "csv", "-o", "linked", trace], work)
        check(r.returncode == 1 and "linked: a symbolic link, not a folder" in r.stderr,
              f"report csv: linked folder: {r.returncode} {r.stderr!r}")
        check(os.listdir(os.path.join(work, "elsewhere")) == [], "report csv: wrote via a link")
        check(read(victim) == b"precious", "report csv: victim changed")

        # Standard output that cannot be written: one line saying why.
        if os.path.exists("/dev/full"):
            for args in (["report", trace], ["diff", trace, trace]):
                with open("/dev/full", "w") as full:
                    r = run([ringside] + args, tmp, stdout=full)
                want = f"ringside {args[0]}: cannot write standard output: No space left on device"
                check(r.returncode == 1 and r.stderr.strip() == want,
                      f"{args[0]} > /dev/full: {r.returncode} {r.stderr!r}")
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
