"""The C++ Gloo sample recorded on 2 and 4 ranks: every wrapped collective on every rank,
comm+seq identifying the same call across ranks, and the messages Gloo's algorithms must send.

Scenarios: gloo-2, gloo-4.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as u  # noqa: E402

ITERS = 2
BYTES = 1000  # 250 int32 elements per rank and collective
ELEMS = BYTES // 4


def untraced_stdout(ctx, world, args):
    procs = ctx.start_ranks(world, [ctx.gloo_sample, *args], preload=False)
    results = u.wait_all(procs, timeout=120)
    for r, res in enumerate(results):
        res.expect(0)
        u.check_eq(res.stderr, "", f"untraced rank {r} stderr")
    return results[0].stdout


def record_sample(ctx, world):
    ctx.need_gloo_sample()
    args = ["--iters", ITERS, "--bytes", BYTES]
    baseline = untraced_stdout(ctx, world, args)
    trace_path = ctx.path("trace.sqlite")
    rank_dir = ctx.path("ranks")
    res = ctx.record(["--ranks", world, "-o", trace_path, "--dir", rank_dir, "--keep-rank-files"],
                     [ctx.gloo_sample, *args],
                     env=u.clean_env(GLOO_STORE_DIR=ctx.mkdir("store")))
    res.expect(0)
    u.check_eq(res.stdout, baseline, "stdout of the recorded job vs an untraced run")
    u.check_eq(len(u.rank_files(rank_dir)), world, f"rank files in {rank_dir}")
    return u.Trace(trace_path)


def alltoallv_sample(world):
    # gloo_collectives: rank s sends ELEMS + (s + d) % 3 int32 elements to rank d.
    return lambda per_rank: u.alltoallv_messages(world, lambda s, d: (ELEMS + (s + d) % 3) * 4)


def scenario(world):
    def body(ctx):
        trace = record_sample(ctx, world)
        u.check_eq(trace.quick_check(), "ok", "PRAGMA quick_check of the merged trace")
        u.check_eq(trace.ranks(), list(range(world)), "ranks in table rank")
        sizes = {ws for (ws,) in trace.rows("SELECT world_size FROM rank")}
        u.check_eq(sizes, {world}, "world_size in table rank")
        meta = trace.meta()
        u.check_eq(u.meta_list(meta.get("cut_off_ranks")), [], "meta cut_off_ranks")
        u.check_eq(u.meta_list(meta.get("missing_ranks")), [], "meta missing_ranks")

        # Every rank recorded the sample's exact call sequence: ITERS rounds of all ten
        # collectives, then the closing barrier, in one communicator.
        want_ops = list(u.GLOO_OPS) * ITERS + ["barrier"]
        for r in range(world):
            mine = u.calls(trace, "rank = ?", (r,))
            u.check_eq([c.op for c in mine], want_ops, f"ops recorded on rank {r} in seq order")
            u.check_eq(len({c.comm for c in mine}), 1, f"communicators on rank {r}")
            seqs = [c.seq for c in mine]
            u.check_eq(seqs, sorted(set(seqs)), f"seq numbers on rank {r} are distinct and ordered")
            for c in mine:
                u.check(c.status == 0, f"rank {r} {c.op} seq {c.seq}: status {c.status}")
                u.check(c.end_ns is not None and c.end_ns >= c.start_ns,
                        f"rank {r} {c.op} seq {c.seq}: end_ns {c.end_ns} start_ns {c.start_ns}")
        by_key = u.check_seq_matches(trace, world)

        # Sizes and roots the sample uses (see samples/gloo_collectives.cpp).
        for (comm, seq), per_rank in by_key.items():
            for r, c in per_rank.items():
                if c.op in ("allreduce", "broadcast", "allgather", "reduce", "gather"):
                    u.check_eq(c.bytes, BYTES, f"rank {r} {c.op} seq {seq}: bytes")
                if c.op == "allgatherv":
                    u.check_eq(c.bytes, (ELEMS + r) * 4, f"rank {r} allgatherv seq {seq}: bytes")
        for op, shift in (("broadcast", 0), ("reduce", 1), ("gather", 2), ("scatter", 3)):
            roots = [c.root for c in u.calls(trace, "rank = 0 AND op = ?", (op,))]
            u.check_eq(roots, [(it + shift) % world for it in range(ITERS)], f"{op} roots")

        checked = u.check_transfers(trace, world, by_key,
                                    overrides={"alltoallv": alltoallv_sample(world)})
        print(f"calls with checked transfers, per op: {dict(sorted(checked.items()))}")
        for op in u.GLOO_OPS:
            if op == "barrier":
                continue  # empty messages: checked when recorded, not required
            u.check(checked.get(op, 0) >= ITERS, f"{op}: transfers checked for {checked.get(op, 0)} "
                                                 f"calls, expected {ITERS}")
        trace.close()
    return body


if __name__ == "__main__":
    sys.exit(u.main({"gloo-2": scenario(2), "gloo-4": scenario(4)}))
