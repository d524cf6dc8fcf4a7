#!/usr/bin/env python3
"""gpu_train.py: a small PyTorch DDP job on CUDA GPUs with the NCCL backend.

A workload for `ringside record -- torchrun --nproc-per-node N samples/gpu_train.py`
(or `ringside record -- python3 samples/gpu_train.py` for one GPU, world size 1).
Rank and world size come from torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR, MASTER_PORT); without it the script runs alone (world size 1).
Each rank uses GPU LOCAL_RANK. NCCL refuses two ranks on one GPU, so the script
asks for at most one rank per visible GPU.

What it communicates, all through NCCL: DDP's broadcast of the parameters at
construction, one all-reduce per gradient bucket per step, and one all-reduce
of the step's loss (so even world size 1, where DDP may skip its own
communication, makes one NCCL call per step).

Exits 77 with a message on stderr when it cannot run here (no PyTorch, no CUDA
GPU, no NCCL, fewer GPUs than ranks), so test suites report a skip.
"""

import argparse
import json
import os
import sys
import time

SKIP = 77


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=20, help="training steps (default 20)")
    p.add_argument("--batch-size", type=int, default=64, help="per-rank batch size (default 64)")
    p.add_argument("--hidden", type=int, default=1024, help="hidden layer width (default 1024)")
    p.add_argument("--layers", type=int, default=4, help="hidden layers (default 4)")
    p.add_argument("--bucket-cap-mb", type=float, default=25.0, help="DDP bucket_cap_mb (default 25)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--describe", metavar="FILE.json",
                   help="rank 0 writes parameter count, gradient bytes, steps and world size here")
    args = p.parse_args(argv)
    if args.steps < 1:
        p.error("--steps must be >= 1")
    return args


def skip(why):
    print(f"gpu_train.py: skipped: {why}", file=sys.stderr)
    sys.exit(SKIP)


def main(argv):
    args = parse_args(argv)
    try:
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
    except ImportError as e:
        skip(f"no PyTorch ({e})")
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        skip("no CUDA GPU")
    if not dist.is_available() or not dist.is_nccl_available():
        skip("this PyTorch has no NCCL backend")

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", str(rank)))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", str(world)))
    if local_world > torch.cuda.device_count():
        skip(f"{local_world} ranks on this host but {torch.cuda.device_count()} GPU(s); "
             "NCCL needs one GPU per rank")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29511")
    os.environ.setdefault("RANK", str(rank))
    os.environ.setdefault("WORLD_SIZE", str(world))

    device = torch.device("cuda", local_rank % torch.cuda.device_count())
    torch.cuda.set_device(device)
    try:  # device_id (PyTorch >= 2.3) makes NCCL create the communicator at once
        dist.init_process_group("nccl", rank=rank, world_size=world, device_id=device)
    except TypeError:
        dist.init_process_group("nccl", rank=rank, world_size=world)

    torch.manual_seed(args.seed)
    layers = [nn.Linear(256, args.hidden), nn.ReLU()]
    for _ in range(args.layers - 1):
        layers += [nn.Linear(args.hidden, args.hidden), nn.ReLU()]
    layers.append(nn.Linear(args.hidden, 10))
    model = nn.Sequential(*layers).to(device)
    ddp = DDP(model, device_ids=[device.index], bucket_cap_mb=args.bucket_cap_mb)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()

    params = sum(p.numel() for p in model.parameters())
    grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    if rank == 0 and args.describe:
        with open(args.describe, "w") as f:
            json.dump({"parameters": params, "gradient_bytes": grad_bytes, "steps": args.steps,
                       "world_size": world, "device": torch.cuda.get_device_name(device)}, f)

    # Each rank its own deterministic data.
    g = torch.Generator(device="cpu").manual_seed(args.seed + rank)
    t0 = time.perf_counter()
    for step in range(args.steps):
        x = torch.randn(args.batch_size, 256, generator=g).to(device, non_blocking=True)
        y = torch.randint(0, 10, (args.batch_size,), generator=g).to(device, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(ddp(x), y)
        loss.backward()
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean, op=dist.ReduceOp.SUM)
        mean /= world
        if rank == 0:
            print(f"step {step} loss {mean.item():.4f}", flush=True)
    torch.cuda.synchronize(device)
    if rank == 0:
        dt = time.perf_counter() - t0
        print(f"done: {args.steps} steps, world size {world}, {params} parameters, "
              f"{grad_bytes} gradient bytes per step, {dt / args.steps * 1000:.2f} ms/step", flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
