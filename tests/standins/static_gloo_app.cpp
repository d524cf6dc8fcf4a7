// Loads a library privately, as Python loads PyTorch, then exits normally.
#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc > 1 && dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) == nullptr) {
    std::fprintf(stderr, "static_gloo_app: %s\n", dlerror());
    return 1;
  }
  std::puts("static_gloo_app done");
  return 0;
}
