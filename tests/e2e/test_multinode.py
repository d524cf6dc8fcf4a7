#!/usr/bin/env python3
"""End-to-end: recording a job over several nodes on one machine (docs/multi-node.md).

Scenarios:
  nnodes-shared    two `record --nnodes 2 --node-rank 0/1 --ranks 2` at once into one folder
                   (node-0/, node-1/), then `merge DIR`: 4 ranks, one run id, nothing missing
  nnodes-separate  the same into two folders (node-local disks) with --run-id, merged from both;
                   one folder alone names the missing ranks
  preload-slurm    LD_PRELOAD exported, no `ringside record`, environment as srun sets it: the
                   run id is the Slurm job and step; two nodes' folders merged
  preload-ompi     the same with Open MPI's mpirun environment (its job id)
  merge-two-runs   rank files of two runs given to one merge: exit 1, one line naming both
  nnodes-usage     bad --nnodes/--node-rank/--run-id/--node-merge combinations: exit 2, one line each
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__))))
from e2e_util import (Trace, check, check_eq, clean_env, main, meta_list, preload_value,  # noqa: E402
                      rank_file_meta, rank_files, rank_of, run, spawn, wait_all, free_port)

# What launchers set that ringside derives a run id from: never inherited from the test's own
# environment (a CI runner under Slurm would otherwise change the run ids).
LAUNCHER_VARS = ("TORCHELASTIC_RUN_ID", "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid",
                 "SLURM_JOB_ID", "SLURM_STEP_ID")


def job_env(**extra):
    env = clean_env(**extra)
    for k in LAUNCHER_VARS:
        if k not in extra:
            env.pop(k, None)
    return env


def gloo_command(ctx):
    ctx.need_gloo_sample()
    return [ctx.gloo_sample, "--iters", "2", "--bytes", "4096"]


def record_node(ctx, node, nnodes, port, store, extra_args):
    argv = [ctx.ringside, "record", "--nnodes", nnodes, "--node-rank", node, "--ranks", 2,
            "--master-port", port, "-q", *extra_args, "--", *gloo_command(ctx)]
    return spawn(argv, env=job_env(GLOO_STORE_DIR=store), cwd=ctx.scratch)


def run_nodes(ctx, per_node_args, timeout=120):
    """One `record` per node at once; returns their Results."""
    ctx.need_ringside()
    port = free_port()
    store = ctx.mkdir("store")
    procs = [record_node(ctx, k, len(per_node_args), port, store, args)
             for k, args in enumerate(per_node_args)]
    results = wait_all(procs, timeout)
    for r in results:
        r.expect(0)
    return port, results


def ranks_in(folder):
    return sorted(rank_of(f) for f in rank_files(folder))


def run_ids_in(*folders):
    return {rank_file_meta(f).get("run_id") for d in folders for f in rank_files(d)}


def merge(ctx, inputs, output, *extra):
    return run([ctx.ringside, "merge", "-q", *extra, *inputs, "-o", output], timeout=60,
               env=job_env())


def check_merged(path, world, run_id):
    t = Trace(path)
    try:
        check_eq(t.ranks(), list(range(world)), f"ranks of {path}")
        meta = t.meta()
        check_eq(meta.get("run_id"), run_id, "merged meta run_id")
        check_eq(meta_list(meta.get("missing_ranks")), [], "missing ranks")
        check_eq(int(meta.get("world_size")), world, "world_size")
        # torchrun's numbering: local ranks 0,1 on each node.
        local = dict(t.rows("SELECT rank, local_rank FROM rank"))
        check_eq([local[r] for r in range(world)], [r % 2 for r in range(world)], "local_rank")
    finally:
        t.close()


def nnodes_shared(ctx):
    trace = ctx.path("job.sqlite")
    port, results = run_nodes(ctx, [["-o", trace], ["-o", trace]])
    dir_ = trace + ".ranks"
    for k, r in enumerate(results):
        want = f"node {k} of 2: 2 rank file(s) in {dir_}/node-{k}"
        check(want in r.stderr, f"node {k} says where its files are ({want!r}):\n{r.stderr}")
        check(f"ringside merge {dir_} -o {trace}" in r.stderr,
              f"node {k} prints the merge command:\n{r.stderr}")
    check(not os.path.exists(trace), "no node merged on its own")
    check_eq(ranks_in(os.path.join(dir_, "node-0")), [0, 1], "ranks of node-0")
    check_eq(ranks_in(os.path.join(dir_, "node-1")), [2, 3], "ranks of node-1")
    run_id = f"nodes:127.0.0.1:{port}"
    check_eq(run_ids_in(dir_ + "/node-0", dir_ + "/node-1"), {run_id}, "run ids of the rank files")
    merge(ctx, [dir_], trace).expect(0)
    check_merged(trace, 4, run_id)

    # A node folder that still holds a run's files is refused before the job starts (the
    # derived run id would be the same again).
    r = run([ctx.ringside, "record", "--nnodes", 2, "--node-rank", 1, "--ranks", 2,
             "--master-port", port, "-o", ctx.path("again.sqlite"), "--dir", dir_, "--",
             *gloo_command(ctx)], env=job_env(), timeout=60)
    r.expect(2)
    check("already holds 2 rank file(s)" in r.stderr and len(r.stderr.splitlines()) == 1,
          f"one line refusing the used node folder:\n{r.stderr}")


def nnodes_separate(ctx):
    a, b = ctx.path("disk-a"), ctx.path("disk-b")
    run_nodes(ctx, [["--dir", a, "--run-id", "job-7"], ["--dir", b, "--run-id", "job-7"]])
    for d in (a, b):
        check(os.path.isdir(d), f"{d} was made")
    check_eq(run_ids_in(a + "/node-0", b + "/node-1"), {"job-7"}, "run ids")
    trace = ctx.path("job.sqlite")
    merge(ctx, [a, b], trace).expect(0)
    check_merged(trace, 4, "job-7")

    # One node's folder alone: merged, and the missing ranks are named even under -q.
    part = ctx.path("part.sqlite")
    r = merge(ctx, [a], part).expect(0)
    check("missing rank(s) 2" in r.stderr and "of 4" in r.stderr,
          f"merge names the missing ranks:\n{r.stderr}")


def start_preloaded(ctx, folders, env_of):
    """Starts 4 ranks of the gloo sample with LD_PRELOAD only, ranks 0,1 writing into
    folders[0] and 2,3 into folders[1]; env_of(rank) adds the launcher's variables."""
    ctx.need_preload()
    store = ctx.mkdir("store-" + os.path.basename(folders[0]))
    port = free_port()
    procs = []
    for r in range(4):
        env = job_env(RANK=r, WORLD_SIZE=4, LOCAL_RANK=r % 2, MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=port, GLOO_STORE_DIR=store, RINGSIDE_DIR=folders[r // 2],
                      LD_PRELOAD=preload_value(ctx.preload), **env_of(r))
        procs.append(spawn(gloo_command(ctx), env=env, cwd=ctx.scratch))
    for res in wait_all(procs, 120):
        res.expect(0)


def slurm_env(job, step):
    def env_of(r):
        return {"SLURM_JOB_ID": job, "SLURM_STEP_ID": step, "SLURM_PROCID": r,
                "SLURM_NTASKS": 4, "SLURM_LOCALID": r % 2, "SLURM_NODEID": r // 2,
                "SLURM_NNODES": 2}
    return env_of


def preload_slurm(ctx):
    a, b = ctx.path("slurm-n0"), ctx.path("slurm-n1")
    start_preloaded(ctx, [a, b], slurm_env(4242, 3))
    check_eq(run_ids_in(a, b), {"slurm:4242.3"}, "run ids from SLURM_JOB_ID.SLURM_STEP_ID")
    trace = ctx.path("slurm.sqlite")
    merge(ctx, [a, b], trace).expect(0)
    check_merged(trace, 4, "slurm:4242.3")


def preload_ompi(ctx):
    a, b = ctx.path("ompi-n0"), ctx.path("ompi-n1")

    def env_of(r):
        return {"OMPI_COMM_WORLD_RANK": r, "OMPI_COMM_WORLD_SIZE": 4,
                "OMPI_COMM_WORLD_LOCAL_RANK": r % 2, "OMPI_COMM_WORLD_LOCAL_SIZE": 2,
                "OMPI_MCA_ess_base_jobid": 2753888257}
    start_preloaded(ctx, [a, b], env_of)
    check_eq(run_ids_in(a, b), {"ompi:2753888257"}, "run ids from Open MPI's job id")
    trace = ctx.path("ompi.sqlite")
    merge(ctx, [a, b], trace).expect(0)
    check_merged(trace, 4, "ompi:2753888257")


def merge_two_runs(ctx):
    a, b = ctx.path("run1"), ctx.path("run2")
    start_preloaded(ctx, [a, a], slurm_env(100, 0))
    start_preloaded(ctx, [b, b], slurm_env(101, 0))
    r = merge(ctx, [a, b], ctx.path("mixed.sqlite"))
    r.expect(1)
    lines = r.stderr.strip().splitlines()
    check_eq(len(lines), 1, f"lines of the error ({r.stderr!r})")
    check(a in lines[0] and b in lines[0] and "slurm:100.0" in lines[0]
          and "slurm:101.0" in lines[0], f"the error names a file of each run: {lines[0]}")
    check(not os.path.exists(ctx.path("mixed.sqlite")), "nothing written")
    # --run-id picks one of them.
    merge(ctx, [a, b], ctx.path("one.sqlite"), "--run-id", "slurm:101.0").expect(0)
    check_merged(ctx.path("one.sqlite"), 4, "slurm:101.0")


def nnodes_usage(ctx):
    ctx.need_ringside()
    cases = [
        (["--nnodes", 2, "-o", "x.sqlite"], "needs --node-rank"),
        (["--node-rank", 1, "-o", "x.sqlite"], "--node-rank needs --nnodes"),
        (["--nnodes", 2, "--node-rank", 2, "-o", "x.sqlite"], "must be below --nnodes 2"),
        (["--nnodes", 2, "--node-rank", 0], "give -o TRACE.sqlite or --dir DIR"),
        (["--nnodes", 2, "--node-rank", 0, "-o", "x.sqlite"], "give --run-id ID"),
        (["--run-id", "a b"], "no spaces"),
        (["--node-merge", "-o", "x.sqlite"], "--node-merge needs --nnodes N"),
        (["--nnodes", 2, "--node-rank", 0, "--node-merge", "--no-merge", "-o", "x.sqlite"],
         "--node-merge needs --nnodes N"),
    ]
    for args, want in cases:
        r = run([ctx.ringside, "record", *args, "--", "true"], env=job_env(), cwd=ctx.scratch,
                timeout=30)
        r.expect(2)
        check(want in r.stderr and len(r.stderr.strip().splitlines()) == 1,
              f"record {args}: one line saying {want!r}:\n{r.stderr}")
    check(not os.path.exists(ctx.path("x.sqlite.ranks")), "no folder left behind")


SCENARIOS = {
    "nnodes-shared": nnodes_shared,
    "nnodes-separate": nnodes_separate,
    "preload-slurm": preload_slurm,
    "preload-ompi": preload_ompi,
    "merge-two-runs": merge_two_runs,
    "nnodes-usage": nnodes_usage,
}

if __name__ == "__main__":
    sys.exit(main(SCENARIOS))
