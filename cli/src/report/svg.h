// cli/report/svg.h — the few pieces the HTML report's inline SVG charts share: XML
// escaping, number formatting for coordinates, and color scales. No drawing
// library, no external resources.
#pragma once

#include <string>
#include <string_view>

namespace ringside::cli::svg {

// & < > " ' escaped for text and attributes; control characters as format::printableText.
std::string esc(std::string_view text);
std::string n(double v);                 // coordinate with one decimal
// Heat color from white (0) through yellow and orange to dark red (1).
std::string heat(double fraction);
// A distinct color for series i (libraries, phases).
std::string series(size_t i);

}  // namespace ringside::cli::svg
