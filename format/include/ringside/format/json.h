// ringside/format/json.h — JSON syntax for writers that stream their output: string literals
// and numbers. Nothing here builds a document in memory.
#pragma once

#include <string>
#include <string_view>

namespace ringside::format {

// Appends `text` as a JSON string literal (quotes included) to *out. Control characters are
// escaped (\n, \r, \t, else \u00XX, DEL too); invalid UTF-8 bytes become U+FFFD so the result
// is always valid JSON.
void appendJsonString(std::string_view text, std::string* out);
std::string jsonString(std::string_view text);

// A finite number in JSON syntax ("null" for NaN or infinity), shortest round-trip form.
std::string jsonNumber(double value);
// The same with at most `significant` digits ("%.*g"), for figures that carry no more.
std::string jsonNumber(double value, int significant);

}  // namespace ringside::format
