// gloo_faults: a small Gloo training-like loop over TCP that misbehaves on purpose, the fault
// corpus of ringside's flight recorder and watchdog (docs/flight-recorder.md). Each step is two
// all-reduces (a "gradient" and a "loss"), marked with ringside_step() when the job runs under
// ringside. One rank (--rank R) injects --fault at step --step S:
//   none      healthy run
//   stop      the rank stops joining: it sleeps --sleep-s seconds before the step's collectives
//   op        desync of op: the rank calls all-gather where the others all-reduce
//   size      desync of size: the rank all-reduces a buffer twice as long
//   exit      the rank exits (status 3) at the start of the step
//   kill      the rank SIGKILLs itself at the start of the step
//   stopsig   the rank SIGSTOPs itself at the start of the step (a later SIGCONT resumes it)
// Environment: RANK, WORLD_SIZE, GLOO_STORE_DIR (rendezvous folder, made if missing; default
// /tmp/gloo-faults-$MASTER_PORT), GLOO_DEVICE_HOST.
// Options: --steps N (10), --elements E (1024), --timeout-s T (Gloo's timeout, 15), --step-ms MS
// (compute per step, 20). Exit status: 0 ok, 1 a Gloo error (its timeout included), 2 usage.
#include <dlfcn.h>
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
  long steps = 10, elements = 1024, timeout_s = 15, step_ms = 20, fault_rank = 1, fault_step = 5;
  double sleep_s = 60;
  std::string fault = "none";
};

const char* envOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--fault") o->fault = v;
    else if (k == "--rank") o->fault_rank = std::atol(v);
    else if (k == "--step") o->fault_step = std::atol(v);
    else if (k == "--steps") o->steps = std::atol(v);
    else if (k == "--elements") o->elements = std::atol(v);
    else if (k == "--timeout-s") o->timeout_s = std::atol(v);
    else if (k == "--step-ms") o->step_ms = std::atol(v);
    else if (k == "--sleep-s") o->sleep_s = std::atof(v);
    else return false;
  }
  return argc % 2 == 1;
}

void sum(void* c, const void* a, const void* b, size_t n) {
  auto* out = static_cast<float*>(c);
  const auto* x = static_cast<const float*>(a);
  const auto* y = static_cast<const float*>(b);
  for (size_t i = 0; i < n; ++i) out[i] = x[i] + y[i];
}

void allreduce(const std::shared_ptr<gloo::Context>& ctx, std::vector<float>* buf) {
  gloo::AllreduceOptions opts(ctx);
  opts.setOutput(buf->data(), buf->size());
  opts.setReduceFunction(&sum);
  gloo::allreduce(opts);
}

void allgather(const std::shared_ptr<gloo::Context>& ctx, std::vector<float>* buf) {
  std::vector<float> out(buf->size() * static_cast<size_t>(ctx->size));
  gloo::AllgatherOptions opts(ctx);
  opts.setInput(buf->data(), buf->size());
  opts.setOutput(out.data(), out.size());
  gloo::allgather(opts);
}

// One step of the loop on this rank, with the fault when it is this rank's and this step's.
void step(const std::shared_ptr<gloo::Context>& ctx, const Options& o, long s, bool faulty) {
  std::vector<float> grad(static_cast<size_t>(o.elements), 1.0f), loss(1, 1.0f);
  if (faulty && o.fault == "exit") std::exit(3);
  if (faulty && o.fault == "kill") ::raise(SIGKILL);
  if (faulty && o.fault == "stopsig") ::raise(SIGSTOP);
  if (faulty && o.fault == "stop")
    std::this_thread::sleep_for(std::chrono::duration<double>(o.sleep_s));
  std::this_thread::sleep_for(std::chrono::milliseconds(o.step_ms));
  if (faulty && o.fault == "op") {
    allgather(ctx, &grad);
  } else {
    if (faulty && o.fault == "size") grad.resize(grad.size() * 2, 1.0f);
    allreduce(ctx, &grad);
  }
  allreduce(ctx, &loss);
  (void)s;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  const char* rank_text = std::getenv("RANK");
  const char* size_text = std::getenv("WORLD_SIZE");
  if (!parse(argc, argv, &o) || rank_text == nullptr || size_text == nullptr) {
    std::fprintf(stderr, "usage: RANK=r WORLD_SIZE=n gloo_faults [--fault none|stop|op|size|exit|"
                         "kill|stopsig] [--rank R] [--step S] [--steps N] [--timeout-s T]\n");
    return 2;
  }
  const long rank = std::atol(rank_text), size = std::atol(size_text);
  // ringside_step() when the job runs under ringside (the preload library defines it).
  using StepFn = void (*)(int64_t);
  auto mark = reinterpret_cast<StepFn>(::dlsym(RTLD_DEFAULT, "ringside_step"));
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = envOr("GLOO_DEVICE_HOST", "127.0.0.1");
    auto device = gloo::transport::tcp::CreateDevice(attr);
    const std::string store_dir =
        envOr("GLOO_STORE_DIR", (std::string("/tmp/gloo-faults-") + envOr("MASTER_PORT", "0")).c_str());
    ::mkdir(store_dir.c_str(), 0700);  // every rank tries; one makes it
    gloo::rendezvous::FileStore file_store(store_dir);
    gloo::rendezvous::PrefixStore store(envOr("RINGSIDE_RUN_ID", "gloo-faults"), file_store);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(static_cast<int>(rank), static_cast<int>(size));
    ctx->setTimeout(std::chrono::seconds(o.timeout_s));
    ctx->connectFullMesh(store, device);
    for (long s = 0; s < o.steps; ++s) {
      if (mark != nullptr) mark(s);
      step(ctx, o, s, o.fault != "none" && rank == o.fault_rank && s == o.fault_step);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_faults: rank %ld: %s\n", rank, e.what());
    return 1;
  }
  if (rank == 0) std::printf("OK %ld steps\n", o.steps);
  return 0;
}
