#include "record/record.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <system_error>

#include "common/output_folder.h"
#include "record/launch.h"
#include "record/merge_runner.h"
#include "record/rank_folder_lock.h"
#include "record/record_options.h"
#include "record/watchdog.h"
#include "ringside/collector/run_id.h"
#include "ringside/fileio/output_file.h"
#include "ringside/format/units.h"
#include "ringside/storage/merge.h"
#include "ringside/storage/privacy.h"

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

std::string newRunId(std::time_t now) {
  char stamp[32];
  std::tm local{};
  localtime_r(&now, &local);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  std::random_device random;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%08x", random());
  return std::string(stamp) + "-" + std::to_string(getpid()) + "-" + suffix;
}

// The run id all rank files of this run carry (meta run_id): --run-id, else RINGSIDE_RUN_ID,
// else the launcher's job id (srun or mpirun started this `record`), else for one node of a
// job over several what every node shares, MASTER_ADDR:MASTER_PORT (each node's files go into
// a node folder that must start empty, so a later run with the same address never mixes in);
// else a new one. "" with *error when the nodes would not agree.
std::string chooseRunId(const RecordOptions& options, int port, std::string* error) {
  if (options.run_id_set) return options.run_id;
  if (const char* env = std::getenv("RINGSIDE_RUN_ID"); env != nullptr && *env != '\0') {
    if (!validRunId(env, error)) {
      *error = "RINGSIDE_RUN_ID: " + *error;
      return "";
    }
    return env;
  }
  if (std::string id = collector::launcherRunId(); !id.empty()) return id;
  // torchrun started by this record: its ranks would take TORCHELASTIC_RUN_ID = its --rdzv-id,
  // which every node's torchrun is given alike.
  if (options.ranks == 0) {
    std::string rdzv = torchrunRdzvId(options.command, std::getenv("PET_RDZV_ID"));
    if (!rdzv.empty() && validRunId("torchelastic:" + rdzv, error)) return "torchelastic:" + rdzv;
    if (!rdzv.empty()) {
      *error = "torchrun's --rdzv-id: " + *error;
      return "";
    }
  }
  if (!isMultiNode(options)) return newRunId(std::time(nullptr));
  if (options.ranks > 0) return "nodes:" + options.master_addr + ":" + std::to_string(port);
  *error = "--nnodes without --ranks: give --run-id ID, the same on every node, or torchrun's "
           "--rdzv-id ID (the launcher's own job id was not found)";
  return "";
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
    *error = "cannot write " + options->output + ": " +
             (fs::exists(parent, ec) ? parent.string() + " is not a folder"
                                     : "folder " + parent.string() + " does not exist");
    return false;
  }
  if (access(parent.c_str(), W_OK) != 0) {
    *error = "cannot write " + options->output + ": folder " + parent.string() + " is not writable";
    return false;
  }
  return true;
}

// Removes rank files (and their -wal/-shm/-journal); the folder itself is the caller's.
void removeRankFiles(const std::vector<std::string>& files) {
  std::error_code ec;
  for (const std::string& file : files) {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(file + suffix, ec);
  }
}

std::vector<ChildSpec> buildChildren(const RecordOptions& options,
                                     const std::vector<std::string>& env, int port) {
  std::vector<ChildSpec> children;
  if (options.ranks == 0) {
    children.push_back({options.command, env, -1});
    return children;
  }
  // torchrun's numbering: node K's local rank l is RANK K * ranks + l of nnodes * ranks.
  const int nodes = std::max(options.nnodes, 1);
  const int node = std::max(options.node_rank, 0);
  const std::string world = std::to_string(nodes * options.ranks);
  for (int local = 0; local < options.ranks; ++local) {
    const int rank = node * options.ranks + local;
    ChildSpec child{options.command, env, rank};
    for (const char* key : {"RANK", "ROLE_RANK"}) setEnvVar(&child.env, key, std::to_string(rank));
    setEnvVar(&child.env, "LOCAL_RANK", std::to_string(local));
    for (const char* key : {"WORLD_SIZE", "ROLE_WORLD_SIZE"}) setEnvVar(&child.env, key, world);
    setEnvVar(&child.env, "LOCAL_WORLD_SIZE", std::to_string(options.ranks));
    setEnvVar(&child.env, "GROUP_RANK", std::to_string(node));
    setEnvVar(&child.env, "GROUP_WORLD_SIZE", std::to_string(nodes));
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

std::string storedCommand(const std::vector<std::string>& argv) {
  return storage::redactRequested() ? storage::storedCommandLine(argv, true) : shellJoin(argv);
}

bool parseRankFileName(const std::string& name, int64_t* pid, int64_t* start_unix_ns) {
  // rank-<host>-<pid>-<start_unix_ns>.sqlite (the host sanitized, so it may hold '-').
  constexpr std::string_view kHead = "rank-", kTail = ".sqlite";
  if (name.size() <= kHead.size() + kTail.size() || name.compare(0, kHead.size(), kHead) != 0 ||
      name.compare(name.size() - kTail.size(), kTail.size(), kTail) != 0)
    return false;
  const std::string core = name.substr(kHead.size(), name.size() - kHead.size() - kTail.size());
  const size_t dash2 = core.rfind('-');
  if (dash2 == std::string::npos || dash2 == 0) return false;
  const size_t dash1 = core.rfind('-', dash2 - 1);
  if (dash1 == std::string::npos || dash1 == 0) return false;
  const std::string pid_text = core.substr(dash1 + 1, dash2 - dash1 - 1);
  const std::string start_text = core.substr(dash2 + 1);
  auto digits = [](const std::string& t) {
    return !t.empty() && t.size() <= 19 && t.find_first_not_of("0123456789") == std::string::npos;
  };
  if (!digits(pid_text) || !digits(start_text)) return false;
  if (pid) *pid = std::stoll(pid_text);
  if (start_unix_ns) *start_unix_ns = std::stoll(start_text);
  return true;
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
  // Bounded recording: the ranks' collectors apply these (docs/recording.md).
  for (auto [name, value] : {std::pair{"RINGSIDE_STEPS", &options.steps},
                             std::pair{"RINGSIDE_DELAY_S", &options.delay_s},
                             std::pair{"RINGSIDE_DURATION_S", &options.duration_s},
                             std::pair{"RINGSIDE_DETAIL", &options.detail},
                             std::pair{"RINGSIDE_MESSAGE_ROWS", &options.message_rows}}) {
    if (!value->empty()) setEnvVar(&env, name, *value);
  }
  if (!options.trigger_file.empty()) {
    // Absolute: a rank that changes its folder still watches the same file.
    std::error_code ec;
    const fs::path trigger = fs::absolute(options.trigger_file, ec);
    setEnvVar(&env, "RINGSIDE_TRIGGER_FILE", ec ? options.trigger_file : trigger.string());
  }
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

// What runRecord knows once the job has ended.
struct FinishedJob {
  int status = 0;            // the job's exit status: record's, whatever happens below
  bool start_failed = false;
  std::string hang_verdict;  // the watchdog's line, "" if it saw no hang
  int64_t hang_verdict_unix_ns = 0;
  fs::path dir;              // the rank folder (absolute)
  bool created_dir = false;  // we made it: removed again when empty
  std::set<std::string> before;  // rank files that were there before the job
  std::string run_id;
  fs::path nodes_dir;  // one node of several: the folder of the node folders (dir's parent)
};

// "ringside merge DIR -o OUT ...": how to merge the kept rank files later, ready to paste.
std::string laterMergeCommand(const RecordOptions& options, const FinishedJob& job,
                              bool other_runs, bool unreadable) {
  std::vector<std::string> argv = {"ringside", "merge"};
  if (unreadable) argv.push_back("-k");
  if (options.force) argv.push_back("-f");
  if (other_runs) {
    argv.push_back("--run-id");
    argv.push_back(job.run_id);
  }
  argv.push_back(job.dir.string());
  argv.push_back("-o");
  argv.push_back(options.output);
  return shellJoin(argv);
}

// This run's candidate rank files in the rank folder: named as the preload library names them
// (rank-<host>-<pid>-<start>.sqlite) and not there before the job. Anything else in the folder
// (the job's own .sqlite files, a merge made meanwhile) is never read, merged or removed; their
// names go to *others when given.
bool listCandidates(const FinishedJob& job, std::vector<std::string>* files,
                    std::vector<std::string>* others, std::string* error) {
  std::vector<std::string> all;
  if (!listRankFiles(job.dir.string(), &all, error)) return false;
  for (std::string& file : all) {
    if (job.before.count(file) != 0) continue;
    if (parseRankFileName(fs::path(file).filename().string(), nullptr, nullptr)) {
      files->push_back(std::move(file));
    } else if (others) {
      others->push_back(std::move(file));
    }
  }
  return true;
}

// The traced processes of this run still writing their rank files: pid -> "pid P (rank file)".
std::map<int64_t, std::string> liveWriters(const FinishedJob& job) {
  std::vector<std::string> files;
  std::map<int64_t, std::string> live;
  std::string error;
  if (!listCandidates(job, &files, nullptr, &error)) return live;
  for (const std::string& file : files) {
    storage::RankFileStatus status;
    int64_t pid = -1, start = 0;
    parseRankFileName(fs::path(file).filename().string(), &pid, &start);
    const bool read = storage::readRankFileStatus(file, &status, &error);
    if (!read || status.pid < 0) {
      // Being created (no rank row yet): the name's pid and this host say who writes it.
      char host[256] = {};
      gethostname(host, sizeof host - 1);
      status.host = host;
      status.pid = pid;
      status.start_unix_ns = start;
      if (!read) status = storage::RankFileStatus{status.run_id, host, pid, start, false, false};
    }
    if (!status.run_id.empty() && status.run_id != job.run_id) continue;
    if (status.pid != pid) continue;  // not the file its name says
    if (storage::writerMayBeAlive(status))
      live[pid] = "pid " + std::to_string(pid) + " (" + fs::path(file).filename().string() + ")";
  }
  return live;
}

// The job's processes still running whose parent has exited (a launcher that started its ranks
// in the background and left): record is their child subreaper (runRecord), so they are now its
// children, and runJob has reaped every child it started. Zombies among them are reaped here.
// pid -> "pid P (name)".
std::map<int64_t, std::string> leftRunning() {
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  std::map<int64_t, std::string> left;
  const pid_t self = ::getpid();
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return left;
  while (const dirent* entry = ::readdir(proc)) {
    const std::string name = entry->d_name;
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const int fd = ::open(("/proc/" + name + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[512];
    const ssize_t got = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (got <= 0) continue;
    const std::string stat(buf, static_cast<size_t>(got));
    // "pid (comm) state ppid ...": the name may hold spaces and parentheses.
    const size_t open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close + 4 > stat.size())
      continue;
    const char state = stat[close + 2];
    const long ppid = std::strtol(stat.c_str() + close + 4, nullptr, 10);
    if (ppid != self || state == 'Z' || state == 'X') continue;
    left[std::stoll(name)] =
        "pid " + name + " (" + stat.substr(open + 1, close - open - 1) + ")";
  }
  ::closedir(proc);
  return left;
}

// Whom record waits for after the command exited: rank file writers and processes left running.
std::vector<std::string> stillRunning(const FinishedJob& job) {
  std::map<int64_t, std::string> all = leftRunning();
  for (auto& [pid, what] : liveWriters(job)) all[pid] = std::move(what);  // the file says more
  std::vector<std::string> out;
  for (auto& [pid, what] : all) out.push_back(std::move(what));
  return out;
}

std::string listSome(const std::vector<std::string>& items, size_t most = 4) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < most; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > most) out += ", ... (" + std::to_string(items.size()) + " in all)";
  return out;
}

// The job's command has exited, but processes it started (a launcher that does not wait for its
// ranks, ranks started in the background) may still run or write their rank files: wait until
// each has ended or closed its file, at most `wait_s` seconds, saying for whom and how long.
// Returns those still running when the wait ended.
std::vector<std::string> waitForWriters(const FinishedJob& job, double wait_s) {
  using Clock = std::chrono::steady_clock;
  std::vector<std::string> live = stillRunning(job);
  if (live.empty()) return live;
  const Clock::time_point start = Clock::now();
  std::cerr << kPrefix << "the command exited, but " << live.size()
            << " process(es) of the job still run or write their rank files: " << listSome(live)
            << "; waiting for them up to " << format::printf("%g", wait_s) << " s (--wait-s)\n";
  while (!live.empty()) {
    if (std::chrono::duration<double>(Clock::now() - start).count() >= wait_s) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    live = stillRunning(job);
  }
  const double waited = std::chrono::duration<double>(Clock::now() - start).count();
  if (live.empty()) {
    std::cerr << kPrefix << "they finished after " << format::printf("%.1f", waited) << " s\n";
  } else {
    std::cerr << kPrefix << live.size() << " still running after "
              << format::printf("%.1f", waited) << " s: " << listSome(live)
              << "; merging what they wrote so far (their rank files are kept)\n";
  }
  return live;
}

// What `record` adds to the meta of the trace it merges.
std::vector<std::pair<std::string, std::string>> recordMeta(const RecordOptions& options,
                                                            const FinishedJob& job) {
  std::vector<std::pair<std::string, std::string>> meta = {
      {"tool_version", RINGSIDE_VERSION},
      {"command_line", storedCommand(options.command)},
      {"run_id", job.run_id},
      {"exit_status", std::to_string(job.status)}};
  if (!job.hang_verdict.empty()) {
    meta.emplace_back("hang_verdict", job.hang_verdict);
    meta.emplace_back("hang_verdict_unix_ns", std::to_string(job.hang_verdict_unix_ns));
  }
  return meta;
}

// `record --nnodes N --node-merge`: this node's rank files merged into NODES_DIR/node-K.sqlite
// while the other nodes merge theirs (in parallel, under the job's launcher); the rank files
// stay. One merge of the node traces then gives the trace, equal to a merge of all rank files.
void mergeThisNode(const RecordOptions& options, const FinishedJob& job,
                   const std::vector<std::string>& files) {
  const std::string node = "node " + std::to_string(options.node_rank) + " of " +
                           std::to_string(options.nnodes);
  const std::string node_trace =
      (job.nodes_dir / ("node-" + std::to_string(options.node_rank) + ".sqlite")).string();
  storage::MergeOptions merge;
  merge.inputs = files;
  merge.output = node_trace;
  merge.overwrite = options.force;
  merge.extra_meta = recordMeta(options, job);
  storage::MergeResult result;
  {
    MergeSignalGuard interrupted("\nringside record: interrupted while merging " + node +
                                 "; the rank files are kept in " + job.dir.string() + "\n");
    result = mergeWithProgress(std::move(merge), kPrefix);
  }
  const std::string whole = shellJoin({"ringside", "merge"}) + " " +
                            shellJoin({job.nodes_dir.string()}) + "/node-*.sqlite -o " +
                            shellJoin({options.output});
  if (!result.ok) {
    std::cerr << kPrefix << node << ": merge failed (" << result.error << "); rank files kept in "
              << job.dir.string() << "; when every node is done, merge them with: "
              << shellJoin({"ringside", "merge", job.nodes_dir.string(), "-o", options.output})
              << "\n";
    return;
  }
  std::cerr << kPrefix << node << ": " << files.size() << " rank file(s) merged into "
            << node_trace << " (rank files kept in " << job.dir.string()
            << "); when every node is done, merge the node traces with: " << whole << "\n";
}

// Everything after the job: find this run's rank files, merge them, summarize. Failures are told
// on stderr in one line that says where the rank files are and how to merge them later; they
// never change the exit status (the job's) and never remove a rank file that was not merged.
// Only rank files this run wrote and the merge copied are removed: identified by their name
// (rank-<host>-<pid>-<start>.sqlite), their header (a ringside rank file, not a merged trace),
// their run id and a closed file, never by what else the folder holds.
void finishRecording(const RecordOptions& options, const FinishedJob& job, RankFolderLock* lock) {
  std::string error;
  std::error_code ec;
  const std::string dir = job.dir.string();
  {
    MergeSignalGuard interrupted("\nringside record: interrupted while waiting for the job's "
                                 "processes; the rank files are kept in " + dir + "\n");
    waitForWriters(job, options.wait_s);
  }
  std::vector<std::string> files, not_rank_files;
  if (!listCandidates(job, &files, &not_rank_files, &error)) {
    std::cerr << kPrefix << error << "; nothing was merged\n";
    return;
  }
  // Only this run's rank files go into its trace. We hold the folder's lock, so another file
  // can only come from a process started by hand with RINGSIDE_DIR set to this folder. A file
  // without a run id (a launcher that passes LD_PRELOAD and RINGSIDE_DIR on, but not
  // RINGSIDE_RUN_ID) appeared during this run and stays in; so does one that cannot be read
  // (the merger skips it, says why, and it is kept).
  std::vector<std::string> other_runs;
  bool unreadable = false;
  std::erase_if(files, [&](const std::string& file) {
    storage::RankFileStatus status;
    std::string why;
    if (!storage::readRankFileStatus(file, &status, &why)) {
      unreadable = true;
      return false;
    }
    if (status.merged) {  // a trace merged into the folder under a rank file's name
      not_rank_files.push_back(file);
      return true;
    }
    if (status.run_id.empty() || status.run_id == job.run_id) return false;
    other_runs.push_back(file);
    return true;
  });
  if (!other_runs.empty()) {
    std::cerr << kPrefix << other_runs.size() << " rank file(s) in " << dir
              << " were written by another run (e.g. "
              << fs::path(other_runs.front()).filename().string()
              << "); they are left out of this trace\n";
  }
  if (!not_rank_files.empty()) {
    std::cerr << kPrefix << "left alone: " << not_rank_files.size() << " other .sqlite file(s) in "
              << dir << " that are not this run's rank files (e.g. "
              << fs::path(not_rank_files.front()).filename().string() << ")\n";
  }
  if (files.empty()) {
    if (!job.start_failed) {
      std::cerr << kPrefix
                << "no rank files were written (the command made no Gloo or NCCL calls?)\n";
    }
    lock->release();
    if (job.created_dir) fs::remove(job.dir, ec);  // only when empty
    return;
  }
  // `ringside merge DIR` would refuse a folder that also holds another run's files, or take
  // files without a run id from before this run: name the run.
  const bool others_there = !other_runs.empty() || !job.before.empty();
  if (isMultiNode(options) && options.node_merge) {
    mergeThisNode(options, job, files);
    return;
  }
  if (isMultiNode(options)) {
    // The other nodes may still be writing: merging is for whoever knows they are all done.
    std::cerr << kPrefix << "node " << options.node_rank << " of " << options.nnodes << ": "
              << files.size() << " rank file(s) in " << dir
              << "; when every node is done, merge them with: "
              << shellJoin({"ringside", "merge", job.nodes_dir.string(), "-o", options.output})
              << " (add each node's folder where they are not on one shared file system)\n";
    return;
  }
  const std::string later = laterMergeCommand(options, job, others_there, unreadable);
  if (options.no_merge) {
    std::cerr << kPrefix << files.size() << " rank file(s) in " << dir
              << "; merge them with: " << later << "\n";
    return;
  }

  storage::MergeOptions merge;
  merge.inputs = files;
  merge.output = options.output;
  merge.overwrite = options.force;
  merge.extra_meta = recordMeta(options, job);
  storage::MergeResult result;
  {
    // A second Ctrl-C (or a kill) during a long merge stops us at once, removes the temporary
    // trace and still says where the rank files are.
    MergeSignalGuard interrupted("\nringside record: interrupted while merging; the rank files "
                                 "are kept in " + dir + "\n");
    result = mergeWithProgress(std::move(merge), kPrefix);
  }
  if (!result.ok) {
    std::cerr << kPrefix << "merge failed (" << result.error << "); rank files kept in " << dir
              << "; run: " << later << "\n";
    return;
  }
  // Removable: what the merge copied whole, i.e. not a file whose writer still runs.
  std::vector<std::string> merged;
  std::set<std::string> live(result.live_files.begin(), result.live_files.end());
  for (const std::string& file : result.merged_files)
    if (!live.count(file)) merged.push_back(file);
  const size_t kept = files.size() - merged.size();
  if (!result.live_files.empty()) {
    std::cerr << kPrefix << result.live_files.size()
              << " rank file(s) were still being written when merged (their processes run on): "
                 "kept in " << dir << "; when they have ended, merge again with: "
              << [&] {
                   RecordOptions again = options;
                   again.force = true;  // this trace is there now
                   return laterMergeCommand(again, job, others_there, unreadable);
                 }()
              << "\n";
  }
  if (options.keep_rank_files) {
    std::cerr << kPrefix << "trace written to " << options.output << " (rank files kept in "
              << dir << ")\n";
  } else {
    if (options.nccl_log) removeNcclLogs(job.dir);  // they go with the rank files
    removeRankFiles(merged);
    removeRankFiles(result.merged_rings);  // the flight rings whose contents are in the trace
    lock->release();
    if (job.created_dir) fs::remove(job.dir, ec);  // only when empty: other files stay
    std::cerr << kPrefix << "trace written to " << options.output;
    if (kept > 0) std::cerr << " (" << kept << " rank file(s) not merged whole are kept in " << dir << ")";
    std::cerr << "\n";
  }
  lock->release();
  if (!options.quiet) printTraceSummary(options.output, kPrefix);
}

}  // namespace

int runRecord(std::span<const std::string> args) {
  // Before the job: a problem with the command line or with where the output goes is a usage
  // error (exit 2) and the job does not run; ringside's own installation (no preload library,
  // no free port) is exit 1. After the job started, the exit status is the job's.
  RecordOptions options;
  if (int code = parseVerbArgs(args, parseRecordArgs, recordHelp, kPrefix, &options); code >= 0)
    return code;
  // Through the environment: the job's rank files (the preload library), the rank
  // folder and the merged trace all follow the same two variables (storage/privacy.h).
  if (options.redact) ::setenv("RINGSIDE_REDACT", "1", 1);
  if (options.share) ::setenv("RINGSIDE_SHARE", "1", 1);
  std::string error;
  // One node of several given only --dir: the trace is for the later merge to name.
  const bool output_given = !options.output.empty();
  if ((output_given || !isMultiNode(options)) && !resolveOutput(&options, &error))
    return fail(kPrefix, error, kExitUsage);
  if (options.master_set && options.ranks == 0) {
    std::cerr << kPrefix << "--master-addr/--master-port only apply with --ranks; ignored\n";
  }

  std::string preload =
      findPreloadLibrary(std::getenv("RINGSIDE_PRELOAD"), executableDir(), &error);
  if (preload.empty()) return fail(kPrefix, error);

  std::error_code ec;
  if (options.dir.empty()) options.dir = options.output + ".ranks";
  FinishedJob job;
  job.dir = fs::absolute(options.dir, ec).lexically_normal();
  if (!job.dir.has_filename()) job.dir = job.dir.parent_path();  // "runs/x/" is "runs/x"
  bool created_nodes_dir = false;
  if (isMultiNode(options)) {
    // Each node writes into a folder of its own below the one given: nodes sharing a file
    // system never take each other's lock, and `ringside merge DIR` finds every node-K.
    job.nodes_dir = job.dir;
    created_nodes_dir = makeRankFolder(job.nodes_dir, &ec);
    if (ec) return fail(kPrefix, rankFolderError(job.nodes_dir.string(), ec), kExitUsage);
    job.dir = job.nodes_dir / ("node-" + std::to_string(options.node_rank));
    if (!output_given) options.output = job.nodes_dir.string() + ".sqlite";
  }
  const std::string dir = job.dir.string();
  // Only a folder we created is removed again.
  job.created_dir = makeRankFolder(job.dir, &ec);
  if (ec) {
    if (created_nodes_dir) fs::remove(job.nodes_dir, ec);
    return fail(kPrefix, rankFolderError(dir, ec), kExitUsage);
  }
  // Held until the rank files are merged or left: one recording per rank folder. Creating the
  // lock file also proves the folder writable, before the job starts.
  RankFolderLock lock;
  switch (lock.acquire(dir, &error)) {
    case RankFolderLock::Outcome::kLocked:
      break;
    case RankFolderLock::Outcome::kInUse:
      return fail(kPrefix, error, kExitUsage);
    case RankFolderLock::Outcome::kCannotWrite:
      if (job.created_dir) fs::remove(job.dir, ec);
      if (created_nodes_dir) fs::remove(job.nodes_dir, ec);
      return fail(kPrefix, error, kExitUsage);
  }
  // Giving up before the job: nothing of ours is left behind.
  auto giveUp = [&](int status) {
    lock.release();
    if (job.created_dir) fs::remove(job.dir, ec);        // only when empty
    if (created_nodes_dir) fs::remove(job.nodes_dir, ec);  // only when empty (other nodes)
    return fail(kPrefix, error, status);
  };
  // Rank files already there belong to another run: leave them out of this trace.
  std::vector<std::string> before;
  if (!listRankFiles(dir, &before, &error)) return giveUp(kExitUsage);
  if (!before.empty() && isMultiNode(options)) {
    // `ringside merge` of the nodes' folders would take them in (the run id derived from
    // MASTER_ADDR:MASTER_PORT may well be the same as last time).
    error = dir + " already holds " + std::to_string(before.size()) +
            " rank file(s) of an earlier run; merge or move them first, or record into another "
            "--dir";
    return giveUp(kExitUsage);
  }
  if (!before.empty()) {
    std::cerr << kPrefix << dir << " already holds " << before.size()
              << " rank file(s) of another run; they are left out of this trace\n";
  }
  job.before.insert(before.begin(), before.end());

  int port = options.master_port;
  if (options.ranks > 0 && port == 0 && isMultiNode(options)) {
    port = kDefaultMultiNodePort;  // as torchrun: every node must find the same one
  } else if (options.ranks > 0 && port == 0) {
    port = findFreePort(options.master_addr, &error);
    if (port == 0) return giveUp(kExitDataError);
  }

  job.run_id = chooseRunId(options, port, &error);
  if (job.run_id.empty()) return giveUp(kExitUsage);
  std::vector<std::string> env = recordEnvironment(options, preload, job.dir, job.run_id);

  // The job's processes whose parent exits before them become our children (not init's), so
  // that after the command we can wait for every process of the job, not only the command.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  SuperviseOptions supervise;
  supervise.grace_s = options.grace_s;
  WatchdogOptions watch;
  watch.dir = job.dir.string();
  watch.hang_timeout_s = options.hang_timeout_s;
  watch.kill = options.on_hang_kill;
  watch.whole_world = !isMultiNode(options);
  watch.not_before_unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
  Watchdog watchdog(watch);
  supervise.on_exit = [&watchdog](pid_t pid, int status) { watchdog.noteExit(pid, status); };
  watchdog.start();
  JobResult result = runJob(buildChildren(options, env, port), supervise);
  watchdog.stop();
  job.hang_verdict = watchdog.verdict();
  job.hang_verdict_unix_ns = watchdog.verdictUnixNs();
  job.status = result.exit_code;
  job.start_failed = result.start_failed;
  if (job.status != 0 && !job.start_failed) {
    // Also when every rank failed at once (the launcher says nothing then).
    std::cerr << kPrefix << "the job failed: exit status " << job.status
              << (job.status > 128 && job.status < 128 + 65
                      ? " (killed by signal " + std::to_string(job.status - 128) + ")"
                      : std::string())
              << "\n";
  }

  // From here on the exit status is the job's. Set only now, so the job never inherits it: a
  // stderr nobody reads any more must not kill us with SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  try {
    finishRecording(options, job, &lock);
  } catch (const std::exception& e) {
    std::cerr << kPrefix << "internal error after the job: " << e.what()
              << "; the rank files are kept in " << dir << "\n";
  } catch (...) {
    std::cerr << kPrefix << "internal error after the job; the rank files are kept in " << dir
              << "\n";
  }
  return job.status;
}

}  // namespace ringside::cli
