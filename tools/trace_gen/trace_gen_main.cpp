// trace_gen: writes a synthetic trace in the real schema (tools/trace_gen/trace_gen.h): rank files
// into a folder (merge them with `ringside merge DIR`), or a merged trace directly.
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "ringside/format/units.h"
#include "ringside/storage/merge.h"
#include "trace_gen.h"

namespace {

const char kHelp[] =
    "Usage: trace_gen [options] (--out DIR | --merged TRACE.sqlite)\n"
    "\n"
    "Writes a synthetic trace in ringside's schema: RANKS ranks on HOSTS hosts run all-reduces\n"
    "(ring or binary tree) grouped into training steps; each rank records its calls and the\n"
    "messages it sends. Message times follow the algorithm's data flow: a straggler makes the\n"
    "others wait, a slow link delays what depends on it. The same options and seed give the\n"
    "same trace.\n"
    "\n"
    "  --out DIR              write rank-<r>.sqlite per rank into DIR (created; merge them with\n"
    "                         `ringside merge DIR`, which also fits the clocks and the steps)\n"
    "  --merged TRACE         write the rank files beside TRACE, merge them into TRACE (rows and\n"
    "                         indexes only) and delete them\n"
    "  --ranks N              ranks (default 16)\n"
    "  --hosts H              hosts, ranks in contiguous blocks (default 1)\n"
    "  --algo ring|tree       all-reduce algorithm (default ring)\n"
    "  --collectives C        all-reduce calls per rank (default 8)\n"
    "  --steps S              training steps the calls form (default 2)\n"
    "  --bytes B              payload of each all-reduce: 4096, 64K, 1M, 1.5MiB (default 4M)\n"
    "  --gbps G               link speed, GB/s (default 10)\n"
    "  --straggler RANK:US    RANK arrives US microseconds late at every call (repeatable)\n"
    "  --slow-link A-B:F      messages from A to B take F times as long (repeatable)\n"
    "  --receives             also record every message on its receiving rank\n"
    "  --calls-only           record no messages (as `record --detail calls`)\n"
    "  --node-folders         rank files into DIR/node-<host>/, as `record --nnodes` lays them\n"
    "                         out (merge each node's folder, then the node traces)\n"
    "  --host-clocks          every host but host 0 on clocks of its own: monotonic hours\n"
    "                         ahead, wall clock up to 10 ms off (the merge must align them)\n"
    "  --fault KIND:RANK@SEQ  a hang or desync at call SEQ, the job's last: stuck (RANK never\n"
    "                         enters it), dead (RANK dies before it: cut off), desync-op (RANK\n"
    "                         calls allgather), desync-size (RANK passes twice the bytes), cut\n"
    "                         (RANK's cable goes down: its links' first messages never complete,\n"
    "                         every call of SEQ fails 30 s later)\n"
    "  --seed N               seed of the arrival jitter (default 1)\n"
    "  --no-fsync             never fsync the rank files (fast; a power loss may damage them)\n"
    "  --help                 this text\n";

int usage(const std::string& why) {
  std::fprintf(stderr, "trace_gen: %s (see --help)\n", why.c_str());
  return 2;
}

bool number(const char* text, long long lo, long long hi, long long* out) {
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  ringside::gen::GenOptions o;
  std::string out_dir, merged;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kHelp, stdout);
      return 0;
    }
    if (arg == "--receives") {
      o.receives = true;
      continue;
    }
    if (arg == "--no-fsync") {
      o.fsync = false;
      continue;
    }
    if (arg == "--calls-only") {
      o.calls_only = true;
      continue;
    }
    if (arg == "--node-folders" || arg == "--host-clocks") {
      (arg == "--node-folders" ? o.node_folders : o.host_clocks) = true;
      continue;
    }
    if (i + 1 >= argc) return usage(std::string(arg) + " needs a value");
    const char* v = argv[++i];
    long long n = 0;
    std::string error;
    if (arg == "--out") {
      out_dir = v;
    } else if (arg == "--merged") {
      merged = v;
    } else if (arg == "--ranks" && number(v, 1, 1 << 20, &n)) {
      o.ranks = static_cast<int>(n);
    } else if (arg == "--hosts" && number(v, 1, 1 << 20, &n)) {
      o.hosts = static_cast<int>(n);
    } else if (arg == "--algo" && (std::string_view(v) == "ring" || std::string_view(v) == "tree")) {
      o.tree = std::string_view(v) == "tree";
    } else if (arg == "--collectives" && number(v, 1, 1LL << 40, &n)) {
      o.collectives = n;
    } else if (arg == "--steps" && number(v, 1, 1LL << 40, &n)) {
      o.steps = n;
    } else if (arg == "--bytes") {
      int64_t bytes = 0;
      if (!ringside::format::parseSize(v, &bytes, &error)) return usage("--bytes: " + error);
      if (bytes < 1 || bytes > (1LL << 40)) return usage("--bytes takes 1 byte to 1 TiB");
      o.bytes = bytes;
    } else if (arg == "--gbps") {
      o.gbps = std::strtod(v, nullptr);
      if (!(o.gbps > 0)) return usage("--gbps takes a speed > 0 in GB/s");
    } else if (arg == "--seed" && number(v, 0, INT64_MAX, &n)) {
      o.seed = static_cast<uint64_t>(n);
    } else if (arg == "--straggler") {
      if (!ringside::gen::parseStraggler(v, &o, &error)) return usage(error);
    } else if (arg == "--fault") {
      if (!ringside::gen::parseFault(v, &o, &error)) return usage(error);
    } else if (arg == "--slow-link") {
      if (!ringside::gen::parseSlowLink(v, &o, &error)) return usage(error);
    } else {
      return usage("bad option or value: " + std::string(arg) + " " + v);
    }
  }
  if (out_dir.empty() == merged.empty()) return usage("give one of --out DIR and --merged TRACE");
  for (const auto& [rank, delay] : o.stragglers)
    if (rank >= o.ranks) return usage("--straggler rank " + std::to_string(rank) + " >= --ranks");
  for (const auto& [link, f] : o.slow_links)
    if (link.first >= o.ranks || link.second >= o.ranks || link.first == link.second)
      return usage("--slow-link ranks must differ and be < --ranks");

  namespace fs = std::filesystem;
  std::error_code ec;
  std::string dir = out_dir;
  if (!merged.empty()) dir = merged + ".ranks";
  fs::create_directories(dir, ec);
  if (ec) {
    std::fprintf(stderr, "trace_gen: cannot create %s: %s\n", dir.c_str(), ec.message().c_str());
    return 1;
  }
  std::vector<std::string> files;
  std::string error;
  if (!ringside::gen::writeRankFiles(o, dir, &files, &error)) {
    std::fprintf(stderr, "trace_gen: %s\n", error.c_str());
    return 1;
  }
  if (merged.empty()) return 0;
  ringside::storage::MergeOptions m;
  m.inputs = files;
  m.output = merged;
  m.overwrite = true;
  const ringside::storage::MergeResult res = ringside::storage::mergeRankFiles(m);
  fs::remove_all(dir, ec);
  if (!res.ok) {
    std::fprintf(stderr, "trace_gen: merge: %s\n", res.error.c_str());
    return 1;
  }
  return 0;
}
