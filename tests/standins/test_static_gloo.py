#!/usr/bin/env python3
"""The verdict a rank leaves when its Gloo calls cannot reach ringside, from the loaded object:

  * fake_static_torch (the process group's vtable, no gloo:: symbol at all) and
    fake_torch_exclude_libs (Gloo linked in with -Wl,--exclude-libs,ALL): "Gloo is linked
    statically ... and hidden";
  * fake_torch_bsymbolic_functions: Gloo exported but called directly (no relocation);
  * fake_torch_bsymbolic: the library is linked -Bsymbolic;
  * fake_torch_plain (Gloo exported and imported through the PLT: interposable) loaded but never
    called, like any torch process that uses no Gloo: no rank file (nothing to say);
  * a process without PyTorch's Gloo leaves nothing.
In the three bypassing variants the job's call did happen (the fake Gloo counted it) and the rank
file holds no collective: ringside says why rather than claiming a recording."""
import glob
import os
import sqlite3
import subprocess
import sys
import tempfile

app, fake, preload = sys.argv[1:4]
variants = dict(a.split("=", 1) for a in sys.argv[4:])


def run(args, expect_calls=None):
    d = tempfile.mkdtemp(prefix="ringside-static-")
    env = dict(os.environ, LD_PRELOAD=preload, RINGSIDE_DIR=d, RANK="0", WORLD_SIZE="1")
    p = subprocess.run([app] + args, env=env, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    want = (f"gloo calls: {expect_calls}\n" if expect_calls is not None else "") + "static_gloo_app done\n"
    assert p.stdout == want, (args, p.stdout)
    return glob.glob(os.path.join(d, "*.sqlite"))


def verdict(files):
    assert len(files) == 1, files
    db = sqlite3.connect(f"file:{files[0]}?mode=ro", uri=True)
    meta = dict(db.execute("select key, value from meta"))
    assert meta.get("end_state") == "clean", meta
    rank = db.execute("select rank, world_size, identity_source from rank").fetchall()
    assert rank == [(0, 1, "env")], rank
    assert db.execute("select count(*) from collective").fetchone()[0] == 0
    return meta.get("interposition", "")


checked = 0


def expect(name, got, prefix, *parts):
    global checked
    assert got.startswith(prefix), f"{name}: {got!r} does not start with {prefix!r}"
    for part in parts:
        assert part in got, f"{name}: {got!r} lacks {part!r}"
    print(f"{name}: {got}")
    checked += 1


expect("fake_static_torch", verdict(run([fake])), "inactive: Gloo is linked statically", "hidden")

if variants:
    expect("exclude_libs", verdict(run([variants["exclude_libs"], "--call"], expect_calls=1)),
           "inactive: Gloo is linked statically", "--exclude-libs")
    expect("bsymbolic_functions",
           verdict(run([variants["bsymbolic_functions"], "--call"], expect_calls=1)),
           "inactive: ", "calls gloo::allreduce directly", "-Bsymbolic-functions")
    expect("bsymbolic", verdict(run([variants["bsymbolic"], "--call"], expect_calls=1)),
           "inactive: ", "-Bsymbolic")
    assert run([variants["plain"]]) == [], \
        "an interposable Gloo that was never called must leave no file"
    checked += 1

assert run([]) == [], "a process without PyTorch's Gloo must leave no file"
checked += 1
print(f"{checked} passed, 0 failed")
