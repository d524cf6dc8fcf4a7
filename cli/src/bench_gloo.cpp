#include "bench_gloo.h"

#include "ringside/collector/collector.h"
#include "ringside/reference/types.h"

#if RINGSIDE_BENCH_GLOO
#include <gloo/allreduce.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <cstring>
#include <exception>
#include <vector>
#endif

namespace ringside::cli {

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

// Gloo's reduce function: c = a (op) b, where c may be a or b.
// reference::reduceInto computes out (op)= in; all four ops commute.
gloo::AllreduceOptions::Func reduceFunction(collector::DType dtype, collector::ReduceOp op) {
  const size_t element = reference::dtypeSize(dtype);
  return [dtype, op, element](void* c, const void* a, const void* b, size_t n) {
    if (c == a) {
      reference::reduceInto(c, b, n, dtype, op);
    } else if (c == b) {
      reference::reduceInto(c, a, n, dtype, op);
    } else {
      std::memcpy(c, a, n * element);
      reference::reduceInto(c, b, n, dtype, op);
    }
  };
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
    // Gloo only needs the element size (segments are whole elements); the
    // element type is the reduce function's business.
    switch (element) {
      case 2: opts.setOutput(static_cast<uint16_t*>(data), count); break;
      case 4: opts.setOutput(static_cast<uint32_t*>(data), count); break;
      case 8: opts.setOutput(static_cast<uint64_t*>(data), count); break;
      default:
        *error = "gloo: unsupported element size " + std::to_string(element);
        return false;
    }
    opts.setReduceFunction(reduceFunction(dtype, op));
    if (bcube) opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::BCUBE);
    opts.setTimeout(options_.timeout);

    const bool traced = comm_ >= 0 && collector::isActive();
    collector::Event event;
    if (traced) {
      event.id = collector::newCollectiveId();
      event.key = static_cast<uint64_t>(collector::nextSeq(comm_));
      collector::setCurrentCollective(event.id);
    }
    bool ok = true;
    event.t0 = collector::nowNs();
    try {
      gloo::allreduce(opts);
    } catch (const std::exception& e) {
      ok = false;
      *error = std::string("gloo allreduce: ") + e.what();
    }
    event.t1 = collector::nowNs();
    if (traced) {
      collector::setCurrentCollective(0);
      event.kind = collector::EventKind::kCollective;
      event.bytes = count * element;
      event.aux = count;
      event.peer = -1;
      event.comm = static_cast<int16_t>(comm_);
      event.op = static_cast<uint8_t>(collector::Op::kAllreduce);
      event.library = static_cast<uint8_t>(collector::Library::kGloo);
      event.dtype = static_cast<uint8_t>(dtype);
      event.reduce_op = static_cast<uint8_t>(op);
      event.algorithm = static_cast<uint8_t>(bcube ? collector::Algorithm::kBcube
                                                   : collector::Algorithm::kRing);
      event.status = ok ? 0 : 1;
      collector::emit(event);
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

}  // namespace ringside::cli
