// Test helper: writes per-rank files with storage::RankWriter and merges them.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ringside/storage/merge.h"
#include "ringside/storage/rank_writer.h"
#include "ringside/storage/trace_reader.h"
#include "temp_dir.h"

namespace ringside::analyzer::testing_util {

struct Coll {
  int64_t id;
  int rank;
  int64_t seq;
  std::string op, library;
  int64_t bytes, start, end;
  std::string comm = "world";
};

struct Xfer {
  int64_t collective;  // rank-file collective id of the recording rank
  int src, dst;
  std::string side;
  int64_t bytes, start, end;
  std::string phase;
  int step = -1;
  int channel = -1;
};

// One gpu_activity row (schema v2); collective = rank-file collective id, -1 none.
struct GpuAct {
  int rank;
  std::string kind, name;
  int64_t start, end;
  int device = 0;
  int64_t collective = -1;
  int64_t bytes = -1;
  std::string copy = "";
};

// One collective_gpu row: NCCL's own GPU times for a collective of `rank`.
struct CollGpu {
  int rank;
  int64_t collective;
  int64_t start, end;
};

class TraceBuilder {
 public:
  explicit TraceBuilder(int world)
      : hosts_(static_cast<size_t>(world), "h"),
        world_(world),
        dir_(test_support::makeTempDir("analysis-test")) {}
  ~TraceBuilder() { test_support::removeTempDir(dir_); }
  std::vector<std::string> hosts_;
  std::vector<Coll> colls;
  std::vector<Xfer> xfers;
  std::vector<GpuAct> gpu;
  std::vector<CollGpu> coll_gpu;
  std::vector<std::pair<int, storage::StepMarkerRow>> markers;  // (rank, marker)
  std::vector<std::pair<int, storage::CpuSampleRow>> cpu;       // (rank, CPU sample)
  std::map<int, std::map<std::string, std::string>> meta;  // extra per-rank meta
  std::vector<int> unclean;                                 // ranks without end_state=clean
  std::vector<int> unreadable;  // ranks whose file the merge gets as skipped (as `merge -k` does)
  int claimed_world = 0;  // > 0: the world size the files claim (their ranks stay 0..world-1)

  std::string path() const { return dir_ + "/trace.sqlite"; }

  // Writes the rank files and merges them; returns the merged trace's path.
  std::string build() {
    std::vector<std::string> inputs;
    std::vector<std::pair<std::string, std::string>> skipped;
    for (int r = 0; r < world_; ++r) {
      std::string file = dir_ + "/rank-" + std::to_string(r) + ".sqlite";
      std::string error;
      auto w = storage::RankWriter::create(file, &error);
      EXPECT_NE(w, nullptr) << error;
      storage::RankInfo info;
      info.rank = r;
      info.world_size = claimed_world > 0 ? claimed_world : world_;
      info.local_rank = r;
      info.host = hosts_[static_cast<size_t>(r)];
      info.pid = 100 + r;
      info.launcher = "ringside";
      info.identity_source = "env";
      EXPECT_TRUE(w->setRank(info)) << w->error();
      EXPECT_TRUE(w->begin());
      for (const Coll& c : colls) {
        if (c.rank != r) continue;
        storage::CollectiveRow row;
        row.id = c.id;
        row.rank = r;
        row.comm = c.comm;
        row.seq = c.seq;
        row.op = c.op;
        row.library = c.library;
        row.bytes = c.bytes;
        row.count = c.bytes / 4;
        row.dtype = "f32";
        row.start_ns = c.start;
        row.end_ns = c.end;
        EXPECT_TRUE(w->addCollective(row)) << w->error();
      }
      for (const Xfer& x : xfers) {
        int recorder = x.side == "send" ? x.src : x.dst;
        if (recorder != r) continue;
        storage::TransferRow row;
        row.collective_id = x.collective;
        row.src_rank = x.src;
        row.dst_rank = x.dst;
        row.side = x.side;
        row.bytes = x.bytes;
        row.start_ns = x.start;
        row.end_ns = x.end;
        row.phase = x.phase;
        row.step = x.step;
        row.channel = x.channel;
        EXPECT_TRUE(w->addTransfer(row)) << w->error();
      }
      for (const GpuAct& g : gpu) {
        if (g.rank != r) continue;
        storage::GpuActivityRow row;
        row.kind = g.kind;
        row.name = g.name;
        row.start_ns = g.start;
        row.end_ns = g.end;
        row.device = g.device;
        row.bytes = g.bytes;
        row.copy_kind = g.copy;
        row.collective_id = g.collective;
        EXPECT_TRUE(w->addGpuActivity(row)) << w->error();
      }
      for (const CollGpu& c : coll_gpu) {
        if (c.rank != r) continue;
        storage::CollectiveGpuRow row;
        row.collective_id = c.collective;
        row.gpu_start_ns = c.start;
        row.gpu_end_ns = c.end;
        EXPECT_TRUE(w->addCollectiveGpu(row)) << w->error();
      }
      for (const auto& [rank, m] : markers) {
        if (rank == r) {
          EXPECT_TRUE(w->addStepMarker(m)) << w->error();
        }
      }
      for (const auto& [rank, c] : cpu) {
        if (rank == r) {
          EXPECT_TRUE(w->addCpuSample(c)) << w->error();
        }
      }
      EXPECT_TRUE(w->commit()) << w->error();
      for (const auto& [k, v] : meta[r]) EXPECT_TRUE(w->setMeta(k, v));
      bool clean = std::find(unclean.begin(), unclean.end(), r) == unclean.end();
      if (clean) {
        EXPECT_TRUE(w->setMeta("end_state", "clean"));
      }
      EXPECT_TRUE(w->close());
      if (std::find(unreadable.begin(), unreadable.end(), r) != unreadable.end()) {
        skipped.emplace_back(file, file + ": database disk image is malformed");
        continue;
      }
      inputs.push_back(file);
    }
    storage::MergeOptions options;
    options.inputs = inputs;
    options.skipped_inputs = skipped;
    options.output = path();
    options.overwrite = true;
    storage::MergeResult result = storage::mergeRankFiles(options);
    EXPECT_TRUE(result.ok) << result.error;
    return path();
  }

 private:
  int world_;
  std::string dir_;
};

}  // namespace ringside::analyzer::testing_util
