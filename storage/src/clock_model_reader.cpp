// storage/src/clock_model_reader.cpp — reading a merged trace's clock model (the writer is
// clock_store.cpp, the mapping ClockMap in clock_model.cpp).
#include <algorithm>
#include <string>
#include <unordered_map>
#include <utility>

#include "trace_reader_impl.h"

namespace ringside::storage::reader {

// The model tables are small (a row per domain, rank and piece).
ClockModel readClockModel(sqlite3* db, int version,
                          const std::function<std::map<std::string, std::string>()>& meta) {
  constexpr int64_t kMaxModelRows = 1 << 20;
  try {
    using D = detail::ClockDomainTable;
    using R = detail::ClockRankTable;
    using S = detail::ClockSegmentTable;
    ClockModel m;
    const std::string limit = " LIMIT " + std::to_string(kMaxModelRows);
    {
      Stmt st = detail::prepare(db, selectSql(D::kDef, version, " ORDER BY id" + limit),
                                nullptr);
      if (!st) return {};
      while (sqlite3_step(st.get()) == SQLITE_ROW) {
        sqlite3_stmt* s = st.get();
        ClockDomain d;
        d.id = toInt32(sqlite3_column_int64(s, D::id));
        d.host = columnText(s, D::host, kMaxNameBytes);
        d.boot_id = columnText(s, D::boot_id, kMaxNameBytes);
        d.method = columnText(s, D::method, kMaxNameBytes);
        d.offset_ns = sqlite3_column_int64(s, D::offset_ns);
        d.drift_ppm = sqlite3_column_double(s, D::drift_ppm);
        d.uncertainty_ns = sqlite3_column_int64(s, D::uncertainty_ns);
        d.bounds = sqlite3_column_int64(s, D::bounds);
        d.violated = sqlite3_column_int64(s, D::violated);
        d.anchors = sqlite3_column_int64(s, D::anchors);
        d.segments = toInt32(sqlite3_column_int64(s, D::segments));
        // NULL (a version-6 model, or the root): no tree; a negative value is no bound either.
        d.parent = toInt32(std::max<int64_t>(-1, detail::columnNullable(s, D::parent)));
        d.parent_uncertainty_ns =
            std::max<int64_t>(-1, detail::columnNullable(s, D::parent_uncertainty_ns));
        m.domains.push_back(std::move(d));
      }
    }
    if (m.domains.empty()) return {};
    {
      Stmt st = detail::prepare(db, selectSql(R::kDef, version, " ORDER BY rank" + limit),
                                nullptr);
      if (!st) return {};
      while (sqlite3_step(st.get()) == SQLITE_ROW) {
        const int32_t rank = toInt32(sqlite3_column_int64(st.get(), R::rank));
        const int32_t domain = toInt32(sqlite3_column_int64(st.get(), R::domain));
        m.rank_domain.emplace_back(rank, domain);
      }
    }
    {
      std::unordered_map<int32_t, size_t> index;
      for (size_t i = 0; i < m.domains.size(); ++i) index.emplace(m.domains[i].id, i);
      for (const auto& [rank, domain] : m.rank_domain) {
        auto it = index.find(domain);
        if (it != index.end()) m.domains[it->second].ranks.push_back(rank);
      }
    }
    {
      Stmt st = detail::prepare(
          db, selectSql(S::kDef, version, " ORDER BY domain, lo_ns" + limit), nullptr);
      if (!st) return {};
      while (sqlite3_step(st.get()) == SQLITE_ROW) {
        sqlite3_stmt* s = st.get();
        ClockSegment g;
        g.domain = toInt32(sqlite3_column_int64(s, S::domain));
        g.lo_ns = sqlite3_column_int64(s, S::lo_ns);
        g.hi_ns = sqlite3_column_int64(s, S::hi_ns);
        g.ref_ns = sqlite3_column_int64(s, S::ref_ns);
        g.offset_ns = sqlite3_column_int64(s, S::offset_ns);
        g.rate = sqlite3_column_double(s, S::rate);
        // A rate beyond 1 % is no clock (a damaged file): drop the piece.
        if (!(g.rate > -0.01 && g.rate < 0.01)) continue;
        m.segments.push_back(g);
      }
    }
    const auto meta_map = meta();
    auto metaInt = [&](const char* key) -> int64_t {
      auto it = meta_map.find(key);
      if (it == meta_map.end()) return 0;
      try {
        return std::stoll(it->second);
      } catch (...) {
        return 0;
      }
    };
    auto mit = meta_map.find("clock_method");
    m.method = mit != meta_map.end() ? mit->second : "evidence";
    m.bounds = metaInt("clock_bounds");
    m.violated = metaInt("clock_bounds_violated");
    m.messages_checked = metaInt("clock_messages_checked");
    m.messages_before_sent = metaInt("clock_messages_before_sent");
    return m;
  } catch (...) {
    return ClockModel{};
  }
}

}  // namespace ringside::storage::reader
