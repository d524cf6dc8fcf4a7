// reference/src/multipath.cpp — see multipath.h.
//
// The plan (which rings, at what rates) is collective/multipath_plan.cpp; here: the capacities
// from RINGSIDE_TOPOLOGY and the schedule that runs the plan's rings side by side.
#include "multipath.h"

#include <algorithm>
#include <cstdlib>

#include "ringside/collective/topology_file.h"
#include "ringside/fileio/input_file.h"

namespace ringside::reference::detail {

bool parseTopologyCapacities(const std::string& text, int n, LinkCapacities* out,
                             std::string* error) {
  // The file's one parser (collective/topology_file.h), the one `report --topology` uses.
  collective::Topology topo;
  collective::TopologyError why;
  if (!collective::parseTopology(text, &topo, &why)) {
    *error = (why.line > 0 ? "line " + std::to_string(why.line) + ": " : std::string()) + why.what;
    return false;
  }
  return collective::topologyCapacities(topo, n, out, error);
}

LinkCapacities capacitiesFromEnvironment(int n) {
  const char* path = std::getenv("RINGSIDE_TOPOLOGY");
  if (path == nullptr || *path == '\0') return equalCapacities(n);
  // fileio's rule for configuration files: a FIFO never blocks the open, /dev/zero or a
  // terminal is refused (only a regular file), at most 16 MiB is read.
  std::string text;
  LinkCapacities caps;
  std::string error;
  if (!fileio::readConfigFile(path, collective::kMaxTopologyFileBytes, "topology file", &text, &error) ||
      !parseTopologyCapacities(text, n, &caps, &error)) {
    caps = equalCapacities(n);
    caps.source = std::string("topology ") + path + " not usable (" +
                  (error.empty() ? "cannot read it" : error) + "): every link taken as equal";
    return caps;
  }
  caps.source = std::string("capacities from topology ") + path;
  return caps;
}

namespace {

// The rings side by side: their streams concatenated; each call goes to the
// ring that owns the stream. Chunk numbers run over the whole buffer (ring 0's
// first), as the tree's do over its two halves.
class MultipathSchedule final : public Schedule {
 public:
  void add(std::unique_ptr<Schedule> ring, uint32_t chunk_base) {
    Part p;
    p.first_send = sends.size();
    p.first_recv = recvs.size();
    p.chunk_base = chunk_base;
    for (const SendStream& s : ring->sends) {
      send_part_.push_back(parts_.size());
      sends.push_back(s);
    }
    for (const RecvStream& r : ring->recvs) {
      recv_part_.push_back(parts_.size());
      recvs.push_back(r);
    }
    scratch_bytes = std::max(scratch_bytes, ring->scratch_bytes);
    p.ring = std::move(ring);
    parts_.push_back(std::move(p));
  }

  Message sendMessage(size_t s, uint32_t index) override {
    Part& p = parts_[send_part_[s]];
    Message m = p.ring->sendMessage(s - p.first_send, index);
    m.chunk += p.chunk_base;
    return m;
  }
  Message recvMessage(size_t s, uint32_t index) override {
    Part& p = parts_[recv_part_[s]];
    Message m = p.ring->recvMessage(s - p.first_recv, index);
    m.chunk += p.chunk_base;
    return m;
  }
  void received(size_t s, uint32_t index, char* scratch) override {
    Part& p = parts_[recv_part_[s]];
    p.ring->pool = pool;
    p.ring->received(s - p.first_recv, index, scratch);
    // What the ring made ready to send.
    for (size_t k = 0; k < p.ring->sends.size(); ++k)
      sends[p.first_send + k].ready = p.ring->sends[k].ready;
  }

 private:
  struct Part {
    std::unique_ptr<Schedule> ring;
    size_t first_send = 0, first_recv = 0;
    uint32_t chunk_base = 0;
  };
  std::vector<Part> parts_;
  std::vector<size_t> send_part_, recv_part_;
};

}  // namespace

std::unique_ptr<Schedule> makeMultipathSchedule(const CollectiveArgs& a, const MultipathPlan& plan,
                                                const std::vector<int>& link_of) {
  if (plan.is_ring) return makeRingSchedule(a, link_of);
  auto s = std::make_unique<MultipathSchedule>();
  const std::vector<size_t> share = multipathShares(plan, a.count);
  const size_t esize = dtypeSize(a.dtype);
  size_t offset = 0;
  uint32_t chunk_base = 0;
  for (size_t c = 0; c < plan.cycles.size(); ++c) {
    const std::vector<int>& cy = plan.cycles[c];
    size_t len = share[c];
    if (len == 0) continue;  // a tiny buffer leaves slow rings idle
    auto it = std::find(cy.begin(), cy.end(), a.rank);
    const size_t n = cy.size(), pos = static_cast<size_t>(it - cy.begin());
    CollectiveArgs sub = a;
    sub.data = a.data + offset * esize;
    sub.count = len;
    sub.rank = static_cast<int>(pos);
    sub.size = static_cast<int>(n);
    int right = link_of[static_cast<size_t>(cy[(pos + 1) % n])];
    int left = link_of[static_cast<size_t>(cy[(pos + n - 1) % n])];
    auto kind =
        static_cast<FrameKind>(static_cast<int>(FrameKind::kMultipath0) + static_cast<int>(c));
    auto ring = makeRingScheduleOn(sub, left, right, kind);
    // The ring's messages are (step, chunk) for 2(n-1) steps.
    uint32_t chunks = ring->sends[0].total / static_cast<uint32_t>(2 * (n - 1));
    s->add(std::move(ring), chunk_base);
    chunk_base += chunks;
    offset += len;
  }
  return s;
}

}  // namespace ringside::reference::detail
