// storage/src/merge.cpp — merges rank files into one trace.
//
// Two passes over the inputs:
//  1. validate and probe every input through the defensive read-only opener (rank row(s),
//     end_state, row counts); unusable inputs are skipped with a warning naming the file;
//  2. copy each usable input (sorted by rank, then start time): the input is attached read-only
//     to the output connection and each table copied by one INSERT ... SELECT inside one
//     transaction (one read snapshot of the input), string ids remapped through a temporary
//     table, collective ids moved by a delta. No row passes through this process: memory does
//     not grow with the number of inputs or rows. The indexes whose keys follow the copy order
//     are kept up as rows append; the others are built once, at the end (schema.cpp).
// A merged trace may be an input too (MergeOptions::merged_inputs): its rows already carry their
// ranks and their files' names, and it is copied like a rank file otherwise. The output is built in a temporary file created exclusively
// beside <output> (ringside/fileio/output_file.h), indexed, fsynced and only then
// moved to <output>; nothing but a regular file there is ever replaced.
// The steps are apart (merge_internal.h lists the files); this file is the driver.
#include "ringside/storage/merge.h"

#include <algorithm>
#include <map>
#include <new>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "merge_internal.h"
#include "ringside/storage/stage_timings.h"
#include "ringside/storage/two_threads.h"

namespace ringside::storage {
namespace merging {

// Pass 1: probes every input; the unusable ones go to *skipped (basename, why) with a warning.
// False (res_.error set) when none is usable.
bool Merger::probeAll(std::vector<Input>* inputs,
                      std::vector<std::pair<std::string, std::string>>* skipped) {
  for (const auto& [path, why] : opt_.skipped_inputs)
    skipped->emplace_back(detail::baseName(path), skipReason(path, why));
  // The inputs are probed on two threads (opening 1,024 files is ~0.7 CPU-s), the results taken
  // in input order as before: the same warnings, and without -k the same first failure.
  struct Probed {
    Input in;
    std::string why;
    bool ok = false;
  };
  std::vector<Probed> probed(opt_.inputs.size());
  forEachIndexOnTwoThreads(
      probed.size(),
      [&](size_t i) {
        Probed& p = probed[i];
        p.ok = probe(opt_.inputs[i], opt_.merged_inputs, &p.in, &p.why);
      },
      [&](size_t i) { return !probed[i].ok && !opt_.keep_going; });
  for (size_t i = 0; i < probed.size(); ++i) {
    const std::string& path = opt_.inputs[i];
    Input& in = probed[i].in;
    const std::string& why = probed[i].why;
    if (probed[i].ok) {
      total_ += in.rows;
      // What a merged input's own merge skipped is still missing from this trace.
      skipped->insert(skipped->end(), in.skipped.begin(), in.skipped.end());
      inputs->push_back(std::move(in));
    } else if (!opt_.keep_going) {
      res_.error = detail::oneLine(why + " (use -k to merge the other inputs without it)");
      return false;
    } else {
      res_.warnings.push_back("skipped " + why);
      skipped->emplace_back(detail::baseName(path), skipReason(path, why));
    }
  }
  if (inputs->empty()) {
    res_.error = detail::oneLine("merge: no usable input among " + std::to_string(opt_.inputs.size()) +
                                 " file(s); first problem: " + res_.warnings.front());
    return false;
  }
  std::stable_sort(inputs->begin(), inputs->end(), [](const Input& a, const Input& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.start_unix_ns < b.start_unix_ns;
  });
  dropCopies(inputs);
  for (Input& in : *inputs) {
    if (in.merged || in.clean) continue;
    RankFileStatus st;
    st.host = in.host;
    st.pid = in.pid;
    st.start_unix_ns = in.start_unix_ns;
    in.live = writerMayBeAlive(st);
  }
  for (size_t i = 1; i < inputs->size(); ++i) {
    Input& in = (*inputs)[i];
    if (in.rank == (*inputs)[i - 1].rank) in.copy_index = (*inputs)[i - 1].copy_index + 1;
  }
  inputs_ = static_cast<int>(inputs->size());
  return true;
}

// Rank files that are copies of one another (the same rank, host, pid and start: one process's
// file, e.g. `cp`'d beside it) would put that rank's rows in twice: only the one with the most
// rows is kept (the first of equals), with a warning. Inputs are sorted by rank and start.
void Merger::dropCopies(std::vector<Input>* inputs) {
  std::vector<Input> kept;
  kept.reserve(inputs->size());
  for (Input& in : *inputs) {
    Input* same = nullptr;
    if (!in.merged && in.pid >= 0) {
      for (size_t j = kept.size(); j-- > 0;) {
        Input& k = kept[j];
        if (k.rank != in.rank) break;
        if (!k.merged && k.pid == in.pid && k.host == in.host &&
            k.start_unix_ns == in.start_unix_ns) {
          same = &k;
          break;
        }
      }
    }
    if (same == nullptr) {
      kept.push_back(std::move(in));
      continue;
    }
    if (in.rows > same->rows) std::swap(*same, in);  // `in` is now the one left out
    total_ -= in.rows;
    res_.duplicates.emplace_back(in.path, same->path);
    res_.warnings.push_back("left out " + in.path + ": a copy of " + same->path + " (rank " +
                            std::to_string(in.rank) +
                            ", the same process's file); its rows are merged once");
  }
  *inputs = std::move(kept);
}

// A rank in a merged input and in any other input would be merged twice: an error. (Rank files of
// one rank among themselves are kept, with a warning, as before.) Inputs are sorted by first rank.
bool Merger::checkRankOverlap(const std::vector<Input>& inputs) {
  std::unordered_map<int, size_t> holder;  // rank -> the first input holding it
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Input& in = inputs[i];
    const std::vector<int> own = in.merged ? in.ranks : std::vector<int>{in.rank};
    for (int r : own) {
      auto [it, fresh] = holder.emplace(r, i);
      if (fresh || it->second == i) continue;
      const Input& other = inputs[it->second];
      if (!in.merged && !other.merged) continue;
      res_.error = detail::oneLine("merge: rank " + std::to_string(r) + " is in both " +
                                   other.path + " and " + in.path + "; give each rank once");
      return false;
    }
  }
  return true;
}

MergeResult Merger::run() {
  if (opt_.inputs.empty()) {
    res_.error = "merge: no input files";
    return res_;
  }
  if (opt_.output.empty()) {
    res_.error = "merge: no output path";
    return res_;
  }
  // Fail before reading anything when the output cannot be used (checked again at the end).
  if (std::string why; !fileio::checkOutputTarget(opt_.output, opt_.overwrite, &why)) {
    res_.error = detail::oneLine(why);
    return res_;
  }

  // What a merge into the same output killed earlier left (tens of MB, never renamed).
  for (const std::string& name : removeStaleTemporaries(opt_.output))
    res_.warnings.push_back("removed " + name + ", left by an interrupted merge");

  // Pass 1: validate and probe.
  std::vector<Input> inputs;
  // (basename, why) of every unusable input: the caller's first, then ours.
  std::vector<std::pair<std::string, std::string>> skipped;
  StageTimer probe_timer("probe");
  if (!probeAll(&inputs, &skipped) || !checkRankOverlap(inputs)) return res_;
  probe_timer.stop();

  auto abandon = [&]() {
    removeOutput();
    res_.ok = false;
    return res_;
  };
  if (!openOutput()) return abandon();

  if (opt_.on_copy_plan) {
    std::vector<MergePlanInput> plan;
    plan.reserve(inputs.size());
    for (const Input& in : inputs) plan.push_back({in.path, in.merged, in.live, in.rank_infos});
    opt_.on_copy_plan(plan);
  }

  // Pass 2: copy.
  StageTimer copy_timer("copy");
  std::map<int, int> files_per_rank;
  std::set<int> cut_off, live;
  int world = -1;
  for (size_t index = 0; index < inputs.size(); ++index) {
    const Input& in = inputs[index];
    bool input_failed = false;
    std::string why;
    const int64_t transfers_before = res_.transfers;
    const bool copied = InputCopy(*this, in, &input_failed, &why).run();
    if (opt_.on_input_copied) opt_.on_input_copied(index, copied, res_.transfers - transfers_before);
    if (!copied) {
      if (!input_failed) return abandon();  // the output failed: res_.error is set
      if (!opt_.keep_going) {
        res_.error = detail::oneLine(why + " (use -k to merge the other inputs without it)");
        return abandon();
      }
      res_.warnings.push_back("skipped " + why);
      skipped.emplace_back(detail::baseName(in.path), skipReason(in.path, why));
      continue;
    }
    ++inputs_done_;
    if (in.merged) {
      for (int r : in.ranks) ++files_per_rank[r];
      cut_off.insert(in.cut_off.begin(), in.cut_off.end());
    } else {
      ++files_per_rank[in.rank];
      if (in.live) {
        live.insert(in.rank);
        res_.live_files.push_back(in.path);
      } else if (!in.clean) {
        cut_off.insert(in.rank);
      }
    }
    res_.merged_files.push_back(in.path);
    if (!in.merged && !copyRing(in)) return abandon();
    world = std::max(world, in.world_size);
  }
  progress();  // every input copied; the indexes come next
  copy_timer.stop();
  if (files_per_rank.empty()) {
    res_.error = detail::oneLine("merge: no usable input among " + std::to_string(opt_.inputs.size()) +
                                 " file(s); first problem: " + res_.warnings.front());
    return abandon();
  }
  for (const auto& [rank, n] : files_per_rank) {
    if (n > 1) {
      res_.warnings.push_back("rank " + std::to_string(rank) + " appears in " + std::to_string(n) +
                              " files; rows of all of them are kept");
    }
  }
  res_.ranks = static_cast<int>(files_per_rank.size());
  res_.world_size = world;
  // A rank with a live file and a cut-off one (a restart) is still being written.
  for (int r : live) cut_off.erase(r);
  res_.cut_off_ranks.assign(cut_off.begin(), cut_off.end());
  res_.live_ranks.assign(live.begin(), live.end());
  for (int r = 0; r < world; ++r) {
    if (!files_per_rank.count(r)) res_.missing_ranks.push_back(r);
  }

  {
    StageTimer timer("meta+indexes");
    if (!writeMergeMeta(skipped)) return abandon();
  }
  progress();
  if (!finish()) return abandon();
  res_.ok = true;
  return res_;
}


}  // namespace merging

MergeResult mergeRankFiles(const MergeOptions& options) {
  try {
    merging::Merger m(options);
    return m.run();
  } catch (const std::bad_alloc&) {
    MergeResult r;
    r.error = options.output + ": merge ran out of memory";
    return r;
  } catch (const std::exception& e) {
    MergeResult r;
    r.error = detail::oneLine(options.output + ": merge failed: " + e.what());
    return r;
  }
}


}  // namespace ringside::storage
