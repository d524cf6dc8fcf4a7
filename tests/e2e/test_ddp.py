"""The PyTorch DDP sample recorded on 2 and 4 ranks.

What must hold (torch 1.13, Gloo backend, find_unused_parameters=False):
  * the job's stdout and exit status are those of an untraced run;
  * every rank is in table rank;
  * DDP's initial broadcast of the parameters (root 0, all parameter bytes) precedes the first
    all-reduce;
  * per rank, the all-reduced bytes are exactly steps x gradient bytes: step 1 all-reduces
    every gradient in one bucket, later steps use the rebuilt buckets (several, given the small
    bucket cap), each step's buckets adding up to the gradient bytes;
  * the messages follow Gloo's algorithms (ring all-reduce rank -> rank-1, binomial-tree
    broadcast from the root, ...) and add up to what they must move.

Scenarios: ddp-2, ddp-4.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as u  # noqa: E402

STEPS = 6
BUCKET_MB = "0.01"  # 10485 bytes: the 27 kB of gradients need several buckets


def sample_args(ctx, describe):
    return [ctx.python, ctx.ddp_sample, "--steps", STEPS, "--bucket-cap-mb", BUCKET_MB,
            "--first-bucket-mb", BUCKET_MB, "--describe", describe]


def scenario(world):
    def body(ctx):
        ctx.need_ddp_sample()

        # The same job untraced, ranks started by hand.
        procs = ctx.start_ranks(world, sample_args(ctx, ctx.path("untraced.json")), preload=False)
        untraced = u.wait_all(procs, timeout=240)
        for r, res in enumerate(untraced):
            u.check(res.returncode == 0, f"untraced rank {r} failed\n{res.describe()}")
        baseline = untraced[0].stdout
        u.check_eq(len(baseline.splitlines()), STEPS, "loss lines of the untraced run")

        trace_path = ctx.path("ddp.sqlite")
        rank_dir = ctx.path("ranks")
        describe = ctx.path("describe.json")
        res = ctx.record(["--ranks", world, "-o", trace_path, "--dir", rank_dir,
                          "--keep-rank-files"], sample_args(ctx, describe), timeout=300)
        res.expect(0)
        u.check_eq(res.stdout, baseline, "stdout (loss lines) of the recorded job vs untraced")
        facts = u.read_json(describe)
        u.check_eq(facts, u.read_json(ctx.path("untraced.json")), "--describe facts")
        grad_bytes = facts["grad_bytes"]
        u.check_eq(len(u.rank_files(rank_dir)), world, f"rank files in {rank_dir}")

        trace = u.Trace(trace_path)
        u.check_eq(trace.quick_check(), "ok", "PRAGMA quick_check")
        u.check_eq(trace.ranks(), list(range(world)), "ranks in table rank")
        meta = trace.meta()
        u.check_eq(u.meta_list(meta.get("cut_off_ranks")), [], "meta cut_off_ranks")
        by_key = u.check_seq_matches(trace, world)

        for r in range(world):
            mine = u.calls(trace, "rank = ?", (r,))
            allreduces = [c for c in mine if c.op == "allreduce"]
            u.check(allreduces, f"rank {r}: no allreduce recorded")
            total = sum(c.bytes for c in allreduces)
            u.check_eq(total, STEPS * grad_bytes,
                       f"rank {r}: all-reduced bytes over {STEPS} steps (gradient bytes {grad_bytes})")
            for c in allreduces:
                u.check(c.dtype in (None, "f32", "float32"), f"rank {r}: allreduce dtype {c.dtype}")
            # Step 1: a single bucket with every gradient.
            u.check_eq(allreduces[0].bytes, grad_bytes, f"rank {r}: first all-reduce (one bucket)")
            # Steps 2..: the rebuilt buckets, the same number each step, each step complete.
            rest = allreduces[1:]
            u.check(len(rest) % (STEPS - 1) == 0,
                    f"rank {r}: {len(rest)} all-reduces after step 1 is not a multiple of {STEPS - 1}")
            per_step = len(rest) // (STEPS - 1)
            u.check(per_step >= 2, f"rank {r}: {per_step} bucket(s) per step; the bucket cap of "
                                   f"{BUCKET_MB} MB should give several")
            for s in range(STEPS - 1):
                step = rest[s * per_step:(s + 1) * per_step]
                u.check_eq(sum(c.bytes for c in step), grad_bytes,
                           f"rank {r}: all-reduced bytes in step {s + 2} ({[c.bytes for c in step]})")
                # PyTorch runs a group's collectives on two worker threads, so two buckets'
                # all-reduces may start in either order: compare the sizes, not the order.
                u.check_eq(sorted(c.bytes for c in step), sorted(c.bytes for c in rest[:per_step]),
                           f"rank {r}: bucket sizes of step {s + 2} vs step 2")
            # DDP's initial parameter broadcast: from rank 0, all parameters, before any step.
            initial = [c for c in mine if c.op == "broadcast" and c.seq < allreduces[0].seq]
            u.check(any(c.bytes == facts["state_bytes"] and c.root == 0 for c in initial),
                    f"rank {r}: no broadcast of {facts['state_bytes']} bytes from root 0 before the "
                    f"first all-reduce (found {[(c.bytes, c.root) for c in initial]})")

        checked = u.check_transfers(trace, world, by_key)
        print(f"calls with checked transfers, per op: {dict(sorted(checked.items()))}")
        print(f"all-reduce buckets per step after step 1: {per_step}; "
              f"ops: {trace.rows('SELECT op, count(*), sum(bytes) FROM collective WHERE rank = 0 GROUP BY op')}")
        n_allreduce = 1 + (STEPS - 1) * per_step
        u.check_eq(checked.get("allreduce", 0), n_allreduce, "all-reduce calls with checked transfers")
        u.check(checked.get("broadcast", 0) >= 1, "no broadcast with checked transfers")
        # Ring all-reduce: every rank sends only to rank-1 (and receives only from rank+1).
        links = set(trace.rows("SELECT DISTINCT t.src_rank, t.dst_rank FROM transfer t "
                               "JOIN collective c ON c.id = t.collective_id "
                               "WHERE c.op = 'allreduce' AND t.side = 'send'"))
        u.check_eq(links, {(r, (r - 1) % world) for r in range(world)}, "all-reduce send links")
        trace.close()
    return body


if __name__ == "__main__":
    sys.exit(u.main({"ddp-2": scenario(2), "ddp-4": scenario(4)}))
