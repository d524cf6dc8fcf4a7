// reference/src/engine.cpp — see engine.h for the design.
#include "engine.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>

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
// Budget for telling the other peers that the collectives failed.
constexpr auto kAbortBudget = std::chrono::milliseconds(500);
// Tagged collectives finished lately, remembered to name a frame of one of them as stale.
constexpr size_t kRecentTagged = 1024;
// Frames of collectives that have not started on this rank yet are read on and kept, up to this
// many payload bytes in all; past it a link waits (parks) until its collective starts.
constexpr size_t kStashBudget = size_t{256} << 20;

// Which collective a frame belongs to: its space and sequence number.
enum class Space : uint8_t { kSequential = 0, kTagged = 1, kPing = 2 };
struct Key {
  Space space = Space::kSequential;
  uint64_t seq = 0;
  bool operator<(const Key& o) const {
    return space != o.space ? space < o.space : seq < o.seq;
  }
  bool operator==(const Key& o) const { return space == o.space && seq == o.seq; }
};

Key keyOf(bool ping, uint64_t seq) {
  if (ping) return {Space::kPing, seq};
  return {(seq & kTaggedSeqBit) != 0 ? Space::kTagged : Space::kSequential, seq};
}

std::string keyName(const Key& k) {
  if (k.space == Space::kTagged) return "tag " + std::to_string(k.seq & ~kTaggedSeqBit);
  return std::to_string(k.seq);
}

// One collective in flight: its schedule and where it stands on each link.
struct Active {
  Schedule* s = nullptr;
  const EngineParams* p = nullptr;
  Key key;
  std::vector<std::vector<int>> sends_on, recvs_on;  // per link: its streams there
  std::vector<uint32_t> send_left, recv_left;        // per link
  size_t remaining = 0;
  bool done = false;
  bool ok = false;
};

// Files each stream (send or receive) under its link and counts the messages it has left, per
// link and in all.
template <typename Stream>
void indexStreams(const std::vector<Stream>& streams, std::vector<std::vector<int>>& on,
                  std::vector<uint32_t>& left, size_t& remaining) {
  for (size_t i = 0; i < streams.size(); ++i) {
    const Stream& st = streams[i];
    const auto l = static_cast<size_t>(st.link);
    on[l].push_back(static_cast<int>(i));
    left[l] += st.total - st.next;
    remaining += st.total - st.next;
  }
}

// A frame that arrived before its collective started here, kept until it does.
struct Stashed {
  size_t link = 0;
  FrameHeader h;
  std::unique_ptr<char[]> payload;
  int64_t t0 = 0, t1 = 0;
};

}  // namespace

struct Engine::Impl {
  Impl(std::vector<Link>& links, uint64_t token, int rank, std::chrono::milliseconds timeout)
      : links_(links), token_(token), rank_(rank), timeout_(timeout), io_(links.size()) {
    wake_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  }
  ~Impl() {
    if (wake_ >= 0) ::close(wake_);
  }

  bool run(Schedule& s, const EngineParams& p, std::string* error) {
    Active a;
    a.s = &s;
    a.p = &p;
    a.key = keyOf(p.ping, p.seq);
    const size_t nl = links_.size();
    a.sends_on.resize(nl);
    a.recvs_on.resize(nl);
    a.send_left.assign(nl, 0);
    a.recv_left.assign(nl, 0);
    indexStreams(s.sends, a.sends_on, a.send_left, a.remaining);
    indexStreams(s.recvs, a.recvs_on, a.recv_left, a.remaining);

    std::unique_lock<std::mutex> lock(mutex_);
    if (failed_) {
      finishFailure();  // the peers are told, if the failure came after the last drive's end
      *error = shown_;
      return false;
    }
    if (active_.count(a.key) != 0) {
      *error = "collective " + keyName(a.key) + " is already in flight on this communicator";
      return false;
    }
    if (a.remaining == 0) return true;
    active_[a.key] = &a;
    for (size_t i = 0; i < nl; ++i) {
      LinkIo& io = io_[i];
      for (int st : a.sends_on[i]) io.sends.push_back({&a, st});
      io.send_left += a.send_left[i];
      io.recv_left += a.recv_left[i];
      if ((a.send_left[i] > 0 || a.recv_left[i] > 0) && (links_[i].closed || links_[i].fd < 0))
        fail(static_cast<int>(i), "rank " + std::to_string(links_[i].peer) + " closed the connection");
    }
    // Frames that came before it started, in the order they came.
    if (!failed_) deliverStash(&a);
    // New work: the deadline starts again, parked frames may be this collective's, and a
    // thread waiting in poll() must see its sends.
    last_progress_ = Clock::now();
    dirty_ = true;
    if (driving_ && wake_ >= 0) {
      uint64_t one = 1;
      [[maybe_unused]] ssize_t n = ::write(wake_, &one, sizeof one);
    }
    while (!a.done) {
      if (!driving_) {
        driving_ = true;
        drive(lock, a);
        driving_ = false;
        cv_.notify_all();
      } else {
        cv_.wait(lock);
      }
    }
    if (!a.ok) *error = shown_;
    return a.ok;
  }

  void linksAdded() {
    std::lock_guard<std::mutex> lock(mutex_);
    io_.resize(links_.size());
  }

 private:
  struct LinkIo {
    // sends of every collective in flight on this link: (collective, its stream)
    std::vector<std::pair<Active*, int>> sends;
    uint32_t send_left = 0, recv_left = 0;  // over every collective in flight
    size_t rr = 0;                          // round-robin cursor over `sends`
    // receive: the header being read (or parked: a collective not started here)
    unsigned char hdr[kFrameHeaderBytes] = {};
    size_t hdr_got = 0;
    bool parked = false;
    // receive in progress (after its header)
    Active* ra = nullptr;  // nullptr: reading a header (or an abort payload when rabort)
    int rs = -1;
    bool rabort = false;
    uint32_t ridx = 0;
    Message rmsg;
    char* rdst = nullptr;
    size_t rlen = 0, rgot = 0;
    char* scratch = nullptr;
    int64_t rt0 = 0;
    unsigned char abuf[kMaxAbortPayload] = {};
    // receive of a frame of a collective not started here (rstash): kept in stash_buf
    bool rstash = false;
    Key stash_key;
    FrameHeader stash_h;
    std::unique_ptr<char[]> stash_buf;
    // send in progress
    Active* sa = nullptr;
    int ss = -1;
    Message smsg;
    unsigned char shdr[kFrameHeaderBytes] = {};
    size_t ssent = 0;  // over header + payload
    int64_t st0 = 0;
    bool wblocked = false;
  };

  // Drives every collective in flight until `mine` is done (or all failed). Called with the
  // lock held; releases it only while waiting in poll().
  void drive(std::unique_lock<std::mutex>& lock, Active& mine) {
    std::vector<pollfd> fds;
    std::vector<size_t> which;
    // A failure found in the pass that finished `mine` (an abort frame read after its last
    // message) is acted on too: otherwise the peers are never told, the process leaves, and a
    // peer sees only "rank N reset the connection" instead of the cause (Faults.KilledPeer*).
    while (!mine.done || failed_) {
      if (failed_) {
        finishFailure();
        break;
      }
      if (dirty_) {
        dirty_ = false;
        deliverParked();
        if (!failed_) pumpAllSends();
        continue;
      }
      fds.clear();
      which.clear();
      if (wake_ >= 0) fds.push_back({wake_, POLLIN, 0});
      for (size_t i = 0; i < links_.size(); ++i) {
        Link& l = links_[i];
        if (l.closed || l.fd < 0) continue;
        short ev = io_[i].parked ? 0 : POLLIN;
        if (io_[i].wblocked && hasSendWork(i)) ev |= POLLOUT;
        if (ev == 0) continue;
        fds.push_back({l.fd, ev, 0});
        which.push_back(i);
      }
      const Deadline deadline = last_progress_ + timeout_;
      int ms = pollMs(deadline);
      if (ms == 0 || which.empty()) {
        // No byte moved for the timeout, or nothing left to wait on but a collective that
        // has not started here: on a parked link with nothing else to read.
        if (ms == 0 || !anyParked()) {
          timeoutFailure();
          continue;
        }
      }
      lock.unlock();
      int rc = ::poll(fds.data(), fds.size(), ms);
      int poll_errno = errno;
      lock.lock();
      if (rc < 0) {
        if (poll_errno == EINTR) continue;
        fail(-1, "poll failed: " + errnoText(poll_errno));
        continue;
      }
      size_t k = 0;
      if (wake_ >= 0) {
        if (fds[0].revents != 0) {
          uint64_t v;
          while (::read(wake_, &v, sizeof v) > 0) {
          }
        }
        k = 1;
      }
      for (size_t w = 0; k < fds.size() && !failed_; ++k, ++w) {
        size_t i = which[w];
        short re = fds[k].revents;
        if (re == 0) continue;
        if ((re & (POLLIN | POLLHUP | POLLERR)) && !io_[i].parked) pumpRecv(i);
        if (!failed_ && (re & (POLLOUT | POLLERR | POLLHUP)) && hasSendWork(i)) {
          io_[i].wblocked = false;
          pumpSend(i);
        }
      }
    }
  }

  bool anyParked() const {
    for (size_t i = 0; i < links_.size(); ++i)
      if (io_[i].parked && !links_[i].closed) return true;
    return false;
  }

  // A collective has every message sent and received: off the links, its thread woken.
  void finish(Active* a) {
    for (LinkIo& io : io_) {
      auto& v = io.sends;
      v.erase(std::remove_if(v.begin(), v.end(), [a](const auto& e) { return e.first == a; }),
              v.end());
      if (io.rr > v.size()) io.rr = 0;
    }
    active_.erase(a->key);
    if (a->key.space == Space::kTagged) {
      recent_tagged_.push_back(a->key.seq);
      if (recent_tagged_.size() > kRecentTagged) recent_tagged_.pop_front();
    } else {
      uint64_t& done = done_below_[static_cast<size_t>(a->key.space)];
      done = std::max(done, a->key.seq + 1);
    }
    a->ok = true;
    a->done = true;
    cv_.notify_all();
  }

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

  // Every collective in flight fails with the cause; the peers are told.
  void finishFailure() {
    if (!aborted_) {
      aborted_ = true;
      sendAborts();
    }
    for (LinkIo& io : io_) {
      io.sends.clear();
      io.sa = nullptr;
      io.ra = nullptr;
    }
    for (auto& [key, a] : active_) {
      a->ok = false;
      a->done = true;
    }
    active_.clear();
    stash_.clear();
    stash_bytes_ = 0;
    cv_.notify_all();
  }

  void malformed(size_t i, const std::string& what) {
    fail(static_cast<int>(i), peerName(i) + " sent a malformed frame (" + what + ")");
  }

  void timeoutFailure() {
    std::string ms = std::to_string(timeout_.count()) + " ms";
    // The cause names this rank too: it is forwarded to the others in the abort frame, and
    // "rank 1: no data from rank 1" (a relayed cause) would not say who waited.
    const std::string me = rank_ >= 0 ? "rank " + std::to_string(rank_) : std::string("this rank");
    for (size_t i = 0; i < links_.size(); ++i)
      if (io_[i].recv_left > 0)
        return fail(-1, me + " got no data from " + peerName(i) + " for " + ms);
    for (size_t i = 0; i < links_.size(); ++i)
      if (hasSendWork(i)) return fail(-1, peerName(i) + " took no data from " + me + " for " + ms);
    fail(-1, me + " made no progress for " + ms);
  }

  bool hasSendWork(size_t i) const {
    const LinkIo& io = io_[i];
    if (io.sa != nullptr) return true;
    for (const auto& [a, st] : io.sends) {
      const SendStream& ss = a->s->sends[static_cast<size_t>(st)];
      if (ss.next < ss.ready && ss.next < ss.total) return true;
    }
    return false;
  }

  void pumpAllSends() {
    for (size_t i = 0; i < links_.size() && !failed_; ++i)
      if (!io_[i].wblocked && hasSendWork(i)) pumpSend(i);
  }

  // Picks the next ready message on link i (round robin over the streams there).
  bool startSend(size_t i) {
    LinkIo& io = io_[i];
    const size_t n = io.sends.size();
    for (size_t k = 0; k < n; ++k) {
      const size_t pos = (io.rr + k) % n;
      auto [a, st] = io.sends[pos];
      SendStream& ss = a->s->sends[static_cast<size_t>(st)];
      if (ss.next >= ss.ready || ss.next >= ss.total) continue;
      io.rr = pos + 1;
      io.sa = a;
      io.ss = st;
      io.smsg = a->s->sendMessage(static_cast<size_t>(st), ss.next);
      FrameHeader h;
      h.kind = static_cast<uint8_t>(ss.kind);
      h.phase = io.smsg.phase;
      h.token = token_;
      h.seq = a->key.seq;
      h.step = io.smsg.step;
      h.chunk = io.smsg.chunk;
      h.length = io.smsg.bytes;
      encodeFrame(h, io.shdr);
      io.ssent = 0;
      if (a->p->events != nullptr) io.st0 = col::nowNs();
      return true;
    }
    return false;
  }

  void pumpSend(size_t i) {
    LinkIo& io = io_[i];
    Link& l = links_[i];
    for (;;) {
      if (io.sa == nullptr && !startSend(i)) return;
      const size_t total = kFrameHeaderBytes + io.smsg.bytes;
      while (io.ssent < total) {
        iovec iov[2];
        int cnt = 0;
        if (io.ssent < kFrameHeaderBytes)
          iov[cnt++] = {io.shdr + io.ssent, kFrameHeaderBytes - io.ssent};
        size_t off = io.ssent > kFrameHeaderBytes ? io.ssent - kFrameHeaderBytes : 0;
        if (io.smsg.bytes > off) iov[cnt++] = {io.smsg.ptr + off, io.smsg.bytes - off};
        ssize_t n = ioSendv(l.fd, iov, cnt);
        if (n > 0) {
          io.ssent += static_cast<size_t>(n);
          progress();
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
          io.wblocked = true;
          return;
        }
        int e = n < 0 ? errno : EPIPE;
        // The peer may have told us why before it went: an abort frame
        // waiting in our receive buffer names the real cause.
        if (!io.parked) pumpRecv(i);
        if (failed_) return;
        if (e == EPIPE || e == ECONNRESET)
          fail(static_cast<int>(i), peerName(i) + " closed the connection");
        else
          fail(static_cast<int>(i), "connection to " + peerName(i) + " failed: " + errnoText(e));
        return;
      }
      // The whole message is in the kernel.
      Active* a = io.sa;
      if (a->p->events != nullptr) trace(*a, io.smsg, col::Side::kSend, l.peer, io.st0);
      ++a->s->sends[static_cast<size_t>(io.ss)].next;
      --a->send_left[i];
      --io.send_left;
      --a->remaining;
      io.sa = nullptr;
      io.ss = -1;
      if (a->remaining == 0) finish(a);
    }
  }

  static void trace(const Active& a, const Message& m, col::Side side, int peer, int64_t t0) {
    col::Event e = a.p->trace_template;
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
    a.p->events->push_back(e);
  }

  // Headers parked on links: now that another collective started, some may be its.
  void deliverParked() {
    for (size_t i = 0; i < links_.size() && !failed_; ++i) {
      LinkIo& io = io_[i];
      if (!io.parked || links_[i].closed) continue;
      io.parked = false;
      io.rt0 = col::nowNs();
      onHeader(i);
      if (!failed_ && !io.parked && io.ra != nullptr && io.rlen == 0) completeRecv(i);
      if (!failed_ && io.rstash && io.rlen == 0) finishStash(i);
    }
  }

  // The frames kept for `a` before it started, in the order they came.
  void deliverStash(Active* a) {
    auto it = stash_.find(a->key);
    if (it == stash_.end()) return;
    std::deque<Stashed> frames = std::move(it->second);
    stash_.erase(it);
    for (Stashed& f : frames) {
      stash_bytes_ -= static_cast<size_t>(f.h.length);
      if (!failed_ && !a->done) deliverFrame(a, f.link, f.h, f.payload.get(), f.t0, f.t1);
    }
  }

  // The receive stream of `a` on link i that takes frames of `kind` (the last such); -1: none.
  static int recvStreamOf(const Active& a, size_t i, uint8_t kind) {
    int stream = -1;
    for (int r : a.recvs_on[i])
      if (static_cast<uint8_t>(a.s->recvs[static_cast<size_t>(r)].kind) == kind) stream = r;
    return stream;
  }

  // A whole frame of `a` from link i, read earlier: checked as onHeader() checks one, then
  // handed over as completeRecv() hands one (its sends are pumped by the driver).
  void deliverFrame(Active* a, size_t i, const FrameHeader& h, const char* payload, int64_t t0,
                    int64_t t1) {
    const int stream = recvStreamOf(*a, i, h.kind);
    if (stream < 0) return malformed(i, "unexpected kind " + std::to_string(h.kind));
    RecvStream& rs = a->s->recvs[static_cast<size_t>(stream)];
    if (rs.next >= rs.total) return malformed(i, "more messages than expected");
    const uint32_t idx = rs.next;
    Message m = a->s->recvMessage(static_cast<size_t>(stream), idx);
    if (std::string bad = mismatch(h, m); !bad.empty()) return malformed(i, bad);
    char* scratch = nullptr;
    if (m.bytes > 0) {
      if (m.reduce) {
        scratch = a->s->pool->acquire();
        std::memcpy(scratch, payload, m.bytes);
      } else {
        std::memcpy(m.ptr, payload, m.bytes);
      }
    }
    if (a->p->events != nullptr) {
      trace(*a, m, col::Side::kRecv, links_[i].peer, t0);
      a->p->events->back().t1 = t1;
    }
    ++rs.next;
    --a->recv_left[i];
    --io_[i].recv_left;
    --a->remaining;
    a->s->received(static_cast<size_t>(stream), idx, scratch);
    if (a->remaining == 0) finish(a);
  }

  // A frame of a collective not started here is read whole: kept for it, or handed to it when
  // it started meanwhile.
  void finishStash(size_t i) {
    LinkIo& io = io_[i];
    io.rstash = false;
    io.hdr_got = 0;
    Stashed f;
    f.link = i;
    f.h = io.stash_h;
    f.payload = std::move(io.stash_buf);
    f.t0 = io.rt0;
    f.t1 = col::nowNs();
    auto it = active_.find(io.stash_key);
    if (it == active_.end()) {
      stash_[io.stash_key].push_back(std::move(f));
      return;
    }
    stash_bytes_ -= static_cast<size_t>(f.h.length);
    deliverFrame(it->second, i, f.h, f.payload.get(), f.t0, f.t1);
    if (!failed_) pumpAllSends();
  }

  static std::string mismatch(const FrameHeader& h, const Message& m) {
    if (h.length == m.bytes && h.step == m.step && h.chunk == m.chunk && h.phase == m.phase) return "";
    return "expected step " + std::to_string(m.step) + " chunk " + std::to_string(m.chunk) + " of " +
           std::to_string(m.bytes) + " bytes, got step " + std::to_string(h.step) + " chunk " +
           std::to_string(h.chunk) + " of " + std::to_string(h.length) + " bytes";
  }

  // A frame of a collective that is over here.
  bool isStale(const Key& k) const {
    if (k.space == Space::kTagged)
      return std::find(recent_tagged_.begin(), recent_tagged_.end(), k.seq) != recent_tagged_.end();
    if (k.seq < done_below_[static_cast<size_t>(k.space)]) return true;
    // Collectives numbered by the communicator run one at a time: below the one in flight,
    // every one is over.
    for (const auto& [key, a] : active_)
      if (key.space == k.space && key.seq > k.seq) return true;
    return false;
  }

  // A complete header is in io_[i].hdr: check it against the collectives in flight before
  // reading any payload byte.
  void onHeader(size_t i) {
    LinkIo& io = io_[i];
    FrameHeader h = decodeFrame(io.hdr);
    if (h.magic != kFrameMagic) return malformed(i, "bad magic");
    if (h.version != kWireVersion)
      return malformed(i, "unsupported version " + std::to_string(h.version));
    if (h.token != token_) return malformed(i, "wrong link token");
    if (h.flags != 0) return malformed(i, "unknown flags");
    if (h.kind == static_cast<uint8_t>(FrameKind::kAbort)) {
      if (h.length > kMaxAbortPayload) return malformed(i, "oversized abort");
      io.rabort = true;
      io.rdst = reinterpret_cast<char*>(io.abuf);
      io.rlen = static_cast<size_t>(h.length);
      io.rgot = 0;
      if (io.rlen == 0) finishAbort(i);
      return;
    }
    if (h.kind < 1 || h.kind > kLastFrameKind)
      return malformed(i, "unknown kind " + std::to_string(h.kind));
    if (h.length > kMaxFramePayload)
      return malformed(i, "oversized length " + std::to_string(h.length));
    const Key key = keyOf(!isAllreduceKind(h.kind), h.seq);
    auto it = active_.find(key);
    if (it == active_.end()) {
      if (isStale(key)) return malformed(i, "stale sequence number " + keyName(key));
      // A collective numbered by the communicator runs alone: while it expects frames on this
      // link, the peer sends nothing else there before them (whatever it ran before is over
      // here too, whatever it runs after comes after them).
      for (const auto& [k, a] : active_)
        if (k.space != Space::kTagged && a->recv_left[i] > 0)
          return malformed(i, "a later collective's frame while this one's are due");
      // A collective that has not started here yet. Tagged (several in flight): read on and
      // keep the frame (a link that waited for it could hold up a collective in flight here
      // whose frames are behind it, while that collective holds up the peer's), as long as
      // the budget allows. Numbered by the communicator (one at a time): the link waits, and
      // the payload is read straight into its place once the collective starts.
      if (key.space == Space::kTagged && stash_bytes_ + h.length <= kStashBudget) {
        stash_bytes_ += static_cast<size_t>(h.length);
        io.rstash = true;
        io.stash_key = key;
        io.stash_h = h;
        io.stash_buf.reset(h.length > 0 ? new char[static_cast<size_t>(h.length)] : nullptr);
        io.rdst = io.stash_buf.get();
        io.rlen = static_cast<size_t>(h.length);
        io.rgot = 0;
        return;
      }
      io.parked = true;
      return;
    }
    Active* a = it->second;
    const int stream = recvStreamOf(*a, i, h.kind);
    if (stream < 0) return malformed(i, "unexpected kind " + std::to_string(h.kind));
    RecvStream& rs = a->s->recvs[static_cast<size_t>(stream)];
    if (rs.next >= rs.total) return malformed(i, "more messages than expected");
    Message m = a->s->recvMessage(static_cast<size_t>(stream), rs.next);
    if (std::string bad = mismatch(h, m); !bad.empty()) return malformed(i, bad);
    io.ra = a;
    io.rs = stream;
    io.ridx = rs.next;
    io.rmsg = m;
    io.rlen = m.bytes;
    io.rgot = 0;
    io.scratch = nullptr;
    if (m.reduce) {
      if (m.bytes > 0) io.scratch = a->s->pool->acquire();
      io.rdst = io.scratch;
    } else {
      io.rdst = m.ptr;
    }
  }

  void finishAbort(size_t i) {
    LinkIo& io = io_[i];
    std::string text(reinterpret_cast<const char*>(io.abuf), io.rlen);
    for (char& c : text)
      if (c < 0x20 || c > 0x7e) c = '?';  // it is shown to people: printable only
    io.rabort = false;
    fail(static_cast<int>(i), text, text + " (reported by " + peerName(i) + ")");
  }

  void completeRecv(size_t i) {
    Link& l = links_[i];
    LinkIo& io = io_[i];
    Active* a = io.ra;
    if (a->p->events != nullptr) trace(*a, io.rmsg, col::Side::kRecv, l.peer, io.rt0);
    RecvStream& rs = a->s->recvs[static_cast<size_t>(io.rs)];
    ++rs.next;
    --a->recv_left[i];
    --io.recv_left;
    --a->remaining;
    const auto stream = static_cast<size_t>(io.rs);
    const uint32_t idx = io.ridx;
    char* scratch = io.scratch;
    io.ra = nullptr;
    io.rs = -1;
    io.scratch = nullptr;
    io.hdr_got = 0;
    a->s->received(stream, idx, scratch);
    if (a->remaining == 0) finish(a);
    pumpAllSends();  // what this made ready goes on the wire before we read on
  }

  void pumpRecv(size_t i) {
    Link& l = links_[i];
    LinkIo& io = io_[i];
    int messages = 0;
    size_t bytes = 0;
    while (!failed_ && !io.parked && messages < kMaxMessagesPerTurn && bytes < kMaxBytesPerTurn) {
      unsigned char* dst;
      size_t want;
      const bool header = io.ra == nullptr && !io.rabort && !io.rstash;
      if (header) {
        dst = io.hdr + io.hdr_got;
        want = kFrameHeaderBytes - io.hdr_got;
      } else {
        dst = reinterpret_cast<unsigned char*>(io.rdst) + io.rgot;
        want = io.rlen - io.rgot;
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
        // peer by any collective in flight, it is a peer that finished and left.
        if (!header || io.hdr_got > 0 || io.recv_left > 0 || io.send_left > 0) {
          std::string where = io.hdr_got > 0 && header ? " in the middle of a frame header" : "";
          fail(static_cast<int>(i), peerName(i) + " closed the connection" + where);
        } else {
          l.closed = true;
        }
        return;
      }
      progress();
      bytes += static_cast<size_t>(n);
      if (header) {
        if (io.hdr_got == 0) io.rt0 = col::nowNs();
        io.hdr_got += static_cast<size_t>(n);
        if (io.hdr_got < kFrameHeaderBytes) continue;
        onHeader(i);
        if (failed_ || io.parked) return;
        if (io.rabort || io.rlen > 0) continue;
        ++messages;
        if (io.rstash)
          finishStash(i);
        else
          completeRecv(i);  // empty payload
        continue;
      }
      io.rgot += static_cast<size_t>(n);
      if (io.rgot < io.rlen) continue;
      if (io.rabort) {
        finishAbort(i);
        return;
      }
      ++messages;
      if (io.rstash)
        finishStash(i);
      else
        completeRecv(i);
    }
  }

  // Tells every peer still connected that the collectives failed: first
  // finishes a half-written message (the peer reads frames whole), then one
  // abort frame, then closes our side for writing. All links at once (one
  // slow peer must not use up the others' time), bounded in time.
  void sendAborts() {
    const Deadline deadline = Clock::now() + kAbortBudget;
    const std::string text = cause_.substr(0, kMaxAbortPayload);
    FrameHeader h;
    h.kind = static_cast<uint8_t>(FrameKind::kAbort);
    h.token = token_;
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
      LinkIo& io = io_[i];
      Out o{i, {{nullptr, 0}, {nullptr, 0}, {abort.data(), abort.size()}}};
      if (io.sa != nullptr) {
        if (io.ssent < kFrameHeaderBytes)
          o.part[0] = {io.shdr + io.ssent, kFrameHeaderBytes - io.ssent};
        size_t off = io.ssent > kFrameHeaderBytes ? io.ssent - kFrameHeaderBytes : 0;
        if (io.smsg.bytes > off) o.part[1] = {io.smsg.ptr + off, io.smsg.bytes - off};
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
    // Reduced chunks still held by the schedules are not returned: the
    // communicator is unusable from here on.
  }

  std::vector<Link>& links_;
  const uint64_t token_;
  const int rank_;
  const std::chrono::milliseconds timeout_;
  int wake_ = -1;  // eventfd: a collective started while another thread waits in poll()

  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<LinkIo> io_;
  std::map<Key, Active*> active_;
  bool driving_ = false;
  bool dirty_ = false;  // a collective started: parked headers and its sends to look at
  Clock::time_point last_progress_;
  uint64_t done_below_[3] = {0, 0, 0};  // per space but kTagged: every lower seq finished
  std::deque<uint64_t> recent_tagged_;
  std::map<Key, std::deque<Stashed>> stash_;  // frames of collectives not started here yet
  size_t stash_bytes_ = 0;                     // their payload bytes (and one being read)
  bool failed_ = false;
  bool aborted_ = false;
  std::string cause_;  // forwarded in abort frames
  std::string shown_;  // what this rank reports
};

Engine::Engine(std::vector<Link>& links, uint64_t token, int rank, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>(links, token, rank, timeout)) {}

Engine::~Engine() = default;

bool Engine::run(Schedule& schedule, const EngineParams& params, std::string* error) {
  return impl_->run(schedule, params, error);
}

void Engine::linksAdded() { impl_->linksAdded(); }

bool runEngine(Schedule& schedule, std::vector<Link>& links, const EngineParams& params,
               std::string* error) {
  Engine e(links, params.token, params.rank, params.timeout);
  return e.run(schedule, params, error);
}

}  // namespace ringside::reference::detail
