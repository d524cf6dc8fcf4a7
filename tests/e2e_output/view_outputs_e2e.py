"""End to end: the viewer's output files (--state-out, --screenshot, --dump-layout, --export-csv)
never follow a planted link nor replace a link, FIFO or device.

A link to a victim at the state file's old temporary name (<state>.tmp) is left alone and the
state is written; a link at each output is refused with one line naming it and exit 1 (the
state too: it is said once, the run goes on, and the exit status says the state file was not
written; issue 28), and the victim is untouched. Runs under a private Xvfb; 77 (skipped) without one.
Usage: view_outputs_e2e.py BIN_DIR (holding ringside and ringside-view)
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e_gui"))
from xserver import XServer, XServerUnavailable  # noqa: E402

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def main():
    bindir = os.path.abspath(sys.argv[1])
    ringside = os.path.join(bindir, "ringside")
    if not os.access(os.path.join(bindir, "ringside-view"), os.X_OK):
        print("SKIP: no viewer in this build")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([ringside, "bench", "--ranks", "2", "--sizes", "4K", "--iters", "1",
                            "--warmup", "0", "-o", "t.sqlite"], cwd=tmp, capture_output=True,
                           text=True, timeout=60)
        if r.returncode != 0:
            print(r.stderr)
            return 1
        victim = os.path.join(tmp, "victim")
        with open(victim, "wb") as f:
            f.write(b"precious")
        # One name per output; the option that writes it.
        outputs = {"--screenshot": "shot.png", "--state-out": "state.json",
                   "--dump-layout": "layout.json", "--export-csv": "table.csv"}

        def view(env, names):
            args = [ringside, "view", "t.sqlite", "--view", "topology", "--frames", "2",
                    "--size", "400x300"]
            for option, name in names.items():
                args += [option, name]
            try:
                return subprocess.run(args, cwd=tmp, env=env, capture_output=True, text=True,
                                      timeout=60)
            except subprocess.TimeoutExpired:
                return subprocess.CompletedProcess(args, -1, "", "timed out")

        try:
            with XServer("640x480x24") as x:
                env = dict(os.environ, DISPLAY=x.display, LIBGL_ALWAYS_SOFTWARE="1")
                # The old fixed temporary names, planted: every output is still written.
                for name in outputs.values():
                    os.symlink(victim, os.path.join(tmp, name + ".tmp"))
                r = view(env, outputs)
                check(r.returncode == 0, f"view: exit {r.returncode}: {r.stderr.strip()}")
                for name in outputs.values():
                    path = os.path.join(tmp, name)
                    check(os.path.isfile(path) and not os.path.islink(path), f"{name} not written")
                check(read(victim) == b"precious", "victim changed through a temporary name")
                # A link at each output in turn (the others written normally).
                for option, name in outputs.items():
                    target = "link-" + name
                    os.symlink(victim, os.path.join(tmp, target))
                    r = view(env, dict(outputs, **{option: target}))
                    want = 1
                    check(r.returncode == want, f"{option} link: exit {r.returncode}, not {want}")
                    words = f"{target}: a symbolic link, not a regular file; not replaced"
                    check(words in r.stderr, f"{option} link: message {r.stderr.strip()!r}")
                    check(os.path.islink(os.path.join(tmp, target)), f"{option}: link replaced")
                    check(read(victim) == b"precious", f"{option}: victim changed")
        except XServerUnavailable as e:
            print(f"SKIP: {e}")
            return 77
        leftovers = [n for n in os.listdir(tmp) if ".tmp-" in n]
        check(not leftovers, f"temporary files left: {leftovers}")
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
