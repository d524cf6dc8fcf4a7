// Issue 28: SQLITE_OPEN_NOFOLLOW refused a symbolic link in any component of a trace's path, so
// `record -o link/t.sqlite` ran the whole job and then failed to merge, and `merge link/dir` and
// `merge --realign link/t.sqlite` failed too. The protection is meant for the last component:
// a link among the folders above is followed, a link as the file itself is still refused.
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "ringside/storage/clock_model.h"
#include "ringside/storage/merge.h"
#include "ringside/storage/step_store.h"
#include "ringside/storage/trace_reader.h"
#include "storage_test_util.h"

namespace ringside::storage::testing {
namespace {

class LinkedFolderTest : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    ASSERT_EQ(::mkdir(path("real").c_str(), 0700), 0);
    ASSERT_EQ(::symlink(path("real").c_str(), path("link").c_str()), 0);
  }
  std::string rankFile(const std::string& folder, int rank) {
    RankFileSpec spec;
    spec.rank = rank;
    const std::string file = folder + "/rank-" + std::to_string(rank) + ".sqlite";
    writeRankFile(file, spec);
    return file;
  }
};

TEST_F(LinkedFolderTest, AnOutputBelowALinkedFolderIsWritten) {
  MergeOptions o;
  o.inputs = {rankFile(dir_, 0), rankFile(dir_, 1)};
  o.output = path("link/t.sqlite");
  MergeResult m = mergeRankFiles(o);
  ASSERT_TRUE(m.ok) << m.error;
  std::string err;
  EXPECT_TRUE(TraceReader::open(path("real/t.sqlite"), &err)) << err;
}

TEST_F(LinkedFolderTest, InputsBelowALinkedFolderAreMerged) {
  rankFile(path("real"), 0);
  rankFile(path("real"), 1);
  MergeOptions o;
  o.inputs = {path("link/rank-0.sqlite"), path("link/rank-1.sqlite")};
  o.output = path("t.sqlite");
  MergeResult m = mergeRankFiles(o);
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.ranks, 2);
}

TEST_F(LinkedFolderTest, ATraceBelowALinkedFolderIsStoredIntoInPlace) {
  MergeOptions o;
  o.inputs = {rankFile(dir_, 0), rankFile(dir_, 1)};
  o.output = path("real/t.sqlite");
  ASSERT_TRUE(mergeRankFiles(o).ok);
  std::string err;
  // What `merge --realign link/t.sqlite` writes.
  EXPECT_TRUE(storeClockModel(path("link/t.sqlite"), ClockModel{}, &err)) << err;
  EXPECT_TRUE(storeSteps(path("link/t.sqlite"), {}, &err)) << err;
}

TEST_F(LinkedFolderTest, ALinkAsTheLastComponentIsStillRefused) {
  MergeOptions o;
  o.inputs = {rankFile(dir_, 0), rankFile(dir_, 1)};
  o.output = path("real/t.sqlite");
  ASSERT_TRUE(mergeRankFiles(o).ok);
  ASSERT_EQ(::symlink(path("real/t.sqlite").c_str(), path("last.sqlite").c_str()), 0);
  std::string err;
  EXPECT_FALSE(storeClockModel(path("last.sqlite"), ClockModel{}, &err));
  EXPECT_FALSE(storeSteps(path("link/../last.sqlite"), {}, &err));
  // The same through a linked folder above it.
  ASSERT_EQ(::symlink(path("real/t.sqlite").c_str(), path("real/last.sqlite").c_str()), 0);
  EXPECT_FALSE(storeClockModel(path("link/last.sqlite"), ClockModel{}, &err));
  // A merge input that is a link is refused; an output that is one is never replaced.
  o.inputs = {path("last.sqlite")};
  o.output = path("m.sqlite");
  EXPECT_FALSE(mergeRankFiles(o).ok);
  o.inputs = {rankFile(dir_, 2)};
  o.output = path("link/last.sqlite");
  o.overwrite = true;
  MergeResult m = mergeRankFiles(o);
  EXPECT_FALSE(m.ok);
  struct stat sb {};
  ASSERT_EQ(::lstat(path("real/last.sqlite").c_str(), &sb), 0);
  EXPECT_TRUE(S_ISLNK(sb.st_mode));
}

}  // namespace
}  // namespace ringside::storage::testing
