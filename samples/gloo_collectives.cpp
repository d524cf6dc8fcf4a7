// gloo_collectives: a standalone Gloo job that runs every function-style
// collective of Debian's libgloo over the TCP transport and checks each result
// against closed-form expected values. It is a workload for `ringside record`
// and for the end-to-end tests, so it must be deterministic: the same
// arguments give the same stdout, traced or not.
//
// Environment (torchrun-compatible where it can be):
//   RANK, WORLD_SIZE      this process's rank and the number of ranks (required)
//   MASTER_PORT           only used to derive the default store folder
//   GLOO_STORE_DIR        rendezvous folder for gloo::rendezvous::FileStore
//                         (default /tmp/gloo-store-$MASTER_PORT)
//   GLOO_STORE_PREFIX     key prefix inside that folder (default $RINGSIDE_RUN_ID,
//                         else "gloo-collectives"); keeps reruns apart
//   GLOO_DEVICE_HOST      address the TCP device binds to (default 127.0.0.1)
//
// With --threads T, T threads run the iterations at once, each on its own Gloo
// context (a communicator of its own) sharing one TCP device.
//
// With --workers W, the iterations' all-reduces run as PyTorch's Gloo process group
// runs a job's collectives: the main thread numbers them with tags in program order
// and queues them; W worker threads share one context and take them off the queue in
// order, so up to W are in flight at once and reach Gloo in an order that differs
// between ranks. Each call's size and input follow from its tag (sizes from --bytes
// down to one element). --jitter-ms J makes a worker of ranks other than 0 pause a
// random 0..J ms before a third of its calls (rank 0 races ahead), which is what CPU
// contention does to PyTorch's worker threads.
//
// Exit status: 0 when every check passed, 1 on a wrong result or a Gloo error,
// 2 on bad usage. Rank 0 prints one "OK <op>" line per collective.
#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/scatter.h>
#include <gloo/transport/tcp/device.h>

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using Elem = int32_t;

struct Options {
  long iters = 1;
  size_t bytes = 4096;  // payload per rank and collective
  std::string only;     // empty: all collectives
  long forkDuring = 0;  // number of fork()s done by a side thread while collectives run
  long sleepMs = 0;     // pause between iterations
  long timeoutS = 30;   // Gloo timeout for every collective
  long threads = 1;     // threads running the collectives, each on its own Gloo context
  bool forkWorld = false;  // at the end, a child forked without exec runs its own 1-rank world
  long workers = 0;        // > 0: the all-reduces off a queue by this many threads on one context
  long jitterMs = 0;       // --workers: random pause before some calls (ranks other than 0)
};

const char* const kOps[] = {"allreduce", "broadcast", "allgather", "allgatherv", "reduce",
                            "gather",    "scatter",   "alltoall",  "alltoallv",  "barrier"};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "gloo_collectives: %s\n"
               "usage: gloo_collectives [--iters N] [--bytes B] [--only OP] [--fork-during N]\n"
               "                        [--fork-world] [--sleep-ms MS] [--timeout-s S] [--threads T]\n"
               "                        [--workers W [--jitter-ms J]]\n"
               "  env: RANK, WORLD_SIZE (required), GLOO_STORE_DIR or MASTER_PORT,\n"
               "       GLOO_STORE_PREFIX, GLOO_DEVICE_HOST\n"
               "  OP: allreduce broadcast allgather allgatherv reduce gather scatter\n"
               "      alltoall alltoallv barrier\n",
               why);
  std::exit(2);
}

long parseLong(const char* flag, const char* text, long minValue) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < minValue) {
    usage((std::string("bad value for ") + flag + ": '" + text + "'").c_str());
  }
  return v;
}

Options parseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        usage((std::string("missing value after ") + argv[i]).c_str());
      }
      return argv[++i];
    };
    if (a == "--iters") {
      o.iters = parseLong("--iters", value(), 1);
    } else if (a == "--bytes") {
      o.bytes = static_cast<size_t>(parseLong("--bytes", value(), 1));
    } else if (a == "--only") {
      o.only = value();
      bool known = false;
      for (const char* op : kOps) {
        known = known || o.only == op;
      }
      if (!known) {
        usage(("unknown collective '" + o.only + "'").c_str());
      }
    } else if (a == "--fork-world") {
      o.forkWorld = true;
    } else if (a == "--fork-during") {
      o.forkDuring = parseLong("--fork-during", value(), 0);
    } else if (a == "--sleep-ms") {
      o.sleepMs = parseLong("--sleep-ms", value(), 0);
    } else if (a == "--threads") {
      o.threads = parseLong("--threads", value(), 1);
    } else if (a == "--workers") {
      o.workers = parseLong("--workers", value(), 1);
    } else if (a == "--jitter-ms") {
      o.jitterMs = parseLong("--jitter-ms", value(), 0);
    } else if (a == "--timeout-s") {
      o.timeoutS = parseLong("--timeout-s", value(), 1);
    } else if (a == "-h" || a == "--help") {
      usage("help");
    } else {
      usage(("unknown argument '" + std::string(a) + "'").c_str());
    }
  }
  return o;
}

long envLong(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    usage((std::string(name) + " is not set").c_str());
  }
  return parseLong(name, v, 0);
}

std::string envOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? std::string(v) : fallback;
}

// The value rank `r` contributes at element `i` in iteration `it`. Small
// enough that sums over hundreds of ranks stay exact in int32.
Elem value(long r, size_t i, long it) {
  return static_cast<Elem>((r + 1) * 100000 + static_cast<long>(i % 9973) * 3 + it % 1000);
}

void sumInt(void* c, const void* a, const void* b, size_t n) {
  auto* out = static_cast<Elem*>(c);
  const auto* x = static_cast<const Elem*>(a);
  const auto* y = static_cast<const Elem*>(b);
  for (size_t k = 0; k < n; ++k) {
    out[k] = x[k] + y[k];
  }
}

struct Failure : std::exception {
  std::string what_;
  explicit Failure(std::string w) : what_(std::move(w)) {}
  const char* what() const noexcept override { return what_.c_str(); }
};

void expectEq(const char* op, long it, size_t index, Elem got, Elem want) {
  if (got != want) {
    throw Failure(std::string(op) + ": iteration " + std::to_string(it) + ", element " +
                  std::to_string(index) + ": got " + std::to_string(got) + ", expected " +
                  std::to_string(want));
  }
}

class Runner {
 public:
  Runner(std::shared_ptr<gloo::Context> ctx, size_t elements)
      : ctx_(std::move(ctx)), rank_(ctx_->rank), size_(ctx_->size), n_(elements) {}

  void run(const std::string& op, long it) {
    if (op == "allreduce") {
      allreduce(it);
    } else if (op == "broadcast") {
      broadcast(it);
    } else if (op == "allgather") {
      allgather(it);
    } else if (op == "allgatherv") {
      allgatherv(it);
    } else if (op == "reduce") {
      reduce(it);
    } else if (op == "gather") {
      gather(it);
    } else if (op == "scatter") {
      scatter(it);
    } else if (op == "alltoall") {
      alltoall(it);
    } else if (op == "alltoallv") {
      alltoallv(it);
    } else {
      gloo::BarrierOptions opts(ctx_);
      gloo::barrier(opts);
    }
  }

 private:
  std::vector<Elem> mine(long it, size_t count) const {
    std::vector<Elem> v(count);
    for (size_t i = 0; i < count; ++i) {
      v[i] = value(rank_, i, it);
    }
    return v;
  }

  void allreduce(long it) {
    std::vector<Elem> buf = mine(it, n_);
    gloo::AllreduceOptions opts(ctx_);
    opts.setOutput(buf.data(), n_);
    opts.setReduceFunction(&sumInt);
    gloo::allreduce(opts);
    for (size_t i = 0; i < n_; ++i) {
      Elem want = 0;
      for (long r = 0; r < size_; ++r) {
        want += value(r, i, it);
      }
      expectEq("allreduce", it, i, buf[i], want);
    }
  }

  void broadcast(long it) {
    const long root = it % size_;
    std::vector<Elem> buf = rank_ == root ? mine(it, n_) : std::vector<Elem>(n_, -1);
    gloo::BroadcastOptions opts(ctx_);
    opts.setOutput(buf.data(), n_);
    opts.setRoot(static_cast<int>(root));
    gloo::broadcast(opts);
    for (size_t i = 0; i < n_; ++i) {
      expectEq("broadcast", it, i, buf[i], value(root, i, it));
    }
  }

  void allgather(long it) {
    std::vector<Elem> in = mine(it, n_);
    std::vector<Elem> out(n_ * static_cast<size_t>(size_), -1);
    gloo::AllgatherOptions opts(ctx_);
    opts.setInput(in.data(), n_);
    opts.setOutput(out.data(), out.size());
    gloo::allgather(opts);
    for (long r = 0; r < size_; ++r) {
      for (size_t i = 0; i < n_; ++i) {
        expectEq("allgather", it, r * n_ + i, out[r * n_ + i], value(r, i, it));
      }
    }
  }

  // Rank r contributes n + r elements, so every block has a different size.
  void allgatherv(long it) {
    std::vector<size_t> counts(static_cast<size_t>(size_));
    for (long r = 0; r < size_; ++r) {
      counts[r] = n_ + static_cast<size_t>(r);
    }
    std::vector<Elem> in = mine(it, counts[rank_]);
    std::vector<Elem> out(std::accumulate(counts.begin(), counts.end(), size_t(0)), -1);
    gloo::AllgathervOptions opts(ctx_);
    opts.setInput(in.data(), in.size());
    opts.setOutput(out.data(), counts);
    gloo::allgatherv(opts);
    size_t at = 0;
    for (long r = 0; r < size_; ++r) {
      for (size_t i = 0; i < counts[r]; ++i, ++at) {
        expectEq("allgatherv", it, at, out[at], value(r, i, it));
      }
    }
  }

  void reduce(long it) {
    const long root = (it + 1) % size_;
    std::vector<Elem> in = mine(it, n_);
    std::vector<Elem> out(n_, -1);
    gloo::ReduceOptions opts(ctx_);
    opts.setInput(in.data(), n_);
    opts.setOutput(out.data(), n_);
    opts.setRoot(static_cast<int>(root));
    opts.setReduceFunction(&sumInt);
    gloo::reduce(opts);
    if (rank_ != root) {
      return;  // only the root's output is defined
    }
    for (size_t i = 0; i < n_; ++i) {
      Elem want = 0;
      for (long r = 0; r < size_; ++r) {
        want += value(r, i, it);
      }
      expectEq("reduce", it, i, out[i], want);
    }
  }

  void gather(long it) {
    const long root = (it + 2) % size_;
    std::vector<Elem> in = mine(it, n_);
    std::vector<Elem> out;
    gloo::GatherOptions opts(ctx_);
    opts.setInput(in.data(), n_);
    if (rank_ == root) {
      out.assign(n_ * static_cast<size_t>(size_), -1);
      opts.setOutput(out.data(), out.size());
    }
    opts.setRoot(static_cast<int>(root));
    gloo::gather(opts);
    if (rank_ != root) {
      return;
    }
    for (long r = 0; r < size_; ++r) {
      for (size_t i = 0; i < n_; ++i) {
        expectEq("gather", it, r * n_ + i, out[r * n_ + i], value(r, i, it));
      }
    }
  }

  // The root sends block k (the values rank k would have contributed) to rank k.
  void scatter(long it) {
    const long root = (it + 3) % size_;
    std::vector<std::vector<Elem>> blocks;
    std::vector<Elem*> ptrs;
    std::vector<Elem> out(n_, -1);
    gloo::ScatterOptions opts(ctx_);
    if (rank_ == root) {
      for (long k = 0; k < size_; ++k) {
        std::vector<Elem> b(n_);
        for (size_t i = 0; i < n_; ++i) {
          b[i] = value(k, i, it) + 7;
        }
        blocks.push_back(std::move(b));
      }
      for (auto& b : blocks) {
        ptrs.push_back(b.data());
      }
      opts.setInputs(ptrs, n_);
    }
    opts.setOutput(out.data(), n_);
    opts.setRoot(static_cast<int>(root));
    gloo::scatter(opts);
    for (size_t i = 0; i < n_; ++i) {
      expectEq("scatter", it, i, out[i], value(rank_, i, it) + 7);
    }
  }

  // Block k of rank r's input goes to rank k; its values encode (r, k).
  static Elem pairValue(long from, long to, size_t i, long it) {
    return value(from, i, it) + static_cast<Elem>(to * 11);
  }

  void alltoall(long it) {
    const size_t total = n_ * static_cast<size_t>(size_);
    std::vector<Elem> in(total);
    std::vector<Elem> out(total, -1);
    for (long k = 0; k < size_; ++k) {
      for (size_t i = 0; i < n_; ++i) {
        in[k * n_ + i] = pairValue(rank_, k, i, it);
      }
    }
    gloo::AlltoallOptions opts(ctx_);
    opts.setInput(in.data(), total);
    opts.setOutput(out.data(), total);
    gloo::alltoall(opts);
    for (long k = 0; k < size_; ++k) {
      for (size_t i = 0; i < n_; ++i) {
        expectEq("alltoall", it, k * n_ + i, out[k * n_ + i], pairValue(k, rank_, i, it));
      }
    }
  }

  // Rank `from` sends n + (from + to) % 3 elements to rank `to`.
  size_t pairCount(long from, long to) const { return n_ + static_cast<size_t>((from + to) % 3); }

  void alltoallv(long it) {
    std::vector<int64_t> inCounts(static_cast<size_t>(size_));
    std::vector<int64_t> outCounts(static_cast<size_t>(size_));
    for (long k = 0; k < size_; ++k) {
      inCounts[k] = static_cast<int64_t>(pairCount(rank_, k));
      outCounts[k] = static_cast<int64_t>(pairCount(k, rank_));
    }
    std::vector<Elem> in;
    for (long k = 0; k < size_; ++k) {
      for (size_t i = 0; i < pairCount(rank_, k); ++i) {
        in.push_back(pairValue(rank_, k, i, it));
      }
    }
    std::vector<Elem> out(std::accumulate(outCounts.begin(), outCounts.end(), int64_t(0)), -1);
    gloo::AlltoallvOptions opts(ctx_);
    opts.setInput(in.data(), inCounts);
    opts.setOutput(out.data(), outCounts);
    gloo::alltoallv(opts);
    size_t at = 0;
    for (long k = 0; k < size_; ++k) {
      for (size_t i = 0; i < pairCount(k, rank_); ++i, ++at) {
        expectEq("alltoallv", it, at, out[at], pairValue(k, rank_, i, it));
      }
    }
  }

  std::shared_ptr<gloo::Context> ctx_;
  long rank_;
  long size_;
  size_t n_;
};

// Forks `count` children from a side thread while the main thread runs
// collectives: the case that breaks tracers holding locks across fork().
// Each child does a little arithmetic and leaves with _exit(0) (no atexit
// handlers, no destructors), like a multiprocessing worker.
class Forker {
 public:
  explicit Forker(long count) {
    if (count > 0) {
      thread_ = std::thread([this, count] { loop(count); });
    }
  }
  ~Forker() { join(); }
  Forker(const Forker&) = delete;
  Forker& operator=(const Forker&) = delete;

  // Returns the number of children that did not exit with status 0.
  long join() {
    if (thread_.joinable()) {
      thread_.join();
    }
    return failures_.load();
  }

 private:
  void loop(long count) {
    for (long k = 0; k < count; ++k) {
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
      const pid_t pid = fork();
      if (pid == 0) {
        volatile uint64_t acc = 0;
        for (uint64_t x = 0; x < 200000; ++x) {
          acc = acc + x * x;
        }
        _exit(0);
      }
      if (pid < 0) {
        failures_.fetch_add(1);
        continue;
      }
      int status = 0;
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        failures_.fetch_add(1);
      }
    }
  }

  std::thread thread_;
  std::atomic<long> failures_{0};
};

// Connects one context per thread (its own key prefix in the store) and runs the
// iterations on each; every thread checks its own results.
std::shared_ptr<gloo::Context> connect(const std::string& storeDir, const std::string& prefix,
                                       std::shared_ptr<gloo::transport::Device> device, long rank,
                                       long size, const Options& o) {
  gloo::rendezvous::FileStore fileStore(storeDir);
  gloo::rendezvous::PrefixStore store(prefix, fileStore);
  auto context = std::make_shared<gloo::rendezvous::Context>(static_cast<int>(rank),
                                                              static_cast<int>(size));
  context->setTimeout(std::chrono::seconds(o.timeoutS));
  context->connectFullMesh(store, device);
  return context;
}

void runIterations(const std::shared_ptr<gloo::Context>& context, const Options& o) {
  Runner runner(context, std::max<size_t>(1, o.bytes / sizeof(Elem)));
  for (long it = 0; it < o.iters; ++it) {
    for (const char* op : kOps) {
      if (o.only.empty() || o.only == op) {
        runner.run(op, it);
      }
    }
    if (o.sleepMs > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(o.sleepMs));
    }
  }
}

// --workers: the all-reduces numbered in program order (tags from 1), run by `workers`
// threads that share the context and take them in order, as PyTorch's process group does.
void runQueue(const std::shared_ptr<gloo::Context>& context, const Options& o) {
  const long rank = context->rank, size = context->size;
  const size_t most = std::max<size_t>(1, o.bytes / sizeof(Elem));
  std::atomic<long> next{0};
  std::atomic<bool> stop{false};
  std::vector<std::string> errors(static_cast<size_t>(o.workers));
  std::vector<std::thread> workers;
  for (long w = 0; w < o.workers; ++w) {
    workers.emplace_back([&, w] {
      uint64_t seed = static_cast<uint64_t>(rank) * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(w) + 1;
      auto rnd = [&seed] {  // splitmix64: the same pauses for the same rank and worker
        uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
      };
      try {
        for (;;) {
          const long it = next.fetch_add(1);
          if (it >= o.iters || stop.load()) return;
          const uint32_t tag = static_cast<uint32_t>(it + 1);
          // Sizes from `most` down to 1 element, neighbours different.
          size_t count = std::max<size_t>(1, most >> (it % 7));
          if (it % 3 == 1 && count > 1) --count;
          if (rank != 0 && o.jitterMs > 0 && rnd() % 3 == 0) {
            std::this_thread::sleep_for(std::chrono::microseconds(
                rnd() % static_cast<uint64_t>(o.jitterMs * 1000 + 1)));
          }
          std::vector<Elem> buf(count);
          for (size_t i = 0; i < count; ++i) buf[i] = value(rank, i, it);
          gloo::AllreduceOptions opts(context);
          opts.setOutput(buf.data(), count);
          opts.setReduceFunction(&sumInt);
          opts.setTag(tag);
          gloo::allreduce(opts);
          for (size_t i = 0; i < count; ++i) {
            Elem want = 0;
            for (long r = 0; r < size; ++r) want += value(r, i, it);
            expectEq("allreduce", it, i, buf[i], want);
          }
        }
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(w)] = e.what();
        stop.store(true);
      }
    });
  }
  for (auto& t : workers) t.join();
  for (long w = 0; w < o.workers; ++w) {
    if (!errors[static_cast<size_t>(w)].empty()) {
      throw Failure("worker " + std::to_string(w) + ": " + errors[static_cast<size_t>(w)]);
    }
  }
}

// --fork-world: a child forked without exec builds a world of its own (one rank, its own
// device: the parent's loop thread does not exist in the child), runs one all-reduce and
// leaves with _exit. ringside does not record such a child; the parent's trace counts its calls.
bool forkedWorld(const std::string& storeDir, const std::string& prefix, const Options& o) {
  const pid_t pid = fork();
  if (pid == 0) {
    try {
      gloo::transport::tcp::attr attr;
      attr.hostname = envOr("GLOO_DEVICE_HOST", "127.0.0.1");
      auto device = gloo::transport::tcp::CreateDevice(attr);
      Options one = o;
      one.iters = 1;
      one.only = "allreduce";
      runIterations(connect(storeDir, prefix, device, 0, 1, one), one);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gloo_collectives: forked child: %s\n", e.what());
      _exit(1);
    }
    _exit(0);
  }
  if (pid < 0) return false;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int run(const Options& o) {
  const long rank = envLong("RANK");
  const long size = envLong("WORLD_SIZE");
  if (size < 1 || rank >= size) {
    usage("RANK must be below WORLD_SIZE");
  }
  const std::string storeDir =
      envOr("GLOO_STORE_DIR", "/tmp/gloo-store-" + envOr("MASTER_PORT", "29500"));
  const std::string prefix =
      envOr("GLOO_STORE_PREFIX", envOr("RINGSIDE_RUN_ID", "gloo-collectives"));
  if (mkdir(storeDir.c_str(), 0777) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "gloo_collectives: cannot create %s: %s\n", storeDir.c_str(),
                 std::strerror(errno));
    return 1;
  }

  gloo::transport::tcp::attr attr;
  attr.hostname = envOr("GLOO_DEVICE_HOST", "127.0.0.1");
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = connect(storeDir, prefix, device, rank, size, o);

  Forker forker(o.forkDuring);
  if (o.workers > 0) {
    runQueue(context, o);
  } else if (o.threads == 1) {
    runIterations(context, o);
  } else {
    // Thread k uses its own context, so its calls are a communicator of their own.
    std::vector<std::thread> workers;
    std::vector<std::string> errors(static_cast<size_t>(o.threads));
    for (long k = 0; k < o.threads; ++k) {
      workers.emplace_back([&, k] {
        try {
          auto mine = connect(storeDir, prefix + "/thread" + std::to_string(k), device, rank,
                              size, o);
          runIterations(mine, o);
        } catch (const std::exception& e) {
          errors[k] = e.what();
        }
      });
    }
    for (auto& w : workers) {
      w.join();
    }
    for (long k = 0; k < o.threads; ++k) {
      if (!errors[k].empty()) {
        throw Failure("thread " + std::to_string(k) + ": " + errors[k]);
      }
    }
  }
  if (const long bad = forker.join(); bad != 0) {
    std::fprintf(stderr, "gloo_collectives: rank %ld: %ld forked children failed\n", rank, bad);
    return 1;
  }
  if (o.forkWorld && !forkedWorld(storeDir, prefix + "/forked-" + std::to_string(rank), o)) {
    std::fprintf(stderr, "gloo_collectives: rank %ld: the forked child's world failed\n", rank);
    return 1;
  }
  // Everyone has finished checking before anyone reports or tears down.
  gloo::BarrierOptions closing(context);
  gloo::barrier(closing);
  if (rank == 0) {
    const size_t bytes = std::max<size_t>(1, o.bytes / sizeof(Elem)) * sizeof(Elem);
    if (o.workers > 0) {
      std::printf("OK allreduce ranks=%ld calls=%ld workers=%ld bytes=%zu\n", size, o.iters,
                  o.workers, bytes);
    }
    for (const char* op : kOps) {
      if (o.workers == 0 && (o.only.empty() || o.only == op)) {
        std::printf("OK %s ranks=%ld iters=%ld bytes=%zu", op, size, o.iters, bytes);
        if (o.threads > 1) {
          std::printf(" threads=%ld", o.threads);
        }
        std::printf("\n");
      }
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parseArgs(argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_collectives: rank %s: FAILED: %s\n",
                 std::getenv("RANK") != nullptr ? std::getenv("RANK") : "?", e.what());
    return 1;
  }
}
