#include "view_cmd.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <vector>

#include "options.h"

namespace ringside::cli {
namespace {

namespace fs = std::filesystem;

// The viewer beside this executable; RINGSIDE_VIEWER overrides it (tests, installs).
fs::path viewerPath() {
  if (const char* env = std::getenv("RINGSIDE_VIEWER"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path() / "ringside-view";
}

}  // namespace

int runView(std::span<const std::string> args) {
  const fs::path viewer = viewerPath();
  std::error_code ec;
  if (viewer.empty() || !fs::is_regular_file(viewer, ec)) {
    const bool help = !args.empty() && (args.front() == "--help" || args.front() == "-h");
    (help ? std::cout : std::cerr)
        << (help ? "Usage: ringside view [options] TRACE.sqlite [TRACE_B.sqlite]\n\n" : "")
        << "ringside view: this build has no viewer (" << viewer.string()
        << " not found); configure with -DRINGSIDE_GUI=ON with libglfw3-dev, libimgui-dev and an "
           "OpenGL library installed\n";
    return help ? kExitOk : kExitDataError;
  }
  std::vector<std::string> argv_text = {viewer.string()};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::cout.flush();
  ::execv(argv[0], argv.data());
  std::cerr << "ringside view: cannot start " << viewer.string() << ": " << std::strerror(errno) << "\n";
  return kExitDataError;
}

}  // namespace ringside::cli
