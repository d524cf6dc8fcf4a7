#include "report/diff_cmd.h"

#include <iostream>
#include <vector>

#include "report/report.h"
#include "report/report_format.h"
#include "ringside/analyzer/analysis.h"
#include "ringside/analyzer/topology.h"

namespace ringside::cli {
namespace {

constexpr std::string_view kPrefix = "ringside diff: ";

std::vector<OptionSpec> diffSpecs(DiffCliOptions* o) {
  return {
      {"format", 0, "FMT", "text (default), md, html, json or csv",
       storeChoice(&o->format, {"text", "md", "html", "json", "csv"})},
      {"output", 'o', "FILE", "write here instead of standard output", storeText(&o->output)},
      {"topology", 0, "FILE", "machines and links (docs/topology.md), used for both traces",
       storeText(&o->topology)},
      {"label-a", 0, "NAME", "name of the first trace in verdicts (default: its library)",
       storeText(&o->label_a)},
      {"label-b", 0, "NAME", "name of the second trace in verdicts (default: its library)",
       storeText(&o->label_b)},
  };
}

}  // namespace

ParseStatus parseDiffArgs(std::span<const std::string> args, DiffCliOptions* out,
                          std::string* error) {
  *out = DiffCliOptions{};
  std::vector<OptionSpec> specs = diffSpecs(out);
  std::vector<std::string> positionals;
  ParseStatus status = parseOptions(args, specs, Positionals::kInterleaved, &positionals, error);
  if (status != ParseStatus::kOk) return status;
  if (positionals.size() != 2) {
    *error = "wants two traces (usage: ringside diff [options] A B), got " +
             std::to_string(positionals.size());
    return ParseStatus::kError;
  }
  out->trace_a = positionals[0];
  out->trace_b = positionals[1];
  return ParseStatus::kOk;
}

std::string diffHelp() {
  DiffCliOptions scratch;
  return "Usage: ringside diff [options] A B\n"
         "\n"
         "Compares two traces (say ring vs tree, or before vs after a change): collectives are\n"
         "aligned by op, power-of-two size bucket and order, never by wall time. Verdicts come\n"
         "first (\"ringside-tree 1.8x faster than ringside-ring at 4 KiB-8 KiB (allreduce)\"),\n"
         "then per op and size the counts and medians of A and B with the speed-up median A /\n"
         "median B (> 1: B is faster), phase totals and links. json follows docs/report-json.md\n"
         "(schema ringside-diff/1); csv is the per op and size table.\n"
         "Exit status: 0 written, 1 a trace (or topology) could not be used, 2 bad usage.\n"
         "\n" +
         formatOptionsHelp(diffSpecs(&scratch));
}

int runDiff(std::span<const std::string> args) {
  DiffCliOptions options;
  if (int code = parseVerbArgs(args, parseDiffArgs, diffHelp, kPrefix, &options); code >= 0)
    return code;
  if (int code = refuseOutputsThatAreInputs(kPrefix, {options.output},
                                            {options.trace_a, options.trace_b, options.topology});
      code >= 0)
    return code;
  std::string error;
  analyzer::Topology topology;
  analyzer::AnalysisOptions analysis_options;
  analysis_options.phase_rows.first = 0;  // the diff prints phase totals only
  analyzer::Analysis a, b;
  if (!loadTopologyOption(options.topology, &topology, &analysis_options, &error) ||
      !analyzeTrace(options.trace_a, analysis_options, &a, &error) ||
      !analyzeTrace(options.trace_b, analysis_options, &b, &error))
    return fail(kPrefix, error);
  // A label left empty or looking like a file name is replaced by the trace's library.
  analyzer::Diff d;
  analyzer::diff(a, b, options.label_a.empty() ? options.trace_a : options.label_a,
                 options.label_b.empty() ? options.trace_b : options.label_b, &d);
  std::string text;
  if (options.format == "text") text = formatDiffText(d);
  else if (options.format == "md") text = formatDiffMarkdown(d);
  else if (options.format == "json") text = formatDiffJson(d);
  else if (options.format == "html") text = formatDiffHtml(d);
  else text = formatDiffCsv(d);
  if (!writeOutput(options.output, text, &error)) return fail(kPrefix, error);
  return kExitOk;
}

}  // namespace ringside::cli
