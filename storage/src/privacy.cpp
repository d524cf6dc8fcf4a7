// storage/src/privacy.cpp — see privacy.h.
#include "ringside/storage/privacy.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ringside::storage {
namespace {

bool envFlag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

// The process's umask without changing it (umask(2) can only read by
// setting, which races with other threads creating files): Linux >= 4.7
// shows it in /proc/self/status. Falls back to the usual 022.
mode_t currentUmask() {
  mode_t mask = 022;
  if (FILE* f = std::fopen("/proc/self/status", "re")) {
    char line[256];
    while (std::fgets(line, sizeof line, f) != nullptr) {
      unsigned value = 0;
      if (std::sscanf(line, "Umask: %o", &value) == 1) {
        mask = static_cast<mode_t>(value & 0777);
        break;
      }
    }
    std::fclose(f);
  }
  return mask;
}

}  // namespace

bool shareRequested() { return envFlag("RINGSIDE_SHARE"); }
bool redactRequested() { return envFlag("RINGSIDE_REDACT"); }

mode_t outputFileMode() { return shareRequested() ? (0666 & ~currentUmask()) : 0600; }
mode_t outputDirMode() { return shareRequested() ? (0777 & ~currentUmask()) : 0700; }

bool applyOutputFileMode(const std::string& path) {
  return ::chmod(path.c_str(), outputFileMode()) == 0;
}

std::string storedCommandLine(const std::vector<std::string>& argv, bool redact) {
  std::string out;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (i > 0) out += ' ';
    if (!redact) {
      out += argv[i];
    } else if (i > 0) {
      out += "<redacted>";
    } else {
      // The program's name only: its folder may name a user or a project.
      size_t slash = argv[0].find_last_of('/');
      out += slash == std::string::npos ? argv[0] : argv[0].substr(slash + 1);
    }
  }
  return out;
}

std::string ownCommandLine() {
  std::vector<std::string> argv;
  bool cut = false;
  if (FILE* f = std::fopen("/proc/self/cmdline", "rbe")) {
    char buf[4096];
    size_t n = std::fread(buf, 1, sizeof buf, f);
    std::fclose(f);
    cut = n == sizeof buf;
    std::string cur;
    for (size_t i = 0; i < n; ++i) {
      if (buf[i] != '\0') {
        cur.push_back(buf[i]);
        continue;
      }
      argv.push_back(cur);
      cur.clear();
    }
    if (!cur.empty()) argv.push_back(cur);
  }
  const bool redact = redactRequested();
  std::string out = storedCommandLine(argv, redact);
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (cut && !redact) out += " ...";
  return out;
}

}  // namespace ringside::storage
