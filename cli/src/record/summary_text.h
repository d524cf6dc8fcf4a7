// cli/record/summary_text.h — the run summary as text for a terminal of 100 columns.
#pragma once

#include <map>
#include <string>

#include "common/recording_note.h"
#include "ringside/analyzer/summary.h"

namespace ringside::cli {

// The whole summary, each line ending in '\n', none wider than 100 columns
// (host names and op names are shortened to fit).
std::string formatSummary(const analyzer::Summary& summary);

}  // namespace ringside::cli
