// Who this process is, from the launcher's environment. The communication
// library's own view (setIdentity) wins; this is the cross-check and the
// fallback when the library never says.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "internal.h"
#include "ringside/collector/run_id.h"
#include "ringside/storage/privacy.h"

namespace ringside::collector::detail {
namespace {

int envInt(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > (1 << 30)) return -1;
  return static_cast<int>(x);
}

struct LauncherVars {
  const char* launcher;
  const char* rank;
  const char* world_size;
  const char* local_rank;
};

// In order of preference: a process started by torchrun inside an srun
// allocation has both, and torchrun's numbering is the one the job uses.
constexpr LauncherVars kLaunchers[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"ompi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    {"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
};

}  // namespace

void readLauncherIdentity(Identity* id) {
  id->launcher = "unknown";
  for (const auto& l : kLaunchers) {
    int r = envInt(l.rank);
    if (r < 0) continue;
    id->launcher = l.launcher;
    const char* by = std::getenv("RINGSIDE_LAUNCHER");
    if (by != nullptr && *by != '\0' && std::strcmp(l.launcher, "torchrun") == 0) id->launcher = by;
    id->env_rank = r;
    id->env_world_size = envInt(l.world_size);
    id->local_rank = envInt(l.local_rank);
    break;
  }
  if (id->rank < 0 && id->env_rank >= 0) {
    id->rank = id->env_rank;
    id->world_size = id->env_world_size;
    id->source = "env";
  }
  if (id->source.empty()) id->source = "none";
}

std::string hostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string commandLine() {
  // Redacted here, before it reaches any file, when RINGSIDE_REDACT asks for it.
  return storage::ownCommandLine();
}

}  // namespace ringside::collector::detail

namespace ringside::collector {

std::string launcherRunId() {
  auto get = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v != nullptr ? v : "";
  };
  // torchrun's default rendezvous id is "none" on every job: it names no run.
  if (std::string id = get("TORCHELASTIC_RUN_ID"); !id.empty() && id != "none")
    return "torchelastic:" + id;
  if (std::string ns = get("PMIX_NAMESPACE"); !ns.empty()) return "pmix:" + ns;
  if (std::string job = get("OMPI_MCA_ess_base_jobid"); !job.empty()) return "ompi:" + job;
  if (std::string job = get("SLURM_JOB_ID"); !job.empty()) {
    // Each srun is a step of its own: two sruns of one allocation are two runs.
    std::string step = get("SLURM_STEP_ID");
    return "slurm:" + job + (step.empty() ? "" : "." + step);
  }
  return "";
}

}  // namespace ringside::collector
