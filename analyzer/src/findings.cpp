// analyzer/findings.cpp — the table of finding rules (findings.h). The rules' code lives with
// what it judges: analysis_findings.cpp, gpu_analysis.cpp.
#include "ringside/analyzer/findings.h"

#include "findings_internal.h"
#include "trace_meta.h"

namespace ringside::analyzer {

const std::vector<FindingRule>& findingRules() {
  static const std::vector<FindingRule> rules = {
      {"cut-off", "problem",
       "meta lists cut-off ranks (killed or crashed: their trace ends early)"},
      {"missing-ranks", "problem", "meta lists missing ranks (no trace file)"},
      {"interposition-inactive", "problem",
       "a rank's interposition meta starts with \"inactive\" (nothing recorded there)"},
      {"late-ranks", "problem",
       "one rank entered last in >= 50% (and >= 1.5/ranks) of the steps (of the calls without "
       "steps), and the others' waiting for it is >= 5% of their time"},
      {"slow-link", "problem",
       "a link's bytes/busy is < 1/3 of the median of its phase group (>= 3 links)"},
      {"low-busbw", "warning",
       "an (op, library)'s median expected/measured time is < 0.5 (the alpha-beta model)"},
      {"idle-links", "warning", "idle links exist while the busiest link is >= 50% loaded"},
      {"dropped-events", "warning", "some rank dropped events (its event buffers were full)"},
      {"failed-collectives", "warning", "some collective recorded status != 0 on some rank"},
      {"low-overlap", "warning",
       "NCCL kernels take >= 5% of a GPU's span and overlap compute < 25% of their time"},
      {"cupti-busy", "warning", "another tool held CUPTI on some rank: no GPU activity there"},
      {"dropped-gpu-records", "warning", "some rank dropped GPU activity records (buffers full)"},
      {"clock-uncertainty", "warning",
       "a rank would be a late rank, but its median skew is within the clock uncertainty between "
       "hosts (2+ clock domains)"},
  };
  return rules;
}

const FindingRule* findingRule(std::string_view id) {
  for (const FindingRule& rule : findingRules()) {
    if (rule.id == id) return &rule;
  }
  return nullptr;
}

namespace detail {

Finding makeFinding(std::string_view rule, std::string message, std::string evidence) {
  // Every caller names a rule of the table; an unknown one would be a bug, shown loudly.
  const FindingRule* known = findingRule(rule);
  Finding f;
  f.severity = known ? known->severity : "problem";
  f.rule = rule;
  f.message = std::move(message);
  f.evidence = std::move(evidence);
  return f;
}

void droppedFinding(const std::map<int, int64_t>& dropped, std::string_view rule,
                    std::string_view what, std::vector<Finding>* findings) {
  if (dropped.empty()) return;
  findings->push_back(makeFinding(rule, droppedTotal(dropped, what), droppedPerRank(dropped)));
}

}  // namespace detail
}  // namespace ringside::analyzer
