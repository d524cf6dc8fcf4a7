#include "export/export_perfetto.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "export/perfetto_layout.h"
#include "ringside/format/json.h"
#include "ringside/format/units.h"
#include "ringside/storage/clock_model.h"
#include "ringside/storage/records.h"
#include "ringside/storage/trace_reader.h"

namespace ringside::cli {
namespace {

// Tracks that are not an OS thread (lanes past the first, link tracks) get thread ids far above
// any OS thread id (Linux caps pid_max at 2^22), numbered per process in order of first use.
constexpr int64_t kSyntheticTidBase = int64_t{1} << 30;
// Sort order within a rank: the collectives' tracks first, then the links by peer and side.
constexpr int64_t kLinkSortBase = 1000;
constexpr int64_t kDefaultBinNs = 1'000'000;
constexpr int64_t kTargetBins = 10000;

// Saturating: a damaged trace's times (INT64_MIN, INT64_MAX) must not overflow.
int64_t add(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}
int64_t sub(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_sub_overflow(a, b, &r) ? (b < 0 ? INT64_MAX : INT64_MIN) : r;
}

// span / kTargetBins (so at most about that many points per counter), rounded down to 1, 2 or 5
// times a power of ten, at least 1 us.
int64_t chooseBin(int64_t span_ns) {
  if (span_ns <= 0) return kDefaultBinNs;
  const int64_t want = std::max<int64_t>(1000, span_ns / kTargetBins);
  int64_t decade = 1000;
  while (decade <= want / 10) decade *= 10;
  for (int64_t m : {5, 2, 1})
    if (decade * m <= want) return decade * m;
  return decade;
}

std::string rankLabel(int rank) { return rank < 0 ? std::string("?") : std::to_string(rank); }

// One track (a thread's calls, or one side of a link on a rank) and its lanes' thread ids.
struct Track {
  LaneAllocator lanes;
  std::vector<int64_t> tids;
  std::string name;
  int64_t first_tid = -1;  // lane 0's thread id: the OS thread's own, or -1 for a synthetic one
  int64_t sort_index = 0;
};

class EventWriter {
 public:
  EventWriter(storage::TraceReader& reader, std::ostream& out) : out_(out) {
    for (const storage::RankInfo& info : reader.ranks()) ranks_[info.rank] = info;
    placeRanks(reader);
  }

  void begin() { out_ << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":["; }
  void processNames();
  void collective(const storage::CollectiveRow& row);
  void startTransfers(int64_t bin_ns) { bin_ns_ = bin_ns; }
  void transfer(const storage::TransferRow& row);
  void end();

  // The time range of the calls, on the export's time line (for the counters' bin).
  int64_t callSpan() const { return last_ > first_ ? sub(last_, first_) : 0; }
  const PerfettoCounts& counts() const { return counts_; }

 private:
  void placeRanks(storage::TraceReader& reader);
  int64_t exportNs(int rank, int64_t t) const;
  int64_t laneTid(int pid, Track& track, int lane);
  void nameTrack(int pid, int64_t tid, const std::string& name, int64_t sort_index);
  void emit(const std::string& event);
  void counter(int pid, int64_t tid, int src, int dst, int64_t start, int64_t end, int64_t bytes);
  void counterPoint(std::pair<int, int> link, int64_t at, int64_t rate);
  void flow(const storage::TransferRow& row, int recorder, int64_t tid, int64_t start,
            int64_t dur, bool open);
  std::string transferEvent(const storage::TransferRow& row, int pid, int64_t tid, int64_t start,
                            int64_t dur, bool open) const;

  std::ostream& out_;
  std::map<int, storage::RankInfo> ranks_;
  // Export time = the reader's time + offset of the rank's clock domain - origin.
  std::map<int, int64_t> offset_;
  int64_t origin_ = 0;
  std::set<std::pair<int, int64_t>> named_;
  std::map<int, int64_t> next_tid_;  // per process: the next synthetic thread id
  std::map<std::pair<int, int64_t>, Track> call_tracks_;        // (rank, tid)
  std::map<std::tuple<int, int, bool>, Track> link_tracks_;     // (rank, peer, recv)
  std::map<std::pair<int, int>, LinkRateBins> link_counters_;   // (src, dst)
  std::map<std::pair<int, int>, std::pair<int, int64_t>> counter_track_;  // (src, dst) -> pid, tid
  MessageMatcher matcher_;
  int64_t bin_ns_ = kDefaultBinNs;
  int64_t first_ = INT64_MAX, last_ = INT64_MIN;
  PerfettoCounts counts_;
  bool first_event_ = true;
};

// Ranks that share a clock domain share one wall-clock offset, so their times keep the order the
// reader gives them (per-rank offsets would add each rank's own wall-clock reading error). With
// a clock model the reader's times are already on one time line: one domain for all.
void EventWriter::placeRanks(storage::TraceReader& reader) {
  const bool one_line = reader.timesAligned() && !reader.clockModel().domains.empty();
  const storage::ClockMap map(reader.clockModel());
  std::map<std::string, int64_t> domain_offset;
  origin_ = INT64_MAX;
  for (const auto& [rank, info] : ranks_) {
    std::string domain = one_line             ? std::string("model")
                         : !info.boot_id.empty() ? info.boot_id + "/" +
                                                       std::to_string(info.timens_offset_ns)
                                                 : "host " + info.host;
    const int64_t start = one_line ? map.map(rank, info.start_ns) : info.start_ns;
    auto [it, fresh] = domain_offset.try_emplace(domain, sub(info.start_unix_ns, start));
    offset_[rank] = it->second;
    origin_ = std::min(origin_, add(start, it->second));
  }
  if (ranks_.empty()) origin_ = 0;
}

int64_t EventWriter::exportNs(int rank, int64_t t) const {
  auto it = offset_.find(rank);
  return sub(add(t, it == offset_.end() ? 0 : it->second), origin_);
}

void EventWriter::emit(const std::string& event) {
  out_ << (first_event_ ? "\n" : ",\n") << event;
  first_event_ = false;
}

void EventWriter::processNames() {
  for (const auto& [rank, info] : ranks_) {
    std::string name = "rank " + std::to_string(rank);
    if (!info.host.empty()) name += " (" + info.host + ")";
    std::string e = "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(rank) +
                    ",\"tid\":0,\"args\":{\"name\":";
    format::appendJsonString(name, &e);
    e += "}}";
    emit(e);
    emit("{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + std::to_string(rank) +
         ",\"tid\":0,\"args\":{\"sort_index\":" + std::to_string(rank) + "}}");
  }
}

// A thread_name record the first time a (pid, tid) track is used.
void EventWriter::nameTrack(int pid, int64_t tid, const std::string& name, int64_t sort_index) {
  if (!named_.insert({pid, tid}).second) return;
  std::string e = "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(pid) +
                  ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"name\":";
  format::appendJsonString(name, &e);
  e += "}}";
  emit(e);
  emit("{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":" + std::to_string(pid) +
       ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"sort_index\":" +
       std::to_string(sort_index) + "}}");
}

// The thread id of `lane` of `track` in process `pid`, named on first use.
int64_t EventWriter::laneTid(int pid, Track& track, int lane) {
  while (static_cast<int>(track.tids.size()) <= lane) {
    const size_t n = track.tids.size();
    int64_t tid;
    if (n == 0 && track.first_tid >= 0) {
      tid = track.first_tid;
    } else {
      auto [it, fresh] = next_tid_.try_emplace(pid, kSyntheticTidBase);
      tid = it->second++;
    }
    track.tids.push_back(tid);
    std::string name = track.name;
    if (n > 0) name += " (lane " + std::to_string(n + 1) + ")";
    nameTrack(pid, tid, name, track.sort_index + static_cast<int64_t>(std::min<size_t>(n, 63)));
  }
  return track.tids[static_cast<size_t>(lane)];
}

void EventWriter::collective(const storage::CollectiveRow& row) {
  auto [it, fresh] = call_tracks_.try_emplace({row.rank, row.tid});
  Track& track = it->second;
  if (fresh) {
    track.name = "collectives (thread " + std::to_string(row.tid) + ")";
    // A damaged trace's thread id could be one of the synthetic ones: then it gets one too.
    track.first_tid = row.tid >= 0 && row.tid < kSyntheticTidBase ? row.tid : -1;
  }
  const bool open = row.end_ns == storage::kNone;
  const int64_t start = exportNs(row.rank, row.start_ns);
  const int64_t dur = open ? 0 : std::max<int64_t>(0, sub(row.end_ns, row.start_ns));
  first_ = std::min(first_, start);
  last_ = std::max(last_, add(start, dur));
  const int64_t tid = laneTid(row.rank, track, track.lanes.assign(start, add(start, dur)));
  std::string name(row.op);
  name += " " + format::bytesWholeOrTenths(static_cast<uint64_t>(std::max<int64_t>(0, row.bytes)));
  if (open) name += " (never returned)";
  std::string e = "{\"ph\":\"X\",\"cat\":\"collective\",\"name\":";
  format::appendJsonString(name, &e);
  e += ",\"pid\":" + std::to_string(row.rank) + ",\"tid\":" + std::to_string(tid) +
       ",\"ts\":" + format::microsFromNanos(start) + ",\"dur\":" + format::microsFromNanos(dur) +
       ",\"args\":{\"op\":";
  format::appendJsonString(row.op, &e);
  e += ",\"bytes\":" + std::to_string(row.bytes) + ",\"comm\":";
  format::appendJsonString(row.comm, &e);
  e += ",\"seq\":" + std::to_string(row.seq) + ",\"library\":";
  format::appendJsonString(row.library, &e);
  e += ",\"algorithm\":";
  format::appendJsonString(row.algorithm, &e);
  e += ",\"dtype\":";
  format::appendJsonString(row.dtype, &e);
  e += ",\"count\":" + std::to_string(row.count) + ",\"status\":" + std::to_string(row.status) +
       ",\"thread\":" + std::to_string(row.tid);
  if (row.root >= 0) e += ",\"root\":" + std::to_string(row.root);
  e += "}}";
  emit(e);
  ++counts_.collectives;
}

std::string EventWriter::transferEvent(const storage::TransferRow& row, int pid, int64_t tid,
                                       int64_t start, int64_t dur, bool open) const {
  const bool send = row.side == "send";
  // "send 0->1 reduce-scatter 64 KiB": side, link, phase, size.
  std::string name = std::string(send ? "send " : "recv ") + rankLabel(row.src_rank) + "->" +
                     rankLabel(row.dst_rank);
  if (!row.phase.empty()) name += " " + std::string(row.phase);
  name += " " + format::bytesWholeOrTenths(static_cast<uint64_t>(std::max<int64_t>(0, row.bytes)));
  if (open) name += " (never completed)";
  std::string e = "{\"ph\":\"X\",\"cat\":\"transfer\",\"name\":";
  format::appendJsonString(name, &e);
  e += ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
       ",\"ts\":" + format::microsFromNanos(start) + ",\"dur\":" + format::microsFromNanos(dur) +
       ",\"args\":{\"src\":" + std::to_string(row.src_rank) +
       ",\"dst\":" + std::to_string(row.dst_rank) + ",\"bytes\":" + std::to_string(row.bytes) +
       ",\"side\":";
  format::appendJsonString(row.side, &e);
  e += ",\"phase\":";
  format::appendJsonString(row.phase, &e);
  e += ",\"step\":" + std::to_string(row.step) + ",\"chunk\":" + std::to_string(row.chunk);
  if (row.slot != storage::kNone) e += ",\"slot\":" + std::to_string(row.slot);
  if (row.channel >= 0) e += ",\"channel\":" + std::to_string(row.channel);
  if (row.collective_id != storage::kNone)
    e += ",\"collective_id\":" + std::to_string(row.collective_id);
  if (open) e += ",\"completed\":false";
  e += "}}";
  return e;
}

void EventWriter::transfer(const storage::TransferRow& row) {
  const bool send = row.side == "send";
  const int recorder = send ? row.src_rank : row.dst_rank;
  const int peer = send ? row.dst_rank : row.src_rank;
  if (recorder < 0) return;  // neither side known: nowhere to draw it
  auto [it, fresh] = link_tracks_.try_emplace({recorder, peer, !send});
  Track& track = it->second;
  if (fresh) {
    track.name = std::string(send ? "send " : "recv ") + rankLabel(row.src_rank) + "->" +
                 rankLabel(row.dst_rank);
    track.sort_index =
        kLinkSortBase + (int64_t{std::max(peer, -1)} + 1) * 128 + (send ? 0 : 64);
  }
  const bool open = row.end_ns == storage::kNone;
  const int64_t start = exportNs(recorder, row.start_ns);
  const int64_t dur = open ? 0 : std::max<int64_t>(0, sub(row.end_ns, row.start_ns));
  const int64_t tid = laneTid(recorder, track, track.lanes.assign(start, add(start, dur)));
  emit(transferEvent(row, recorder, tid, start, dur, open));
  ++counts_.transfers;
  // A link's counter counts one side of each message: the sender's, unless the sender was not
  // traced.
  if (send || !ranks_.contains(row.src_rank))
    counter(recorder, laneTid(recorder, track, 0), row.src_rank, row.dst_rank, start,
            open ? start - 1 : add(start, dur), row.bytes);
  flow(row, recorder, tid, start, dur, open);
}

void EventWriter::counter(int pid, int64_t tid, int src, int dst, int64_t start, int64_t end,
                          int64_t bytes) {
  auto [it, fresh] = link_counters_.try_emplace({src, dst}, bin_ns_);
  if (fresh) counter_track_[{src, dst}] = {pid, tid};
  it->second.add(start, end, bytes,
                 [&](int64_t at, int64_t rate) { counterPoint({src, dst}, at, rate); });
}

// One "C" event: Perfetto names the track "link 0->1 bytes/s (2 ms bins)" (name, then arg key),
// in the process of the rank that recorded the link's messages.
void EventWriter::counterPoint(std::pair<int, int> link, int64_t at, int64_t rate) {
  const auto [pid, tid] = counter_track_[link];
  emit("{\"ph\":\"C\",\"cat\":\"bandwidth\",\"name\":\"link " + rankLabel(link.first) + "->" +
       rankLabel(link.second) + "\",\"pid\":" + std::to_string(pid) +
       ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + format::microsFromNanos(at) +
       ",\"args\":{\"bytes/s (" + counterBinLabel(bin_ns_) + " bins)\":" + std::to_string(rate) +
       "}}");
  ++counts_.counter_points;
}

// An arrow from a send to its receive when both sides are here: "s" inside the send's slice,
// "f" (bound to the enclosing slice, "bp":"e") inside the receive's.
void EventWriter::flow(const storage::TransferRow& row, int recorder, int64_t tid, int64_t start,
                       int64_t dur, bool open) {
  if (!ranks_.contains(row.src_rank) || !ranks_.contains(row.dst_rank)) return;
  const bool recv = row.side != "send";
  MessageMatcher::Side side{recorder, tid, add(start, dur / 2), row.bytes, !open && dur >= 2};
  MessageMatcher::Side other;
  if (!matcher_.add(row.src_rank, row.dst_rank, row.slot, recv, side, &other)) return;
  const MessageMatcher::Side& s = recv ? other : side;
  const MessageMatcher::Side& r = recv ? side : other;
  if (!s.usable || !r.usable || s.bytes != r.bytes) return;
  const std::string id = std::to_string(++counts_.flows);
  emit("{\"ph\":\"s\",\"cat\":\"message\",\"name\":\"message\",\"id\":" + id +
       ",\"pid\":" + std::to_string(s.pid) + ",\"tid\":" + std::to_string(s.tid) +
       ",\"ts\":" + format::microsFromNanos(s.ts) + "}");
  emit("{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"message\",\"name\":\"message\",\"id\":" + id +
       ",\"pid\":" + std::to_string(r.pid) + ",\"tid\":" + std::to_string(r.tid) +
       ",\"ts\":" + format::microsFromNanos(r.ts) + "}");
}

void EventWriter::end() {
  for (auto& [link, bins] : link_counters_) {
    const std::pair<int, int> l = link;
    bins.finish([&](int64_t at, int64_t rate) { counterPoint(l, at, rate); });
  }
  counts_.counter_bin_ns = bin_ns_;
  out_ << "\n],\"otherData\":{\"generator\":\"ringside export --perfetto\",\"counter_bin_ns\":"
       << bin_ns_ << ",\"origin_unix_ns\":" << origin_ << ",\"flows\":" << counts_.flows
       << ",\"flows_stopped\":" << (matcher_.gaveUp() ? "true" : "false") << "}}\n";
}

}  // namespace

std::string counterBinLabel(int64_t ns) {
  if (ns % 1'000'000'000 == 0) return std::to_string(ns / 1'000'000'000) + " s";
  if (ns % 1'000'000 == 0) return std::to_string(ns / 1'000'000) + " ms";
  if (ns % 1000 == 0) return std::to_string(ns / 1000) + " us";
  return std::to_string(ns) + " ns";
}

bool writePerfettoTrace(storage::TraceReader& reader, std::ostream& out,
                        const PerfettoSettings& settings, PerfettoCounts* counts,
                        std::string* error) {
  EventWriter writer(reader, out);
  writer.begin();
  writer.processNames();
  if (!reader.forEachCollective(
          [&](const storage::CollectiveRow& row) {
            writer.collective(row);
            return static_cast<bool>(out);
          },
          error)) {
    return false;
  }
  writer.startTransfers(settings.counter_bin_ns > 0 ? settings.counter_bin_ns
                                                    : chooseBin(writer.callSpan()));
  if (!reader.forEachTransfer(
          [&](const storage::TransferRow& row) {
            writer.transfer(row);
            return static_cast<bool>(out);
          },
          error)) {
    return false;
  }
  writer.end();
  if (counts != nullptr) *counts = writer.counts();
  if (!out) {
    *error = "could not write the output";
    return false;
  }
  return true;
}

}  // namespace ringside::cli
