// perf_trace_floor: the least CPU that SQLite itself needs on this machine to merge a folder of
// rank files into one trace and to read that trace back, so the merge's and the report's figures
// can be set against what no code above SQLite could beat (docs/bench.md, "The floor of one
// SQLite trace").
//
// Merge floor. The cheapest way SQLite puts rows of one file into another is the raw record copy
// of `INSERT INTO main.t SELECT * FROM other.t` (its "transfer optimization": records and index
// entries are copied as stored, never decoded). It applies only when nothing is rewritten, so
// the program first makes, untimed, a copy of each input's transfer_data whose ids and ranks are
// already what the merged trace holds (what rank files numbered in job-wide id blocks would
// give). Timed: that raw copy of every input into one file with the merged trace's settings and
// the readers' (rank, start_ns) index, then the time index the merge also builds. Nothing else a
// merge must do (the other tables, strings, ids, the clock fit, the steps) is counted.
//
// Read floor, on a merged trace: `PRAGMA quick_check` (every reader's check) and one statement
// stepping every transfer row with the 14 columns the analyzer reads (sqlite3_column_int64 each),
// once in rowid order and once per rank lane in (rank, start_ns) order as the report reads them.
//
//   perf_trace_floor --inputs DIR [--trace MERGED] [--work DIR] [--cores N]
// DIR holds rank-*.sqlite files (e.g. from trace_gen); --work (default: a folder under /tmp)
// receives the prepared copies and the floor's output, and is removed at the end.
#include <sqlite3.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Clock {
  double wall = 0, cpu = 0;
  static Clock now() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    Clock c;
    c.wall = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
                 .count();
    c.cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
            static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    return c;
  }
};

struct Span {
  double wall = 0, cpu = 0;
};

Span since(const Clock& start) {
  Clock end = Clock::now();
  return {end.wall - start.wall, end.cpu - start.cpu};
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "perf_trace_floor: %s\n", what.c_str());
  std::exit(1);
}

void exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string why = err != nullptr ? err : "unknown error";
    sqlite3_free(err);
    die(sql.substr(0, 60) + "...: " + why);
  }
}

sqlite3* open(const std::string& path, int flags) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK)
    die("cannot open " + path + ": " + (db != nullptr ? sqlite3_errmsg(db) : "out of memory"));
  return db;
}

int64_t queryInt(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) die(sqlite3_errmsg(db));
  int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
  sqlite3_finalize(st);
  return v;
}

std::string queryText(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) die(sqlite3_errmsg(db));
  std::string v;
  if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != nullptr)
    v = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  return v;
}

// The rank files of DIR, by rank.
std::vector<std::pair<int, std::string>> rankFiles(const std::string& dir) {
  std::vector<std::pair<int, std::string>> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name.rfind("rank-", 0) != 0 || e.path().extension() != ".sqlite") continue;
    files.emplace_back(std::atoi(name.c_str() + 5), e.path().string());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) die(dir + " holds no rank-*.sqlite files");
  return files;
}

constexpr const char* kColumns =
    "id, rank, collective_id, src_rank, dst_rank, bytes, start_ns, end_ns, side_sid, phase_sid, "
    "step, chunk, slot, channel";

// Untimed: each input's transfers as the merged trace holds them (ids in one job-wide sequence,
// ranks filled), in a file of their own with the table's own schema and the (rank, start_ns)
// index (a rank file would have to keep it up while recording).
std::vector<std::string> prepare(const std::vector<std::pair<int, std::string>>& inputs,
                                 const std::string& work, const std::string& table_sql) {
  std::vector<std::string> out;
  int64_t next_id = 1;
  for (const auto& [rank, path] : inputs) {
    std::string prepared = work + "/in-" + std::to_string(rank) + ".sqlite";
    sqlite3* db = open(prepared, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI);
    exec(db, "PRAGMA page_size=16384; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;");
    exec(db, table_sql);
    exec(db, "ATTACH 'file:" + path + "?mode=ro' AS i");
    int64_t min_id = queryInt(db, "SELECT coalesce(min(id), 0) FROM i.transfer_data");
    exec(db, "INSERT INTO transfer_data SELECT id - " + std::to_string(min_id) + " + " +
                 std::to_string(next_id) + ", coalesce(rank, " + std::to_string(rank) +
                 "), collective_id, src_rank, dst_rank, bytes, start_ns, end_ns, side_sid, "
                 "phase_sid, step, chunk, slot, channel FROM i.transfer_data ORDER BY id");
    next_id += queryInt(db, "SELECT coalesce(max(id) - min(id) + 1, 0) FROM i.transfer_data");
    // The index the merged trace keeps up, so that its entries are copied raw too (the raw copy
    // needs every index of the target in the source).
    exec(db, "CREATE INDEX transfer_by_rank_time ON transfer_data(rank, start_ns)");
    sqlite3_close(db);
    out.push_back(prepared);
  }
  return out;
}

// True when SQLite copies `INSERT INTO main.transfer_data SELECT * FROM i.transfer_data` as
// stored records: its program reads whole records (RowData) and decodes no column.
bool rawCopy(sqlite3* db) {
  sqlite3_stmt* st = nullptr;
  const char* sql = "EXPLAIN INSERT INTO main.transfer_data SELECT * FROM i.transfer_data";
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) die(sqlite3_errmsg(db));
  bool row_data = false, column = false;
  while (sqlite3_step(st) == SQLITE_ROW) {
    std::string op = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
    row_data = row_data || op == "RowData";
    column = column || op == "Column";
  }
  sqlite3_finalize(st);
  return row_data && !column;
}

void mergeFloor(const std::vector<std::string>& prepared, const std::string& work,
                const std::string& table_sql, int cores) {
  const std::string out = work + "/floor.sqlite";
  sqlite3* db = open(out, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI);
  // The merge's own settings (storage/src/merge_output.cpp).
  exec(db,
       "PRAGMA main.page_size=16384; PRAGMA main.locking_mode=EXCLUSIVE; "
       "PRAGMA main.synchronous=OFF; PRAGMA main.journal_mode=MEMORY; "
       "PRAGMA main.cache_size=-65536; PRAGMA threads=0;");
  exec(db, table_sql);
  exec(db, "CREATE INDEX transfer_by_rank_time ON transfer_data(rank, start_ns)");
  bool raw = true;
  Clock start = Clock::now();
  for (const auto& path : prepared) {
    exec(db, "ATTACH 'file:" + path + "?mode=ro' AS i");
    if (path == prepared.front()) raw = rawCopy(db);
    exec(db, "BEGIN; INSERT INTO main.transfer_data SELECT * FROM i.transfer_data; COMMIT;");
    exec(db, "DETACH i");
  }
  Span copy = since(start);
  Clock index_start = Clock::now();
  exec(db, "CREATE INDEX transfer_by_time ON transfer_data(start_ns)");
  Span index = since(index_start);
  const double rows = static_cast<double>(queryInt(db, "SELECT count(*) FROM transfer_data"));
  sqlite3_close(db);
  std::printf("merge floor: %.0f transfer rows from %zu files, raw record copy: %s\n", rows,
              prepared.size(), raw ? "yes" : "NO (the figures below are not the floor)");
  std::printf("  copy + (rank, start_ns) index kept up  %7.2f s wall %7.2f CPU-s  %.2f M rows/CPU-s\n",
              copy.wall, copy.cpu, rows / std::max(1e-9, copy.cpu) / 1e6);
  std::printf("  time index (start_ns), sorted after    %7.2f s wall %7.2f CPU-s\n", index.wall,
              index.cpu);
  const double both = copy.cpu + index.cpu;
  std::printf("  both: %.2f CPU-s on the one thread that writes the file: at most %.2f M rows/s "
              "on any number of cores (%d here)\n",
              both, rows / std::max(1e-9, both) / 1e6, cores);
}

// Steps `sql` (14 integer columns) to the end, reading every column as the reader does.
Span stepAll(sqlite3* db, const std::string& sql, int64_t* rows, int64_t* checksum) {
  Clock start = Clock::now();
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) die(sqlite3_errmsg(db));
  int64_t n = 0, sum = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    for (int c = 0; c < 14; ++c) sum += sqlite3_column_int64(st, c);
    ++n;
  }
  sqlite3_finalize(st);
  *rows = n;
  *checksum = sum;
  return since(start);
}

void readFloor(const std::string& trace, int cores) {
  sqlite3* db = open(trace, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
  Clock check_start = Clock::now();
  std::string verdict = queryText(db, "PRAGMA quick_check");
  Span check = since(check_start);
  int64_t rows = 0, sum_rowid = 0, sum_lanes = 0;
  Span by_rowid =
      stepAll(db, std::string("SELECT ") + kColumns + " FROM transfer_data", &rows, &sum_rowid);
  // The report's order: lane by lane through the (rank, start_ns) index.
  Span by_lane = stepAll(db,
                         std::string("SELECT ") + kColumns +
                             " FROM transfer_data INDEXED BY transfer_by_rank_time "
                             "WHERE rank >= 0 ORDER BY rank, start_ns",
                         &rows, &sum_lanes);
  sqlite3_close(db);
  std::printf("read floor: %lld transfer rows of %s (checksums %s)\n",
              static_cast<long long>(rows), trace.c_str(),
              sum_rowid == sum_lanes ? "equal" : "DIFFER: the lanes miss rows");
  std::printf("  PRAGMA quick_check (%s)               %7.2f s wall %7.2f CPU-s\n",
              verdict.c_str(), check.wall, check.cpu);
  std::printf("  14 columns, rowid order                %7.2f s wall %7.2f CPU-s\n", by_rowid.wall,
              by_rowid.cpu);
  std::printf("  14 columns, (rank, start_ns) lanes     %7.2f s wall %7.2f CPU-s\n", by_lane.wall,
              by_lane.cpu);
  const double sqlite_cpu = check.cpu + by_lane.cpu;
  std::printf("  SQLite alone, check + lanes: %.2f CPU-s, at best %.2f s on %d cores "
              "(before any analysis)\n",
              sqlite_cpu, std::max(by_lane.cpu, sqlite_cpu / std::max(1, cores)), cores);
}

}  // namespace

int main(int argc, char** argv) {
  std::string inputs, trace, work;
  int cores = 2;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--inputs") inputs = value();
    else if (a == "--trace") trace = value();
    else if (a == "--work") work = value();
    else if (a == "--cores") cores = std::max(1, std::atoi(value().c_str()));
    else if (a == "--help" || a == "-h") {
      std::printf("usage: perf_trace_floor [--inputs DIR] [--trace MERGED] [--work DIR] "
                  "[--cores N]\n  the least SQLite CPU to merge DIR's rank files into one trace, "
                  "and to read MERGED's transfers back\n");
      return 0;
    } else die("unknown argument " + a + " (see --help)");
  }
  if (inputs.empty() && trace.empty()) die("give --inputs DIR and/or --trace MERGED (see --help)");
  if (!inputs.empty()) {
    bool own_work = work.empty();
    if (own_work) work = "/tmp/perf_trace_floor." + std::to_string(getpid());
    std::error_code ec;
    fs::create_directories(work, ec);
    if (ec) die("cannot create " + work + ": " + ec.message());
    auto files = rankFiles(inputs);
    sqlite3* first = open(files.front().second, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
    std::string table_sql =
        queryText(first, "SELECT sql FROM sqlite_master WHERE name = 'transfer_data'");
    sqlite3_close(first);
    if (table_sql.empty()) die(files.front().second + " has no transfer_data table");
    std::fprintf(stderr, "perf_trace_floor: preparing %zu inputs in %s (untimed)...\n",
                 files.size(), work.c_str());
    auto prepared = prepare(files, work, table_sql);
    mergeFloor(prepared, work, table_sql, cores);
    for (const auto& p : prepared) fs::remove(p, ec);
    fs::remove(work + "/floor.sqlite", ec);
    if (own_work) fs::remove(work, ec);
  }
  if (!trace.empty()) readFloor(trace, cores);
  return 0;
}
