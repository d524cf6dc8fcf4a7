// ringside/format/csv.h — RFC 4180 CSV, as spreadsheets and pandas read it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ringside::format {

// A field, quoted (with "" for ") when it holds , " CR or LF or starts or ends with a space
// or tab (which some readers would otherwise trim).
std::string csvField(std::string_view value);
// Fields joined by commas, ending in "\n".
std::string csvLine(const std::vector<std::string>& fields);

}  // namespace ringside::format
