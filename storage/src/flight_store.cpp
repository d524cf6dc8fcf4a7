// storage/src/flight_store.cpp — a flight ring's snapshot into the trace (flight_store.h).
#include "flight_store.h"

#include <unistd.h>

#include <string>

#include "columns.h"
#include "sqlite_util.h"

namespace ringside::storage::detail {
namespace {

void bindText(sqlite3_stmt* st, int column, const std::string& text) {
  if (text.empty()) {
    sqlite3_bind_null(st, param(column));
  } else {
    sqlite3_bind_text(st, param(column), text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
}

void bindInt(sqlite3_stmt* st, int column, int64_t v) { bindNullable(st, param(column), v); }

bool step(sqlite3_stmt* st, sqlite3* db, std::string* error) {
  const bool ok = sqlite3_step(st) == SQLITE_DONE;
  if (!ok) *error = "cannot write the flight record: " + lastError(db);
  sqlite3_reset(st);
  return ok;
}

bool storeDumps(sqlite3* db, const flight::Snapshot& s, int32_t rank, std::string* error) {
  using T = FlightDumpTable;
  Stmt st = prepare(db, insertSql(T::kDef), error);
  if (!st) return false;
  FlightDumpRow end;
  end.reason = "end";
  end.calls_dropped = static_cast<int64_t>(s.calls_dropped);
  const bool stamped = !s.dumps.empty();
  for (const FlightDumpRow* d = stamped ? s.dumps.data() : &end;
       d != (stamped ? s.dumps.data() + s.dumps.size() : &end + 1); ++d) {
    bindInt(st.get(), T::rank, rank);
    bindInt(st.get(), T::dump, d->dump);
    bindText(st.get(), T::reason, d->reason);
    bindInt(st.get(), T::time_ns, d->time_ns);
    bindText(st.get(), T::detail, d->detail);
    bindInt(st.get(), T::pid, s.pid);
    bindInt(st.get(), T::calls_dropped, d->calls_dropped);
    if (!step(st.get(), db, error)) return false;
  }
  return true;
}

bool storeCalls(sqlite3* db, const flight::Snapshot& s, int32_t rank, std::string* error) {
  using T = FlightCallTable;
  Stmt st = prepare(db, insertSql(T::kDef), error);
  if (!st) return false;
  for (const FlightCallRow& c : s.calls) {
    bindInt(st.get(), T::rank, rank);
    bindInt(st.get(), T::dump, c.dump);
    bindText(st.get(), T::comm, c.comm);
    bindInt(st.get(), T::seq, c.seq);
    bindText(st.get(), T::op, c.op);
    bindText(st.get(), T::library, c.library);
    bindInt(st.get(), T::bytes, c.bytes);
    bindInt(st.get(), T::count, c.count);
    bindText(st.get(), T::dtype, c.dtype);
    bindInt(st.get(), T::root, c.root < 0 ? kNone : c.root);
    bindInt(st.get(), T::step, c.step);
    bindInt(st.get(), T::tid, c.tid);
    bindInt(st.get(), T::enter_ns, c.enter_ns);
    bindInt(st.get(), T::exit_ns, c.exit_ns);
    bindText(st.get(), T::state, c.state);
    if (!step(st.get(), db, error)) return false;
  }
  return true;
}

bool storeMessages(sqlite3* db, const flight::Snapshot& s, int32_t rank, std::string* error) {
  using T = FlightMessageTable;
  Stmt st = prepare(db, insertSql(T::kDef), error);
  if (!st) return false;
  for (const FlightMessageRow& m : s.messages) {
    bindInt(st.get(), T::rank, rank);
    bindInt(st.get(), T::dump, m.dump);
    bindText(st.get(), T::comm, m.comm);
    bindInt(st.get(), T::seq, m.seq);
    bindInt(st.get(), T::peer, m.peer < 0 ? kNone : m.peer);
    bindText(st.get(), T::direction, m.direction);
    bindInt(st.get(), T::bytes, m.bytes);
    bindInt(st.get(), T::posted_ns, m.posted_ns);
    bindInt(st.get(), T::done_ns, m.done_ns);
    if (!step(st.get(), db, error)) return false;
  }
  return true;
}

bool storeExit(sqlite3* db, const flight::Snapshot& s, int32_t rank, std::string* error) {
  RankExitRow e;
  if (!flight::exitRow(s, &e)) return true;
  using T = RankExitTable;
  Stmt st = prepare(db, insertSql(T::kDef), error);
  if (!st) return false;
  bindInt(st.get(), T::rank, rank);
  bindInt(st.get(), T::pid, e.pid);
  bindInt(st.get(), T::exit_status, e.exit_status);
  bindInt(st.get(), T::signal, e.signal != 0 ? e.signal : kNone);
  bindInt(st.get(), T::time_ns, e.time_ns);
  bindInt(st.get(), T::open_calls, e.open_calls);
  bindText(st.get(), T::source, e.source);
  return step(st.get(), db, error);
}

}  // namespace

bool storeFlight(sqlite3* db, const flight::Snapshot& s, int32_t rank, std::string* error) {
  return storeDumps(db, s, rank, error) && storeCalls(db, s, rank, error) &&
         storeMessages(db, s, rank, error) && storeExit(db, s, rank, error);
}

std::string findRing(const std::string& folder, int64_t pid, int64_t start_unix_ns) {
  const std::string path = flight::ringPath(folder, pid, start_unix_ns);
  return ::access(path.c_str(), F_OK) == 0 ? path : std::string();
}

}  // namespace ringside::storage::detail
