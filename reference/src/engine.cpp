// reference/src/engine.cpp — see engine.h for the design.
#include "engine.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "ringside/collector/collector.h"

namespace ringside::reference::detail {

void ScratchPool::prepare(size_t bytes) {
  if (bytes <= bytes_) return;
  owned_.clear();
  free_.clear();
  bytes_ = bytes;
}

char* ScratchPool::acquire() {
  if (free_.empty()) {
    owned_.push_back(std::make_unique<char[]>(bytes_ == 0 ? 1 : bytes_));
    return owned_.back().get();
  }
  char* p = free_.back();
  free_.pop_back();
  return p;
}

namespace {

namespace col = ringside::collector;

// Fairness: at most this much is read from one link before the others get a turn.
constexpr int kMaxMessagesPerTurn = 8;
constexpr size_t kMaxBytesPerTurn = size_t{8} << 20;
// Budget for telling the other peers that this collective failed.
constexpr auto kAbortBudget = std::chrono::milliseconds(500);

class Engine {
 public:
  Engine(Schedule& s, std::vector<Link>& links, const EngineParams& p)
      : s_(s), links_(links), p_(p), st_(links.size()) {
    for (size_t i = 0; i < s_.sends.size(); ++i) {
      auto& ls = st_[static_cast<size_t>(s_.sends[i].link)];
      ls.sends.push_back(static_cast<int>(i));
      ls.send_left += s_.sends[i].total - s_.sends[i].next;
      remaining_ += s_.sends[i].total - s_.sends[i].next;
    }
    for (size_t i = 0; i < s_.recvs.size(); ++i) {
      auto& ls = st_[static_cast<size_t>(s_.recvs[i].link)];
      ls.recvs.push_back(static_cast<int>(i));
      ls.recv_left += s_.recvs[i].total - s_.recvs[i].next;
      remaining_ += s_.recvs[i].total - s_.recvs[i].next;
    }
  }

  bool run(std::string* error) {
    last_progress_ = Clock::now();
    for (size_t i = 0; i < links_.size() && !failed_; ++i) {
      Link& l = links_[i];
      if ((st_[i].recv_left > 0 || st_[i].send_left > 0) && (l.closed || l.fd < 0)) {
        fail(static_cast<int>(i), "rank " + std::to_string(l.peer) + " closed the connection");
        break;
      }
      if (l.parked) {  // a header read during an earlier collective
        l.parked = false;
        if (p_.events != nullptr) st_[i].rt0 = col::nowNs();
        onHeader(i);
        if (!failed_ && !l.parked && st_[i].rs >= 0 && st_[i].rlen == 0) completeRecv(i);
      }
    }
    if (!failed_) pumpAllSends();
    std::vector<pollfd> fds;
    std::vector<size_t> which;
    while (remaining_ > 0 && !failed_) {
      fds.clear();
      which.clear();
      for (size_t i = 0; i < links_.size(); ++i) {
        Link& l = links_[i];
        if (l.closed || l.fd < 0) continue;
        short ev = l.parked ? 0 : POLLIN;
        if (st_[i].wblocked && hasSendWork(i)) ev |= POLLOUT;
        if (ev == 0) continue;
        fds.push_back({l.fd, ev, 0});
        which.push_back(i);
      }
      Deadline deadline = last_progress_ + p_.timeout;
      int ms = pollMs(deadline);
      if (ms == 0 || fds.empty()) {
        timeoutFailure();
        break;
      }
      int rc = ::poll(fds.data(), fds.size(), ms);
      if (rc < 0) {
        if (errno == EINTR) continue;
        fail(-1, "poll failed: " + errnoText(errno));
        break;
      }
      for (size_t k = 0; k < fds.size() && !failed_; ++k) {
        size_t i = which[k];
        short re = fds[k].revents;
        if (re == 0) continue;
        if ((re & (POLLIN | POLLHUP | POLLERR)) && !links_[i].parked) pumpRecv(i);
        if (!failed_ && (re & (POLLOUT | POLLERR | POLLHUP)) && hasSendWork(i)) {
          st_[i].wblocked = false;
          pumpSend(i);
        }
      }
    }
    if (failed_) {
      sendAborts();
      *error = shown_;
      return false;
    }
    return true;
  }

 private:
  struct LinkState {
    std::vector<int> sends, recvs;
    uint32_t send_left = 0, recv_left = 0;
    size_t rr = 0;  // round-robin cursor over `sends`
    // receive in progress (after its header)
    int rs = -1;  // stream, -1: reading a header (or an abort payload when rabort)
    bool rabort = false;
    uint32_t ridx = 0;
    Message rmsg;
    char* rdst = nullptr;
    size_t rlen = 0, rgot = 0;
    char* scratch = nullptr;
    int64_t rt0 = 0;
    unsigned char abuf[kMaxAbortPayload] = {};
    // send in progress
    int ss = -1;
    uint32_t sidx = 0;
    Message smsg;
    unsigned char shdr[kFrameHeaderBytes] = {};
    size_t ssent = 0;  // over header + payload
    int64_t st0 = 0;
    bool wblocked = false;
  };

  std::string peerName(size_t i) const { return "rank " + std::to_string(links_[i].peer); }

  void progress() { last_progress_ = Clock::now(); }

  void fail(int link, std::string text, std::string shown = "") {
    if (failed_) return;
    failed_ = true;
    cause_ = std::move(text);
    shown_ = shown.empty() ? cause_ : std::move(shown);
    if (link >= 0) {
      // The link that failed gets no abort (its peer is gone or broke the protocol).
      Link& l = links_[static_cast<size_t>(link)];
      if (!l.closed && l.fd >= 0) ::shutdown(l.fd, SHUT_RDWR);
      l.closed = true;
    }
  }

  void malformed(size_t i, const std::string& what) {
    fail(static_cast<int>(i), peerName(i) + " sent a malformed frame (" + what + ")");
  }

  void timeoutFailure() {
    std::string ms = std::to_string(p_.timeout.count()) + " ms";
    // The cause names this rank too: it is forwarded to the others in the abort frame, and
    // "rank 1: no data from rank 1" (a relayed cause) would not say who waited.
    const std::string me = p_.rank >= 0 ? "rank " + std::to_string(p_.rank) : std::string("this rank");
    for (size_t i = 0; i < links_.size(); ++i)
      if (st_[i].recv_left > 0)
        return fail(-1, me + " got no data from " + peerName(i) + " for " + ms);
    for (size_t i = 0; i < links_.size(); ++i)
      if (hasSendWork(i)) return fail(-1, peerName(i) + " took no data from " + me + " for " + ms);
    fail(-1, me + " made no progress for " + ms);
  }

  bool hasSendWork(size_t i) const {
    const LinkState& ls = st_[i];
    if (ls.ss >= 0) return true;
    for (int s : ls.sends) {
      const SendStream& ss = s_.sends[static_cast<size_t>(s)];
      if (ss.next < ss.ready && ss.next < ss.total) return true;
    }
    return false;
  }

  void pumpAllSends() {
    for (size_t i = 0; i < links_.size() && !failed_; ++i)
      if (!st_[i].wblocked && hasSendWork(i)) pumpSend(i);
  }

  // Picks the next ready message on link i (round robin over its streams).
  bool startSend(size_t i) {
    LinkState& ls = st_[i];
    size_t n = ls.sends.size();
    for (size_t k = 0; k < n; ++k) {
      size_t pos = (ls.rr + k) % n;
      int s = ls.sends[pos];
      SendStream& ss = s_.sends[static_cast<size_t>(s)];
      if (ss.next >= ss.ready || ss.next >= ss.total) continue;
      ls.rr = pos + 1;
      ls.ss = s;
      ls.sidx = ss.next;
      ls.smsg = s_.sendMessage(static_cast<size_t>(s), ss.next);
      FrameHeader h;
      h.kind = static_cast<uint8_t>(ss.kind);
      h.phase = ls.smsg.phase;
      h.token = p_.token;
      h.seq = p_.seq;
      h.step = ls.smsg.step;
      h.chunk = ls.smsg.chunk;
      h.length = ls.smsg.bytes;
      encodeFrame(h, ls.shdr);
      ls.ssent = 0;
      if (p_.events != nullptr) ls.st0 = col::nowNs();
      return true;
    }
    return false;
  }

  void pumpSend(size_t i) {
    LinkState& ls = st_[i];
    Link& l = links_[i];
    for (;;) {
      if (ls.ss < 0 && !startSend(i)) return;
      const size_t total = kFrameHeaderBytes + ls.smsg.bytes;
      while (ls.ssent < total) {
        iovec iov[2];
        int cnt = 0;
        if (ls.ssent < kFrameHeaderBytes)
          iov[cnt++] = {ls.shdr + ls.ssent, kFrameHeaderBytes - ls.ssent};
        size_t off = ls.ssent > kFrameHeaderBytes ? ls.ssent - kFrameHeaderBytes : 0;
        if (ls.smsg.bytes > off) iov[cnt++] = {ls.smsg.ptr + off, ls.smsg.bytes - off};
        ssize_t n = ioSendv(l.fd, iov, cnt);
        if (n > 0) {
          ls.ssent += static_cast<size_t>(n);
          progress();
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
          ls.wblocked = true;
          return;
        }
        int e = n < 0 ? errno : EPIPE;
        // The peer may have told us why before it went: an abort frame
        // waiting in our receive buffer names the real cause.
        if (!l.parked) pumpRecv(i);
        if (failed_) return;
        if (e == EPIPE || e == ECONNRESET)
          fail(static_cast<int>(i), peerName(i) + " closed the connection");
        else
          fail(static_cast<int>(i), "connection to " + peerName(i) + " failed: " + errnoText(e));
        return;
      }
      // The whole message is in the kernel.
      if (p_.events != nullptr) trace(ls.smsg, col::Side::kSend, l.peer, ls.st0);
      SendStream& ss = s_.sends[static_cast<size_t>(ls.ss)];
      ++ss.next;
      --ls.send_left;
      --remaining_;
      ls.ss = -1;
    }
  }

  void trace(const Message& m, col::Side side, int peer, int64_t t0) {
    col::Event e = p_.trace_template;
    e.kind = col::EventKind::kTransfer;
    e.side = static_cast<uint8_t>(side);
    e.peer = peer;
    e.bytes = m.bytes;
    e.t0 = t0;
    e.t1 = col::nowNs();
    e.phase = m.phase;
    e.step = m.trace_step;
    e.aux = m.chunk;
    e.key = 0;
    p_.events->push_back(e);
  }

  // A complete header is in links_[i].hdr: check it against what this
  // collective expects before reading any payload byte.
  void onHeader(size_t i) {
    Link& l = links_[i];
    LinkState& ls = st_[i];
    FrameHeader h = decodeFrame(l.hdr);
    if (h.magic != kFrameMagic) return malformed(i, "bad magic");
    if (h.version != kWireVersion)
      return malformed(i, "unsupported version " + std::to_string(h.version));
    if (h.token != p_.token) return malformed(i, "wrong link token");
    if (h.flags != 0) return malformed(i, "unknown flags");
    if (h.kind == static_cast<uint8_t>(FrameKind::kAbort)) {
      if (h.length > kMaxAbortPayload) return malformed(i, "oversized abort");
      ls.rabort = true;
      ls.rdst = reinterpret_cast<char*>(ls.abuf);
      ls.rlen = static_cast<size_t>(h.length);
      ls.rgot = 0;
      if (ls.rlen == 0) finishAbort(i);
      return;
    }
    if (h.kind < 1 || h.kind > kLastFrameKind)
      return malformed(i, "unknown kind " + std::to_string(h.kind));
    if (h.length > kMaxFramePayload)
      return malformed(i, "oversized length " + std::to_string(h.length));
    bool other_space = isAllreduceKind(h.kind) == p_.ping;
    if (other_space || h.seq > p_.seq) {
      // The peer is already in a later collective: it finished this one, so
      // it sent us everything of this one before, on this link.
      if (ls.recv_left > 0)
        return malformed(i, "a later collective's frame while this one's are due");
      l.parked = true;
      return;
    }
    if (h.seq < p_.seq) return malformed(i, "stale sequence number " + std::to_string(h.seq));
    int stream = -1;
    for (int r : ls.recvs)
      if (static_cast<uint8_t>(s_.recvs[static_cast<size_t>(r)].kind) == h.kind) stream = r;
    if (stream < 0) return malformed(i, "unexpected kind " + std::to_string(h.kind));
    RecvStream& rs = s_.recvs[static_cast<size_t>(stream)];
    if (rs.next >= rs.total) return malformed(i, "more messages than expected");
    Message m = s_.recvMessage(static_cast<size_t>(stream), rs.next);
    if (h.length != m.bytes || h.step != m.step || h.chunk != m.chunk || h.phase != m.phase)
      return malformed(i, "expected step " + std::to_string(m.step) + " chunk " +
                              std::to_string(m.chunk) + " of " + std::to_string(m.bytes) +
                              " bytes, got step " + std::to_string(h.step) + " chunk " +
                              std::to_string(h.chunk) + " of " + std::to_string(h.length) +
                              " bytes");
    ls.rs = stream;
    ls.ridx = rs.next;
    ls.rmsg = m;
    ls.rlen = m.bytes;
    ls.rgot = 0;
    ls.scratch = nullptr;
    if (m.reduce) {
      if (m.bytes > 0) ls.scratch = s_.pool->acquire();
      ls.rdst = ls.scratch;
    } else {
      ls.rdst = m.ptr;
    }
  }

  void finishAbort(size_t i) {
    LinkState& ls = st_[i];
    std::string text(reinterpret_cast<const char*>(ls.abuf), ls.rlen);
    for (char& c : text)
      if (c < 0x20 || c > 0x7e) c = '?';  // it is shown to people: printable only
    ls.rabort = false;
    fail(static_cast<int>(i), text, text + " (reported by " + peerName(i) + ")");
  }

  void completeRecv(size_t i) {
    Link& l = links_[i];
    LinkState& ls = st_[i];
    if (p_.events != nullptr) trace(ls.rmsg, col::Side::kRecv, l.peer, ls.rt0);
    RecvStream& rs = s_.recvs[static_cast<size_t>(ls.rs)];
    ++rs.next;
    --ls.recv_left;
    --remaining_;
    size_t stream = static_cast<size_t>(ls.rs);
    uint32_t idx = ls.ridx;
    char* scratch = ls.scratch;
    ls.rs = -1;
    ls.scratch = nullptr;
    l.hdr_got = 0;
    s_.received(stream, idx, scratch);
    pumpAllSends();  // what this made ready goes on the wire before we read on
  }

  void pumpRecv(size_t i) {
    Link& l = links_[i];
    LinkState& ls = st_[i];
    int messages = 0;
    size_t bytes = 0;
    while (!failed_ && !l.parked && messages < kMaxMessagesPerTurn && bytes < kMaxBytesPerTurn) {
      unsigned char* dst;
      size_t want;
      bool header = ls.rs < 0 && !ls.rabort;
      if (header) {
        dst = l.hdr + l.hdr_got;
        want = kFrameHeaderBytes - l.hdr_got;
      } else {
        dst = reinterpret_cast<unsigned char*>(ls.rdst) + ls.rgot;
        want = ls.rlen - ls.rgot;
      }
      ssize_t n = ioRecv(l.fd, dst, want);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        int e = errno;
        if (e == ECONNRESET)
          fail(static_cast<int>(i), peerName(i) + " reset the connection");
        else
          fail(static_cast<int>(i), "connection to " + peerName(i) + " failed: " + errnoText(e));
        return;
      }
      if (n == 0) {
        // EOF. Between frames, with nothing more expected from or for this
        // peer in this collective, it is a peer that finished and left.
        if (!header || l.hdr_got > 0 || ls.recv_left > 0 || ls.send_left > 0) {
          std::string where = l.hdr_got > 0 && header ? " in the middle of a frame header" : "";
          fail(static_cast<int>(i), peerName(i) + " closed the connection" + where);
        } else {
          l.closed = true;
        }
        return;
      }
      progress();
      bytes += static_cast<size_t>(n);
      if (header) {
        if (l.hdr_got == 0 && p_.events != nullptr) ls.rt0 = col::nowNs();
        l.hdr_got += static_cast<size_t>(n);
        if (l.hdr_got < kFrameHeaderBytes) continue;
        onHeader(i);
        if (failed_ || l.parked) return;
        if (ls.rabort || ls.rlen > 0) continue;
        ++messages;
        completeRecv(i);  // empty payload
        continue;
      }
      ls.rgot += static_cast<size_t>(n);
      if (ls.rgot < ls.rlen) continue;
      if (ls.rabort) {
        finishAbort(i);
        return;
      }
      ++messages;
      completeRecv(i);
    }
  }

  // Tells every peer still connected that this collective failed: first
  // finishes a half-written message (the peer reads frames whole), then one
  // abort frame, then closes our side for writing. All links at once (one
  // slow peer must not use up the others' time), bounded in time.
  void sendAborts() {
    const Deadline deadline = Clock::now() + kAbortBudget;
    const std::string text = cause_.substr(0, kMaxAbortPayload);
    FrameHeader h;
    h.kind = static_cast<uint8_t>(FrameKind::kAbort);
    h.token = p_.token;
    h.seq = p_.seq;
    h.length = text.size();
    std::string abort(kFrameHeaderBytes, '\0');
    encodeFrame(h, reinterpret_cast<unsigned char*>(abort.data()));
    abort += text;
    struct Out {
      size_t link;
      iovec part[3];  // rest of the header, rest of the payload, the abort frame
    };
    std::vector<Out> outs;
    for (size_t i = 0; i < links_.size(); ++i) {
      Link& l = links_[i];
      if (l.closed || l.fd < 0) continue;
      LinkState& ls = st_[i];
      Out o{i, {{nullptr, 0}, {nullptr, 0}, {abort.data(), abort.size()}}};
      if (ls.ss >= 0) {
        if (ls.ssent < kFrameHeaderBytes)
          o.part[0] = {ls.shdr + ls.ssent, kFrameHeaderBytes - ls.ssent};
        size_t off = ls.ssent > kFrameHeaderBytes ? ls.ssent - kFrameHeaderBytes : 0;
        if (ls.smsg.bytes > off) o.part[1] = {ls.smsg.ptr + off, ls.smsg.bytes - off};
      }
      outs.push_back(o);
    }
    auto left = [](const Out& o) {
      return o.part[0].iov_len + o.part[1].iov_len + o.part[2].iov_len;
    };
    std::vector<pollfd> fds;
    for (;;) {
      fds.clear();
      for (Out& o : outs) {
        // Write what the socket takes now.
        while (left(o) > 0) {
          int first = o.part[0].iov_len > 0 ? 0 : o.part[1].iov_len > 0 ? 1 : 2;
          ssize_t n = ioSendv(links_[o.link].fd, o.part + first, 3 - first);
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) {
            if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
              o.part[0].iov_len = o.part[1].iov_len = o.part[2].iov_len = 0;
            break;
          }
          size_t k = static_cast<size_t>(n);
          for (iovec& v : o.part) {
            size_t take = std::min(k, v.iov_len);
            v.iov_base = static_cast<char*>(v.iov_base) + take;
            v.iov_len -= take;
            k -= take;
          }
        }
        if (left(o) > 0) fds.push_back({links_[o.link].fd, POLLOUT, 0});
      }
      if (fds.empty()) break;
      int ms = pollMs(deadline);
      if (ms == 0) break;
      if (::poll(fds.data(), fds.size(), ms) < 0 && errno != EINTR) break;
    }
    for (Out& o : outs) {
      ::shutdown(links_[o.link].fd, SHUT_WR);
      links_[o.link].closed = true;
    }
    // Reduced chunks still held by the schedule are not returned: the
    // communicator is unusable from here on.
  }

  Schedule& s_;
  std::vector<Link>& links_;
  const EngineParams& p_;
  std::vector<LinkState> st_;
  size_t remaining_ = 0;
  Clock::time_point last_progress_;
  bool failed_ = false;
  std::string cause_;  // forwarded in abort frames
  std::string shown_;  // what this rank reports
};

}  // namespace

bool runEngine(Schedule& schedule, std::vector<Link>& links, const EngineParams& params,
               std::string* error) {
  Engine e(schedule, links, params);
  return e.run(error);
}

}  // namespace ringside::reference::detail
