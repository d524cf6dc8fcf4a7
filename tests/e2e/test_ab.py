"""A/B runs: the same job with its Gloo all-reduces rerouted to ringside's reference ring,
tree or multipath (`ringside record --allreduce ring|tree|multipath`, RINGSIDE_ALLREDUCE).

What must hold:
  * the DDP sample trains to the same losses as with Gloo (within float tolerance: the
    reference sums in another order) and exits 0;
  * every rank's all-reduces are recorded as ringside-ring / ringside-tree, one per DDP
    bucket, adding up to the gradient bytes each step; the other collectives stay Gloo's;
  * every rank shows the algorithm's phases and steps: ring reduce-scatter and all-gather with
    steps 0..n-2 towards rank+1 only; tree reduce and broadcast on tree edges only; multipath
    (no topology: every pair an equal link; 3 ranks: the ring and its reverse) the ring's phases
    and steps towards both other ranks;
  * the C++ sample's exact checks pass with its all-reduces rerouted;
  * all-reduces in flight on two threads at once and reaching each rank in its own order (as
    PyTorch's process group runs them; `gloo_collectives --workers 2 --jitter-ms 300` delays the
    worker threads of ranks 1..n-1 at random, rank 0 races ahead) each get their own result
    with every algorithm: the old failure (issue 29: frames of one call read as another's,
    `rank 2 sent a malformed frame`) came within the first calls of every run.

Scenarios: ab-ddp-ring, ab-ddp-tree, ab-ddp-multipath (3 ranks: odd, so the double binary tree has a rank
interior in both trees), ab-cpp, ab-stress (RINGSIDE_STRESS_CALLS all-reduces a run, 150 by
default, on 4 ranks with each algorithm).
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util as u  # noqa: E402

WORLD = 3
STEPS = 5
BUCKET_MB = "0.01"


def losses(text):
    return [float(m.group(1)) for m in re.finditer(r"loss ([0-9.eE+-]+)", text)]


def ddp_scenario(algo):
    def body(ctx):
        ctx.need_ddp_sample()
        args = [ctx.python, ctx.ddp_sample, "--steps", STEPS, "--bucket-cap-mb", BUCKET_MB,
                "--first-bucket-mb", BUCKET_MB, "--describe", ctx.path("describe.json")]
        base = ctx.record(["--ranks", WORLD, "-o", ctx.path("gloo.sqlite"), "-q"], args, timeout=300)
        base.expect(0)
        res = ctx.record(["--ranks", WORLD, "--allreduce", algo, "-o", ctx.path(f"{algo}.sqlite"),
                          "-q"], args, timeout=300)
        res.expect(0)
        want, got = losses(base.stdout), losses(res.stdout)
        u.check_eq(len(got), STEPS, "loss lines")
        for step, (a, b) in enumerate(zip(want, got), 1):
            u.check(abs(a - b) <= 1e-5 * max(1.0, abs(a)), f"step {step}: loss {b} vs Gloo's {a}")
        grad_bytes = u.read_json(ctx.path("describe.json"))["grad_bytes"]

        trace = u.Trace(ctx.path(f"{algo}.sqlite"))
        u.check_eq(trace.ranks(), list(range(WORLD)), "ranks")
        lib = f"ringside-{algo}"
        libs = trace.rows("SELECT DISTINCT library FROM collective WHERE op = 'allreduce'")
        u.check_eq(libs, [(lib,)], "libraries of the all-reduces")
        phases = {"ring": ("reduce-scatter", "all-gather"), "tree": ("reduce", "broadcast"),
                  "multipath": ("reduce-scatter", "all-gather")}[algo]
        for r in range(WORLD):
            rows = trace.rows("SELECT id, bytes, algorithm FROM collective WHERE rank = ? AND "
                              "op = 'allreduce' ORDER BY start_ns", (r,))
            u.check_eq(sum(b for _, b, _ in rows), STEPS * grad_bytes, f"rank {r}: all-reduced bytes")
            u.check(all(a == algo for _, _, a in rows), f"rank {r}: algorithm column")
            for cid, nbytes, _ in rows:
                sent = trace.rows("SELECT phase, step, dst_rank, bytes FROM transfer WHERE "
                                  "collective_id = ? AND side = 'send'", (cid,))
                got_phases = {p for p, _, _, _ in sent}
                u.check_eq(got_phases, set(phases), f"rank {r} call {cid}: phases")
                if algo == "ring":
                    for p in phases:
                        steps = sorted({s for ph, s, _, _ in sent if ph == p})
                        u.check_eq(steps, list(range(WORLD - 1)), f"rank {r} {p} steps")
                    u.check_eq({d for _, _, d, _ in sent}, {(r + 1) % WORLD}, f"rank {r}: ring peer")
                    # Each phase moves (n-1)/n of the buffer (up to the uneven last segment).
                    for p in phases:
                        moved = sum(b for ph, _, _, b in sent if ph == p)
                        u.check(abs(moved - nbytes * (WORLD - 1) / WORLD) <= nbytes / WORLD + 8,
                                f"rank {r} {p}: {moved} bytes sent for a {nbytes}-byte buffer")
                elif algo == "multipath":
                    for p in phases:
                        steps = sorted({s for ph, s, _, _ in sent if ph == p})
                        u.check_eq(steps, list(range(WORLD - 1)), f"rank {r} {p} steps")
                    u.check_eq({d for _, _, d, _ in sent}, set(range(WORLD)) - {r},
                               f"rank {r}: multipath peers (the ring both ways)")
                else:
                    u.check(all(s >= 0 for _, s, _, _ in sent), f"rank {r}: tree steps recorded")
                    u.check(all(d != r for _, _, d, _ in sent), f"rank {r}: tree sends to itself")
            recv = trace.rows("SELECT count(*) FROM transfer WHERE rank = ? AND side = 'recv' AND "
                              "phase IN (?, ?)", (r, *phases))[0][0]
            u.check(recv > 0, f"rank {r}: no received messages of the reference recorded")
        others = trace.rows("SELECT DISTINCT op, library FROM collective WHERE op != 'allreduce'")
        u.check(all(l == "gloo" for _, l in others), f"non-all-reduce calls must stay Gloo's: {others}")
    return body


def ab_cpp(ctx):
    ctx.need_gloo_sample()
    for algo in ("ring", "tree"):
        res = ctx.record(["--ranks", 4, "--allreduce", algo, "-o", ctx.path(f"cpp-{algo}.sqlite"),
                          "-q"], [ctx.gloo_sample, "--iters", 3, "--bytes", 40000], timeout=180)
        res.expect(0)
        u.check("OK allreduce" in res.stdout, f"{algo}: the sample's all-reduce check\n{res.stdout}")
        trace = u.Trace(ctx.path(f"cpp-{algo}.sqlite"))
        n = trace.rows("SELECT count(*) FROM collective WHERE library = ?", (f"ringside-{algo}",))[0][0]
        u.check(n >= 4 * 3, f"{algo}: {n} rerouted all-reduces recorded")


def ab_stress(ctx):
    ctx.need_gloo_sample()
    calls = int(os.environ.get("RINGSIDE_STRESS_CALLS", "150"))
    world = 4
    for algo in ("multipath", "ring", "tree"):
        out = ctx.path(f"stress-{algo}.sqlite")
        res = ctx.record(["--ranks", world, "--allreduce", algo, "-o", out, "-q"],
                         [ctx.gloo_sample, "--workers", 2, "--iters", calls, "--jitter-ms", 300,
                          "--bytes", 65536], timeout=240)
        res.expect(0)
        u.check(f"OK allreduce ranks={world} calls={calls} workers=2" in res.stdout,
                f"{algo}: the sample's checks\n{res.stdout}\n{res.stderr}")
        trace = u.Trace(out)
        lib = f"ringside-{algo}"
        # One seq per call, the same call on every rank: the rank's calls ran in their own order,
        # but each is recorded under its tag, with the same size on every rank.
        rows = trace.rows("SELECT seq, count(DISTINCT rank), count(DISTINCT bytes), min(status), "
                          "max(status) FROM collective WHERE library = ? GROUP BY seq", (lib,))
        u.check_eq(len(rows), calls, f"{algo}: distinct calls")
        bad = [r for r in rows if r[1:] != (world, 1, 0, 0)]
        u.check(not bad, f"{algo}: calls not alike on every rank: {bad[:5]}")
        # The calls overlapped somewhere (two in flight at once on one rank), else this
        # tested nothing new.
        overlap = trace.rows("SELECT count(*) FROM collective a JOIN collective b ON a.rank = b.rank "
                             "AND a.id < b.id AND a.start_ns < b.end_ns AND b.start_ns < a.end_ns "
                             "WHERE a.library = ? AND b.library = ?", (lib, lib))[0][0]
        u.check(overlap > 0, f"{algo}: no two calls were in flight at once on any rank")


if __name__ == "__main__":
    u.main({"ab-ddp-ring": ddp_scenario("ring"), "ab-ddp-tree": ddp_scenario("tree"),
            "ab-ddp-multipath": ddp_scenario("multipath"),
            "ab-cpp": ab_cpp, "ab-stress": ab_stress})
