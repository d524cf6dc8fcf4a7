// cli/report/report_input.h — opening a trace for `report`, `diff` and `export`:
// the storage reader's one-line errors, plus the refusal of a trace that holds
// no collective calls (nothing to report).
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "ringside/storage/trace_reader.h"

namespace ringside::cli {

// False + one line naming `path` when there is no file there, or a folder (one not merged yet).
bool traceFileExists(const std::string& path, std::string* error);

// Opens `path` read-only. nullptr + one line naming the file in *error when it
// is missing, not a ringside trace, corrupt, newer, or empty. `quick_check` false: only with a
// TraceCheck of the same file whose verdict is asked before anything read is used.
std::unique_ptr<storage::TraceReader> openReportTrace(const std::string& path, std::string* error,
                                                      bool quick_check = true);

// A checked open of `path` (PRAGMA quick_check reads the whole file: seconds on a large trace)
// on a thread of its own, while the caller reads the trace through an unchecked reader.
// passed() waits for it; the destructor too. Where no thread can be started, the check runs in
// the constructor.
class TraceCheck {
 public:
  explicit TraceCheck(std::string path);
  ~TraceCheck();
  TraceCheck(const TraceCheck&) = delete;
  TraceCheck& operator=(const TraceCheck&) = delete;
  // True when the file passed; else false and the line a checked open gives in *error.
  bool passed(std::string* error);

 private:
  void run();

  std::string path_;
  std::thread thread_;
  bool ok_ = false;
  std::string error_;
};

}  // namespace ringside::cli
