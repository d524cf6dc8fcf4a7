// Loads a library privately, as Python loads PyTorch, optionally calls its
// fake_torch_run() (--call: one gloo::allreduce inside it), then exits normally.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  bool call = argc > 2 && std::strcmp(argv[2], "--call") == 0;
  void* lib = nullptr;
  if (argc > 1 && (lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL)) == nullptr) {
    std::fprintf(stderr, "static_gloo_app: %s\n", dlerror());
    return 1;
  }
  if (call) {
    auto run = reinterpret_cast<int (*)()>(dlsym(lib, "fake_torch_run"));
    if (run == nullptr) {
      std::fprintf(stderr, "static_gloo_app: no fake_torch_run in %s\n", argv[1]);
      return 1;
    }
    std::printf("gloo calls: %d\n", run());
  }
  std::puts("static_gloo_app done");
  return 0;
}
