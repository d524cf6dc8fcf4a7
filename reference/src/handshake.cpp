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

}  // namespace

bool connectPeers(const HandshakeParams& p, std::vector<Link>* links, std::string* error) {
  std::set<int> want_accept(p.accept.begin(), p.accept.end());
  std::vector<std::unique_ptr<Pending>> pend;
  std::string last_dial_error;
  int dial_left = static_cast<int>(p.dial.size());
  int discarded = 0;

  auto helloFor = [&](HelloKind kind, unsigned char* out) {
    Hello h;
    h.kind = static_cast<uint8_t>(kind);
    h.token = p.token;
    h.rank = static_cast<uint32_t>(p.rank);
    h.world_size = static_cast<uint32_t>(p.world_size);
    encodeHello(h, out);
  };
  auto dial = [&](Pending& d) -> bool {
    std::string host;
    int port = 0;
    const std::string& addr = (*p.addresses)[static_cast<size_t>(d.peer)];
    if (!splitHostPort(addr, &host, &port)) {
      *error = "rank " + std::to_string(d.peer) + " advertised a bad address '" + addr + "'";
      return false;
    }
    std::string err;
    d.fd.reset(startConnect(host, port, &err));
    d.got = d.sent = 0;
    if (d.fd.get() < 0) {
      last_dial_error = err;
      d.retry_at = Clock::now() + kRedialDelay;
      return true;
    }
    d.connecting = true;
    helloFor(HelloKind::kHello, d.out);
    d.out_len = kHelloBytes;
    return true;
  };
  auto redialLater = [&](Pending& d, const std::string& why) {
    last_dial_error = "rank " + std::to_string(d.peer) + ": " + why;
    d.fd.reset();
    d.connecting = false;
    d.retry_at = Clock::now() + kRedialDelay;
  };
  auto establish = [&](Pending& d) {
    setNonBlocking(d.fd.get());
    tunePeerLink(d.fd.get());
    Link l;
    l.peer = d.peer;
    l.fd = d.fd.release();
    links->push_back(l);
  };

  for (int peer : p.dial) {
    auto d = std::make_unique<Pending>();
    d->peer = peer;
    d->dialled = true;
    if (!dial(*d)) return false;
    pend.push_back(std::move(d));
  }

  std::vector<pollfd> fds;
  std::vector<Pending*> which;
  // An accepted peer whose ack is not written yet is still pending.
  auto acking = [&] {
    for (auto& d : pend)
      if (!d->dialled && d->peer >= 0) return true;
    return false;
  };
  while (!want_accept.empty() || dial_left > 0 || acking()) {
    auto now = Clock::now();
    if (now >= p.deadline) break;
    Deadline wake = p.deadline;
    for (auto& d : pend) {
      if (d->dialled && d->fd.get() < 0 && d->peer >= 0) {
        if (d->retry_at <= now) {
          if (!dial(*d)) return false;
        } else {
          wake = std::min(wake, d->retry_at);
        }
      }
    }
    fds.clear();
    which.clear();
    if (!want_accept.empty() && p.listen_fd >= 0) {
      fds.push_back({p.listen_fd, POLLIN, 0});
      which.push_back(nullptr);
    }
    for (auto& d : pend) {
      if (d->fd.get() < 0) continue;
      short ev = (d->connecting || d->sent < d->out_len) ? POLLOUT : POLLIN;
      fds.push_back({d->fd.get(), ev, 0});
      which.push_back(d.get());
    }
    int rc = ::poll(fds.data(), fds.size(), pollMs(wake));
    if (rc < 0 && errno != EINTR) {
      *error = "poll: " + errnoText(errno);
      return false;
    }
    if (rc <= 0) continue;
    for (size_t k = 0; k < fds.size(); ++k) {
      short re = fds[k].revents;
      if (re == 0) continue;
      Pending* d = which[k];
      if (d == nullptr) {  // the listener
        for (;;) {
          int fd = ::accept4(p.listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (fd < 0) break;
          tuneSocket(fd);
          auto a = std::make_unique<Pending>();
          a->fd.reset(fd);
          pend.push_back(std::move(a));
        }
        continue;
      }
      if (d->connecting) {
        int soerr = 0;
        socklen_t len = sizeof soerr;
        ::getsockopt(d->fd.get(), SOL_SOCKET, SO_ERROR, &soerr, &len);
        if (soerr != 0) {
          redialLater(*d, errnoText(soerr));
          continue;
        }
        d->connecting = false;
      }
      if (d->sent < d->out_len) {
        iovec iov{d->out + d->sent, d->out_len - d->sent};
        ssize_t n = ioSendv(d->fd.get(), &iov, 1);
        if (n > 0)
          d->sent += static_cast<size_t>(n);
        else if (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
          if (d->dialled)
            redialLater(*d, errnoText(errno));
          else if (d->peer >= 0) {  // our ack failed: that peer may come again
            want_accept.insert(d->peer);
            d->fd.reset();
          } else {
            d->fd.reset();
          }
          continue;
        }
        if (d->sent == d->out_len && !d->dialled && d->peer >= 0) {
          establish(*d);  // the ack is out: accepted peer done
          d->peer = -1;
        }
        continue;
      }
      ssize_t n = ioRecv(d->fd.get(), d->in + d->got, kHelloBytes - d->got);
      if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
      if (n <= 0) {
        // EOF or error before a whole hello/ack.
        if (d->dialled)
          redialLater(*d, n == 0 ? "closed during the handshake" : errnoText(errno));
        else {
          d->fd.reset();
          ++discarded;
        }
        continue;
      }
      d->got += static_cast<size_t>(n);
      if (d->got < kHelloBytes) continue;
      Hello h = decodeHello(d->in);
      bool valid = h.magic == kHelloMagic && h.version == kWireVersion && h.pad == 0 &&
                   h.token == p.token && h.world_size == static_cast<uint32_t>(p.world_size);
      if (d->dialled) {
        if (!valid || h.kind != static_cast<uint8_t>(HelloKind::kAck) ||
            h.rank != static_cast<uint32_t>(d->peer)) {
          *error = "rank " + std::to_string(d->peer) + " at " +
                   (*p.addresses)[static_cast<size_t>(d->peer)] +
                   " answered the handshake wrongly (another job, or a different job token?)";
          return false;
        }
        establish(*d);
        d->peer = -1;
        --dial_left;
        continue;
      }
      int claimed = static_cast<int>(h.rank);
      if (!valid || h.kind != static_cast<uint8_t>(HelloKind::kHello) ||
          h.rank >= static_cast<uint32_t>(p.world_size) || want_accept.count(claimed) == 0) {
        d->fd.reset();  // stray, other job, or duplicate: drop it, keep waiting
        ++discarded;
        continue;
      }
      want_accept.erase(claimed);
      d->peer = claimed;
      helloFor(HelloKind::kAck, d->out);
      d->out_len = kHelloBytes;
      d->sent = 0;
    }
    // Forget finished or discarded connections; bound the strays we wait on.
    std::erase_if(pend, [](const std::unique_ptr<Pending>& d) {
      return d->fd.get() < 0 && !(d->dialled && d->peer >= 0);
    });
    size_t accepted = 0;
    for (auto& d : pend) accepted += d->dialled ? 0 : 1;
    for (auto it = pend.begin(); accepted > kMaxPendingAccepted && it != pend.end();) {
      if (!(*it)->dialled && (*it)->peer < 0) {
        it = pend.erase(it);
        --accepted;
        ++discarded;
      } else {
        ++it;
      }
    }
  }
  if (want_accept.empty() && dial_left == 0 && !acking()) return true;
  std::string missing;
  for (int r : want_accept) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
  for (auto& d : pend)
    if (d->peer >= 0) missing += (missing.empty() ? "" : ", ") + std::to_string(d->peer);
  *error = "no connection with rank(s) " + missing + " before the deadline";
  if (!last_dial_error.empty()) *error += " (last dial error: " + last_dial_error + ")";
  if (discarded > 0) *error += "; " + std::to_string(discarded) + " stray connection(s) discarded";
  return false;
}

}  // namespace ringside::reference::detail
