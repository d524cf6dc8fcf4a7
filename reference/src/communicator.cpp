// reference/src/communicator.cpp — Communicator over TCP: setup, all-reduce, ping-pong, tracing.
//
// Transport and algorithms are apart: this file owns the links (handshake.cpp
// makes them), picks an algorithm (ring.cpp, tree.cpp build a Schedule) and
// hands both to the engine (engine.cpp), which only moves bytes.
#include "ringside/reference/communicator.h"

#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <shared_mutex>

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

// The bandwidth probe: this host's first rank sends msgs[k] messages of `bytes` over links[k],
// to every peer at once, and times its receives. With one peer (a host pair's round) both ends
// send at once: a full-duplex link loaded both ways, as multipath loads it. With every peer (the
// last part) it shows what the host's NIC takes in all.
class ProbeSchedule final : public Schedule {
 public:
  ProbeSchedule(const std::vector<int>& links, const std::vector<uint32_t>& msgs, const char* out,
              char* in, size_t bytes)
      : out_(out), in_(in), bytes_(bytes), at_(links.size()) {
    for (size_t k = 0; k < links.size(); ++k) {
      sends.push_back(SendStream{links[k], FrameKind::kPing, msgs[k], msgs[k], 0});
      recvs.push_back(RecvStream{links[k], FrameKind::kPing, msgs[k], 0});
      at_[k].resize(msgs[k]);
    }
  }
  Message sendMessage(size_t, uint32_t index) override { return message(const_cast<char*>(out_), index); }
  Message recvMessage(size_t, uint32_t index) override { return message(in_, index); }
  void received(size_t stream, uint32_t index, char*) override { at_[stream][index] = Clock::now(); }
  // Bytes per second into this rank from all peers together, from the first message's arrival
  // (from any peer) to the last's, so neither a late start on the other side nor a connection's
  // first round trips count (a microsecond at least: all at once reads as very fast). Each
  // peer's own rate is not used: under contention one stream may arrive in a burst while
  // another waits.
  double rate() const {
    size_t got = 0;
    Clock::time_point first = Clock::time_point::max(), last = Clock::time_point::min();
    for (const auto& at : at_) {
      got += at.size();
      for (auto t : at) first = std::min(first, t), last = std::max(last, t);
    }
    if (got < 2) return 0;
    std::chrono::duration<double> d = last - first;
    return static_cast<double>(bytes_) * static_cast<double>(got - 1) / std::max(d.count(), 1e-6);
  }

 private:
  Message message(char* p, uint32_t index) const { return roundMessage(p, bytes_, index); }
  const char* out_;
  char* in_;  // every peer's messages land in one buffer: only their times matter
  size_t bytes_;
  std::vector<std::vector<Clock::time_point>> at_;
};

// Probe size, per host pair and direction: first 6 messages of 256 KiB (timed over the last 5,
// 1.25 MiB: 50 ms at 200 Mbit/s); then, when that went faster than kProbeTarget, as many more as
// take about kProbeTarget at the slower direction's first rate (at most 128: 32 MiB), so that
// a fast link is not timed over a few hundred microseconds.
constexpr size_t kProbeBytes = 256 * 1024;
constexpr uint32_t kProbeMessages = 6;
constexpr uint32_t kProbeMaxMessages = 128;
constexpr double kProbeTarget = 0.02;  // seconds

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
    engine_ = std::make_unique<Engine>(links_, link_token_, o_.rank, o_.timeout);
    link_of_.assign(static_cast<size_t>(n), -1);
    trees_[0] = treeNode(0, o_.rank, n);
    trees_[1] = treeNode(1, o_.rank, n);
    std::vector<int> dial, accept;
    for (int peer : algorithmPeers(o_.rank, n)) (peer < o_.rank ? dial : accept).push_back(peer);
    if (!connect(dial, accept, error)) return false;
    if (col::isActive()) traceComm();
    if (o_.prepare_multipath && n > 1) {
      if (std::string why = prepareMultipath(); !why.empty()) {
        *error = why;
        return false;
      }
    }
    return true;
  }

  int rank() const override { return o_.rank; }
  int size() const override { return o_.world_size; }

  bool allreduce(void* data, size_t count, DType dtype, ReduceOp op, Algorithm algorithm,
                 std::string* error) override {
    return allreduceAs(false, 0, data, count, dtype, op, algorithm, error);
  }

  bool allreduceTagged(uint64_t id, void* data, size_t count, DType dtype, ReduceOp op,
                       Algorithm algorithm, std::string* error) override {
    return allreduceAs(true, id, data, count, dtype, op, algorithm, error);
  }

 private:
  // allreduce() (tagged false: the next of the communicator's own numbers) and
  // allreduceTagged() (the caller's id; several at once).
  bool allreduceAs(bool tagged, uint64_t id, void* data, size_t count, DType dtype, ReduceOp op,
                   Algorithm algorithm, std::string* error) {
    std::string name = tagged ? "allreduce tag " + std::to_string(id) : std::string();
    auto fail = [&](const std::string& why) {
      if (error != nullptr) *error = name + ": " + why;
      return false;
    };
    if (!tagged) name = "allreduce seq " + std::to_string(peekSeq());
    if (tagged && (id & kTaggedSeqBit) != 0) return fail("id out of range (at most 2^63-1)");
    if (!collective::referenceRuns(algorithm)) return fail("unknown algorithm");
    if (std::string why = checkCall(data, count, dtype, op); !why.empty()) return fail(why);
    std::shared_lock<std::shared_mutex> calls(calls_);
    if (tagged && algorithm == Algorithm::kMultipath && o_.world_size > 1 && !hasPlan())
      // Planning is collective and changes the links: with calls in flight on other threads
      // it would wait for them while they wait for peers that are planning.
      return fail("multipath with tagged calls needs CommunicatorOptions::prepare_multipath");
    if (algorithm == Algorithm::kMultipath && o_.world_size > 1 && !hasPlan()) {
      // First multipath call (every rank at the same point) on a communicator created without
      // prepare_multipath: plan, connect the peers the rings need that the ring and tree did
      // not, say what was chosen. The probe, if any, uses sequence numbers of its own. Alone:
      // it changes the links.
      calls.unlock();
      {
        std::unique_lock<std::shared_mutex> alone(calls_);
        if (!plan_) {
          if (std::string why = prepareMultipath(); !why.empty()) {
            setBroken(why);
            return fail(why);
          }
        }
      }
      calls.lock();
    }
    uint64_t seq = tagged ? (kTaggedSeqBit | id) : nextSeq();
    if (!tagged) name = "allreduce seq " + std::to_string(seq);
    const size_t esize = dtypeSize(dtype);

    const bool tracing = col::isActive();
    col::Event ev;
    std::vector<col::Event> events;
    int64_t t0 = tracing ? col::nowNs() : 0;
    if (tracing) {
      ev.id = col::newCollectiveId();
      ev.comm = static_cast<int16_t>(traceComm());
    }

    if (tagged && !enterTagged(id))
      return fail("a call with this id is already in flight on this communicator");
    bool ok = true;
    std::string why;
    if (o_.world_size > 1 && count > 0) {
      CollectiveArgs a = collectiveArgs(data, count, dtype, op);
      std::unique_ptr<Schedule> s = algorithm == Algorithm::kRing ? makeRingSchedule(a, link_of_)
                                    : algorithm == Algorithm::kTree
                                        ? makeTreeSchedule(a, trees_, link_of_)
                                        : makeMultipathSchedule(a, *plan_, link_of_);
      ok = run(*s, seq, false, tracing ? &ev : nullptr, &events, &why);
    }

    if (tagged) leaveTagged(id);
    if (tracing) {
      for (const col::Event& e : events) col::emit(e);
      col::CollectiveCall call;
      call.op = col::Op::kAllreduce;
      call.library = collective::referenceLibrary(algorithm);
      call.algorithm = algorithm;
      call.dtype = dtype;
      call.reduce_op = op;
      call.count = count;
      call.bytes = count * esize;
      if (tagged) call.seq = static_cast<int64_t>(id);
      col::emitCollective(ev.comm, ev.id, call, t0, col::nowNs(), ok);
    }
    if (!ok) {
      setBroken(why);
      return fail(why);
    }
    return true;
  }

 public:
  bool ringFloor(void* data, size_t count, DType dtype, ReduceOp op, std::string* error) override {
    uint64_t seq = peekSeq();
    auto fail = [&](const std::string& why) {
      if (error != nullptr) *error = "ringFloor seq " + std::to_string(seq) + ": " + why;
      return false;
    };
    if (std::string why = checkCall(data, count, dtype, op); !why.empty()) return fail(why);
    std::shared_lock<std::shared_mutex> calls(calls_);
    seq = nextSeq();
    if (o_.world_size < 2 || count == 0) return true;
    CollectiveArgs a = collectiveArgs(data, count, dtype, op);
    a.unordered = true;
    auto s = makeRingSchedule(a, link_of_);
    std::string why;
    if (!run(*s, seq, false, nullptr, nullptr, &why)) {
      setBroken(why);
      return fail(why);
    }
    return true;
  }

  bool pingPong(int a, int b, size_t bytes, int iters, double* seconds,
                std::string* error) override {
    // Alone: it may connect a peer (a change of the links).
    std::unique_lock<std::shared_mutex> alone(calls_);
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
    if (std::string broken = brokenWhy(); !broken.empty())
      return fail("communicator unusable after an earlier failure (" + broken + ")");
    ++ping_seq_;
    if ((o_.rank != a && o_.rank != b) || a == b || iters == 0) return true;
    const int peer = o_.rank == a ? b : a;
    std::string why;
    if (link_of_[static_cast<size_t>(peer)] < 0) {
      // Not a ring or tree neighbour: connect now (the lower rank listens).
      std::vector<int> dial, accept;
      (peer < o_.rank ? dial : accept).push_back(peer);
      if (!connect(dial, accept, &why)) {
        setBroken(why);
        return fail(why);
      }
    }
    ping_buf_.resize(std::max<size_t>(bytes, 1));
    auto s = makePingSchedule(o_.rank == a, link_of_[static_cast<size_t>(peer)], ping_buf_.data(),
                              bytes, static_cast<uint32_t>(iters));
    auto start = Clock::now();
    if (!run(*s, seq, true, nullptr, nullptr, &why)) {
      setBroken(why);
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
    if (std::string broken = brokenWhy(); !broken.empty())
      return "communicator unusable after an earlier failure (" + broken + ")";
    return "";
  }

  // Plans the multipath rings and connects the peers they need. Capacities: RINGSIDE_TOPOLOGY's
  // when set; else, when the ranks are on more than one host, a probe of every host pair; else
  // every rank pair equal. Collective (every rank at the same point). "" when ready, else why not.
  std::string prepareMultipath() {
    const int n = o_.world_size;
    LinkCapacities caps;
    const char* topology = std::getenv("RINGSIDE_TOPOLOGY");
    if ((topology == nullptr || *topology == '\0') && n > 2 && n <= kMaxPlannedRanks) {
      std::vector<std::string> host;
      for (const std::string& a : addresses_) {
        std::string h;
        int port = 0;
        host.push_back(splitHostPort(a, &h, &port) ? h : a);
      }
      ProbeHosts hosts = probeHosts(host);
      if (hosts.first.size() > 1) {
        if (std::string why = probeHostPairs(hosts, &caps); !why.empty())
          return "multipath bandwidth probe: " + why;
      } else {
        caps = equalCapacities(n);
        caps.source = "no topology (RINGSIDE_TOPOLOGY unset), every rank on one host: every "
                      "rank pair taken as equal";
      }
    } else {
      caps = capacitiesFromEnvironment(n);
    }
    auto plan = std::make_unique<MultipathPlan>(planMultipath(caps));
    std::vector<int> dial, accept;
    for (int peer : multipathPeers(*plan, o_.rank))
      if (link_of_[static_cast<size_t>(peer)] < 0) (peer < o_.rank ? dial : accept).push_back(peer);
    std::string why;
    if (!connect(dial, accept, &why)) return "multipath setup: " + why;
    if (o_.rank == 0) std::fprintf(stderr, "ringside: %s\n", plan->note.c_str());
    if (col::isActive()) col::noteMeta("multipath_plan", plan->note.c_str());
    std::lock_guard<std::mutex> lock(state_);
    plan_ = std::move(plan);
    return "";
  }

  // Measures the rate between every pair of hosts' first ranks, in rounds of disjoint pairs,
  // and shares the matrix (an untraced ring all-reduce). Collective over every rank, so that
  // every rank plans from the same numbers. The measured rates go to the trace meta
  // (`multipath_probe`).
  std::string probeHostPairs(const ProbeHosts& hosts, LinkCapacities* caps) {
    const int n = o_.world_size;
    const size_t nh = hosts.first.size();
    const auto started = Clock::now();
    const int mine = hosts.host_of[static_cast<size_t>(o_.rank)];
    const bool prober = hosts.first[static_cast<size_t>(mine)] == o_.rank;
    std::string why;
    if (prober) {  // the first ranks of all hosts connect to each other
      std::vector<int> dial, accept;
      for (int first : hosts.first)
        if (first != o_.rank && link_of_[static_cast<size_t>(first)] < 0)
          (first < o_.rank ? dial : accept).push_back(first);
      if (!connect(dial, accept, &why)) return why;
    }
    // rate: each host pair on its own; then per host what it received from all at once.
    std::vector<double> rate(nh * nh + nh, 0.0);
    std::vector<uint32_t> msgs(nh, kProbeMessages);  // per other host: the pair's message count
    std::vector<char> out(kProbeBytes, 1), in(kProbeBytes);
    for (const auto& round : probeRounds(static_cast<int>(nh))) {
      const uint64_t seq = ping_seq_;
      ping_seq_ += 4;  // every rank counts every round's four exchanges
      if (!prober) continue;
      int other = -1;
      for (auto [a, b] : round)
        if (a == mine || b == mine) other = a == mine ? b : a;
      if (other < 0) continue;
      const int link = link_of_[static_cast<size_t>(hosts.first[static_cast<size_t>(other)])];
      // A small message each way first: both ends are in this round before the timed part
      // (a peer that started early would have its bytes waiting in our socket buffer, read at
      // memory speed).
      ProbeSchedule sync({link}, {1}, out.data(), in.data(), 1);
      if (!run(sync, seq, true, nullptr, nullptr, &why)) return why;
      ProbeSchedule first({link}, {kProbeMessages}, out.data(), in.data(), kProbeBytes);
      if (!run(first, seq + 1, true, nullptr, nullptr, &why)) return why;
      double got = first.rate();
      // Both ends learn both first rates and size the second part alike.
      double theirs = 0;
      ProbeSchedule tell({link}, {1}, reinterpret_cast<const char*>(&got),
                         reinterpret_cast<char*>(&theirs), sizeof got);
      if (!run(tell, seq + 2, true, nullptr, nullptr, &why)) return why;
      const double slower = std::min(got, theirs);
      if (slower > 0 && slower * kProbeTarget > kProbeBytes * (kProbeMessages - 1)) {
        const auto count = static_cast<uint32_t>(
            std::min<double>(std::ceil(slower * kProbeTarget / kProbeBytes) + 1, kProbeMaxMessages));
        ProbeSchedule more({link}, {count}, out.data(), in.data(), kProbeBytes);
        if (!run(more, seq + 3, true, nullptr, nullptr, &why)) return why;
        got = more.rate();
        msgs[static_cast<size_t>(other)] = count;
      }
      rate[static_cast<size_t>(other) * nh + static_cast<size_t>(mine)] = got;
    }
    // All at once: every first rank to every other, each pair with the message count both ends
    // chose for it above. Links that share a NIC (a switch) show it here and not above.
    const uint64_t fan_seq = ping_seq_;
    ping_seq_ += 2;  // a 1-byte message to every peer first (all are in this part), then the fan
    if (prober) {
      std::vector<int> links;
      std::vector<uint32_t> counts;
      for (size_t h = 0; h < nh; ++h) {
        if (static_cast<int>(h) == mine) continue;
        links.push_back(link_of_[static_cast<size_t>(hosts.first[h])]);
        counts.push_back(msgs[h]);
      }
      ProbeSchedule sync(links, std::vector<uint32_t>(links.size(), 1), out.data(), in.data(), 1);
      if (!run(sync, fan_seq, true, nullptr, nullptr, &why)) return why;
      ProbeSchedule fan(links, counts, out.data(), in.data(), kProbeBytes);
      if (!run(fan, fan_seq + 1, true, nullptr, nullptr, &why)) return why;
      rate[nh * nh + static_cast<size_t>(mine)] = fan.rate();
    }
    // Everyone gets every rate: a sum over ranks, each entry written by one rank only.
    CollectiveArgs a = collectiveArgs(rate.data(), rate.size(), DType::kF64, ReduceOp::kSum);
    auto share = makeRingSchedule(a, link_of_);
    if (!run(*share, nextSeq(), false, nullptr, nullptr, &why)) return why;
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
    char probe[96];
    std::snprintf(probe, sizeof probe, "%zu hosts, %.0f ms", nh, ms);
    const std::vector<double> all_in(rate.begin() + static_cast<std::ptrdiff_t>(nh * nh), rate.end());
    rate.resize(nh * nh);
    *caps = probedCapacities(n, hosts, rate, all_in, probe);
    if (col::isActive()) {
      std::string text;
      for (size_t x = 0; x < nh; ++x)
        for (size_t y = 0; y < nh; ++y) {
          if (x == y) continue;
          char one[160];
          std::snprintf(one, sizeof one, "%s%s->%s %.1f MB/s", text.empty() ? "" : ", ",
                        hosts.names[x].c_str(), hosts.names[y].c_str(), rate[x * nh + y] / 1e6);
          text += one;
        }
      text += "; all at once, received in all:";
      for (size_t x = 0; x < nh; ++x) {
        char one[160];
        std::snprintf(one, sizeof one, "%s %s %.1f MB/s", x == 0 ? "" : ",", hosts.names[x].c_str(),
                      all_in[x] / 1e6);
        text += one;
      }
      col::noteMeta("multipath_probe", text.c_str());
    }
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
    const bool ok = connectPeers(hp, &links_, error);
    for (size_t i = before; i < links_.size(); ++i)
      link_of_[static_cast<size_t>(links_[i].peer)] = static_cast<int>(i);
    engine_->linksAdded();
    return ok;
  }

  // One collective through the engine; any number of threads at once (each its own seq).
  // `events` gets its messages when `trace` is set.
  bool run(Schedule& s, uint64_t seq, bool ping, const col::Event* trace,
           std::vector<col::Event>* events, std::string* why) {
    std::unique_ptr<ScratchPool> pool = takePool();
    s.pool = pool.get();
    pool->prepare(s.scratch_bytes);
    EngineParams p;
    p.token = link_token_;
    p.seq = seq;
    p.rank = o_.rank;
    p.ping = ping;
    p.timeout = o_.timeout;
    if (trace != nullptr && events != nullptr) {
      size_t messages = 0;
      for (auto& x : s.sends) messages += x.total;
      for (auto& x : s.recvs) messages += x.total;
      events->reserve(messages);
      p.events = events;
      p.trace_template.comm = trace->comm;
      p.trace_template.id = trace->id;
    }
    const bool ok = engine_->run(s, p, why);
    // After a failure the schedule may still hold chunks of the pool: it is dropped.
    if (ok) givePool(std::move(pool));
    return ok;
  }

  std::unique_ptr<ScratchPool> takePool() {
    std::lock_guard<std::mutex> lock(state_);
    if (pools_.empty()) return std::make_unique<ScratchPool>();
    auto p = std::move(pools_.back());
    pools_.pop_back();
    return p;
  }
  void givePool(std::unique_ptr<ScratchPool> p) {
    std::lock_guard<std::mutex> lock(state_);
    pools_.push_back(std::move(p));
  }

  uint64_t peekSeq() {
    std::lock_guard<std::mutex> lock(state_);
    return seq_;
  }
  uint64_t nextSeq() {
    std::lock_guard<std::mutex> lock(state_);
    return seq_++;
  }
  std::string brokenWhy() const {
    std::lock_guard<std::mutex> lock(state_);
    return broken_;
  }
  void setBroken(const std::string& why) {
    std::lock_guard<std::mutex> lock(state_);
    if (broken_.empty()) broken_ = why;
  }
  bool enterTagged(uint64_t id) {
    std::lock_guard<std::mutex> lock(state_);
    return in_flight_.insert(id).second;
  }
  void leaveTagged(uint64_t id) {
    std::lock_guard<std::mutex> lock(state_);
    in_flight_.erase(id);
  }
  bool hasPlan() {
    std::lock_guard<std::mutex> lock(state_);
    return plan_ != nullptr;
  }
  int32_t traceComm() {
    std::lock_guard<std::mutex> lock(state_);
    if (comm_ < 0) registerTrace();
    return comm_;
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
  std::unique_ptr<Engine> engine_;  // moves every collective's frames over links_
  // Collectives hold it shared; what changes the links (connecting a peer, planning multipath
  // on its first call) holds it alone.
  std::shared_mutex calls_;
  mutable std::mutex state_;  // guards what follows, to ping_buf_
  std::unique_ptr<MultipathPlan> plan_;  // at creation (prepare_multipath) or the first multipath call
  uint64_t seq_ = 0;       // untagged allreduce and ringFloor calls (frames and errors)
  uint64_t ping_seq_ = 0;  // pingPong calls (alone)
  std::string broken_;     // why the communicator failed, once it did
  int32_t comm_ = -1;      // collector communicator index
  std::set<uint64_t> in_flight_;  // tagged calls' ids
  std::vector<std::unique_ptr<ScratchPool>> pools_;  // one per collective in flight, kept for reuse
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
