// analyzer/analysis.cpp — analyze(): collectives matched across ranks, links,
// phases, idle links, the alpha-beta model and findings (docs/analyzer.md).
//
// A short driver over the stages of analysis_state.h, each in its own analysis_*.cpp. Two
// streaming passes: collectives (ordered by rank, start_ns) build one accumulator per
// instance; transfers (ordered by start_ns) feed per-link accumulators and, for the instances
// whose phases we report, a short-lived buffer of that instance's sends that is folded into
// PhaseStats as soon as the stream has passed the instance's end. No pass keeps all transfers.
#include "ringside/analyzer/analysis.h"

#include <algorithm>

#include "analysis_state.h"
#include "ringside/storage/stage_timings.h"
#include "ringside/storage/trace_reader.h"

namespace ringside::analyzer {
namespace detail {

AnalysisState::AnalysisState(storage::TraceReader& trace, const AnalysisOptions& opts,
                             Analysis* result, std::string* error_out)
    : reader(trace),
      options(opts),
      out(result),
      error(error_out),
      bins(std::max(1, opts.bins)),
      window_start_ns(opts.window_start_ns),
      window_end_ns(opts.window_end_ns),
      infos(trace.ranks()),
      meta(readTraceMeta(trace.meta(), infos)) {}

bool glooRingAllreduce(const CollectiveInstance& c) {
  return collective::is(c.library, collective::Library::kGloo) && collective::is(c.op, collective::Op::kAllreduce) &&
         (c.algorithm.empty() || collective::is(c.algorithm, collective::Algorithm::kRing));
}

collective::Algorithm allreduceAlgorithm(const CollectiveInstance& c) {
  using collective::Algorithm;
  using collective::Library;
  if (!collective::is(c.op, collective::Op::kAllreduce)) return Algorithm::kDefault;
  if (glooRingAllreduce(c)) return Algorithm::kRing;
  Library library = Library::kUnknown;
  if (collective::parse(c.library, &library)) {
    for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kMultipath}) {
      if (library == collective::referenceLibrary(a)) return a;
    }
  }
  std::string name = c.algorithm;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  Algorithm a = Algorithm::kDefault;
  return collective::parse(name, &a) ? a : Algorithm::kDefault;
}

std::string linkName(int src, int dst) { return std::to_string(src) + "->" + std::to_string(dst); }

}  // namespace detail

bool analyze(storage::TraceReader& reader, const AnalysisOptions& options, Analysis* out,
             std::string* error) {
  *out = Analysis{};
  detail::AnalysisState s(reader, options, out, error);
  storage::StageTimer calls_timer("analyze: calls");
  detail::readMeta(s);
  detail::findHosts(s);
  if (!detail::readInstances(s)) return false;
  s.progress(0.2);
  if (!detail::findTimeRange(s)) return false;
  detail::groupInstances(s);
  calls_timer.stop();
  storage::StageTimer transfers_timer("analyze: transfers");
  if (!detail::readTransfers(s)) return false;
  detail::addChannelTraffic(s);
  transfers_timer.stop();
  storage::StageTimer rest_timer("analyze: the rest");
  s.progress(0.95);
  if (!detail::readGpu(s)) return false;
  detail::timeInstances(s);
  detail::buildLinks(s);
  detail::findIdleLinks(s);
  detail::fitModel(s);
  detail::buildRanks(s);
  detail::buildOpBuckets(s);
  detail::buildHosts(s);
  if (!detail::findSteps(s)) return false;
  detail::assignBlame(s);
  if (!detail::readCpu(s)) return false;
  detail::addFindings(s);
  detail::warnSkippedRows(s);
  if (out->collectives.empty()) out->warnings.push_back("no collectives in the window");
  if (out->transfers == 0) {
    out->warnings.push_back("no transfers recorded: link statistics and idle links are unknown");
  }
  s.progress(1.0);
  return true;
}

}  // namespace ringside::analyzer
