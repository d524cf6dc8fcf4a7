// analyzer/diff.cpp — A/B comparison of two analyses, aligned by order and
// size (never by wall time: the two runs happened at different times).
#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

#include "analysis_internal.h"
#include "ringside/analyzer/analysis.h"

namespace ringside::analyzer {
namespace {

int64_t median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

std::string sizeText(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + " " + units[u];
}

// A label that looks like a file name is replaced by the libraries the trace used.
std::string displayLabel(const std::string& label, const std::map<std::string, int64_t>& libs) {
  bool file = label.empty() || label.find('/') != std::string::npos ||
              label.find(".sqlite") != std::string::npos || label.find(".db") != std::string::npos;
  if (!file || libs.empty()) return label;
  std::string best;
  int64_t most = -1;
  for (const auto& [lib, n] : libs) {
    if (n > most) {
      most = n;
      best = lib;
    }
  }
  return best;
}

}  // namespace

void diff(const Analysis& a, const Analysis& b, const std::string& label_a, const std::string& label_b,
          Diff* out) {
  *out = Diff{};
  // (op, bucket) -> instances in order of first_start.
  using Key = std::pair<std::string, int64_t>;
  auto group = [](const Analysis& x) {
    std::vector<const CollectiveInstance*> order;
    for (const CollectiveInstance& c : x.collectives) order.push_back(&c);
    std::stable_sort(order.begin(), order.end(), [](const auto* p, const auto* q) {
      return p->first_start_ns < q->first_start_ns;
    });
    std::map<Key, std::vector<const CollectiveInstance*>> g;
    for (const auto* c : order) g[{c->op, sizeBucketLo(c->bytes)}].push_back(c);
    return g;
  };
  auto ga = group(a), gb = group(b);
  std::map<Key, bool> keys;
  for (const auto& [k, v] : ga) keys[k] = true;
  for (const auto& [k, v] : gb) keys[k] = true;
  std::map<std::string, int64_t> libs_a_all, libs_b_all;
  for (const auto& c : a.collectives) ++libs_a_all[c.library];
  for (const auto& c : b.collectives) ++libs_b_all[c.library];
  out->label_a = displayLabel(label_a, libs_a_all);
  out->label_b = displayLabel(label_b, libs_b_all);
  for (const auto& [key, unused] : keys) {
    const auto& va = ga[key];
    const auto& vb = gb[key];
    size_t paired = std::min(va.size(), vb.size());
    out->aligned += static_cast<int64_t>(paired);
    out->unmatched_a += static_cast<int64_t>(va.size() - paired);
    out->unmatched_b += static_cast<int64_t>(vb.size() - paired);
    DiffRow row;
    row.op = key.first;
    row.size_lo = key.second;
    row.size_hi = key.second == 0 ? 1 : 2 * key.second;
    row.count_a = static_cast<int64_t>(va.size());
    row.count_b = static_cast<int64_t>(vb.size());
    std::vector<int64_t> da, db;
    std::map<std::string, int64_t> la, lb;
    for (const auto* c : va) {
      da.push_back(c->duration_ns);
      ++la[c->library];
    }
    for (const auto* c : vb) {
      db.push_back(c->duration_ns);
      ++lb[c->library];
    }
    row.median_a_ns = median(da);
    row.median_b_ns = median(db);
    if (!va.empty() && !vb.empty() && row.median_b_ns > 0) {
      row.speedup = static_cast<double>(row.median_a_ns) / static_cast<double>(row.median_b_ns);
      std::string name_a = displayLabel(label_a, la), name_b = displayLabel(label_b, lb);
      if (name_a == name_b) {
        name_a += " (A)";
        name_b += " (B)";
      }
      std::string range = sizeText(row.size_lo) + "-" + sizeText(row.size_hi);
      char buf[256];
      if (row.speedup >= 1.05) {
        std::snprintf(buf, sizeof buf, "%s %.1fx faster than %s at %s (%s)", name_b.c_str(),
                      row.speedup, name_a.c_str(), range.c_str(), row.op.c_str());
      } else if (row.speedup <= 1 / 1.05 && row.median_a_ns > 0) {
        std::snprintf(buf, sizeof buf, "%s %.1fx faster than %s at %s (%s)", name_a.c_str(),
                      1 / row.speedup, name_b.c_str(), range.c_str(), row.op.c_str());
      } else {
        std::snprintf(buf, sizeof buf, "%s and %s on par at %s (%s)", name_a.c_str(),
                      name_b.c_str(), range.c_str(), row.op.c_str());
      }
      row.verdict = buf;
      out->verdicts.push_back(row.verdict);
    }
    out->rows.push_back(std::move(row));
  }
  std::map<std::string, std::pair<int64_t, int64_t>> phases;
  for (const PhaseStats& p : a.phases) phases[p.phase].first += p.end_ns - p.start_ns;
  for (const PhaseStats& p : b.phases) phases[p.phase].second += p.end_ns - p.start_ns;
  for (const auto& [name, t] : phases) out->phases.push_back({name, t.first, t.second});
  std::map<std::pair<int, int>, DiffLinkRow> links;
  for (const LinkStats& l : a.links) {
    DiffLinkRow& r = links[{l.src, l.dst}];
    r.src = l.src;
    r.dst = l.dst;
    r.bytes_a = l.bytes;
    r.busy_a_ns = l.busy_ns;
  }
  for (const LinkStats& l : b.links) {
    DiffLinkRow& r = links[{l.src, l.dst}];
    r.src = l.src;
    r.dst = l.dst;
    r.bytes_b = l.bytes;
    r.busy_b_ns = l.busy_ns;
  }
  for (const auto& [k, r] : links) out->links.push_back(r);
}

}  // namespace ringside::analyzer
