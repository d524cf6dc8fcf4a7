// cli/export/export.h — `ringside export --perfetto TRACE -o FILE.json`: a trace in
// another tool's format. Needs only the storage reader (export_perfetto.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "options.h"

namespace ringside::cli {

struct ExportCliOptions {
  bool perfetto = false;
  std::string output;
  bool force = false;
  int64_t counter_bin_us = 0;  // 0: chosen from the trace
  std::string trace;
};

ParseStatus parseExportArgs(std::span<const std::string> args, ExportCliOptions* out,
                            std::string* error);
std::string exportHelp();
int runExport(std::span<const std::string> args);

}  // namespace ringside::cli
