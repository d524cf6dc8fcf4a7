"""The PyTorch DDP sample on pip's torch 2.x, launched by torchrun, recorded by ringside.

The pip environment comes from scripts/setup-pip-torch.sh --cached-only (this test never
downloads anything): where it was not set up, the scenario is skipped (exit 77) with the reason.

What must hold for `ringside record -- torchrun --standalone --nproc-per-node N ddp_train.py`:
  * the job's stdout (rank 0's loss lines) is that of an untraced torchrun of the same job;
  * every rank is in table rank, started by torchrun, its identity from Gloo;
  * Gloo was interposed: meta interposition "active: gloo", and the gloo::Context layout the
    wrappers identified is the one this torch's Gloo has (no vptr from torch 2.8 on);
  * per rank, the all-reduced bytes are exactly steps x the model's gradient bytes (--describe):
    step 1 in one bucket, every later step in the rebuilt buckets adding up to the gradients;
  * comm + seq name the same call on every rank, and each call's messages are Gloo's algorithm
    (ring all-reduce rank -> rank-1) on every ring link with the bytes it must move;
  * merge found the job's steps (table step: one complete step per training step).

pip-ab-ring-2: `record --allreduce ring -- torchrun ...`: every all-reduce runs on ringside's ring
(library ringside-ring) with the losses of an untraced run, on either gloo::Context layout (the
reroute takes rank and size from the context's constructor, never its fields).

Scenarios: pip-torchrun-2, pip-ab-ring-2.
"""

import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as u  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STEPS = 6
BUCKET_MB = "0.01"  # 10485 bytes: the 27 kB of gradients need several buckets


def pip_python():
    """The pip environment's python, or skip with the setup script's reason."""
    script = os.path.join(REPO, "scripts", "setup-pip-torch.sh")
    p = subprocess.run(["bash", script, "--cached-only"], capture_output=True, text=True, timeout=60)
    if p.returncode == u.SKIP:
        u.skip(p.stderr.strip() or "no pip torch environment")
    u.check(p.returncode == 0, f"setup-pip-torch.sh --cached-only failed ({p.returncode}): {p.stderr}")
    python = p.stdout.strip().splitlines()[-1]
    torchrun = os.path.join(os.path.dirname(python), "torchrun")
    u.check(os.access(torchrun, os.X_OK), f"no torchrun beside {python}")
    return python, torchrun


def torch_version(python):
    res = u.run([python, "-c", "import torch; print(torch.__version__)"], timeout=120)
    res.expect(0)
    return res.stdout.strip()


def loss_lines(text):
    return [line for line in text.splitlines() if line.startswith("step ")]



# pip torch 2.15.0 itself sometimes aborts a rank after the job's last step, while tearing down
# ("terminate called without an active exception", exit -6): seen untraced, with no ringside in
# the process, in 1 of 12 and 1 of 16 runs on an idle machine (a barrier before
# destroy_process_group does not help). That is torch's, not what is under test: a run that
# printed every step and then died that way, traced or not, is run again (twice at most), and
# says so. Any other failure, and the same one a third time, fails the test.
TORCH_TEARDOWN_ABORT = "terminate called without an active exception"


def past_torch_teardown_abort(run_once, steps=STEPS):
    res = run_once()
    for _ in range(2):
        if res.returncode == 0 or TORCH_TEARDOWN_ABORT not in res.stderr or \
                len(loss_lines(res.stdout)) != steps:
            return res
        print(f"torch aborted a rank at teardown after step {steps} (torch's own, seen untraced); "
              f"running again\n{res.describe()}")
        res = run_once()
    return res


def scenario(world):
    def body(ctx):
        python, torchrun = pip_python()
        version = torch_version(python)
        print(f"pip torch {version} ({python})")
        major_minor = tuple(int(x) for x in version.split("+")[0].split(".")[:2])

        def job(describe):
            return [torchrun, "--standalone", "--nproc-per-node", str(world), os.path.abspath(ctx.ddp_sample),
                    "--steps", str(STEPS), "--bucket-cap-mb", BUCKET_MB,
                    "--first-bucket-mb", BUCKET_MB, "--describe", describe]

        # OMP_NUM_THREADS: torchrun would set 1 and warn about it.
        env = u.clean_env(OMP_NUM_THREADS="1")
        untraced = past_torch_teardown_abort(
            lambda: u.run(job(ctx.path("untraced.json")), env=env, timeout=240, cwd=ctx.scratch))
        if untraced.returncode != 0:
            # The baseline is not what is under test: one failed untraced run (seen once in
            # 13, cause not caught) is shown and retried; a traced failure is never retried.
            print(f"untraced run failed; retrying once\n{untraced.describe()}")
            untraced = u.run(job(ctx.path("untraced.json")), env=env, timeout=240, cwd=ctx.scratch)
        untraced.expect(0)
        baseline = loss_lines(untraced.stdout)
        u.check_eq(len(baseline), STEPS, "loss lines of the untraced run")

        trace_path = ctx.path("ddp.sqlite")
        rank_dir = ctx.path("ranks")
        describe = ctx.path("describe.json")
        def traced():
            shutil.rmtree(rank_dir, ignore_errors=True)
            for p in (trace_path, describe):
                if os.path.exists(p):
                    os.remove(p)
            return ctx.record(["-o", trace_path, "--dir", rank_dir, "--keep-rank-files"],
                              job(describe), timeout=300, env=env)
        res = past_torch_teardown_abort(traced)
        res.expect(0)
        u.check_eq(loss_lines(res.stdout), baseline, "loss lines of the recorded job vs untraced")
        facts = u.read_json(describe)
        u.check_eq(facts, u.read_json(ctx.path("untraced.json")), "--describe facts")
        u.check_eq(facts["world_size"], world, "world size")
        grad_bytes = facts["grad_bytes"]
        # torchrun's agent process imports torch too but never calls Gloo: it leaves no file.
        u.check_eq(len(u.rank_files(rank_dir)), world, f"rank files in {rank_dir}")

        trace = u.Trace(trace_path)
        u.check_eq(trace.quick_check(), "ok", "PRAGMA quick_check")
        u.check_eq(trace.ranks(), list(range(world)), "ranks in table rank")
        u.check_eq(trace.rows("SELECT DISTINCT launcher, identity_source FROM rank"),
                   [("torchrun", "gloo")], "launcher and identity source")
        meta = trace.meta()
        layout = "no vptr (rank at offset 0)" if major_minor >= (2, 8) else "vptr (rank at offset 8)"
        for r in range(world):
            u.check_eq(meta.get(f"rank.{r}.interposition"), "active: gloo", f"rank {r} interposition")
            u.check_eq(meta.get(f"rank.{r}.gloo_context_layout"), layout,
                       f"rank {r}: gloo::Context layout of torch {version}")
        by_key = u.check_seq_matches(trace, world)

        for r in range(world):
            allreduces = [c for c in u.calls(trace, "rank = ?", (r,)) if c.op == "allreduce"]
            u.check(allreduces, f"rank {r}: no allreduce recorded")
            u.check_eq(sum(c.bytes for c in allreduces), STEPS * grad_bytes,
                       f"rank {r}: all-reduced bytes over {STEPS} steps (gradient bytes {grad_bytes})")
            for c in allreduces:
                u.check_eq(c.dtype, "f32", f"rank {r}: allreduce dtype")
            u.check_eq(allreduces[0].bytes, grad_bytes, f"rank {r}: first all-reduce (one bucket)")
            rest = allreduces[1:]
            u.check(len(rest) % (STEPS - 1) == 0,
                    f"rank {r}: {len(rest)} all-reduces after step 1 is not a multiple of {STEPS - 1}")
            per_step = len(rest) // (STEPS - 1)
            u.check(per_step >= 2, f"rank {r}: {per_step} bucket(s) per step; expected several")
            for s in range(STEPS - 1):
                step = rest[s * per_step:(s + 1) * per_step]
                u.check_eq(sum(c.bytes for c in step), grad_bytes,
                           f"rank {r}: all-reduced bytes in step {s + 2} ({[c.bytes for c in step]})")

        checked = u.check_transfers(trace, world, by_key)
        print(f"calls with checked transfers, per op: {dict(sorted(checked.items()))}")
        u.check_eq(checked.get("allreduce", 0), 1 + (STEPS - 1) * per_step,
                   "all-reduce calls with checked transfers")
        links = set(trace.rows("SELECT DISTINCT t.src_rank, t.dst_rank FROM transfer t "
                               "JOIN collective c ON c.id = t.collective_id "
                               "WHERE c.op = 'allreduce' AND t.side = 'send'"))
        u.check_eq(links, {(r, (r - 1) % world) for r in range(world)}, "all-reduce send links")

        steps = trace.rows("SELECT step, first_seq, last_seq, complete FROM step ORDER BY step")
        u.check_eq(len(steps), STEPS, f"steps detected by merge ({steps})")
        u.check_eq([s[0] for s in steps], list(range(STEPS)), "step numbers")
        u.check(all(s[3] == 1 for s in steps), f"every step complete ({steps})")
        print(f"ops on rank 0: "
              f"{trace.rows('SELECT op, count(*), sum(bytes) FROM collective WHERE rank = 0 GROUP BY op')}")
        trace.close()
    return body


def ab_ring(world):
    def body(ctx):
        python, torchrun = pip_python()
        version = torch_version(python)
        print(f"pip torch {version} ({python})")
        job = [torchrun, "--standalone", "--nproc-per-node", str(world),
               os.path.abspath(ctx.ddp_sample), "--steps", str(STEPS)]
        env = u.clean_env(OMP_NUM_THREADS="1")
        trace_path = ctx.path("ring.sqlite")
        def traced():
            if os.path.exists(trace_path):
                os.remove(trace_path)
            return ctx.record(["-o", trace_path, "--allreduce", "ring"], job, timeout=300, env=env)
        res = past_torch_teardown_abort(traced)
        res.expect(0)
        untraced = past_torch_teardown_abort(lambda: u.run(job, env=env, timeout=240, cwd=ctx.scratch))
        untraced.expect(0)
        u.check_eq(loss_lines(res.stdout), loss_lines(untraced.stdout), "losses, ring vs untraced")
        trace = u.Trace(trace_path)
        libs = trace.rows("SELECT DISTINCT library FROM collective WHERE op = 'allreduce'")
        u.check_eq(libs, [("ringside-ring",)], "libraries of the all-reduces")
        u.check_eq(trace.scalar("SELECT count(*) FROM collective WHERE op = 'allreduce' AND rank = 0"),
                   STEPS, "all-reduces on rank 0 (one bucket per step)")
        trace.close()
    return body


if __name__ == "__main__":
    sys.exit(u.main({"pip-torchrun-2": scenario(2), "pip-ab-ring-2": ab_ring(2)}))
