#include "record/rank_folder_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace ringside::cli {

namespace {

// The pid a lock file names, "" when it names none (an owner that has not written it yet).
std::string ownerOf(int fd) {
  char text[32] = {};
  ssize_t n = pread(fd, text, sizeof text - 1, 0);
  if (n <= 0) return "";
  std::string_view pid(text, static_cast<size_t>(n));
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.remove_suffix(1);
  if (pid.empty() || pid.find_first_not_of("0123456789") != std::string_view::npos) return "";
  return std::string(pid);
}

}  // namespace

RankFolderLock::~RankFolderLock() { release(); }

RankFolderLock::Outcome RankFolderLock::acquire(const std::string& dir, std::string* error) {
  release();
  std::string path = dir + "/" + kRankFolderLockName;
  // A holder that is just releasing removes the file before unlocking; the file we opened may
  // then be gone from the folder by the time we hold its lock. Such a lock guards nothing:
  // open the folder's current file again. A few rounds settle any such race.
  for (int attempt = 0; attempt < 8; ++attempt) {
    // O_NOFOLLOW: a planted link must not make us create or truncate a file elsewhere.
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      *error = "cannot write rank files to " + dir + ": " + std::strerror(errno);
      return Outcome::kCannotWrite;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int err = errno;
      std::string owner = ownerOf(fd);
      close(fd);
      if (err != EWOULDBLOCK) {
        *error = "cannot lock " + path + ": " + std::strerror(err);
        return Outcome::kCannotWrite;
      }
      *error = "another `ringside record`" + (owner.empty() ? "" : " (pid " + owner + ")") +
               " is writing rank files to " + dir + "; use another -o or --dir";
      return Outcome::kInUse;
    }
    struct stat held {};
    struct stat named {};
    if (fstat(fd, &held) == 0 && lstat(path.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
        held.st_ino == named.st_ino) {
      std::string pid = std::to_string(getpid()) + "\n";
      // The pid is only for the message of a recording refused; failing to write it is harmless.
      if (ftruncate(fd, 0) == 0) {
        ssize_t ignored = pwrite(fd, pid.data(), pid.size(), 0);
        (void)ignored;
      }
      fd_ = fd;
      path_ = path;
      return Outcome::kLocked;
    }
    close(fd);
  }
  *error = "cannot lock " + path + ": it keeps being replaced";
  return Outcome::kCannotWrite;
}

void RankFolderLock::release() {
  if (fd_ < 0) return;
  unlink(path_.c_str());
  close(fd_);  // drops the lock
  fd_ = -1;
  path_.clear();
}

}  // namespace ringside::cli
