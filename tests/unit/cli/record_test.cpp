#include "record/record.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "temp_dir.h"

namespace ringside::cli {
namespace {
namespace fs = std::filesystem;

// A scratch folder as a path, for the `/` joins below.
class TempDir {
 public:
  const fs::path& path() const { return path_; }

 private:
  test_support::TempDir dir_{"cli-test"};
  fs::path path_{dir_.path()};
};

void touch(const fs::path& path) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << "x";
}

TEST(FindPreload, EnvironmentWins) {
  TempDir tmp;
  touch(tmp.path() / "custom.so");
  touch(tmp.path() / "bin" / kPreloadName);
  std::string error;
  EXPECT_EQ(findPreloadLibrary((tmp.path() / "custom.so").c_str(), tmp.path() / "bin", &error),
            (tmp.path() / "custom.so").string());
}

TEST(FindPreload, EnvironmentPointingNowhereIsAnError) {
  TempDir tmp;
  touch(tmp.path() / "bin" / kPreloadName);
  std::string error;
  EXPECT_EQ(findPreloadLibrary("/no/such/lib.so", tmp.path() / "bin", &error), "");
  EXPECT_NE(error.find("RINGSIDE_PRELOAD=/no/such/lib.so"), std::string::npos) << error;
}

TEST(FindPreload, SearchOrder) {
  TempDir tmp;
  fs::path bin = tmp.path() / "bin";
  fs::create_directories(bin);
  std::string error;
  EXPECT_EQ(findPreloadLibrary(nullptr, bin, &error), "");
  EXPECT_NE(error.find(kPreloadName), std::string::npos);
  EXPECT_NE(error.find("RINGSIDE_PRELOAD"), std::string::npos);

  touch(tmp.path() / "lib" / "ringside" / kPreloadName);
  EXPECT_EQ(findPreloadLibrary("", bin, &error),
            (tmp.path() / "lib" / "ringside" / kPreloadName).string());
  touch(tmp.path() / "lib" / kPreloadName);
  EXPECT_EQ(findPreloadLibrary(nullptr, bin, &error), (tmp.path() / "lib" / kPreloadName).string());
  touch(bin / kPreloadName);
  EXPECT_EQ(findPreloadLibrary(nullptr, bin, &error), (bin / kPreloadName).string());
}

TEST(Preload, PrependKeepsTheUsersEntries) {
  EXPECT_EQ(prependPreload(nullptr, "/r/lib.so"), "/r/lib.so");
  EXPECT_EQ(prependPreload("", "/r/lib.so"), "/r/lib.so");
  EXPECT_EQ(prependPreload("/a.so", "/r/lib.so"), "/r/lib.so:/a.so");
  EXPECT_EQ(prependPreload("/a.so /b.so:/c.so", "/r/lib.so"), "/r/lib.so:/a.so:/b.so:/c.so");
  EXPECT_EQ(prependPreload("/r/lib.so:/a.so", "/r/lib.so"), "/r/lib.so:/a.so");
}

TEST(Names, DefaultTraceName) {
  std::string name = defaultTraceName(std::time(nullptr));
  EXPECT_TRUE(std::regex_match(name, std::regex(R"(ringside-\d{8}-\d{6}\.sqlite)"))) << name;
}

TEST(Names, ShellJoin) {
  EXPECT_EQ(shellJoin({"python3", "train.py", "--lr=0.1"}), "python3 train.py --lr=0.1");
  EXPECT_EQ(shellJoin({"sh", "-c", "echo $RANK; exit 3"}), "sh -c 'echo $RANK; exit 3'");
  EXPECT_EQ(shellJoin({"it's", ""}), "'it'\\''s' ''");
}

}  // namespace
// Issue 28, item 1: only files named as the preload library names them are this run's rank
// files (record never merges or removes the job's own *.sqlite, nor a merge made meanwhile).
TEST(RankFileNames, OnlyThePreloadLibrarysPattern) {
  int64_t pid = 0, start = 0;
  EXPECT_TRUE(parseRankFileName("rank-vm-123-1795656217931748035.sqlite", &pid, &start));
  EXPECT_EQ(pid, 123);
  EXPECT_EQ(start, 1795656217931748035LL);
  EXPECT_TRUE(parseRankFileName("rank-node-7.cluster-9-1.sqlite", &pid, &start));  // '-' in host
  EXPECT_EQ(pid, 9);
  EXPECT_FALSE(parseRankFileName("results.sqlite", nullptr, nullptr));
  EXPECT_FALSE(parseRankFileName("peek.sqlite", nullptr, nullptr));
  EXPECT_FALSE(parseRankFileName("rank-0.sqlite", nullptr, nullptr));
  EXPECT_FALSE(parseRankFileName("rank-vm-12a-5.sqlite", nullptr, nullptr));
  EXPECT_FALSE(parseRankFileName("rank--1-2.sqlite", nullptr, nullptr));
  EXPECT_FALSE(parseRankFileName("rank-vm-1-2.sqlite-wal", nullptr, nullptr));
  EXPECT_FALSE(parseRankFileName("xrank-vm-1-2.sqlite", nullptr, nullptr));
}

// Issue 28, item 8: a link planted at the rank folder's name (or a node-K) is never followed.
TEST(RankFolder, ALinkPlantedAtItsNameIsRefused) {
  TempDir tmp;
  const fs::path target = tmp.path() / "elsewhere";
  fs::create_directories(target);
  const fs::path ranks = tmp.path() / "t.sqlite.ranks";
  fs::create_directory_symlink(target, ranks);
  std::error_code ec;
  EXPECT_FALSE(makeRankFolder(ranks, &ec));
  EXPECT_EQ(ec, std::errc::too_many_symbolic_link_levels);
  EXPECT_NE(rankFolderError(ranks.string(), ec).find("symbolic link"), std::string::npos);
  // node-K below a real folder, as record --nnodes makes it.
  const fs::path nodes = tmp.path() / "nodes";
  ec.clear();
  EXPECT_TRUE(makeRankFolder(nodes, &ec));
  EXPECT_FALSE(ec);
  fs::create_directory_symlink(target, nodes / "node-1");
  ec.clear();
  EXPECT_FALSE(makeRankFolder(nodes / "node-1", &ec));
  EXPECT_EQ(ec, std::errc::too_many_symbolic_link_levels);
  // Nothing was made in the link's target; a real folder still works, a second time too.
  EXPECT_TRUE(fs::is_empty(target));
  ec.clear();
  EXPECT_TRUE(makeRankFolder(nodes / "node-0", &ec));
  EXPECT_FALSE(ec);
  EXPECT_FALSE(makeRankFolder(nodes / "node-0", &ec));
  EXPECT_FALSE(ec);
  struct stat sb {};
  ASSERT_EQ(::stat((nodes / "node-0").c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0700u);
  // A regular file at the name: not a folder.
  touch(tmp.path() / "file");
  EXPECT_FALSE(makeRankFolder(tmp.path() / "file", &ec));
  EXPECT_EQ(ec, std::errc::not_a_directory);
}

}  // namespace ringside::cli
