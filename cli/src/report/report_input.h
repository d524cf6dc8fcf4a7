// cli/report/report_input.h — opening a trace for `report`, `diff` and `export`:
// the storage reader's one-line errors, plus the refusal of a trace that holds
// no collective calls (nothing to report).
#pragma once

#include <memory>
#include <string>

#include "ringside/storage/trace_reader.h"

namespace ringside::cli {

// False + one line naming `path` when there is no file there, or a folder (one not merged yet).
bool traceFileExists(const std::string& path, std::string* error);

// Opens `path` read-only. nullptr + one line naming the file in *error when it
// is missing, not a ringside trace, corrupt, newer, or empty. `transfers_checked_by_reading`:
// PRAGMA quick_check of everything but transfer_data (milliseconds instead of seconds on a large
// trace), which the reader checks as it reads it (storage::TraceOpenOptions): only for a caller
// that uses nothing it read before forEachTransfer read every row and returned true (analyze()
// does, and fails with the reader's one line).
std::unique_ptr<storage::TraceReader> openReportTrace(const std::string& path, std::string* error,
                                                      bool transfers_checked_by_reading = false);

}  // namespace ringside::cli
