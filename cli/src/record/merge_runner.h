// cli/record/merge_runner.h — what `record` and `merge` share after the job: finding
// rank files, merging them with a progress line, printing the summary.
// Everything here writes to stderr only (the job's stdout stays its own).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ringside/align/align.h"
#include "ringside/storage/merge.h"

namespace ringside::cli {

// The rank files (*.sqlite, not their -wal/-shm) directly inside `dir`, sorted.
// Returns false and fills *error when the folder cannot be read.
bool listRankFiles(const std::string& dir, std::vector<std::string>* files, std::string* error);

// The run id in a rank file's meta (RINGSIDE_RUN_ID of the run that wrote it; "" when it had
// none). Returns false and fills *error (naming the file) when the file cannot be opened.
// *merged (when given): whether the file is a merged trace rather than a rank file.
bool readRunId(const std::string& file, std::string* run_id, std::string* error,
               bool* merged = nullptr);

// Fits the merged trace's clock model (align/) and stores it in the trace in place (merge
// --realign); prints one line when the trace spans several clock domains, or why alignment
// failed.
bool alignClocks(const std::string& trace, std::string_view prefix,
                 const align::AlignOptions& options = {});

// Detects the merged trace's training steps (analyzer/steps.h) and stores them in it (table
// step, docs/steps.md); prints one line when that fails.
bool storeDetectedSteps(const std::string& trace, std::string_view prefix);

// storage::mergeRankFiles with a "\rmerging: input k of N, ...%, rows/s" line on stderr when
// stderr is a terminal (or `always_progress`: then a line a second in a log) and the merge takes
// longer than half a second. The clock model and the detected steps are stored into the
// temporary file before it is renamed into place (MergeOptions::before_publish): when that fails
// (a full disk, a fit that cannot read the rows) the merge fails and nothing is published. After
// a successful merge, prints the merger's warnings, each prefixed with `prefix`, then the clock
// line.
storage::MergeResult mergeWithProgress(storage::MergeOptions options, std::string_view prefix,
                                       const align::AlignOptions& align_options = {},
                                       bool always_progress = false);

// While alive: SIGINT, SIGTERM and SIGHUP remove the temporary file of the merge under way (and
// its journal), print `message` (when not empty) and end the process by the same signal, so an
// interrupted merge leaves no `<out>.tmp-*` behind. mergeWithProgress tells it the file.
class MergeSignalGuard {
 public:
  explicit MergeSignalGuard(const std::string& message);
  ~MergeSignalGuard();
  MergeSignalGuard(const MergeSignalGuard&) = delete;
  MergeSignalGuard& operator=(const MergeSignalGuard&) = delete;
  // The temporary file to remove on a signal ("" none); safe to call without a guard.
  static void noteTempFile(const std::string& path);
};

// Opens `trace` (a trace this process has just merged: without a quick_check), summarizes it
// and prints the summary to stderr. A failure is
// reported as one line (prefixed) and returns false; it never throws.
bool printTraceSummary(const std::string& trace, std::string_view prefix);

}  // namespace ringside::cli
