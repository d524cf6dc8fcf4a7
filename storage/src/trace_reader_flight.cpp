// storage/src/trace_reader_flight.cpp — the reader's queries of the flight recorder's tables and
// rank_exit (schema v5; older files visit nothing).
#include "trace_reader_impl.h"

namespace ringside::storage::reader {

bool SqliteTraceReader::forEachFlightDump(const std::function<bool(const FlightDumpRow&)>& fn,
                                          std::string* error) {
  if (version_ < 5) return true;
  using T = detail::FlightDumpTable;
  return visit(selectSql(T::kDef, version_, " ORDER BY rank, dump"), "flight dumps",
               [&](sqlite3_stmt* s) {
                 FlightDumpRow r;
                 r.rank = toInt32(detail::columnNullable(s, T::rank));
                 r.dump = sqlite3_column_int64(s, T::dump);
                 r.reason = columnText(s, T::reason, kMaxNameBytes);
                 r.time_ns = align(r.rank, detail::columnNullable(s, T::time_ns));
                 r.detail = columnText(s, T::detail);
                 r.pid = detail::columnNullable(s, T::pid);
                 r.calls_dropped = sqlite3_column_int64(s, T::calls_dropped);
                 return fn(r);
               },
               error);
}

bool SqliteTraceReader::forEachFlightCall(const std::function<bool(const FlightCallRow&)>& fn,
                                          std::string* error) {
  if (version_ < 5) return true;
  using T = detail::FlightCallTable;
  return visit(selectSql(T::kDef, version_, " ORDER BY rank, dump, comm, seq"), "flight calls",
               [&](sqlite3_stmt* s) {
                 FlightCallRow r;
                 r.rank = toInt32(detail::columnNullable(s, T::rank));
                 r.dump = sqlite3_column_int64(s, T::dump);
                 r.comm = columnText(s, T::comm, kMaxNameBytes);
                 r.seq = sqlite3_column_int64(s, T::seq);
                 r.op = columnText(s, T::op, kMaxNameBytes);
                 r.library = columnText(s, T::library, kMaxNameBytes);
                 r.bytes = detail::columnNullable(s, T::bytes);
                 r.count = detail::columnNullable(s, T::count);
                 r.dtype = columnText(s, T::dtype, kMaxNameBytes);
                 r.root = toInt32(detail::columnNullable(s, T::root));
                 r.step = detail::columnNullable(s, T::step);
                 r.tid = toInt32(sqlite3_column_int64(s, T::tid));
                 r.enter_ns = align(r.rank, detail::columnNullable(s, T::enter_ns));
                 r.exit_ns = align(r.rank, detail::columnNullable(s, T::exit_ns));
                 r.state = columnText(s, T::state, kMaxNameBytes);
                 return fn(r);
               },
               error);
}

bool SqliteTraceReader::forEachFlightMessage(
    const std::function<bool(const FlightMessageRow&)>& fn, std::string* error) {
  if (version_ < 5) return true;
  using T = detail::FlightMessageTable;
  return visit(selectSql(T::kDef, version_, " ORDER BY rank, dump, posted_ns"), "flight messages",
               [&](sqlite3_stmt* s) {
                 FlightMessageRow r;
                 r.rank = toInt32(detail::columnNullable(s, T::rank));
                 r.dump = sqlite3_column_int64(s, T::dump);
                 r.comm = columnText(s, T::comm, kMaxNameBytes);
                 r.seq = detail::columnNullable(s, T::seq);
                 r.peer = toInt32(detail::columnNullable(s, T::peer));
                 r.direction = columnText(s, T::direction, kMaxNameBytes);
                 r.bytes = detail::columnNullable(s, T::bytes);
                 r.posted_ns = align(r.rank, detail::columnNullable(s, T::posted_ns));
                 r.done_ns = align(r.rank, detail::columnNullable(s, T::done_ns));
                 return fn(r);
               },
               error);
}

bool SqliteTraceReader::forEachRankExit(const std::function<bool(const RankExitRow&)>& fn,
                                        std::string* error) {
  if (version_ < 5) return true;
  using T = detail::RankExitTable;
  return visit(selectSql(T::kDef, version_, " ORDER BY rank, source"), "rank exits",
               [&](sqlite3_stmt* s) {
                 RankExitRow r;
                 r.rank = toInt32(detail::columnNullable(s, T::rank));
                 r.pid = detail::columnNullable(s, T::pid);
                 r.exit_status = toInt32(detail::columnNullable(s, T::exit_status));
                 const int64_t sig = detail::columnNullable(s, T::signal);
                 r.signal = sig == kNone ? 0 : toInt32(sig);
                 r.time_ns = align(r.rank, detail::columnNullable(s, T::time_ns));
                 r.open_calls = sqlite3_column_int64(s, T::open_calls);
                 r.source = columnText(s, T::source, kMaxNameBytes);
                 return fn(r);
               },
               error);
}

}  // namespace ringside::storage::reader
