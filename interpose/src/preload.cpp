// libringside_preload.so: nothing happens at load time. Launchers, shells and
// every other process that inherits LD_PRELOAD stay untouched until one of the
// wrapped functions (interpose/src/*_wrappers.cpp) is called; that call
// activates the collector. The only thing done at load is registering an exit
// check that notices when a wrapped library was linked in statically and so
// could not be seen (it creates nothing unless that is the case).
//
// Adding a library (NCCL next) means one more *_wrappers.cpp with its list of
// wrapped functions, feeding the same collector events.
#include <cstdint>
#include <cstdlib>

#include "ringside/collector/collector.h"

// The explicit step marker (docs/steps.md): a training loop calls it once per step, directly or
// through samples/ringside_steps.py (ctypes), with its own step number. Exported under a plain C
// name so the job can find it with dlsym(RTLD_DEFAULT, "ringside_step") when this library is
// preloaded, and call nothing when it is not.
extern "C" __attribute__((visibility("default"))) void ringside_step(int64_t step) {
  ringside::collector::markStep(step);
}

namespace ringside::interpose {
#ifdef RINGSIDE_WITH_GLOO
void checkStaticGlooAtExit();
#endif
namespace {

void atExit() {
#ifdef RINGSIDE_WITH_GLOO
  checkStaticGlooAtExit();
#endif
}

__attribute__((constructor)) void onLoad() { std::atexit(atExit); }

}  // namespace
}  // namespace ringside::interpose
