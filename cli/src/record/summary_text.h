// cli/record/summary_text.h — the run summary as text for a terminal of 100 columns.
#pragma once

#include <map>
#include <string>

#include "ringside/analyzer/summary.h"

namespace ringside::cli {

// The whole summary, each line ending in '\n', none wider than 100 columns
// (host names and op names are shortened to fit).
std::string formatSummary(const analyzer::Summary& summary);

// One line (not wrapped) when the trace's meta says the recording was bounded (a window, or a
// detail level that left messages out or added them up; docs/recording.md), else "". Shared by
// the run summary and `ringside report`.
std::string recordingNote(const std::map<std::string, std::string>& meta);

}  // namespace ringside::cli
