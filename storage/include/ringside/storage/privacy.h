// storage/privacy.h — what the files ringside writes reveal, and to whom.
//
// Rank files, rank folders and merged traces hold command lines, host names
// and the job's timing, so they are private by default: files 0600, folders
// 0700, whatever the umask. RINGSIDE_SHARE=1 (`ringside record --share` sets
// it) gives the umask's modes instead (0644 and 0755 under umask 022).
//
// Command lines: RINGSIDE_REDACT=1 (`ringside record --redact` sets it) keeps
// only the program's name and replaces every argument by "<redacted>", so no
// argument value (`--api-key=...`, a path, a host) reaches a trace.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace ringside::storage {

// True when RINGSIDE_SHARE is set to anything but "" or "0".
bool shareRequested();
// True when RINGSIDE_REDACT is set to anything but "" or "0".
bool redactRequested();

// The mode a new file or folder of ours gets: 0600 / 0700, or with
// RINGSIDE_SHARE the umask's 0666 & ~umask / 0777 & ~umask.
mode_t outputFileMode();
mode_t outputDirMode();

// Gives an existing file (or folder) the mode above; for files created by a
// library that picks its own mode (SQLite). Call before anything is written.
// False + errno on failure.
bool applyOutputFileMode(const std::string& path);

// The argument vector as stored in a trace: joined by spaces, or with
// `redact`, argv[0]'s basename followed by one "<redacted>" per argument.
std::string storedCommandLine(const std::vector<std::string>& argv, bool redact);
// The process's own command line (/proc/self/cmdline, at most 4 KiB read),
// redacted when redactRequested().
std::string ownCommandLine();

}  // namespace ringside::storage
