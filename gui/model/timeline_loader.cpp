#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>
#ifdef __GLIBC__
#include <malloc.h>  // malloc_trim
#endif

#include "ringside/gui/timeline_model.h"
#include "ringside/storage/trace_reader.h"
#include "timeline_build.h"

// loadTimeline in its stages: open the file unchecked, start the analysis on its own thread
// and reader (it runs quick_check first), read the calls meanwhile, hand an early timeline of
// the calls over, then build the full model and the links each collective used.
namespace ringside::gui {
namespace {

// The transfer rows the loader keeps for the link lanes' messages (Lane::messages): per directed
// link, its send rows and its recv rows, 24 bytes a row.
struct LinkRows {
  std::vector<LinkMessage> send, recv;
};
class MessageCollector {
 public:
  void add(int src, int dst, bool send, const LinkMessage& m) {
    const uint64_t key =
        (static_cast<uint64_t>(static_cast<uint32_t>(src)) << 32) | static_cast<uint32_t>(dst);
    if (last_ == nullptr || key != last_key_) {  // rows come in runs of one link
      last_ = &links_[key];
      last_key_ = key;
    }
    // Grown by a quarter, not doubled: the messages are held through the rest of the analysis,
    // where the load peaks (doubling held 200 MB for 120 MB of messages at 4,096 ranks).
    std::vector<LinkMessage>& rows = send ? last_->send : last_->recv;
    if (rows.size() == rows.capacity()) rows.reserve(rows.size() + rows.size() / 4 + 16);
    rows.push_back(m);
  }
  // Hands each link lane its messages: the send rows, or the recv rows where the link has no
  // send row (the side its counter counts, analysis_links.cpp), then the finer bins.
  void attach(const LoadOptions& options, TimelineModel* out) {
    int links = 0;
    for (const Lane& l : out->lanes) links += l.kind == LaneKind::kLink ? 1 : 0;
    if (links == 0) return;
    const int64_t per_link = options.fine_bins_budget / links;
    const int fine_bins = static_cast<int>(std::clamp<int64_t>(per_link, 0, 65536));
    for (Lane& l : out->lanes) {
      if (l.kind != LaneKind::kLink || l.src < 0 || l.dst < 0) continue;
      auto it = links_.find((static_cast<uint64_t>(static_cast<uint32_t>(l.src)) << 32) |
                            static_cast<uint32_t>(l.dst));
      if (it == links_.end()) continue;
      l.messages = std::move(it->second.send.empty() ? it->second.recv : it->second.send);
      links_.erase(it);
      l.finishMessages(fine_bins);
    }
    links_.clear();
  }
  // Gives back what the links' vectors hold beyond their rows (a vector grown one row at a time
  // holds up to twice its rows), before the final model is built next to them.
  void shrink() {
    for (auto& [key, rows] : links_) {
      rows.send.shrink_to_fit();
      rows.recv.shrink_to_fit();
    }
  }

 private:
  std::unordered_map<uint64_t, LinkRows> links_;
  uint64_t last_key_ = 0;
  LinkRows* last_ = nullptr;
};

// One transfer row as the links of each collective need it (48 bytes a row while loading).
struct RawLink {
  int32_t instance;
  int16_t src, dst;
  bool send;
  int64_t bytes;
};

// The analysis on its own thread and its own reader (opened with quick_check, which reads
// the whole file), started at construction. Every transfer row the analysis reads is handed to
// the loader (AnalysisOptions::on_transfer), so the transfers are read once.
class AnalysisRun {
 public:
  AnalysisRun(const std::string& path, const LoadOptions& options, int64_t transfer_rows,
              bool read_links, int bins)
      : path_(path),
        options_(options),
        bins_(bins),
        transfer_rows_(transfer_rows),
        read_links_(read_links),
        check_(check_promise_.get_future()) {
    thread_ = std::thread([this] { run(); });
  }
  ~AnalysisRun() { join(); }
  AnalysisRun(const AnalysisRun&) = delete;
  AnalysisRun& operator=(const AnalysisRun&) = delete;

  // quick_check's verdict (waits for it); on false, error() says why.
  bool checked() { return check_.get(); }
  // Waits for the analysis; false with error() when it failed.
  bool finish() {
    join();
    return ok_;
  }
  double done() const { return done_.load(); }
  const std::string& error() const { return error_; }
  analyzer::Analysis& analysis() { return analysis_; }
  std::vector<RawLink>& rawLinks() { return raw_links_; }
  MessageCollector& messages() { return messages_; }
  detail::PhaseRows& phases() { return phases_; }

 private:
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  void run() {
    auto reader = storage::TraceReader::open(path_, &error_);  // with quick_check
    check_promise_.set_value(reader != nullptr);
    if (!reader) return;
    analyzer::AnalysisOptions aopt;
    aopt.bins = bins_;
    aopt.topology = options_.topology;
    aopt.progress = [this](double f) { done_ = f; };
    aopt.on_phase = [this](const analyzer::PhaseStats& p, int32_t instance) {
      phases_.records.push_back(detail::phaseRecord(p, instance, phases_.names.get(p.phase)));
    };
    if (read_links_) {
      try {
        raw_links_.reserve(static_cast<size_t>(std::max<int64_t>(0, transfer_rows_)));
      } catch (const std::bad_alloc&) {
      }
      aopt.on_transfer = [this](const storage::TransferRow& row, int32_t instance) {
        keep(row, instance);
      };
    }
    try {
      ok_ = analyzer::analyze(*reader, aopt, &analysis_, &error_);
    } catch (const std::bad_alloc&) {
      ok_ = false;
      error_ = path_ + ": out of memory while analysing";
    }
    done_ = 1.0;
  }
  // A transfer row: a message of its link's lane, and bytes of its instance's links.
  void keep(const storage::TransferRow& row, int32_t instance) {
    if (row.src_rank < 0 || row.dst_rank < 0) return;
    const bool send = row.side == "send";
    // The analysis' own rule: a row without an end is an instant at its start.
    const int64_t end =
        row.end_ns != storage::kNone && row.end_ns >= row.start_ns ? row.end_ns : row.start_ns;
    messages_.add(row.src_rank, row.dst_rank, send, {row.start_ns, end, row.bytes});
    if (instance < 0 || row.src_rank >= 4096 || row.dst_rank >= 4096) return;
    raw_links_.push_back({instance, static_cast<int16_t>(row.src_rank),
                          static_cast<int16_t>(row.dst_rank), send, row.bytes});
  }

  const std::string path_;
  const LoadOptions& options_;
  const int bins_;
  const int64_t transfer_rows_;
  const bool read_links_;
  std::promise<bool> check_promise_;
  std::future<bool> check_;
  std::atomic<double> done_{0};
  analyzer::Analysis analysis_;
  std::string error_;
  bool ok_ = false;
  std::vector<RawLink> raw_links_;
  MessageCollector messages_;
  detail::PhaseRows phases_;  // the analysis' phase rows (AnalysisOptions::on_phase)
  std::thread thread_;  // last: starts once every member above exists
};

// Every call of every rank, interned, rank by rank as the reader delivers them: the one copy
// the early and the full model build their rank lanes from (LaneSources::calls).
struct CallRows {
  detail::Interner comms, ops;
  std::shared_ptr<std::vector<detail::CompactCall>> calls = std::make_shared<std::vector<detail::CompactCall>>();
};

bool readCalls(storage::TraceReader& reader, const std::function<void(double)>& rows_done,
               CallRows* out, std::string* error) {
  const int64_t total_calls = std::max<int64_t>(1, reader.collectiveCount());
  std::vector<detail::CompactCall>& calls = *out->calls;
  calls.reserve(static_cast<size_t>(total_calls));
  return reader.forEachCollectiveTiming(
      [&](const storage::CollectiveRow& row) {
        calls.push_back({row.rank, out->comms.get(row.comm), out->ops.get(row.op), row.status != 0,
                         row.seq, row.start_ns, row.end_ns});
        if ((calls.size() & 0xFFFF) == 0) {
          rows_done(static_cast<double>(calls.size()) / static_cast<double>(total_calls));
        }
        return true;
      },
      error);
}

// The timeline of the calls alone, before the whole-file check and the analysis finish:
// reading an unchecked file is safe (SQLite's defensive mode returns errors, never undefined
// behaviour, on a damaged file), and a file the check then refuses replaces this early
// timeline with the error (the caller drops it on failure).
TimelineModel earlyTimeline(const std::string& path, storage::TraceReader& reader,
                            const CallRows& rows, bool lazy) {
  analyzer::Analysis calls_only;
  for (const storage::RankInfo& info : reader.ranks())
    calls_only.ranks_present.push_back(info.rank);
  std::sort(calls_only.ranks_present.begin(), calls_only.ranks_present.end());
  calls_only.ranks_present.erase(
      std::unique(calls_only.ranks_present.begin(), calls_only.ranks_present.end()),
      calls_only.ranks_present.end());
  TimelineModel early;
  early.path = path;
  detail::buildFromCompact(std::move(calls_only), rows.comms.names(), rows.ops.names(), rows.calls,
                           {}, lazy, &early);
  early.analysed = false;
  return early;
}

// Per instance and link: the send side's bytes, or the recv side's where no send was recorded.
// The rows are bucketed by instance (counting sort), then each instance's few links merged.
void collectiveLinks(std::vector<RawLink> raw_links, size_t n, TimelineModel* out) {
  std::vector<int64_t> begin(n + 1, 0);
  for (const RawLink& r : raw_links) {
    if (static_cast<size_t>(r.instance) < n) ++begin[static_cast<size_t>(r.instance) + 1];
  }
  for (size_t c = 0; c < n; ++c) begin[c + 1] += begin[c];
  std::vector<RawLink> by_instance(static_cast<size_t>(begin[n]));
  {
    std::vector<int64_t> at(begin.begin(), begin.end() - 1);
    for (const RawLink& r : raw_links) {
      if (static_cast<size_t>(r.instance) < n)
        by_instance[static_cast<size_t>(at[static_cast<size_t>(r.instance)]++)] = r;
    }
  }
  raw_links = {};
  out->links_begin.assign(n + 1, 0);
  // Sorted by link within each instance, then counted, so the links are allocated once (grown a
  // row at a time they took 300 MB for 120 MB of links at 4,096 ranks x 10 M events).
  size_t links = 0;
  for (size_t c = 0; c < n; ++c) {
    auto first = by_instance.begin() + begin[c], last = by_instance.begin() + begin[c + 1];
    std::stable_sort(first, last, [](const RawLink& x, const RawLink& y) {
      return std::pair(x.src, x.dst) < std::pair(y.src, y.dst);
    });
    for (auto i = first; i != last; ++i) links += i == first || i->src != (i - 1)->src || i->dst != (i - 1)->dst;
  }
  out->collective_links.reserve(links);
  for (size_t c = 0; c < n; ++c) {
    auto first = by_instance.begin() + begin[c], last = by_instance.begin() + begin[c + 1];
    for (auto i = first; i != last;) {
      int64_t send_bytes = 0, send_messages = 0, recv_bytes = 0, recv_messages = 0;
      auto j = i;
      for (; j != last && j->src == i->src && j->dst == i->dst; ++j) {
        (j->send ? send_bytes : recv_bytes) += j->bytes;
        ++(j->send ? send_messages : recv_messages);
      }
      CollectiveLink l;
      l.src = i->src;
      l.dst = i->dst;
      l.bytes = send_messages > 0 ? send_bytes : recv_bytes;
      l.messages = send_messages > 0 ? send_messages : recv_messages;
      out->collective_links.push_back(l);
      i = j;
    }
    out->links_begin[c + 1] = static_cast<int64_t>(out->collective_links.size());
  }
}

// The analysis' bins a link: LoadOptions::counter_bins, fewer past link_bins_budget.
int linkBins(const LoadOptions& options, size_t ranks) {
  const int bins = std::max(1, options.counter_bins);
  const int64_t links = 2 * static_cast<int64_t>(std::max<size_t>(1, ranks));
  if (options.link_bins_budget <= 0 || links * bins <= options.link_bins_budget) return bins;
  return static_cast<int>(std::max<int64_t>(std::min(bins, 256), options.link_bins_budget / links));
}

// Hands the pages of freed memory back to the system. The analysis thread frees its working
// data (per-call arrivals, entry times, step unions: hundreds of MB at 4,096 ranks) in its own
// malloc arena, which keeps them resident unless trimmed; the final model is then built on this
// thread, beside them.
void returnFreedMemory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

}  // namespace

bool loadTimeline(const std::string& path, const LoadOptions& options, TimelineModel* out,
                  std::string* error) {
  // quick_check reads the whole file: it runs once, on the analysis thread's reader, while this
  // thread already reads the calls; nothing is handed out before it passed.
  storage::TraceOpenOptions unchecked;
  unchecked.quick_check = false;
  auto reader = storage::TraceReader::open(path, unchecked, error);
  if (!reader) {
    std::string checked_error;  // the same verdict a checked open gives (quick_check's first)
    if (!storage::TraceReader::open(path, &checked_error) && error != nullptr)
      *error = checked_error;
    return false;
  }
  // The analysis and the viewer's own pass over the rows run side by side, each on its own
  // reader (one TraceReader per thread).
  const int64_t transfer_rows = reader->transferCount();
  const bool read_links = options.collective_links && transfer_rows <= options.max_link_transfers;
  AnalysisRun analysis(path, options, transfer_rows, read_links, linkBins(options, reader->ranks().size()));
  std::atomic<double> rows_done{0};
  auto progress = [&] {
    if (options.progress) options.progress(0.6 * analysis.done() + 0.4 * rows_done.load());
  };
  progress();
  CallRows rows;
  const bool ok = readCalls(
      *reader,
      [&](double f) {
        rows_done = f;
        progress();
      },
      &rows, error);
  if (ok && options.on_timeline) options.on_timeline(earlyTimeline(path, *reader, rows, options.lazy_lanes));
  // quick_check's verdict comes first (a damaged file fails as a checked open would).
  if (!analysis.checked()) {
    if (error != nullptr) *error = analysis.error();
    return false;
  }
  if (!ok) return false;
  rows_done = 1.0;
  progress();
  if (!analysis.finish()) {
    if (error != nullptr) *error = analysis.error();
    return false;
  }
  // The final model, one part at a time so that what each part reads is freed before the next
  // part's memory is taken (4,096 ranks x 10 M events: the peak of the whole load is here).
  analysis.messages().shrink();
  out->collective_links.clear();
  out->links_begin.clear();
  if (read_links) {
    collectiveLinks(std::move(analysis.rawLinks()), analysis.analysis().collectives.size(), out);
  }
  returnFreedMemory();
  out->path = path;
  const std::vector<std::string> comm_names =
      detail::withAnalysisComms(rows.comms.names(), analysis.analysis());
  // The calls stay once, in the lanes' sources (shared with the early model), not twice.
  detail::buildFromCompact(std::move(analysis.analysis()), comm_names, rows.ops.names(),
                           std::move(rows.calls), std::move(analysis.phases()), options.lazy_lanes, out);
  rows = {};
  analysis.messages().attach(options, out);
  returnFreedMemory();
  if (options.progress) options.progress(1.0);
  return true;
}

}  // namespace ringside::gui
