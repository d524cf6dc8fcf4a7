// The MASTER_ADDR:MASTER_PORT store: set/get/exchange across processes with
// binary values and waiting gets, a wrong token refused, deadlines, and the
// torchrun environment.
#include "ringside/reference/rendezvous.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "job.h"

namespace ringside::reference {
namespace {

std::string binaryValue(int rank, size_t len) {
  std::string v(len, '\0');
  for (size_t i = 0; i < len; ++i)
    v[i] = static_cast<char>((i * 31 + static_cast<size_t>(rank) * 7) & 0xff);
  return v;
}

TEST(Rendezvous, SetGetExchangeAcrossProcesses) {
  const int n = 4;
  auto results = test::runJob(n, [](int rank, int nn, int port, std::string* msg) {
    auto rv = test::joinRendezvous(rank, nn, port, msg, std::chrono::seconds(10));
    if (!rv) return 2;
    std::string err;
    if (rank == 3)
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // others' get() waits
    size_t len = rank == 0 ? (size_t{1} << 20) : 1000 + static_cast<size_t>(rank);
    if (!rv->set("k" + std::to_string(rank), binaryValue(rank, len), &err)) {
      *msg = err;
      return 3;
    }
    for (int r = 0; r < nn; ++r) {
      std::string v;
      if (!rv->get("k" + std::to_string(r), &v, &err)) {
        *msg = err;
        return 4;
      }
      size_t want = r == 0 ? (size_t{1} << 20) : 1000 + static_cast<size_t>(r);
      if (v != binaryValue(r, want)) {
        *msg = "wrong value for k" + std::to_string(r);
        return 5;
      }
    }
    for (int round = 0; round < 2; ++round) {
      std::vector<std::string> all;
      std::string mine =
          "r" + std::to_string(rank) + "/" + std::to_string(round) + std::string(1, '\0');
      if (!rv->exchange(mine, &all, &err)) {
        *msg = err;
        return 6;
      }
      for (int r = 0; r < nn; ++r)
        if (all[static_cast<size_t>(r)] !=
            "r" + std::to_string(r) + "/" + std::to_string(round) + std::string(1, '\0')) {
          *msg = "exchange round " + std::to_string(round) + " wrong for rank " + std::to_string(r);
          return 7;
        }
    }
    return 0;
  });
  EXPECT_EQ(test::failures(results), "");
}

RendezvousOptions options(int port, int rank, uint64_t token, int timeout_ms) {
  RendezvousOptions o;
  o.master_port = port;
  o.rank = rank;
  o.world_size = 2;
  o.job_token = token;
  o.timeout = std::chrono::milliseconds(timeout_ms);
  return o;
}

TEST(Rendezvous, WrongTokenIsRefused) {
  int port = test::freePort();
  std::string err;
  auto master = Rendezvous::connect(options(port, 0, 111, 5000), &err);
  ASSERT_TRUE(master) << err;
  auto stranger = Rendezvous::connect(options(port, 1, 222, 5000), &err);
  EXPECT_FALSE(stranger);
  EXPECT_NE(err.find("wrong job token"), std::string::npos) << err;
  auto member = Rendezvous::connect(options(port, 1, 111, 5000), &err);
  ASSERT_TRUE(member) << err;
  ASSERT_TRUE(member->set("x", "1", &err)) << err;
  std::string v;
  ASSERT_TRUE(master->get("x", &v, &err)) << err;
  EXPECT_EQ(v, "1");
}

TEST(Rendezvous, DeadlineWhenTheMasterNeverAppears) {
  int port = test::freePort();
  std::string err;
  auto start = std::chrono::steady_clock::now();
  auto r = Rendezvous::connect(options(port, 1, 1, 700), &err);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(r);
  EXPECT_NE(err.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << err;
  EXPECT_GE(ms, 500);
  EXPECT_LT(ms, 3000);
}

TEST(Rendezvous, GetHasADeadline) {
  int port = test::freePort();
  std::string err;
  auto master = Rendezvous::connect(options(port, 0, 5, 300), &err);
  ASSERT_TRUE(master) << err;
  std::string v;
  EXPECT_FALSE(master->get("never", &v, &err));
  EXPECT_NE(err.find("'never' not set within 300 ms"), std::string::npos) << err;
  // The client reconnects after a timed-out request.
  ASSERT_TRUE(master->set("later", "ok", &err)) << err;
  ASSERT_TRUE(master->get("later", &v, &err)) << err;
  EXPECT_EQ(v, "ok");
}

TEST(Rendezvous, OptionsFromTheTorchrunEnvironment) {
  const char* names[] = {"MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "RINGSIDE_JOB_TOKEN"};
  std::vector<std::pair<std::string, std::string>> saved;
  for (const char* n : names)
    if (const char* v = std::getenv(n)) saved.emplace_back(n, v);
  for (const char* n : names) ::unsetenv(n);
  RendezvousOptions o;
  std::string err;
  EXPECT_FALSE(rendezvousOptionsFromEnv(&o, &err));
  EXPECT_NE(err.find("MASTER_ADDR"), std::string::npos);
  ::setenv("MASTER_ADDR", "10.1.2.3", 1);
  ::setenv("MASTER_PORT", "29500", 1);
  ::setenv("WORLD_SIZE", "4", 1);
  ::setenv("RANK", "4", 1);
  EXPECT_FALSE(rendezvousOptionsFromEnv(&o, &err));
  EXPECT_NE(err.find("RANK"), std::string::npos);
  ::setenv("RANK", "3", 1);
  ASSERT_TRUE(rendezvousOptionsFromEnv(&o, &err)) << err;
  EXPECT_EQ(o.master_addr, "10.1.2.3");
  EXPECT_EQ(o.master_port, 29500);
  EXPECT_EQ(o.rank, 3);
  EXPECT_EQ(o.world_size, 4);
  uint64_t derived = o.job_token;
  EXPECT_NE(derived, 0u);
  ::setenv("MASTER_PORT", "29501", 1);
  ASSERT_TRUE(rendezvousOptionsFromEnv(&o, &err));
  EXPECT_NE(o.job_token, derived);  // another master, another job
  ::setenv("RINGSIDE_JOB_TOKEN", "42", 1);
  ASSERT_TRUE(rendezvousOptionsFromEnv(&o, &err));
  EXPECT_EQ(o.job_token, 42u);
  ::setenv("MASTER_PORT", "http", 1);
  EXPECT_FALSE(rendezvousOptionsFromEnv(&o, &err));
  for (const char* n : names) ::unsetenv(n);
  for (auto& [k, v] : saved) ::setenv(k.c_str(), v.c_str(), 1);
}

}  // namespace
}  // namespace ringside::reference
