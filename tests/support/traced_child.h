// tests/support/traced_child.h — for tests that run a traced process in a
// forked child and read the rank files it leaves: a private temporary folder
// (temp_dir.h), the child with its environment, and the rank files found afterwards.
//
// The collector (and CUPTI) are process-wide singletons, as in a traced job,
// so each test that activates them does so in a child of its own; the
// child's exit runs the final flush that writes the rank file.
#pragma once

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "temp_dir.h"

namespace ringside::test_support {

// Environment variables to set in the child (name -> value).
using Env = std::map<std::string, std::string>;

// The rank files (*.sqlite) in `dir`, in directory order.
inline std::vector<std::string> rankFiles(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 7 && n.substr(n.size() - 7) == ".sqlite") out.push_back(dir + "/" + n);
    }
    ::closedir(d);
  }
  return out;
}

// Runs `body` in a forked child that writes its rank files into `rank_dir`
// (RINGSIDE_DIR), with `env` set on top; the child exits with body()'s value.
// Returns that exit code, or 128 + the signal that ended the child.
template <class F>
int inChild(const std::string& rank_dir, const Env& env, F body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("RINGSIDE_DIR", rank_dir.c_str(), 1);
    // These tests check what the final flush writes, not how long it may take:
    // sanitizer builds write hundreds of thousands of rows slowly.
    ::setenv("RINGSIDE_EXIT_TIMEOUT_MS", "120000", 1);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::exit(body());  // the exit flushes: CUPTI's first, then the collector's
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace ringside::test_support
