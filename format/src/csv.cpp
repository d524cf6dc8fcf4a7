#include "ringside/format/csv.h"

namespace ringside::format {

std::string csvField(std::string_view value) {
  bool quote = value.find_first_of(",\"\r\n") != std::string_view::npos ||
               (!value.empty() && (value.front() == ' ' || value.back() == ' ' ||
                                   value.front() == '\t' || value.back() == '\t'));
  if (!quote) return std::string(value);
  std::string out = "\"";
  for (char c : value) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csvLine(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    out += csvField(fields[i]);
  }
  return out + "\n";
}

}  // namespace ringside::format
