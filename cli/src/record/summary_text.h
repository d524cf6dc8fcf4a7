// cli/record/summary_text.h — the run summary as text for a terminal of 100 columns.
#pragma once

#include <cstdint>
#include <string>

#include "ringside/analyzer/summary.h"

namespace ringside::cli {

// Human units: "512 B", "1.5 KiB", "3.0 GiB".
std::string formatBytes(int64_t bytes);
// "850 ns", "12.3 us", "4.56 ms", "1.23 s", "2m05s", "1h02m".
std::string formatDuration(int64_t ns);
// "1,234,567".
std::string formatCount(int64_t count);

// The whole summary, each line ending in '\n', none wider than 100 columns
// (host names and op names are shortened to fit).
std::string formatSummary(const analyzer::Summary& summary);

}  // namespace ringside::cli
