// tools/trace_gen/trace_gen.cpp — see trace_gen.h.
//
// Each call is simulated whole (O(ranks x messages per rank) time, O(ranks) memory) and only the
// rows of the ranks whose files are open are written; ranks are written in batches, so that at
// most kOpenWriters files (and their page caches) are open at once, whatever the rank count.
#include "trace_gen.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>
#include <system_error>
#include <utility>

#include "ringside/storage/clock_model.h"
#include "ringside/storage/rank_writer.h"

namespace ringside::gen {
namespace {

constexpr int kOpenWriters = 64;
constexpr int64_t kCallGapNs = 50'000;      // between the calls of a step
constexpr int64_t kComputeNs = 5'000'000;   // between steps: the "forward and backward pass"
constexpr int64_t kJitterNs = 20'000;       // arrival spread of the ranks at a call
// GenFault cut: how long the ranks wait on the cut links before the call fails (Gloo's default
// timeout). The record must outlast the autopsy's stall bound (hang.h), as a real cut's does.
constexpr int64_t kCutTimeoutNs = 30'000'000'000;
constexpr int64_t kUnixBase = 1'700'000'000'000'000'000;  // the trace's wall-clock start

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// One message a rank sends, as the simulation produces it.
struct Message {
  int src, dst;
  int64_t start, end, bytes;
  const char* phase;
  int step;
};

// The simulation of one all-reduce on every rank: arrival times in, messages out (through `emit`,
// in the order they happen on each rank), the end of the call on every rank.
class Call {
 public:
  Call(const GenOptions& o, std::vector<int64_t> arrive)
      : o_(o), arrive_(std::move(arrive)), end_(arrive_.size(), 0) {}
  template <class Emit>
  void run(Emit&& emit) {
    if (o_.ranks == 1) {
      // Element by element: GCC 12 at -O3 warns (-Wfree-nonheap-object, a false positive) on the
      // vector copy-assignment inlined here.
      for (size_t r = 0; r < end_.size() && r < arrive_.size(); ++r) end_[r] = arrive_[r];
      return;
    }
    o_.tree ? tree(emit) : ring(emit);
  }
  const std::vector<int64_t>& ends() const { return end_; }

 private:
  int64_t duration(int src, int dst, int64_t bytes) const {
    double ns = static_cast<double>(o_.message_us) * 1000.0 + static_cast<double>(bytes) / o_.gbps;
    auto it = o_.slow_links.find({src, dst});
    if (it != o_.slow_links.end()) ns *= it->second;
    return static_cast<int64_t>(ns);
  }
  // A message can be sent from `ready` on; it completes once the receiver is in the call too.
  Message send(int src, int dst, int64_t ready, int64_t bytes, const char* phase, int step) const {
    const int64_t end = std::max(ready, arrive_[static_cast<size_t>(dst)]) + duration(src, dst, bytes);
    return {src, dst, ready, end, bytes, phase, step};
  }

  // Ring: 2(N-1) steps; at step k every rank sends a 1/N chunk to the next rank once it has the
  // previous rank's chunk of step k-1.
  template <class Emit>
  void ring(Emit& emit) {
    const int n = o_.ranks;
    const int64_t chunk = std::max<int64_t>(1, o_.bytes / n);
    std::vector<int64_t> prev(static_cast<size_t>(n)), cur(static_cast<size_t>(n));
    for (int k = 0; k < 2 * (n - 1); ++k) {
      const bool rs = k < n - 1;
      for (int r = 0; r < n; ++r) {
        const size_t u = static_cast<size_t>(r);
        int64_t ready = arrive_[u];
        if (k > 0) ready = std::max({ready, prev[u], prev[static_cast<size_t>((r + n - 1) % n)]});
        const Message m = send(r, (r + 1) % n, ready, chunk, rs ? "reduce-scatter" : "all-gather",
                               rs ? k : k - (n - 1));
        cur[u] = m.end;
        emit(m);
      }
      std::swap(prev, cur);
    }
    for (int r = 0; r < n; ++r)
      end_[static_cast<size_t>(r)] =
          std::max(prev[static_cast<size_t>(r)], prev[static_cast<size_t>((r + n - 1) % n)]);
  }

  // Binary tree rooted at rank 0: each rank sends the whole buffer to its parent once its
  // children's have arrived, then the result flows back down, to the left child first.
  template <class Emit>
  void tree(Emit& emit) {
    const int n = o_.ranks;
    std::vector<int64_t> up(static_cast<size_t>(n));  // when a rank's reduced buffer is at its parent
    std::vector<int64_t> ready(arrive_);
    for (int r = n - 1; r >= 0; --r) {
      const size_t u = static_cast<size_t>(r);
      for (int c : {2 * r + 1, 2 * r + 2})
        if (c < n) ready[u] = std::max(ready[u], up[static_cast<size_t>(c)]);
      if (r == 0) continue;
      const Message m = send(r, (r - 1) / 2, ready[u], o_.bytes, "reduce", 0);
      up[u] = m.end;
      emit(m);
    }
    // When a rank has the result: the root once reduced; every other rank is set by its parent
    // (parents come first) before it is read.
    std::vector<int64_t> have(ready);
    for (int r = 0; r < n; ++r) {
      const size_t u = static_cast<size_t>(r);
      int64_t t = have[u];
      for (int c : {2 * r + 1, 2 * r + 2}) {
        if (c >= n) continue;
        const Message m = send(r, c, t, o_.bytes, "broadcast", 1);
        have[static_cast<size_t>(c)] = m.end;
        t = m.end;
        emit(m);
      }
      end_[u] = t;
    }
  }

  const GenOptions& o_;
  std::vector<int64_t> arrive_;
  std::vector<int64_t> end_;
};

using storage::RankWriter;

std::unique_ptr<RankWriter> openRank(const GenOptions& o, const std::string& path, int r,
                                     std::string* error) {
  auto w = RankWriter::create(path, error, o.fsync);
  if (!w) return nullptr;
  const int per_host = (o.ranks + o.hosts - 1) / o.hosts;
  const int host = hostOfRank(o, r);
  const HostClock clock = hostClock(o, host);
  storage::RankInfo info;
  info.rank = r;
  info.world_size = o.ranks;
  info.local_rank = r % per_host;
  info.host = "host-" + std::to_string(host);
  info.boot_id = "boot-" + std::to_string(host);
  info.pid = 1000 + r;
  info.launcher = "ringside";
  info.identity_source = "env";
  info.command_line = "trace_gen";
  info.start_ns = clock.monotonic_ns;
  info.start_unix_ns = kUnixBase + clock.wall_ns;
  storage::CommunicatorRow comm;
  comm.comm = "world";
  comm.library = o.tree ? "ringside-tree" : "ringside-ring";
  comm.comm_rank = r;
  comm.comm_size = o.ranks;
  comm.created_ns = 0;
  if (!w->setRank(info) || !w->setMeta("run_id", "gen-" + std::to_string(o.seed)) || !w->begin() ||
      !w->addCommunicator(comm) ||
      !w->addClockAnchor({clock.monotonic_ns, kUnixBase + clock.wall_ns, 1000})) {
    *error = w->error();
    return nullptr;
  }
  return w;
}

// `cut_off`: the end record is left out, as when a rank is killed (GenFault dead).
bool finishRank(RankWriter& w, int64_t end_ns, const HostClock& clock, bool cut_off,
                std::string* error) {
  if (!w.addClockAnchor({end_ns + clock.monotonic_ns, kUnixBase + end_ns + clock.wall_ns, 1000}) ||
      !w.commit() ||
      (!cut_off && !w.setMeta("end_state", "clean")) || !w.close()) {
    *error = w.error();
    return false;
  }
  return true;
}

// The fault's call #seq on rank r (GenFault): false when r records no row of it.
bool faultCall(const GenFault& f, int r, storage::CollectiveRow* c) {
  const bool culprit = r == f.rank;
  if (culprit && (f.kind == "stuck" || f.kind == "dead")) return false;
  if (culprit && f.kind == "desync-op") c->op = "allgather";
  if (culprit && f.kind == "desync-size") {
    c->bytes *= 2;
    c->count *= 2;
  }
  c->end_ns = storage::kNone;  // never returns
  if (f.kind == "dead") {
    c->end_ns = c->start_ns + 50'000'000;
    c->status = 1;
  }
  if (f.kind == "cut") {  // every rank waits until Gloo's default timeout fails the call
    c->end_ns = c->start_ns + kCutTimeoutNs;
    c->status = 1;
  }
  return true;
}

// Writes the ranks [first, last): every call simulated, the rows of these ranks written.
bool writeBatch(const GenOptions& o, const std::vector<std::string>& paths, int first, int last,
                std::string* error) {
  std::vector<std::unique_ptr<RankWriter>> w;
  for (int r = first; r < last; ++r) {
    w.push_back(openRank(o, paths[static_cast<size_t>(r)], r, error));
    if (!w.back()) return false;
  }
  auto mine = [&](int r) { return r >= first && r < last; };
  auto writer = [&](int r) -> RankWriter& { return *w[static_cast<size_t>(r - first)]; };
  std::vector<HostClock> clocks;  // of the batch's ranks: every time they write is on it
  for (int r = first; r < last; ++r) clocks.push_back(hostClock(o, hostOfRank(o, r)));
  auto shift = [&](int r) { return clocks[static_cast<size_t>(r - first)].monotonic_ns; };
  const size_t n = static_cast<size_t>(o.ranks);
  const int64_t per_step = std::max<int64_t>(1, (o.collectives + o.steps - 1) / o.steps);
  int64_t t = kComputeNs;
  bool ok = true;
  int64_t rows = 0;
  const int64_t calls = o.fault.kind.empty() ? o.collectives : std::min(o.collectives, o.fault.seq + 1);
  for (int64_t i = 0; i < calls && ok; ++i) {
    const bool fault = !o.fault.kind.empty() && i == o.fault.seq;
    if (i % per_step == 0) {
      if (i > 0) t += kComputeNs;
      for (int r = first; r < last; ++r)
        ok = ok && writer(r).addStepMarker({i / per_step, t + shift(r)});
    }
    std::vector<int64_t> arrive(n);
    for (size_t r = 0; r < n; ++r) {
      const uint64_t h = mix(o.seed ^ mix(static_cast<uint64_t>(i) * 1000003u + r));
      arrive[r] = t + static_cast<int64_t>(h % kJitterNs);
      auto s = o.stragglers.find(static_cast<int>(r));
      if (s != o.stragglers.end()) arrive[r] += s->second * 1000;
    }
    Call call(o, arrive);
    std::set<std::pair<int, int>> cut_links;  // GenFault cut: the links whose message is posted
    call.run([&](const Message& m) {
      const bool cut = fault && o.fault.kind == "cut" && (m.src == o.fault.rank || m.dst == o.fault.rank);
      if (cut ? !cut_links.insert({m.src, m.dst}).second : (o.calls_only || fault)) return;
      storage::TransferRow row;
      row.collective_id = i + 1;
      row.src_rank = m.src;
      row.dst_rank = m.dst;
      row.bytes = m.bytes;
      row.phase = m.phase;
      row.step = m.step;
      row.chunk = 0;
      // Each side records on its own host's clock (a cut link's receive is recorded either way).
      for (const int r : {m.src, m.dst}) {
        if (!mine(r) || (r == m.dst && !o.receives && !cut)) continue;
        row.side = r == m.src ? "send" : "recv";
        row.start_ns = (cut ? arrive[static_cast<size_t>(r)] : m.start) + shift(r);
        row.end_ns = cut ? storage::kNone : m.end + shift(r);
        ok = writer(r).addTransfer(row) && ok;
        ++rows;
      }
    });
    int64_t last_end = t;
    for (int r = 0; r < o.ranks; ++r) {
      const size_t u = static_cast<size_t>(r);
      last_end = std::max(last_end, call.ends()[u]);
      if (fault && o.fault.kind == "cut") last_end = std::max(last_end, arrive[u] + kCutTimeoutNs);
      if (!mine(r)) continue;
      storage::CollectiveRow c;
      c.id = i + 1;
      c.rank = r;
      c.comm = "world";
      c.seq = i;
      c.op = "allreduce";
      c.library = o.tree ? "ringside-tree" : "ringside-ring";
      c.algorithm = o.tree ? "tree" : "ring";
      c.bytes = o.bytes;
      c.count = o.bytes / 4;
      c.dtype = "f32";
      c.reduce_op = "sum";
      c.start_ns = arrive[u] + shift(r);
      c.end_ns = call.ends()[u] + shift(r);
      c.tid = 1000 + r;
      if (fault && !faultCall(o.fault, r, &c)) continue;
      ok = writer(r).addCollective(c) && ok;
    }
    t = last_end + kCallGapNs;
    if (rows >= 200'000) {  // commit now and then: a batch stays within the writers' caches
      for (auto& wr : w) ok = ok && wr->commit() && wr->begin();
      rows = 0;
    }
  }
  for (int r = first; r < last && ok; ++r) {
    ok = finishRank(writer(r), t, clocks[static_cast<size_t>(r - first)],
                    o.fault.kind == "dead" && r == o.fault.rank, error);
  }
  if (!ok && error->empty()) {
    for (auto& wr : w)
      if (!wr->error().empty()) *error = wr->error();
  }
  return ok;
}

}  // namespace

int hostOfRank(const GenOptions& o, int r) {
  return r / ((o.ranks + o.hosts - 1) / o.hosts);
}

HostClock hostClock(const GenOptions& o, int host) {
  if (!o.host_clocks || host == 0) return {};
  const uint64_t h = mix(o.seed ^ mix(0xc10cULL + static_cast<uint64_t>(host)));
  HostClock c;
  c.monotonic_ns = host * 3'600'000'000'000LL + static_cast<int64_t>(h % 1'000'000'000);
  c.wall_ns = static_cast<int64_t>((h >> 32) % 20'000'001) - 10'000'000;
  return c;
}

bool parseStraggler(const std::string& text, GenOptions* o, std::string* error) {
  char* end = nullptr;
  const long rank = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != ':') {
    *error = "--straggler takes RANK:DELAY_US, e.g. 17:2000";
    return false;
  }
  const char* delay_text = end + 1;
  const long long delay = std::strtoll(delay_text, &end, 10);
  if (end == delay_text || *end != '\0' || rank < 0 || delay < 0) {
    *error = "--straggler takes RANK:DELAY_US, e.g. 17:2000";
    return false;
  }
  o->stragglers[static_cast<int>(rank)] = delay;
  return true;
}

bool parseSlowLink(const std::string& text, GenOptions* o, std::string* error) {
  char* end = nullptr;
  const long a = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '-') {
    *error = "--slow-link takes A-B:FACTOR, e.g. 3-4:5";
    return false;
  }
  const char* b_text = end + 1;
  const long b = std::strtol(b_text, &end, 10);
  if (end == b_text || *end != ':') {
    *error = "--slow-link takes A-B:FACTOR, e.g. 3-4:5";
    return false;
  }
  const char* f_text = end + 1;
  const double f = std::strtod(f_text, &end);
  if (end == f_text || *end != '\0' || a < 0 || b < 0 || !(f >= 1.0) || f > 1e6) {
    *error = "--slow-link takes A-B:FACTOR with FACTOR >= 1, e.g. 3-4:5";
    return false;
  }
  o->slow_links[{static_cast<int>(a), static_cast<int>(b)}] = f;
  return true;
}

bool parseFault(const std::string& text, GenOptions* o, std::string* error) {
  const size_t colon = text.find(':');
  const size_t at = text.find('@');
  *error = "--fault takes KIND:RANK@SEQ with KIND stuck, dead, desync-op, desync-size or cut, "
           "e.g. stuck:5@3";
  if (colon == std::string::npos || at == std::string::npos || at < colon) return false;
  GenFault f;
  f.kind = text.substr(0, colon);
  if (f.kind != "stuck" && f.kind != "dead" && f.kind != "desync-op" && f.kind != "desync-size" &&
      f.kind != "cut") {
    return false;
  }
  const std::string rank = text.substr(colon + 1, at - colon - 1), seq = text.substr(at + 1);
  char* end = nullptr;
  f.rank = static_cast<int>(std::strtol(rank.c_str(), &end, 10));
  if (rank.empty() || *end != '\0' || f.rank < 0) return false;
  f.seq = std::strtoll(seq.c_str(), &end, 10);
  if (seq.empty() || *end != '\0' || f.seq < 0) return false;
  error->clear();
  o->fault = f;
  return true;
}

bool writeRankFiles(const GenOptions& o, const std::string& dir, std::vector<std::string>* files,
                    std::string* error) {
  if (o.ranks < 1 || o.hosts < 1 || o.hosts > o.ranks || o.collectives < 1 || o.steps < 1 ||
      o.bytes < 1 || !(o.gbps > 0)) {
    *error = "trace_gen: ranks, hosts (<= ranks), collectives, steps, bytes and gbps must be > 0";
    return false;
  }
  if (!o.fault.kind.empty() && (o.fault.rank >= o.ranks || o.fault.seq >= o.collectives)) {
    *error = "trace_gen: the fault's rank must be < ranks and its call < collectives";
    return false;
  }
  std::vector<std::string> paths;
  for (int r = 0; r < o.ranks; ++r) {
    std::string folder = dir;
    if (o.node_folders) {
      folder += "/node-" + std::to_string(hostOfRank(o, r));
      std::error_code ec;
      std::filesystem::create_directories(folder, ec);
      if (ec) {
        *error = "trace_gen: cannot create " + folder + ": " + ec.message();
        return false;
      }
    }
    paths.push_back(folder + "/rank-" + std::to_string(r) + ".sqlite");
  }
  for (int first = 0; first < o.ranks; first += kOpenWriters) {
    if (!writeBatch(o, paths, first, std::min(o.ranks, first + kOpenWriters), error)) return false;
  }
  files->insert(files->end(), paths.begin(), paths.end());
  return true;
}

}  // namespace ringside::gen
