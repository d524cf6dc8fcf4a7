// The rules every output file follows (ringside/fileio/output_file.h): a temporary file created
// exclusively beside the target, renamed into place; links are never followed and nothing but a
// regular file is replaced.
#include "ringside/fileio/output_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "temp_dir.h"

namespace ringside::fileio {
namespace {

namespace fs = std::filesystem;

std::string readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void writePlain(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
}

// Every name in `dir`, sorted.
std::vector<std::string> names(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.path().empty()); }
  std::string at(const std::string& name) const { return dir_.path() + "/" + name; }
  test_support::TempDir dir_{"fileio"};
};

TEST_F(OutputFileTest, WritesANewFileAndLeavesNoTemporary) {
  std::string error;
  ASSERT_TRUE(writeOutputFile(at("out.json"), "hello\n", false, &error)) << error;
  EXPECT_EQ(readFile(at("out.json")), "hello\n");
  EXPECT_EQ(names(dir_.path()), std::vector<std::string>{"out.json"});
}

TEST_F(OutputFileTest, StreamAndWriteGoToTheSameFileInOrder) {
  OutputFile out;
  std::string error;
  ASSERT_TRUE(out.create(at("s.txt"), false, &error)) << error;
  out.stream() << "a" << 1;
  ASSERT_TRUE(out.write("b", &error)) << error;
  out.stream() << std::string(100000, 'c');
  ASSERT_TRUE(out.commit(&error)) << error;
  EXPECT_EQ(readFile(at("s.txt")), "a1b" + std::string(100000, 'c'));
}

// The temporary file is new, a regular file, beside the target, and not at a fixed name; the
// names the verbs used before (<out>.partial, <out>.tmp, <out>.tmp-<pid>) are left alone even
// when they are links to a victim.
TEST_F(OutputFileTest, LinksAtTheOldTemporaryNamesAreNotFollowed) {
  writePlain(at("victim"), "precious");
  for (const std::string& name :
       std::vector<std::string>{"out.json.partial", "out.json.tmp",
                                "out.json.tmp-" + std::to_string(::getpid())}) {
    ASSERT_EQ(::symlink(at("victim").c_str(), at(name).c_str()), 0) << name;
  }
  OutputFile out;
  std::string error;
  ASSERT_TRUE(out.create(at("out.json"), false, &error)) << error;
  struct stat sb {};
  ASSERT_EQ(::lstat(out.tempPath().c_str(), &sb), 0);
  EXPECT_TRUE(S_ISREG(sb.st_mode));
  EXPECT_EQ(fs::path(out.tempPath()).parent_path(), fs::path(at("out.json")).parent_path());
  ASSERT_TRUE(out.write("new", &error)) << error;
  ASSERT_TRUE(out.commit(&error)) << error;
  EXPECT_EQ(readFile(at("out.json")), "new");
  EXPECT_EQ(readFile(at("victim")), "precious");
}

// A link put in place of the temporary file while it is written: the commit refuses, and the
// link's target is neither written nor moved into place.
TEST_F(OutputFileTest, ATemporaryReplacedByALinkIsNotCommitted) {
  writePlain(at("victim"), "precious");
  OutputFile out;
  std::string error;
  ASSERT_TRUE(out.create(at("out.json"), true, &error)) << error;
  out.closeDescriptor();
  ASSERT_EQ(::unlink(out.tempPath().c_str()), 0);
  ASSERT_EQ(::symlink(at("victim").c_str(), out.tempPath().c_str()), 0);
  EXPECT_FALSE(out.tempIsOurs(&error));
  EXPECT_FALSE(out.commit(&error));
  EXPECT_NE(error.find("replaced"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(at("out.json")));
  EXPECT_EQ(readFile(at("victim")), "precious");
}

TEST_F(OutputFileTest, ALinkAtTheTargetIsNeverReplacedOrFollowed) {
  writePlain(at("victim"), "precious");
  ASSERT_EQ(::symlink(at("victim").c_str(), at("out.json").c_str()), 0);
  ASSERT_EQ(::symlink(at("missing").c_str(), at("dangling.json").c_str()), 0);
  for (bool overwrite : {false, true}) {
    std::string error;
    EXPECT_FALSE(writeOutputFile(at("out.json"), "new", overwrite, &error));
    EXPECT_NE(error.find("a symbolic link, not a regular file; not replaced"), std::string::npos)
        << error;
    EXPECT_FALSE(writeOutputFile(at("dangling.json"), "new", overwrite, &error));
  }
  EXPECT_EQ(readFile(at("victim")), "precious");
  EXPECT_FALSE(fs::exists(at("missing")));
  EXPECT_TRUE(fs::is_symlink(at("out.json")));
  EXPECT_EQ(names(dir_.path()), (std::vector<std::string>{"dangling.json", "out.json", "victim"}));
}

TEST_F(OutputFileTest, AFifoAtTheTargetIsNotReplacedNorOpened) {
  ASSERT_EQ(::mkfifo(at("fifo").c_str(), 0600), 0) << std::strerror(errno);
  std::string error;
  // Opening a FIFO for writing would block without a reader: the refusal must come first.
  EXPECT_FALSE(writeOutputFile(at("fifo"), "x", true, &error));
  EXPECT_NE(error.find("a FIFO, not a regular file"), std::string::npos) << error;
  struct stat sb {};
  ASSERT_EQ(::lstat(at("fifo").c_str(), &sb), 0);
  EXPECT_TRUE(S_ISFIFO(sb.st_mode));
}

// /dev/null's twin (char 1:3): needs CAP_MKNOD, which the CI container has as root.
TEST_F(OutputFileTest, ADeviceAtTheTargetIsNotReplaced) {
  if (::mknod(at("null").c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0)
    GTEST_SKIP() << "mknod of a character device: " << std::strerror(errno)
                 << " (needs root with CAP_MKNOD)";
  std::string error;
  EXPECT_FALSE(writeOutputFile(at("null"), "x", true, &error));
  EXPECT_NE(error.find("a character device, not a regular file; not replaced"), std::string::npos)
      << error;
  struct stat sb {};
  ASSERT_EQ(::lstat(at("null").c_str(), &sb), 0);
  EXPECT_TRUE(S_ISCHR(sb.st_mode));
  EXPECT_EQ(names(dir_.path()), std::vector<std::string>{"null"});
}

TEST_F(OutputFileTest, AFolderAtTheTargetIsNotReplaced) {
  ASSERT_TRUE(fs::create_directory(at("out")));
  std::string error;
  EXPECT_FALSE(writeOutputFile(at("out"), "x", true, &error));
  EXPECT_NE(error.find("a folder, not a regular file"), std::string::npos) << error;
  EXPECT_TRUE(fs::is_directory(at("out")));
}

TEST_F(OutputFileTest, AnExistingFileIsReplacedOnlyWithOverwrite) {
  writePlain(at("out.json"), "old");
  std::string error;
  EXPECT_FALSE(writeOutputFile(at("out.json"), "new", false, &error));
  EXPECT_NE(error.find("exists (use --force to overwrite)"), std::string::npos) << error;
  EXPECT_EQ(readFile(at("out.json")), "old");
  ASSERT_TRUE(writeOutputFile(at("out.json"), "new", true, &error)) << error;
  EXPECT_EQ(readFile(at("out.json")), "new");
  EXPECT_EQ(names(dir_.path()), std::vector<std::string>{"out.json"});
}

// Without overwrite, a file that appears while the output is written is kept (link(), not
// rename()).
TEST_F(OutputFileTest, AFileThatAppearsMeanwhileIsKeptWithoutOverwrite) {
  OutputFile out;
  std::string error;
  ASSERT_TRUE(out.create(at("out.json"), false, &error)) << error;
  ASSERT_TRUE(out.write("ours", &error)) << error;
  writePlain(at("out.json"), "theirs");
  EXPECT_FALSE(out.commit(&error));
  EXPECT_NE(error.find("exists"), std::string::npos) << error;
  EXPECT_EQ(readFile(at("out.json")), "theirs");
  EXPECT_EQ(names(dir_.path()), std::vector<std::string>{"out.json"});
}

TEST_F(OutputFileTest, AnUncommittedFileLeavesNothingBehind) {
  std::string error;
  {
    OutputFile out;
    ASSERT_TRUE(out.create(at("out.json"), false, &error)) << error;
    ASSERT_TRUE(out.write("half", &error)) << error;
  }
  EXPECT_TRUE(names(dir_.path()).empty());
  EXPECT_FALSE(writeOutputFile(at("no/such/folder/out.json"), "x", false, &error));
  EXPECT_NE(error.find("cannot write " + at("no/such/folder/out.json") +
                       ": No such file or directory"),
            std::string::npos)
      << error;
}

// `report > /dev/full` must say why it failed, in one line.
TEST(WriteStandardOutput, NamesTheReasonWhenStandardOutputIsFull) {
  const int full = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  if (full < 0) GTEST_SKIP() << "no /dev/full: " << std::strerror(errno);
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(full, STDOUT_FILENO);
    std::string error;
    const bool ok = writeStandardOutput("report\n", &error);
    const std::string msg = ok ? "ok" : error;
    (void)!::write(pipefd[1], msg.data(), msg.size());
    ::_exit(0);
  }
  ::close(pipefd[1]);
  ::close(full);
  std::string got;
  char buf[256];
  for (ssize_t n; (n = ::read(pipefd[0], buf, sizeof buf)) > 0;) got.append(buf, n);
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_EQ(got, "cannot write standard output: No space left on device");
}

// Issue 28: `simulate > /dev/full` exited 0 (std::cout's failure was never looked at), and
// `export -o -` named whatever errno a later call left. The checked standard output keeps the
// failed write's own errno; main() asks it at the end.
TEST(CheckedStandardOutput, KeepsTheFailedWritesReason) {
  const int full = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  if (full < 0) GTEST_SKIP() << "no /dev/full: " << std::strerror(errno);
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(full, STDOUT_FILENO);
    installCheckedStandardOutput();
    std::string msg;
    std::string error;
    msg += standardOutputOk(&error) ? "ok-before;" : "failed-before;";
    std::cout << std::string(200000, 'x') << "table\n";  // larger than the buffer, then small
    errno = EBADF;  // what some later call might leave
    msg += standardOutputOk(&error) ? "ok" : error;
    // main() says it only when no verb was told already.
    std::string again;
    msg += standardOutputFailedUnsaid(&again) ? ";unsaid" : ";said";
    (void)!::write(pipefd[1], msg.data(), msg.size());
    ::_exit(0);
  }
  ::close(pipefd[1]);
  ::close(full);
  std::string got;
  char buf[256];
  for (ssize_t n; (n = ::read(pipefd[0], buf, sizeof buf)) > 0;) got.append(buf, n);
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_EQ(got, "ok-before;cannot write standard output: No space left on device;said");
}

// A verb that never looked (simulate): main() finds the failure and says it.
TEST(CheckedStandardOutput, MainFindsAFailureNoVerbSaid) {
  const int full = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  if (full < 0) GTEST_SKIP() << "no /dev/full: " << std::strerror(errno);
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(full, STDOUT_FILENO);
    installCheckedStandardOutput();
    std::cout << "a small table\n";
    std::string error;
    const std::string msg = standardOutputFailedUnsaid(&error) ? error : "not found";
    (void)!::write(pipefd[1], msg.data(), msg.size());
    ::_exit(0);
  }
  ::close(pipefd[1]);
  ::close(full);
  std::string got;
  char buf[256];
  for (ssize_t n; (n = ::read(pipefd[0], buf, sizeof buf)) > 0;) got.append(buf, n);
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_EQ(got, "cannot write standard output: No space left on device");
}

}  // namespace
}  // namespace ringside::fileio
