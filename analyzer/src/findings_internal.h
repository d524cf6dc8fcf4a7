// analyzer/findings_internal.h — how the rules' code emits findings (findings.h's table).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ringside/analyzer/analysis.h"

namespace ringside::analyzer::detail {

// A finding of the rule `rule` (an id of findingRules()), with the rule's severity.
Finding makeFinding(std::string_view rule, std::string message, std::string evidence);

// A finding `rule` for what the ranks dropped: "<total> <what>", with "<n> on rank <r>, ..." as
// evidence; none when nothing was dropped (dropped-events, dropped-gpu-records).
void droppedFinding(const std::map<int, int64_t>& dropped, std::string_view rule,
                    std::string_view what, std::vector<Finding>* findings);

}  // namespace ringside::analyzer::detail
