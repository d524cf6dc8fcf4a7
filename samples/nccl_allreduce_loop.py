#!/usr/bin/env python3
"""nccl_allreduce_loop.py: all-reduce over NCCL at a range of sizes, nccl-tests style.

For each size: warm-up calls, then --iters timed calls (CUDA events on the
current stream), and one line with the size, the mean time per call, the
algorithm bandwidth (bytes / time) and the bus bandwidth (algbw x 2(n-1)/n,
nccl-tests' factor for all-reduce; for n = 1 it equals algbw by convention,
though no byte leaves the GPU). Rank 0 prints; results are checked once per
size against the closed form (every rank contributes rank + 1).

Runs under torchrun (one rank per GPU) or alone (world size 1):
    ringside record -- python3 samples/nccl_allreduce_loop.py --max-bytes 256M
    ringside record -- torchrun --nproc-per-node 8 samples/nccl_allreduce_loop.py
Exits 77 with a message when it cannot run here (no PyTorch, GPU or NCCL).
"""

import argparse
import os
import sys

SKIP = 77


def size_arg(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().rstrip("B")
    if t and t[-1] in units:
        return int(float(t[:-1]) * units[t[-1]])
    return int(t)


def human(n):
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--min-bytes", type=size_arg, default=size_arg("4K"))
    p.add_argument("--max-bytes", type=size_arg, default=size_arg("256M"))
    p.add_argument("--factor", type=int, default=4, help="size multiplier between rows (default 4)")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--dtype", choices=["float32", "float16", "bfloat16"], default="float32")
    args = p.parse_args(argv)
    if args.factor < 2 or args.min_bytes < 4 or args.max_bytes < args.min_bytes:
        p.error("need --factor >= 2 and 4 <= --min-bytes <= --max-bytes")

    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        print(f"nccl_allreduce_loop.py: skipped: no PyTorch ({e})", file=sys.stderr)
        return SKIP
    if not torch.cuda.is_available() or not dist.is_available() or not dist.is_nccl_available():
        print("nccl_allreduce_loop.py: skipped: no CUDA GPU or no NCCL backend", file=sys.stderr)
        return SKIP

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", str(rank)))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29512")
    device = torch.device("cuda", local_rank % torch.cuda.device_count())
    torch.cuda.set_device(device)
    try:  # device_id (PyTorch >= 2.3) makes NCCL create the communicator at once
        dist.init_process_group("nccl", rank=rank, world_size=world, device_id=device)
    except TypeError:
        dist.init_process_group("nccl", rank=rank, world_size=world)
    dtype = getattr(torch, args.dtype)
    elem = torch.tensor([], dtype=dtype).element_size()
    bus_factor = 2.0 * (world - 1) / world if world > 1 else 1.0
    expected = world * (world + 1) / 2

    if rank == 0:
        print(f"# all-reduce sum {args.dtype}, world size {world}, {args.iters} iterations after "
              f"{args.warmup} warm-up")
        print(f"# {'size':>10} {'count':>12} {'time_us':>10} {'algbw_GBs':>10} {'busbw_GBs':>10} {'wrong':>6}")
    size = args.min_bytes
    failures = 0
    while size <= args.max_bytes:
        count = max(1, size // elem)
        buf = torch.empty(count, dtype=dtype, device=device)
        # correctness: one call on known data
        buf.fill_(rank + 1)
        dist.all_reduce(buf)
        wrong = int((buf.float() - expected).abs().gt(1e-3 * expected).sum().item())
        failures += wrong
        for _ in range(args.warmup):
            dist.all_reduce(buf)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(args.iters):
            dist.all_reduce(buf)
        end.record()
        end.synchronize()
        t_us = start.elapsed_time(end) * 1000.0 / args.iters
        nbytes = count * elem
        algbw = nbytes / (t_us * 1e-6) / 1e9
        if rank == 0:
            print(f"  {human(nbytes):>10} {count:>12} {t_us:>10.2f} {algbw:>10.2f} {algbw * bus_factor:>10.2f} "
                  f"{wrong:>6}", flush=True)
        size *= args.factor
    dist.destroy_process_group()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
