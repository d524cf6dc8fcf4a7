#include "export/export.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <system_error>
#include <vector>

#include "export/export_perfetto.h"
#include "report/report_input.h"

namespace ringside::cli {
namespace {

constexpr std::string_view kPrefix = "ringside export: ";

std::vector<OptionSpec> exportSpecs(ExportCliOptions* o) {
  return {
      {"perfetto", 0, "", "Chrome/Perfetto trace-event JSON (ui.perfetto.dev, chrome://tracing)",
       setFlag(&o->perfetto)},
      {"output", 'o', "FILE.json", "file to write ('-' for standard output)",
       storeText(&o->output)},
      {"force", 'f', "", "overwrite an existing file", setFlag(&o->force)},
  };
}

}  // namespace

ParseStatus parseExportArgs(std::span<const std::string> args, ExportCliOptions* out,
                            std::string* error) {
  *out = ExportCliOptions{};
  std::vector<OptionSpec> specs = exportSpecs(out);
  std::vector<std::string> positionals;
  ParseStatus status = parseOptions(args, specs, Positionals::kInterleaved, &positionals, error);
  if (status != ParseStatus::kOk) return status;
  if (positionals.size() != 1) {
    *error = positionals.empty() ? "no trace (usage: ringside export --perfetto TRACE -o FILE)"
                                 : "one trace at a time";
    return ParseStatus::kError;
  }
  out->trace = positionals.front();
  if (!out->perfetto) {
    *error = "choose a format: --perfetto";
    return ParseStatus::kError;
  }
  if (out->output.empty()) {
    *error = "no output: -o FILE.json";
    return ParseStatus::kError;
  }
  return ParseStatus::kOk;
}

std::string exportHelp() {
  ExportCliOptions scratch;
  return "Usage: ringside export --perfetto TRACE -o FILE.json\n"
         "\n"
         "Writes a trace as Chrome/Perfetto trace-event JSON: one process per rank, one track per\n"
         "recording thread (collectives) and per link (transfers, with phase and step). Open it\n"
         "in ui.perfetto.dev or chrome://tracing.\n"
         "Exit status: 0 written, 1 the trace or the output could not be used, 2 bad usage.\n"
         "\n" +
         formatOptionsHelp(exportSpecs(&scratch));
}

int runExport(std::span<const std::string> args) {
  ExportCliOptions options;
  std::string error;
  if (int code = handleParseOutcome(parseExportArgs(args, &options, &error), exportHelp, kPrefix, error);
      code >= 0)
    return code;
  std::unique_ptr<storage::TraceReader> reader = openReportTrace(options.trace, &error);
  if (!reader) {
    std::cerr << kPrefix << error << "\n";
    return kExitDataError;
  }
  PerfettoCounts counts;
  if (options.output == "-") {
    if (!writePerfettoTrace(*reader, std::cout, &counts, &error)) {
      std::cerr << kPrefix << options.trace << ": " << error << "\n";
      return kExitDataError;
    }
    return kExitOk;
  }
  std::error_code ec;
  if (!options.force && std::filesystem::exists(options.output, ec)) {
    std::cerr << kPrefix << options.output << ": exists (use --force to overwrite)\n";
    return kExitDataError;
  }
  // Written beside the target and renamed, so a failed export leaves no half file.
  std::string partial = options.output + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    if (!out) {
      std::cerr << kPrefix << options.output << ": cannot be written\n";
      return kExitDataError;
    }
    if (!writePerfettoTrace(*reader, out, &counts, &error)) {
      out.close();
      std::filesystem::remove(partial, ec);
      std::cerr << kPrefix << options.trace << ": " << error << "\n";
      return kExitDataError;
    }
    out.close();
    if (!out) {
      std::filesystem::remove(partial, ec);
      std::cerr << kPrefix << options.output << ": write failed\n";
      return kExitDataError;
    }
  }
  std::filesystem::rename(partial, options.output, ec);
  if (ec) {
    std::filesystem::remove(partial, ec);
    std::cerr << kPrefix << options.output << ": cannot be written\n";
    return kExitDataError;
  }
  std::cerr << "ringside export: " << counts.collectives << " collective calls and "
            << counts.transfers << " transfers written to " << options.output << "\n";
  return kExitOk;
}

}  // namespace ringside::cli
