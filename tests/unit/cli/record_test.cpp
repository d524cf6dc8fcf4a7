#include "record/record.h"

#include <gtest/gtest.h>
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
}  // namespace ringside::cli
