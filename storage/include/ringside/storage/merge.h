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

namespace ringside::storage {

// Where a merge stands, for a progress line.
struct MergeProgress {
  int64_t done = 0;   // collective and transfer rows copied so far
  int64_t total = 0;  // of this many (counted before copying)
  int input = 0;      // inputs copied so far (the one being copied is input + 1)
  int inputs = 0;     // usable inputs
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
};

MergeResult mergeRankFiles(const MergeOptions& options);

}  // namespace ringside::storage
