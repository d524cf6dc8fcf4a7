// reference/src/io.h — TCP sockets with deadlines, and the test-only I/O shim.
//
// Every socket ringside's reference code uses is non-blocking; waiting is
// done with poll() against a deadline, so no call here can block past it.
// Reads and writes go through ioRecv/ioSendv so that tests can switch on a
// shim that passes only 1-7 bytes per call and injects EINTR: results must
// not depend on how the kernel splits the byte stream.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace ringside::reference::detail {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// --- test hook (not in the public headers) ---------------------------------
// On when setIoShim(true) was called, or RINGSIDE_TEST_IO_SHIM=1 was set when
// the first I/O call of the process looked.
void setIoShim(bool on);
bool ioShimOn();

// recv()/sendmsg() with MSG_DONTWAIT|MSG_NOSIGNAL, through the shim when on.
// Same return convention as the system calls (-1 + errno).
ssize_t ioRecv(int fd, void* buf, size_t len);
ssize_t ioSendv(int fd, const iovec* iov, int iovcnt);

// Milliseconds until `deadline` for poll(): 0 if past, rounded up, capped.
int pollMs(Deadline deadline);

enum class IoStatus { kOk, kEof, kTimeout, kError };
// Whole buffers, waiting with poll() for at most until `deadline`. Loops over
// short transfers and EINTR. kError leaves errno set.
IoStatus readFull(int fd, void* buf, size_t len, Deadline deadline);
IoStatus writeFull(int fd, const void* buf, size_t len, Deadline deadline);

std::string errnoText(int e);

bool setNonBlocking(int fd);
// TCP_NODELAY and large send/receive buffers (set before connect/listen so
// that the window scale is negotiated for them).
void tuneSocket(int fd);
// True when fd is a TCP connection to this same host (loopback, or one of
// the host's own addresses).
bool isSameHostLink(int fd);
// For a connected peer link: on a same-host link, a congestion control that
// does not pace (see io.cpp).
void tunePeerLink(int fd);

// A non-blocking listening socket on host:port (port 0: any). SO_REUSEADDR.
// Returns the fd or -1 + *error; *bound_port gets the port.
int listenTcp(const std::string& host, int port, int* bound_port, std::string* error);

// Resolves host (IPv4 name or literal) into a sockaddr_in. False + *error.
bool resolveIpv4(const std::string& host, int port, void* sockaddr_in_out, std::string* error);

// Starts a non-blocking connect; returns the fd (connecting or connected) or
// -1 + *error.
int startConnect(const std::string& host, int port, std::string* error);

// Connects with retries (refused, unreachable: the listener may not be up yet)
// until `deadline`. Returns a connected non-blocking fd or -1 + *error.
int dialTcp(const std::string& host, int port, Deadline deadline, std::string* error);

// The local IPv4 address the kernel would use to reach `host` (UDP connect,
// nothing sent); "" if unknown.
std::string localAddressToward(const std::string& host);

// "host:port" <-> parts (IPv4 literals and names).
std::string joinHostPort(const std::string& host, int port);
bool splitHostPort(const std::string& s, std::string* host, int* port);

// Little-endian fixed-width fields for the wire formats.
inline void put16(unsigned char* p, uint16_t v) {
  p[0] = static_cast<unsigned char>(v);
  p[1] = static_cast<unsigned char>(v >> 8);
}
inline void put32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline void put64(unsigned char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline uint16_t get16(const unsigned char* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline uint32_t get32(const unsigned char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline uint64_t get64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Closes an fd on scope exit unless released.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd();
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

}  // namespace ringside::reference::detail
