// collector/run_id.h — the run id that every process of one job derives alike from its
// launcher's environment, so rank files written on several machines can be told apart from
// another run's and merged together (meta run_id; docs/multi-node.md).
#pragma once

#include <string>

namespace ringside::collector {

// From this process's environment, first found of:
//   TORCHELASTIC_RUN_ID (torchrun's --rdzv-id; not its default "none")  -> "torchelastic:ID"
//   PMIX_NAMESPACE (Open MPI 4/5, Slurm's PMIx plugin)                 -> "pmix:NS"
//   OMPI_MCA_ess_base_jobid (Open MPI's mpirun without PMIx)            -> "ompi:JOBID"
//   SLURM_JOB_ID with SLURM_STEP_ID (srun)                              -> "slurm:JOB.STEP"
// "" when none is set. RINGSIDE_RUN_ID, when set, wins over all of them: that is the
// caller's to check (the collector's config and `ringside record` do).
std::string launcherRunId();

}  // namespace ringside::collector
