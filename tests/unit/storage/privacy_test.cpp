// Privacy of what storage writes (storage/privacy.h): rank files, their -wal and
// -shm files and merged traces are 0600 whatever the umask, unless RINGSIDE_SHARE
// asks for the umask's modes; command lines are stored redacted on request.
#include "ringside/storage/privacy.h"

#include <sys/stat.h>

#include <cstdlib>

#include "ringside/storage/merge.h"
#include "storage_test_util.h"

namespace ringside::storage::testing {
namespace {

int modeOf(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int>(st.st_mode & 07777);
}

// Sets the umask and RINGSIDE_SHARE for one test, restores both after.
class Privacy : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    old_umask_ = ::umask(022);
    ::unsetenv("RINGSIDE_SHARE");
    ::unsetenv("RINGSIDE_REDACT");
  }
  void TearDown() override {
    ::umask(old_umask_);
    ::unsetenv("RINGSIDE_SHARE");
    ::unsetenv("RINGSIDE_REDACT");
    TempDirTest::TearDown();
  }
  // A live rank file (its -wal and -shm exist while the writer is open) and a merge of it;
  // returns the modes of the rank file, -wal, -shm and the merged trace.
  std::vector<int> writeAndMerge() {
    RankFileSpec spec;
    spec.close = false;
    auto live = writeRankFile(path("rank-0.sqlite"), spec);
    EXPECT_TRUE(live != nullptr);
    std::vector<int> modes = {modeOf(path("rank-0.sqlite")), modeOf(path("rank-0.sqlite-wal")),
                              modeOf(path("rank-0.sqlite-shm"))};
    live.reset();
    MergeOptions m;
    m.inputs = {path("rank-0.sqlite")};
    m.output = path("trace.sqlite");
    MergeResult r = mergeRankFiles(m);
    EXPECT_TRUE(r.ok) << r.error;
    modes.push_back(modeOf(path("trace.sqlite")));
    return modes;
  }
  mode_t old_umask_ = 022;
};

TEST_F(Privacy, RankFilesWalShmAndMergedTraceArePrivateUnderUmask022) {
  EXPECT_EQ(writeAndMerge(), (std::vector<int>{0600, 0600, 0600, 0600}));
}

TEST_F(Privacy, ShareGivesTheUmasksModes) {
  ::setenv("RINGSIDE_SHARE", "1", 1);
  EXPECT_EQ(writeAndMerge(), (std::vector<int>{0644, 0644, 0644, 0644}));
  EXPECT_EQ(outputDirMode(), 0755u);
  ::setenv("RINGSIDE_SHARE", "0", 1);  // "0" means no
  EXPECT_EQ(outputFileMode(), 0600u);
  EXPECT_EQ(outputDirMode(), 0700u);
}

TEST_F(Privacy, StoredCommandLineRedactsEveryArgument) {
  std::vector<std::string> argv = {"/home/alice/venv/bin/python3", "train.py",
                                   "--api-key=SECRET", "--token", "SECRET"};
  EXPECT_EQ(storedCommandLine(argv, false),
            "/home/alice/venv/bin/python3 train.py --api-key=SECRET --token SECRET");
  EXPECT_EQ(storedCommandLine(argv, true),
            "python3 <redacted> <redacted> <redacted> <redacted>");
  EXPECT_EQ(storedCommandLine({}, true), "");
  ::setenv("RINGSIDE_REDACT", "1", 1);
  EXPECT_TRUE(redactRequested());
  EXPECT_EQ(ownCommandLine().find("--gtest"), std::string::npos) << ownCommandLine();
}

}  // namespace
}  // namespace ringside::storage::testing
