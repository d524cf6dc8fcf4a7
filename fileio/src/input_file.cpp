#include "ringside/fileio/input_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "path_kind.h"

namespace ringside::fileio {
namespace {

std::string sizeLimit(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 20) && bytes % (uint64_t{1} << 20) == 0)
    return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

bool isNodeFolderName(const char* name) {
  if (std::strncmp(name, "node-", 5) != 0 || name[5] == '\0') return false;
  for (const char* p = name + 5; *p != '\0'; ++p)
    if (*p < '0' || *p > '9') return false;
  return true;
}

// Whether a regular file directly in `folder` (or, when `nodes`, in its node-<digits> folders)
// is the file (dev, ino). Sets *found to its path.
bool folderHolds(const std::string& folder, dev_t dev, ino_t ino, bool nodes, std::string* found) {
  DIR* d = ::opendir(folder.c_str());
  if (d == nullptr) return false;
  bool hit = false;
  while (!hit) {
    const dirent* e = ::readdir(d);
    if (e == nullptr) break;
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    const std::string path = folder + "/" + e->d_name;
    struct stat sb {};
    if (::stat(path.c_str(), &sb) != 0) continue;
    if (S_ISREG(sb.st_mode) && sb.st_dev == dev && sb.st_ino == ino) {
      *found = path;
      hit = true;
    } else if (nodes && S_ISDIR(sb.st_mode) && isNodeFolderName(e->d_name)) {
      hit = folderHolds(path, dev, ino, false, found);
    }
  }
  ::closedir(d);
  return hit;
}

}  // namespace

bool readConfigFile(const std::string& path, uint64_t max_bytes, const std::string& what,
                    std::string* text, std::string* error) {
  text->clear();
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below anyway).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    *error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  struct stat st {};
  bool ok = true;
  if (::fstat(fd, &st) != 0) {
    *error = path + ": cannot read: " + std::strerror(errno);
    ok = false;
  } else if (!S_ISREG(st.st_mode)) {
    // /dev/zero, a FIFO or a terminal would be read without end; a folder not at all.
    *error = path + ": not a regular file (" + detail::pathKind(st.st_mode) + "); a " + what +
             " must be one";
    ok = false;
  } else if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    *error = path + ": " + std::to_string(st.st_size) + " bytes; a " + what +
             " may have at most " + sizeLimit(max_bytes);
    ok = false;
  }
  char buffer[65536];
  while (ok) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = path + ": cannot read: " + std::strerror(errno);
      ok = false;
    } else if (n == 0) {
      break;
    } else if (text->size() + static_cast<size_t>(n) > max_bytes) {
      *error = path + ": more than the " + sizeLimit(max_bytes) + " a " + what + " may have";
      ok = false;
    } else {
      text->append(buffer, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  if (!ok) text->clear();
  return ok;
}

bool outputIsAnInput(const std::string& output, const std::vector<std::string>& inputs,
                     std::string* error) {
  if (output.empty() || output == "-") return false;
  struct stat out {};
  if (::stat(output.c_str(), &out) != 0) return false;  // nothing there yet: no input
  for (const std::string& input : inputs) {
    if (input.empty() || input == "-") continue;
    struct stat in {};
    if (::stat(input.c_str(), &in) != 0) continue;
    std::string found;
    if (in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
      found = input;
    } else if (!S_ISDIR(in.st_mode) || S_ISDIR(out.st_mode) ||
               !folderHolds(input, out.st_dev, out.st_ino, true, &found)) {
      continue;
    }
    *error = output + ": is the input " + found +
             "; an output never replaces its input (choose another name)";
    return true;
  }
  return false;
}

}  // namespace ringside::fileio
