// perf_floor: the floor that the data itself sets for an all-reduce of S bytes
// on n ranks sharing one host over loopback TCP, from this machine's measured
// copy and reduction speeds.
//
// Ring all-reduce moves 2(n-1)/n * S bytes out of and into every rank. Over
// loopback each byte moved is copied twice by the kernel (sender's buffer into
// the socket, socket into the receiver's buffer), and the reduce-scatter half
// is also reduced once (read two streams, write one). All n ranks share the
// host's cores, so
//   floor = n * [ 2 * 2(n-1)/n * S / copy_rate  +  (n-1)/n * S / reduce_rate ] / cores
// (rates per core, for buffers far larger than the caches).
// A model with cold-buffer rates: it overstates the copies of a ring that works
// in cache-sized chunks. `ringside bench --algo ...,floor` measures the same
// copies and reductions in the ring's order, in the same run as the ring
// (docs/bench.md, "The floor row").
// A third floor counts what moving the bytes through loopback TCP costs at
// best, since the transport is TCP: the CPU time per byte of one plain
// loopback TCP stream (a sender and a receiver thread, 256 KiB writes and
// reads, 1 MiB socket buffers; copies, skb handling, loopback delivery, ACKs),
// times the bytes every rank must send, plus the reductions, over the cores:
//   floor_tcp = n * [ 2(n-1)/n * S * tcp_cpu_per_byte + (n-1)/n * S / reduce_rate ] / cores
//   perf_floor [--ranks N] [--bytes S] [--cores C]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "ringside/reference/types.h"

namespace {

double bestSeconds(int reps, auto&& fn) {
  double best = 1e9;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

double cpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// CPU seconds per byte of one loopback TCP stream (sender + receiver + the
// kernel work they cause), the cheapest way TCP can move bytes on this host.
// Returns 0 if the sockets can't be set up.
double tcpCpuPerByte(size_t total) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t alen = sizeof addr;
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener, 1) != 0 || ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &alen) != 0)
    return 0;
  const int out = ::socket(AF_INET, SOCK_STREAM, 0);
  const int buf = 1 << 20, one = 1;
  ::setsockopt(out, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
  ::setsockopt(out, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::connect(out, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return 0;
  const int in = ::accept(listener, nullptr, nullptr);
  if (in < 0) return 0;
  ::setsockopt(in, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  const size_t chunk = 256 << 10;
  const double cpu0 = cpuSeconds();
  std::thread receiver([&] {
    std::vector<char> rbuf(chunk);
    size_t got = 0;
    while (got < total) {
      const ssize_t r = ::recv(in, rbuf.data(), chunk, 0);
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
  });
  std::vector<char> sbuf(chunk, 7);
  size_t sent = 0;
  while (sent < total) {
    const ssize_t w = ::send(out, sbuf.data(), std::min(chunk, total - sent), 0);
    if (w <= 0) break;
    sent += static_cast<size_t>(w);
  }
  receiver.join();
  const double cpu = cpuSeconds() - cpu0;
  ::close(out);
  ::close(in);
  ::close(listener);
  return sent == total ? cpu / static_cast<double>(total) : 0;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 4;
  double bytes = 64.0 * 1024 * 1024;
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--ranks") == 0) n = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--bytes") == 0) bytes = std::atof(argv[i + 1]);
    else if (std::strcmp(argv[i], "--cores") == 0) cores = std::atoi(argv[i + 1]);
  }
  if (n < 2 || cores < 1 || bytes <= 0) {
    std::fprintf(stderr, "usage: perf_floor [--ranks N>=2] [--bytes S] [--cores C]\n");
    return 2;
  }
  const size_t len = 64u << 20;  // far larger than the caches
  std::vector<char> a(len, 1), b(len, 2);
  std::vector<float> x(len / 4, 1.0f), y(len / 4, 2.0f);
  double copy_s = bestSeconds(5, [&] { std::memcpy(b.data(), a.data(), len); });
  double reduce_s = bestSeconds(5, [&] {
    ringside::reference::reduceInto(x.data(), y.data(), x.size(), ringside::collector::DType::kF32,
                                    ringside::collector::ReduceOp::kSum);
  });
  double copy_rate = static_cast<double>(len) / copy_s;      // bytes/s per core
  double reduce_rate = static_cast<double>(len) / reduce_s;  // bytes of output/s per core
  double moved = 2.0 * (n - 1) / n * bytes;                  // per rank, each way
  double per_rank = 2.0 * moved / copy_rate + (n - 1.0) / n * bytes / reduce_rate;
  double floor_s = n * per_rank / cores;
  std::printf("memcpy %.2f GB/s per core, f32 sum-reduce %.2f GB/s per core (64 MiB buffers)\n",
              copy_rate / 1e9, reduce_rate / 1e9);
  std::printf("ring all-reduce of %.0f MiB on %d ranks sharing %d core(s): floor %.1f ms "
              "(busbw ceiling %.2f GB/s)\n",
              bytes / 1048576, n, cores, floor_s * 1e3, moved / floor_s / 1e9);
  double tcp = 1e9;
  for (int i = 0; i < 3; ++i) {  // best of 3: the least disturbed stream
    const double t = tcpCpuPerByte(size_t{1} << 30);
    if (t > 0) tcp = std::min(tcp, t);
  }
  if (tcp < 1e9) {
    const double per_rank_tcp = moved * tcp + (n - 1.0) / n * bytes / reduce_rate;
    const double floor_tcp = n * per_rank_tcp / cores;
    std::printf("loopback TCP stream: %.2f GB/s of CPU (sender + receiver + kernel)\n", 1e-9 / tcp);
    std::printf("with the bytes moved through loopback TCP: floor %.1f ms (busbw ceiling %.2f GB/s)\n",
                floor_tcp * 1e3, moved / floor_tcp / 1e9);
  }
  return 0;
}
