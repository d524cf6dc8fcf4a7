// ringside/analyzer/findings.h — the rules behind Analysis::findings, declared once: each
// rule's id (Finding::rule), its severity (Finding::severity) and what makes it fire, for
// reports, the viewer and docs/analyzer.md to show beside the findings.
#pragma once

#include <string_view>
#include <vector>

namespace ringside::analyzer {

struct FindingRule {
  std::string_view id;           // Finding::rule: "straggler", "slow-link", ...
  std::string_view severity;     // Finding::severity: "problem", "warning" or "info"
  std::string_view description;  // one line: when the rule fires
  // The "try" line (Finding::action) its findings get unless the rule writes one of its own
  // from the trace (algorithm, bucketing); empty when there is nothing to try.
  std::string_view action;
};

// Every rule analyze() applies, problems first. analyze() orders the findings by severity,
// then by Finding::cost_ns, largest first.
const std::vector<FindingRule>& findingRules();

// The rule with this id; nullptr when there is none.
const FindingRule* findingRule(std::string_view id);

}  // namespace ringside::analyzer
