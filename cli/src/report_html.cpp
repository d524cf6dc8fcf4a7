#include "report_format.h"

namespace ringside::cli {

std::string formatReportHtml(const analyzer::Analysis& a, const ReportContext& ctx) {
  return "<!doctype html><html><body><pre>" + formatReportText(a, ctx) + "</pre></body></html>\n";
}

}  // namespace ringside::cli
