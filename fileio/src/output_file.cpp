#include "ringside/fileio/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>
#include <streambuf>

#include "path_kind.h"

namespace ringside::fileio {

namespace {

std::string reason(int e) { return std::strerror(e); }


std::string folderOf(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Eight random letters and digits: the temporary name cannot be guessed in advance, and
// O_EXCL makes a collision (or a planted entry) a retry, never a write through it.
std::string randomSuffix() {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng{(static_cast<uint64_t>(std::random_device{}()) << 32) ^
                                   std::random_device{}() ^ static_cast<uint64_t>(::getpid())};
  std::string s(8, 'x');
  for (char& c : s) c = kChars[rng() % (sizeof(kChars) - 1)];
  return s;
}

bool writeAll(int fd, const char* p, size_t n, int* err) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      *err = errno;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// A buffered stream over a file descriptor that remembers the first failed write's reason (as
// an errno) instead of losing it: an output file's (commit() reports it) and standard output's
// (standardOutputOk() reports it; stdio's own buffer is flushed first there, to keep the order
// should anything write to it). Writes of a buffer's size or more go straight through once the
// buffer is drained (an export to '-').
class FdBuf : public std::streambuf {
 public:
  FdBuf(int fd, bool stdio_first) : fd_(fd), stdio_first_(stdio_first) {
    setp(buf_.data(), buf_.data() + buf_.size());
  }
  int error() const { return err_; }
  void noteError(int e) {
    if (err_ == 0) err_ = e;
  }

 protected:
  int_type overflow(int_type ch) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (n >= static_cast<std::streamsize>(buf_.size())) {
      if (!drain() || !write(s, static_cast<size_t>(n))) return 0;
      return n;
    }
    return std::streambuf::xsputn(s, n);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    const size_t n = static_cast<size_t>(pptr() - pbase());
    setp(buf_.data(), buf_.data() + buf_.size());
    if (err_ != 0) return false;
    if (stdio_first_) std::fflush(stdout);
    return write(buf_.data(), n);
  }
  bool write(const char* p, size_t n) {
    int err = 0;
    if (writeAll(fd_, p, n, &err)) return true;
    noteError(err);
    return false;
  }

  int fd_;
  bool stdio_first_;
  int err_ = 0;
  std::array<char, 64 * 1024> buf_{};
};

}  // namespace

class OutputFile::Buf : public FdBuf {
 public:
  explicit Buf(int fd) : FdBuf(fd, false) {}
};

bool checkOutputTarget(const std::string& path, bool overwrite, std::string* error) {
  if (path.empty()) {
    *error = "no output file name given";
    return false;
  }
  struct stat sb {};
  if (::lstat(path.c_str(), &sb) != 0) {
    if (errno == ENOENT) return true;
    *error = "cannot write " + path + ": " + reason(errno);
    return false;
  }
  if (!S_ISREG(sb.st_mode)) {
    *error = path + ": " + detail::pathKind(sb.st_mode) + ", not a regular file; not replaced";
    return false;
  }
  if (!overwrite) {
    *error = path + ": exists (use --force to overwrite)";
    return false;
  }
  return true;
}

OutputFile::OutputFile() = default;

OutputFile::~OutputFile() { discard(); }

bool OutputFile::create(const std::string& target, bool overwrite, std::string* error,
                        mode_t mode, bool sync) {
  discard();
  if (!checkOutputTarget(target, overwrite, error)) return false;
  target_ = target;
  overwrite_ = overwrite;
  sync_ = sync;
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string temp = target + ".tmp-" + randomSuffix();
    const int fd =
        ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) {
      if (errno == EEXIST || errno == EINTR) continue;
      *error = "cannot write " + target + ": " + reason(errno);
      return false;
    }
    struct stat sb {};
    if (::fstat(fd, &sb) != 0) {
      *error = "cannot write " + target + ": " + reason(errno);
      ::close(fd);
      ::unlink(temp.c_str());
      return false;
    }
    fd_ = fd;
    temp_ = std::move(temp);
    dev_ = sb.st_dev;
    ino_ = sb.st_ino;
    return true;
  }
  *error = "cannot write " + target + ": no free temporary name beside it";
  return false;
}

bool OutputFile::write(std::string_view bytes, std::string* error) {
  if (fd_ < 0) {
    *error = "cannot write " + target_ + ": not open";
    return false;
  }
  if (stream_) stream_->flush();  // keep the order of stream() and write()
  int err = 0;
  if (!writeAll(fd_, bytes.data(), bytes.size(), &err)) {
    *error = "cannot write " + target_ + ": " + reason(err);
    return false;
  }
  return true;
}

std::ostream& OutputFile::stream() {
  if (!stream_) {
    buf_ = std::make_unique<Buf>(fd_);
    stream_ = std::make_unique<std::ostream>(buf_.get());
  }
  return *stream_;
}

void OutputFile::closeDescriptor() {
  if (stream_) stream_->flush();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool OutputFile::tempIsOurs(std::string* error) const {
  struct stat sb {};
  if (temp_.empty() || ::lstat(temp_.c_str(), &sb) != 0 || !S_ISREG(sb.st_mode) ||
      sb.st_dev != dev_ || sb.st_ino != ino_) {
    *error = temp_ + ": the temporary file was replaced or removed while being written";
    return false;
  }
  return true;
}

bool OutputFile::commit(std::string* error) {
  if (temp_.empty()) {
    *error = "cannot write " + target_ + ": not open";
    return false;
  }
  if (stream_) {
    stream_->flush();
    if (buf_->error() != 0 || !*stream_) {
      *error = "cannot write " + target_ + ": " + reason(buf_->error() ? buf_->error() : EIO);
      discard();
      return false;
    }
  }
  if (fd_ < 0) {
    // Closed for another writer: reopen our own file (never through a link) to sync it.
    fd_ = ::open(temp_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat sb {};
    if (fd_ < 0 || ::fstat(fd_, &sb) != 0 || sb.st_dev != dev_ || sb.st_ino != ino_) {
      *error = "cannot write " + target_ + ": its temporary file was replaced meanwhile";
      discard();
      return false;
    }
  }
  // Synced before the rename, so a crash leaves the old file or the whole new one.
  if (sync_ && ::fsync(fd_) != 0 && errno != EINVAL) {
    *error = "cannot write " + target_ + ": " + reason(errno);
    discard();
    return false;
  }
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    *error = "cannot write " + target_ + ": " + reason(errno);
    discard();
    return false;
  }
  // The target may have changed while we wrote (a long merge): check it again.
  if (!tempIsOurs(error) || !checkOutputTarget(target_, overwrite_, error)) {
    discard();
    return false;
  }
  if (overwrite_) {
    if (::rename(temp_.c_str(), target_.c_str()) != 0) {
      *error = "cannot write " + target_ + ": rename: " + reason(errno);
      discard();
      return false;
    }
  } else if (::link(temp_.c_str(), target_.c_str()) == 0) {
    // link() never replaces: an output that appeared meanwhile is kept.
    ::unlink(temp_.c_str());
  } else {
    const int e = errno;
    struct stat sb {};
    if (e == EEXIST || ::lstat(target_.c_str(), &sb) == 0) {
      *error = target_ + ": exists (use --force to overwrite)";
      discard();
      return false;
    }
    // A filesystem without hard links: nothing is there (just checked), so rename.
    if (::rename(temp_.c_str(), target_.c_str()) != 0) {
      *error = "cannot write " + target_ + ": link: " + reason(e);
      discard();
      return false;
    }
  }
  temp_.clear();
  // Make the new directory entry durable too.
  const int dfd =
      sync_ ? ::open(folderOf(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return true;
}

void OutputFile::discard() {
  stream_.reset();
  buf_.reset();
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  // Remove only our own file: a link someone put at the name meanwhile is left alone.
  std::string ignored;
  if (!temp_.empty() && tempIsOurs(&ignored)) ::unlink(temp_.c_str());
  temp_.clear();
}

bool writeOutputFile(const std::string& path, std::string_view bytes, bool overwrite,
                     std::string* error, bool sync, mode_t mode) {
  OutputFile out;
  return out.create(path, overwrite, error, mode, sync) && out.write(bytes, error) &&
         out.commit(error);
}

namespace {

// std::cout's buffer once installCheckedStandardOutput() ran: writes to descriptor 1 and keeps
// the first error. Never destroyed (std::cout may be used until the very end of the process).
FdBuf* g_stdout_buf = nullptr;
bool g_failure_returned = false;  // standardOutputOk or writeStandardOutput returned false

}  // namespace

void installCheckedStandardOutput() {
  if (g_stdout_buf != nullptr) return;
  std::cout.flush();
  g_stdout_buf = new FdBuf(STDOUT_FILENO, true);  // never freed: std::cout outlives every object
  std::cout.rdbuf(g_stdout_buf);
}

bool standardOutputOk(std::string* error) {
  errno = 0;
  std::cout.flush();
  const int cout_errno = errno;
  int err = g_stdout_buf != nullptr ? g_stdout_buf->error() : 0;
  const bool cout_ok = static_cast<bool>(std::cout) && err == 0;
  errno = 0;
  const bool stdio_ok = std::fflush(stdout) == 0 && !std::ferror(stdout);
  if (cout_ok && stdio_ok) return true;
  if (err == 0) err = !stdio_ok && errno != 0 ? errno : cout_errno;
  *error = "cannot write standard output: " + reason(err != 0 ? err : EIO);
  g_failure_returned = true;
  return false;
}

bool standardOutputFailedUnsaid(std::string* error) {
  const bool said = g_failure_returned;
  return !standardOutputOk(error) && !said;
}

bool writeStandardOutput(std::string_view bytes, std::string* error) {
  if (!standardOutputOk(error)) return false;
  int err = 0;
  if (!writeAll(STDOUT_FILENO, bytes.data(), bytes.size(), &err)) {
    if (g_stdout_buf != nullptr) g_stdout_buf->noteError(err);
    *error = "cannot write standard output: " + reason(err);
    g_failure_returned = true;
    return false;
  }
  return true;
}

}  // namespace ringside::fileio
