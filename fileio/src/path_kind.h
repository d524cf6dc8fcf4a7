// fileio/src/path_kind.h — what sits at a path, in words, for refusal messages.
#pragma once

#include <sys/stat.h>

namespace ringside::fileio::detail {

inline const char* pathKind(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "something else";
}

}  // namespace ringside::fileio::detail
