// cli/export/export_json.h — the small JSON writing helpers shared by `ringside export`
// and the JSON report: string escaping and number formatting. Writers stream
// their output; nothing here builds a document in memory.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ringside::cli {

// Appends `text` as a JSON string literal (quotes included) to *out. Control
// characters are escaped as \uXXXX; invalid UTF-8 bytes become U+FFFD so the
// result is always valid JSON.
void appendJsonString(std::string_view text, std::string* out);
std::string jsonString(std::string_view text);

// A finite number in JSON syntax ("null" for NaN or infinity), shortest
// round-trip form.
std::string jsonNumber(double value);

// Nanoseconds as microseconds with three decimals ("12.345"), exact.
std::string microsFromNanos(int64_t ns);

}  // namespace ringside::cli
