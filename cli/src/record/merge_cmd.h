// cli/record/merge_cmd.h — `ringside merge`: merge rank files by hand.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "options.h"

namespace ringside::cli {

struct MergeCliOptions {
  std::string output;  // "" = <dir>.sqlite for one folder input, else merged.sqlite
  bool force = false;
  bool keep_going = false;  // skip unreadable inputs instead of failing
  bool quiet = false;
  bool progress = false;  // --progress: a progress line even when stderr is no terminal
  bool run_id_set = false;  // --run-id: only the rank files of that run
  std::string run_id;
  bool realign = false;
  bool calls_evidence = true;     // --clock-evidence: which bounds align the clocks
  bool messages_evidence = true;  // --realign TRACE: fit and store the clock model of a merged trace again
  std::vector<std::string> inputs;  // rank files, merged traces and/or folders of rank files
};

ParseStatus parseMergeArgs(std::span<const std::string> args, MergeCliOptions* out,
                           std::string* error);

// The output used when -o is not given.
std::string defaultMergeOutput(const std::vector<std::string>& inputs);

std::string mergeHelp();
int runMerge(std::span<const std::string> args);

}  // namespace ringside::cli
