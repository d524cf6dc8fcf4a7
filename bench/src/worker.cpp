#include "ringside/storage/privacy.h"
#include "ringside/bench/worker.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <system_error>
#include <vector>

#include "ringside/bench/data.h"
#include "ringside/bench/floor.h"
#include "ringside/bench/gloo.h"
#include "ringside/bench/model.h"
#include "ringside/bench/report.h"
#include "ringside/collector/collector.h"
#include "ringside/fileio/output_file.h"
#include "ringside/reference/communicator.h"
#include "ringside/reference/rendezvous.h"
#include "ringside/reference/types.h"

namespace ringside::bench {
namespace fs = std::filesystem;

namespace {

// α: many round trips of a few bytes; β: a few round trips of 16 MiB.
constexpr uint64_t kAlphaBytes = 8;
constexpr int kAlphaIters = 200;
constexpr uint64_t kBetaBytes = uint64_t{16} << 20;
constexpr int kBetaIters = 5;

constexpr const char* kByeKey = "ringside-bench/bye/";

// CPU time of this whole process (every thread: Gloo's too).
int64_t processCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// A TCP port "1".."65535", the whole text.
bool parsePort(std::string_view text, int* out) {
  int value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < 1 || value > 65535) return false;
  *out = value;
  return true;
}

std::string hostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "unknown";
  return name;
}

class BenchRank {
 public:
  BenchRank(const BenchSettings& settings, bool started_by_parent, const TraceMerger& merger)
      : o_(settings), started_by_parent_(started_by_parent), merger_(merger) {}

  int run() {
    if (!setup()) return fail();
    measureAlphaBeta();
    if (!error_.empty()) return fail();
    if (rank_ == 0) {
      std::cout << formatBenchHeader(run_) << formatBenchColumns() << std::flush;
    }
    if (!runRows()) return fail();
    int status = total_wrong_ > 0 ? kBenchExitFailed : kBenchExitOk;
    if (rank_ == 0 && !o_.json.empty() && !writeJson()) status = kBenchExitFailed;
    if (!finish()) return fail();
    return status;
  }

 private:
  int fail() {
    std::cerr << "ringside bench: " << (rank_ >= 0 ? "rank " + std::to_string(rank_) + ": " : "")
              << error_ << "\n";
    return usage_error_ ? kBenchExitUsage : kBenchExitFailed;
  }

  bool barrier() {
    std::vector<std::string> all;
    return rendezvous_->exchange("", &all, &error_);
  }

  bool setup() {
    reference::RendezvousOptions rdv;
    if (!reference::rendezvousOptionsFromEnv(&rdv, &error_)) {
      usage_error_ = true;
      return false;
    }
    // Under torchrun's static rendezvous its agent serves a store on
    // MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE=True): take the next port.
    // RINGSIDE_BENCH_PORT (the same on every rank) overrides both.
    if (const char* port = std::getenv("RINGSIDE_BENCH_PORT"); port != nullptr && *port != '\0') {
      if (!parsePort(port, &rdv.master_port)) {
        error_ = std::string("RINGSIDE_BENCH_PORT is not a port: '") + port + "'";
        usage_error_ = true;
        return false;
      }
    } else if (const char* agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
               agent != nullptr && std::string_view(agent) == "True" && rdv.master_port < 65535) {
      rdv.master_port += 1;
    }
    rdv.timeout = std::max<std::chrono::milliseconds>(
        std::chrono::milliseconds(60000), timeout() * 2);
    rendezvous_ = reference::Rendezvous::connect(rdv, &error_);
    if (rendezvous_ == nullptr) return false;
    rank_ = rendezvous_->rank();
    ranks_ = rendezvous_->worldSize();

    std::vector<std::string> hosts;
    if (!rendezvous_->exchange(hostName(), &hosts, &error_)) return false;
    run_.ranks = ranks_;
    for (const std::string& host : hosts) {
      if (std::find(run_.hosts.begin(), run_.hosts.end(), host) == run_.hosts.end()) {
        run_.hosts.push_back(host);
      }
    }
    run_.dtype = o_.dtype;
    run_.op = o_.op;
    run_.iters = o_.iters;
    run_.warmup = o_.warmup;
    run_.check = o_.check;
    run_.floor_rows = std::any_of(o_.algos.begin(), o_.algos.end(), isFloorAlgo);

    if (!o_.output.empty() && !startTracing()) return false;

    reference::CommunicatorOptions comm;
    comm.rank = rank_;
    comm.world_size = ranks_;
    comm.job_token = rendezvous_->jobToken();
    comm.timeout = timeout();
    comm.chunk_bytes = o_.chunk_bytes;
    // Multipath's plan (and, with no topology file, its bandwidth probe) at creation, before
    // anything is timed.
    comm.prepare_multipath = std::find(o_.algos.begin(), o_.algos.end(), BenchAlgo::kMultipath) !=
                             o_.algos.end();
    reference::ExchangeFn exchange = [this](const std::string& mine,
                                            std::vector<std::string>* all, std::string* error) {
      return rendezvous_->exchange(mine, all, error);
    };
    comm_ = reference::Communicator::create(comm, exchange, &error_);
    if (comm_ == nullptr) return false;

    bool want_gloo = std::any_of(o_.algos.begin(), o_.algos.end(), isGlooAlgo);
    if (want_gloo && ranks_ > 1) {
      GlooBench::Options gloo;
      gloo.rank = rank_;
      gloo.size = ranks_;
      gloo.timeout = timeout();
      const char* master = std::getenv("MASTER_ADDR");
      gloo.hostname = localAddressToward(master != nullptr ? master : "127.0.0.1");
      if (gloo.hostname.empty()) gloo.hostname = hostName();
      if (const char* iface = std::getenv("GLOO_SOCKET_IFNAME"); iface != nullptr) {
        gloo.iface = iface;
      }
      gloo_ = GlooBench::connect(rendezvous_.get(), gloo, &error_);
      if (gloo_ == nullptr) return false;
    }
    floor_ = std::make_unique<FloorWork>(rank_, ranks_, o_.dtype, o_.op);
    return true;
  }

  std::chrono::milliseconds timeout() const {
    return std::chrono::milliseconds(static_cast<int64_t>(o_.timeout_s * 1000));
  }

  // With -o: the rank file goes to RINGSIDE_DIR (set by the parent `ringside
  // bench`), or, under an external launcher, to <output>.ranks.
  bool startTracing() {
    if (!started_by_parent_) {
      // Rank 0 decides whether the trace may be written; everyone hears it.
      std::string verdict;
      std::error_code ec;
      if (rank_ == 0) {
        if (!o_.force && fs::exists(o_.output, ec)) {
          verdict = o_.output + " exists (use --force to overwrite, or -o another name)";
        }
      }
      std::vector<std::string> all;
      if (!rendezvous_->exchange(verdict, &all, &error_)) return false;
      if (!all[0].empty()) {
        error_ = all[0];
        usage_error_ = true;
        return false;
      }
      trace_dir_ = fs::absolute(o_.output + ".ranks", ec).lexically_normal().string();
      fs::create_directories(trace_dir_, ec);
      if (!fs::is_directory(trace_dir_, ec)) {
        error_ = "cannot create " + trace_dir_;
        return false;
      }
      if (rank_ == 0 && !merger_.list_rank_files(trace_dir_, &old_files_, &error_)) return false;
      // Nobody may create its rank file before rank 0 has seen the old ones.
      if (!barrier()) return false;
      setenv("RINGSIDE_DIR", trace_dir_.c_str(), 1);
    }
    if (!collector::activate()) {
      std::cerr << "ringside bench: rank " << rank_
                << ": tracing is off (RINGSIDE_DISABLE is set, or the rank file could not be "
                   "created); no trace from this rank\n";
      return true;
    }
    collector::setIdentity(rank_, ranks_, "ringside-bench");
    tracing_ = true;
    return true;
  }

  void measureAlphaBeta() {
    if (ranks_ < 2) return;
    double small = 0;
    double large = 0;
    double ignored = 0;
    if (!comm_->pingPong(0, 1, kAlphaBytes, 10, &ignored, &error_) ||
        !comm_->pingPong(0, 1, kAlphaBytes, kAlphaIters, &small, &error_) ||
        !comm_->pingPong(0, 1, kBetaBytes, 1, &ignored, &error_) ||
        !comm_->pingPong(0, 1, kBetaBytes, kBetaIters, &large, &error_)) {
      return;
    }
    run_.have_alpha_beta = true;
    run_.alpha_s = alphaFromPingPong(small);
    run_.beta_s_per_byte = betaFromPingPong(small, large, kAlphaBytes, kBetaBytes);
  }

  bool call(BenchAlgo algo, void* data, uint64_t count) {
    switch (algo) {
      case BenchAlgo::kRing:
        return comm_->allreduce(data, count, o_.dtype, o_.op, reference::Algorithm::kRing,
                                &error_);
      case BenchAlgo::kTree:
        return comm_->allreduce(data, count, o_.dtype, o_.op, reference::Algorithm::kTree,
                                &error_);
      case BenchAlgo::kMultipath:
        return comm_->allreduce(data, count, o_.dtype, o_.op, reference::Algorithm::kMultipath,
                                &error_);
      case BenchAlgo::kGloo:
      case BenchAlgo::kGlooBcube:
        return gloo_->allreduce(data, count, o_.dtype, o_.op, algo == BenchAlgo::kGlooBcube,
                                &error_);
      case BenchAlgo::kFloor:
        floor_->run(data, count);
        return true;
      case BenchAlgo::kFloorTcp:
        return comm_->ringFloor(data, count, o_.dtype, o_.op, &error_);
    }
    return false;
  }

  bool runRows() {
    const size_t element = reference::dtypeSize(o_.dtype);
    uint64_t max_bytes = 0;
    for (uint64_t size : o_.sizes) max_bytes = std::max(max_bytes, size / element * element);
    // The timed calls reduce a copy of the inputs, refreshed before every
    // call (outside the timing), so values never grow or overflow.
    std::unique_ptr<unsigned char[]> inputs(new unsigned char[max_bytes]);
    std::unique_ptr<unsigned char[]> work(new unsigned char[max_bytes]);
    const BenchPattern pattern(o_.dtype, o_.op, ranks_);

    std::vector<uint64_t> done_bytes;
    for (uint64_t size : o_.sizes) {
      const uint64_t count = size / element;
      const uint64_t bytes = count * element;
      // Sizes that round down to the same whole number of elements (5 and 6
      // bytes of f32) are one size: measured once. Every rank skips alike.
      if (std::find(done_bytes.begin(), done_bytes.end(), bytes) != done_bytes.end()) continue;
      done_bytes.push_back(bytes);
      pattern.fill(inputs.get(), count, rank_);
      std::vector<BenchRow> rows(o_.algos.size());
      std::vector<int64_t> wrong(o_.algos.size(), -1);
      std::vector<bool> runs(o_.algos.size(), false);
      // Per algorithm: one checked call on fresh inputs, then the warm-up calls.
      for (size_t a = 0; a < o_.algos.size(); ++a) {
        BenchRow& row = rows[a];
        row.bytes = bytes;
        row.count = count;
        row.algo = o_.algos[a];
        if (isGlooAlgo(row.algo) && gloo_ == nullptr) {
          row.error = "n/a: Gloo needs 2 or more ranks";
          continue;
        }
        runs[a] = true;
        if (!barrier()) return false;
        std::memcpy(work.get(), inputs.get(), bytes);
        if (!call(row.algo, work.get(), count)) return false;
        // The floor rows compute no all-reduce: nothing to check.
        if (o_.check && !isFloorAlgo(row.algo))
          wrong[a] = static_cast<int64_t>(pattern.countWrong(work.get(), count));
        for (int i = 0; i < o_.warmup; ++i) {
          std::memcpy(work.get(), inputs.get(), bytes);
          if (!call(row.algo, work.get(), count)) return false;
        }
      }
      // The timed calls, interleaved: iteration i calls every algorithm once,
      // in turn, so that a change in the machine's load hits all of them alike.
      // A barrier (untimed) before each call: a call ends on each rank when its
      // own part is done, and without one the ranks that finished the previous
      // call last would be charged to this one (multipath timed right after
      // tree measured 3-4x its time alone).
      std::vector<std::vector<int64_t>> ns(o_.algos.size());
      std::vector<int64_t> cpu_ns(o_.algos.size(), 0);
      for (int i = 0; i < o_.iters; ++i) {
        for (size_t a = 0; a < o_.algos.size(); ++a) {
          if (!runs[a]) continue;
          if (!barrier()) return false;
          std::memcpy(work.get(), inputs.get(), bytes);
          int64_t c0 = processCpuNs();
          int64_t t0 = collector::nowNs();
          if (!call(o_.algos[a], work.get(), count)) return false;
          ns[a].push_back(collector::nowNs() - t0);
          cpu_ns[a] += processCpuNs() - c0;
        }
      }
      for (size_t a = 0; a < o_.algos.size(); ++a) {
        if (runs[a] && !gather(ns[a], cpu_ns[a], wrong[a], &rows[a])) return false;
        if (rank_ == 0) {
          std::cout << formatBenchRow(rows[a], ranks_) << std::flush;
          run_.rows.push_back(rows[a]);
        }
      }
    }
    return true;
  }

  // Each rank's mean, median and fastest of its timed calls; the row shows the
  // largest over ranks of each. CPU time (the whole process's, per call) and
  // wrong elements are summed over ranks.
  bool gather(std::vector<int64_t> ns, int64_t cpu_ns, int64_t wrong, BenchRow* row) {
    double mean_s = 0;
    double median_s = 0;
    double min_s = 0;
    double cpu_s = 0;
    if (!ns.empty()) {
      cpu_s = static_cast<double>(cpu_ns) * 1e-9 / static_cast<double>(ns.size());
      int64_t total_ns = 0;
      for (int64_t t : ns) total_ns += t;
      mean_s = static_cast<double>(total_ns) * 1e-9 / static_cast<double>(ns.size());
      std::sort(ns.begin(), ns.end());
      min_s = static_cast<double>(ns.front()) * 1e-9;
      size_t mid = ns.size() / 2;
      median_s = (ns.size() % 2 == 1 ? static_cast<double>(ns[mid])
                                     : 0.5 * static_cast<double>(ns[mid - 1] + ns[mid])) *
                 1e-9;
    }
    char mine[128];
    std::snprintf(mine, sizeof mine, "%.17g %.17g %.17g %.17g %lld", mean_s, median_s, min_s,
                  cpu_s, static_cast<long long>(wrong));
    std::vector<std::string> all;
    if (!rendezvous_->exchange(mine, &all, &error_)) return false;
    row->seconds = 0;
    row->median_seconds = 0;
    row->cpu_seconds = 0;
    row->min_seconds = 0;
    row->wrong = o_.check && wrong >= 0 ? 0 : -1;
    for (const std::string& text : all) {
      double seconds = 0;
      double median = 0;
      double fastest = 0;
      double cpu = 0;
      long long rank_wrong = 0;
      if (std::sscanf(text.c_str(), "%lg %lg %lg %lg %lld", &seconds, &median, &fastest, &cpu,
                      &rank_wrong) != 5) {
        error_ = "malformed result from a rank: '" + text + "'";
        return false;
      }
      row->seconds = std::max(row->seconds, seconds);
      row->median_seconds = std::max(row->median_seconds, median);
      row->min_seconds = std::max(row->min_seconds, fastest);
      row->cpu_seconds += cpu;
      if (row->wrong >= 0 && rank_wrong >= 0) row->wrong += rank_wrong;
    }
    if (row->wrong > 0) total_wrong_ += row->wrong;
    row->model_seconds =
        run_.have_alpha_beta
            ? modelSeconds(row->algo, ranks_, static_cast<double>(row->bytes), run_.alpha_s,
                           run_.beta_s_per_byte, o_.chunk_bytes)
            : -1;
    return true;
  }

  // Replaces an earlier file of that name (as always), but only a regular file, through a
  // temporary file created exclusively beside it (ringside/fileio/output_file.h).
  bool writeJson() {
    std::string error;
    if (!fileio::writeOutputFile(o_.json, benchJson(run_), /*overwrite=*/true, &error,
                                 /*sync=*/true, storage::outputFileMode())) {
      std::cerr << "ringside bench: --json: " << error << "\n";
      return false;
    }
    return true;
  }

  // Everyone done before anyone closes a connection; rank 0 (which serves the
  // rendezvous) leaves last, after every other rank said goodbye.
  bool finish() {
    if (!barrier()) return false;
    gloo_.reset();
    comm_.reset();
    if (tracing_) collector::shutdown();
    if (rank_ != 0) return rendezvous_->set(kByeKey + std::to_string(rank_), "1", &error_);
    for (int r = 1; r < ranks_; ++r) {
      std::string ignored;
      if (!rendezvous_->get(kByeKey + std::to_string(r), &ignored, &error_)) return false;
    }
    if (tracing_ && !started_by_parent_) return mergeTrace();
    return true;
  }

  // External launcher only: every rank has closed its file (said goodbye).
  bool mergeTrace() {
    std::vector<std::string> files;
    if (!merger_.list_rank_files(trace_dir_, &files, &error_)) return false;
    std::set<std::string> old(old_files_.begin(), old_files_.end());
    std::erase_if(files, [&](const std::string& file) { return old.count(file) != 0; });
    if (static_cast<int>(files.size()) < ranks_) {
      std::cerr << "ringside bench: " << trace_dir_ << " holds " << files.size() << " of "
                << ranks_ << " rank files (ranks on other hosts write to their own folder; "
                << "merge them later with `ringside merge`)\n";
    }
    storage::MergeOptions merge;
    merge.inputs = files;
    merge.output = o_.output;
    merge.overwrite = o_.force;
    merge.extra_meta = {{"tool_version", merger_.tool_version},
                        {"command_line", "ringside bench"}};
    storage::MergeResult result = merger_.merge(std::move(merge));
    if (!result.ok) {
      error_ = "merge failed: " + result.error + "; the rank files are kept in " + trace_dir_;
      return false;
    }
    std::error_code ec;
    for (const std::string& file : files) {
      for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(file + suffix, ec);
    }
    fs::remove(trace_dir_, ec);  // only when empty
    std::cerr << "ringside bench: trace written to " << o_.output << "\n";
    return true;
  }

  const BenchSettings& o_;
  bool started_by_parent_;
  const TraceMerger& merger_;
  int rank_ = -1;
  int ranks_ = 0;
  std::string error_;
  bool usage_error_ = false;
  std::unique_ptr<reference::Rendezvous> rendezvous_;
  std::unique_ptr<reference::Communicator> comm_;
  std::unique_ptr<GlooBench> gloo_;
  std::unique_ptr<FloorWork> floor_;
  bool tracing_ = false;
  std::string trace_dir_;
  std::vector<std::string> old_files_;
  BenchRun run_;
  int64_t total_wrong_ = 0;
};

}  // namespace

std::string localAddressToward(const std::string& master) {
  if (master == "localhost" || master.rfind("127.", 0) == 0) return "127.0.0.1";
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(master.c_str(), "9", &hints, &found) != 0 || found == nullptr) return "";
  std::string address;
  // A connected UDP socket sends nothing; it only makes the kernel pick the route.
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
    sockaddr_in local{};
    socklen_t len = sizeof local;
    char text[INET_ADDRSTRLEN] = {};
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0 &&
        inet_ntop(AF_INET, &local.sin_addr, text, sizeof text) != nullptr) {
      address = text;
    }
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(found);
  return address;
}

int runBenchRank(const BenchSettings& settings, bool started_by_parent,
                 const TraceMerger& merger) {
  BenchRank rank(settings, started_by_parent, merger);
  return rank.run();
}

}  // namespace ringside::bench
