// cli/record/rank_folder_lock.h — one recording per rank folder.
//
// Two recordings that write into one rank folder would each merge the other's rank files (or
// fail half-way when the other removes them). `record` takes an exclusive flock on a lock file
// in the rank folder before its job starts and holds it until it has merged (or given up);
// a second `record` for the same folder is refused before its job starts.
//
// The lock file holds the owner's pid (for the message of the one refused). The file
// descriptor is close-on-exec: the job never inherits the lock, so a job that outlives a
// killed `record` does not keep the folder locked.
#pragma once

#include <string>

namespace ringside::cli {

// The lock file's name inside the rank folder (not a rank file: rank files end in .sqlite).
inline constexpr const char* kRankFolderLockName = ".ringside-record.lock";

class RankFolderLock {
 public:
  enum class Outcome {
    kLocked,     // ours until release() or destruction
    kInUse,      // another recording holds it; *error says which pid
    kCannotWrite  // the lock file cannot be created (folder missing, read-only, ...)
  };

  RankFolderLock() = default;
  ~RankFolderLock();
  RankFolderLock(const RankFolderLock&) = delete;
  RankFolderLock& operator=(const RankFolderLock&) = delete;

  // Creates `dir`/kRankFolderLockName (when missing) and locks it without waiting.
  // On anything but kLocked, *error holds one line naming `dir`.
  Outcome acquire(const std::string& dir, std::string* error);

  // Removes the lock file (still holding the lock, so no other recording can have locked the
  // same file meanwhile) and unlocks. Safe to call twice; the destructor calls it.
  void release();

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace ringside::cli
