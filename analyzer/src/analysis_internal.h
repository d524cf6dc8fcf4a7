// analyzer/analysis_internal.h — helpers shared by analysis.cpp and diff.cpp.
#pragma once

#include "ringside/analyzer/collective_math.h"
