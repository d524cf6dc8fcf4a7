// storage/src/trace_reader_gpu.cpp — the reader's queries of the GPU tables and communicators
// (schema v2; older files visit nothing).
#include "trace_reader_impl.h"

namespace ringside::storage::reader {

bool SqliteTraceReader::forEachCollectiveGpu(const std::function<bool(const CollectiveGpuRow&)>& fn,
                                             std::string* error) {
  if (version_ < 2) return true;
  using T = CollectiveGpuTable;
  // GPU rows name no rank: aligned reads take it from the call they belong to.
  std::unordered_map<int64_t, int32_t> rank_of;
  if (timesAligned()) {
    Stmt st = detail::prepare(db_.get(),
                              "SELECT c.id, c.rank FROM collective_gpu_data AS g"
                              " JOIN collective_data AS c ON c.id = g.collective_id",
                              nullptr);
    if (!st) return readError(error, "cannot read collective GPU rows");
    while (sqlite3_step(st.get()) == SQLITE_ROW) {
      rank_of[sqlite3_column_int64(st.get(), 0)] =
          toInt32(detail::columnNullable(st.get(), 1));
    }
  }
  auto rankOf = [&](int64_t id) {
    auto it = rank_of.find(id);
    return it == rank_of.end() ? -1 : it->second;
  };
  return visit(selectSql(T::kDef, version_, " ORDER BY collective_id"), "collective GPU rows",
               [&](sqlite3_stmt* s) {
                 CollectiveGpuRow r;
                 r.collective_id = sqlite3_column_int64(s, T::collective_id);
                 const int32_t rank = rank_of.empty() ? -1 : rankOf(r.collective_id);
                 r.gpu_start_ns = align(rank, detail::columnNullable(s, T::gpu_start_ns));
                 r.gpu_end_ns = align(rank, detail::columnNullable(s, T::gpu_end_ns));
                 r.algorithm = str(detail::columnNullable(s, T::algorithm_sid));
                 r.protocol = str(detail::columnNullable(s, T::protocol_sid));
                 r.channels = toInt32(detail::columnNullable(s, T::channels));
                 r.group_id = detail::columnNullable(s, T::group_id);
                 r.stream = detail::columnNullable(s, T::stream);
                 r.device = toInt32(detail::columnNullable(s, T::device));
                 return fn(r);
               },
               error);
}

bool SqliteTraceReader::forEachGpuActivity(const std::function<bool(int32_t, const GpuActivityRow&)>& fn,
                                           std::string* error) {
  if (version_ < 2) return true;
  using T = GpuActivityTable;
  return visit(selectSql(T::kDef, version_, " ORDER BY rank, start_ns, id"), "GPU activity",
               [&](sqlite3_stmt* s) {
                 GpuActivityRow r;
                 r.id = sqlite3_column_int64(s, T::id);
                 const int32_t rank = toInt32(detail::columnNullable(s, T::rank));
                 r.kind = str(detail::columnNullable(s, T::kind_sid));
                 r.name = str(detail::columnNullable(s, T::name_sid));
                 r.start_ns = align(rank, sqlite3_column_int64(s, T::start_ns));
                 r.end_ns = align(rank, detail::columnNullable(s, T::end_ns));
                 r.device = toInt32(detail::columnNullable(s, T::device));
                 r.stream = detail::columnNullable(s, T::stream);
                 r.bytes = detail::columnNullable(s, T::bytes);
                 r.copy_kind = str(detail::columnNullable(s, T::copy_kind_sid));
                 r.correlation_id = detail::columnNullable(s, T::correlation_id);
                 r.collective_id = detail::columnNullable(s, T::collective_id);
                 return fn(rank, r);
               },
               error);
}

bool SqliteTraceReader::forEachCommunicator(const std::function<bool(int32_t, const CommunicatorRow&)>& fn,
                                            std::string* error) {
  if (version_ < 2) return true;
  using T = CommunicatorTable;
  return visit(selectSql(T::kDef, version_, " ORDER BY rank, created_ns, comm_sid"),
               "communicators",
               [&](sqlite3_stmt* s) {
                 CommunicatorRow r;
                 const int32_t rank = toInt32(detail::columnNullable(s, T::rank));
                 r.comm = str(detail::columnNullable(s, T::comm_sid));
                 r.library = str(detail::columnNullable(s, T::library_sid));
                 r.comm_rank = toInt32(detail::columnNullable(s, T::comm_rank));
                 r.comm_size = toInt32(detail::columnNullable(s, T::comm_size));
                 r.parent = str(detail::columnNullable(s, T::parent_sid));
                 r.created_ns = align(rank, detail::columnNullable(s, T::created_ns));
                 r.ended_ns = align(rank, detail::columnNullable(s, T::ended_ns));
                 r.end_state = str(detail::columnNullable(s, T::end_state_sid));
                 const std::string topology = columnText(s, T::topology, kMaxTopologyBytes);
                 r.topology = topology;
                 return fn(rank, r);
               },
               error);
}

}  // namespace ringside::storage::reader
