#include "export/export_perfetto.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "ringside/format/json.h"
#include "ringside/format/units.h"
#include "ringside/storage/records.h"
#include "ringside/storage/trace_reader.h"

namespace ringside::cli {
namespace {

// Link tracks get thread ids far above any OS thread id (Linux caps pid_max at 2^22).
constexpr int64_t kLinkTidBase = int64_t{1} << 30;

class EventWriter {
 public:
  EventWriter(storage::TraceReader& reader, std::ostream& out) : out_(out) {
    int64_t origin = std::numeric_limits<int64_t>::max();
    for (const storage::RankInfo& info : reader.ranks()) {
      ranks_[info.rank] = info;
      origin = std::min(origin, info.start_unix_ns);
    }
    origin_unix_ns_ = ranks_.empty() ? 0 : origin;
  }

  // Saturating: a damaged trace's times (INT64_MIN, INT64_MAX) must not overflow.
  static int64_t add(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
  }
  static int64_t sub(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_sub_overflow(a, b, &r) ? (b < 0 ? INT64_MAX : INT64_MIN) : r;
  }

  // Nanoseconds since the trace origin, on wall-clock time.
  int64_t wallNs(int rank, int64_t t) const {
    auto it = ranks_.find(rank);
    if (it == ranks_.end()) return t;
    return sub(add(sub(t, it->second.start_ns), it->second.start_unix_ns), origin_unix_ns_);
  }

  void begin() { out_ << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":["; }

  void processNames() {
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
  void nameTrack(int pid, int64_t tid, const std::string& name, int64_t sort_index) {
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

  void collective(const storage::CollectiveRow& row) {
    nameTrack(row.rank, row.tid, "collectives (thread " + std::to_string(row.tid) + ")", 0);
    bool open = row.end_ns == storage::kNone;
    int64_t start = wallNs(row.rank, row.start_ns);
    int64_t dur = open ? 0 : std::max<int64_t>(0, sub(row.end_ns, row.start_ns));
    std::string e = "{\"ph\":\"X\",\"cat\":\"collective\",\"name\":";
    format::appendJsonString(open ? std::string(row.op) + " (never returned)" : std::string(row.op),
                             &e);
    e += ",\"pid\":" + std::to_string(row.rank) + ",\"tid\":" + std::to_string(row.tid) +
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
    e += ",\"count\":" + std::to_string(row.count) + ",\"status\":" + std::to_string(row.status);
    if (row.root >= 0) e += ",\"root\":" + std::to_string(row.root);
    e += "}}";
    emit(e);
  }

  void transfer(const storage::TransferRow& row) {
    bool send = row.side == "send";
    int recorder = send ? row.src_rank : row.dst_rank;
    int peer = send ? row.dst_rank : row.src_rank;
    if (recorder < 0) return;  // neither side known: nowhere to draw it
    int64_t tid = kLinkTidBase + int64_t{std::max(peer, 0)} * 2 + (send ? 0 : 1);
    std::string track = "link " + std::to_string(row.src_rank) + "->" +
                        std::to_string(row.dst_rank) + (send ? " send" : " recv");
    nameTrack(recorder, tid, track, 1 + tid - kLinkTidBase);
    bool open = row.end_ns == storage::kNone;
    int64_t start = wallNs(recorder, row.start_ns);
    int64_t dur = open ? 0 : std::max<int64_t>(0, sub(row.end_ns, row.start_ns));
    std::string name = row.phase.empty() ? std::string("transfer") : std::string(row.phase);
    if (row.step >= 0) name += " step " + std::to_string(row.step);
    std::string e = "{\"ph\":\"X\",\"cat\":\"transfer\",\"name\":";
    format::appendJsonString(name, &e);
    e += ",\"pid\":" + std::to_string(recorder) + ",\"tid\":" + std::to_string(tid) +
         ",\"ts\":" + format::microsFromNanos(start) + ",\"dur\":" + format::microsFromNanos(dur) +
         ",\"args\":{\"src\":" + std::to_string(row.src_rank) +
         ",\"dst\":" + std::to_string(row.dst_rank) + ",\"bytes\":" + std::to_string(row.bytes) +
         ",\"side\":";
    format::appendJsonString(row.side, &e);
    e += ",\"phase\":";
    format::appendJsonString(row.phase, &e);
    e += ",\"step\":" + std::to_string(row.step) + ",\"chunk\":" + std::to_string(row.chunk);
    if (row.collective_id != storage::kNone)
      e += ",\"collective_id\":" + std::to_string(row.collective_id);
    if (open) e += ",\"completed\":false";
    e += "}}";
    emit(e);
  }

  void end() { out_ << "\n]}\n"; }

 private:
  void emit(const std::string& event) {
    out_ << (first_ ? "\n" : ",\n") << event;
    first_ = false;
  }

  std::ostream& out_;
  std::map<int, storage::RankInfo> ranks_;
  int64_t origin_unix_ns_ = 0;
  std::set<std::pair<int, int64_t>> named_;
  bool first_ = true;
};

}  // namespace

bool writePerfettoTrace(storage::TraceReader& reader, std::ostream& out, PerfettoCounts* counts,
                        std::string* error) {
  EventWriter writer(reader, out);
  PerfettoCounts local;
  writer.begin();
  writer.processNames();
  if (!reader.forEachCollective(
          [&](const storage::CollectiveRow& row) {
            writer.collective(row);
            ++local.collectives;
            return static_cast<bool>(out);
          },
          error)) {
    return false;
  }
  if (!reader.forEachTransfer(
          [&](const storage::TransferRow& row) {
            writer.transfer(row);
            ++local.transfers;
            return static_cast<bool>(out);
          },
          error)) {
    return false;
  }
  writer.end();
  if (counts != nullptr) *counts = local;
  if (!out) {
    *error = "could not write the output";
    return false;
  }
  return true;
}

}  // namespace ringside::cli
