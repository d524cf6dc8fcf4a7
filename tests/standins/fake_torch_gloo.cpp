// A stand-in for libtorch_cpu.so with Gloo linked in statically (fake_gloo.cpp):
// PyTorch's own code is built with hidden visibility; it exports the Gloo
// process group's vtable (what ringside looks for) and calls gloo::allreduce.
// How that call binds is the link's choice: through the PLT (a plain link),
// directly (-Wl,-Bsymbolic-functions, -Wl,-Bsymbolic) or to a hidden symbol
// (-Wl,--exclude-libs,ALL). fake_torch_run() makes the call.
extern "C" {
__attribute__((visibility("default"))) void* fake_process_group_gloo_vtable[4] __asm__(
    "_ZTVN4c10d16ProcessGroupGlooE") = {nullptr, nullptr, nullptr, nullptr};

void fake_gloo_allreduce(const void* options) __asm__(
    "_ZN4gloo9allreduceERKNS_16AllreduceOptionsE");
int fake_gloo_calls();

__attribute__((visibility("default"))) int fake_torch_run() {
  fake_gloo_allreduce(nullptr);
  return fake_gloo_calls();
}
}
