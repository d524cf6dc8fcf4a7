"""Training loops of the corpus (tests/e2e_corpus): small PyTorch DDP jobs on Gloo, each a
shape a real job has, each run by `ringside record --ranks N` on Debian's python3-torch.

--shape picks the loop (see SHAPES); the ranks come from RANK / WORLD_SIZE / MASTER_* as
`record --ranks` sets them. Deterministic (seeded), CPU only, a few seconds each. The step
counts the report must find are in test_corpus.py next to the shapes' names.
"""

import argparse
import gc
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class BnCnn(nn.Module):
    """A small CNN with BatchNorm: DDP broadcasts its buffers before every forward."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.head = nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        return self.head(torch.relu(self.bn(self.conv(x))).flatten(1))


class Mlp(nn.Module):
    def __init__(self, hidden, branch=False):
        super().__init__()
        self.a = nn.Linear(64, hidden)
        self.b = nn.Linear(hidden, hidden)
        self.c = nn.Linear(hidden, 10)
        self.unused = nn.Linear(hidden, 10) if branch else None  # never used: unused parameters

    def forward(self, x):
        return self.c(torch.relu(self.b(torch.relu(self.a(x)))))


def batch(shape, step, rank):
    g = torch.Generator().manual_seed(1000 * step + rank)
    if shape.startswith("bn") or shape in ("nosync", "oversub", "eval", "late-once", "late-every"):
        return torch.randn(8, 3, 8, 8, generator=g), torch.randint(0, 10, (8,), generator=g)
    return torch.randn(16, 64, generator=g), torch.randint(0, 10, (16,), generator=g)


def build(shape):
    if shape == "buckets":
        return DDP(Mlp(512), bucket_cap_mb=0.25)
    if shape == "unused":
        return DDP(Mlp(64, branch=True), find_unused_parameters=True)
    if shape in ("metric", "two-groups"):
        return DDP(Mlp(64))
    return DDP(BnCnn())


def train_step(model, opt, shape, step, rank, world, group, args):
    loss_fn = nn.CrossEntropyLoss()
    micro = 4 if shape in ("nosync", "oversub") else 1
    opt.zero_grad()
    for m in range(micro):
        x, y = batch(shape, step * micro + m, rank)
        last = m == micro - 1
        ctx = model.no_sync() if not last else _null()
        with ctx:
            out = model(x)
            loss = loss_fn(out, y)
            if shape == "late-every" and rank == args.late_rank:
                time.sleep(args.late_ms / 1000.0)  # before backward(), every step
            if shape == "late-once" and rank == args.late_rank and step == args.late_step:
                time.sleep(args.late_ms / 1000.0)
            loss.backward()
    opt.step()
    if shape in ("metric", "late-every", "two-groups"):
        metric = loss.detach().clone()
        dist.all_reduce(metric, group=group)  # the job's own metric all-reduce, every step


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def evaluate(model, step, rank):
    model.eval()
    with torch.no_grad():
        for k in range(2):
            x, y = batch("eval", 10000 + 10 * step + k, rank)
            correct = (model(x).argmax(1) == y).float().sum()
            dist.all_reduce(correct)
    model.train()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shape", required=True)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--eval-every", type=int, default=4)
    p.add_argument("--late-rank", type=int, default=1)
    p.add_argument("--late-ms", type=float, default=25)
    p.add_argument("--late-step", type=int, default=5)
    args = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    # two-groups: the metric goes over a second process group of every rank
    group = dist.new_group(list(range(world))) if args.shape == "two-groups" else None
    model = build(args.shape)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(args.steps):
        train_step(model, opt, args.shape, step, rank, world, group, args)
        if args.shape == "eval" and step % args.eval_every == args.eval_every - 1:
            evaluate(model, step, rank)
    # A tail of one-off calls after the loop (bn-cnn): a final metric, a barrier, a broadcast.
    if args.shape == "bn-cnn":
        t = torch.ones(3)
        dist.all_reduce(t)
        dist.barrier()
        dist.broadcast(torch.zeros(5), 0)
        dist.all_reduce(torch.ones(7))
    dist.barrier()  # every rank leaves together: no teardown against a peer already gone
    # DDP's hooks make a reference cycle: left to the collector at interpreter exit, torch
    # 1.13's Reducer destroys the process group there, joining a Gloo worker thread that waits
    # for the GIL the exiting thread holds (seen: a rank hung after its last call). Free it now.
    del model, opt
    gc.collect()
    dist.destroy_process_group()
    if rank == 0:
        print(f"corpus {args.shape}: {args.steps} steps on {world} ranks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
