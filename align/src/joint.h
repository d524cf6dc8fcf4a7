// align/src/joint.h — joint offsets over all domains (offsets.cpp).
#pragma once

#include <vector>

#include "internal.h"

namespace ringside::align::detail {

// Shifts every placed domain's mapping so that all bounds between placed domains hold with the
// most room at once (longest paths over the difference constraints). Fills (*half_width)[d] with
// half the interval left to domain d (-1 when it is open on a side). False, changing nothing
// that matters, when the bounds contradict each other (a positive cycle).
bool jointOffsets(const Evidence& ev, std::vector<Mapping>* f, const std::vector<char>& placed,
                  std::vector<double>* half_width);

}  // namespace ringside::align::detail
