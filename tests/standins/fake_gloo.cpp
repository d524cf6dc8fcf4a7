// A stand-in for Gloo compiled into a static archive the way PyTorch's build
// compiles it (position-independent, default visibility, no version script):
// gloo::allreduce under its real mangled name. It only counts its calls, so it
// must never be reached through ringside's wrapper (which would read the
// argument as Gloo's options): the variants that use it bind it inside the
// library, and the one that imports it through the PLT never calls it.
#include <atomic>

namespace {
std::atomic<int> g_calls{0};
}

extern "C" __attribute__((visibility("default"))) void fake_gloo_allreduce(
    const void* options) __asm__("_ZN4gloo9allreduceERKNS_16AllreduceOptionsE");
extern "C" void fake_gloo_allreduce(const void*) { g_calls.fetch_add(1); }

extern "C" __attribute__((visibility("default"))) int fake_gloo_calls() { return g_calls.load(); }
