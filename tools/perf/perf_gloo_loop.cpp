// perf_gloo_loop: a tight loop of one Gloo collective, timed on rank 0. The same
// binary runs traced (under libringside_preload.so) and untraced, so
// tools/perf/overhead.py can compare them in one interleaved run.
//
//   RANK=r WORLD_SIZE=n GLOO_STORE_DIR=dir perf_gloo_loop [--op allreduce|barrier] [--bytes B] [--iters N]
// Prints "us_per_call <x>" on rank 0.
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  std::string op = "allreduce";
  size_t bytes = 1024;
  long iters = 20000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--op") == 0) op = argv[i + 1];
    else if (std::strcmp(argv[i], "--bytes") == 0) bytes = std::strtoull(argv[i + 1], nullptr, 10);
    else if (std::strcmp(argv[i], "--iters") == 0) iters = std::strtol(argv[i + 1], nullptr, 10);
    else {
      std::fprintf(stderr, "usage: perf_gloo_loop [--op allreduce|barrier] [--bytes B] [--iters N]\n");
      return 2;
    }
  }
  const char* r = std::getenv("RANK");
  const char* w = std::getenv("WORLD_SIZE");
  const char* d = std::getenv("GLOO_STORE_DIR");
  if (r == nullptr || w == nullptr || d == nullptr) {
    std::fprintf(stderr, "perf_gloo_loop: set RANK, WORLD_SIZE and GLOO_STORE_DIR\n");
    return 2;
  }
  int rank = std::atoi(r), size = std::atoi(w);
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore file(d);
  gloo::rendezvous::PrefixStore store("perf_gloo_loop", file);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
  ctx->connectFullMesh(store, dev);

  std::vector<float> buf(bytes / sizeof(float) > 0 ? bytes / sizeof(float) : 1, 1.0f);
  auto once = [&] {
    if (op == "barrier") {
      gloo::BarrierOptions o(ctx);
      gloo::barrier(o);
    } else {
      gloo::AllreduceOptions o(ctx);
      o.setOutput(buf.data(), buf.size());
      o.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      gloo::allreduce(o);
    }
  };
  for (int i = 0; i < 200; ++i) once();  // warm up connections and caches
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < iters; ++i) once();
  auto t1 = std::chrono::steady_clock::now();
  if (rank == 0)
    std::printf("us_per_call %.4f\n", std::chrono::duration<double, std::micro>(t1 - t0).count() / iters);
  gloo::BarrierOptions o(ctx);
  gloo::barrier(o);
  return 0;
}
