// align/src/joint.h — joint offsets over all domains (offsets.cpp).
#pragma once

#include <vector>

#include "internal.h"
#include "ringside/storage/clock_model.h"

namespace ringside::align::detail {

// Two domains whose bounds limit their offset both ways: once shifted, the aligned times of `a`
// and `b` are off against each other by at most `bound` ns (either way), whatever the other
// domains' errors.
struct Link {
  int32_t a, b;
  double bound;
};

// Shifts every placed domain's mapping so that all bounds between placed domains hold with the
// most room at once (longest paths over the difference constraints). Fills (*half_width)[d] with
// half the interval left to domain d (-1 when it is open on a side) and, when `links` is given,
// every pair of placed domains with bounds both ways between them (a Link, as shifted). False,
// changing nothing that matters, when the bounds contradict each other (a positive cycle).
bool jointOffsets(const Evidence& ev, std::vector<Mapping>* f, const std::vector<char>& placed,
                  std::vector<double>* half_width, std::vector<Link>* links = nullptr);

// The fit's tree of domains (ClockDomain::parent, parent_uncertainty_ns), for the uncertainty
// between two domains: the spanning tree of least total bound over the links and each domain's
// own bound against the reference (its uncertainty_ns), rooted at the reference. Any path's sum
// bounds its ends' relative error, so the tree path between two hosts that exchanged messages
// is their link, not the two chains down from the reference. Needs model->domains filled.
void chainDomains(const std::vector<Link>& links, storage::ClockModel* model);

}  // namespace ringside::align::detail
