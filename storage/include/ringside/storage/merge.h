// storage/merge.h — merges per-rank files into one trace per run.
//
// The merged file has the same schema as a rank file plus indexes, with
// collective ids renumbered to be unique across ranks (transfer.collective_id
// follows). Ranks whose file did not end cleanly (meta end_state != 'clean')
// are listed as cut off; ranks below world_size with no file as missing. Both
// lists are stored in the merged file's meta table.
// Inputs are opened read-only (a live rank file's -wal is honoured, never
// copied without it) and copied inside SQLite: each is attached to the output
// and every table copied by one INSERT ... SELECT, the indexes built once at the
// end. With `merged_inputs`, an input may itself be a merged trace (e.g. one per
// node): its ranks are taken as they are, and the result equals a one-step merge
// of the same rank files (docs/schema.md, "Merging merged traces"). The output is written to a temporary name and renamed
// when complete, so a failed merge never leaves a half trace at `output`.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ringside/storage/records.h"

namespace ringside::storage {

// Where a merge stands, for a progress line.
struct MergeProgress {
  int64_t done = 0;   // collective and transfer rows copied so far
  int64_t total = 0;  // of this many (counted before copying)
  int input = 0;      // inputs copied so far (the one being copied is input + 1)
  int inputs = 0;     // usable inputs
};

// One input as the merge will copy it (MergeOptions::on_copy_plan).
struct MergePlanInput {
  std::string path;
  bool merged = false;  // a merged trace, not a rank file
  bool live = false;    // its writer may still be appending rows: a second read may see more
  std::vector<RankInfo> ranks;  // its rank rows, as TraceReader::ranks() gives them
};

struct MergeOptions {
  std::vector<std::string> inputs;  // rank files (and merged traces, with merged_inputs)
  std::string output;               // merged trace path
  bool overwrite = false;           // replace an existing output
  // Called now and then with rows copied so far and the total to copy.
  std::function<void(int64_t done, int64_t total)> progress;
  // The same, with the input being copied: called after each table of each input.
  std::function<void(const MergeProgress&)> progress_detail;
  // Accept merged traces as inputs (alone or with rank files). Two inputs holding the same rank
  // then fail the merge (rank files of one rank among themselves are still kept, with a warning).
  bool merged_inputs = false;
  // key/value pairs added to the merged meta table (e.g. command line).
  std::vector<std::pair<std::string, std::string>> extra_meta;
  // Inputs the caller already found unusable and left out of `inputs`, as (path, why): they are
  // listed in the merged meta (skipped_inputs, skipped_input_reasons) like the merger's own
  // skips, so the trace tells a missing rank file from an unreadable one.
  std::vector<std::pair<std::string, std::string>> skipped_inputs;
  // An input that cannot be used (pass 1, or failing while being copied) is skipped with a
  // warning and listed in the meta when true; when false it fails the merge (`merge` without -k).
  bool keep_going = true;
  // Called once the rows, meta and indexes are in the temporary file and it is closed, before it
  // is renamed to `output`: the caller stores what makes the trace correct (its clock model, its
  // steps) into `temp_path`. False (*error set) fails the merge and removes the temporary file,
  // so a trace is never published without them.
  std::function<bool(const std::string& temp_path, std::string* error)> before_publish;
  // Called with the temporary file's path when it has been created, and with "" when it is gone
  // (renamed or removed): a signal handler may remove it when the merge is interrupted.
  std::function<void(const std::string& temp_path)> on_temp_file;
  // For a caller that reads the inputs beside the copy (finish/: the clock fit's message sides,
  // on a thread of its own): called once on the merging thread, after pass 1 and before the
  // first input is copied, with the inputs in the order they will be copied; then after each of
  // them with its index in that list, whether its rows are in the output (false: skipped with
  // -k) and the transfer rows copied from it. Not called when the merge fails before copying.
  std::function<void(const std::vector<MergePlanInput>& plan)> on_copy_plan;
  std::function<void(size_t index, bool copied, int64_t transfers)> on_input_copied;
};

struct MergeResult {
  bool ok = false;
  std::string error;                  // one line, when !ok
  std::vector<std::string> warnings;  // one line each (skipped unreadable inputs, ...)
  int ranks = 0;                      // distinct ranks merged
  int world_size = -1;
  int64_t collectives = 0;
  int64_t transfers = 0;
  std::vector<int> cut_off_ranks;
  std::vector<int> missing_ranks;
  // Inputs whose rows are in the trace (as given in MergeOptions::inputs): what a caller may
  // remove after the merge, and nothing else.
  std::vector<std::string> merged_files;
  // The flight recorder's ring files (beside the rank files: flight-<pid>-<start>.flight) whose
  // contents are in the trace: removable with their rank files.
  std::vector<std::string> merged_rings;
  // Ranks (and their files) whose rank file had not been closed and whose writer, on this host,
  // was still running when merged: not cut off (they go on), but incomplete.
  std::vector<int> live_ranks;
  std::vector<std::string> live_files;
  // Inputs left out as copies of another input (same rank, host, pid and start): (left out, kept).
  std::vector<std::pair<std::string, std::string>> duplicates;
};

MergeResult mergeRankFiles(const MergeOptions& options);

// What a rank file says about the process that wrote it, read without a quick_check (cheap
// enough to poll a live file). False with *error (naming the file) when it cannot be read.
struct RankFileStatus {
  std::string run_id;   // meta run_id ("" when none)
  std::string host;     // rank.host
  int64_t pid = -1;     // rank.pid
  int64_t start_unix_ns = 0;
  bool merged = false;  // a merged trace, not a rank file
  bool clean = false;   // meta end_state = 'clean': its writer closed it
};
bool readRankFileStatus(const std::string& path, RankFileStatus* out, std::string* error);

// Whether the process that wrote a rank file may still be writing it: the file was not closed,
// it was written on this host, and a process with its pid runs that started no later than the
// file did (a pid reused since is not it).
bool writerMayBeAlive(const RankFileStatus& status);

// Whether `path` is another program's SQLite database (its header's application id is not
// ringside's); false for a ringside file and for anything that is not an SQLite file (damaged).
// A rank file still being written (WAL mode) may not show its application id in the main file
// yet: callers check the name too.
bool isForeignFile(const std::string& path);

}  // namespace ringside::storage
