#include "ringside/bench/report.h"

#include "ringside/bench/model.h"
#include "ringside/format/json.h"
#include "ringside/format/units.h"

namespace ringside::bench {
namespace {

std::string hostList(const std::vector<std::string>& hosts) {
  std::string text = std::to_string(hosts.size()) + (hosts.size() == 1 ? " host" : " hosts");
  if (hosts.empty() || hosts.size() > 3) return text;
  text += " (";
  for (size_t i = 0; i < hosts.size(); ++i) text += (i > 0 ? ", " : "") + hosts[i];
  return text + ")";
}

// Nine significant digits ("%.9g"); null when not finite.
std::string jsonNumber(double value) { return format::jsonNumber(value, 9); }

}  // namespace

std::string formatBenchHeader(const BenchRun& run) {
  std::string out = "ringside bench: " + std::to_string(run.ranks) +
                    (run.ranks == 1 ? " rank on " : " ranks on ") + hostList(run.hosts) + ", " +
                    collector::dtypeName(run.dtype) + " " + collector::reduceOpName(run.op) +
                    ", " + std::to_string(run.iters) + " iters (+" + std::to_string(run.warmup) +
                    " warm-up)" + (run.check ? "" : ", not checked") + "\n";
  if (run.have_alpha_beta) {
    double gbps = run.beta_s_per_byte > 0 ? 1e-9 / run.beta_s_per_byte : 0;
    out += format::printf(
        "alpha %.1f us, beta %.3g ns/B (%.3g GB/s): ping-pong between ranks 0 and 1\n",
        run.alpha_s * 1e6, run.beta_s_per_byte * 1e9, gbps);
  } else {
    out += "alpha, beta: not measured (one rank)\n";
  }
  if (run.ranks > 1 && run.hosts.size() == 1) {
    out +=
        "note: all ranks share one host: ring and tree move the same bytes through the same "
        "CPUs;\n      differences reflect scheduling, not links\n";
  }
  out +=
      "model(us): alpha-beta estimate, lower-bound style: it ignores reduction cost "
      "(docs/bench.md)\n";
  if (run.floor_rows) {
    out +=
        "floor rows: not all-reduces (no result, no check): floor-tcp moves and reduces the "
        "ring's\n      data over its TCP links with no step waiting; floor does the same copies "
        "in memory\n";
  }
  return out;
}

std::string formatBenchColumns() {
  return format::printf("%10s %10s  %-11s %10s %12s %12s %10s %6s\n", "size", "count", "algo",
                        "time(us)", "algbw(GB/s)", "busbw(GB/s)", "model(us)", "wrong");
}

std::string formatBenchRow(const BenchRow& row, int ranks) {
  std::string head =
      format::printf("%10s %10llu  %-11s", format::bytesWholeOrTenths(row.bytes).c_str(),
                     static_cast<unsigned long long>(row.count), benchAlgoName(row.algo));
  if (!row.error.empty()) return head + " " + row.error + "\n";
  std::string model =
      row.model_seconds >= 0 ? format::printf("%.1f", row.model_seconds * 1e6) : "-";
  std::string wrong = row.wrong >= 0 ? std::to_string(row.wrong) : "-";
  return head + format::printf(" %10.1f %12.3f %12.3f %10s %6s\n", row.seconds * 1e6,
                               algBandwidth(row.bytes, row.seconds) * 1e-9,
                               busBandwidth(row.bytes, row.seconds, ranks) * 1e-9, model.c_str(),
                               wrong.c_str());
}

std::string jsonString(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      out += format::printf("\\u%04x", u);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string benchJson(const BenchRun& run) {
  std::string out = "{\n  \"schema\": " + jsonString(kBenchJsonSchema) + ",\n";
  out += "  \"ranks\": " + std::to_string(run.ranks) + ",\n";
  out += "  \"hosts\": [";
  for (size_t i = 0; i < run.hosts.size(); ++i) {
    out += (i > 0 ? ", " : "") + jsonString(run.hosts[i]);
  }
  out += "],\n";
  out += "  \"dtype\": " + jsonString(collector::dtypeName(run.dtype)) + ",\n";
  out += "  \"op\": " + jsonString(collector::reduceOpName(run.op)) + ",\n";
  out += "  \"iters\": " + std::to_string(run.iters) + ",\n";
  out += "  \"warmup\": " + std::to_string(run.warmup) + ",\n";
  out += std::string("  \"check\": ") + (run.check ? "true" : "false") + ",\n";
  out += "  \"alpha_s\": " + (run.have_alpha_beta ? jsonNumber(run.alpha_s) : "null") + ",\n";
  out += "  \"beta_s_per_byte\": " +
         (run.have_alpha_beta ? jsonNumber(run.beta_s_per_byte) : "null") + ",\n";
  out += "  \"bus_factor\": " + jsonNumber(allreduceBusFactor(run.ranks)) + ",\n";
  out += "  \"rows\": [";
  for (size_t i = 0; i < run.rows.size(); ++i) {
    const BenchRow& row = run.rows[i];
    out += i > 0 ? ",\n    {" : "\n    {";
    out += "\"bytes\": " + std::to_string(row.bytes);
    out += ", \"count\": " + std::to_string(row.count);
    out += ", \"algo\": " + jsonString(benchAlgoName(row.algo));
    if (!row.error.empty()) {
      out += ", \"error\": " + jsonString(row.error) + "}";
      continue;
    }
    out += ", \"time_us\": " + jsonNumber(row.seconds * 1e6);
    out += ", \"algbw_gbps\": " + jsonNumber(algBandwidth(row.bytes, row.seconds) * 1e-9);
    out += ", \"busbw_gbps\": " + jsonNumber(busBandwidth(row.bytes, row.seconds, run.ranks) * 1e-9);
    out += ", \"model_us\": " +
           (row.model_seconds >= 0 ? jsonNumber(row.model_seconds * 1e6) : std::string("null"));
    out += ", \"wrong\": " + (row.wrong >= 0 ? std::to_string(row.wrong) : std::string("null"));
    out += ", \"median_us\": " + jsonNumber(row.median_seconds * 1e6);
    out += ", \"min_us\": " + jsonNumber(row.min_seconds * 1e6);
    out += ", \"cpu_us\": " + jsonNumber(row.cpu_seconds * 1e6);
    out += "}";
  }
  out += run.rows.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

}  // namespace ringside::bench
