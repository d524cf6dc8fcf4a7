// reference/src/communicator.cpp — Communicator over TCP: setup, all-reduce, ping-pong, tracing.
//
// Transport and algorithms are apart: this file owns the links (handshake.cpp
// makes them), picks an algorithm (ring.cpp, tree.cpp build a Schedule) and
// hands both to the engine (engine.cpp), which only moves bytes.
#include "ringside/reference/communicator.h"

#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "algorithms.h"
#include "handshake.h"
#include "io.h"
#include "multipath.h"
#include "ringside/collector/collector.h"
#include "topology.h"
#include "wire.h"

namespace ringside::reference {

namespace {

namespace col = ringside::collector;
using namespace detail;

std::string advertiseAddress(const CommunicatorOptions& o) {
  if (!o.advertise_address.empty()) return o.advertise_address;
  if (!o.listen_address.empty() && o.listen_address != "0.0.0.0" && o.listen_address != "::")
    return o.listen_address;
  if (const char* m = std::getenv("MASTER_ADDR"); m != nullptr && *m != '\0') {
    std::string local = localAddressToward(m);
    if (!local.empty()) return local;
  }
  return "127.0.0.1";
}

// Where the listener binds: the address given, else the address peers are told
// to dial (127.0.0.1 for a local job): no other interface takes connections. A
// chosen advertise address may be a name or a NAT's: then every interface.
std::string listenAddress(const CommunicatorOptions& o) {
  if (!o.listen_address.empty()) return o.listen_address;
  if (!o.advertise_address.empty()) return "0.0.0.0";
  return advertiseAddress(o);
}

// The run's link secret. Each rank publishes "host:port#<32 hex digits>" (128
// random bits) in the address exchange; every rank mixes the job token with all
// ranks' secrets in rank order into the token that hellos and frames carry.
// Only processes that took part in the exchange know it, so a stranger that
// learnt the job token (by default derived from MASTER_ADDR:PORT) is dropped
// like any other stray connection.
constexpr char kSecretMark = '#';
constexpr size_t kSecretHex = 32;

bool randomSecret(std::string* hex, std::string* error) {
  unsigned char raw[kSecretHex / 2];
  size_t got = 0;
  while (got < sizeof raw) {
    ssize_t n = ::getrandom(raw + got, sizeof raw - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = "getrandom: " + errnoText(errno);
      return false;
    }
    got += static_cast<size_t>(n);
  }
  static const char kDigits[] = "0123456789abcdef";
  hex->clear();
  for (unsigned char c : raw) {
    hex->push_back(kDigits[c >> 4]);
    hex->push_back(kDigits[c & 15]);
  }
  return true;
}

// FNV-1a over the job token and the secrets, then SplitMix64's finalizer so
// every input bit reaches every output bit.
uint64_t linkToken(uint64_t job_token, const std::vector<std::string>& secrets) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](unsigned char c) { h = (h ^ c) * 1099511628211ull; };
  for (int i = 0; i < 8; ++i) mix(static_cast<unsigned char>(job_token >> (8 * i)));
  for (const std::string& s : secrets) {
    for (unsigned char c : s) mix(c);
    mix('|');
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

class TcpCommunicator final : public Communicator {
 public:
  explicit TcpCommunicator(const CommunicatorOptions& o) : o_(o) {}

  ~TcpCommunicator() override {
    for (Link& l : links_)
      if (l.fd >= 0) ::close(l.fd);
  }

  bool setup(const ExchangeFn& exchange, std::string* error) {
    const int n = o_.world_size;
    std::string mine;
    link_token_ = o_.job_token;
    if (n > 1) {
      int port = 0;
      listen_.reset(listenTcp(listenAddress(o_), 0, &port, error));
      if (listen_.get() < 0) return false;
      std::string secret;
      if (!randomSecret(&secret, error)) return false;
      mine = joinHostPort(advertiseAddress(o_), port) + kSecretMark + secret;
    }
    if (!exchange) {
      *error = "no exchange function";
      return false;
    }
    if (!exchange(mine, &addresses_, error)) return false;
    if (addresses_.size() != static_cast<size_t>(n)) {
      *error = "address exchange returned " + std::to_string(addresses_.size()) + " entries for " +
               std::to_string(n) + " ranks";
      return false;
    }
    if (n > 1) {
      std::vector<std::string> secrets;
      for (int r = 0; r < n; ++r) {
        std::string& a = addresses_[static_cast<size_t>(r)];
        size_t mark = a.rfind(kSecretMark);
        if (mark == std::string::npos || a.size() - mark - 1 != kSecretHex) {
          *error = "rank " + std::to_string(r) +
                   " published no link secret (another version of ringside?)";
          return false;
        }
        secrets.push_back(a.substr(mark + 1));
        a.resize(mark);
      }
      link_token_ = linkToken(o_.job_token, secrets);
    }
    link_of_.assign(static_cast<size_t>(n), -1);
    trees_[0] = treeNode(0, o_.rank, n);
    trees_[1] = treeNode(1, o_.rank, n);
    std::vector<int> dial, accept;
    for (int peer : algorithmPeers(o_.rank, n)) (peer < o_.rank ? dial : accept).push_back(peer);
    if (!connect(dial, accept, error)) return false;
    if (col::isActive()) registerTrace();
    return true;
  }

  int rank() const override { return o_.rank; }
  int size() const override { return o_.world_size; }

  bool allreduce(void* data, size_t count, DType dtype, ReduceOp op, Algorithm algorithm,
                 std::string* error) override {
    const uint64_t seq = seq_;
    auto fail = [&](const std::string& why) {
      if (error != nullptr) *error = "allreduce seq " + std::to_string(seq) + ": " + why;
      return false;
    };
    if (algorithm != Algorithm::kRing && algorithm != Algorithm::kTree &&
        algorithm != Algorithm::kMultipath)
      return fail("unknown algorithm");
    if (std::string why = checkCall(data, count, dtype, op); !why.empty()) return fail(why);
    if (algorithm == Algorithm::kMultipath && !plan_ && o_.world_size > 1) {
      // First multipath call (every rank at the same point): plan, connect the peers the
      // rings need that the ring and tree did not, say what was chosen.
      if (std::string why = prepareMultipath(); !why.empty()) {
        broken_ = why;
        return fail(why);
      }
    }
    const size_t esize = dtypeSize(dtype);
    ++seq_;

    const bool tracing = col::isActive();
    if (tracing && comm_ < 0) registerTrace();
    col::Event ev;
    int64_t t0 = tracing ? col::nowNs() : 0;
    if (tracing) {
      ev.id = col::newCollectiveId();
      ev.comm = static_cast<int16_t>(comm_);
      events_.clear();
    }

    bool ok = true;
    std::string why;
    if (o_.world_size > 1 && count > 0) {
      CollectiveArgs a = collectiveArgs(data, count, dtype, op);
      std::unique_ptr<Schedule> s = algorithm == Algorithm::kRing ? makeRingSchedule(a, link_of_)
                                    : algorithm == Algorithm::kTree
                                        ? makeTreeSchedule(a, trees_, link_of_)
                                        : makeMultipathSchedule(a, *plan_, link_of_);
      ok = run(*s, seq, false, tracing ? &ev : nullptr, &why);
    }

    if (tracing) {
      for (const col::Event& e : events_) col::emit(e);
      col::CollectiveCall call;
      call.op = col::Op::kAllreduce;
      call.library = algorithm == Algorithm::kRing   ? col::Library::kRingsideRing
                     : algorithm == Algorithm::kTree ? col::Library::kRingsideTree
                                                     : col::Library::kRingsideMultipath;
      call.algorithm = algorithm == Algorithm::kRing   ? col::Algorithm::kRing
                       : algorithm == Algorithm::kTree ? col::Algorithm::kTree
                                                       : col::Algorithm::kMultipath;
      call.dtype = dtype;
      call.reduce_op = op;
      call.count = count;
      call.bytes = count * esize;
      col::emitCollective(comm_, ev.id, call, t0, col::nowNs(), ok);
    }
    if (!ok) {
      broken_ = why;
      return fail(why);
    }
    return true;
  }

  bool ringFloor(void* data, size_t count, DType dtype, ReduceOp op, std::string* error) override {
    const uint64_t seq = seq_;
    auto fail = [&](const std::string& why) {
      if (error != nullptr) *error = "ringFloor seq " + std::to_string(seq) + ": " + why;
      return false;
    };
    if (std::string why = checkCall(data, count, dtype, op); !why.empty()) return fail(why);
    ++seq_;
    if (o_.world_size < 2 || count == 0) return true;
    CollectiveArgs a = collectiveArgs(data, count, dtype, op);
    a.unordered = true;
    auto s = makeRingSchedule(a, link_of_);
    std::string why;
    if (!run(*s, seq, false, nullptr, &why)) {
      broken_ = why;
      return fail(why);
    }
    return true;
  }

  bool pingPong(int a, int b, size_t bytes, int iters, double* seconds,
                std::string* error) override {
    const uint64_t seq = ping_seq_;
    auto fail = [&](const std::string& why) {
      if (error != nullptr)
        *error = "pingPong " + std::to_string(seq) + " (ranks " + std::to_string(a) + ", " +
                 std::to_string(b) + "): " + why;
      return false;
    };
    if (seconds != nullptr) *seconds = 0;
    const int n = o_.world_size;
    if (a < 0 || a >= n || b < 0 || b >= n) return fail("rank out of range");
    if (iters < 0 || bytes > kMaxFramePayload) return fail("bad size or iteration count");
    if (!broken_.empty())
      return fail("communicator unusable after an earlier failure (" + broken_ + ")");
    ++ping_seq_;
    if ((o_.rank != a && o_.rank != b) || a == b || iters == 0) return true;
    const int peer = o_.rank == a ? b : a;
    std::string why;
    if (link_of_[static_cast<size_t>(peer)] < 0) {
      // Not a ring or tree neighbour: connect now (the lower rank listens).
      std::vector<int> dial, accept;
      (peer < o_.rank ? dial : accept).push_back(peer);
      if (!connect(dial, accept, &why)) {
        broken_ = why;
        return fail(why);
      }
    }
    ping_buf_.resize(std::max<size_t>(bytes, 1));
    auto s = makePingSchedule(o_.rank == a, link_of_[static_cast<size_t>(peer)], ping_buf_.data(),
                              bytes, static_cast<uint32_t>(iters));
    auto start = Clock::now();
    if (!run(*s, seq, true, nullptr, &why)) {
      broken_ = why;
      return fail(why);
    }
    std::chrono::duration<double> d = Clock::now() - start;
    if (seconds != nullptr) *seconds = d.count() / iters;
    return true;
  }

 private:
  // Why a collective call with these arguments cannot run ("" when it can).
  std::string checkCall(const void* data, size_t count, DType dtype, ReduceOp op) const {
    const size_t esize = dtypeSize(dtype);
    if (esize == 0) return std::string("unsupported dtype '") + col::dtypeName(dtype) + "'";
    if (op != ReduceOp::kSum && op != ReduceOp::kProd && op != ReduceOp::kMin && op != ReduceOp::kMax)
      return "unsupported reduce op";
    if (count > 0 && data == nullptr) return "null buffer";
    if (count > (kMaxFramePayload / esize) * static_cast<size_t>(o_.world_size)) return "buffer too large";
    if (!broken_.empty()) return "communicator unusable after an earlier failure (" + broken_ + ")";
    return "";
  }

  // Plans the multipath rings from RINGSIDE_TOPOLOGY (or equal links) and connects the peers
  // they need. "" when ready, else why not.
  std::string prepareMultipath() {
    auto plan = std::make_unique<MultipathPlan>(
        planMultipath(capacitiesFromEnvironment(o_.world_size)));
    std::vector<int> dial, accept;
    for (int peer : multipathPeers(*plan, o_.rank))
      if (link_of_[static_cast<size_t>(peer)] < 0) (peer < o_.rank ? dial : accept).push_back(peer);
    std::string why;
    if (!connect(dial, accept, &why)) return "multipath setup: " + why;
    if (o_.rank == 0) std::fprintf(stderr, "ringside: %s\n", plan->note.c_str());
    if (col::isActive()) col::noteMeta("multipath_plan", plan->note.c_str());
    plan_ = std::move(plan);
    return "";
  }

  CollectiveArgs collectiveArgs(void* data, size_t count, DType dtype, ReduceOp op) const {
    CollectiveArgs a;
    a.data = static_cast<char*>(data);
    a.count = count;
    a.dtype = dtype;
    a.op = op;
    a.rank = o_.rank;
    a.size = o_.world_size;
    a.chunk_bytes = o_.chunk_bytes;
    return a;
  }

  bool connect(const std::vector<int>& dial, const std::vector<int>& accept, std::string* error) {
    HandshakeParams hp;
    hp.listen_fd = listen_.get();
    hp.rank = o_.rank;
    hp.world_size = o_.world_size;
    hp.token = link_token_;
    hp.addresses = &addresses_;
    hp.dial = dial;
    hp.accept = accept;
    hp.deadline = Clock::now() + o_.timeout;
    size_t before = links_.size();
    if (!connectPeers(hp, &links_, error)) return false;
    for (size_t i = before; i < links_.size(); ++i)
      link_of_[static_cast<size_t>(links_[i].peer)] = static_cast<int>(i);
    return true;
  }

  bool run(Schedule& s, uint64_t seq, bool ping, const col::Event* trace, std::string* why) {
    s.pool = &pool_;
    pool_.prepare(s.scratch_bytes);
    EngineParams p;
    p.token = link_token_;
    p.seq = seq;
    p.ping = ping;
    p.timeout = o_.timeout;
    if (trace != nullptr) {
      size_t messages = 0;
      for (auto& x : s.sends) messages += x.total;
      for (auto& x : s.recvs) messages += x.total;
      events_.reserve(messages);
      p.events = &events_;
      p.trace_template.comm = trace->comm;
      p.trace_template.id = trace->id;
    }
    return runEngine(s, links_, p, why);
  }

  void registerTrace() {
    const char* name = o_.comm_name.empty() ? "ringside" : o_.comm_name.c_str();
    comm_ = col::registerComm(this, o_.rank, o_.world_size, name);
    col::setIdentity(o_.rank, o_.world_size, "ringside");
  }

  CommunicatorOptions o_;
  Fd listen_;  // kept open: pingPong may connect peers later
  uint64_t link_token_ = 0;  // the job token mixed with every rank's secret
  std::vector<std::string> addresses_;
  std::vector<Link> links_;
  std::vector<int> link_of_;
  TreeNode trees_[2];
  std::unique_ptr<MultipathPlan> plan_;  // at the first multipath call
  uint64_t seq_ = 0;       // allreduce calls (frames and errors)
  uint64_t ping_seq_ = 0;  // pingPong calls
  std::string broken_;     // why the communicator failed, once it did
  int32_t comm_ = -1;      // collector communicator index
  ScratchPool pool_;
  std::vector<col::Event> events_;
  std::vector<char> ping_buf_;
};

}  // namespace

std::unique_ptr<Communicator> Communicator::create(const CommunicatorOptions& options,
                                                   const ExchangeFn& exchange, std::string* error) {
  std::string err;
  auto fail = [&](const std::string& why) -> std::unique_ptr<Communicator> {
    if (error != nullptr)
      *error = "communicator setup (rank " + std::to_string(options.rank) + " of " +
               std::to_string(options.world_size) + "): " + why;
    return nullptr;
  };
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size)
    return fail("rank/world size not valid");
  if (options.timeout.count() <= 0) return fail("timeout must be positive");
  auto c = std::make_unique<TcpCommunicator>(options);
  if (!c->setup(exchange, &err)) return fail(err);
  return c;
}

}  // namespace ringside::reference
