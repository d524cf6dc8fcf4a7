// reference/src/rendezvous.cpp — the MASTER_ADDR:MASTER_PORT key-value store.
//
// Protocol (docs/reference.md): each request is one kv frame (24-byte header,
// key, value); the server answers each with one kv frame. A GET for a key not
// yet set is answered when some client sets it, so get() waits without
// polling. The server runs in rank 0's process, on a background thread, for
// the lifetime of rank 0's Rendezvous object; every rank (0 included) is a
// client over TCP. Headers are validated before any key/value byte is read
// or allocated; a wrong token gets one error reply and the connection closed.
#include "ringside/reference/rendezvous.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "io.h"
#include "wire.h"

namespace ringside::reference {

namespace {

using detail::Clock;
using detail::Deadline;
using detail::Fd;
using detail::IoStatus;
using detail::KvHeader;
using detail::KvOp;

// ---------------------------------------------------------------- server --

// How long accept() is left alone after it failed for want of descriptors (EMFILE, ENFILE, ...):
// the listening socket stays readable, so polling it at once again would spin.
constexpr std::chrono::milliseconds kAcceptBackoff{100};
// A client whose new connection the store closed at once waits this long before dialing again.
constexpr std::chrono::milliseconds kRedialPause{50};

class KvServer {
 public:
  static std::unique_ptr<KvServer> start(const std::string& master_addr, int port, uint64_t token,
                                         size_t max_clients, std::chrono::milliseconds idle,
                                         std::string* error) {
    std::unique_ptr<KvServer> s(new KvServer(token, max_clients, idle, port));
    int bound = 0;
    // A local job's store (MASTER_ADDR on the loopback) takes no connection from
    // another host; otherwise every interface, as torchrun's store does.
    const bool loopback = master_addr == "localhost" || master_addr.rfind("127.", 0) == 0;
    s->listen_.reset(detail::listenTcp(loopback ? "127.0.0.1" : "0.0.0.0", port, &bound, error));
    if (s->listen_.get() < 0) return nullptr;
    int p[2];
    if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
      *error = "pipe: " + detail::errnoText(errno);
      return nullptr;
    }
    s->wake_read_.reset(p[0]);
    s->wake_write_.reset(p[1]);
    s->thread_ = std::thread([raw = s.get()] { raw->run(); });
    return s;
  }

  ~KvServer() {
    char c = 1;
    ssize_t n = ::write(wake_write_.get(), &c, 1);
    (void)n;
    if (thread_.joinable()) thread_.join();
  }

 private:
  struct Client {
    Fd fd;
    std::string in;
    std::string out;
    size_t out_off = 0;
    bool waiting = false;  // a GET is parked until its key is set
    std::string wait_key;
    bool close_after_flush = false;
    bool dead = false;
    // Sent a well-formed request with the job's token: a rank, never closed for being idle.
    bool member = false;
    Clock::time_point accepted;
  };

  KvServer(uint64_t token, size_t max_clients, std::chrono::milliseconds idle, int port)
      : token_(token),
        max_clients_(std::max<size_t>(max_clients, 1)),
        idle_(std::max(idle, std::chrono::milliseconds(1))),
        // A connection younger than this is not closed to make room: a rank's first request
        // is on its way.
        grace_(std::min(std::chrono::milliseconds(1000), idle_ / 4)),
        port_(port) {}

  // One line on stderr per kind of trouble (the store runs inside rank 0 of a user's job).
  void warnOnce(bool* said, const std::string& text) {
    if (*said) return;
    *said = true;
    std::fprintf(stderr, "ringside: rendezvous store on port %d: %s\n", port_, text.c_str());
  }

  size_t liveClients() const {
    size_t n = 0;
    for (const auto& c : clients_) n += c->dead ? 0 : 1;
    return n;
  }

  void drop(Client& c) {
    c.dead = true;
    c.fd.reset();  // its descriptor is free at once
  }

  // Closes connections that sent nothing (no request with the job's token) for idle_.
  void closeIdle(Clock::time_point now) {
    for (auto& c : clients_) {
      if (c->dead || c->member || now - c->accepted < idle_) continue;
      drop(*c);
      warnOnce(&said_idle_, "closed a connection that sent no request within " +
                                std::to_string(idle_.count()) +
                                " ms (another program connecting to MASTER_PORT?)");
    }
  }

  // Room for one more connection: under the limit, or the oldest connection that is no
  // member and older than grace_ is closed for it. False: the new one is to be refused (a
  // rank's client dials again when its new connection is closed before any reply).
  bool makeRoom(Clock::time_point now) {
    if (liveClients() < max_clients_) return true;
    // Connections that closed or sent garbage since the last poll free their slots at once.
    for (auto& c : clients_)
      if (!c->dead && !c->member && !c->close_after_flush) readFrom(*c);
    if (liveClients() < max_clients_) return true;
    Client* oldest = nullptr;
    for (auto& c : clients_) {
      if (c->dead || c->member || now - c->accepted < grace_) continue;
      if (oldest == nullptr || c->accepted < oldest->accepted) oldest = c.get();
    }
    warnOnce(&said_full_, std::to_string(max_clients_) +
                              " connections at once (the limit); closing those that sent "
                              "nothing (another program connecting to MASTER_PORT?)");
    if (oldest == nullptr) return false;
    drop(*oldest);
    return true;
  }

  // Milliseconds until the next idle connection times out or accepting resumes; -1: none.
  int pollTimeoutMs(Clock::time_point now, Clock::time_point accept_resumes) const {
    std::optional<Clock::time_point> next;
    if (accept_resumes > now) next = accept_resumes;
    for (const auto& c : clients_) {
      if (c->dead || c->member) continue;
      const Clock::time_point t = c->accepted + idle_;
      if (!next || t < *next) next = t;
    }
    if (!next) return -1;
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(*next - now).count();
    return static_cast<int>(std::clamp<int64_t>(ms, 1, 60000));
  }

  void reply(Client& c, KvOp op, const std::string& value) {
    unsigned char h[detail::kKvHeaderBytes];
    KvHeader kh;
    kh.op = static_cast<uint8_t>(op);
    kh.token = token_;
    kh.value_len = static_cast<uint32_t>(value.size());
    detail::encodeKv(kh, h);
    c.out.append(reinterpret_cast<const char*>(h), sizeof h);
    c.out.append(value);
  }

  void refuse(Client& c, const std::string& why) {
    reply(c, KvOp::kError, why);
    c.close_after_flush = true;
  }

  // Handles every complete request in c.in (stops while a GET waits).
  void process(Client& c) {
    while (!c.waiting && !c.close_after_flush && !c.dead && c.in.size() >= detail::kKvHeaderBytes) {
      KvHeader h = detail::decodeKv(reinterpret_cast<const unsigned char*>(c.in.data()));
      if (h.magic != detail::kKvMagic || h.version != detail::kWireVersion) {
        c.dead = true;  // not our protocol: no reply
        return;
      }
      if (h.token != token_) return refuse(c, "wrong job token");
      if (h.key_len > detail::kMaxKeyBytes || h.value_len > detail::kMaxValueBytes)
        return refuse(c, "oversized key or value");
      KvOp op = static_cast<KvOp>(h.op);
      if (op != KvOp::kSet && op != KvOp::kGet && op != KvOp::kCheck)
        return refuse(c, "unknown request");
      if (op != KvOp::kSet && h.value_len != 0) return refuse(c, "malformed request");
      c.member = true;  // the job's token in a well-formed header: one of the ranks
      size_t total = detail::kKvHeaderBytes + h.key_len + h.value_len;
      if (c.in.size() < total) return;  // wait for the rest (bounded by the checks above)
      std::string key = c.in.substr(detail::kKvHeaderBytes, h.key_len);
      std::string value = c.in.substr(detail::kKvHeaderBytes + h.key_len, h.value_len);
      c.in.erase(0, total);
      if (op == KvOp::kCheck) {
        reply(c, KvOp::kOk, "");
      } else if (op == KvOp::kSet) {
        reply(c, KvOp::kOk, "");
        kv_[key] = value;
        for (auto& w : clients_) {
          if (w->waiting && w->wait_key == key) {
            w->waiting = false;
            reply(*w, KvOp::kValue, value);
            if (w.get() != &c) process(*w);
          }
        }
      } else {
        auto it = kv_.find(key);
        if (it != kv_.end()) {
          reply(c, KvOp::kValue, it->second);
        } else {
          c.waiting = true;
          c.wait_key = key;
        }
      }
    }
  }

  void readFrom(Client& c) {
    char buf[65536];
    for (;;) {
      ssize_t n = detail::ioRecv(c.fd.get(), buf, sizeof buf);
      if (n > 0) {
        c.in.append(buf, static_cast<size_t>(n));
        process(c);
        if (c.dead || c.close_after_flush) return;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      c.dead = true;  // EOF or error
      return;
    }
  }

  void writeTo(Client& c) {
    while (c.out_off < c.out.size()) {
      iovec iov{c.out.data() + c.out_off, c.out.size() - c.out_off};
      ssize_t n = detail::ioSendv(c.fd.get(), &iov, 1);
      if (n > 0) {
        c.out_off += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      c.dead = true;
      return;
    }
    c.out.clear();
    c.out_off = 0;
    if (c.close_after_flush) c.dead = true;
  }

  // Accepts what is pending. Returns when accept() says there is no more, or pauses accepting
  // (kAcceptBackoff) when it fails for want of descriptors or memory.
  void acceptPending(Clock::time_point now, Clock::time_point* accept_resumes) {
    for (;;) {
      int fd = ::accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        const int e = errno;
        if (e == EINTR || e == ECONNABORTED || e == EPROTO) continue;
        if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
          *accept_resumes = now + kAcceptBackoff;
          warnOnce(&said_accept_, "cannot accept connections: " + detail::errnoText(e) +
                                      " (" + std::to_string(liveClients()) +
                                      " open); trying again every " +
                                      std::to_string(kAcceptBackoff.count()) + " ms");
        }
        return;  // EAGAIN: nothing more pending
      }
      if (!makeRoom(now)) {
        ::close(fd);  // refused: every slot holds a rank or a connection just made
        continue;
      }
      detail::tuneSocket(fd);
      auto c = std::make_unique<Client>();
      c->fd.reset(fd);
      c->accepted = now;
      clients_.push_back(std::move(c));
    }
  }

  void run() {
    std::vector<pollfd> fds;
    Clock::time_point accept_resumes{};
    for (;;) {
      Clock::time_point now = Clock::now();
      closeIdle(now);
      std::erase_if(clients_, [](const std::unique_ptr<Client>& c) { return c->dead; });
      fds.clear();
      fds.push_back({wake_read_.get(), POLLIN, 0});
      // While accepting is paused the listening socket is not polled (it stays readable).
      fds.push_back({now >= accept_resumes ? listen_.get() : -1, POLLIN, 0});
      for (auto& c : clients_) {
        short ev = c->close_after_flush ? 0 : POLLIN;
        if (c->out_off < c->out.size()) ev |= POLLOUT;
        fds.push_back({c->fd.get(), ev, 0});
      }
      int rc = ::poll(fds.data(), fds.size(), pollTimeoutMs(now, accept_resumes));
      if (rc < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[0].revents != 0) return;  // stop requested
      now = Clock::now();
      size_t polled = fds.size() - 2;  // clients accepted below are not polled yet
      if (fds[1].revents & POLLIN) acceptPending(now, &accept_resumes);
      for (size_t i = 0; i < polled; ++i) {
        Client& c = *clients_[i];
        if (c.dead) continue;  // closed to make room for a new connection
        short re = fds[i + 2].revents;
        if (re & (POLLIN | POLLHUP | POLLERR)) readFrom(c);
        if (!c.dead && !c.out.empty()) writeTo(c);
      }
      // Replies produced for waiters of other clients: try to send them now.
      for (auto& c : clients_)
        if (!c->dead && c->out_off < c->out.size()) writeTo(*c);
      std::erase_if(clients_, [](const std::unique_ptr<Client>& c) { return c->dead; });
    }
  }

  uint64_t token_;
  size_t max_clients_;
  std::chrono::milliseconds idle_;
  std::chrono::milliseconds grace_;
  int port_;
  bool said_idle_ = false, said_full_ = false, said_accept_ = false;
  Fd listen_, wake_read_, wake_write_;
  std::thread thread_;
  std::map<std::string, std::string> kv_;
  std::vector<std::unique_ptr<Client>> clients_;
};

// ---------------------------------------------------------------- client --

class TcpRendezvous final : public Rendezvous {
 public:
  explicit TcpRendezvous(const RendezvousOptions& o) : o_(o) {}

  bool start(std::string* error) {
    if (o_.rank == 0) {
      const size_t max_clients =
          o_.store_max_connections > 0 ? static_cast<size_t>(o_.store_max_connections)
                                       : 2 * static_cast<size_t>(o_.world_size) + 64;
      server_ = KvServer::start(o_.master_addr, o_.master_port, o_.job_token, max_clients,
                                o_.store_idle_timeout, error);
      if (!server_) {
        *error = "rendezvous: rank 0 cannot serve the store: " + *error;
        return false;
      }
    }
    Deadline deadline = Clock::now() + o_.timeout;
    std::string value;
    KvOp op;
    // A first request checks the token with the master.
    return request(KvOp::kCheck, "", "", deadline, &op, &value, error);
  }

  bool set(const std::string& key, const std::string& value, std::string* error) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!checkSizes(key, value, error)) return false;
    KvOp op;
    std::string reply;
    return request(KvOp::kSet, key, value, Clock::now() + o_.timeout, &op, &reply, error);
  }

  bool get(const std::string& key, std::string* value, std::string* error) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!checkSizes(key, "", error)) return false;
    KvOp op;
    return request(KvOp::kGet, key, "", Clock::now() + o_.timeout, &op, value, error, &key);
  }

  bool exchange(const std::string& mine, std::vector<std::string>* all,
                std::string* error) override {
    // Keys are numbered per call; every rank makes the same sequence of calls.
    std::string prefix = "ringside/exchange/" + std::to_string(exchanges_++) + "/";
    if (!set(prefix + std::to_string(o_.rank), mine, error)) return false;
    all->assign(static_cast<size_t>(o_.world_size), std::string());
    for (int r = 0; r < o_.world_size; ++r)
      if (!get(prefix + std::to_string(r), &(*all)[static_cast<size_t>(r)], error)) return false;
    // Rank 0 serves the store: it returns only when every rank has read
    // everything, so it may destroy its Rendezvous right after.
    if (!set(prefix + "done/" + std::to_string(o_.rank), "", error)) return false;
    if (o_.rank == 0) {
      std::string ignored;
      for (int r = 1; r < o_.world_size; ++r)
        if (!get(prefix + "done/" + std::to_string(r), &ignored, error)) return false;
    }
    return true;
  }

  int rank() const override { return o_.rank; }
  int worldSize() const override { return o_.world_size; }
  uint64_t jobToken() const override { return o_.job_token; }

 private:
  std::string master() const { return detail::joinHostPort(o_.master_addr, o_.master_port); }

  bool checkSizes(const std::string& key, const std::string& value, std::string* error) {
    if (key.size() > detail::kMaxKeyBytes || value.size() > detail::kMaxValueBytes) {
      *error = "rendezvous: key or value too large";
      return false;
    }
    return true;
  }

  // One request/reply. A failed or timed-out request drops the connection
  // (its reply may still come); the next call dials again.
  bool request(KvOp op, const std::string& key, const std::string& value, Deadline deadline,
               KvOp* reply_op, std::string* reply, std::string* error,
               const std::string* waiting_for = nullptr) {
    unsigned char h[detail::kKvHeaderBytes];
    KvHeader kh;
    kh.op = static_cast<uint8_t>(op);
    kh.token = o_.job_token;
    kh.key_len = static_cast<uint32_t>(key.size());
    kh.value_len = static_cast<uint32_t>(value.size());
    detail::encodeKv(kh, h);
    std::string frame(reinterpret_cast<const char*>(h), sizeof h);
    frame += key;
    frame += value;
    for (;;) {
      const bool fresh = fd_.get() < 0;
      if (fresh) {
        std::string err;
        fd_.reset(detail::dialTcp(o_.master_addr, o_.master_port, deadline, &err));
        if (fd_.get() < 0) {
          *error = "rendezvous: " + err + " (is rank 0 running with MASTER_ADDR/MASTER_PORT " +
                   master() + "?)";
          return false;
        }
      }
      IoStatus st = detail::writeFull(fd_.get(), frame.data(), frame.size(), deadline);
      if (st == IoStatus::kOk) st = detail::readFull(fd_.get(), h, sizeof h, deadline);
      if (st == IoStatus::kOk) break;
      const int e = errno;
      // A new connection closed before any reply: the store, full of connections that are
      // not the job's, refused it. Dial again (every request may be repeated) until the
      // deadline; a store that is gone refuses the dial itself.
      const bool closed = st == IoStatus::kEof ||
                          (st == IoStatus::kError && (e == ECONNRESET || e == EPIPE));
      if (fresh && closed && Clock::now() + kRedialPause < deadline) {
        fd_.reset();
        std::this_thread::sleep_for(kRedialPause);
        continue;
      }
      errno = e;
      return fail(st, waiting_for, error);
    }
    KvHeader r = detail::decodeKv(h);
    // A refusal carries the store's token (not ours) and a short reason.
    bool refusal = r.op == static_cast<uint8_t>(KvOp::kError) && r.value_len <= 4096;
    if (r.magic != detail::kKvMagic || r.version != detail::kWireVersion ||
        (r.token != o_.job_token && !refusal) || r.key_len != 0 ||
        r.value_len > detail::kMaxValueBytes) {
      fd_.reset();
      *error = "rendezvous: malformed reply from " + master() + " (another job's store?)";
      return false;
    }
    std::string v(r.value_len, '\0');
    if (r.value_len > 0) {
      const IoStatus st = detail::readFull(fd_.get(), v.data(), v.size(), deadline);
      if (st != IoStatus::kOk) return fail(st, waiting_for, error);
    }
    *reply_op = static_cast<KvOp>(r.op);
    if (*reply_op == KvOp::kError) {
      fd_.reset();
      *error = "rendezvous: the store at " + master() + " refused us: " + v;
      return false;
    }
    *reply = std::move(v);
    return true;
  }

  bool fail(IoStatus st, const std::string* waiting_for, std::string* error) {
    int e = errno;
    fd_.reset();
    if (st == IoStatus::kTimeout && waiting_for != nullptr)
      *error = "rendezvous: key '" + *waiting_for + "' not set within " +
               std::to_string(o_.timeout.count()) + " ms";
    else if (st == IoStatus::kTimeout)
      *error = "rendezvous: no reply from " + master() + " within " +
               std::to_string(o_.timeout.count()) + " ms";
    else if (st == IoStatus::kEof)
      *error =
          "rendezvous: " + master() + " closed the connection (rank 0 gone, or a wrong job token)";
    else
      *error = "rendezvous: connection to " + master() + " failed: " + detail::errnoText(e);
    return false;
  }

  RendezvousOptions o_;
  std::unique_ptr<KvServer> server_;  // rank 0 only; stops after the client is gone
  Fd fd_;
  std::mutex mu_;
  uint64_t exchanges_ = 0;
};

bool parseInt(const char* s, long lo, long hi, long* out) {
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool parseU64(const char* s, uint64_t* out) {
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 0);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

}  // namespace

bool rendezvousOptionsFromEnv(RendezvousOptions* out, std::string* error) {
  RendezvousOptions o;
  const char* addr = std::getenv("MASTER_ADDR");
  const char* port = std::getenv("MASTER_PORT");
  const char* rank = std::getenv("RANK");
  const char* world = std::getenv("WORLD_SIZE");
  long v = 0;
  if (addr == nullptr || *addr == '\0') {
    *error = "MASTER_ADDR is not set";
    return false;
  }
  o.master_addr = addr;
  if (!parseInt(port, 1, 65535, &v)) {
    *error = port == nullptr ? "MASTER_PORT is not set"
                             : std::string("MASTER_PORT is not a port: '") + port + "'";
    return false;
  }
  o.master_port = static_cast<int>(v);
  if (!parseInt(world, 1, 1 << 20, &v)) {
    *error = world == nullptr
                 ? "WORLD_SIZE is not set"
                 : std::string("WORLD_SIZE is not a positive integer: '") + world + "'";
    return false;
  }
  o.world_size = static_cast<int>(v);
  if (!parseInt(rank, 0, o.world_size - 1, &v)) {
    *error = rank == nullptr ? "RANK is not set"
                             : std::string("RANK '") + rank + "' is not in [0, " +
                                   std::to_string(o.world_size) + ")";
    return false;
  }
  o.rank = static_cast<int>(v);
  const char* tok = std::getenv("RINGSIDE_JOB_TOKEN");
  if (tok != nullptr && *tok != '\0') {
    if (!parseU64(tok, &o.job_token)) {
      *error = std::string("RINGSIDE_JOB_TOKEN is not an integer: '") + tok + "'";
      return false;
    }
  } else {
    // FNV-1a of "addr:port": the same on every rank of a job, different for
    // jobs that use other masters.
    std::string s = o.master_addr + ":" + std::to_string(o.master_port);
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    o.job_token = h;
  }
  *out = o;
  return true;
}

std::unique_ptr<Rendezvous> Rendezvous::connect(const RendezvousOptions& options,
                                                std::string* error) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    *error = "rendezvous: rank " + std::to_string(options.rank) + " / world size " +
             std::to_string(options.world_size) + " is not valid";
    return nullptr;
  }
  if (options.master_port <= 0 || options.master_port > 65535) {
    *error = "rendezvous: master port " + std::to_string(options.master_port) + " is not valid";
    return nullptr;
  }
  auto r = std::make_unique<TcpRendezvous>(options);
  if (!r->start(error)) return nullptr;
  return r;
}

}  // namespace ringside::reference
