#include "record/record.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>
#include <set>
#include <system_error>

#include "record/launch.h"
#include "record/merge_runner.h"
#include "record/record_options.h"
#include "ringside/fileio/output_file.h"

namespace ringside::cli {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kPrefix = "ringside record: ";

bool isFile(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

fs::path executableDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

// A TCP port nobody listens on right now: bind port 0, read what the kernel
// chose, close. Another process could take it before the ranks do; that is
// the usual, accepted race of launchers.
int findFreePort(const std::string& addr, std::string* error) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("cannot open a socket to find a free port: ") + std::strerror(errno);
    return 0;
  }
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = 0;
  bool bound = false;
  if (inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) == 1) {
    bound = bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  }
  if (!bound) {  // a host name, or an address of another host: any local port will do
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    bound = bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  }
  socklen_t len = sizeof sa;
  int port = 0;
  if (bound && getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0) {
    port = ntohs(sa.sin_port);
  } else {
    *error = std::string("cannot find a free port: ") + std::strerror(errno);
  }
  close(fd);
  return port;
}

std::string runId(std::time_t now) {
  char stamp[32];
  std::tm local{};
  localtime_r(&now, &local);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  std::random_device random;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%08x", random());
  return std::string(stamp) + "-" + std::to_string(getpid()) + "-" + suffix;
}

// Pick the output: refuses to overwrite a file the user named; a default
// name that is taken (two runs in one second) gets a "-2", "-3", ... suffix.
bool resolveOutput(RecordOptions* options, std::string* error) {
  std::error_code ec;
  if (options->output.empty()) {
    std::string base = defaultTraceName(std::time(nullptr));
    base.resize(base.size() - std::string_view(".sqlite").size());
    options->output = base + ".sqlite";
    for (int n = 2; fs::exists(options->output, ec) || fs::exists(options->output + ".ranks", ec);
         ++n) {
      options->output = base + "-" + std::to_string(n) + ".sqlite";
    }
  } else if (!options->force && fs::exists(options->output, ec)) {
    *error = options->output + " exists (use --force to overwrite, or -o another name)";
    return false;
  }
  if (fs::is_directory(options->output, ec)) {
    *error = options->output + " is a folder";
    return false;
  }
  // Even with --force, only a regular file is replaced (never a link, a device or a folder).
  if (!fileio::checkOutputTarget(options->output, /*overwrite=*/true, error)) return false;
  // Fail now, not after an hour-long job, when the trace could not be written.
  fs::path parent = fs::absolute(options->output, ec).parent_path();
  if (!fs::is_directory(parent, ec)) {
    *error = "cannot write " + options->output + ": folder " + parent.string() + " does not exist";
    return false;
  }
  if (access(parent.c_str(), W_OK) != 0) {
    *error = "cannot write " + options->output + ": folder " + parent.string() + " is not writable";
    return false;
  }
  return true;
}

// A second Ctrl-C (or a kill) during a long merge should stop us at once, and
// still say where the rank files are.
char g_interrupt_message[1024];

void onInterruptDuringMerge(int sig) {
  ssize_t ignored = write(STDERR_FILENO, g_interrupt_message, std::strlen(g_interrupt_message));
  (void)ignored;
  signal(sig, SIG_DFL);
  raise(sig);
}

class MergeInterruptHandler {
 public:
  explicit MergeInterruptHandler(const std::string& dir) {
    std::snprintf(g_interrupt_message, sizeof g_interrupt_message,
                  "\nringside record: interrupted while merging; the rank files are kept in %s\n",
                  dir.c_str());
    struct sigaction action {};
    action.sa_handler = onInterruptDuringMerge;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &action, &saved_[i]);
  }
  ~MergeInterruptHandler() {
    for (size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &saved_[i], nullptr);
  }
  MergeInterruptHandler(const MergeInterruptHandler&) = delete;
  MergeInterruptHandler& operator=(const MergeInterruptHandler&) = delete;

 private:
  static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction saved_[std::size(kSignals)]{};
};

void removeRankFiles(const std::vector<std::string>& files, const fs::path& dir) {
  std::error_code ec;
  for (const std::string& file : files) {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(file + suffix, ec);
  }
  if (!dir.empty()) fs::remove(dir, ec);  // only succeeds when empty: other files stay
}

std::vector<ChildSpec> buildChildren(const RecordOptions& options,
                                     const std::vector<std::string>& env, int port) {
  std::vector<ChildSpec> children;
  if (options.ranks == 0) {
    children.push_back({options.command, env, -1});
    return children;
  }
  std::string n = std::to_string(options.ranks);
  for (int rank = 0; rank < options.ranks; ++rank) {
    ChildSpec child{options.command, env, rank};
    std::string r = std::to_string(rank);
    for (const char* key : {"RANK", "LOCAL_RANK", "ROLE_RANK"}) setEnvVar(&child.env, key, r);
    for (const char* key : {"WORLD_SIZE", "LOCAL_WORLD_SIZE", "ROLE_WORLD_SIZE"}) {
      setEnvVar(&child.env, key, n);
    }
    setEnvVar(&child.env, "GROUP_RANK", "0");
    setEnvVar(&child.env, "GROUP_WORLD_SIZE", "1");
    setEnvVar(&child.env, "MASTER_ADDR", options.master_addr);
    setEnvVar(&child.env, "MASTER_PORT", std::to_string(port));
    // Tells the preload library these torchrun-style variables came from us.
    setEnvVar(&child.env, "RINGSIDE_LAUNCHER", "ringside");
    children.push_back(std::move(child));
  }
  return children;
}

}  // namespace

std::string findPreloadLibrary(const char* env_value, const fs::path& exe_dir, std::string* error) {
  std::error_code ec;
  if (env_value != nullptr && *env_value != '\0') {
    if (!isFile(env_value)) {
      *error = std::string("RINGSIDE_PRELOAD=") + env_value + " is not a file";
      return "";
    }
    return fs::absolute(env_value, ec).lexically_normal().string();
  }
  if (!exe_dir.empty()) {
    for (const fs::path& candidate : {exe_dir / kPreloadName, exe_dir / ".." / "lib" / kPreloadName,
                                      exe_dir / ".." / "lib" / "ringside" / kPreloadName}) {
      if (isFile(candidate)) return candidate.lexically_normal().string();
    }
  }
  *error = std::string("cannot find ") + kPreloadName + " next to " +
           (exe_dir.empty() ? std::string("the ringside executable") : exe_dir.string()) +
           " or in ../lib, ../lib/ringside; set RINGSIDE_PRELOAD to its path";
  return "";
}

std::string prependPreload(const char* existing, const std::string& library) {
  std::string out = library;
  if (existing == nullptr) return out;
  // ld.so separates entries by spaces or colons.
  std::string_view rest = existing;
  while (!rest.empty()) {
    size_t end = rest.find_first_of(": ");
    std::string_view entry = rest.substr(0, end);
    if (!entry.empty() && entry != library) out += ":" + std::string(entry);
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  return out;
}

std::string defaultTraceName(std::time_t now) {
  std::tm local{};
  localtime_r(&now, &local);
  char name[64];
  std::strftime(name, sizeof name, "ringside-%Y%m%d-%H%M%S.sqlite", &local);
  return name;
}

std::string shellJoin(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& arg : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !arg.empty() && arg.find_first_not_of(
                                     "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                     "0123456789_-+=/.,:@%") == std::string::npos;
    if (plain) {
      out += arg;
      continue;
    }
    out += '\'';
    for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

namespace {

// The job's environment: ours with the preload library, the rank folder, the run id and the
// options that reach the processes as variables.
std::vector<std::string> recordEnvironment(const RecordOptions& options, const std::string& preload,
                                           const fs::path& dir, const std::string& run_id) {
  std::vector<std::string> env = currentEnvironment();
  setEnvVar(&env, "LD_PRELOAD", prependPreload(findEnvVar(env, "LD_PRELOAD"), preload));
  // The same library is NCCL's profiler plugin (GPU times, algorithm, protocol,
  // channels, per-peer transfers); a plugin the user chose is left alone.
  if (const char* plugin = findEnvVar(env, "NCCL_PROFILER_PLUGIN");
      plugin == nullptr || plugin[0] == '\0')
    setEnvVar(&env, "NCCL_PROFILER_PLUGIN", preload);
  setEnvVar(&env, "RINGSIDE_DIR", dir.string());
  setEnvVar(&env, "RINGSIDE_RUN_ID", run_id);
  if (!options.allreduce.empty()) setEnvVar(&env, "RINGSIDE_ALLREDUCE", options.allreduce);
  if (options.nccl_log) {
    // NCCL prints rings and trees at INFO level for the INIT and GRAPH subsystems;
    // into a file per process, so the job's own output stays as it was.
    const char* level = findEnvVar(env, "NCCL_DEBUG");
    if (level == nullptr ||
        (std::string_view(level) != "INFO" && std::string_view(level) != "TRACE"))
      setEnvVar(&env, "NCCL_DEBUG", "INFO");
    if (findEnvVar(env, "NCCL_DEBUG_SUBSYS") == nullptr)
      setEnvVar(&env, "NCCL_DEBUG_SUBSYS", "INIT,GRAPH");
    if (findEnvVar(env, "NCCL_DEBUG_FILE") == nullptr)
      setEnvVar(&env, "NCCL_DEBUG_FILE", (dir / "nccl-%h.%p.log").string());
  }
  if (options.buffer_mb > 0)
    setEnvVar(&env, "RINGSIDE_BUFFER_MB", std::to_string(options.buffer_mb));
  return env;
}

// NCCL's logs (nccl-*.log, from --nccl-log) in the rank folder; they were read into the trace.
void removeNcclLogs(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::path> logs;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("nccl-", 0) == 0 && name.size() > 4 && name.substr(name.size() - 4) == ".log")
      logs.push_back(entry.path());
  }
  for (const fs::path& log : logs) fs::remove(log, ec);
}

}  // namespace

int runRecord(std::span<const std::string> args) {
  RecordOptions options;
  if (int code = parseVerbArgs(args, parseRecordArgs, recordHelp, kPrefix, &options); code >= 0)
    return code;
  std::string error;
  if (!resolveOutput(&options, &error)) return fail(kPrefix, error, kExitUsage);
  if (options.master_set && options.ranks == 0) {
    std::cerr << kPrefix << "--master-addr/--master-port only apply with --ranks; ignored\n";
  }

  std::string preload =
      findPreloadLibrary(std::getenv("RINGSIDE_PRELOAD"), executableDir(), &error);
  if (preload.empty()) return fail(kPrefix, error);

  std::error_code ec;
  if (options.dir.empty()) options.dir = options.output + ".ranks";
  fs::path dir = fs::absolute(options.dir, ec).lexically_normal();
  // Only a folder we created is removed again.
  bool created_dir = fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    std::cerr << kPrefix << "cannot create " << dir.string() << ": "
              << (ec ? ec.message() : "not a folder") << "\n";
    return kExitDataError;
  }
  // Rank files already there belong to another run: leave them out of this trace.
  std::vector<std::string> before;
  if (!listRankFiles(dir, &before, &error)) return fail(kPrefix, error);
  if (!before.empty()) {
    std::cerr << kPrefix << dir.string() << " already holds " << before.size()
              << " rank file(s) of another run; they are left out of this trace\n";
  }

  int port = options.master_port;
  if (options.ranks > 0 && port == 0) {
    port = findFreePort(options.master_addr, &error);
    if (port == 0) return fail(kPrefix, error);
  }

  std::string run_id = runId(std::time(nullptr));
  std::vector<std::string> env = recordEnvironment(options, preload, dir, run_id);

  SuperviseOptions supervise;
  supervise.grace_s = options.grace_s;
  JobResult job = runJob(buildChildren(options, env, port), supervise);
  int status = job.exit_code;

  std::vector<std::string> files;
  if (!listRankFiles(dir, &files, &error))
    return fail(kPrefix, error, status != 0 ? status : kExitDataError);
  std::set<std::string> old(before.begin(), before.end());
  std::erase_if(files, [&](const std::string& file) { return old.count(file) != 0; });
  if (files.empty()) {
    if (!job.start_failed) {
      std::cerr << kPrefix
                << "no rank files were written (the command made no Gloo or NCCL calls?)\n";
    }
    if (created_dir) fs::remove(dir, ec);  // only when empty
    return status;
  }
  if (options.no_merge) {
    std::cerr << kPrefix << files.size() << " rank file(s) in " << dir.string()
              << "; merge them with: ringside merge " << shellJoin({dir.string()}) << "\n";
    return status;
  }

  storage::MergeOptions merge;
  merge.inputs = files;
  merge.output = options.output;
  merge.overwrite = options.force;
  merge.extra_meta = {{"tool_version", RINGSIDE_VERSION},
                      {"command_line", shellJoin(options.command)},
                      {"run_id", run_id},
                      {"exit_status", std::to_string(status)}};
  storage::MergeResult result;
  {
    MergeInterruptHandler interrupt(dir.string());
    result = mergeWithProgress(std::move(merge), kPrefix);
  }
  if (!result.ok) {
    std::cerr << kPrefix << "merge failed: " << result.error << "; the rank files are kept in "
              << dir.string() << "\n";
    return status != 0 ? status : kExitDataError;
  }
  if (options.keep_rank_files) {
    std::cerr << kPrefix << "trace written to " << options.output << " (rank files kept in "
              << dir.string() << ")\n";
  } else {
    if (options.nccl_log) removeNcclLogs(dir);  // they go with the rank files
    removeRankFiles(files, created_dir ? dir : fs::path());
    std::cerr << kPrefix << "trace written to " << options.output << "\n";
  }
  if (!options.quiet) printTraceSummary(options.output, kPrefix);
  return status;
}

}  // namespace ringside::cli
