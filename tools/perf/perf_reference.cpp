// perf_reference: a quick, untimed-by-CI measurement of the reference
// all-reduce with ranks as processes on 127.0.0.1. Not a test.
//   perf_reference [ranks=4] [bytes...]   (default: 4096 and 64 MiB of f32)
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "local_job.h"

using namespace ringside::reference;

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 4;
  std::vector<size_t> sizes;
  for (int i = 2; i < argc; ++i) sizes.push_back(std::strtoull(argv[i], nullptr, 10));
  if (sizes.empty()) sizes = {4096, size_t{64} << 20};
  auto results = local_job::runJob(
      n,
      [&](int rank, int nn, int port, std::string* msg) {
        auto rv = local_job::joinRendezvous(rank, nn, port, msg);
        if (!rv) return 2;
        auto comm = local_job::makeComm(*rv, msg, 0, std::chrono::seconds(60));
        if (!comm) return 3;
        for (size_t bytes : sizes) {
          size_t count = bytes / 4;
          std::vector<float> buf(count, 1.0f);
          for (Algorithm a : {Algorithm::kRing, Algorithm::kTree}) {
            int iters = bytes >= (size_t{16} << 20) ? 5 : bytes >= (size_t{1} << 20) ? 20 : 500;
            std::string err;
            for (int w = 0; w < 2; ++w)
              comm->allreduce(buf.data(), count, DType::kF32, ReduceOp::kSum, a, &err);
            std::vector<std::string> all;
            rv->exchange("", &all, &err);  // start together
            auto t0 = std::chrono::steady_clock::now();
            for (int i = 0; i < iters; ++i)
              if (!comm->allreduce(buf.data(), count, DType::kF32, ReduceOp::kSum, a, &err)) {
                *msg = err;
                return 4;
              }
            double s =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                iters;
            if (rank == 0) {
              char line[200];
              std::snprintf(line, sizeof line,
                            "%d ranks  %-4s  %10zu bytes  %10.3f ms  %8.1f MB/s (algbw)\n", nn,
                            algorithmName(a), bytes, s * 1e3, static_cast<double>(bytes) / s / 1e6);
              *msg += line;
            }
          }
        }
        std::vector<std::string> all;
        std::string err;
        rv->exchange("", &all, &err);
        return 0;
      },
      std::chrono::seconds(600));
  std::fputs(results[0].message.c_str(), stdout);
  std::string f = local_job::failures(results);
  if (!f.empty()) std::fputs(f.c_str(), stderr);
  return f.empty() ? 0 : 1;
}
