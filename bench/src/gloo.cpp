#include "ringside/bench/gloo.h"

#include "ringside/collector/collector.h"
#include "ringside/reference/half.h"
#include "ringside/reference/types.h"

#if RINGSIDE_BENCH_GLOO
#include <gloo/allreduce.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/types.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <exception>
#include <vector>
#endif

namespace ringside::bench {

#if RINGSIDE_BENCH_GLOO
namespace {

constexpr char kHex[] = "0123456789abcdef";

// Gloo's rendezvous values are binary (socket addresses); the Rendezvous
// carries strings, so they travel hex-encoded.
std::string toHex(const std::vector<char>& data) {
  std::string out;
  out.reserve(data.size() * 2);
  for (char c : data) {
    auto u = static_cast<unsigned char>(c);
    out += kHex[u >> 4];
    out += kHex[u & 15];
  }
  return out;
}

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool fromHex(const std::string& text, std::vector<char>* out) {
  if (text.size() % 2 != 0) return false;
  out->clear();
  out->reserve(text.size() / 2);
  for (size_t i = 0; i < text.size(); i += 2) {
    int hi = hexDigit(text[i]);
    int lo = hexDigit(text[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi << 4 | lo));
  }
  return true;
}

// gloo::rendezvous::Store over ringside's Rendezvous key-value store. Gloo
// expects failures as exceptions; connect() catches them.
class RendezvousStore : public gloo::rendezvous::Store {
 public:
  RendezvousStore(reference::Rendezvous* rendezvous, std::string prefix)
      : rendezvous_(rendezvous), prefix_(std::move(prefix)) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    std::string error;
    if (!rendezvous_->set(prefix_ + key, toHex(data), &error)) {
      throw gloo::IoException("rendezvous set " + key + ": " + error);
    }
  }

  std::vector<char> get(const std::string& key) override {
    std::string value;
    std::string error;
    if (!rendezvous_->get(prefix_ + key, &value, &error)) {
      throw gloo::IoException("rendezvous get " + key + ": " + error);
    }
    std::vector<char> data;
    if (!fromHex(value, &data)) throw gloo::IoException("rendezvous get " + key + ": bad value");
    return data;
  }

  // Rendezvous::get already waits (up to its own deadline) until a key exists.
  void wait(const std::vector<std::string>& keys) override {
    for (const std::string& key : keys) get(key);
  }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds&) override {
    wait(keys);
  }

 private:
  reference::Rendezvous* rendezvous_;
  std::string prefix_;
};

// bfloat16 as PyTorch hands it to Gloo (c10::BFloat16): gloo::sum<T> and
// friends combine two values through float and round back to nearest even.
struct Bf16 {
  uint16_t bits = 0;
  static float toFloat(Bf16 v) { return reference::bf16ToFloat(v.bits); }
  static Bf16 fromFloat(float f) { return Bf16{reference::floatToBf16(f)}; }
};
inline Bf16 operator+(Bf16 a, Bf16 b) {
  return Bf16::fromFloat(Bf16::toFloat(a) + Bf16::toFloat(b));
}
inline Bf16 operator*(Bf16 a, Bf16 b) {
  return Bf16::fromFloat(Bf16::toFloat(a) * Bf16::toFloat(b));
}
inline bool operator<(Bf16 a, Bf16 b) { return Bf16::toFloat(a) < Bf16::toFloat(b); }

// Gloo's own reduce functions, as PyTorch's ProcessGroupGloo passes them:
// gloo::sum<T>, gloo::product<T>, gloo::min<T>, gloo::max<T> for the element
// type T (gloo::float16 for f16, a bfloat16 like c10::BFloat16 for bf16).
template <class T>
void setTyped(gloo::AllreduceOptions* opts, void* data, size_t count, collector::ReduceOp op) {
  opts->setOutput(static_cast<T*>(data), count);
  using Fn = void (*)(void*, const void*, const void*, size_t);
  Fn fn = &gloo::sum<T>;
  switch (op) {
    case collector::ReduceOp::kProd: fn = &gloo::product<T>; break;
    case collector::ReduceOp::kMin: fn = &gloo::min<T>; break;
    case collector::ReduceOp::kMax: fn = &gloo::max<T>; break;
    default: break;
  }
  opts->setReduceFunction(fn);
}

bool setOutputAndReduce(gloo::AllreduceOptions* opts, void* data, size_t count,
                        collector::DType dtype, collector::ReduceOp op) {
  switch (dtype) {
    case collector::DType::kF32: setTyped<float>(opts, data, count, op); return true;
    case collector::DType::kF64: setTyped<double>(opts, data, count, op); return true;
    case collector::DType::kI32: setTyped<int32_t>(opts, data, count, op); return true;
    case collector::DType::kI64: setTyped<int64_t>(opts, data, count, op); return true;
    case collector::DType::kF16: setTyped<gloo::float16>(opts, data, count, op); return true;
    case collector::DType::kBF16: setTyped<Bf16>(opts, data, count, op); return true;
    default: return false;
  }
}

class GlooBenchImpl : public GlooBench {
 public:
  GlooBenchImpl(std::shared_ptr<gloo::rendezvous::Context> context, const Options& options)
      : context_(std::move(context)), options_(options) {
    if (collector::isActive()) {
      comm_ = collector::registerComm(context_.get(), options_.rank, options_.size, "gloo");
    }
  }

  bool allreduce(void* data, size_t count, collector::DType dtype, collector::ReduceOp op,
                 bool bcube, std::string* error) override {
    const size_t element = reference::dtypeSize(dtype);
    gloo::AllreduceOptions opts(context_);
    if (!setOutputAndReduce(&opts, data, count, dtype, op)) {
      *error = std::string("gloo: unsupported dtype ") + collector::dtypeName(dtype);
      return false;
    }
    if (bcube) opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::BCUBE);
    opts.setTimeout(options_.timeout);

    const bool traced = comm_ >= 0 && collector::isActive();
    const uint64_t id = traced ? collector::newCollectiveId() : 0;
    if (traced) collector::setCurrentCollective(id);
    bool ok = true;
    const int64_t t0 = collector::nowNs();
    try {
      gloo::allreduce(opts);
    } catch (const std::exception& e) {
      ok = false;
      *error = std::string("gloo allreduce: ") + e.what();
    }
    const int64_t t1 = collector::nowNs();
    if (traced) {
      collector::setCurrentCollective(0);
      collector::CollectiveCall call;
      call.op = collector::Op::kAllreduce;
      call.library = collector::Library::kGloo;
      call.algorithm = bcube ? collector::Algorithm::kBcube : collector::Algorithm::kRing;
      call.dtype = dtype;
      call.reduce_op = op;
      call.count = count;
      call.bytes = count * element;
      collector::emitCollective(comm_, id, call, t0, t1, ok);
    }
    return ok;
  }

 private:
  std::shared_ptr<gloo::rendezvous::Context> context_;
  Options options_;
  int32_t comm_ = -1;
};

}  // namespace

bool glooBenchAvailable() { return true; }

std::unique_ptr<GlooBench> GlooBench::connect(reference::Rendezvous* rendezvous,
                                              const Options& options, std::string* error) {
  try {
    gloo::transport::tcp::attr attr;
    if (!options.iface.empty()) {
      attr.iface = options.iface;
    } else {
      attr.hostname = options.hostname;
    }
    std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(options.rank, options.size);
    context->setTimeout(options.timeout);
    RendezvousStore store(rendezvous, "ringside-bench/gloo/");
    context->connectFullMesh(store, device);
    return std::make_unique<GlooBenchImpl>(std::move(context), options);
  } catch (const std::exception& e) {
    *error = std::string("cannot connect Gloo: ") + e.what();
    return nullptr;
  }
}

#else  // no Gloo in this build

bool glooBenchAvailable() { return false; }

std::unique_ptr<GlooBench> GlooBench::connect(reference::Rendezvous*, const Options&,
                                              std::string* error) {
  *error = "this ringside was built without Gloo (libgloo-dev)";
  return nullptr;
}

#endif

}  // namespace ringside::bench
