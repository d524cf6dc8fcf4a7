// collector/src/writer.h — the background writer thread, private to collector/.
//
// It drains every thread's ring, pairs each transfer's post with its completion
// (TransferPairing), adds messages up per link where the detail level says so (LinkTotals), and
// writes rows to the rank file in batches; it is the only thread that touches the file. Its work
// is in three files: writer.cpp (the loop: open, drain, commit; calls and transfers),
// writer_window.cpp (the recording window and the meta that describes it), writer_gpu.cpp (GPU
// rows, activity records and communicators).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "internal.h"
#include "link_totals.h"
#include "ringside/collector/collector.h"
#include "ringside/storage/rank_writer.h"
#include "transfer_pairing.h"

namespace ringside::collector::detail {

using storage::kNone;

inline constexpr int64_t kAnchorEveryNs = 1000000000;  // a wall-clock anchor about once a second
// The trigger file's stat, at most every 100 ms.
inline constexpr int64_t kTriggerPollNs = 100 * 1000 * 1000;
// After the window closed, completions still pass this long once the last kept post was paired
// (calls that started inside the window finish there).
inline constexpr int64_t kDonesGraceNs = 1000 * 1000 * 1000;

class Writer {
 public:
  void run();

 private:
  bool open();
  void drain(bool final_pass);
  void consume(const Event& e, int32_t tid);
  void writeTransfer(const Event& post, int32_t peer, int64_t end_ns);
  // Writes the per-link totals quiet since before_ns (LinkTotals::flush).
  void flushLinkTotals(int64_t before_ns);
  void pollWindow();
  void closeDones();
  bool writeWindowMeta();
  void writeCollectiveGpu(const Event& e);
  void drainGpu();
  void sampleCpu(bool force);
  void writeCpuSample(const storage::CpuSampleRow& row);
  bool ensureBatch();
  void commit(bool final_flush, int signal);
  void fail(const char* what);
  int32_t commRank(int16_t comm) const;

  Global& g_ = global();
  std::unique_ptr<storage::RankWriter> out_;
  std::string path_;
  bool in_batch_ = false;
  bool failed_ = false;
  uint64_t identity_gen_ = 0;
  Identity identity_;
  int64_t last_commit_ns_ = 0;
  int64_t last_cpu_sample_ns_ = 0;
  int64_t last_anchor_ns_ = 0;  // 0: none taken yet
  uint64_t unmatched_done_ = 0;
  std::string boot_id_;          // which kernel clock this is (clock domains, align/)
  int64_t timens_offset_ns_ = 0;
  std::vector<Ring*> rings_;
  // Posts and completions of transfers, paired into rows (writeTransfer).
  TransferPairing pairing_{[this](const Event& post, int32_t peer, int64_t end_ns) {
    writeTransfer(post, peer, end_ns);
  }};
  // Detail level: message rows written so far; per-link totals waiting for their link to go
  // quiet, and what they added up.
  uint64_t message_rows_ = 0;
  LinkTotals link_totals_;
  // Recording window: the trigger file as last seen, when the last kept post was paired.
  int64_t trigger_checked_ns_ = 0;
  bool trigger_exists_ = false;
  int64_t trigger_mtime_ns_ = 0;
  int64_t last_kept_post_ns_ = 0;
};

}  // namespace ringside::collector::detail
