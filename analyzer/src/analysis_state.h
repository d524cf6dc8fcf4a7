// analyzer/analysis_state.h — what analyze()'s stages share (private to the analyzer).
//
// analyze() (analysis.cpp) is a short driver that calls the stages in order; each stage lives
// in its own analysis_*.cpp, reads what the earlier ones left in AnalysisState and adds its
// part, to the state or to the Analysis being built:
//   instances  pass 1 over collectives: instances, arrivals, rank spans; the time range;
//              (op, library) groups; later their skew, duration and bandwidth
//   transfers  pass 2 over transfers: per-link accumulators, channels, the fit's sums, and
//              the phase buffers (analysis_phases.cpp folds them into PhaseStats)
//   gpu        gpu_analysis.cpp: GPU times of collectives, per-GPU stats
//   hosts      analysis_hosts.cpp: each rank's host (before pass 2); later the link scopes,
//              per-host sums and the host x host traffic matrix
//   links      LinkStats, traffic matrix, channel traffic, existing and idle links
//   model      the alpha-beta model and each instance's expected time
//   ranks      RankStats and op buckets
//   steps      training steps: markers, stored or detected; per step and rank (analysis_steps)
//   findings   the rules of findings.h
// Nothing here outlives one analyze() call.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis_autopsy.h"
#include "call_table.h"
#include "interval_union.h"
#include "link_time.h"
#include "ringside/analyzer/analysis.h"
#include "ringside/collective/cost_model.h"
#include "ringside/collective/names.h"
#include "ringside/storage/records.h"
#include "trace_meta.h"

namespace ringside::storage {
class TraceReader;
}

namespace ringside::analyzer::detail {

// Phase names ("reduce-scatter", ...) interned: transfers carry them as text.
class PhaseNames {
 public:
  int id(std::string_view name);
  const std::string& name(int id) const { return names_[static_cast<size_t>(id)]; }

 private:
  std::map<std::string, int, std::less<>> ids_;
  std::vector<std::string> names_;
  int last_ = -1;  // consecutive transfers usually name the same phase
};

// Links are compared by the slow-link rule within one (op, library) group and phase. A real
// struct key: an earlier packed integer (group * 64 + phase) merged all phase ids above 62.
struct PhaseGroupKey {
  int group = -1;  // index into AnalysisState::groups
  int phase = -1;  // PhaseNames id; -1: the transfers named none
  bool operator==(const PhaseGroupKey& other) const = default;
  // By group, then phase; "no phase" after every named phase of its group.
  bool operator<(const PhaseGroupKey& other) const {
    auto order = [](int id) { return id < 0 ? INT32_MAX : id; };
    return std::make_pair(group, order(phase)) < std::make_pair(other.group, order(other.phase));
  }
};

struct GroupTraffic {
  int64_t bytes = 0;
  IntervalUnion busy;
  // The instance whose bytes it carries now, and where CallRates keeps that call's share
  // (analysis_call_rates.h); -1 none.
  int32_t call = -1;
  uint32_t call_piece = 0;
};

// A small list keyed by phase group, in order of first use (a link serves few groups).
template <typename V>
using ByPhaseGroup = std::vector<std::pair<PhaseGroupKey, V>>;
template <typename V>
V& entryFor(ByPhaseGroup<V>& list, PhaseGroupKey key) {
  for (auto& [k, value] : list) {
    if (k == key) return value;
  }
  list.emplace_back(key, V{});
  return list.back().second;
}
template <typename V>
const V* findEntry(const ByPhaseGroup<V>& list, PhaseGroupKey key) {
  for (const auto& [k, value] : list) {
    if (k == key) return &value;
  }
  return nullptr;
}

// A link's calls of one phase group as the slow-link rule judged them, one at a time
// (analysis_call_rates.h): those it shared with >= 2 other links, and the slow ones.
struct CallEvidence {
  int32_t judged = 0, slow = 0;              // calls
  int64_t judged_bytes = 0, slow_bytes = 0;  // the link's bytes in those calls
  int64_t largest_slow_bytes = 0;            // in its largest slow call
  // Slow in calls that hold >= half of its bytes, and would be without the largest of them
  // (the others >= a quarter): never on the evidence of one call, however large.
  bool slowInSeveralCalls() const {
    return slow_bytes >= judged_bytes - slow_bytes &&
           slow_bytes - largest_slow_bytes >= judged_bytes / 4 && slow >= 2;
  }
};

// One side (send or recv rows) of a directed link.
// The peak rate's slices: a link's peak_gbps is its highest rate over kPeakBins equal slices of
// the time range, whatever AnalysisOptions::bins the report or viewer shows (docs/metrics.md).
inline constexpr int kPeakBins = 100;

// The width of one of `bins` equal slices of [start_ns, end_ns], rounded up, at least 1 ns (in
// unsigned arithmetic: a damaged trace's times may span more than int64_t holds).
inline int64_t binWidthNs(int64_t start_ns, int64_t end_ns, int bins) {
  const uint64_t span = static_cast<uint64_t>(end_ns) - static_cast<uint64_t>(start_ns);
  const uint64_t n = static_cast<uint64_t>(std::max(1, bins));
  const uint64_t w = span / n + (span % n != 0 ? 1 : 0);
  return static_cast<int64_t>(std::clamp<uint64_t>(w, 1, static_cast<uint64_t>(INT64_MAX)));
}
inline int64_t peakBinNs(const Analysis& a) { return binWidthNs(a.start_ns, a.end_ns, kPeakBins); }

struct SideAcc {
  int64_t messages = 0, bytes = 0;
  IntervalUnion busy;
  std::vector<double> bins;        // bytes per time bin
  // Bytes per kPeakBins-th of the time range, for the peak rate (one definition whatever the
  // display bins; empty when AnalysisOptions::bins is kPeakBins: then `bins` serves).
  std::vector<double> peak_bins;
  std::vector<int32_t> instances;  // collective instances it carried bytes for
  int32_t last_instance = -1;      // instances.back() without touching the vector's memory
  ByPhaseGroup<GroupTraffic> by_group;
  GroupTraffic& group(PhaseGroupKey key) { return entryFor(by_group, key); }
  const GroupTraffic* findGroup(PhaseGroupKey key) const { return findEntry(by_group, key); }
};

struct LinkAcc {
  int src = -1, dst = -1;
  int32_t host_pair = -1;  // index into AnalysisState::host_pairs; -1: a rank's host unknown
  SideAcc send, recv;
  ByPhaseGroup<CallEvidence> calls;  // the slow-link rule's per-call verdicts
};

// The busy time of all rank links from one host to another (fed in order of start, as links).
struct HostPairAcc {
  int src_host = -1, dst_host = -1;
  IntervalUnion send_busy, recv_busy;
};

struct RankAcc {
  TimeSpan events;     // first to last event it recorded
  IntervalUnion comm;  // inside collectives
};

// Collectives of one (op, library).
struct OpGroup {
  std::string op, library;
  std::set<int> ranks;  // ranks that recorded any of them
};

// The fastest completed sends per message size, for the alpha-beta fit: a send's time includes
// whatever its peer made it wait, so the model is fitted to the fastest few of each size (what the
// link itself costs), not to all sends. Memory: at most kMaxSizes sizes x kKept durations.
struct FitPoints {
  static constexpr size_t kMaxSizes = 4096;  // further sizes are not kept (the first ones fit)
  static constexpr size_t kKept = 4;         // the fastest sends kept per size
  struct Size {
    int64_t sends = 0;
    std::vector<int64_t> fastest;  // ascending, at most kKept
  };
  std::map<int64_t, Size> by_bytes;
  int64_t sends = 0;
  void add(int64_t bytes, int64_t ns) {
    ++sends;
    if (last_ == nullptr || last_bytes_ != bytes) {  // consecutive sends are often of one size
      auto it = by_bytes.find(bytes);
      if (it == by_bytes.end()) {
        if (by_bytes.size() >= kMaxSizes) return;
        it = by_bytes.emplace(bytes, Size{}).first;
      }
      last_bytes_ = bytes;
      last_ = &it->second;  // a map's elements never move
    }
    Size& size = *last_;
    ++size.sends;
    if (size.fastest.size() == kKept && ns >= size.fastest.back()) return;
    size.fastest.insert(std::upper_bound(size.fastest.begin(), size.fastest.end(), ns), ns);
    if (size.fastest.size() > kKept) size.fastest.pop_back();
  }

 private:
  int64_t last_bytes_ = 0;
  Size* last_ = nullptr;
};

// (src, dst, channel) -> bytes, messages.
using ChannelMap = std::map<std::tuple<int, int, int>, std::pair<int64_t, int64_t>>;

// World sizes up to this get the dense per-rank structures (the traffic matrix, the ranks
// without a file listed as existing links); larger worlds list only what the trace holds.
inline constexpr int kMaxDenseRanks = 1024;
// Without a topology, a host's ranks are taken as a full mesh (idle links) up to this many ranks
// a host; past it only the links that carried bytes exist (docs/analyzer.md, idle links).
inline constexpr int kMaxMeshRanksPerHost = 64;

// Rows whose rank ids the trace does not support: skipped, and counted for ONE warning that
// names the first of them.
struct SkippedRows {
  std::string first;  // "transfers row 12: dst_rank 4096"
  int64_t count = 0;
  void add(const char* table, int64_t id, const char* column, int64_t value) {
    if (count++ == 0) {
      first = std::string(table) + " row " + std::to_string(id) + ": " + column + " " +
              std::to_string(value);
    }
  }
};

struct AnalysisState {
  AnalysisState(storage::TraceReader& reader, const AnalysisOptions& options, Analysis* out,
                std::string* error);

  storage::TraceReader& reader;
  const AnalysisOptions& options;
  Analysis* out;
  std::string* error;
  const int bins;                                // options.bins, at least 1
  const int64_t window_start_ns, window_end_ns;  // options' window
  std::vector<storage::RankInfo> infos;
  TraceMeta meta;

  // Rank ids in collective and transfer rows must be below this (-1 = unknown peer, allowed in
  // transfers): the world size when the trace states one, else a bound from the rank rows.
  int rank_limit = 0;
  SkippedRows skipped_collectives, skipped_transfers;
  bool rankOk(int64_t rank) const { return rank >= 0 && rank < rank_limit; }
  // Rows whose times no clock gives (a damaged trace): skipped, so that differences of times
  // (durations, offsets in the time range) cannot overflow int64_t. An end before the start
  // (kNone: never completed) is allowed; the code that reads it checks end >= start.
  static constexpr int64_t kMaxTimeNs = int64_t{1} << 62;  // year 2116 in Unix-epoch ns
  SkippedRows skipped_times;
  bool timesOk(int64_t start, int64_t end) const {
    return start >= 0 && start <= kMaxTimeNs && end <= kMaxTimeNs;
  }
  // Byte counts no call or message can have (negative, or above 256 TiB): skipped, so that
  // sums, size buckets and rates stay in range.
  static constexpr int64_t kMaxBytes = int64_t{1} << 48;
  SkippedRows skipped_bytes;
  static bool bytesOk(int64_t bytes) { return bytes >= 0 && bytes <= kMaxBytes; }

  // instances
  CallTable arrivals;  // every call row: per instance (arrivals[i]) and per rank
  RowIndex instance_of_row{arrivals};
  CallEntries entries{arrivals};    // each rank's entry into each instance (link_time.h)
  std::map<int, RankAcc> rank_acc;  // every rank with a file or an event
  int max_rank = -1;                // highest rank in a collective or link
  std::vector<OpGroup> groups;
  std::vector<int32_t> group_of;  // per instance: index into groups
  AutopsyState autopsy;           // the calls' tails (pass 1) and unfinished calls' messages (pass 2)

  // hosts
  std::vector<std::pair<int, int>> host_of_rank;  // (rank, index into out->hosts), by rank
  std::vector<HostPairAcc> host_pairs;
  std::map<std::pair<int, int>, int32_t> host_pair_index;  // (src host, dst host) -> host_pairs
  int hostOf(int rank) const;                             // -1: unknown
  int32_t hostPair(int src, int dst);                     // -1: a host unknown

  // transfers
  PhaseNames phase_names;
  std::vector<LinkAcc> links;
  ChannelMap channel_send, channel_recv;
  FitPoints fit;

  // links
  int traffic_ranks = 0;                       // rows (and columns) of Analysis::traffic
  std::vector<double> slowest_link_gbps;       // per instance, from the topology; -1 unknown
  std::vector<double> slowest_link_latency_s;  // per instance, from the topology; -1 unknown
  std::vector<std::set<int>> groups_of_link;   // per link: groups it carried bytes for

  // model
  bool topology_model = false;
  double alpha_ns = -1, beta_ns_per_byte = -1;  // fitted model
  // Per instance: the model's latency terms / its expected time (0..1); -1 without a model.
  // >= 0.5: latency-bound, else bandwidth-bound.
  std::vector<float> latency_share;

  void progress(double fraction) const {
    if (options.progress) options.progress(fraction);
  }
};

// The stages, in the order analyze() calls them. A false return carries *error.
void readMeta(AnalysisState& s);           // analysis_instances.cpp
void findHosts(AnalysisState& s);          // analysis_hosts.cpp: hosts, clock model
bool readInstances(AnalysisState& s);      // analysis_instances.cpp: pass 1
bool findTimeRange(AnalysisState& s);      // analysis_instances.cpp
void groupInstances(AnalysisState& s);     // analysis_instances.cpp
bool readTransfers(AnalysisState& s);      // analysis_transfers.cpp: pass 2
void addChannelTraffic(AnalysisState& s);  // analysis_links.cpp
bool readGpu(AnalysisState& s);            // analysis_instances.cpp, with gpu_analysis.cpp
void timeInstances(AnalysisState& s);      // analysis_instances.cpp: skew, bandwidth
void buildLinks(AnalysisState& s);         // analysis_links.cpp
void findIdleLinks(AnalysisState& s);      // analysis_links.cpp
void fitModel(AnalysisState& s);           // analysis_model.cpp
void buildRanks(AnalysisState& s);         // analysis_ranks.cpp
void buildOpBuckets(AnalysisState& s);     // analysis_ranks.cpp
void buildHosts(AnalysisState& s);         // analysis_hosts.cpp: sums, host traffic
bool findSteps(AnalysisState& s);          // analysis_steps.cpp: training steps, per step and rank
void assignBlame(AnalysisState& s);        // analysis_blame.cpp: the waiting each rank caused
void addFindings(AnalysisState& s);        // analysis_findings.cpp
// analysis_algorithm.cpp: the algorithm and bucketing rules, and the share of the collectives'
// time that is bandwidth-bound under the model (-1 without one), for the idle-links rule.
void algorithmFindings(const AnalysisState& s, std::vector<Finding>* findings);
// "confirm with an A/B run: ringside record ... --allreduce NAME ...; then ringside diff ...".
std::string abCommand(const AnalysisState& s, const std::string& name, int ranks);
bool benchTrace(const AnalysisState& s);  // analysis_algorithm.cpp: written by `ringside bench`
// analysis_whatif.cpp: Analysis::what_if, before the findings (docs/whatif.md).
void buildWhatIf(AnalysisState& s);
void bucketingFindings(const AnalysisState& s, std::vector<Finding>* findings);
double bandwidthBoundShare(const AnalysisState& s);
void warnSkippedRows(AnalysisState& s);    // analysis_instances.cpp

// The alpha-beta model's times of ringside's own all-reduces are collective/cost_model.h's
// (ringAllreduceTime, treeAllreduceTime, multipathAllreduceTime), the model bench prints too.
// The tree's price depends on the links under a rank's tree edges (docs/whatif.md), which only
// a topology file says: kPerPeer where it puts every one of the ranks on a node of its own with a
// link of its own to every other rank's node (a mesh of cables, as the emulated square: validated
// within 4 %), kSharedNic otherwise: no topology, ranks sharing a host, or hosts without a
// direct link to each other (one NIC a host to a switch), as `ringside bench` prices it (matched
// on one host: tree/ring 1.14-1.58 measured, 1.35-1.59 predicted). Remembers its last answer:
// the rules ask once per all-reduce, nearly always for the same rank count.
class TreeLinksOf {
 public:
  explicit TreeLinksOf(const Topology* topology) : topology_(topology) {}
  collective::TreeLinks operator()(int ranks) const;

 private:
  const Topology* topology_;
  mutable int ranks_ = -1;
  mutable collective::TreeLinks links_ = collective::TreeLinks::kSharedNic;
};
// The late-ranks and clock-uncertainty rules (analysis_late_ranks.cpp), for addFindings.
// late-ranks when one rank is to blame, else `waiting` when the ranks wait a large share of
// their collective time for whichever rank is last.
void lateRankFindings(const AnalysisState& s, std::vector<Finding>* findings);
// The culprit of blame: the rank that caused most of the waiting (>= 50% of it and >= 1.5/ranks),
// -1 when no rank did; *caused its caused wait, *total all ranks'. late-ranks names it and the CPU
// rules speak of it.
int blameCulprit(const Analysis& a, int64_t* caused, int64_t* total);
// analysis_cpu.cpp: Analysis::rank_cpu and host_cpu from the CPU samples (after the steps), and
// the rules oversubscribed, computes-more and descheduled.
bool readCpu(AnalysisState& s);
void cpuFindings(const AnalysisState& s, std::vector<Finding>* findings);
void lateRankFinding(const AnalysisState& s, std::vector<Finding>* findings);

// Shared by stages.
// analysis_ranks.cpp: the length of the union of one rank's waiting in `calls` (those whose
// instance `only` marks, all when nullptr); -1 when it waited in none.
int64_t waitedInCalls(const Analysis& a, const CallTable::Rows& calls,
                      const std::vector<char>* only,
                      std::vector<std::pair<int64_t, int64_t>>* scratch);
bool glooRingAllreduce(const CollectiveInstance& c);
// The algorithm an all-reduce instance ran: ringside's own say so by library, Gloo's default
// all-reduce is a ring, NCCL names its algorithm when its profiler plugin saw the call (any
// case). kDefault when it cannot be told, or the instance is no all-reduce.
collective::Algorithm allreduceAlgorithm(const CollectiveInstance& c);
std::string linkName(int src, int dst);  // "0->1"
std::string idleLinkName(const Analysis& a, const IdleLink& l);  // "0->1" or "hostA->hostB"

// Nearest-rank percentile of a sorted vector.
template <typename T>
T percentile(const std::vector<T>& sorted, double p) {
  if (sorted.empty()) return T{};
  size_t k = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  if (k == 0) k = 1;
  return sorted[std::min(sorted.size(), k) - 1];
}

}  // namespace ringside::analyzer::detail
