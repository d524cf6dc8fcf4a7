// Training steps (docs/steps.md) and the late-ranks finding on constructed traces: detection
// from the period of the calls (setup calls, DDP's unbucketed first step, a partial last step,
// a benchmark loop that has no steps), explicit markers, steps stored by merge, per step and
// rank figures (docs/metrics.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ringside/analyzer/analysis.h"
#include "ringside/analyzer/steps.h"
#include "ringside/format/units.h"
#include "ringside/storage/step_store.h"
#include "ringside/storage/trace_reader.h"
#include "trace_builder.h"

namespace ringside::analyzer {
namespace {

using testing_util::Coll;
using testing_util::TraceBuilder;

constexpr int64_t kMs = 1000 * 1000;

// Simulates a job on `world` ranks, one communicator: each rank computes, then enters its calls;
// a call returns on every rank 1 ms after the last rank entered it.
class Job {
 public:
  Job(TraceBuilder* t, int world) : t_(t), now_(static_cast<size_t>(world), 1000 * kMs) {}

  void call(const std::string& op, int64_t bytes) {
    int64_t last = 0;
    for (int64_t n : now_) last = std::max(last, n);
    const int64_t end = last + kMs;
    for (size_t r = 0; r < now_.size(); ++r) {
      t_->colls.push_back(Coll{id_++, static_cast<int>(r), seq_, op, "gloo", bytes, now_[r], end});
      now_[r] = end;
    }
    ++seq_;
  }
  // Every rank computes `ms`, rank `slow` `extra_ms` more.
  void compute(int64_t ms, int slow = -1, int64_t extra_ms = 0) {
    for (size_t r = 0; r < now_.size(); ++r) {
      now_[r] += ms * kMs + (static_cast<int>(r) == slow ? extra_ms * kMs : 0);
    }
  }
  // As call(), but on rank `late` the call returns `extra_ms` after it does on the others (the
  // collective itself finishes last there, as on a ring's last receiver).
  void callEndingLate(const std::string& op, int64_t bytes, int late, int64_t extra_ms) {
    call(op, bytes);
    for (auto it = t_->colls.rbegin(); it != t_->colls.rend(); ++it)
      if (it->rank == late) {
        it->end += extra_ms * kMs;
        break;
      }
    now_[static_cast<size_t>(late)] += extra_ms * kMs;
  }
  int64_t now(int rank) const { return now_[static_cast<size_t>(rank)]; }

 private:
  TraceBuilder* t_;
  std::vector<int64_t> now_;
  int64_t seq_ = 0, id_ = 1;
};

// DDP as ddp_train.py runs it: shapes allgather and parameter broadcast; step 0 all-reduces
// every gradient (3000 B) in one bucket; the bucket-rebuild broadcast; then two buckets per step.
void ddpJob(TraceBuilder* t, int world, int steps, int slow = -1, int64_t extra_ms = 0,
            bool cut_last_bucket = false) {
  Job job(t, world);
  job.call("allgather", 8);
  job.call("broadcast", 3000);
  for (int s = 0; s < steps; ++s) {
    job.compute(10, slow, extra_ms);
    if (s == 0) {
      job.call("allreduce", 3000);
      continue;
    }
    if (s == 1) job.call("broadcast", 28);
    job.call("allreduce", 2000);
    if (!(cut_last_bucket && s == steps - 1)) job.call("allreduce", 1000);
  }
}

Analysis analyzeTrace(const std::string& path) {
  std::string error;
  auto reader = storage::TraceReader::open(path, &error);
  EXPECT_NE(reader, nullptr) << error;
  Analysis a;
  EXPECT_TRUE(analyze(*reader, AnalysisOptions{}, &a, &error)) << error;
  return a;
}

const Finding* findRule(const Analysis& a, const std::string& rule) {
  for (const Finding& f : a.findings) {
    if (f.rule == rule) return &f;
  }
  return nullptr;
}

TEST(StepsTest, DetectsDdpStepsWithSetupAndFirstUnbucketedStep) {
  TraceBuilder t(3);
  ddpJob(&t, 3, 6);
  Analysis a = analyzeTrace(t.build());
  EXPECT_EQ(a.steps.source, "detected");
  EXPECT_EQ(a.steps.comm, "world");
  ASSERT_EQ(a.steps.steps.size(), 6u) << a.steps.note;
  EXPECT_EQ(a.steps.calls_per_step, 2);
  EXPECT_EQ(a.steps.setup_calls, 2);  // allgather, broadcast
  for (size_t k = 0; k < 6; ++k) {
    EXPECT_EQ(a.steps.steps[k].step, static_cast<int64_t>(k));
    EXPECT_TRUE(a.steps.steps[k].complete);
  }
  ASSERT_EQ(a.steps.per_rank.size(), 18u);
  // Each step on each rank: 10 ms compute, then its calls (1 ms each), no waiting.
  for (const StepRankStats& r : a.steps.per_rank) {
    const int64_t calls = r.step == 0 ? 1 : (r.step == 1 ? 3 : 2);
    EXPECT_EQ(r.step_ns(), (10 + calls) * kMs) << "step " << r.step << " rank " << r.rank;
    EXPECT_EQ(r.compute_ns(), 10 * kMs);
    EXPECT_EQ(r.comm_ns, calls * kMs);
    EXPECT_EQ(r.wait_ns, 0);
    EXPECT_EQ(r.moving_ns(), r.comm_ns);
  }
  // Setup calls have no step; all-reduces carry their bucket within the step.
  for (const CollectiveInstance& c : a.collectives) {
    if (c.seq < 2) {
      EXPECT_EQ(c.step, -1) << c.seq;
    }
    if (c.op != "allreduce") {
      EXPECT_EQ(c.bucket, -1);
      continue;
    }
    EXPECT_GE(c.step, 0);
    EXPECT_EQ(c.bucket, c.bytes == 1000 ? 1 : 0) << "seq " << c.seq;
  }
  // Healthy: balanced ranks, no late-ranks or waiting finding.
  EXPECT_EQ(findRule(a, "late-ranks"), nullptr);
  EXPECT_EQ(findRule(a, "waiting"), nullptr);
  EXPECT_EQ(findRule(a, "clock-uncertainty"), nullptr);
}

// The detected steps: how many, calls per step, calls left out.
void expectDetected(const Analysis& a, size_t steps, int64_t per_step, int64_t left_out) {
  ASSERT_EQ(a.steps.steps.size(), steps) << a.steps.note;
  EXPECT_EQ(a.steps.calls_per_step, per_step);
  EXPECT_EQ(a.steps.left_out_calls, left_out) << a.steps.left_out;
}

// Steps of `calls` (op, bytes) each, after `compute_ms`, on a Job.
void steps(Job* job, int count, int64_t compute_ms,
           const std::vector<std::pair<std::string, int64_t>>& calls) {
  for (int s = 0; s < count; ++s) {
    job->compute(compute_ms);
    for (const auto& [op, bytes] : calls) job->call(op, bytes);
  }
}

// A BatchNorm CNN under DDP: the buffers broadcast (64 B) before every forward, a loss
// all-reduce (4 B) after every step, a first step that all-reduces every gradient in one bucket
// (3000 B) and the bucket-rebuild broadcast (28 B), then two buckets; after the loop five
// one-off calls. 12 steps of 4 calls; left out: the rebuild broadcast and the tail (6 calls);
// confidence 47 calls in steps of the 53 after the 2 setup calls.
TEST(StepsTest, BatchNormBroadcastsFirstStepAndTail) {
  TraceBuilder t(2);
  Job job(&t, 2);
  job.call("allgather", 8);
  job.call("broadcast", 5000);
  for (int s = 0; s < 12; ++s) {
    job.compute(10);
    job.call("broadcast", 64);
    if (s == 0) {
      job.call("allreduce", 3000);
    } else {
      job.call("allreduce", 2000);
      job.call("allreduce", 1000);
    }
    job.call("allreduce", 4);
    if (s == 0) job.call("broadcast", 28);
  }
  job.compute(5);
  job.call("allreduce", 8);
  job.call("broadcast", 100);
  job.call("allgather", 16);
  job.call("allreduce", 12);
  job.call("barrier", 0);
  const std::string path = t.build();
  Analysis a = analyzeTrace(path);
  expectDetected(a, 12, 4, 6);
  EXPECT_EQ(a.steps.setup_calls, 2);
  EXPECT_NEAR(a.steps.confidence, 47.0 / 53.0, 1e-9);
  EXPECT_NE(a.steps.left_out.find("1 x broadcast 28 B"), std::string::npos) << a.steps.left_out;
  for (const StepStats& st : a.steps.steps) EXPECT_TRUE(st.complete) << st.step;
  // Merge's detection says the same (stored in meta, read back by analyze()).
  std::string error, note;
  auto reader = storage::TraceReader::open(path, &error);
  ASSERT_NE(reader, nullptr) << error;
  std::vector<storage::StepRow> rows;
  StepDetectionSummary sum;
  ASSERT_TRUE(detectSteps(*reader, &rows, &note, &error, &sum)) << error;
  EXPECT_EQ(rows.size(), 12u);
  EXPECT_NEAR(sum.confidence, 47.0 / 53.0, 1e-9);
  EXPECT_EQ(sum.left_out_calls, 6);
}

// Gradient accumulation with no_sync: 4 micro-batches, each broadcasting the buffers, the
// all-reduce only on the 4th. A step is an optimizer step: 6 steps of 5 calls, confidence 1.
TEST(StepsTest, NoSyncAccumulationStepsAreOptimizerSteps) {
  TraceBuilder t(2);
  Job job(&t, 2);
  job.call("broadcast", 5000);
  for (int s = 0; s < 6; ++s) {
    steps(&job, 4, 3, {{"broadcast", 64}});  // the micro-batches
    job.call("allreduce", 3000);
  }
  Analysis a = analyzeTrace(t.build());
  expectDetected(a, 6, 5, 0);
  EXPECT_EQ(a.steps.setup_calls, 1);
  EXPECT_DOUBLE_EQ(a.steps.confidence, 1.0);
}

// An evaluation pass (broadcast + metric all-reduce, twice) after every 5th of 20 steps: 20
// steps of 3 calls, the 4 passes left out (16 calls), not one 5-step period.
TEST(StepsTest, EvaluationEveryFiveStepsIsLeftOut) {
  TraceBuilder t(3);
  Job job(&t, 3);
  job.call("broadcast", 5000);
  for (int s = 0; s < 4; ++s) {
    steps(&job, 5, 10, {{"broadcast", 64}, {"allreduce", 3000}, {"allreduce", 4}});
    steps(&job, 2, 2, {{"broadcast", 64}, {"allreduce", 8}});  // the evaluation
  }
  Analysis a = analyzeTrace(t.build());
  expectDetected(a, 20, 3, 16);
  EXPECT_NEAR(a.steps.confidence, 60.0 / 76.0, 1e-9);
}

// As PyTorch 1.13's DDP ran the corpus' eval job: the step is the buffers' broadcast (64 B and
// 8 B) and one 3000 B bucket; the evaluation after every 4th step takes the next step's
// broadcasts (its forward runs first) and all-reduces two 4 B metrics, so the step after it
// has the bucket alone. 12 steps (two of them of 1 call), 2 x 4 calls left out.
TEST(StepsTest, StepWhoseCallsDifferAfterAnEvaluation) {
  TraceBuilder t(2);
  Job job(&t, 2);
  job.call("broadcast", 5000);
  bool after_eval = false;
  for (int s = 0; s < 12; ++s) {
    job.compute(10);
    if (!after_eval) {
      job.call("broadcast", 64);
      job.call("broadcast", 8);
    }
    job.call("allreduce", 3000);
    after_eval = s % 4 == 3;
    if (after_eval && s != 11) {
      job.compute(2);
      job.call("broadcast", 64);
      job.call("broadcast", 8);
      job.call("allreduce", 4);
      job.call("allreduce", 4);
    }
  }
  Analysis a = analyzeTrace(t.build());
  expectDetected(a, 12, 3, 8);
  EXPECT_NE(a.steps.left_out.find("4 x allreduce 4 B"), std::string::npos) << a.steps.left_out;
}

// Four buckets of the same size and a loss all-reduce per step: the step holds four anchors.
TEST(StepsTest, SeveralBucketsOfOneSize) {
  TraceBuilder t(2);
  Job job(&t, 2);
  job.call("broadcast", 5000);
  steps(&job, 8, 10, {{"allreduce", 1000}, {"allreduce", 1000}, {"allreduce", 1000},
                      {"allreduce", 1000}, {"allreduce", 4}});
  Analysis a = analyzeTrace(t.build());
  expectDetected(a, 8, 5, 0);
  EXPECT_DOUBLE_EQ(a.steps.confidence, 1.0);
}

TEST(StepsTest, LateRankFindingNamesRankExtraComputeAndCost) {
  TraceBuilder t(4);
  ddpJob(&t, 4, 8, /*slow=*/2, /*extra_ms=*/5);
  Analysis a = analyzeTrace(t.build());
  ASSERT_EQ(a.steps.steps.size(), 8u) << a.steps.note;
  for (const StepStats& st : a.steps.steps) {
    EXPECT_EQ(st.late_rank, 2);
    EXPECT_EQ(st.late_by_ns, 5 * kMs);
  }
  ASSERT_FALSE(a.findings.empty());
  const Finding& f = a.findings.front();
  EXPECT_EQ(f.rule, "late-ranks");
  EXPECT_EQ(f.severity, "problem");
  EXPECT_NE(f.message.find("rank 2 arrives last in 100% of steps by a median 5.00 ms"),
            std::string::npos) << f.message;
  // Compute per step: 15 ms on rank 2 vs 10 ms: 50% (5 ms) longer.
  EXPECT_NE(f.message.find("50% (5.00 ms) longer"), std::string::npos) << f.message;
  // Cost: 3 other ranks wait 5 ms in each step's first call.
  EXPECT_EQ(f.cost_ns, 3 * 8 * 5 * kMs);
  EXPECT_NE(f.action.find("rank 2"), std::string::npos) << f.action;
  // Per step, the waiting is the others', while rank 2 computed.
  for (const StepRankStats& r : a.steps.per_rank) {
    EXPECT_EQ(r.wait_ns, r.rank == 2 ? 0 : 5 * kMs);
    EXPECT_EQ(r.compute_ns(), r.rank == 2 ? 15 * kMs : 10 * kMs);
  }
}

// Rank 2 computes 200 ms longer in step 5 only (of 10): the 3 others wait 200 ms each in that
// step's first call. Blame: rank 2 caused 600 ms, all of the waiting, although it was the last
// to arrive in 1 step of 10 (a count of steps or calls would not name it).
TEST(StepsTest, LateInOneStepOnlyIsNamedByTheWaitItCaused) {
  TraceBuilder t(4);
  Job job(&t, 4);
  job.call("allgather", 8);
  for (int s = 0; s < 10; ++s) {
    job.compute(10, /*slow=*/s == 5 ? 2 : -1, /*extra_ms=*/200);
    job.call("allreduce", 2000);
    job.call("allreduce", 1000);
  }
  Analysis a = analyzeTrace(t.build());
  ASSERT_EQ(a.steps.steps.size(), 10u) << a.steps.note;
  for (const RankStats& r : a.ranks) {
    EXPECT_EQ(r.caused_wait_ns, r.rank == 2 ? 600 * kMs : 0) << r.rank;
    EXPECT_EQ(r.wait_ns, r.rank == 2 ? 0 : 200 * kMs) << r.rank;
  }
  for (const StepRankStats& r : a.steps.per_rank) {
    EXPECT_EQ(r.caused_wait_ns, r.step == 5 && r.rank == 2 ? 600 * kMs : 0);
  }
  ASSERT_FALSE(a.findings.empty());
  const Finding& f = a.findings.front();
  EXPECT_EQ(f.rule, "late-ranks");
  EXPECT_EQ(f.message.rfind("rank 2 caused 100% of the waiting (600.00 ms of 600.00 ms)", 0), 0u)
      << f.message;
  EXPECT_NE(f.message.find("arrives last in 10% of steps"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("(200.00 ms) longer"), std::string::npos) << f.message;
  EXPECT_EQ(f.cost_ns, 600 * kMs);
}

// Two ranks beside other load: rank 1 computes 3 ms per 5 ms step against 2 ms, last in every
// step; its CPU and its run delay (waiting for a core) per step vary by case. When its CPU is not
// more by computes-more's measure and its extra run delay makes up at least half of its extra
// 1 ms, descheduled names it in late-ranks' place (the same work, done later); with more CPU,
// computes-more does and late-ranks stays; with too little extra delay, late-ranks stays alone.
struct CoreCase {
  const char* what;
  int64_t cpu_us[2], delay_us[2];
  const char* expect;  // the first finding's rule
};

TEST(StepsTest, LateRankWaitingForACoreIsDescheduledUnlessItComputesMore) {
  const CoreCase cases[] = {
      // e2e.corpus-metric: +27% CPU but 0.4 ms (less than computes-more asks), 1.3 ms more delay
      // (late-ranks stood without a cause: the ratio alone judged the CPU more).
      {"more CPU below computes-more", {1500, 1900}, {200, 1500}, "descheduled"},
      // e2e.corpus-bn-cnn under load: both ranks wait for cores, rank 1 0.7 ms more (1.6x, not
      // 2x the other's), the same CPU.
      {"both wait, rank 1 more", {1500, 1500}, {1200, 1900}, "descheduled"},
      {"computes more", {1500, 2200}, {200, 1500}, "late-ranks"},
      {"extra delay under half", {1500, 1500}, {1200, 1600}, "late-ranks"},
  };
  for (const CoreCase& c : cases) {
    SCOPED_TRACE(c.what);
    TraceBuilder t(2);
    Job job(&t, 2);
    job.call("allgather", 8);
    for (int s = 0; s < 10; ++s) {
      job.compute(2, /*slow=*/1, /*extra_ms=*/1);
      job.call("allreduce", 2000);
      job.call("allreduce", 1000);
    }
    // Counters linear in time: c.cpu_us and c.delay_us per 5 ms step.
    const int64_t step_us = 5000;
    for (int r = 0; r < 2; ++r) {
      for (int64_t t_ms = 999; t_ms <= job.now(r) / kMs + 1; ++t_ms) {
        const int64_t since = (t_ms - 999) * kMs;
        t.cpu.push_back(
            {r,
             {t_ms * kMs, since * c.cpu_us[r] / step_us, 0, 0, since * c.delay_us[r] / step_us}});
      }
    }
    Analysis a = analyzeTrace(t.build());
    ASSERT_EQ(a.steps.steps.size(), 10u) << a.steps.note;
    ASSERT_EQ(a.rank_cpu.size(), 2u);
    EXPECT_EQ(a.rank_cpu[1].cpu_ns, c.cpu_us[1] * 1000);
    EXPECT_EQ(a.rank_cpu[1].run_delay_ns, c.delay_us[1] * 1000);
    ASSERT_FALSE(a.findings.empty());
    EXPECT_EQ(a.findings.front().rule, c.expect) << a.findings.front().message;
    const Finding* late = findRule(a, "late-ranks");
    const Finding* off = findRule(a, "descheduled");
    const Finding* more = findRule(a, "computes-more");
    EXPECT_EQ(more != nullptr, c.cpu_us[1] == 2200);
    if (std::string(c.expect) == "late-ranks") {
      EXPECT_EQ(off, nullptr) << off->message;
      continue;
    }
    EXPECT_EQ(late, nullptr) << late->message;
    ASSERT_NE(off, nullptr);
    EXPECT_EQ(off->severity, "problem");
    const std::string head = "rank 1 (it caused 100% of the waiting) waits for a core: " +
                             format::durationFixed(c.delay_us[1] * 1000) + " per step";
    EXPECT_EQ(off->message.rfind(head, 0), 0u) << off->message;
  }
}

// Two ranks on a crowded host (the corpus' no_sync job under ctest -j2): rank 1 computes 3 ms
// longer in steps 1, 3 and 5, rank 0 1 ms longer in steps 0 and 2. Rank 1 is last in 3 of 6
// steps, what chance gives one of two ranks, by 3 ms in 13 ms steps, yet caused most of the
// waiting: jitter, no late rank. The same job with one of those steps 30 ms late (more than a
// step: a stalled data loader) names rank 1.
TEST(StepsTest, LastAsOftenAsChanceByLessThanAStepIsNoLateRank) {
  for (const int64_t stall : {3, 30}) {
    TraceBuilder t(2);
    Job job(&t, 2);
    job.call("allgather", 8);
    for (int s = 0; s < 6; ++s) {
      if (s % 2 == 1) {
        job.compute(10, /*slow=*/1, /*extra_ms=*/s == 3 ? stall : 3);
      } else {
        job.compute(10, /*slow=*/s < 4 ? 0 : -1, /*extra_ms=*/1);
      }
      job.call("allreduce", 2000);
      job.call("allreduce", 1000);
    }
    Analysis a = analyzeTrace(t.build());
    ASSERT_EQ(a.steps.steps.size(), 6u) << a.steps.note;
    int last1 = 0;
    for (const StepStats& st : a.steps.steps) last1 += st.late_rank == 1 ? 1 : 0;
    EXPECT_EQ(last1, 3);
    const Finding* f = findRule(a, "late-ranks");
    if (stall == 3) {
      EXPECT_EQ(f, nullptr) << f->message;
    } else {
      ASSERT_NE(f, nullptr);
      EXPECT_EQ(f->message.rfind("rank 1 caused", 0), 0u) << f->message;
    }
  }
}

// Rank 3 enters every step's call 5 ms after the others, but only because the previous call
// returned 5 ms later there; it computes exactly as long as they do. Nothing it does makes it
// late: no late-ranks problem, the waiting warning instead (a healthy DDP run on a busy host
// showed this: the last rank to leave a call was the last to enter the next in 19 of 24 calls).
TEST(StepsTest, LastToLeaveThePreviousCallIsNotALateRank) {
  TraceBuilder t(4);
  Job job(&t, 4);
  job.call("allgather", 8);
  for (int s = 0; s < 8; ++s) {
    job.compute(10);
    job.callEndingLate("allreduce", 2000, 3, 5);
  }
  Analysis a = analyzeTrace(t.build());
  ASSERT_EQ(a.steps.steps.size(), 8u) << a.steps.note;
  int late3 = 0;
  for (const StepStats& st : a.steps.steps) late3 += st.late_rank == 3 ? 1 : 0;
  EXPECT_GE(late3, 7);  // it is last to arrive...
  for (const StepRankStats& r : a.steps.per_rank) {
    if (r.rank == 3) {
      EXPECT_EQ(r.compute_ns(), 10 * kMs);  // ...computing as long as the others
    }
  }
  EXPECT_EQ(findRule(a, "late-ranks"), nullptr);
  const Finding* w = findRule(a, "waiting");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->severity, "warning");
}

// A different rank is late each step (jitter, no one to blame): no late-ranks finding, but a
// `waiting` warning with the share of collective time, the per-step cost and who was last.
TEST(StepsTest, WaitingWithoutOneLateRank) {
  TraceBuilder t(4);
  Job job(&t, 4);
  job.call("allgather", 8);
  for (int s = 0; s < 8; ++s) {
    job.compute(10, /*slow=*/s % 4, /*extra_ms=*/5);
    job.call("allreduce", 2000);
    job.call("allreduce", 1000);
  }
  Analysis a = analyzeTrace(t.build());
  ASSERT_EQ(a.steps.steps.size(), 8u) << a.steps.note;
  EXPECT_EQ(findRule(a, "late-ranks"), nullptr);
  const Finding* f = findRule(a, "waiting");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, "warning");
  EXPECT_EQ(&a.findings.front(), f);
  // Three of four ranks wait 5 ms in every step's first call of 2 ms + 5 ms waiting... per rank
  // and step: 3 x 5 ms / 4 ranks = 3.75 ms.
  EXPECT_NE(f->message.find("3.75 ms per rank and step"), std::string::npos) << f->message;
  EXPECT_NE(f->evidence.find("rank 0 25%"), std::string::npos) << f->evidence;
  EXPECT_EQ(f->cost_ns, 8 * 3 * 5 * kMs);
  EXPECT_FALSE(f->action.empty());
}

TEST(StepsTest, PartialLastStep) {
  TraceBuilder t(2);
  ddpJob(&t, 2, 5, -1, 0, /*cut_last_bucket=*/true);
  Analysis a = analyzeTrace(t.build());
  ASSERT_EQ(a.steps.steps.size(), 5u) << a.steps.note;
  EXPECT_FALSE(a.steps.steps.back().complete);
  EXPECT_TRUE(a.steps.steps[3].complete);
}

TEST(StepsTest, BenchmarkLoopHasNoSteps) {
  TraceBuilder t(2);
  Job job(&t, 2);
  for (int i = 0; i < 20; ++i) job.call("allreduce", 4096);  // back to back
  Analysis a = analyzeTrace(t.build());
  EXPECT_TRUE(a.steps.steps.empty());
  EXPECT_EQ(a.steps.source, "");
  EXPECT_NE(a.steps.note.find("back to back"), std::string::npos) << a.steps.note;
  for (const CollectiveInstance& c : a.collectives) EXPECT_EQ(c.step, -1);
}

TEST(StepsTest, SizesThatNeverRepeatHaveNoSteps) {
  TraceBuilder t(2);
  Job job(&t, 2);
  for (int size = 1; size <= 8; ++size) {
    for (int i = 0; i < 3; ++i) {
      job.compute(1);
      job.call("allreduce", 1024 * size);
    }
  }
  Analysis a = analyzeTrace(t.build());
  EXPECT_TRUE(a.steps.steps.empty());
  EXPECT_FALSE(a.steps.note.empty());
}

TEST(StepsTest, MarkersOverrideDetection) {
  TraceBuilder t(2);
  ddpJob(&t, 2, 4);
  // The job numbers its steps from 100; markers at each step's start (before its compute).
  std::vector<int64_t> starts;
  for (const Coll& c : t.colls) {
    if (c.rank == 0 && c.op == "allreduce" && c.bytes != 1000) starts.push_back(c.start - 10 * kMs);
  }
  ASSERT_EQ(starts.size(), 4u);
  for (int r = 0; r < 2; ++r) {
    for (size_t k = 0; k < starts.size(); ++k) {
      t.markers.push_back({r, storage::StepMarkerRow{100 + static_cast<int64_t>(k), starts[k]}});
    }
  }
  Analysis a = analyzeTrace(t.build());
  EXPECT_EQ(a.steps.source, "markers");
  ASSERT_EQ(a.steps.steps.size(), 4u);
  EXPECT_EQ(a.steps.steps.front().step, 100);
  EXPECT_EQ(a.steps.steps.back().step, 103);
  // Step 101 holds the rebuild broadcast and both buckets.
  EXPECT_EQ(a.steps.steps[1].calls, 3);
  for (const CollectiveInstance& c : a.collectives) {
    if (c.op == "allreduce") {
      EXPECT_GE(c.step, 100);
    }
  }
}

// A hang after the last marker: rank 0 enters an all-reduce and never returns (its entry is its
// last event), rank 1 never enters it. The stuck call is the last step's, so the verdict names it.
TEST(StepsTest, OpenCallAtTheLastEventIsInTheLastMarkerStep) {
  TraceBuilder t(2);
  for (int r = 0; r < 2; ++r) {
    t.markers.push_back({r, storage::StepMarkerRow{7, 0}});
    t.colls.push_back(Coll{r, r, 0, "allreduce", "gloo", 4096, 1 * kMs, 2 * kMs});
  }
  t.colls.push_back(Coll{2, 0, 1, "allreduce", "gloo", 4096, 3 * kMs, storage::kNone});
  Analysis a = analyzeTrace(t.build());
  ASSERT_EQ(a.collectives.size(), 2u);
  for (const CollectiveInstance& c : a.collectives) EXPECT_EQ(c.step, 7) << "seq " << c.seq;
  ASSERT_FALSE(a.autopsy.empty());
  EXPECT_EQ(a.autopsy.front().step, 7);
  EXPECT_NE(a.autopsy.front().message.find("step 7"), std::string::npos) << a.autopsy.front().message;
}

TEST(StepsTest, StoredStepsAreReadBack) {
  TraceBuilder t(2);
  ddpJob(&t, 2, 5);
  const std::string path = t.build();
  std::vector<storage::StepRow> rows;
  std::string note, error;
  {
    auto reader = storage::TraceReader::open(path, &error);
    ASSERT_NE(reader, nullptr) << error;
    ASSERT_TRUE(detectSteps(*reader, &rows, &note, &error)) << error;
  }
  ASSERT_EQ(rows.size(), 5u) << note;
  EXPECT_EQ(rows[0].first_seq, 2);
  EXPECT_EQ(rows[1].first_seq, 4);  // after the rebuild broadcast
  EXPECT_EQ(rows[1].last_seq, 5);
  ASSERT_TRUE(storage::storeSteps(path, rows, &error)) << error;
  Analysis a = analyzeTrace(path);
  EXPECT_EQ(a.steps.source, "stored");
  EXPECT_EQ(a.steps.comm, "world");
  EXPECT_EQ(a.steps.steps.size(), 5u);
  // A damaged row (found by fuzzing: its call range overflowed) is skipped with a warning.
  std::vector<storage::StepRow> damaged = rows;
  damaged.back().first_seq = INT64_MIN;
  ASSERT_TRUE(storage::storeSteps(path, damaged, &error)) << error;
  Analysis skipped = analyzeTrace(path);
  EXPECT_EQ(skipped.steps.steps.size(), 4u);
  bool warned = false;
  for (const std::string& w : skipped.warnings) warned = warned || w.find("step table") != std::string::npos;
  EXPECT_TRUE(warned) << testing::PrintToString(skipped.warnings);
  // Stored as none: analyze() does not detect them again.
  ASSERT_TRUE(storage::storeSteps(path, {}, &error)) << error;
  Analysis none = analyzeTrace(path);
  EXPECT_TRUE(none.steps.steps.empty());
  EXPECT_FALSE(none.steps.note.empty());
}

}  // namespace
}  // namespace ringside::analyzer
