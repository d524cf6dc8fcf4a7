#!/usr/bin/env python3
"""A rank whose PyTorch links Gloo statically leaves a rank file that says
interposition was inactive and why; a process without it leaves nothing."""
import glob
import os
import sqlite3
import subprocess
import sys
import tempfile

app, fake, preload = sys.argv[1:4]


def run(args):
    d = tempfile.mkdtemp(prefix="ringside-static-")
    env = dict(os.environ, LD_PRELOAD=preload, RINGSIDE_DIR=d, RANK="0", WORLD_SIZE="1")
    p = subprocess.run([app] + args, env=env, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "static_gloo_app done\n", p.stdout
    return glob.glob(os.path.join(d, "*.sqlite"))


files = run([fake])
assert len(files) == 1, files
db = sqlite3.connect(f"file:{files[0]}?mode=ro", uri=True)
meta = dict(db.execute("select key, value from meta"))
assert meta.get("interposition", "").startswith("inactive: Gloo is linked statically"), meta
assert meta.get("end_state") == "clean", meta
rank = db.execute("select rank, world_size, identity_source from rank").fetchall()
assert rank == [(0, 1, "env")], rank
assert db.execute("select count(*) from collective").fetchone()[0] == 0

assert run([]) == [], "a process without PyTorch's Gloo must leave no file"
print("1 passed, 0 failed")
