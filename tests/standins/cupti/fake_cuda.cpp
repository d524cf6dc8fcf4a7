// A stand-in for the CUDA driver library, built as libcuda.so.1: its presence
// in the process is what tells ringside that the process uses CUDA.
extern "C" __attribute__((visibility("default"))) int cuInit(unsigned int flags) {
  (void)flags;
  return 0;
}
