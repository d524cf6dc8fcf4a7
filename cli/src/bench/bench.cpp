#include "bench/bench.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <random>
#include <set>
#include <system_error>
#include <vector>

#include "bench/bench_options.h"
#include "record/launch.h"
#include "record/merge_runner.h"
#include "record/record.h"
#include "ringside/bench/gloo.h"
#include "ringside/bench/worker.h"
#include "ringside/fileio/output_file.h"

namespace ringside::cli {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kPrefix = "ringside bench: ";
constexpr int kDefaultRanks = 4;

// A TCP port nobody listens on right now (bind port 0, read it, close); the
// ranks' rendezvous binds it a moment later. The usual launcher race.
int findFreePort(std::string* error) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("cannot open a socket to find a free port: ") + std::strerror(errno);
    return 0;
  }
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof sa;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0) {
    port = ntohs(sa.sin_port);
  } else {
    *error = std::string("cannot find a free port: ") + std::strerror(errno);
  }
  close(fd);
  return port;
}

std::string executablePath() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.string();
}

bool checkOutput(const BenchOptions& options, std::string* error) {
  std::error_code ec;
  if (!options.force && fs::exists(options.output, ec)) {
    *error = options.output + " exists (use --force to overwrite, or -o another name)";
    return false;
  }
  if (fs::is_directory(options.output, ec)) {
    *error = options.output + " is a folder";
    return false;
  }
  // Even with --force, only a regular file is replaced (never a link, a device or a folder).
  if (!fileio::checkOutputTarget(options.output, /*overwrite=*/true, error)) return false;
  fs::path parent = fs::absolute(options.output, ec).parent_path();
  if (!fs::is_directory(parent, ec) || access(parent.c_str(), W_OK) != 0) {
    *error = "cannot write " + options.output + ": folder " + parent.string() +
             " does not exist or is not writable";
    return false;
  }
  return true;
}

void removeRankFiles(const std::vector<std::string>& files, const fs::path& dir) {
  std::error_code ec;
  for (const std::string& file : files) {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(file + suffix, ec);
  }
  if (!dir.empty()) fs::remove(dir, ec);  // only succeeds when empty
}

uint64_t randomToken() {
  std::random_device random;
  return (static_cast<uint64_t>(random()) << 32) ^ random() ^ static_cast<uint64_t>(getpid());
}

// `ringside bench --ranks N`: N local workers, then the merge.
int runLocalJob(const BenchOptions& options, std::span<const std::string> args) {
  std::string error;
  const int ranks = options.ranks > 0 ? options.ranks : kDefaultRanks;
  const int cpus = usableCpus();
  if (ranks > maxLocalBenchRanks(cpus)) {
    std::cerr << kPrefix << "--ranks " << ranks << ": more local ranks than this machine can run ("
              << cpus << " CPU" << (cpus == 1 ? "" : "s") << ": at most "
              << maxLocalBenchRanks(cpus) << ", " << kLocalBenchRanksPerCpu
              << " per CPU); start ranks on several hosts with a launcher instead\n";
    return kExitUsage;
  }
  std::string exe = executablePath();
  if (exe.empty()) {
    std::cerr << kPrefix << "cannot find this executable (/proc/self/exe)\n";
    return kExitDataError;
  }

  // --json replaces an earlier file (as always), but never a link, a device or a folder.
  if (!options.json.empty() &&
      !fileio::checkOutputTarget(options.json, /*overwrite=*/true, &error)) {
    std::cerr << kPrefix << error << "\n";
    return kExitUsage;
  }
  std::error_code ec;
  fs::path dir;
  bool created_dir = false;
  std::vector<std::string> before;
  if (!options.output.empty()) {
    if (!checkOutput(options, &error)) {
      std::cerr << kPrefix << error << "\n";
      return kExitUsage;
    }
    dir = fs::absolute(options.output + ".ranks", ec).lexically_normal();
    created_dir = makeRankFolder(dir, &ec);
    if (ec || !fs::is_directory(dir)) {
      std::cerr << kPrefix << "cannot create " << dir.string() << "\n";
      return kExitDataError;
    }
    if (!listRankFiles(dir.string(), &before, &error)) {
      std::cerr << kPrefix << error << "\n";
      return kExitDataError;
    }
  }

  int port = options.master_port;
  if (port == 0) port = findFreePort(&error);
  if (port == 0) {
    std::cerr << kPrefix << error << "\n";
    return kExitDataError;
  }

  std::vector<std::string> env = currentEnvironment();
  setEnvVar(&env, "RINGSIDE_JOB_TOKEN", std::to_string(randomToken()));
  setEnvVar(&env, "RINGSIDE_LAUNCHER", "ringside");
  setEnvVar(&env, "RINGSIDE_RUN_ID", "bench-" + std::to_string(std::time(nullptr)) + "-" +
                                         std::to_string(getpid()));
  if (!dir.empty()) setEnvVar(&env, "RINGSIDE_DIR", dir.string());
  std::vector<std::string> argv = {exe, "bench", "--worker"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<ChildSpec> children;
  for (int rank = 0; rank < ranks; ++rank) {
    ChildSpec child{argv, env, rank};
    for (const char* key : {"RANK", "LOCAL_RANK"}) setEnvVar(&child.env, key, std::to_string(rank));
    for (const char* key : {"WORLD_SIZE", "LOCAL_WORLD_SIZE"}) {
      setEnvVar(&child.env, key, std::to_string(ranks));
    }
    setEnvVar(&child.env, "MASTER_ADDR", options.master_addr);
    setEnvVar(&child.env, "MASTER_PORT", std::to_string(port));
    children.push_back(std::move(child));
  }

  SuperviseOptions supervise;
  supervise.prefix = std::string(kPrefix);
  // A dead rank makes the others fail within their timeout; don't wait longer.
  supervise.grace_s = options.timeout_s + 5;
  JobResult job = runJob(children, supervise);
  int status = job.exit_code;
  if (options.output.empty()) return status;

  std::vector<std::string> files;
  if (!listRankFiles(dir.string(), &files, &error)) {
    std::cerr << kPrefix << error << "\n";
    return status != 0 ? status : kExitDataError;
  }
  std::set<std::string> old(before.begin(), before.end());
  std::erase_if(files, [&](const std::string& file) { return old.count(file) != 0; });
  if (files.empty()) {
    std::cerr << kPrefix << "no rank files were written; no trace\n";
    if (created_dir) fs::remove(dir, ec);
    return status != 0 ? status : kExitDataError;
  }
  storage::MergeOptions merge;
  merge.inputs = files;
  merge.output = options.output;
  merge.overwrite = options.force;
  std::vector<std::string> command = {"ringside", "bench"};
  command.insert(command.end(), args.begin(), args.end());
  merge.extra_meta = {{"tool_version", RINGSIDE_VERSION},
                      {"command_line", storedCommand(command)},
                      {"exit_status", std::to_string(status)}};
  storage::MergeResult result = mergeWithProgress(std::move(merge), kPrefix);
  if (!result.ok) {
    std::cerr << kPrefix << "merge failed: " << result.error << "; the rank files are kept in "
              << dir.string() << "\n";
    return status != 0 ? status : kExitDataError;
  }
  // Only what the merge copied: a file it skipped (unreadable) is kept, as record does; the
  // flight rings whose contents are in the trace go with them (before the folder's removal).
  std::vector<std::string> removable = result.merged_rings;
  removable.insert(removable.end(), result.merged_files.begin(), result.merged_files.end());
  removeRankFiles(removable, created_dir ? dir : fs::path());
  std::cerr << kPrefix << "trace written to " << options.output << "\n";
  return status;
}

}  // namespace

namespace {

bool isSet(const char* key) {
  const char* value = std::getenv(key);
  return value != nullptr && *value != '\0';
}

// The ranks' exit statuses are the verb's.
static_assert(bench::kBenchExitOk == kExitOk && bench::kBenchExitFailed == kExitDataError &&
              bench::kBenchExitUsage == kExitUsage);

// A rank merges through the same listing and progress line as `record` and `merge`.
bench::TraceMerger traceMerger() {
  bench::TraceMerger merger;
  merger.tool_version = RINGSIDE_VERSION;
  merger.list_rank_files = listRankFiles;
  merger.merge = [](storage::MergeOptions options) {
    return mergeWithProgress(std::move(options), kPrefix);
  };
  return merger;
}

}  // namespace

bool adoptLauncherIdentity() {
  if (!isSet("MASTER_ADDR") || !isSet("MASTER_PORT")) return false;
  if (isSet("RANK") && isSet("WORLD_SIZE")) return true;
  // mpirun, srun and PMI launchers name rank and size their own way.
  static constexpr const char* kPairs[][2] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                              {"PMI_RANK", "PMI_SIZE"},
                                              {"SLURM_PROCID", "SLURM_NTASKS"}};
  for (const auto& pair : kPairs) {
    if (isSet(pair[0]) && isSet(pair[1])) {
      setenv("RANK", std::getenv(pair[0]), 1);
      setenv("WORLD_SIZE", std::getenv(pair[1]), 1);
      return true;
    }
  }
  return false;
}

int runBench(std::span<const std::string> args) {
  BenchOptions options;
  std::string error;
  if (int code = handleParseOutcome(parseBenchArgs(args, &options, &error), benchHelp, kPrefix, error);
      code >= 0)
    return code;
  if (!bench::glooBenchAvailable()) {
    for (BenchAlgo algo : options.algos) {
      if (isGlooAlgo(algo)) {
        std::cerr << kPrefix << "--algo " << benchAlgoName(algo)
                  << ": this ringside was built without Gloo (libgloo-dev)\n";
        return kExitUsage;
      }
    }
  }
  // Its only input file is the topology RINGSIDE_TOPOLOGY names (multipath's capacities).
  if (const char* topology = std::getenv("RINGSIDE_TOPOLOGY"); topology != nullptr) {
    if (int code = refuseOutputsThatAreInputs(kPrefix, {options.output, options.json}, {topology});
        code >= 0)
      return code;
  }
  if (options.worker) {
    return bench::runBenchRank(options, /*started_by_parent=*/true, traceMerger());
  }
  if (options.ranks == 0 && adoptLauncherIdentity()) {
    return bench::runBenchRank(options, /*started_by_parent=*/false, traceMerger());
  }
  return runLocalJob(options, args);
}

}  // namespace ringside::cli
