// collector/src/link_totals.cpp — see link_totals.h.
#include "link_totals.h"

#include <algorithm>

#include "ringside/collector/event.h"

namespace ringside::collector::detail {

using storage::kNone;

void LinkTotals::add(const storage::TransferRow& row, uint8_t phase) {
  if (first_ns_ == kNone) first_ns_ = row.start_ns;
  Total& t = links_[Key{row.collective_id, row.src_rank, row.dst_rank, row.side == "send"}];
  if (t.messages == 0) {
    t.phase = phase;
    t.channel = row.channel;
  }
  t.bytes += row.bytes;
  ++t.messages;
  t.start_ns = std::min(t.start_ns, row.start_ns);
  if (row.end_ns != kNone) t.end_ns = std::max(t.end_ns, row.end_ns);
  t.last_ns = std::max(t.last_ns, std::max(row.start_ns, row.end_ns));
  if (t.phase != phase) t.phase = 0xff;
  if (t.channel != row.channel) t.channel = -2;
}

void LinkTotals::flush(int64_t before_ns,
                       const std::function<bool(const storage::TransferRow&)>& write) {
  for (auto it = links_.begin(); it != links_.end();) {
    const Total& t = it->second;
    if (t.last_ns >= before_ns) {
      ++it;
      continue;
    }
    storage::TransferRow row;
    row.collective_id = it->first.collective_id;
    row.src_rank = it->first.src;
    row.dst_rank = it->first.dst;
    row.bytes = t.bytes;
    row.start_ns = t.start_ns;
    row.end_ns = t.end_ns;
    row.side = it->first.send ? "send" : "recv";
    row.phase = t.phase == 0xff ? "" : phaseName(static_cast<Phase>(t.phase));
    row.chunk = kLinkTotalChunk;
    row.slot = t.messages;
    row.channel = t.channel >= 0 ? t.channel : -1;
    if (!write(row)) return;
    ++rows_;
    messages_ += static_cast<uint64_t>(t.messages);
    it = links_.erase(it);
  }
}

}  // namespace ringside::collector::detail
