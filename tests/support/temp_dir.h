// tests/support/temp_dir.h — private temporary folders for tests: a new empty
// /tmp/ringside-<name>-XXXXXX, made with mkdtemp (no two tests, or two runs of
// one test, share it), and an owner that removes it with its contents.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace ringside::test_support {

// A new empty folder /tmp/ringside-<name>-XXXXXX; "" if it cannot be made.
inline std::string makeTempDir(const std::string& name) {
  std::string tmpl = "/tmp/ringside-" + name + "-XXXXXX";
  const char* d = ::mkdtemp(tmpl.data());
  return d != nullptr ? d : "";
}

// Removes `dir` and everything in it; errors are ignored (a test's scratch space).
inline void removeTempDir(const std::string& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

// makeTempDir() for one scope: the folder and its contents go with the object.
class TempDir {
 public:
  explicit TempDir(const std::string& name) : path_(makeTempDir(name)) {}
  ~TempDir() { removeTempDir(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // The folder; "" if it could not be made.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace ringside::test_support
