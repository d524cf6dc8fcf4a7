// analyzer/pending_instances.h — what the transfer pass buffers per collective instance until no
// later message can belong to it: the stream is ordered by start, so an instance is complete once
// a message starts after its last_end_ns. The phases (analysis_phases.h) and each call's link
// rates (analysis_call_rates.h) are made so, without keeping every message.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ringside::analyzer::detail {

template <typename T>
class PendingInstances {
 public:
  explicit PendingInstances(size_t instances) : handed_over_(instances, false) {}

  // The state of `instance` (made empty on its first message, to end at `last_end_ns`); nullptr
  // once it was handed over: a straggling message (clock skew across hosts) must not start a
  // second, partial state.
  T* get(int32_t instance, int64_t last_end_ns) {
    if (handed_over_[static_cast<size_t>(instance)]) return nullptr;
    if (instance != last_instance_ || last_ == nullptr) {
      auto [it, fresh] = pending_.try_emplace(instance);
      if (fresh) ended_.emplace(last_end_ns, instance);
      last_ = &it->second;
      last_instance_ = instance;
    }
    return last_;
  }
  // Hands over, as done(instance, T&&), every instance that ended before `start_ns`.
  template <typename Done>
  void endedBefore(int64_t start_ns, Done&& done) {
    while (!ended_.empty() && ended_.top().first < start_ns) handOver(done);
  }
  // Hands over every instance left, at the end of the stream.
  template <typename Done>
  void all(Done&& done) {
    while (!ended_.empty()) handOver(done);
  }

 private:
  template <typename Done>
  void handOver(Done& done) {
    const int32_t instance = ended_.top().second;
    ended_.pop();
    auto it = pending_.find(instance);
    if (it == pending_.end()) return;
    T state = std::move(it->second);
    pending_.erase(it);
    handed_over_[static_cast<size_t>(instance)] = true;
    if (instance == last_instance_) {
      last_ = nullptr;
      last_instance_ = -1;
    }
    done(instance, std::move(state));
  }

  std::unordered_map<int32_t, T> pending_;
  std::vector<bool> handed_over_;
  T* last_ = nullptr;  // consecutive messages usually share an instance
  int32_t last_instance_ = -1;
  using Ending = std::pair<int64_t, int32_t>;  // (last_end_ns, instance) of pending instances
  std::priority_queue<Ending, std::vector<Ending>, std::greater<>> ended_;
};

}  // namespace ringside::analyzer::detail
