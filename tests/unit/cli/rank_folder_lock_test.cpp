// The lock `record` holds on its rank folder: one holder at a time, the second told who holds
// it, the lock file gone after release, a planted link never followed.
#include "record/rank_folder_lock.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "temp_dir.h"

namespace ringside::cli {
namespace {

namespace fs = std::filesystem;

TEST(RankFolderLock, SecondHolderIsRefusedUntilTheFirstReleases) {
  test_support::TempDir tmp("lock");
  ASSERT_FALSE(tmp.path().empty());
  const fs::path lock_file = fs::path(tmp.path()) / kRankFolderLockName;
  std::string error;
  RankFolderLock first;
  ASSERT_EQ(first.acquire(tmp.path(), &error), RankFolderLock::Outcome::kLocked) << error;
  EXPECT_TRUE(fs::exists(lock_file));

  // flock conflicts between two open file descriptions, also within one process.
  RankFolderLock second;
  EXPECT_EQ(second.acquire(tmp.path(), &error), RankFolderLock::Outcome::kInUse);
  EXPECT_NE(error.find("pid " + std::to_string(getpid())), std::string::npos) << error;
  EXPECT_NE(error.find(tmp.path()), std::string::npos) << error;

  first.release();
  EXPECT_FALSE(fs::exists(lock_file));  // nothing of ours is left in the folder
  EXPECT_EQ(second.acquire(tmp.path(), &error), RankFolderLock::Outcome::kLocked) << error;
}

TEST(RankFolderLock, PlantedLinkIsNotFollowed) {
  test_support::TempDir tmp("lock");
  ASSERT_FALSE(tmp.path().empty());
  const fs::path victim = fs::path(tmp.path()) / "victim";
  { std::ofstream(victim) << "keep me\n"; }
  fs::create_symlink(victim, fs::path(tmp.path()) / kRankFolderLockName);
  std::string error;
  RankFolderLock lock;
  EXPECT_EQ(lock.acquire(tmp.path(), &error), RankFolderLock::Outcome::kCannotWrite);
  std::ifstream in(victim);
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "keep me");
}

TEST(RankFolderLock, MissingFolderCannotBeWritten) {
  test_support::TempDir tmp("lock");
  ASSERT_FALSE(tmp.path().empty());
  std::string error;
  RankFolderLock lock;
  EXPECT_EQ(lock.acquire(tmp.path() + "/missing", &error),
            RankFolderLock::Outcome::kCannotWrite);
  EXPECT_NE(error.find("cannot write rank files to"), std::string::npos) << error;
}

}  // namespace
}  // namespace ringside::cli
