// cli/common/text_wrap.h — laying out text for a terminal of kReportWidth columns: display width
// of UTF-8 text, cutting to a width, word wrapping. Shared by the reports and the run summary.
#pragma once

#include <cstddef>
#include <string>

namespace ringside::cli {

inline constexpr size_t kReportWidth = 100;  // text output fits this many columns

// Display width of UTF-8 text (code points; the reports use no wide characters).
size_t columns(const std::string& s);

// `s` cut to `width` columns, ending in '~' when it was cut; whole characters only.
std::string shorten(const std::string& s, size_t width);

// Word-wraps `text` to `width` columns; continuation lines start with `indent`.
std::string wrapText(const std::string& text, size_t width, const std::string& first_indent,
                     const std::string& indent);

}  // namespace ringside::cli
