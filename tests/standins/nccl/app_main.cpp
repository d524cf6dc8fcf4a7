// nccl_app: links the stand-in NCCL workload directly. nccl_app_private
// (NCCL_APP_PRIVATE): dlopen()s it with RTLD_LOCAL from NCCL_WORKLOAD, so
// NCCL arrives through a private dlopen chain as in PyTorch's processes.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#ifndef NCCL_APP_PRIVATE
extern "C" int nccl_workload_main(int argc, char** argv);
#endif

int main(int argc, char** argv) {
#ifdef NCCL_APP_PRIVATE
  const char* lib = std::getenv("NCCL_WORKLOAD");
  void* h = lib != nullptr ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : nullptr;
  if (h == nullptr) {
    std::fprintf(stderr, "nccl_app_private: cannot load NCCL_WORKLOAD: %s\n", lib != nullptr ? dlerror() : "unset");
    return 2;
  }
  auto run = reinterpret_cast<int (*)(int, char**)>(dlsym(h, "nccl_workload_main"));
  return run != nullptr ? run(argc, argv) : 2;
#else
  return nccl_workload_main(argc, argv);
#endif
}
