// ringside/fileio/output_file.h — writing an output file safely.
//
// Every file ringside writes for the user (a merged trace, a report, an export, benchmark JSON,
// the viewer's state, a screenshot, a CSV table) goes through OutputFile:
//   - the bytes go to a temporary file created exclusively (O_CREAT|O_EXCL|O_NOFOLLOW, a random
//     name) in the target's folder, so a link planted at a predictable name is never followed;
//   - the temporary file is fsynced and renamed into place (link() when the caller must not
//     replace a file that appears meanwhile), so a failed write leaves no half file;
//   - an existing target is replaced only when the caller allows it and only when it is a
//     regular file: a symbolic link, a device, a FIFO, a socket or a folder is never replaced.
// Errors are one line in *error, naming the path. Not thread-safe per object.
#pragma once

#include <sys/types.h>

#include <memory>
#include <ostream>
#include <string>
#include <string_view>

namespace ringside::fileio {

// Whether `path` may become an output: nothing there, or a regular file when `overwrite`.
// *error: "<path>: exists (use --force to overwrite)" or "<path>: not a regular file (...);
// not replaced" and the like.
bool checkOutputTarget(const std::string& path, bool overwrite, std::string* error);

class OutputFile {
 public:
  OutputFile();
  ~OutputFile();  // removes a temporary file that was not committed
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Checks the target (checkOutputTarget) and creates the temporary file beside it with `mode`
  // (before the umask; 0666 gives what a plain open would). Without `sync` the file and its
  // folder are not fsynced (for a file rewritten many times a second that no crash needs).
  bool create(const std::string& target, bool overwrite, std::string* error, mode_t mode = 0666,
              bool sync = true);

  // The temporary file's path (for a writer that must open it by name, e.g. SQLite) and its
  // descriptor (open for writing until commit or discard).
  const std::string& tempPath() const { return temp_; }
  const std::string& target() const { return target_; }
  int fd() const { return fd_; }

  // Appends bytes; false with *error on a failed write (e.g. no space left).
  bool write(std::string_view bytes, std::string* error);
  // A stream over the same descriptor (buffered); its failures are reported by commit().
  std::ostream& stream();

  // For a writer that opens tempPath() by name itself (SQLite): closes our descriptor, so no
  // second descriptor of ours can drop that writer's POSIX locks. commit() still works.
  void closeDescriptor();
  // Whether the file at tempPath() is still the one create() made (not replaced by a link or
  // another file): for writers that reopen it by name.
  bool tempIsOurs(std::string* error) const;

  // Flushes, fsyncs and closes the temporary file, checks the target again and moves the
  // temporary file into place (replacing a regular file only when create() allowed it).
  bool commit(std::string* error);
  // Closes and removes the temporary file (also done by the destructor).
  void discard();

 private:
  class Buf;
  std::string target_;
  std::string temp_;
  int fd_ = -1;
  bool overwrite_ = false;
  bool sync_ = true;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  std::unique_ptr<Buf> buf_;
  std::unique_ptr<std::ostream> stream_;
};

// create() + write() + commit() in one call. Callers that write what a trace holds pass
// storage::outputFileMode() (0600 unless RINGSIDE_SHARE).
bool writeOutputFile(const std::string& path, std::string_view bytes, bool overwrite,
                     std::string* error, bool sync = true, mode_t mode = 0666);

// Writes all of `bytes` to standard output (after flushing std::cout and stdio);
// *error = "cannot write standard output: <reason>" on failure.
bool writeStandardOutput(std::string_view bytes, std::string* error);

// Standard output that is checked: installCheckedStandardOutput() (once, in main) puts std::cout
// on a buffer over descriptor 1 that keeps the first failed write's errno (a std::ostream
// forgets it: `> /dev/full` would otherwise read as success, or be named by a later errno).
// standardOutputOk() flushes std::cout and stdio and says whether everything written so far
// reached standard output; *error = "cannot write standard output: No space left on device".
// Without the installed buffer it still checks std::cout's state and stdio's error flag.
void installCheckedStandardOutput();
bool standardOutputOk(std::string* error);
// For main(), at the end: whether standard output failed and no standardOutputOk() or
// writeStandardOutput() call has returned that failure to a verb (which then said it).
bool standardOutputFailedUnsaid(std::string* error);

}  // namespace ringside::fileio
