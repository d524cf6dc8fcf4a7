// cli/report/report.h — `ringside report TRACE`: the analysis of one trace as text
// (default), Markdown, HTML, JSON or CSV. Thin client of analyzer::analyze();
// the formats are in report_format.h.
#pragma once

#include <span>
#include <string>

#include "options.h"
#include "ringside/analyzer/analysis.h"

namespace ringside::cli {

struct ReportCliOptions {
  std::string format = "text";  // text, md, html, json, csv
  std::string output;           // "" or "-": stdout; csv without --csv-table: a folder
  std::string topology;
  int bins = 100;
  std::string csv_table;        // one of csvTableIds(); "" = op_buckets (or all with -o DIR)
  std::string trace;
};

ParseStatus parseReportArgs(std::span<const std::string> args, ReportCliOptions* out,
                            std::string* error);
std::string reportHelp();
int runReport(std::span<const std::string> args);

// Shared with `diff`: opens `trace` (report_input.h) and analyses it. False + one
// line naming the file in *error.
// `recording_note`, if given, gets one line when the recording was bounded (a window, a detail
// level that left messages out or added them up; docs/recording.md), else "".
bool analyzeTrace(const std::string& trace, const analyzer::AnalysisOptions& options,
                  analyzer::Analysis* out, std::string* error,
                  std::string* recording_note = nullptr);

// Shared with `diff`: loads the --topology file `path`, if any, into *topology and points
// options->topology at it. False + one line on error.
bool loadTopologyOption(const std::string& path, analyzer::Topology* topology,
                        analyzer::AnalysisOptions* options, std::string* error);

// Shared with `diff`: writes `text` to `path` ("" or "-": stdout). False + one line on error.
bool writeOutput(const std::string& path, const std::string& text, std::string* error);

}  // namespace ringside::cli
