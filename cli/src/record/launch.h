// cli/record/launch.h — starting the processes of a recorded job and waiting for them.
//
// The children stay in ringside's process group, so a Ctrl-C at the terminal
// reaches them directly; ringside itself never dies of it while the job runs.
// Signals sent to ringside with kill() (SIGINT, SIGTERM, SIGHUP, SIGQUIT) are
// forwarded to every child still running; SIGTERM always is. Nothing here
// touches trace files.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace ringside::cli {

// The status a shell reports for a wait() status: the exit code, or 128 + N
// for a process killed by signal N.
int exitCodeFromWaitStatus(int wait_status);
// "exit code 3" or "killed by SIGTERM", for messages.
std::string describeWaitStatus(int wait_status);
// The shell's code for a command that could not be started: 127 when it was
// not found, 126 otherwise (not executable, ...).
int exitCodeForExecError(int error_number);

// Environment as a list of "KEY=VALUE" strings.
std::vector<std::string> currentEnvironment();
// Replaces KEY's value, or appends KEY=VALUE when KEY is not set.
void setEnvVar(std::vector<std::string>* env, std::string_view key, std::string_view value);
// The value of KEY, or nullptr.
const char* findEnvVar(const std::vector<std::string>& env, std::string_view key);

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH like a shell does
  std::vector<std::string> env;
  int rank = -1;  // -1: the single command (a launcher)
};

struct SuperviseOptions {
  double grace_s = 30.0;       // after a child fails: time the others get to finish
  double kill_after_s = 10.0;  // after SIGTERM: time before SIGKILL
  std::string prefix = "ringside record: ";  // of the lines said on stderr (bench: its own)
  // Called with each child's pid and wait status when it has ended (record's watchdog notes it).
  std::function<void(pid_t, int)> on_exit;
};

struct JobResult {
  // 0 when every child exited 0, else the status of the first child that
  // failed: exit code, 128 + signal, or 127/126 when it could not be started.
  int exit_code = 0;
  bool start_failed = false;  // a child could not be started (reported on stderr)
};

// Starts the children in order and waits until all have ended. Once a child
// failed, the others get grace_s seconds, then SIGTERM, then SIGKILL after
// kill_after_s. With a single child no one else is stopped.
JobResult runJob(const std::vector<ChildSpec>& children, const SuperviseOptions& options);

}  // namespace ringside::cli
