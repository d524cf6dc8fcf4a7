#include "simulate/simulate.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <vector>

#include "bench/bench_options.h"
#include "options.h"
#include "report/report.h"
#include "ringside/analyzer/analysis.h"
#include "ringside/analyzer/simulate.h"
#include "ringside/analyzer/topology.h"
#include "ringside/collective/names.h"
#include "ringside/format/json.h"
#include "ringside/format/units.h"

namespace ringside::cli {
namespace {

constexpr std::string_view kPrefix = "ringside simulate: ";

struct SimulateOptions {
  std::string trace;
  std::string sizes;
  std::string ranks = "8:16384";
  int ranks_per_host = 8;
  std::string intra_bw = "100GB/s", inter_bw = "100Gbit";
  std::string intra_latency = "2us", inter_latency = "10us";
  std::string fabric = "switch";
  int nics = 1;
  std::string format = "text";
};

std::function<bool(std::string_view, std::string*)> storeQuantity(std::string* target, bool bandwidth) {
  return [target, bandwidth](std::string_view v, std::string* error) {
    double x = 0;
    const bool ok = bandwidth ? format::parseRate(v, &x)
                              : format::parseDuration(v, format::BareDuration::kRequired, &x);
    if (!ok || (bandwidth && !(x > 0))) {
      *error = "'" + std::string(v) + "' is not a " +
               (bandwidth ? "bandwidth (e.g. 100Gbit, 25GB/s)" : "latency (e.g. 10us, 1ms)");
      return false;
    }
    *target = v;
    return true;
  };
}

// A rate in bytes/s or a latency in ns, already checked by storeQuantity (or a default).
double quantity(const std::string& text, bool bandwidth) {
  double x = 0;
  if (bandwidth) format::parseRate(text, &x);
  else format::parseDuration(text, format::BareDuration::kRequired, &x);
  return x;
}

std::vector<OptionSpec> simulateSpecs(SimulateOptions* o) {
  return {
      {"sizes", 's', "LIST", "a step's all-reduces, bytes a rank (25M,25M,12M); default: the trace's",
       storeText(&o->sizes)},
      {"ranks", 0, "LIST", "rank counts: a list or a range A:B (doubling), default 8:16384", storeText(&o->ranks)},
      {"ranks-per-host", 0, "N", "ranks on each host (default 8)", storeInteger(&o->ranks_per_host, 1, 1 << 20)},
      {"intra-bw", 0, "RATE", "between two ranks of a host, each way (default 100GB/s)", storeQuantity(&o->intra_bw, true)},
      {"inter-bw", 0, "RATE", "a NIC (switch) or a host pair's cable (mesh), each way (default 100Gbit)",
       storeQuantity(&o->inter_bw, true)},
      {"intra-latency", 0, "TIME", "one way inside a host (default 2us)", storeQuantity(&o->intra_latency, false)},
      {"inter-latency", 0, "TIME", "one way between hosts (default 10us)", storeQuantity(&o->inter_latency, false)},
      {"fabric", 0, "KIND", "switch (default: NICs to a switch) or mesh (host pairs cabled)",
       storeChoice(&o->fabric, {"switch", "mesh"})},
      {"nics", 0, "N", "switch: NICs per host (default 1)", storeInteger(&o->nics, 1, 64)},
      {"format", 0, "FMT", "text (default) or json", storeChoice(&o->format, {"text", "json"})},
  };
}

ParseStatus parseSimulateArgs(std::span<const std::string> args, SimulateOptions* out, std::string* error) {
  *out = SimulateOptions{};
  std::vector<OptionSpec> specs = simulateSpecs(out);
  std::vector<std::string> positionals;
  ParseStatus status = parseOptions(args, specs, Positionals::kInterleaved, &positionals, error);
  if (status != ParseStatus::kOk) return status;
  if (positionals.size() > 1) {
    *error = "one trace at most (usage: ringside simulate [options] [TRACE])";
    return ParseStatus::kError;
  }
  if (!positionals.empty()) out->trace = positionals[0];
  if (out->trace.empty() && out->sizes.empty()) {
    *error = "no trace and no --sizes: give the recorded job's trace, or the step's all-reduce sizes";
    return ParseStatus::kError;
  }
  return ParseStatus::kOk;
}

bool parseRankCounts(const std::string& text, std::vector<int>* out, std::string* error) {
  out->clear();
  const size_t colon = text.find(':');
  int64_t a = 0, b = 0;
  if (colon != std::string::npos) {
    if (!parseInteger(std::string_view(text).substr(0, colon), 2, 1 << 20, &a) ||
        !parseInteger(std::string_view(text).substr(colon + 1), 2, 1 << 20, &b) || b < a) {
      *error = "--ranks: '" + text + "' is not a range A:B of rank counts, 2 <= A <= B";
      return false;
    }
    for (int64_t n = a; n <= b; n *= 2) out->push_back(static_cast<int>(n));
    return true;
  }
  size_t p = 0;
  while (p <= text.size()) {
    const size_t q = std::min(text.find(',', p), text.size());
    if (!parseInteger(std::string_view(text).substr(p, q - p), 2, 1 << 20, &a)) {
      *error = "--ranks: '" + text.substr(p, q - p) + "' is not a rank count (2 or more)";
      return false;
    }
    out->push_back(static_cast<int>(a));
    p = q + 1;
  }
  return true;
}

// One step's all-reduces from the trace: the step whose all-reduce bytes are the median of the
// steps'; without steps, every all-reduce of the trace as one step (said in *basis).
std::vector<int64_t> stepSizes(const analyzer::Analysis& a, std::string* basis, int* recorded_ranks) {
  std::map<int64_t, std::vector<int64_t>> by_step;
  for (const analyzer::CollectiveInstance& c : a.collectives) {
    if (!collective::is(c.op, collective::Op::kAllreduce) || c.ranks < 2 || c.bytes <= 0) continue;
    by_step[c.step].push_back(c.bytes);
    *recorded_ranks = std::max(*recorded_ranks, c.ranks);
  }
  by_step.erase(-1);
  if (by_step.empty()) {
    std::vector<int64_t> all;
    for (const analyzer::CollectiveInstance& c : a.collectives) {
      if (collective::is(c.op, collective::Op::kAllreduce) && c.ranks >= 2 && c.bytes > 0) all.push_back(c.bytes);
    }
    *basis = "no training steps in the trace: all " + std::to_string(all.size()) + " all-reduces as one step";
    return all;
  }
  std::vector<std::pair<int64_t, int64_t>> totals;  // (bytes, step)
  for (const auto& [step, sizes] : by_step) {
    int64_t sum = 0;
    for (int64_t b : sizes) sum += b;
    totals.push_back({sum, step});
  }
  std::sort(totals.begin(), totals.end());
  const int64_t median_step = totals[totals.size() / 2].second;
  const auto& sizes = by_step[median_step];
  *basis = "step " + std::to_string(median_step) + " (the median of " + std::to_string(by_step.size()) +
           " steps by all-reduce bytes): " + std::to_string(sizes.size()) + " all-reduces";
  return sizes;
}

std::string render(const SimulateOptions& o, const std::string& basis, const std::vector<int64_t>& sizes,
                   const std::vector<analyzer::SimulatedScale>& scales) {
  int64_t total = 0;
  for (int64_t b : sizes) total += b;
  std::string out = "ringside simulate: " + std::to_string(sizes.size()) + " all-reduces a step, " +
                    format::bytes(total) + " per rank (" + basis + ")\n";
  out += "cluster: " + std::to_string(o.ranks_per_host) + " ranks a host; inside " + o.intra_bw + ", " +
         o.intra_latency + "; between hosts " + (o.fabric == "mesh" ? "a cable per host pair of " : "a switch, ") +
         (o.fabric == "mesh" ? "" : std::to_string(o.nics) + " NIC(s) of ") + o.inter_bw + ", " + o.inter_latency + "\n\n";
  out += "   ranks  hosts   ring / step     tree / step  multipath / step  best       busbw (largest)\n";
  std::vector<std::string> notes;
  for (const analyzer::SimulatedScale& s : scales) {
    char line[256];
    double best = 1e300;
    std::string best_name;
    std::string cells[3], busbw;
    for (size_t i = 0; i < s.algorithms.size() && i < 3; ++i) {
      const auto& x = s.algorithms[i];
      cells[i] = x.step_ns >= 0 ? format::duration(static_cast<int64_t>(x.step_ns)) : "-";
      if (x.step_ns >= 0 && x.step_ns < best * 0.95) {
        best = x.step_ns;
        best_name = x.algorithm;
      }
      if (!x.note.empty() && std::find(notes.begin(), notes.end(), x.algorithm + ": " + x.note) == notes.end() &&
          notes.size() < 8) {
        notes.push_back(x.algorithm + ": " + x.note);
      }
    }
    for (const auto& x : s.algorithms) {
      if (x.algorithm == best_name && x.busbw_gbps > 0) busbw = format::rate(x.busbw_gbps * 1e9);
    }
    std::snprintf(line, sizeof line, "  %6d  %5d  %12s  %14s  %16s  %-9s  %s\n", s.ranks, s.hosts, cells[0].c_str(),
                  cells[1].c_str(), cells[2].c_str(), best_name.c_str(), busbw.c_str());
    out += line;
  }
  if (!notes.empty()) out += "\n";
  for (const std::string& n : notes) out += "  " + n + "\n";
  return out;
}

std::string jsonNumber(double v) {
  if (!(v >= 0)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string renderJson(const std::string& basis, const std::vector<int64_t>& sizes,
                       const std::vector<analyzer::SimulatedScale>& scales) {
  std::string out = "{\"schema\": \"ringside-simulate/1\", \"basis\": " + format::jsonString(basis) +
                    ", \"step_bytes\": [";
  for (size_t i = 0; i < sizes.size(); ++i) out += (i ? ", " : "") + std::to_string(sizes[i]);
  out += "], \"scales\": [";
  for (size_t i = 0; i < scales.size(); ++i) {
    const analyzer::SimulatedScale& s = scales[i];
    out += std::string(i ? ", " : "") + "\n  {\"ranks\": " + std::to_string(s.ranks) + ", \"hosts\": " +
           std::to_string(s.hosts) + ", \"algorithms\": [";
    for (size_t k = 0; k < s.algorithms.size(); ++k) {
      const auto& x = s.algorithms[k];
      out += std::string(k ? ", " : "") + "{\"algorithm\": " + format::jsonString(x.algorithm) +
             ", \"step_ns\": " + jsonNumber(x.step_ns) + ", \"busbw_gbps\": " + jsonNumber(x.busbw_gbps) +
             ", \"note\": " + format::jsonString(x.note) + "}";
    }
    out += "]}";
  }
  return out + "\n]}\n";
}

}  // namespace

std::string simulateHelp() {
  SimulateOptions scratch;
  return "Usage: ringside simulate [options] [TRACE]\n"
         "\n"
         "Predicts one training step's all-reduces under ringside's ring, tree and multipath on a\n"
         "cluster you describe, from 8 to 16,384 ranks: the step of TRACE whose all-reduce bytes are\n"
         "the median (every all-reduce as one step when the trace has no steps), or --sizes. The\n"
         "models are the what-if's (docs/whatif.md): alpha-beta per algorithm, the tree's edges\n"
         "sharing the busiest host's NIC, multipath's rings planned over the cluster's links (on a\n"
         "switch they share each host's NICs). Exit status: 0 printed, 1 the trace could not be\n"
         "used, 2 bad usage.\n"
         "\n" +
         formatOptionsHelp(simulateSpecs(&scratch)) +
         "\n"
         "Examples:\n"
         "  ringside simulate job.sqlite --ranks-per-host 8 --inter-bw 200Gbit\n"
         "  ringside simulate --sizes 25M,25M,12M --ranks 8:4096 --fabric switch --nics 4\n"
         "  ringside simulate --sizes 4M --ranks 4 --ranks-per-host 1 --fabric mesh \\\n"
         "      --inter-bw 200Mbit --inter-latency 25us\n";
}

int runSimulate(std::span<const std::string> args) {
  SimulateOptions o;
  if (int code = parseVerbArgs(args, parseSimulateArgs, simulateHelp, kPrefix, &o); code >= 0) return code;
  std::string error;
  std::vector<int> counts;
  if (!parseRankCounts(o.ranks, &counts, &error)) return fail(kPrefix, error, kExitUsage);
  analyzer::ClusterSpec c;
  c.ranks_per_host = o.ranks_per_host;
  c.intra_gbps = quantity(o.intra_bw, true) / 1e9;
  c.inter_gbps = quantity(o.inter_bw, true) / 1e9;
  c.intra_latency_s = quantity(o.intra_latency, false) / 1e9;
  c.inter_latency_s = quantity(o.inter_latency, false) / 1e9;
  c.mesh = o.fabric == "mesh";
  c.nics = o.nics;
  std::vector<int64_t> sizes;
  std::string basis;
  if (!o.sizes.empty()) {
    std::vector<uint64_t> list;
    if (!parseSizeList(o.sizes, &list, &error, Repeats::kKeep)) return fail(kPrefix, "--sizes: " + error, kExitUsage);
    for (uint64_t b : list) sizes.push_back(static_cast<int64_t>(b));
    basis = "--sizes";
  } else {
    analyzer::AnalysisOptions options;
    options.phase_rows.first = 0;  // the sizes of the all-reduces only: no phase rows
    analyzer::Analysis a;
    if (!analyzeTrace(o.trace, options, &a, &error)) return fail(kPrefix, error);
    int recorded = 0;
    sizes = stepSizes(a, &basis, &recorded);
    if (sizes.empty()) return fail(kPrefix, o.trace + ": no all-reduces of 2+ ranks to simulate");
    basis = o.trace + ", " + basis + ", recorded on " + std::to_string(recorded) + " ranks";
  }
  const auto scales = analyzer::simulateCluster(c, sizes, counts);
  std::cout << (o.format == "json" ? renderJson(basis, sizes, scales) : render(o, basis, sizes, scales));
  return kExitOk;
}

}  // namespace ringside::cli
