// tests/unit/reference/job.h — the reference's tests run their ranks as processes through
// reference/local_job (shared with tools/perf/perf_reference); they name it test::.
#pragma once

#include "local_job.h"

namespace ringside::reference::test {
using namespace local_job;  // NOLINT(google-build-using-namespace): the tests' short name
}  // namespace ringside::reference::test
