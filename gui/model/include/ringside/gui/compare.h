// gui/compare.h — A/B compare: two traces' collectives aligned by order.
//
// The diff table and its verdicts are the analyzer's diff(); on top of it, every
// collective of A is paired with one of B: the k-th instance of an (op, size bucket)
// in A with the k-th of the same op and bucket in B (analyzer::pairCollectives: diff()'s own,
// never wall time: the runs happened at different times). The viewer uses the pairs
// to highlight the partner of a selection and to line the two timelines up on it.
// No OpenGL, no ImGui. Threads: UI thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringside/analyzer/analysis.h"

namespace ringside::gui {

struct ComparePair {
  int a = -1, b = -1;   // indices into each analysis' collectives
  double speedup = 0;   // duration a / duration b (> 1: B faster); 0 when unknown
};

struct CompareModel {
  analyzer::Diff diff;
  std::vector<ComparePair> pairs;    // by A's order
  std::vector<int> partner_of_a;     // A index -> B index, -1 unpaired
  std::vector<int> partner_of_b;     // B index -> A index
  std::vector<int> first_pair_of_row;  // diff.rows[i] -> index into pairs of its first pair, -1

  // B's clock minus A's at which a pair starts together; the start-to-start offset without one.
  int64_t offsetFor(const analyzer::Analysis& a, const analyzer::Analysis& b, int pair) const;
};

// One line that says what a trace of a comparison is: "ring.sqlite: 4 ranks, 60 collectives
// over 12.3 ms, ringside-ring".
std::string describeTrace(const std::string& label, const analyzer::Analysis& a);

void buildCompare(const analyzer::Analysis& a, const analyzer::Analysis& b, const std::string& label_a,
                  const std::string& label_b, CompareModel* out);

}  // namespace ringside::gui
