#include "report/report.h"

#include <sys/stat.h>

#include <filesystem>
#include <iostream>
#include <system_error>
#include <vector>

#include "common/output_folder.h"
#include "common/recording_note.h"
#include "report/report_format.h"
#include "report/report_input.h"
#include "ringside/storage/privacy.h"
#include "ringside/analyzer/analysis.h"
#include "ringside/analyzer/topology.h"
#include "ringside/fileio/output_file.h"

namespace ringside::cli {
namespace {

constexpr std::string_view kPrefix = "ringside report: ";

std::vector<OptionSpec> reportSpecs(ReportCliOptions* o) {
  return {
      {"format", 0, "FMT", "text (default), md, html, json or csv",
       storeChoice(&o->format, {"text", "md", "html", "json", "csv"})},
      {"output", 'o', "FILE", "write here instead of standard output (csv: a folder for all tables)",
       storeText(&o->output)},
      {"topology", 0, "FILE", "machines and links (docs/topology.md): idle links, model",
       storeText(&o->topology)},
      {"bins", 0, "N", "time bins of the link-utilization heat map (default 100)",
       [o](std::string_view v, std::string* e) {
         int64_t n = 0;
         if (!parseInteger(v, 1, 10000, &n)) {
           *e = "wants a whole number from 1 to 10000";
           return false;
         }
         o->bins = static_cast<int>(n);
         return true;
       }},
      {"csv-table", 0, "NAME",
       "csv: autopsy (default when the job hung or desynchronized), op_buckets (default "
       "otherwise), collectives, links, idle_links, phases, ranks, stragglers, "
       "gpus, channels, hosts, host_traffic, clocks, steps, rank_steps",
       [o](std::string_view v, std::string* e) {
         for (const std::string& id : csvTableIds()) {
           if (id == v) {
             o->csv_table = v;
             return true;
           }
         }
         *e = "unknown table '" + std::string(v) + "'";
         return false;
       }},
  };
}

}  // namespace

bool writeOutput(const std::string& path, const std::string& text, std::string* error) {
  if (path.empty() || path == "-") return fileio::writeStandardOutput(text, error);
  // Reports replace an earlier report of the same name (no --force), but only a regular file.
  return fileio::writeOutputFile(path, text, /*overwrite=*/true, error, /*sync=*/true,
                                 storage::outputFileMode());
}

bool loadTopologyOption(const std::string& path, analyzer::Topology* topology,
                        analyzer::AnalysisOptions* options, std::string* error) {
  if (path.empty()) return true;
  if (!analyzer::loadTopology(path, topology, error)) return false;
  options->topology = topology;
  options->topology_path = path;  // the what-if's multipath basis names the file
  return true;
}

analyzer::PhaseRowsKept reportPhaseRows(const std::string& format, size_t json_collective_cap) {
  analyzer::PhaseRowsKept keep;
  keep.first = 0;
  if (format == "json") {
    keep.first = json_collective_cap == 0
                     ? -1
                     : static_cast<int64_t>(json_collective_cap * kJsonPhasesPerCollective);
  } else if (format == "html") {
    keep.ranks_below = kMaxDrawnRanks;
  }
  return keep;
}

bool analyzeTrace(const std::string& trace, const analyzer::AnalysisOptions& options,
                  analyzer::Analysis* out, std::string* error, std::string* recording_note) {
  // transfer_data is checked as analyze() reads it (every row, to the end): a damaged file
  // fails there with one line, before anything is printed.
  std::unique_ptr<storage::TraceReader> reader =
      openReportTrace(trace, error, /*transfers_checked_by_reading=*/true);
  if (reader == nullptr) return false;
  if (recording_note != nullptr) *recording_note = recordingNote(reader->meta());
  std::string why;
  if (!analyzer::analyze(*reader, options, out, &why)) {
    *error = why.starts_with(trace + ": ") ? why : trace + ": " + why;
    return false;
  }
  return true;
}

ParseStatus parseReportArgs(std::span<const std::string> args, ReportCliOptions* out,
                            std::string* error) {
  *out = ReportCliOptions{};
  std::vector<OptionSpec> specs = reportSpecs(out);
  ParseStatus status =
      parseOptionsOneInput(args, specs, "no trace (usage: ringside report [options] TRACE)",
                           "one trace at a time (to compare two: ringside diff A B)", &out->trace,
                           error);
  if (status != ParseStatus::kOk) return status;
  if (!out->csv_table.empty() && out->format != "csv") {
    *error = "--csv-table needs --format csv";
    return ParseStatus::kError;
  }
  return ParseStatus::kOk;
}

std::string reportHelp() {
  ReportCliOptions scratch;
  return "Usage: ringside report [options] TRACE\n"
         "\n"
         "Where the collective-communication time of a recorded job went: findings first, then\n"
         "the training steps (docs/steps.md), collectives per op and size, stragglers, ranks,\n"
         "links (busiest, bottleneck, idle) and phases. --format html writes one self-contained page with charts; json follows\n"
         "docs/report-json.md (schema ringside-report/1) for CI checks.\n"
         "Exit status: 0 written, 1 the trace (or topology) could not be used, 2 bad usage.\n"
         "\n" +
         formatOptionsHelp(reportSpecs(&scratch));
}

int runReport(std::span<const std::string> args) {
  ReportCliOptions options;
  if (int code = parseVerbArgs(args, parseReportArgs, reportHelp, kPrefix, &options); code >= 0)
    return code;
  // The report never replaces the trace or topology it is made from (-f or not).
  if (int code = refuseOutputsThatAreInputs(kPrefix, {options.output},
                                            {options.trace, options.topology});
      code >= 0)
    return code;
  std::string error;
  analyzer::Topology topology;
  analyzer::AnalysisOptions analysis_options;
  analysis_options.bins = options.bins;
  analysis_options.trace_path = options.trace;
  analyzer::Analysis analysis;
  ReportContext ctx;
  // Only the phase rows this format prints; the others are folded as they are made.
  analysis_options.phase_rows = reportPhaseRows(options.format, ctx.json_collective_cap);
  if (!loadTopologyOption(options.topology, &topology, &analysis_options, &error) ||
      !analyzeTrace(options.trace, analysis_options, &analysis, &error, &ctx.recording_note))
    return fail(kPrefix, error);
  ctx.trace = options.trace;

  if (options.format == "csv" && options.csv_table.empty() && !options.output.empty() &&
      options.output != "-") {
    // -o DIR: every table, one file each.
    // Made as every output folder is: 0700 unless RINGSIDE_SHARE (the tables hold host names),
    // not the umask's mode; an existing folder is used as it is.
    std::error_code ec;
    makeRankFolder(options.output, &ec);
    // The folder itself must not be a link someone planted: the tables would land elsewhere.
    struct stat sb {};
    if (::lstat(options.output.c_str(), &sb) == 0 && S_ISLNK(sb.st_mode))
      return fail(kPrefix, options.output + ": a symbolic link, not a folder; not followed");
    if (ec || !std::filesystem::is_directory(options.output, ec))
      return fail(kPrefix, options.output + ": not a folder that can be created");
    for (const std::string& id : csvTableIds()) {
      ReportTable table;
      buildReportTable(analysis, id, Units::kRaw, 0, &table);
      std::string path = (std::filesystem::path(options.output) / (id + ".csv")).string();
      if (int code = refuseOutputsThatAreInputs(kPrefix, {path}, {options.trace, options.topology});
          code >= 0)
        return code;
      if (!writeOutput(path, renderTableCsv(table), &error)) return fail(kPrefix, error);
    }
    return kExitOk;
  }

  std::string text;
  if (options.format == "text") text = formatReportText(analysis, ctx);
  else if (options.format == "md") text = formatReportMarkdown(analysis, ctx);
  else if (options.format == "json") text = formatReportJson(analysis, ctx);
  else if (options.format == "html") text = formatReportHtml(analysis, ctx);
  else {
    ReportTable table;
    // Without --csv-table: the autopsy when the job hung or desynchronized, else op_buckets.
    const char* first = analysis.autopsy.empty() ? "op_buckets" : "autopsy";
    buildReportTable(analysis, options.csv_table.empty() ? first : options.csv_table,
                     Units::kRaw, 0, &table);
    text = renderTableCsv(table);
  }
  if (!writeOutput(options.output, text, &error)) return fail(kPrefix, error);
  return kExitOk;
}

}  // namespace ringside::cli
