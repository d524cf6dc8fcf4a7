// The run id every process of a job derives alike from its launcher (collector/run_id.h).
#include "ringside/collector/run_id.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <string>

namespace {

constexpr const char* kVars[] = {"TORCHELASTIC_RUN_ID", "PMIX_NAMESPACE",
                                 "OMPI_MCA_ess_base_jobid", "SLURM_JOB_ID", "SLURM_STEP_ID"};

// Sets exactly the given launcher variables (the others unset) for one test.
class LauncherEnv {
 public:
  LauncherEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const char* v : kVars) ::unsetenv(v);
    for (const auto& [k, v] : vars) ::setenv(k, v, 1);
  }
  ~LauncherEnv() {
    for (const char* v : kVars) ::unsetenv(v);
  }
};

TEST(LauncherRunId, NoneWithoutALauncher) {
  LauncherEnv env({});
  EXPECT_EQ(ringside::collector::launcherRunId(), "");
}

TEST(LauncherRunId, EachLauncher) {
  using ringside::collector::launcherRunId;
  {
    LauncherEnv env({{"TORCHELASTIC_RUN_ID", "job42"}});
    EXPECT_EQ(launcherRunId(), "torchelastic:job42");
  }
  {
    // torchrun's default rendezvous id names no run.
    LauncherEnv env({{"TORCHELASTIC_RUN_ID", "none"}});
    EXPECT_EQ(launcherRunId(), "");
  }
  {
    LauncherEnv env({{"PMIX_NAMESPACE", "prterun-n0-123@1"}, {"OMPI_MCA_ess_base_jobid", "7"}});
    EXPECT_EQ(launcherRunId(), "pmix:prterun-n0-123@1");
  }
  {
    LauncherEnv env({{"OMPI_MCA_ess_base_jobid", "2753888257"}});
    EXPECT_EQ(launcherRunId(), "ompi:2753888257");
  }
  {
    LauncherEnv env({{"SLURM_JOB_ID", "4242"}, {"SLURM_STEP_ID", "3"}});
    EXPECT_EQ(launcherRunId(), "slurm:4242.3");
  }
  {
    LauncherEnv env({{"SLURM_JOB_ID", "4242"}});
    EXPECT_EQ(launcherRunId(), "slurm:4242");
  }
  {
    // torchrun inside an srun allocation: torchrun's job is the one the ranks share.
    LauncherEnv env({{"SLURM_JOB_ID", "4242"}, {"TORCHELASTIC_RUN_ID", "r1"}});
    EXPECT_EQ(launcherRunId(), "torchelastic:r1");
  }
}

}  // namespace
