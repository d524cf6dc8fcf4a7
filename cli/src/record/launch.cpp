#include "record/launch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <optional>

extern char** environ;

namespace ringside::cli {
namespace {

constexpr int kHandledSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD};

using Clock = std::chrono::steady_clock;

std::string signalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string childName(int rank) {
  return rank < 0 ? std::string("the command") : "rank " + std::to_string(rank);
}

struct Spawned {
  pid_t pid = -1;
  int error_number = 0;      // why it could not be started
  bool exec_failed = false;  // false: fork/pipe failed
};

// fork + execvpe. The exec outcome comes back through a close-on-exec pipe:
// it closes without data when exec succeeded, or carries exec's errno.
Spawned spawn(const ChildSpec& spec, const sigset_t& child_mask) {
  std::vector<char*> argv;
  for (const std::string& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& var : spec.env) envp.push_back(const_cast<char*>(var.c_str()));
  envp.push_back(nullptr);

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return {-1, errno, false};
  pid_t pid = fork();
  if (pid < 0) {
    int error_number = errno;
    close(fds[0]);
    close(fds[1]);
    return {-1, error_number, false};
  }
  if (pid == 0) {
    // Only async-signal-safe calls from here on.
    close(fds[0]);
    for (int sig : kHandledSignals) signal(sig, SIG_DFL);
    sigprocmask(SIG_SETMASK, &child_mask, nullptr);
    execvpe(argv[0], argv.data(), envp.data());
    int error_number = errno;
    ssize_t ignored = write(fds[1], &error_number, sizeof error_number);
    (void)ignored;
    _exit(127);
  }
  close(fds[1]);
  int error_number = 0;
  ssize_t n = 0;
  do {
    n = read(fds[0], &error_number, sizeof error_number);
  } while (n < 0 && errno == EINTR);
  close(fds[0]);
  if (n == static_cast<ssize_t>(sizeof error_number)) {
    waitpid(pid, nullptr, 0);
    return {-1, error_number, true};
  }
  return {pid, 0, false};
}

void reportStartFailure(const ChildSpec& spec, const Spawned& spawned, const std::string& prefix) {
  const std::string& cmd = spec.argv.front();
  std::cerr << prefix;
  if (!spawned.exec_failed) {
    std::cerr << "cannot start '" << cmd << "': " << std::strerror(spawned.error_number) << "\n";
  } else if (spawned.error_number == ENOENT && cmd.find('/') == std::string::npos) {
    std::cerr << cmd << ": command not found\n";
  } else {
    std::cerr << "cannot run '" << cmd << "': " << std::strerror(spawned.error_number) << "\n";
  }
}

struct Running {
  pid_t pid = -1;
  int rank = -1;
  bool done = false;
};

class Supervisor {
 public:
  explicit Supervisor(const SuperviseOptions& options) : options_(options) {}

  void add(pid_t pid, int rank) {
    children_.push_back({pid, rank, false});
    ++alive_;
  }

  // A child that never ran counts as a failed child.
  void startFailed(int rank, int code) { noteFailure(rank, code, ""); }

  int wait(const sigset_t& handled) {
    while (true) {
      reap();
      if (alive_ == 0) break;
      escalate();
      timespec timeout{0, 200 * 1000 * 1000};
      siginfo_t info{};
      int sig = sigtimedwait(&handled, &info, &timeout);
      if (sig > 0 && sig != SIGCHLD) forward(sig, info);
    }
    return first_failure_.value_or(0);
  }

 private:
  void reap() {
    int status = 0;
    pid_t pid = 0;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      for (Running& child : children_) {
        if (child.pid != pid || child.done) continue;
        child.done = true;
        --alive_;
        if (options_.on_exit) options_.on_exit(pid, status);
        int code = exitCodeFromWaitStatus(status);
        if (code != 0) noteFailure(child.rank, code, describeWaitStatus(status));
      }
    }
  }

  void noteFailure(int rank, int code, std::string how) {
    if (first_failure_) return;
    first_failure_ = code;
    failed_at_ = Clock::now();
    failure_text_ = how.empty() ? "" : childName(rank) + " failed (" + how + ")";
  }

  void escalate() {
    if (!failed_at_) return;
    auto since = std::chrono::duration<double>(Clock::now() - *failed_at_).count();
    // Said only when the others outlive the failure a little: when all ranks
    // fail together (the usual case) the job's own output tells the story.
    if (!announced_ && !failure_text_.empty() && since >= std::min(1.0, options_.grace_s)) {
      announced_ = true;
      std::cerr << options_.prefix << failure_text_ << "; waiting up to " << options_.grace_s
                << " s for the other " << alive_ << " before stopping them\n";
    }
    if (!termed_ && since >= options_.grace_s) {
      termed_ = true;
      std::cerr << options_.prefix << "stopping " << alive_ << " remaining process(es) with SIGTERM\n";
      signalAlive(SIGTERM);
    } else if (termed_ && !killed_ && since >= options_.grace_s + options_.kill_after_s) {
      killed_ = true;
      std::cerr << options_.prefix << "killing " << alive_ << " remaining process(es) with SIGKILL\n";
      signalAlive(SIGKILL);
    }
  }

  // A signal the terminal sent (si_code > 0, SI_KERNEL) went to the whole
  // foreground process group, children included: forwarding it would deliver
  // it twice. One sent with kill() reached only us. SIGTERM is always passed on.
  void forward(int sig, const siginfo_t& info) {
    if (sig != SIGTERM && info.si_code > 0) return;
    signalAlive(sig);
  }

  void signalAlive(int sig) {
    for (const Running& child : children_) {
      if (!child.done) kill(child.pid, sig);
    }
  }

  SuperviseOptions options_;
  std::vector<Running> children_;
  int alive_ = 0;
  std::optional<int> first_failure_;
  std::optional<Clock::time_point> failed_at_;
  std::string failure_text_;
  bool announced_ = false;
  bool termed_ = false;
  bool killed_ = false;
};

// Blocks the handled signals for the lifetime of the object, so they are
// taken by sigtimedwait instead of their default actions; on the way out
// drops what is still pending (a late terminal SIGINT must not kill us before
// the merge) and restores the caller's mask.
class BlockedSignals {
 public:
  BlockedSignals() {
    sigemptyset(&handled_);
    for (int sig : kHandledSignals) sigaddset(&handled_, sig);
    sigprocmask(SIG_BLOCK, &handled_, &original_);
  }
  ~BlockedSignals() {
    timespec zero{0, 0};
    while (sigtimedwait(&handled_, nullptr, &zero) > 0) {
    }
    sigprocmask(SIG_SETMASK, &original_, nullptr);
  }
  BlockedSignals(const BlockedSignals&) = delete;
  BlockedSignals& operator=(const BlockedSignals&) = delete;

  const sigset_t& handled() const { return handled_; }
  const sigset_t& original() const { return original_; }

 private:
  sigset_t handled_{};
  sigset_t original_{};
};

}  // namespace

int exitCodeFromWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

std::string describeWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return "exit code " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) return "killed by " + signalName(WTERMSIG(wait_status));
  return "unknown wait status " + std::to_string(wait_status);
}

int exitCodeForExecError(int error_number) { return error_number == ENOENT ? 127 : 126; }

std::vector<std::string> currentEnvironment() {
  std::vector<std::string> env;
  for (char** var = environ; var != nullptr && *var != nullptr; ++var) env.emplace_back(*var);
  return env;
}

namespace {
bool isEntryOf(const std::string& var, std::string_view key) {
  return var.size() > key.size() && var.compare(0, key.size(), key) == 0 && var[key.size()] == '=';
}
}  // namespace

void setEnvVar(std::vector<std::string>* env, std::string_view key, std::string_view value) {
  std::string entry = std::string(key) + "=" + std::string(value);
  for (std::string& var : *env) {
    if (isEntryOf(var, key)) {
      var = std::move(entry);
      return;
    }
  }
  env->push_back(std::move(entry));
}

const char* findEnvVar(const std::vector<std::string>& env, std::string_view key) {
  for (const std::string& var : env) {
    if (isEntryOf(var, key)) return var.c_str() + key.size() + 1;
  }
  return nullptr;
}

JobResult runJob(const std::vector<ChildSpec>& children, const SuperviseOptions& options) {
  BlockedSignals blocked;
  Supervisor supervisor(options);
  JobResult result;
  for (const ChildSpec& spec : children) {
    Spawned spawned = spawn(spec, blocked.original());
    if (spawned.pid < 0) {
      reportStartFailure(spec, spawned, options.prefix);
      result.start_failed = true;
      // Starting the rest would only make them wait for a rank that never comes.
      supervisor.startFailed(
          spec.rank, spawned.exec_failed ? exitCodeForExecError(spawned.error_number) : 126);
      break;
    }
    supervisor.add(spawned.pid, spec.rank);
  }
  result.exit_code = supervisor.wait(blocked.handled());
  return result;
}

}  // namespace ringside::cli
