// storage/src/trace_reader_sides.cpp — narrow reads of every transfer row in storage order: the
// fields align/'s clock fit pairs messages by (TraceReader::forEachMessageSide) and those the run
// summary totals links and ranks by (forEachTransferTotalsFields).
#include "trace_reader_impl.h"

namespace ringside::storage::reader {

// Every transfer row in storage order with only the columns of kRead (rank always among them)
// filled, times mapped through the recording rank. SQLite decodes a record's columns up to the
// last one asked for, and each column returned costs an API call: returning 8 of 14 per row took
// 2.4 instead of 4.1 CPU-s over the 8.4 M rows of a 1,024-rank trace.
template <ColumnSet kRead>
bool SqliteTraceReader::visitTransferFields(
    const std::function<bool(int32_t, const TransferRow&)>& fn, std::string* error) {
  using T = TransferTable;
  static_assert(kRead & detail::columns({T::rank}));
  constexpr auto at = [](int column) { return detail::indexIn(kRead, column); };
  constexpr auto has = [](int column) { return ((kRead >> column) & 1) != 0; };
  if (!checkTransfersWhole(error)) return false;
  return visit(detail::selectOnlySql(T::kDef, version_, "", kRead), "transfers",
               [&](sqlite3_stmt* s) {
                 const int32_t rank = toInt32(detail::columnNullable(s, at(T::rank)));
                 TransferRow r;
                 if constexpr (has(T::id)) r.id = sqlite3_column_int64(s, at(T::id));
                 if constexpr (has(T::collective_id))
                   r.collective_id = detail::columnNullable(s, at(T::collective_id));
                 r.src_rank = toInt32(detail::columnNullable(s, at(T::src_rank)));
                 r.dst_rank = toInt32(detail::columnNullable(s, at(T::dst_rank)));
                 r.bytes = sqlite3_column_int64(s, at(T::bytes));
                 r.start_ns = align(rank, sqlite3_column_int64(s, at(T::start_ns)));
                 r.end_ns = align(rank, detail::columnNullable(s, at(T::end_ns)));
                 r.side = str(detail::columnNullable(s, at(T::side_sid)));
                 if constexpr (has(T::chunk))
                   r.chunk = toInt32(detail::columnNullable(s, at(T::chunk)));
                 r.slot = detail::columnNullable(s, at(T::slot));
                 return fn(rank, r);
               },
               error);
}

bool SqliteTraceReader::forEachMessageSide(
    const std::function<bool(int32_t, const TransferRow&)>& fn, std::string* error) {
  using T = TransferTable;
  return visitTransferFields<detail::columns(
      {T::rank, T::src_rank, T::dst_rank, T::bytes, T::start_ns, T::end_ns, T::side_sid, T::slot})>(
      fn, error);
}

bool SqliteTraceReader::forEachTransferTotalsFields(
    const std::function<bool(int32_t, const TransferRow&)>& fn, std::string* error) {
  using T = TransferTable;
  return visitTransferFields<detail::columns({T::id, T::rank, T::collective_id, T::src_rank,
                                              T::dst_rank, T::bytes, T::start_ns, T::end_ns,
                                              T::side_sid, T::chunk, T::slot})>(fn, error);
}

}  // namespace ringside::storage::reader
