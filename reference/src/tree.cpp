// reference/src/tree.cpp — double binary tree all-reduce: reduce up, broadcast down.
//
// The buffer is cut in two halves: tree 0 carries elements [0, h0), tree 1
// carries [h0, count), h0 = ceil(count/2). The two trees (topology.h) are
// complementary: a rank that is a leaf in one is interior in the other, so
// each rank's links carry data in both directions and the two roots differ.
// Each half is cut into C_k chunks of at most `ce` elements; trace and frame
// chunk numbers run over the whole buffer (tree 0's chunks 0..C_0-1, then
// tree 1's C_0..C_0+C_1-1).
//
// Per tree, per chunk c:
//   reduce:    a node waits for chunk c from each child, reduces them into
//              its own chunk c (always first child, then second: a fixed
//              order, so results do not depend on arrival order), then sends
//              the partial result to its parent. A leaf sends at once.
//   broadcast: the root, once chunk c is fully reduced, sends it to its
//              children; every other node receives chunk c from its parent
//              in place and forwards it to its children.
// Step numbers (frame and trace) are tree levels: a message between a node at
// depth d and its parent has step d, in both phases.
//
// Pipelining: chunks flow independently, so a parent forwards chunk c up
// while chunk c+1 is arriving from its children, and broadcasts chunk c down
// while reducing chunk c+1; with both trees active every link moves data
// both ways at once.
//
// Bytes per rank and tree (half = about count*esize/2): a leaf sends half up
// and receives half down; an interior node with k children receives k*half
// and sends half up (the root: none), then receives half down (the root: none)
// and sends k*half down. Summed over both trees a rank sends and receives
// about 1.5-2 * count*esize bytes (leaf in one tree, interior in the other),
// in about 2*depth + C pipeline steps instead of the ring's 2(n-1).
#include <algorithm>
#include <deque>

#include "algorithms.h"

namespace ringside::reference::detail {

namespace col = ringside::collector;

namespace {

class TreeSchedule final : public Schedule {
 public:
  TreeSchedule(const CollectiveArgs& a, const TreeNode nodes[2], const std::vector<int>& link_of)
      : a_(a), esize_(dtypeSize(a.dtype)) {
    size_t h0 = (a.count + 1) / 2;
    // At most 256 KiB: about 8% less CPU than 512 KiB at 64 MiB (docs/bench.md).
    ce_ = chunkElements(a.chunk_bytes, h0 * esize_, esize_, 8, size_t{32} << 10, size_t{256} << 10);
    uint32_t first_chunk = 0;
    for (int k = 0; k < 2; ++k) {
      Tree& t = t_[k];
      t.node = nodes[k];
      t.base = k == 0 ? 0 : h0;
      t.elems = k == 0 ? h0 : a.count - h0;
      t.chunks = static_cast<uint32_t>((t.elems + ce_ - 1) / ce_);
      t.first_chunk = first_chunk;
      first_chunk += t.chunks;
      if (t.chunks == 0) continue;  // e.g. count 1: tree 1 idle
      FrameKind up = k == 0 ? FrameKind::kTreeUp0 : FrameKind::kTreeUp1;
      FrameKind down = k == 0 ? FrameKind::kTreeDown0 : FrameKind::kTreeDown1;
      for (int j = 0; j < t.node.nchildren; ++j) {
        int link = link_of[static_cast<size_t>(t.node.children[j])];
        t.child_recv[j] = addRecv(link, up, {k, Role::kFromChild, j});
        t.child_send[j] = addSend(link, down, {k, Role::kToChild, j});
      }
      if (t.node.parent >= 0) {
        int link = link_of[static_cast<size_t>(t.node.parent)];
        t.up_send = addSend(link, up, {k, Role::kToParent, -1});
        t.down_recv = addRecv(link, down, {k, Role::kFromParent, -1});
        if (t.node.nchildren == 0)
          sends[static_cast<size_t>(t.up_send)].ready = t.chunks;  // a leaf's chunks are final
      }
    }
    scratch_bytes = std::min(ce_, std::max<size_t>(h0, 1)) * esize_;
  }

  Message sendMessage(size_t s, uint32_t index) override {
    const Role& role = send_role_[s];
    const Tree& t = t_[role.tree];
    bool up = role.what == Role::kToParent;
    return message(role.tree, index, up ? t.node.depth : t.node.depth + 1, up, false);
  }

  Message recvMessage(size_t s, uint32_t index) override {
    const Role& role = recv_role_[s];
    const Tree& t = t_[role.tree];
    bool up = role.what == Role::kFromChild;
    return message(role.tree, index, up ? t.node.depth + 1 : t.node.depth, up, up);
  }

  void received(size_t s, uint32_t index, char* scratch) override {
    const Role& role = recv_role_[s];
    Tree& t = t_[role.tree];
    if (role.what == Role::kFromChild) {
      t.held[role.child].push_back({index, scratch});
      reduceReady(role.tree);
    } else {
      // Chunk `index` arrived from the parent in place: forward it down.
      for (int j = 0; j < t.node.nchildren; ++j)
        sends[static_cast<size_t>(t.child_send[j])].ready = index + 1;
    }
  }

 private:
  struct Role {
    int tree;
    enum What { kFromChild, kToChild, kToParent, kFromParent } what;
    int child;
  };
  struct Held {
    uint32_t index;
    char* scratch;
  };
  struct Tree {
    TreeNode node;
    size_t base = 0, elems = 0;
    uint32_t chunks = 0, first_chunk = 0;
    int up_send = -1, down_recv = -1;
    int child_recv[2] = {-1, -1}, child_send[2] = {-1, -1};
    uint32_t reducing = 0;  // next chunk to reduce
    int next_child = 0;     // next child to reduce into it
    std::deque<Held> held[2];
  };

  int addSend(int link, FrameKind kind, Role role) {
    sends.push_back(SendStream{link, kind, t_[role.tree].chunks, 0, 0});
    send_role_.push_back(role);
    return static_cast<int>(sends.size() - 1);
  }
  int addRecv(int link, FrameKind kind, Role role) {
    recvs.push_back(RecvStream{link, kind, t_[role.tree].chunks, 0});
    recv_role_.push_back(role);
    return static_cast<int>(recvs.size() - 1);
  }

  Message message(int k, uint32_t c, int depth, bool up, bool reduce) const {
    const Tree& t = t_[k];
    size_t first = static_cast<size_t>(c) * ce_;
    size_t len = std::min(ce_, t.elems - first);
    Message m;
    m.ptr = a_.data + (t.base + first) * esize_;
    m.bytes = len * esize_;
    m.step = static_cast<uint32_t>(depth);
    m.trace_step = static_cast<int16_t>(depth);
    m.chunk = t.first_chunk + c;
    m.phase = static_cast<uint8_t>(up ? col::Phase::kReduce : col::Phase::kBroadcast);
    m.reduce = reduce;
    return m;
  }

  // Reduces held child chunks into ours in chunk order, first child first.
  void reduceReady(int k) {
    Tree& t = t_[k];
    while (t.reducing < t.chunks) {
      auto& q = t.held[t.next_child];
      if (q.empty() || q.front().index != t.reducing) return;
      Message m = message(k, t.reducing, 0, true, true);
      if (q.front().scratch != nullptr) {
        reduceInto(m.ptr, q.front().scratch, m.bytes / esize_, a_.dtype, a_.op);
        pool->release(q.front().scratch);
      }
      q.pop_front();
      if (++t.next_child < t.node.nchildren) continue;
      // Chunk complete over this subtree: up to the parent, or (root) down.
      t.next_child = 0;
      uint32_t done = ++t.reducing;
      if (t.up_send >= 0)
        sends[static_cast<size_t>(t.up_send)].ready = done;
      else
        for (int j = 0; j < t.node.nchildren; ++j)
          sends[static_cast<size_t>(t.child_send[j])].ready = done;
    }
  }

  CollectiveArgs a_;
  size_t esize_;
  size_t ce_ = 1;
  Tree t_[2];
  std::vector<Role> send_role_, recv_role_;
};

class PingSchedule final : public Schedule {
 public:
  PingSchedule(bool initiator, int link, char* buf, size_t bytes, uint32_t iters)
      : initiator_(initiator), buf_(buf), bytes_(bytes) {
    sends.push_back(SendStream{link, FrameKind::kPing, iters, initiator ? 1u : 0u, 0});
    recvs.push_back(RecvStream{link, FrameKind::kPing, iters, 0});
  }
  Message sendMessage(size_t, uint32_t index) override { return message(index); }
  Message recvMessage(size_t, uint32_t index) override { return message(index); }
  void received(size_t, uint32_t index, char*) override {
    // Initiator: pong i back, ping i+1 may go. Responder: ping i here, pong i goes.
    sends[0].ready = std::min(sends[0].total, index + (initiator_ ? 2 : 1));
  }

 private:
  Message message(uint32_t index) const { return roundMessage(buf_, bytes_, index); }
  bool initiator_;
  char* buf_;
  size_t bytes_;
};

}  // namespace

std::unique_ptr<Schedule> makeTreeSchedule(const CollectiveArgs& a, const TreeNode trees[2],
                                           const std::vector<int>& link_of) {
  return std::make_unique<TreeSchedule>(a, trees, link_of);
}

std::unique_ptr<Schedule> makePingSchedule(bool initiator, int link, char* buf, size_t bytes,
                                           uint32_t iters) {
  return std::make_unique<PingSchedule>(initiator, link, buf, bytes, iters);
}

}  // namespace ringside::reference::detail
