"""A private Xvfb for the GUI tests.

The X server picks a free display itself (-displayfd), so tests running in parallel never race
for one, and its clean-up never changes a test's exit status. (xvfb-run does both: `-a` picks a
display by probing lock files, and it exits 5 instead of the command's status when it cannot
remove its temporary folder, which made a passing test fail on a busy CI machine.)

As a module:   with XServer("1280x800x24") as x: env["DISPLAY"] = x.display
As a command:  python3 xserver.py [--screen WxHxD] -- COMMAND [ARGS...]
               runs COMMAND with DISPLAY set and exits with its status; 77 (skipped) when there
               is no Xvfb, 1 when it does not start.
Standard library only.
"""
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time


class XServerUnavailable(Exception):
    pass


class XServer:
    def __init__(self, screen="1400x900x24", timeout=30):
        self.screen, self.timeout = screen, timeout
        self.proc, self.log, self.display = None, None, None

    def __enter__(self):
        if not shutil.which("Xvfb"):
            raise XServerUnavailable("Xvfb not installed (Debian: xvfb)")
        last_error = ""
        for _ in range(3):
            rfd, wfd = os.pipe()
            log = tempfile.TemporaryFile()  # a file, not a pipe: a chatty server never blocks on it
            proc = subprocess.Popen(["Xvfb", "-displayfd", str(wfd), "-screen", "0", self.screen, "-nolisten", "tcp",
                                     "-noreset"], pass_fds=(wfd,), stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=log)
            os.close(wfd)
            number = b""
            end = time.time() + self.timeout
            while not number.endswith(b"\n") and time.time() < end:
                ready, _, _ = select.select([rfd], [], [], 0.2)
                if ready:
                    chunk = os.read(rfd, 16)
                    if not chunk:
                        break  # the server exited before naming its display
                    number += chunk
            os.close(rfd)
            if number.strip().isdigit() and proc.poll() is None:
                self.proc, self.log, self.display = proc, log, ":" + number.strip().decode()
                return self
            proc.kill()
            proc.wait()
            log.seek(0)
            last_error = log.read().decode(errors="replace")[-400:]
            log.close()
        raise RuntimeError(f"Xvfb did not start: {last_error}")

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.log.close()
        return False


def main(argv):
    screen = "1400x900x24"
    if len(argv) >= 2 and argv[0] == "--screen":
        screen, argv = argv[1], argv[2:]
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        print("usage: xserver.py [--screen WxHxD] -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    try:
        with XServer(screen) as x:
            return subprocess.run(argv, env=dict(os.environ, DISPLAY=x.display)).returncode
    except XServerUnavailable as e:
        print(f"SKIP: {e}")
        return 77
    except RuntimeError as e:
        print(f"xserver.py: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
