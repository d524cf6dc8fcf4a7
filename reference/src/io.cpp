// reference/src/io.cpp — see io.h.
#include "io.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace ringside::reference::detail {

namespace {

// -1: not decided yet (look at the environment on first use), 0 off, 1 on.
std::atomic<int> g_shim{-1};

bool shimOn() {
  int s = g_shim.load(std::memory_order_relaxed);
  if (s < 0) {
    const char* v = std::getenv("RINGSIDE_TEST_IO_SHIM");
    s = (v != nullptr && std::strcmp(v, "1") == 0) ? 1 : 0;
    int expected = -1;
    if (!g_shim.compare_exchange_strong(expected, s)) s = expected;
  }
  return s == 1;
}

// Per-thread xorshift for the shim: no shared state, no locks.
uint32_t shimRandom() {
  thread_local uint32_t x = 0x9e3779b9u ^ static_cast<uint32_t>(reinterpret_cast<uintptr_t>(&x));
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return x;
}

// The shim: one call in four fails with EINTR before touching the socket; the
// others move at most 1-7 bytes.
bool shimInterrupt() {
  if (shimRandom() % 4 == 0) {
    errno = EINTR;
    return true;
  }
  return false;
}
size_t shimLimit() { return 1 + shimRandom() % 7; }

// Socket buffers: large enough that a rank can run a few chunks ahead of its
// neighbours (fewer wake-ups), small enough that what a sender copies into the
// kernel is still in cache when the receiver copies it out. On one host, 1 MiB
// took about 10% less CPU per 64 MiB ring all-reduce than 4 MiB (docs/bench.md).
constexpr int kSocketBufferBytes = 1 << 20;

}  // namespace

void setIoShim(bool on) { g_shim.store(on ? 1 : 0); }
bool ioShimOn() { return shimOn(); }

ssize_t ioRecv(int fd, void* buf, size_t len) {
  if (shimOn()) {
    if (shimInterrupt()) return -1;
    if (len > 0) len = std::min(len, shimLimit());
  }
  return ::recv(fd, buf, len, MSG_DONTWAIT);
}

ssize_t ioSendv(int fd, const iovec* iov, int iovcnt) {
  iovec cut[1];
  if (shimOn()) {
    if (shimInterrupt()) return -1;
    // Send only a prefix of the first non-empty piece.
    int i = 0;
    while (i < iovcnt && iov[i].iov_len == 0) ++i;
    if (i == iovcnt) return 0;
    cut[0].iov_base = iov[i].iov_base;
    cut[0].iov_len = std::min(iov[i].iov_len, shimLimit());
    iov = cut;
    iovcnt = 1;
  }
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = static_cast<size_t>(iovcnt);
  return ::sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
}

int pollMs(Deadline deadline) {
  auto now = Clock::now();
  if (now >= deadline) return 0;
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(deadline - now).count();
  int64_t ms = (us + 999) / 1000;
  return ms > 1000000 ? 1000000 : static_cast<int>(ms);
}

namespace {

// Waits until fd is ready for `events` or the deadline passes.
// kOk: ready (or an error/hangup the next call will report), kTimeout, kError.
IoStatus waitFd(int fd, short events, Deadline deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int ms = pollMs(deadline);
    int rc = ::poll(&p, 1, ms);
    if (rc > 0) return IoStatus::kOk;
    if (rc == 0) {
      if (Clock::now() >= deadline) return IoStatus::kTimeout;
      continue;
    }
    if (errno == EINTR) continue;
    return IoStatus::kError;
  }
}

}  // namespace

IoStatus readFull(int fd, void* buf, size_t len, Deadline deadline) {
  auto* p = static_cast<unsigned char*>(buf);
  size_t got = 0;
  while (got < len) {
    ssize_t n = ioRecv(fd, p + got, len - got);
    if (n > 0) {
      got += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return IoStatus::kEof;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return IoStatus::kError;
    IoStatus w = waitFd(fd, POLLIN, deadline);
    if (w != IoStatus::kOk) return w;
  }
  return IoStatus::kOk;
}

IoStatus writeFull(int fd, const void* buf, size_t len, Deadline deadline) {
  auto* p = static_cast<const unsigned char*>(buf);
  size_t sent = 0;
  while (sent < len) {
    iovec iov{const_cast<unsigned char*>(p + sent), len - sent};
    ssize_t n = ioSendv(fd, &iov, 1);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return IoStatus::kError;
    IoStatus w = waitFd(fd, POLLOUT, deadline);
    if (w != IoStatus::kOk) return w;
  }
  return IoStatus::kOk;
}

std::string errnoText(int e) {
  char buf[128];
  // GNU strerror_r returns the message (maybe not in buf).
  const char* s = strerror_r(e, buf, sizeof buf);
  return s != nullptr ? s : "unknown error";
}

bool setNonBlocking(int fd) {
  int fl = ::fcntl(fd, F_GETFL, 0);
  return fl >= 0 && ::fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

void tuneSocket(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  int bytes = kSocketBufferBytes;  // the kernel caps this at net.core.{w,r}mem_max
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

bool isSameHostLink(int fd) {
  sockaddr_in local{}, peer{};
  socklen_t llen = sizeof local, plen = sizeof peer;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &llen) != 0 ||
      ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &plen) != 0 ||
      local.sin_family != AF_INET || peer.sin_family != AF_INET)
    return false;
  // A connection to one of this host's own addresses goes through loopback,
  // and takes the same address at both ends.
  return (ntohl(peer.sin_addr.s_addr) >> 24) == 127 ||
         local.sin_addr.s_addr == peer.sin_addr.s_addr;
}

void tunePeerLink(int fd) {
  if (!isSameHostLink(fd)) return;
  // Over loopback nothing is lost and nothing queues: a congestion control
  // that paces (BBR, a common default) only adds timer waits and timer
  // interrupts between segments. Cubic and Reno do not pace (Reno is always
  // allowed to unprivileged processes; Cubic only where
  // net.ipv4.tcp_allowed_congestion_control lists it). Links to other hosts
  // keep the system's choice.
  for (const char* cc : {"cubic", "reno"}) {
    auto len = static_cast<socklen_t>(std::strlen(cc));
    if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, len) == 0) return;
  }
}

bool resolveIpv4(const std::string& host, int port, void* out, std::string* error) {
  auto* sa = static_cast<sockaddr_in*>(out);
  std::memset(sa, 0, sizeof *sa);
  sa->sin_family = AF_INET;
  sa->sin_port = htons(static_cast<uint16_t>(port));
  if (host.empty() || host == "0.0.0.0" || host == "*") {
    sa->sin_addr.s_addr = htonl(INADDR_ANY);
    return true;
  }
  if (::inet_pton(AF_INET, host.c_str(), &sa->sin_addr) == 1) return true;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr) {
    if (error != nullptr) *error = "cannot resolve '" + host + "': " + ::gai_strerror(rc);
    return false;
  }
  sa->sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
  ::freeaddrinfo(res);
  return true;
}

int listenTcp(const std::string& host, int port, int* bound_port, std::string* error) {
  sockaddr_in sa{};
  if (!resolveIpv4(host, port, &sa, error)) return -1;
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) {
    *error = "socket: " + errnoText(errno);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  tuneSocket(fd.get());  // accepted sockets inherit the buffer sizes
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    *error = "cannot listen on " + joinHostPort(host, port) + ": " + errnoText(errno);
    return -1;
  }
  if (::listen(fd.get(), 512) != 0) {
    *error = "listen: " + errnoText(errno);
    return -1;
  }
  socklen_t len = sizeof sa;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len);
  if (bound_port != nullptr) *bound_port = ntohs(sa.sin_port);
  return fd.release();
}

int startConnect(const std::string& host, int port, std::string* error) {
  sockaddr_in sa{};
  if (!resolveIpv4(host, port, &sa, error)) return -1;
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) {
    *error = "socket: " + errnoText(errno);
    return -1;
  }
  tuneSocket(fd.get());
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 &&
      errno != EINPROGRESS) {
    *error = "cannot connect to " + joinHostPort(host, port) + ": " + errnoText(errno);
    return -1;
  }
  return fd.release();
}

int dialTcp(const std::string& host, int port, Deadline deadline, std::string* error) {
  auto backoff = std::chrono::milliseconds(10);
  std::string last = "no attempt";
  for (;;) {
    std::string err;
    Fd fd(startConnect(host, port, &err));
    if (fd.get() >= 0) {
      IoStatus w = waitFd(fd.get(), POLLOUT, deadline);
      if (w == IoStatus::kOk) {
        int soerr = 0;
        socklen_t len = sizeof soerr;
        ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &soerr, &len);
        if (soerr == 0) return fd.release();
        last = errnoText(soerr);
      } else {
        last = w == IoStatus::kTimeout ? "connect timed out" : errnoText(errno);
      }
    } else {
      last = err;
    }
    if (Clock::now() + backoff >= deadline) break;
    std::this_thread::sleep_for(backoff);
    if (backoff < std::chrono::milliseconds(200)) backoff *= 2;
  }
  *error = "cannot reach " + joinHostPort(host, port) + " before the deadline (" + last + ")";
  return -1;
}

std::string localAddressToward(const std::string& host) {
  sockaddr_in sa{};
  std::string err;
  if (!resolveIpv4(host, 9, &sa, &err)) return "";
  Fd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return "";
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return "";
  sockaddr_in local{};
  socklen_t len = sizeof local;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0) return "";
  char buf[INET_ADDRSTRLEN];
  if (::inet_ntop(AF_INET, &local.sin_addr, buf, sizeof buf) == nullptr) return "";
  if (local.sin_addr.s_addr == htonl(INADDR_ANY)) return "";
  return buf;
}

std::string joinHostPort(const std::string& host, int port) {
  return host + ":" + std::to_string(port);
}

bool splitHostPort(const std::string& s, std::string* host, int* port) {
  size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= s.size() || s.size() - colon > 6)
    return false;
  int p = 0;
  for (size_t i = colon + 1; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    p = p * 10 + (s[i] - '0');
  }
  if (p <= 0 || p > 65535) return false;
  *host = s.substr(0, colon);
  *port = p;
  return true;
}

Fd::~Fd() { reset(); }

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) reset(o.release());
  return *this;
}

void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

}  // namespace ringside::reference::detail
