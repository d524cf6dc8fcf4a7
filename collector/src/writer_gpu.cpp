// collector/src/writer_gpu.cpp — the writer's GPU rows: what a GPU library adds to a call,
// CUPTI activity records and communicator notes (gpu.h).
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "ringside/collector/gpu.h"
#include "writer.h"

namespace ringside::collector::detail {

void Writer::writeCollectiveGpu(const Event& e) {
  if (!ensureBatch()) return;
  storage::CollectiveGpuRow row;
  row.collective_id = static_cast<int64_t>(e.id);
  row.gpu_start_ns = e.t0 != 0 ? e.t0 : kNone;
  row.gpu_end_ns = e.t1 != 0 ? e.t1 : kNone;
  row.algorithm = algorithmName(static_cast<Algorithm>(e.algorithm));
  row.protocol = protocolName(static_cast<Protocol>(e.protocol));
  row.channels = e.peer >= 0 ? e.peer : -1;
  row.group_id = e.aux != 0 ? static_cast<int64_t>(e.aux - 1) : kNone;
  row.stream = e.key != 0 ? static_cast<int64_t>(e.key & INT64_MAX) : kNone;
  row.device = e.comm;
  if (!out_->addCollectiveGpu(row)) fail("cannot write");
}

// GPU activity records and communicator notes: taken whole under their locks,
// written outside them.
void Writer::drainGpu() {
  std::vector<PendingActivity> batch;
  {
    std::lock_guard<std::mutex> lock(g_.gpu_mutex);
    batch.swap(g_.gpu_pending);
    g_.gpu_pending_bytes = 0;
  }
  for (const PendingActivity& a : batch) {
    if (failed_ || !ensureBatch()) return;
    storage::GpuActivityRow row;
    row.kind = gpuActivityKindName(static_cast<GpuActivityKind>(a.kind));
    row.name = a.name;
    row.start_ns = a.start_ns;
    row.end_ns = a.end_ns >= 0 ? a.end_ns : kNone;
    row.device = a.device;
    row.stream = a.stream >= 0 ? a.stream : kNone;
    row.bytes = a.bytes >= 0 ? a.bytes : kNone;
    row.copy_kind = copyKindName(static_cast<CopyKind>(a.copy_kind));
    row.correlation_id = a.correlation_id >= 0 ? a.correlation_id : kNone;
    row.collective_id = a.collective_id != 0 ? static_cast<int64_t>(a.collective_id) : kNone;
    if (!out_->addGpuActivity(row)) fail("cannot write");
  }
  if (!g_.comm_notes_dirty.exchange(false, std::memory_order_acq_rel)) return;
  struct Copy {
    std::string comm, library, parent, end_state, topology;
    int32_t rank, size;
    int64_t created, ended;
  };
  std::vector<Copy> notes;
  {
    std::lock_guard<std::mutex> lock(g_.mutex);
    const int n = g_.comm_count.load(std::memory_order_acquire);
    for (int i = 0; i < n; ++i) {
      CommNote& note = g_.comm_notes[i];
      if (!note.dirty) continue;
      note.dirty = false;
      const Comm& c = g_.comms[i];
      Copy copy;
      copy.comm = c.name;
      const char* slash = std::strchr(c.name, '/');
      copy.library = slash != nullptr ? std::string(c.name, static_cast<size_t>(slash - c.name)) : "";
      copy.parent = note.parent >= 0 && note.parent < n ? g_.comms[note.parent].name : "";
      copy.end_state = note.end_state;
      copy.topology = note.topology;
      copy.rank = c.rank;
      copy.size = c.size;
      copy.created = note.created_ns;
      copy.ended = note.ended_ns;
      notes.push_back(std::move(copy));
    }
  }
  for (const Copy& c : notes) {
    if (failed_ || !ensureBatch()) return;
    storage::CommunicatorRow row;
    row.comm = c.comm;
    row.library = c.library;
    row.comm_rank = c.rank;
    row.comm_size = c.size;
    row.parent = c.parent;
    row.created_ns = c.created >= 0 ? c.created : kNone;
    row.ended_ns = c.ended >= 0 ? c.ended : kNone;
    row.end_state = c.end_state;
    row.topology = c.topology;
    if (!out_->addCommunicator(row)) fail("cannot write");
  }
}

}  // namespace ringside::collector::detail
