// cli/report/report_input.h — opening a trace for `report`, `diff` and `export`:
// the storage reader's one-line errors, plus the refusal of a trace that holds
// no collective calls (nothing to report).
#pragma once

#include <memory>
#include <string>

#include "ringside/storage/trace_reader.h"

namespace ringside::cli {

// Opens `path` read-only. nullptr + one line naming the file in *error when it
// is missing, not a ringside trace, corrupt, newer, or empty.
std::unique_ptr<storage::TraceReader> openReportTrace(const std::string& path, std::string* error);

}  // namespace ringside::cli
