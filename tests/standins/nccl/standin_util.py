"""What the stand-in NCCL tests share: counted checks and an environment cleared of the
variables that would change a stand-in job (tracing, rank, the stand-in's own settings)."""

import os
import sys

# Sanitizer runs (scripts/test.sh): a runtime that must come first in LD_PRELOAD.
EXTRA = os.environ.get("RINGSIDE_E2E_EXTRA_PRELOAD", "")

failures = []
passed = 0


def check(cond, what):
    global passed
    if cond:
        passed += 1
    else:
        failures.append(what)
        print("FAIL", what)


def finish():
    """Prints the counts and exits 1 when a check failed."""
    print(f"{passed} passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)


def clean_env(**extra):
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "NCCL_PROFILER_PLUGIN", "RANK", "WORLD_SIZE", "RINGSIDE_DISABLE", "RINGSIDE_DIR",
              "FAKE_NCCL_PROFILER_VERSION", "FAKE_NCCL_DIR", "FAKE_NCCL_TIMEOUT_S"):
        env.pop(k, None)
    env.update({k: str(v) for k, v in extra.items()})
    return env
