// analyzer/analysis_autopsy.h — what analyze() keeps for the autopsy (hang.h), private to the
// analyzer: the tail of each rank's calls per communicator (pass 1), the messages of the calls
// that never completed somewhere (pass 2), and the stage that turns them into verdicts and
// findings. Memory: kTail calls per (rank, communicator) plus the messages of unfinished calls.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "ringside/analyzer/analysis.h"
#include "ringside/analyzer/hang.h"
#include "ringside/storage/records.h"

namespace ringside::analyzer::detail {

struct AnalysisState;

// One rank's row of an instance, as the autopsy needs it. op and dtype are kept only where they
// differ from the instance's (a desync), so a healthy trace's rows carry no strings.
struct AutopsyCall {
  int32_t instance = -1;
  int32_t root = -1;
  bool failed = false;
  int64_t start_ns = 0, end_ns = storage::kNone, bytes = 0;
  std::string op, dtype;  // "" = the instance's
};

class AutopsyTails {
 public:
  static constexpr int kTail = 8;  // calls kept per (rank, communicator): the last ones
  // A collective row of `rank` on communicator `comm_id` that became instance `instance`.
  void add(const storage::CollectiveRow& row, int comm_id, int32_t instance, std::string_view op,
           std::string_view dtype);
  // Per instance: 1 when some rank's call of it never returned or failed (its messages matter).
  std::vector<char> unfinished;

  struct Ring {
    std::array<AutopsyCall, kTail> calls;
    int count = 0, next = 0;
  };
  std::map<int, std::vector<const Ring*>> byRank() const;  // rank -> its rings

 private:
  std::unordered_map<uint64_t, Ring> rings_;  // (rank, comm id) -> ring
  uint64_t last_key_ = ~uint64_t{0};
  Ring* last_ring_ = nullptr;
};

struct AutopsyState {
  AutopsyTails tails;
  std::map<int, std::vector<hang::Message>> messages;  // rank -> messages of unfinished calls
  std::vector<char> receives;  // [rank]: 1 when it has recv rows (its receives are recorded)
};

// Pass 2: one transfer row of `instance` (>= 0); `send`: a send row, else a recv row.
void autopsyTransfer(AnalysisState& s, const storage::TransferRow& row, bool send,
                     int32_t instance);
// After steps: the verdicts into Analysis::autopsy and their findings.
void autopsyFindings(AnalysisState& s, std::vector<Finding>* findings);

}  // namespace ringside::analyzer::detail
