#!/usr/bin/python3
"""ddp_train.py: a small, deterministic PyTorch DDP job on CPU with the Gloo backend.

It is a workload for `ringside record --ranks N -- /usr/bin/python3 samples/ddp_train.py`
and for the end-to-end tests, so the same arguments give the same stdout, traced or not.

Run it with Debian's /usr/bin/python3 (python3-torch 1.13). The process group is
initialised from the torchrun environment: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT.

What it communicates (torch 1.13, find_unused_parameters=False), all through Gloo:
  * at DDP construction: an allgather of parameter shapes (_verify_params_across_processes)
    and one broadcast from rank 0 of all parameters and buffers (_sync_module_states);
  * step 1: one all-reduce of every gradient in a single bucket (DDP does not bucket the
    first iteration because it does not yet know the order gradients become ready);
  * before step 2's backward: DDP rebuilds the buckets in the order gradients arrived and
    rank 0 broadcasts the new bucket assignment;
  * step 2 onwards: one all-reduce per bucket; the first bucket holds at most
    --first-bucket-mb, the others at most --bucket-cap-mb.
Every step all-reduces exactly the gradient bytes (--describe writes that number).
"""

import argparse
import json
import multiprocessing
import os
import sys
import time


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=20, help="training steps (default 20)")
    p.add_argument("--bucket-cap-mb", type=float, default=25.0,
                   help="DDP bucket_cap_mb (default DDP's 25)")
    p.add_argument("--first-bucket-mb", type=float, default=None,
                   help="size cap of DDP's first bucket after the rebuild "
                        "(default DDP's 1 MiB); tests set it to the bucket cap")
    p.add_argument("--batch-size", type=int, default=16, help="per-rank batch size (default 16)")
    p.add_argument("--hidden", type=int, default=64, help="hidden layer width (default 64)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--describe", metavar="FILE.json",
                   help="rank 0 writes parameter count, gradient bytes, steps and world size here")
    p.add_argument("--pool-workers", type=int, default=0,
                   help="use a fork-based multiprocessing.Pool (one task per worker, so workers "
                        "are forked again and again) while DDP steps run")
    p.add_argument("--report-step-time", action="store_true",
                   help="rank 0 prints 'step_time_ms X', 'step_time_median_ms Y' and 'step_cpu_ms Z': "
                        "the mean and median wall time and the mean CPU time of its process of the "
                        "steps after the first two (tools/perf/overhead.py)")
    p.add_argument("--slow-rank", type=int, default=-1, metavar="R",
                   help="rank R computes --slow-ms longer before each backward: a straggler, as a "
                        "slower GPU or a busier host makes one (for demonstrations and tests)")
    p.add_argument("--slow-ms", type=float, default=0.0, metavar="MS",
                   help="how much longer rank --slow-rank computes per step (default 0)")
    p.add_argument("--slow-spin", action="store_true",
                   help="rank --slow-rank spends its --slow-ms computing (a busy loop on the CPU) "
                        "instead of sleeping: CPU time that shows in the trace's CPU samples")
    p.add_argument("--log-every", type=int, default=1, metavar="N",
                   help="rank 0 prints the loss every N steps (default 1; 0: only after the last "
                        "step, for balanced ranks)")
    p.add_argument("--mark-steps", type=int, default=None, metavar="FIRST",
                   help="call ringside_steps.py's marker at the start of every step, numbering "
                        "the steps from FIRST (explicit steps for ringside; nothing untraced)")
    args = p.parse_args(argv)
    if args.slow_ms < 0:
        p.error("--slow-ms must be >= 0")
    if args.steps < 1:
        p.error("--steps must be >= 1")
    if args.bucket_cap_mb <= 0:
        p.error("--bucket-cap-mb must be > 0")
    return args


def pool_work(step):
    """What a Pool worker does: some arithmetic, no torch, no collectives."""
    return sum(i * i for i in range(20000 + step))


def env_int(name):
    value = os.environ.get(name)
    if value is None:
        sys.exit(f"ddp_train.py: {name} is not set (run under `ringside record --ranks N` or torchrun)")
    return int(value)


def main(argv):
    args = parse_args(argv)
    rank = env_int("RANK")
    world = env_int("WORLD_SIZE")
    for name in ("MASTER_ADDR", "MASTER_PORT"):
        if name not in os.environ:
            sys.exit(f"ddp_train.py: {name} is not set")

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    # One intra-op thread: four ranks share two cores, and results must not depend on
    # how work was split between threads.
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world)

    # Each rank initialises differently on purpose: DDP's initial broadcast makes every
    # replica start from rank 0's weights.
    torch.manual_seed(args.seed + rank)
    n_in, n_out = 32, 8
    model = nn.Sequential(
        nn.Linear(n_in, args.hidden), nn.ReLU(),
        nn.Linear(args.hidden, args.hidden), nn.ReLU(),
        nn.Linear(args.hidden, n_out),
    )
    if args.first_bucket_mb is not None:
        # DDP reads this module attribute when it builds its Reducer (documented in
        # torch/nn/parallel/distributed.py as the knob for the first bucket).
        dist._DEFAULT_FIRST_BUCKET_BYTES = int(args.first_bucket_mb * 1024 * 1024)
    ddp = DDP(model, bucket_cap_mb=args.bucket_cap_mb)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    loss_fn = nn.MSELoss()

    # Synthetic regression data, identical on every rank; each rank takes its own shard.
    gen = torch.Generator().manual_seed(args.seed)
    samples = args.batch_size * world * 4
    x_all = torch.randn(samples, n_in, generator=gen)
    w_true = torch.randn(n_in, n_out, generator=gen)
    y_all = torch.tanh(x_all @ w_true) + 0.01 * torch.randn(samples, n_out, generator=gen)
    x_mine, y_mine = x_all[rank::world], y_all[rank::world]
    batches = x_mine.shape[0] // args.batch_size

    params = [p for p in model.parameters() if p.requires_grad]
    facts = {
        "world_size": world,
        "steps": args.steps,
        "param_count": sum(p.numel() for p in params),
        "grad_bytes": sum(p.numel() * p.element_size() for p in params),
        # What DDP's initial broadcast carries: every parameter and buffer.
        "state_bytes": sum(t.numel() * t.element_size()
                           for t in list(model.parameters()) + list(model.buffers())),
        "param_tensors": len(params),
        "dtype": "float32",
        "bucket_cap_bytes": int(args.bucket_cap_mb * 1024 * 1024),
        "first_bucket_bytes": int(dist._DEFAULT_FIRST_BUCKET_BYTES),
        "torch_version": torch.__version__,
    }

    pool = None
    if args.pool_workers > 0:
        pool = multiprocessing.get_context("fork").Pool(args.pool_workers, maxtasksperchild=1)

    mark = None
    if args.mark_steps is not None:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from ringside_steps import step_marker
        mark = step_marker()

    step_starts, cpu_starts = [], []
    for step in range(args.steps):
        if mark is not None:
            mark(args.mark_steps + step)
        step_starts.append(time.perf_counter())
        cpu_starts.append(time.process_time())
        pending = pool.apply_async(pool_work, (step,)) if pool is not None else None
        b = step % batches
        xb = x_mine[b * args.batch_size:(b + 1) * args.batch_size]
        yb = y_mine[b * args.batch_size:(b + 1) * args.batch_size]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(ddp(xb), yb)
        if rank == args.slow_rank and args.slow_ms > 0:
            if args.slow_spin:  # the straggler's extra compute, on the CPU
                until = time.perf_counter() + args.slow_ms / 1000.0
                while time.perf_counter() < until:
                    pass
            else:
                time.sleep(args.slow_ms / 1000.0)  # the straggler's extra compute, idle
        loss.backward()  # DDP all-reduces the gradient buckets here
        opt.step()
        if pending is not None and pending.get(timeout=60) != pool_work(step):
            sys.exit("ddp_train.py: pool worker returned a wrong result")
        # Rank 0 logs (loss.item() waits for the step; the print flushes): a real job's rank 0
        # does the same, and ringside sees it as extra compute on rank 0.
        last = step + 1 == args.steps
        if rank == 0 and (last or (args.log_every > 0 and (step + 1) % args.log_every == 0)):
            print(f"step {step + 1:4d}/{args.steps} loss {loss.item():.6f}", flush=True)

    step_starts.append(time.perf_counter())
    cpu_starts.append(time.process_time())
    if args.report_step_time and rank == 0:
        timed = step_starts[2:] if len(step_starts) > 3 else step_starts
        mean_ms = (timed[-1] - timed[0]) * 1000.0 / max(1, len(timed) - 1)
        print(f"step_time_ms {mean_ms:.4f}", flush=True)
        # The median step: a step the scheduler preempted (2 cores shared) does not move it.
        each = sorted(b - a for a, b in zip(timed, timed[1:])) or [0.0]
        print(f"step_time_median_ms {each[len(each) // 2] * 1000.0:.4f}", flush=True)
        # CPU time of this process (all its threads: Gloo's, ringside's writer) per step: what
        # tracing adds, less sensitive than wall time to what else the machine runs.
        cpu = cpu_starts[2:] if len(cpu_starts) > 3 else cpu_starts
        print(f"step_cpu_ms {(cpu[-1] - cpu[0]) * 1000.0 / max(1, len(cpu) - 1):.4f}", flush=True)

    if pool is not None:
        pool.close()
        pool.join()

    if args.describe and rank == 0:
        tmp = args.describe + ".tmp"
        with open(tmp, "w") as f:
            json.dump(facts, f, indent=2, sort_keys=True)
            f.write("\n")
        os.replace(tmp, args.describe)

    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
