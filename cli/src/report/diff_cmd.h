// cli/report/diff_cmd.h — `ringside diff A B`: two traces analysed the same way and
// compared by op and size (analyzer::diff), verdicts first. Thin client of the
// analyzer; the formats are in report_format.h.
#pragma once

#include <span>
#include <string>

#include "options.h"

namespace ringside::cli {

struct DiffCliOptions {
  std::string format = "text";  // text, md, html, json, csv
  std::string output;           // "" or "-": stdout
  std::string topology;         // applies to both traces
  std::string label_a, label_b; // "" = the analyzer names each side by its library
  std::string trace_a, trace_b;
};

ParseStatus parseDiffArgs(std::span<const std::string> args, DiffCliOptions* out,
                          std::string* error);
std::string diffHelp();
int runDiff(std::span<const std::string> args);

}  // namespace ringside::cli
