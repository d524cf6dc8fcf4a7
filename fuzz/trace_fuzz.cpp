// ringside_trace_fuzz: a mutation fuzzer over the trace reader and the verbs that read
// traces (report in every single-file format, diff, export --perfetto).
//
//   ringside_trace_fuzz FILE...
//       runs the verbs on each FILE as it is (one forked child per file)
//   ringside_trace_fuzz --mutate SEED [--mutate SEED...] [--replay DIR_OR_FILE...]
//                       [--runs N] [--seed S] [--out DIR] [--timeout-s T] [--mem-mb M]
//                       [--max-s SECONDS]
//       replays the given files, then makes N mutants of the seeds (byte flips, truncation,
//       zeroed pages, SQL-level edits) and runs each in a forked child with RLIMIT_AS = M MiB
//       (default 1024) and T seconds of CPU time (default 5; a wall-clock alarm at 4 T). A
//       child killed by a signal is a crash, one killed by either limit a hang (confirmed by a
//       second run); their inputs are kept in DIR (default
//       ./fuzz-findings). --max-s stops making mutants after that many seconds. Exit status 1
//       when there was any crash or hang.
//
// Each child calls the command's own verb functions (cli::runCli) in-process, so what is
// fuzzed is exactly what `ringside report|diff|export` run; outputs go to a scratch folder.
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <new>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "verbs.h"

namespace fs = std::filesystem;

// A sanitizer error must read as a crash (a signal), not as an ordinary exit status that
// the verbs also use. These hooks are only looked up in a sanitizer build.
extern "C" const char* __asan_default_options();
extern "C" const char* __asan_default_options() { return "abort_on_error=1"; }
extern "C" const char* __ubsan_default_options();
extern "C" const char* __ubsan_default_options() {
  return "halt_on_error=1:abort_on_error=1:print_stacktrace=1";
}

namespace {

// Exit statuses of a child beyond the verbs' own (0, 1, 2).
constexpr int kChildException = 70;  // the verbs let an exception out (main() would catch it)
constexpr int kChildOutOfMemory = 71;  // std::bad_alloc under the memory limit

// ASan and TSan reserve terabytes of address space for their shadow memory: RLIMIT_AS cannot
// apply under them (every later mmap would fail), so their builds run without the memory limit.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kShadowMemory = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kShadowMemory = true;
#else
constexpr bool kShadowMemory = false;
#endif
#else
constexpr bool kShadowMemory = false;
#endif

int runVerb(const std::vector<std::string>& args) {
  return ringside::cli::runCli(args);
}

// The child's work: every verb that reads a trace, on one file.
int runTarget(const std::string& trace, const std::string& scratch) {
  try {
    for (const char* fmt : {"text", "md", "json", "html"}) {
      runVerb({"report", "--format", fmt, "-o", scratch + "/report." + fmt, trace});
    }
    runVerb({"report", "--format", "csv", "--csv-table", "op_buckets", "-o",
             scratch + "/report.csv", trace});
    runVerb({"diff", "-o", scratch + "/diff.txt", trace, trace});
    runVerb({"diff", "--format", "html", "-o", scratch + "/diff.html", trace, trace});
    runVerb({"export", "--perfetto", "--force", "-o", scratch + "/trace.json", trace});
  } catch (const std::bad_alloc&) {
    return kChildOutOfMemory;
  } catch (...) {
    return kChildException;
  }
  return 0;
}

enum class Outcome { kOk, kCrash, kHang, kException, kOutOfMemory };

struct Limits {
  int timeout_s = 5;
  long mem_mb = 1024;
};

Outcome runChild(const std::string& trace, const std::string& scratch, const Limits& limits,
                 int* signal_out) {
  std::cout.flush();
  std::cerr.flush();
  pid_t pid = fork();
  if (pid < 0) {
    std::perror("fork");
    std::exit(3);
  }
  if (pid == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
      dup2(devnull, STDOUT_FILENO);
      if (std::getenv("RINGSIDE_FUZZ_VERBOSE") == nullptr) dup2(devnull, STDERR_FILENO);
    }
    if (!kShadowMemory) {
      rlimit rl{};
      rl.rlim_cur = rl.rlim_max = static_cast<rlim_t>(limits.mem_mb) << 20;
      setrlimit(RLIMIT_AS, &rl);
    }
    // The time limit is CPU time (SIGXCPU), so that a machine busy with builds does not turn
    // slow runs into hangs; a wall-clock alarm at four times the limit catches inputs that
    // block without computing (a FIFO, a lock).
    rlimit cpu{};
    cpu.rlim_cur = static_cast<rlim_t>(limits.timeout_s);
    cpu.rlim_max = static_cast<rlim_t>(limits.timeout_s) + 1;
    setrlimit(RLIMIT_CPU, &cpu);
    alarm(static_cast<unsigned>(limits.timeout_s) * 4);
    _exit(runTarget(trace, scratch));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  *signal_out = 0;
  if (WIFSIGNALED(status)) {
    *signal_out = WTERMSIG(status);
    return WTERMSIG(status) == SIGALRM || WTERMSIG(status) == SIGXCPU ? Outcome::kHang
                                                                       : Outcome::kCrash;
  }
  int code = WEXITSTATUS(status);
  if (code == kChildException) return Outcome::kException;
  if (code == kChildOutOfMemory) return Outcome::kOutOfMemory;
  return Outcome::kOk;
}

// A hang is confirmed by a second run of the same input: on a machine shared with builds, a
// run can miss the wall-clock alarm for want of CPU (a 160 MB mutant took 0.6 s alone and over
// 5 s of wall time under load). *retried counts inputs that timed out once and then finished.
Outcome runConfirmed(const std::string& trace, const std::string& scratch, const Limits& limits,
                     int* signal_out, uint64_t* retried) {
  Outcome o = runChild(trace, scratch, limits, signal_out);
  if (o != Outcome::kHang) return o;
  Outcome again = runChild(trace, scratch, limits, signal_out);
  if (again != Outcome::kHang) ++*retried;
  return again;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream all;
  all << in.rdbuf();
  return all.str();
}

void writeFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

using Rng = std::mt19937_64;

uint64_t pick(Rng& rng, uint64_t n) {  // uniform in [0, n); n > 0
  return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng);
}

// --- byte-level mutations --------------------------------------------------------------

void flipBytes(std::string& data, Rng& rng) {
  if (data.empty()) return;
  uint64_t n = 1 + pick(rng, 8);
  for (uint64_t i = 0; i < n; ++i) {
    size_t at = pick(rng, data.size());
    switch (pick(rng, 3)) {
      case 0: data[at] = static_cast<char>(data[at] ^ (1 << pick(rng, 8))); break;
      case 1: data[at] = static_cast<char>(pick(rng, 256)); break;
      default: data[at] = static_cast<char>(pick(rng, 2) ? 0xff : 0x00); break;
    }
  }
}

void truncate(std::string& data, Rng& rng) {
  if (data.empty()) return;
  data.resize(pick(rng, 4) == 0 ? (pick(rng, data.size() / 4096 + 1) * 4096) % data.size()
                                : pick(rng, data.size()));
}

void zeroPage(std::string& data, Rng& rng) {
  if (data.size() < 4096) return;
  size_t page = pick(rng, data.size() / 4096);
  std::memset(data.data() + page * 4096, pick(rng, 4) == 0 ? 0xff : 0, 4096);
}

// --- SQL-level mutations (the file stays a valid database with hostile content) ------------

void exec(sqlite3* db, const std::string& sql) {
  sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);  // a refused edit is fine
}

std::vector<std::string> column(sqlite3* db, const std::string& sql, int col = 0) {
  std::vector<std::string> out;
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) return out;
  while (sqlite3_step(st) == SQLITE_ROW) {
    const unsigned char* t = sqlite3_column_text(st, col);
    out.emplace_back(t ? reinterpret_cast<const char*>(t) : "");
  }
  sqlite3_finalize(st);
  return out;
}

std::string quoteId(const std::string& id) {
  std::string q = "\"";
  for (char c : id) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// max_len: the longest string or blob to make (a value set in every row of a big table is
// bounded so that the table stays under ~32 MiB).
std::string extremeValue(Rng& rng, uint64_t max_len = 200000) {
  static const char* kValues[] = {
      "NULL", "0", "-1", "1", "9223372036854775807", "-9223372036854775808",
      "4294967295", "2147483648", "-2147483649", "1e308", "-1e308", "1e-308", "0.5",
      "''", "x''", "x'00ff00ff'", "'\x01\x1b[31m<script>&\"'''", "'../../etc/passwd'",
      "100000000", "65536", "1000000000000000"};
  uint64_t i = pick(rng, std::size(kValues) + 2);
  if (i < std::size(kValues)) return kValues[i];
  if (i == std::size(kValues)) return "zeroblob(" + std::to_string(1 + pick(rng, max_len)) + ")";
  return "printf('%.*c', " + std::to_string(1 + pick(rng, max_len)) + ", 'A')";
}

void mutateSql(const std::string& path, Rng& rng) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return;
  }
  sqlite3_busy_timeout(db, 100);
  exec(db, "PRAGMA journal_mode=DELETE");
  auto tables = column(db, "SELECT name FROM sqlite_master WHERE type='table' "
                            "AND name NOT LIKE 'sqlite_%'");
  uint64_t edits = 1 + pick(rng, 4);
  for (uint64_t e = 0; e < edits && !tables.empty(); ++e) {
    const std::string table = tables[pick(rng, tables.size())];
    const std::string qt = quoteId(table);
    auto cols = column(db, "SELECT name FROM pragma_table_info(" +
                               std::string("'") + table + "')");
    auto counts = column(db, "SELECT count(*) FROM " + qt);
    long rows = counts.empty() ? 0 : std::atol(counts[0].c_str());
    std::string row = "(SELECT rowid FROM " + qt + " LIMIT 1 OFFSET " +
                      std::to_string(rows > 0 ? pick(rng, static_cast<uint64_t>(rows)) : 0) + ")";
    switch (pick(rng, 8)) {
      case 0: case 1: case 2: case 3:  // one cell of one row
        if (!cols.empty()) {
          exec(db, "UPDATE " + qt + " SET " + quoteId(cols[pick(rng, cols.size())]) + " = " +
                       extremeValue(rng) + " WHERE rowid = " + row);
        }
        break;
      case 4:  // one column of every row
        if (!cols.empty()) {
          const uint64_t per_row =
              std::max<uint64_t>(16, (uint64_t{32} << 20) / static_cast<uint64_t>(std::max(1L, rows)));
          exec(db, "UPDATE " + qt + " SET " + quoteId(cols[pick(rng, cols.size())]) + " = " +
                       extremeValue(rng, std::min<uint64_t>(200000, per_row)));
        }
        break;
      case 5:  // rows deleted
        exec(db, "DELETE FROM " + qt + " WHERE rowid IN (SELECT rowid FROM " + qt +
                     " LIMIT " + std::to_string(1 + pick(rng, 16)) + " OFFSET " +
                     std::to_string(rows > 0 ? pick(rng, static_cast<uint64_t>(rows)) : 0) +
                     ")");
        break;
      case 6:  // rows duplicated (many times: a table that balloons), up to 64 MiB of file:
        // a 2 MB seed doubled sixteen times made a 1.4 GB mutant, which is a big trace (slow
        // for its size, not hung) and fills the scratch folder.
        for (uint64_t i = 0, n = 1 + pick(rng, 4); i < n; ++i) {
          auto size = column(db, "SELECT page_count * page_size FROM pragma_page_count(), "
                                 "pragma_page_size()");
          if (!size.empty() && std::atoll(size[0].c_str()) > (int64_t{64} << 20)) break;
          exec(db, "INSERT INTO " + qt + " SELECT * FROM " + qt);
        }
        break;
      default:  // a table gone, or its rows all gone
        exec(db, (pick(rng, 2) ? "DROP TABLE " : "DELETE FROM ") + qt);
        break;
    }
  }
  sqlite3_close(db);
}

std::string mutate(const std::string& seed, const std::string& path, Rng& rng) {
  std::string data = seed;
  // SQL edits first (they need a readable database), then byte damage on top sometimes.
  bool sql = pick(rng, 2) == 0;
  if (sql) {
    writeFile(path, data);
    mutateSql(path, rng);
    data = readFile(path);
  }
  if (!sql || pick(rng, 4) == 0) {
    for (uint64_t i = 0, n = 1 + pick(rng, 3); i < n; ++i) {
      switch (pick(rng, 4)) {
        case 0: case 1: flipBytes(data, rng); break;
        case 2: zeroPage(data, rng); break;
        default: truncate(data, rng); break;
      }
    }
  }
  writeFile(path, data);
  return data;
}

struct Counts {
  uint64_t execs = 0, crashes = 0, hangs = 0, exceptions = 0, oom = 0;
  uint64_t retried = 0;  // timed out once under load, finished when run again
};

void record(Outcome o, int sig, const std::string& input, const std::string& label,
            const std::string& out_dir, Counts* c) {
  ++c->execs;
  std::string kind;
  switch (o) {
    case Outcome::kOk: return;
    case Outcome::kCrash: ++c->crashes; kind = "crash-sig" + std::to_string(sig); break;
    case Outcome::kHang: ++c->hangs; kind = "hang"; break;
    case Outcome::kException: ++c->exceptions; kind = "exception"; break;
    case Outcome::kOutOfMemory: ++c->oom; kind = "oom"; break;
  }
  fs::create_directories(out_dir);
  std::string dest = out_dir + "/" + kind + "-" + label + ".sqlite";
  std::error_code ec;
  fs::copy_file(input, dest, fs::copy_options::overwrite_existing, ec);
  std::cerr << "ringside_trace_fuzz: " << kind << " on " << label << " (kept as " << dest
            << ")\n";
}

int usage() {
  std::cerr << "usage: ringside_trace_fuzz FILE...\n"
               "       ringside_trace_fuzz --mutate SEED [--mutate SEED...] [--replay PATH...]\n"
               "                           [--runs N] [--seed S] [--out DIR] [--timeout-s T]\n"
               "                           [--mem-mb M] [--max-s SECONDS]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> seeds, replay;
  uint64_t runs = 0, seed = 1;
  std::string out_dir = "fuzz-findings";
  Limits limits;
  double max_s = 0;  // 0: no limit on the whole run
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::exit(usage());
      }
      return argv[++i];
    };
    if (a == "--mutate") seeds.push_back(value());
    else if (a == "--replay") replay.push_back(value());
    else if (a == "--runs") runs = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--seed") seed = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--out") out_dir = value();
    else if (a == "--timeout-s") limits.timeout_s = std::atoi(value().c_str());
    else if (a == "--mem-mb") limits.mem_mb = std::atol(value().c_str());
    else if (a == "--max-s") max_s = std::atof(value().c_str());
    else if (a == "--help" || a == "-h") return usage() - 2;
    else if (!a.empty() && a[0] == '-') return usage();
    else replay.push_back(a);
  }
  if (seeds.empty() && replay.empty()) return usage();
  if (limits.timeout_s < 1 || limits.mem_mb < 64) return usage();

  // Scratch space for the verbs' outputs and the current mutant.
  // The verbs fsync their outputs; on tmpfs (/dev/shm) that costs nothing, on a disk it
  // would be most of an execution's time.
  fs::path base = access("/dev/shm", W_OK) == 0 ? fs::path("/dev/shm") : fs::temp_directory_path();
  std::string tmpl = (base / "ringside-fuzz-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::perror("mkdtemp");
    return 3;
  }
  const std::string scratch = tmpl;
  Counts counts;
  auto start = std::chrono::steady_clock::now();

  std::vector<std::string> files;
  for (const auto& r : replay) {
    if (fs::is_directory(r)) {
      for (const auto& e : fs::directory_iterator(r)) {
        // Not the folder's .gitignore.
        if (e.is_regular_file() && e.path().filename().string()[0] != '.') {
          files.push_back(e.path().string());
        }
      }
    } else {
      files.push_back(r);
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    int sig = 0;
    Outcome o = runConfirmed(f, scratch, limits, &sig, &counts.retried);
    record(o, sig, f, "replay-" + fs::path(f).filename().string(), out_dir, &counts);
  }

  std::vector<std::string> seed_data;
  for (const auto& s : seeds) {
    seed_data.push_back(readFile(s));
    if (seed_data.back().empty()) {
      std::cerr << "ringside_trace_fuzz: cannot read seed " << s << "\n";
      return 3;
    }
  }
  Rng rng(seed);
  const std::string mutant = scratch + "/mutant.sqlite";
  for (uint64_t r = 0; r < runs && !seed_data.empty(); ++r) {
    if (max_s > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                             .count() > max_s) {
      break;
    }
    fs::remove(mutant + "-journal");
    fs::remove(mutant + "-wal");
    fs::remove(mutant + "-shm");
    mutate(seed_data[pick(rng, seed_data.size())], mutant, rng);
    int sig = 0;
    Outcome o = runConfirmed(mutant, scratch, limits, &sig, &counts.retried);
    record(o, sig, mutant, "s" + std::to_string(seed) + "-r" + std::to_string(r), out_dir,
           &counts);
    if ((r + 1) % 1000 == 0) {
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                        .count();
      std::cerr << "ringside_trace_fuzz: " << counts.execs << " execs, " << counts.crashes
                << " crashes, " << counts.hangs << " hangs, " << counts.execs / secs
                << " execs/s\n";
    }
  }

  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "execs " << counts.execs << " crashes " << counts.crashes << " hangs "
            << counts.hangs << " exceptions " << counts.exceptions << " out-of-memory "
            << counts.oom << " slow-once " << counts.retried << " seconds " << secs
            << " execs/s " << (secs > 0 ? counts.execs / secs : 0.0) << "\n";
  std::error_code ec;
  fs::remove_all(scratch, ec);
  return counts.crashes + counts.hangs > 0 ? 1 : 0;
}
