#include "common/output_folder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "ringside/storage/privacy.h"

namespace ringside::cli {
namespace fs = std::filesystem;

bool makeRankFolder(const fs::path& path, std::error_code* ec) {
  const fs::path dir = path.has_filename() ? path : path.parent_path();  // "runs/x/" is "runs/x"
  if (dir.has_parent_path()) {
    fs::create_directories(dir.parent_path(), *ec);
    if (*ec) return false;
  }
  // The last component is made and checked relative to its parent, never through a link planted
  // there (`<out>.ranks`, `<dir>/node-K` pointing elsewhere): a link is refused (ELOOP).
  const fs::path parent = dir.has_parent_path() ? dir.parent_path() : fs::path(".");
  const int parent_fd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent_fd < 0) {
    *ec = std::error_code(errno, std::generic_category());
    return false;
  }
  const std::string name = dir.filename().string();
  const mode_t mode = storage::outputDirMode();
  const bool made = ::mkdirat(parent_fd, name.c_str(), mode) == 0;
  if (!made && errno != EEXIST) {
    *ec = std::error_code(errno, std::generic_category());
    ::close(parent_fd);
    return false;
  }
  const int fd = ::openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  int open_errno = errno;
  if (fd < 0) {
    // A link is ELOOP (O_DIRECTORY makes the kernel say ENOTDIR for one); a file ENOTDIR.
    struct stat sb {};
    if (::fstatat(parent_fd, name.c_str(), &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(sb.st_mode))
      open_errno = ELOOP;
    ::close(parent_fd);
    *ec = std::error_code(open_errno, std::generic_category());
    return false;
  }
  ::close(parent_fd);
  if (made) ::fchmod(fd, mode);  // exactly that mode, whatever a stricter umask took away
  ::close(fd);
  return made;
}

std::string rankFolderError(const std::string& dir, const std::error_code& ec) {
  if (ec == std::errc::too_many_symbolic_link_levels) {
    return "cannot write rank files to " + dir +
           ": it is a symbolic link, which is never followed (give the folder itself with --dir)";
  }
  if (ec == std::errc::not_a_directory) return "cannot write rank files to " + dir + ": not a folder";
  return "cannot write rank files to " + dir + ": " + ec.message();
}

}  // namespace ringside::cli
