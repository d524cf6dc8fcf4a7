// Malformed input at a rank, in process: mutated and random frames fed to
// the engine over a socket pair, mutated hellos at a listener during the
// handshake, garbage at the rendezvous store. Never a crash (run under ASan),
// never an allocation sized by the peer (but a stashed early frame, within the engine's budget),
// never a hang; legitimate traffic
// still goes through afterwards.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <thread>

#include "engine.h"
#include "handshake.h"
#include "io.h"
#include "job.h"
#include "ringside/reference/rendezvous.h"
#include "wire.h"

namespace ringside::reference {
namespace {

using namespace detail;

constexpr uint64_t kToken = 0xfeedbeefcafe1234ull;
constexpr uint64_t kSeq = 5;
constexpr size_t kPayload = 64;

// Expects one message of kPayload bytes (kind ring, step 3, chunk 2) into `dst`.
class OneMessage final : public Schedule {
 public:
  explicit OneMessage(char* dst) : dst_(dst) {
    recvs.push_back(RecvStream{0, FrameKind::kRing, 1, 0});
  }
  Message sendMessage(size_t, uint32_t) override { return {}; }
  Message recvMessage(size_t, uint32_t) override {
    Message m;
    m.ptr = dst_;
    m.bytes = kPayload;
    m.step = 3;
    m.chunk = 2;
    m.phase = static_cast<uint8_t>(collector::Phase::kReduceScatter);
    return m;
  }
  void received(size_t, uint32_t, char*) override { got = true; }
  bool got = false;

 private:
  char* dst_;
};

std::string validFrame() {
  FrameHeader h;
  h.kind = static_cast<uint8_t>(FrameKind::kRing);
  h.phase = static_cast<uint8_t>(collector::Phase::kReduceScatter);
  h.token = kToken;
  h.seq = kSeq;
  h.step = 3;
  h.chunk = 2;
  h.length = kPayload;
  unsigned char b[kFrameHeaderBytes];
  encodeFrame(h, b);
  std::string f(reinterpret_cast<char*>(b), sizeof b);
  for (size_t i = 0; i < kPayload; ++i) f.push_back(static_cast<char>(i * 3));
  return f;
}

// Feeds `bytes` then EOF to a fresh link; returns the engine's verdict.
bool feed(const std::string& bytes, std::string* error, char* dst) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) std::abort();
  setNonBlocking(sv[0]);
  std::thread writer([&] {
    writeFull(sv[1], bytes.data(), bytes.size(), Clock::now() + std::chrono::seconds(5));
    ::shutdown(sv[1], SHUT_WR);
  });
  std::vector<Link> links(1);
  links[0].fd = sv[0];
  links[0].peer = 1;
  OneMessage s(dst);
  ScratchPool pool;
  s.pool = &pool;
  EngineParams p;
  p.token = kToken;
  p.seq = kSeq;
  p.timeout = std::chrono::seconds(5);
  bool ok = runEngine(s, links, p, error);
  writer.join();
  ::close(sv[0]);
  ::close(sv[1]);
  return ok && s.got;
}

TEST(Fuzz, FramesAtTheEngine) {
  char dst[kPayload];
  std::string err;
  const std::string good = validFrame();
  ASSERT_TRUE(feed(good, &err, dst)) << err;
  EXPECT_EQ(std::memcmp(dst, good.data() + kFrameHeaderBytes, kPayload), 0);

  std::mt19937 gen(12345);
  auto rnd = [&](size_t n) { return static_cast<size_t>(gen() % n); };
  int rejected = 0;
  for (int it = 0; it < 400; ++it) {
    std::string f = good;
    bool must_fail = true;
    switch (it % 8) {
      case 0:
        f[rnd(kFrameHeaderBytes)] ^= static_cast<char>(1 + rnd(255));
        break;   // any header byte
      case 1: {  // huge or wrong length
        unsigned char* p = reinterpret_cast<unsigned char*>(f.data());
        put64(p + 32, it % 16 == 1 ? ~uint64_t{0} - rnd(1000)
                                   : static_cast<uint64_t>(rnd(1 << 20)) + kPayload + 1);
        break;
      }
      case 2:
        f.resize(rnd(kFrameHeaderBytes));
        break;  // truncated header
      case 3:
        f.resize(kFrameHeaderBytes + rnd(kPayload));
        break;   // truncated payload
      case 4: {  // random bytes
        f.assign(rnd(200), '\0');
        for (char& c : f) c = static_cast<char>(gen());
        break;
      }
      case 5: {  // an abort frame with an oversized or plain reason
        FrameHeader h;
        h.kind = static_cast<uint8_t>(FrameKind::kAbort);
        h.token = kToken;
        h.seq = kSeq;
        h.length = it % 16 == 5 ? (uint64_t{1} << 40) : 11;
        unsigned char b[kFrameHeaderBytes];
        encodeFrame(h, b);
        f.assign(reinterpret_cast<char*>(b), sizeof b);
        f += "rank 9 died";
        break;
      }
      case 6:
        f[kFrameHeaderBytes + rnd(kPayload)] ^= 0x55;
        must_fail = false;
        break;   // payload: still valid
      case 7: {  // followed by the next collective's frame: parked, fine for this one
        std::string next = good;
        put64(reinterpret_cast<unsigned char*>(next.data()) + 16, kSeq + 1);
        f += next;
        break;
      }
    }
    if (it % 8 == 7) must_fail = false;
    bool ok = feed(f, &err, dst);
    if (must_fail) {
      EXPECT_FALSE(ok) << "case " << it % 8 << " accepted";
      EXPECT_FALSE(err.empty());
      EXPECT_NE(err.find("rank 1"), std::string::npos)
          << err;  // names the peer (or the abort's origin)
      ++rejected;
    } else {
      EXPECT_TRUE(ok) << "case " << it % 8 << ": " << err;
    }
  }
  EXPECT_EQ(rejected, 300);
}

TEST(Fuzz, HellosAtTheListener) {
  int port = 0;
  std::string err;
  Fd listener(listenTcp("127.0.0.1", 0, &port, &err));
  ASSERT_GE(listener.get(), 0) << err;
  std::vector<std::string> addrs = {joinHostPort("127.0.0.1", port), "127.0.0.1:1"};
  // Rank 0 accepts rank 1 while the fuzzer's connections arrive first.
  std::vector<Link> links0;
  std::string err0;
  bool ok0 = false;
  HandshakeParams p0;
  p0.listen_fd = listener.get();
  p0.rank = 0;
  p0.world_size = 2;
  p0.token = kToken;
  p0.addresses = &addrs;
  p0.accept = {1};
  p0.deadline = Clock::now() + std::chrono::seconds(20);

  std::mt19937 gen(777);
  std::vector<int> silent;
  for (int it = 0; it < 200; ++it) {
    Hello h;
    h.kind = static_cast<uint8_t>(HelloKind::kHello);
    h.token = kToken;
    h.rank = 1;
    h.world_size = 2;
    unsigned char b[kHelloBytes];
    encodeHello(h, b);
    std::string bytes(reinterpret_cast<char*>(b), sizeof b);
    switch (it % 4) {
      case 0:
        bytes[gen() % kHelloBytes] ^= static_cast<char>(1 + gen() % 255);
        break;
      case 1:
        bytes.resize(gen() % kHelloBytes);
        break;
      case 2:
        for (char& c : bytes) c = static_cast<char>(gen());
        break;
      case 3:
        put64(reinterpret_cast<unsigned char*>(bytes.data()) + 8, kToken + 1 + gen());
        break;  // other job
    }
    Fd fd(dialTcp("127.0.0.1", port, Clock::now() + std::chrono::seconds(5), &err));
    ASSERT_GE(fd.get(), 0) << err;
    writeFull(fd.get(), bytes.data(), bytes.size(), Clock::now() + std::chrono::seconds(1));
    if (it % 50 == 0) silent.push_back(fd.release());  // a few stay open and silent
  }
  std::thread acceptor([&] { ok0 = connectPeers(p0, &links0, &err0); });
  std::vector<Link> links1;
  HandshakeParams p1 = p0;
  p1.listen_fd = -1;
  p1.rank = 1;
  p1.accept = {};
  p1.dial = {0};
  bool ok1 = connectPeers(p1, &links1, &err);
  acceptor.join();
  EXPECT_TRUE(ok0) << err0;
  EXPECT_TRUE(ok1) << err;
  ASSERT_EQ(links0.size(), 1u);
  ASSERT_EQ(links1.size(), 1u);
  EXPECT_EQ(links0[0].peer, 1);
  EXPECT_EQ(links1[0].peer, 0);
  // The link carries a frame.
  const std::string good = validFrame();
  ASSERT_EQ(
      writeFull(links1[0].fd, good.data(), good.size(), Clock::now() + std::chrono::seconds(2)),
      IoStatus::kOk);
  unsigned char back[kFrameHeaderBytes];
  ASSERT_EQ(readFull(links0[0].fd, back, sizeof back, Clock::now() + std::chrono::seconds(2)),
            IoStatus::kOk);
  EXPECT_EQ(decodeFrame(back).length, kPayload);
  for (int fd : silent) ::close(fd);
  ::close(links0[0].fd);
  ::close(links1[0].fd);
}

TEST(Fuzz, GarbageAtTheRendezvousStore) {
  const int port = test::freePort();
  RendezvousOptions o;
  o.master_port = port;
  o.rank = 0;
  o.world_size = 2;
  o.job_token = kToken;
  o.timeout = std::chrono::seconds(5);
  std::string err;
  auto master = Rendezvous::connect(o, &err);
  ASSERT_TRUE(master) << err;
  std::mt19937 gen(99);
  for (int it = 0; it < 100; ++it) {
    KvHeader h;
    h.op = static_cast<uint8_t>(KvOp::kSet);
    h.token = kToken;
    h.key_len = 3;
    h.value_len = 4;
    unsigned char b[kKvHeaderBytes];
    encodeKv(h, b);
    std::string bytes(reinterpret_cast<char*>(b), sizeof b);
    bytes += "keyVALU";
    switch (it % 4) {
      case 0:
        bytes[gen() % kKvHeaderBytes] ^= static_cast<char>(1 + gen() % 255);
        break;
      case 1:
        put32(reinterpret_cast<unsigned char*>(bytes.data()) + 20, 0xffffffffu - gen() % 100);
        break;  // oversized
      case 2:
        bytes.resize(gen() % kKvHeaderBytes);
        break;
      case 3:
        for (char& c : bytes) c = static_cast<char>(gen());
        break;
    }
    Fd fd(dialTcp("127.0.0.1", port, Clock::now() + std::chrono::seconds(5), &err));
    ASSERT_GE(fd.get(), 0) << err;
    writeFull(fd.get(), bytes.data(), bytes.size(), Clock::now() + std::chrono::seconds(1));
  }
  // The store still serves its job.
  o.rank = 1;
  auto client = Rendezvous::connect(o, &err);
  ASSERT_TRUE(client) << err;
  ASSERT_TRUE(client->set("k", std::string("v\0v", 3), &err)) << err;
  std::string v;
  ASSERT_TRUE(master->get("k", &v, &err)) << err;
  EXPECT_EQ(v, std::string("v\0v", 3));
}

}  // namespace
}  // namespace ringside::reference
