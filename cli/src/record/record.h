// cli/record/record.h — `ringside record`: run a job traced, merge, summarize.
#pragma once

#include <cstdint>
#include <ctime>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "common/output_folder.h"

namespace ringside::cli {

inline constexpr const char* kPreloadName = "libringside_preload.so";

// Where the preload library is: `env_value` ($RINGSIDE_PRELOAD) when set,
// else next to the executable, else <exe_dir>/../lib, else
// <exe_dir>/../lib/ringside. Returns "" and fills *error when not found.
std::string findPreloadLibrary(const char* env_value, const std::filesystem::path& exe_dir,
                               std::string* error);

// LD_PRELOAD with `library` first, keeping the user's entries after it
// (`existing` may be null or empty; an entry equal to `library` is not repeated).
std::string prependPreload(const char* existing, const std::string& library);

// ringside-YYYYmmdd-HHMMSS.sqlite for the local time `now`.
std::string defaultTraceName(std::time_t now);

// argv joined by spaces, quoted for a POSIX shell where needed.
std::string shellJoin(const std::vector<std::string>& argv);

// A command line as a trace's meta stores it: shellJoin(argv), or under
// RINGSIDE_REDACT (`record --redact`) the program's name and "<redacted>" arguments.
std::string storedCommand(const std::vector<std::string>& argv);


// Whether `name` is a rank file's name as the preload library makes it,
// rank-<host>-<pid>-<start_unix_ns>.sqlite; *pid and *start_unix_ns (when given) from the name.
bool parseRankFileName(const std::string& name, int64_t* pid, int64_t* start_unix_ns);

int runRecord(std::span<const std::string> args);

}  // namespace ringside::cli
