// Reading configuration files (ringside/fileio/input_file.h): a FIFO never blocks the open,
// /dev/zero is never read, the size is bounded; and an output that is an input is recognised by
// device and inode (issue 28).
#include "ringside/fileio/input_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "temp_dir.h"

namespace ringside::fileio {
namespace {

void writePlain(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
}

TEST(ReadConfigFile, ReadsARegularFile) {
  test_support::TempDir dir("input-file-test");
  const std::string path = dir.path() + "/topo";
  writePlain(path, "ringside-topology 1\n");
  std::string text, error;
  ASSERT_TRUE(readConfigFile(path, 1024, "topology file", &text, &error)) << error;
  EXPECT_EQ(text, "ringside-topology 1\n");
}

TEST(ReadConfigFile, AFifoDevZeroAFolderAndAHugeFileAreRefusedAtOnce) {
  test_support::TempDir dir("input-file-test");
  const std::string fifo = dir.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  std::string text, error;
  // A plain open() would wait for a writer for ever.
  EXPECT_FALSE(readConfigFile(fifo, 1024, "topology file", &text, &error));
  EXPECT_EQ(error, fifo + ": not a regular file (a FIFO); a topology file must be one");
  // A plain read would go on until memory runs out.
  EXPECT_FALSE(readConfigFile("/dev/zero", 1024, "topology file", &text, &error));
  EXPECT_EQ(error, "/dev/zero: not a regular file (a character device); a topology file must be one");
  EXPECT_FALSE(readConfigFile(dir.path(), 1024, "trigger file", &text, &error));
  EXPECT_EQ(error, dir.path() + ": not a regular file (a folder); a trigger file must be one");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));

  const std::string big = dir.path() + "/big";
  writePlain(big, std::string(2048, 'x'));
  EXPECT_FALSE(readConfigFile(big, 1024, "topology file", &text, &error));
  EXPECT_EQ(error, big + ": 2048 bytes; a topology file may have at most 1 KiB");
  EXPECT_TRUE(text.empty());
  EXPECT_FALSE(readConfigFile(dir.path() + "/missing", 1024, "topology file", &text, &error));
  EXPECT_EQ(error, dir.path() + "/missing: cannot open: No such file or directory");
}

TEST(OutputIsAnInput, SameFileByDeviceAndInodeThroughAnyLink) {
  test_support::TempDir dir("input-file-test");
  const std::string trace = dir.path() + "/t.sqlite";
  const std::string other = dir.path() + "/other.sqlite";
  writePlain(trace, "trace");
  writePlain(other, "other");
  ASSERT_EQ(::symlink(trace.c_str(), (dir.path() + "/sym").c_str()), 0);
  ASSERT_EQ(::link(trace.c_str(), (dir.path() + "/hard").c_str()), 0);
  std::string error;
  EXPECT_TRUE(outputIsAnInput(trace, {trace}, &error));
  EXPECT_EQ(error, trace + ": is the input " + trace +
                       "; an output never replaces its input (choose another name)");
  EXPECT_TRUE(outputIsAnInput(dir.path() + "/sym", {other, trace}, &error));
  EXPECT_TRUE(outputIsAnInput(dir.path() + "/hard", {trace}, &error));
  // The same file named another way ("./", "..") is the same file.
  EXPECT_TRUE(outputIsAnInput(dir.path() + "/./t.sqlite", {trace}, &error));
  // Another file, a file not there yet, standard output, an empty name: not an input.
  EXPECT_FALSE(outputIsAnInput(other, {trace}, &error));
  EXPECT_FALSE(outputIsAnInput(dir.path() + "/new.sqlite", {trace}, &error));
  EXPECT_FALSE(outputIsAnInput("-", {trace}, &error));
  EXPECT_FALSE(outputIsAnInput("", {trace}, &error));
  EXPECT_FALSE(outputIsAnInput(other, {"", "-"}, &error));
}

TEST(OutputIsAnInput, AFileInAnInputFolderOrItsNodeFolders) {
  test_support::TempDir dir("input-file-test");
  ASSERT_EQ(::mkdir((dir.path() + "/node-1").c_str(), 0700), 0);
  writePlain(dir.path() + "/rank-0.sqlite", "r0");
  writePlain(dir.path() + "/node-1/rank-1.sqlite", "r1");
  std::string error;
  EXPECT_TRUE(outputIsAnInput(dir.path() + "/rank-0.sqlite", {dir.path()}, &error));
  EXPECT_TRUE(outputIsAnInput(dir.path() + "/node-1/rank-1.sqlite", {dir.path()}, &error));
  EXPECT_NE(error.find("is the input " + dir.path() + "/node-1/rank-1.sqlite"), std::string::npos)
      << error;
  // The folder itself as the output is the input too.
  EXPECT_TRUE(outputIsAnInput(dir.path(), {dir.path()}, &error));
  const std::string outside = dir.path() + "-outside";
  writePlain(outside, "x");
  EXPECT_FALSE(outputIsAnInput(outside, {dir.path()}, &error));
  ::unlink(outside.c_str());
}

}  // namespace
}  // namespace ringside::fileio
