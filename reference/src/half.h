// reference/src/half.h — the f16/bf16 conversions (now public in
// ringside/reference/half.h) under the detail names the internals use.
#pragma once

#include "ringside/reference/half.h"

namespace ringside::reference::detail {

using reference::bf16ToFloat;
using reference::floatToBf16;
using reference::floatToHalf;
using reference::halfToFloat;

}  // namespace ringside::reference::detail
