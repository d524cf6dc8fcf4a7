// collector/src/transfer_pairing.cpp — see transfer_pairing.h.
#include "transfer_pairing.h"

#include <algorithm>
#include <cstddef>

#include "ringside/storage/records.h"

namespace ringside::collector::detail {
namespace {

int64_t emitTime(const Event& e) { return e.kind == EventKind::kTransferDone ? e.t1 : e.t0; }

}  // namespace

void TransferPairing::match(int64_t before_ns) {
  std::stable_sort(staged_.begin(), staged_.end(),
                   [](const Event& a, const Event& b) { return emitTime(a) < emitTime(b); });
  size_t n = 0;
  while (n < staged_.size() && emitTime(staged_[n]) < before_ns) {
    if (staged_[n].kind == EventKind::kTransferPost)
      post(staged_[n]);
    else
      done(staged_[n]);
    ++n;
  }
  staged_.erase(staged_.begin(), staged_.begin() + static_cast<std::ptrdiff_t>(n));
}

// A completion that ended before this post began cannot be its completion: its own post was
// left out (a bounded recording drops posts outside the window but lets completions pass until
// the kept posts are paired) or lost. Pairing it would give the message an end before its start
// (seen with --steps and --trigger-file: most message rows did), so it is dropped here and
// counted with the unpaired ones.
void TransferPairing::post(const Event& e) {
  Key key{e.key, e.peer, e.side};
  auto it = dones_.find(key);
  if (it != dones_.end()) {
    std::deque<Event>& waiting = it->second;
    while (!waiting.empty() && waiting.front().t1 < e.t0) {
      ++stale_dones_;
      waiting.pop_front();
    }
    if (waiting.empty()) {
      dones_.erase(it);
      it = dones_.end();
    }
  }
  if (it != dones_.end()) {
    Event d = it->second.front();
    it->second.pop_front();
    if (it->second.empty()) dones_.erase(it);
    sink_(e, d.peer, d.t1);
    return;
  }
  posts_[key].push_back(e);
}

void TransferPairing::done(const Event& e) {
  for (int32_t peer : {e.peer, -1}) {  // -1: a receive posted for "any of these ranks"
    auto it = posts_.find(Key{e.key, peer, e.side});
    if (it == posts_.end() || it->second.empty()) continue;
    if (it->second.front().t0 > e.t1) continue;  // not its post (see post())
    Event p = it->second.front();
    it->second.pop_front();
    if (it->second.empty()) posts_.erase(it);
    sink_(p, e.peer, e.t1);
    return;
  }
  dones_[Key{e.key, e.peer, e.side}].push_back(e);
}

bool TransferPairing::postsWaiting() const {
  if (!posts_.empty()) return true;
  for (const Event& e : staged_)
    if (e.kind == EventKind::kTransferPost) return true;
  return false;
}

uint64_t TransferPairing::finish() {
  for (auto& kv : posts_)
    for (const Event& p : kv.second) sink_(p, p.peer, storage::kNone);
  posts_.clear();
  uint64_t unpaired = stale_dones_;
  stale_dones_ = 0;
  for (auto& kv : dones_) unpaired += kv.second.size();
  dones_.clear();
  return unpaired;
}

}  // namespace ringside::collector::detail
