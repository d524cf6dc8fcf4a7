// reference/src/handshake.cpp — see handshake.h.
#include "handshake.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <set>

#include "wire.h"

namespace ringside::reference::detail {

namespace {

constexpr size_t kMaxPendingAccepted = 256;
constexpr auto kRedialDelay = std::chrono::milliseconds(50);

struct Pending {
  Fd fd;
  int peer = -1;  // dialled: the peer; accepted: known once its hello checked out
  bool dialled = false;
  bool connecting = false;  // dialled, connect() not finished
  unsigned char in[kHelloBytes] = {};
  size_t got = 0;
  unsigned char out[kHelloBytes] = {};
  size_t out_len = 0, sent = 0;
  Clock::time_point retry_at{};  // dialled, waiting to redial (fd < 0)
};

// One connectPeers() call: the pending connections and what is still awaited. Each stage of the
// poll loop is one member; connectPeers() is the driver. A false return from a stage has set
// *error_ and ends the handshake.
class Handshake {
 public:
  Handshake(const HandshakeParams& p, std::vector<Link>* links, std::string* error)
      : p_(p),
        links_(links),
        error_(error),
        want_accept_(p.accept.begin(), p.accept.end()),
        dial_left_(static_cast<int>(p.dial.size())) {}

  bool startDials();
  bool done() const { return want_accept_.empty() && dial_left_ == 0 && !acking(); }
  // Redials the dialled peers whose delay ran out; *wake gets the earliest one still waiting.
  bool redialDue(Clock::time_point now, Deadline* wake);
  void buildPollSet();
  // Polls until `wake`: false only on a poll error; *ready false when nothing is ready.
  bool poll(Deadline wake, bool* ready);
  // Handles every ready descriptor; false when a dialled peer answered wrongly.
  bool handleReady();
  // Forgets finished or discarded connections; bounds the strays we wait on.
  void prune();
  std::string missingMessage() const;

 private:
  void helloFor(HelloKind kind, unsigned char* out) const;
  bool dial(Pending& d);
  void redialLater(Pending& d, const std::string& why);
  void establish(Pending& d);
  void acceptAll();
  // The connection finished connecting or can take more of its hello/ack: true when handled.
  bool onWritable(Pending& d);
  bool onReadable(Pending& d);
  bool onHello(Pending& d);
  // An accepted peer whose ack is not written yet is still pending.
  bool acking() const;

  const HandshakeParams& p_;
  std::vector<Link>* links_;
  std::string* error_;
  std::set<int> want_accept_;
  std::vector<std::unique_ptr<Pending>> pend_;
  std::string last_dial_error_;
  int dial_left_;
  int discarded_ = 0;
  std::vector<pollfd> fds_;
  std::vector<Pending*> which_;
};

void Handshake::helloFor(HelloKind kind, unsigned char* out) const {
  Hello h;
  h.kind = static_cast<uint8_t>(kind);
  h.token = p_.token;
  h.rank = static_cast<uint32_t>(p_.rank);
  h.world_size = static_cast<uint32_t>(p_.world_size);
  encodeHello(h, out);
}

bool Handshake::dial(Pending& d) {
  std::string host;
  int port = 0;
  const std::string& addr = (*p_.addresses)[static_cast<size_t>(d.peer)];
  if (!splitHostPort(addr, &host, &port)) {
    *error_ = "rank " + std::to_string(d.peer) + " advertised a bad address '" + addr + "'";
    return false;
  }
  std::string err;
  d.fd.reset(startConnect(host, port, &err));
  d.got = d.sent = 0;
  if (d.fd.get() < 0) {
    last_dial_error_ = err;
    d.retry_at = Clock::now() + kRedialDelay;
    return true;
  }
  d.connecting = true;
  helloFor(HelloKind::kHello, d.out);
  d.out_len = kHelloBytes;
  return true;
}

void Handshake::redialLater(Pending& d, const std::string& why) {
  last_dial_error_ = "rank " + std::to_string(d.peer) + ": " + why;
  d.fd.reset();
  d.connecting = false;
  d.retry_at = Clock::now() + kRedialDelay;
}

void Handshake::establish(Pending& d) {
  setNonBlocking(d.fd.get());
  tunePeerLink(d.fd.get());
  Link l;
  l.peer = d.peer;
  l.fd = d.fd.release();
  links_->push_back(l);
}

bool Handshake::acking() const {
  for (const auto& d : pend_)
    if (!d->dialled && d->peer >= 0) return true;
  return false;
}

bool Handshake::startDials() {
  for (int peer : p_.dial) {
    auto d = std::make_unique<Pending>();
    d->peer = peer;
    d->dialled = true;
    if (!dial(*d)) return false;
    pend_.push_back(std::move(d));
  }
  return true;
}

bool Handshake::redialDue(Clock::time_point now, Deadline* wake) {
  for (auto& d : pend_) {
    if (d->dialled && d->fd.get() < 0 && d->peer >= 0) {
      if (d->retry_at <= now) {
        if (!dial(*d)) return false;
      } else {
        *wake = std::min(*wake, d->retry_at);
      }
    }
  }
  return true;
}

void Handshake::buildPollSet() {
  fds_.clear();
  which_.clear();
  if (!want_accept_.empty() && p_.listen_fd >= 0) {
    fds_.push_back({p_.listen_fd, POLLIN, 0});
    which_.push_back(nullptr);
  }
  for (auto& d : pend_) {
    if (d->fd.get() < 0) continue;
    short ev = (d->connecting || d->sent < d->out_len) ? POLLOUT : POLLIN;
    fds_.push_back({d->fd.get(), ev, 0});
    which_.push_back(d.get());
  }
}

bool Handshake::poll(Deadline wake, bool* ready) {
  int rc = ::poll(fds_.data(), fds_.size(), pollMs(wake));
  if (rc < 0 && errno != EINTR) {
    *error_ = "poll: " + errnoText(errno);
    return false;
  }
  *ready = rc > 0;
  return true;
}

void Handshake::acceptAll() {
  for (;;) {
    int fd = ::accept4(p_.listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) break;
    tuneSocket(fd);
    auto a = std::make_unique<Pending>();
    a->fd.reset(fd);
    pend_.push_back(std::move(a));
  }
}

bool Handshake::onWritable(Pending& d) {
  if (d.connecting) {
    int soerr = 0;
    socklen_t len = sizeof soerr;
    ::getsockopt(d.fd.get(), SOL_SOCKET, SO_ERROR, &soerr, &len);
    if (soerr != 0) {
      redialLater(d, errnoText(soerr));
      return true;
    }
    d.connecting = false;
  }
  if (d.sent >= d.out_len) return false;
  iovec iov{d.out + d.sent, d.out_len - d.sent};
  ssize_t n = ioSendv(d.fd.get(), &iov, 1);
  if (n > 0)
    d.sent += static_cast<size_t>(n);
  else if (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
    if (d.dialled)
      redialLater(d, errnoText(errno));
    else if (d.peer >= 0) {  // our ack failed: that peer may come again
      want_accept_.insert(d.peer);
      d.fd.reset();
    } else {
      d.fd.reset();
    }
    return true;
  }
  if (d.sent == d.out_len && !d.dialled && d.peer >= 0) {
    establish(d);  // the ack is out: accepted peer done
    d.peer = -1;
  }
  return true;
}

bool Handshake::onReadable(Pending& d) {
  ssize_t n = ioRecv(d.fd.get(), d.in + d.got, kHelloBytes - d.got);
  if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return true;
  if (n <= 0) {
    // EOF or error before a whole hello/ack.
    if (d.dialled)
      redialLater(d, n == 0 ? "closed during the handshake" : errnoText(errno));
    else {
      d.fd.reset();
      ++discarded_;
    }
    return true;
  }
  d.got += static_cast<size_t>(n);
  if (d.got < kHelloBytes) return true;
  return onHello(d);
}

bool Handshake::onHello(Pending& d) {
  Hello h = decodeHello(d.in);
  bool valid = h.magic == kHelloMagic && h.version == kWireVersion && h.pad == 0 &&
               h.token == p_.token && h.world_size == static_cast<uint32_t>(p_.world_size);
  if (d.dialled) {
    if (!valid || h.kind != static_cast<uint8_t>(HelloKind::kAck) ||
        h.rank != static_cast<uint32_t>(d.peer)) {
      *error_ = "rank " + std::to_string(d.peer) + " at " +
                (*p_.addresses)[static_cast<size_t>(d.peer)] +
                " answered the handshake wrongly (another job, or a different job token?)";
      return false;
    }
    establish(d);
    d.peer = -1;
    --dial_left_;
    return true;
  }
  int claimed = static_cast<int>(h.rank);
  if (!valid || h.kind != static_cast<uint8_t>(HelloKind::kHello) ||
      h.rank >= static_cast<uint32_t>(p_.world_size) || want_accept_.count(claimed) == 0) {
    d.fd.reset();  // stray, other job, or duplicate: drop it, keep waiting
    ++discarded_;
    return true;
  }
  want_accept_.erase(claimed);
  d.peer = claimed;
  helloFor(HelloKind::kAck, d.out);
  d.out_len = kHelloBytes;
  d.sent = 0;
  return true;
}

bool Handshake::handleReady() {
  for (size_t k = 0; k < fds_.size(); ++k) {
    if (fds_[k].revents == 0) continue;
    Pending* d = which_[k];
    if (d == nullptr) {  // the listener
      acceptAll();
      continue;
    }
    if (onWritable(*d)) continue;
    if (!onReadable(*d)) return false;
  }
  return true;
}

void Handshake::prune() {
  std::erase_if(pend_, [](const std::unique_ptr<Pending>& d) {
    return d->fd.get() < 0 && !(d->dialled && d->peer >= 0);
  });
  size_t accepted = 0;
  for (auto& d : pend_) accepted += d->dialled ? 0 : 1;
  for (auto it = pend_.begin(); accepted > kMaxPendingAccepted && it != pend_.end();) {
    if (!(*it)->dialled && (*it)->peer < 0) {
      it = pend_.erase(it);
      --accepted;
      ++discarded_;
    } else {
      ++it;
    }
  }
}

std::string Handshake::missingMessage() const {
  std::string missing;
  for (int r : want_accept_) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
  for (auto& d : pend_)
    if (d->peer >= 0) missing += (missing.empty() ? "" : ", ") + std::to_string(d->peer);
  std::string message = "no connection with rank(s) " + missing + " before the deadline";
  if (!last_dial_error_.empty()) message += " (last dial error: " + last_dial_error_ + ")";
  if (discarded_ > 0)
    message += "; " + std::to_string(discarded_) + " stray connection(s) discarded";
  return message;
}

}  // namespace

bool connectPeers(const HandshakeParams& p, std::vector<Link>* links, std::string* error) {
  Handshake hs(p, links, error);
  if (!hs.startDials()) return false;
  while (!hs.done()) {
    const Clock::time_point now = Clock::now();
    if (now >= p.deadline) break;
    Deadline wake = p.deadline;
    if (!hs.redialDue(now, &wake)) return false;
    hs.buildPollSet();
    bool ready = false;
    if (!hs.poll(wake, &ready)) return false;
    if (!ready) continue;
    if (!hs.handleReady()) return false;
    hs.prune();
  }
  if (hs.done()) return true;
  *error = hs.missingMessage();
  return false;
}

}  // namespace ringside::reference::detail
