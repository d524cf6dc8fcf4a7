#include "export/export.h"

#include <filesystem>
#include <iostream>
#include <system_error>
#include <vector>

#include "export/export_perfetto.h"
#include "report/report_input.h"
#include "ringside/storage/privacy.h"
#include "ringside/fileio/output_file.h"

namespace ringside::cli {
namespace {

constexpr std::string_view kPrefix = "ringside export: ";
constexpr int64_t kMaxCounterBinUs = int64_t{86'400} * 1'000'000;  // a day

std::vector<OptionSpec> exportSpecs(ExportCliOptions* o) {
  return {
      {"perfetto", 0, "", "Chrome/Perfetto trace-event JSON (ui.perfetto.dev, chrome://tracing)",
       setFlag(&o->perfetto)},
      {"output", 'o', "FILE.json", "file to write ('-' for standard output)",
       storeText(&o->output)},
      {"force", 'f', "", "overwrite an existing file", setFlag(&o->force)},
      {"counter-bin-us", 0, "US",
       "bin of the links' bytes/s counters, us (default: the calls' span / 10000, 1-2-5)",
       [o](std::string_view value, std::string* error) {
         if (parseInteger(value, 1, kMaxCounterBinUs, &o->counter_bin_us)) return true;
         *error = "'" + std::string(value) + "' is not a whole number of microseconds from 1 to " +
                  std::to_string(kMaxCounterBinUs);
         return false;
       }},
  };
}

}  // namespace

ParseStatus parseExportArgs(std::span<const std::string> args, ExportCliOptions* out,
                            std::string* error) {
  *out = ExportCliOptions{};
  std::vector<OptionSpec> specs = exportSpecs(out);
  ParseStatus status = parseOptionsOneInput(
      args, specs, "no trace (usage: ringside export --perfetto TRACE -o FILE)",
      "one trace at a time", &out->trace, error);
  if (status != ParseStatus::kOk) return status;
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
         "Writes a trace as Chrome/Perfetto trace-event JSON: one process per rank; its calls\n"
         "on one track per recording thread, its messages on one track per link and side\n"
         "(\"send 0->1\"), each named by side, link, phase and size; sub-tracks (\"lane 2\")\n"
         "where calls or messages overlap, so no slice overlaps another on its track; an arrow\n"
         "from each send to its receive; a bytes/s counter per link. Open it in\n"
         "ui.perfetto.dev or chrome://tracing.\n"
         "Exit status: 0 written, 1 the trace or the output could not be used, 2 bad usage.\n"
         "\n" +
         formatOptionsHelp(exportSpecs(&scratch));
}

int runExport(std::span<const std::string> args) {
  ExportCliOptions options;
  if (int code = parseVerbArgs(args, parseExportArgs, exportHelp, kPrefix, &options); code >= 0)
    return code;
  if (int code = refuseOutputsThatAreInputs(kPrefix, {options.output}, {options.trace}); code >= 0)
    return code;
  std::string error;
  std::unique_ptr<storage::TraceReader> reader = openReportTrace(options.trace, &error);
  if (!reader) return fail(kPrefix, error);
  PerfettoCounts counts;
  PerfettoSettings settings;
  settings.counter_bin_ns = options.counter_bin_us * 1000;
  if (options.output == "-") {
    const bool written = writePerfettoTrace(*reader, std::cout, settings, &counts, &error);
    // A failed write (a full disk, a closed pipe) is named by its own errno, kept by the checked
    // standard output (main.cpp), not by whatever errno a later call left.
    if (std::string why; !fileio::standardOutputOk(&why)) return fail(kPrefix, why);
    if (!written) return fail(kPrefix, options.trace + ": " + error);
    return kExitOk;
  }
  std::error_code ec;
  if (!options.force && std::filesystem::exists(options.output, ec))
    return fail(kPrefix, options.output + ": exists (use --force to overwrite)");
  // Written to a temporary file beside the target and renamed, so a failed export leaves no
  // half file (fileio's rules: no links followed, only a regular file replaced).
  fileio::OutputFile out;
  if (!out.create(options.output, options.force, &error, storage::outputFileMode())) return fail(kPrefix, error);
  if (!writePerfettoTrace(*reader, out.stream(), settings, &counts, &error)) {
    // A failed write (full disk) stops the export too: name the output's error, not the trace.
    if (std::string why; !out.stream() && !out.commit(&why)) return fail(kPrefix, why);
    return fail(kPrefix, options.trace + ": " + error);
  }
  if (!out.commit(&error)) return fail(kPrefix, error);
  std::cerr << "ringside export: " << counts.collectives << " collective calls, "
            << counts.transfers << " transfers, " << counts.flows << " send->receive arrows and "
            << counts.counter_points << " counter points (bins of "
            << counterBinLabel(counts.counter_bin_ns) << ") written to " << options.output << "\n";
  return kExitOk;
}

}  // namespace ringside::cli
