#include "record/merge_cmd.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <map>
#include <set>
#include <system_error>

#include "record/merge_runner.h"
#include "record/record.h"
#include "ringside/analyzer/summary.h"
#include "ringside/fileio/output_file.h"
#include "ringside/storage/merge.h"
#include "ringside/storage/stage_timings.h"
#include "ringside/storage/trace_reader.h"
#include "ringside/storage/two_threads.h"

namespace ringside::cli {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kPrefix = "ringside merge: ";

std::vector<OptionSpec> mergeSpecs(MergeCliOptions* o) {
  return {
      {"output", 'o', "TRACE.sqlite", "trace to write (default: <dir>.sqlite or merged.sqlite)",
       storeText(&o->output)},
      {"force", 'f', "", "overwrite an existing trace", setFlag(&o->force)},
      {"keep-going", 'k', "", "skip inputs that cannot be read instead of failing",
       setFlag(&o->keep_going)},
      {"run-id", 0, "ID", "merge only the rank files of run ID (their meta run_id)",
       [o](std::string_view value, std::string* error) {
         o->run_id_set = true;
         return storeText(&o->run_id)(value, error);
       }},
      {"quiet", 'q', "", "do not print the summary", setFlag(&o->quiet)},
      {"progress", 0, "",
       "progress (input k of N, rows/s) each second, also without a terminal",
       setFlag(&o->progress)},
      {"realign", 0, "",
       "the INPUT is a merged trace: fit its clock model again and store it in place "
       "(docs/clock-alignment.md)",
       setFlag(&o->realign)},
      {"clock-evidence", 0, "LIST",
       "bounds that align the hosts' clocks: calls,messages (default), calls, messages, none "
       "(wall clocks only)",
       [o](std::string_view value, std::string* error) {
         o->calls_evidence = value == "calls" || value == "calls,messages" ||
                             value == "messages,calls";
         o->messages_evidence = value == "messages" || value == "calls,messages" ||
                                value == "messages,calls";
         if (!o->calls_evidence && !o->messages_evidence && value != "none") {
           *error = "--clock-evidence takes calls,messages, calls, messages or none";
           return false;
         }
         return true;
       }},
  };
}

bool samePath(const fs::path& a, const fs::path& b) {
  std::error_code ec1;
  std::error_code ec2;
  return fs::weakly_canonical(a, ec1) == fs::weakly_canonical(b, ec2) && !ec1 && !ec2;
}

// Whether `name` is a node folder of `record --nnodes`: "node-" and digits.
bool isNodeFolderName(const std::string& name) {
  return name.size() > 5 && name.compare(0, 5, "node-") == 0 &&
         name.find_first_not_of("0123456789", 5) == std::string::npos;
}

// The node folders (node-K) directly inside `dir`, in node order.
std::vector<fs::path> nodeFolders(const std::string& dir) {
  std::vector<std::pair<long, fs::path>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (isNodeFolderName(name) && entry.is_directory(ec) && name.size() < 15)
      found.emplace_back(std::stol(name.substr(5)), entry.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto& [node, path] : found) out.push_back(std::move(path));
  return out;
}

// Expands folders into their rank files (a folder's own and those of its node-K folders, as
// `record --nnodes` lays them out); reports a missing input or an empty folder.
// The files found in folders go to *in_folders too (a merged trace there is left out: only one
// given by name is merged).
bool expandInputs(const MergeCliOptions& options, std::vector<std::string>* files,
                  std::set<std::string>* in_folders, std::string* error) {
  for (const std::string& input : options.inputs) {
    std::error_code ec;
    fs::file_status status = fs::status(input, ec);
    if (ec || !fs::exists(status)) {
      *error = input + ": no such file or folder";
      return false;
    }
    if (!fs::is_directory(status)) {
      files->push_back(input);
      continue;
    }
    std::vector<std::string> found;
    if (!listRankFiles(input, &found, error)) return false;
    for (const fs::path& node : nodeFolders(input)) {
      std::vector<std::string> of_node;
      if (!listRankFiles(node.string(), &of_node, error)) return false;
      found.insert(found.end(), of_node.begin(), of_node.end());
    }
    size_t before = files->size();
    for (std::string& file : found) {
      // A re-merge into the same folder must not read its own output.
      if (!options.output.empty() && samePath(file, options.output)) continue;
      in_folders->insert(file);
      files->push_back(std::move(file));
    }
    if (files->size() == before) {
      *error = input + ": no rank files (*.sqlite) in this folder or its node-K folders";
      return false;
    }
  }
  return true;
}

// What checkInputs leaves for the merge.
struct CheckedInputs {
  std::vector<std::string> usable;
  // One file per run id seen (a file without a run id, from a job started by hand, goes with
  // any run): two runs' rank files in one trace would pair calls that never met.
  std::map<std::string, std::string> first_of_run;
  size_t other_runs = 0;
  std::vector<std::pair<std::string, std::string>> skipped;  // (file, why): listed in the meta
};

// Checks every input before merging, so a bad one is named on its own line (or skipped with
// --keep-going) instead of failing deep in the merge. An exit status, or -1 to go on.
int checkInputs(const MergeCliOptions& options, const std::vector<std::string>& files,
                const std::set<std::string>& in_folders, CheckedInputs* c) {
  // RINGSIDE_TIMINGS: one line for the run-id pass's opens, not one per input (16,384 at 16 k).
  storage::StageTally opens("open");
  auto take = [&](const std::string& file, const std::string& run_id) {
    if (options.run_id_set && run_id != options.run_id) {
      ++c->other_runs;
      return;
    }
    if (!run_id.empty()) c->first_of_run.emplace(run_id, file);
    c->usable.push_back(file);
  };
  std::vector<std::pair<std::string, std::string>> merged_in_folders;  // (file, run id)
  // Every file's meta is read on two threads (1,024 opens: ~0.4 CPU-s), then taken in order as
  // before: the same lines, the same first error.
  struct Read {
    std::string run_id, why;
    bool merged = false, ok = false;
  };
  std::vector<Read> read(files.size());
  storage::forEachIndexOnTwoThreads(
      files.size(),
      [&](size_t i) {
        read[i].ok = readRunId(files[i], &read[i].run_id, &read[i].why, &read[i].merged);
      },
      {}, "open");
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string& file = files[i];
    if (samePath(file, options.output))
      return fail(kPrefix, file + " is also the output; pick another -o", kExitUsage);
    const std::string& why = read[i].why;
    const std::string& run_id = read[i].run_id;
    const bool merged = read[i].merged;
    if (read[i].ok) {
      if (merged && in_folders.count(file)) {
        merged_in_folders.emplace_back(file, run_id);
        continue;
      }
      take(file, run_id);
    } else if (in_folders.count(file) &&
               !parseRankFileName(fs::path(file).filename().string(), nullptr, nullptr) &&
               storage::isForeignFile(file)) {
      // Found in a folder, not given by name: another program's database (the job's own
      // results.sqlite beside the rank files) is no input.
      std::cerr << kPrefix << "left out " << file << ": not a ringside file\n";
    } else if (options.keep_going) {
      std::cerr << kPrefix << "skipping an input: " << why << "\n";  // `why` names the file
      c->skipped.emplace_back(file, why);
    } else {
      return fail(kPrefix, why);
    }
  }
  // Merged traces found in the folders: a folder of node traces (the per-node merges' outputs,
  // docs/multi-node.md) when the inputs hold nothing else, merged; else an earlier merge's
  // output among the rank files (its ranks are theirs), left out, in one line.
  if (c->usable.empty() && c->other_runs == 0 && c->skipped.empty()) {
    for (const auto& [file, run_id] : merged_in_folders) take(file, run_id);
  } else if (!merged_in_folders.empty()) {
    std::cerr << kPrefix << "left out " << merged_in_folders.size()
              << " merged trace(s) in the input folder(s), e.g. " << merged_in_folders.front().first
              << " (give them by name to merge them)\n";
  }
  return -1;
}

}  // namespace

ParseStatus parseMergeArgs(std::span<const std::string> args, MergeCliOptions* out,
                           std::string* error) {
  *out = MergeCliOptions{};
  std::vector<OptionSpec> specs = mergeSpecs(out);
  ParseStatus status = parseOptions(args, specs, Positionals::kInterleaved, &out->inputs, error);
  if (status == ParseStatus::kOk && out->inputs.empty()) {
    *error = "no inputs (usage: ringside merge [options] RANK_FILE... | DIR)";
    return ParseStatus::kError;
  }
  return status;
}

std::string defaultMergeOutput(const std::vector<std::string>& inputs) {
  std::error_code ec;
  if (inputs.size() == 1 && fs::is_directory(inputs.front(), ec)) {
    fs::path dir = fs::path(inputs.front()).lexically_normal();
    if (!dir.has_filename()) dir = dir.parent_path();  // "ranks/" -> "ranks"
    if (dir.filename() == "." || dir.filename() == ".." || dir.empty()) {
      fs::path canonical = fs::weakly_canonical(dir, ec);
      if (!ec && canonical.has_filename()) dir = canonical;
    }
    if (dir.has_filename() && dir.filename() != "." && dir.filename() != "..") {
      return dir.string() + ".sqlite";
    }
  }
  return "merged.sqlite";
}

align::AlignOptions alignOptions(const MergeCliOptions& options) {
  align::AlignOptions o;
  o.use_calls = options.calls_evidence;
  o.use_messages = options.messages_evidence;
  return o;
}

// `merge --realign TRACE`: the clock model again (e.g. a trace merged by an older ringside, or
// after changing how alignment works); the rows stay as they are.
int runRealign(const MergeCliOptions& options) {
  if (options.inputs.size() != 1) {
    return fail(kPrefix, "--realign takes one merged trace", kExitUsage);
  }
  if (!options.output.empty()) {
    return fail(kPrefix, "--realign changes the trace in place; leave out -o", kExitUsage);
  }
  const std::string& trace = options.inputs.front();
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(trace, ec))) {
    return fail(kPrefix, trace + ": not a regular file (a merged trace)");
  }
  if (!alignClocks(trace, kPrefix, alignOptions(options))) return kExitDataError;
  std::cerr << kPrefix << "clock model of " << trace << " written\n";
  return kExitOk;
}

std::string mergeHelp() {
  MergeCliOptions scratch;
  return "Usage: ringside merge [options] INPUT...\n"
         "\n"
         "Merges rank files into one trace, as `ringside record` does after a job. An INPUT is\n"
         "a rank file or a folder of them (e.g. the one kept by `record --keep-rank-files`),\n"
         "or a trace merged before (e.g. one per node, merged in parallel): the result equals\n"
         "one merge of all the rank files. A merged trace and another input holding the same\n"
         "rank are an error; an exact copy of a rank file (same rank, host, pid, start) is\n"
         "merged once. Without -k, an input that cannot be used fails the merge.\n"
         "Rank files of different runs (meta run_id) are never merged into one trace.\n"
         "The merged trace gets a clock model that puts every host's times on one time line\n"
         "(docs/clock-alignment.md); `merge --realign TRACE` fits it again in place.\n"
         "Exit status: 0 merged, 1 an input or the output could not be used, 2 bad usage.\n"
         "\n" +
         formatOptionsHelp(mergeSpecs(&scratch));
}

int runMerge(std::span<const std::string> args) {
  MergeCliOptions options;
  if (int code = parseVerbArgs(args, parseMergeArgs, mergeHelp, kPrefix, &options); code >= 0)
    return code;
  if (options.realign) return runRealign(options);
  if (options.output.empty()) options.output = defaultMergeOutput(options.inputs);

  std::string error;
  std::vector<std::string> files;
  std::set<std::string> in_folders;
  if (!expandInputs(options, &files, &in_folders, &error)) return fail(kPrefix, error);
  // An input file (named, or found in an input folder) is never the output, --force or not:
  // by device and inode, so also a link to one. expandInputs leaves out the output when it lies
  // in an input folder (an earlier merge's output, replaced with -f); a rank file there is an
  // input all the same.
  std::error_code ec;
  std::vector<std::string> inputs = files;
  std::string output_run_id, output_why;
  bool output_merged = false;
  if (fs::exists(options.output, ec) &&
      readRunId(options.output, &output_run_id, &output_why, &output_merged) && !output_merged)
    inputs.insert(inputs.end(), options.inputs.begin(), options.inputs.end());
  if (int code = refuseOutputsThatAreInputs(kPrefix, {options.output}, inputs); code >= 0)
    return code;
  if (!options.force && fs::exists(options.output, ec))
    return fail(kPrefix, options.output + " exists (use --force to overwrite)");
  // Even with --force, only a regular file is replaced (never a link, a device or a folder).
  if (!fileio::checkOutputTarget(options.output, /*overwrite=*/true, &error))
    return fail(kPrefix, error);

  CheckedInputs checked;
  if (int code = checkInputs(options, files, in_folders, &checked); code >= 0) return code;
  std::vector<std::string>& usable = checked.usable;
  const std::map<std::string, std::string>& first_of_run = checked.first_of_run;
  const size_t other_runs = checked.other_runs;
  if (first_of_run.size() > 1) {
    auto a = first_of_run.begin();
    auto b = std::next(a);
    return fail(kPrefix, "the inputs are rank files of " + std::to_string(first_of_run.size()) +
                             " runs, e.g. " + a->second + " (run " + a->first + ") and " +
                             b->second + " (run " + b->first +
                             "); merge one run at a time with --run-id ID");
  }
  if (other_runs > 0) {
    std::cerr << kPrefix << "left out " << other_runs << " rank file(s) of other runs than "
              << options.run_id << "\n";
  }
  if (usable.empty() && options.run_id_set)
    return fail(kPrefix, "none of the inputs is a rank file of run " + options.run_id);
  if (usable.empty()) return fail(kPrefix, "none of the inputs could be read");

  storage::MergeOptions merge;
  merge.inputs = std::move(usable);
  merge.output = options.output;
  merge.overwrite = options.force;
  merge.skipped_inputs = std::move(checked.skipped);
  // The run's id on the trace, as `record` writes it (one run at most, checked above).
  if (options.run_id_set) {
    merge.extra_meta.emplace_back("run_id", options.run_id);
  } else if (first_of_run.size() == 1) {
    merge.extra_meta.emplace_back("run_id", first_of_run.begin()->first);
  }
  merge.merged_inputs = true;
  merge.keep_going = options.keep_going;
  storage::MergeResult result;
  {
    // Interrupted: no temporary file of tens of MB is left beside the output.
    MergeSignalGuard guard("");
    result = mergeWithProgress(std::move(merge), kPrefix, alignOptions(options), options.progress);
  }
  if (!result.ok) return fail(kPrefix, std::string("merge failed: ") + result.error);
  std::cerr << kPrefix << "wrote " << options.output << " (" << result.ranks << " rank"
            << (result.ranks == 1 ? "" : "s") << ")\n";
  if (options.quiet && !result.missing_ranks.empty()) {
    // The summary says it otherwise. A node's folder left out is the usual cause.
    std::cerr << kPrefix << "missing rank(s) " << analyzer::formatRankList(result.missing_ranks)
              << " of " << result.world_size
              << " (no rank file: a node's folder not given, or the rank wrote nothing)\n";
  }
  if (!result.live_ranks.empty()) {
    std::cerr << kPrefix << "rank(s) " << analyzer::formatRankList(result.live_ranks)
              << " were still being written (their processes are running): their rows end "
                 "where this merge read them; merge again when they have ended\n";
  }
  if (!options.quiet) printTraceSummary(options.output, kPrefix);
  return kExitOk;
}

}  // namespace ringside::cli
