#include "record/merge_runner.h"



#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <system_error>
#include <utility>

#include "common/recording_note.h"
#include "common/text_wrap.h"
#include "record/summary_text.h"
#include "ringside/analyzer/summary.h"
#include "ringside/storage/stage_timings.h"
#include "ringside/finish/finish.h"
#include "ringside/format/text.h"
#include "ringside/storage/trace_reader.h"

namespace ringside::cli {
namespace fs = std::filesystem;

namespace {

// "\rmerging: input 3 of 16, 42%, 2.1 M rows/s" on a terminal, only once the merge has taken a
// while, so quick merges leave no trace on screen. With `always` (merge --progress) it is shown
// when stderr is no terminal too, as one line per second.
class ProgressLine {
 public:
  ProgressLine(bool always, std::string_view prefix)
      : terminal_(isatty(STDERR_FILENO) == 1),
        enabled_(terminal_ || always),
        prefix_(prefix),
        start_(Clock::now()) {}
  ~ProgressLine() {
    if (shown_ && terminal_) std::cerr << "\r" << std::string(width_, ' ') << "\r" << std::flush;
  }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  void update(const storage::MergeProgress& p) {
    if (!enabled_ || p.total <= 0) return;
    const Clock::time_point now = Clock::now();
    if (!shown_ && now - start_ < std::chrono::milliseconds(500)) return;
    // A terminal line is redrawn at most 10 times a second, a log line once a second.
    if (shown_ && now - last_ < std::chrono::milliseconds(terminal_ ? 100 : 1000)) return;
    shown_ = true;
    last_ = now;
    const int percent = static_cast<int>(std::clamp<int64_t>(p.done * 100 / p.total, 0, 100));
    const double seconds = std::chrono::duration<double>(now - start_).count();
    char line[160];
    std::snprintf(line, sizeof line, "merging: input %d of %d, %d%%, %.2f M rows/s",
                  std::min(p.input + 1, p.inputs), p.inputs, percent,
                  seconds > 0 ? static_cast<double>(p.done) / seconds / 1e6 : 0.0);
    const std::string text = line;
    if (terminal_) {
      width_ = std::max(width_, text.size());
      std::cerr << "\r" << text << std::string(width_ - text.size(), ' ') << std::flush;
    } else {
      std::cerr << prefix_ << text << "\n";
    }
  }

 private:
  using Clock = std::chrono::steady_clock;
  bool terminal_;
  bool enabled_;
  std::string prefix_;
  bool shown_ = false;
  size_t width_ = 0;
  Clock::time_point start_, last_;
};

}  // namespace

bool listRankFiles(const std::string& dir, std::vector<std::string>* files, std::string* error) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) {
    *error = "cannot read folder " + dir + ": " + ec.message();
    return false;
  }
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) {
      *error = "cannot read folder " + dir + ": " + ec.message();
      return false;
    }
    const fs::path& path = it->path();
    std::error_code type_ec;
    if (path.extension() == ".sqlite" && fs::is_regular_file(path, type_ec)) {
      files->push_back(path.string());
    }
  }
  std::sort(files->begin(), files->end());
  return true;
}

bool readRunId(const std::string& file, std::string* run_id, std::string* error, bool* merged) {
  // Only meta is read here; the merge's probe runs the quick_check of every input (a second one
  // here cost 1.9 CPU-s on 1,024 rank files).
  storage::TraceOpenOptions open;
  open.quick_check = false;
  std::unique_ptr<storage::TraceReader> reader = storage::TraceReader::open(file, open, error);
  if (reader == nullptr) return false;
  std::map<std::string, std::string> meta = reader->meta();
  auto it = meta.find("run_id");
  *run_id = it != meta.end() ? it->second : "";
  if (merged) *merged = meta.count("merged_at_unix_ns") > 0;
  return true;
}

bool alignClocks(const std::string& trace, std::string_view prefix,
                 const align::AlignOptions& options) {
  std::string line, error;
  if (!finish::alignTrace(trace, options, &line, &error)) {
    std::cerr << prefix << error << "\n";
    return false;
  }
  if (!line.empty()) std::cerr << prefix << line << "\n";
  return true;
}

bool storeDetectedSteps(const std::string& trace, std::string_view prefix) {
  std::string error;
  if (!finish::storeSteps(trace, &error)) {
    std::cerr << prefix << error << "\n";
    return false;
  }
  return true;
}

storage::MergeResult mergeWithProgress(storage::MergeOptions options, std::string_view prefix,
                                       const align::AlignOptions& align_options,
                                       bool always_progress) {
  storage::MergeResult result;
  // The clock model and the steps go into the temporary file before it is renamed into place
  // (finish::mergeAndFinish): a trace is never published without them.
  std::string clock_line;
  options.on_temp_file = [](const std::string& temp) { MergeSignalGuard::noteTempFile(temp); };
  {
    ProgressLine progress(always_progress, prefix);
    options.progress_detail = [&progress](const storage::MergeProgress& p) { progress.update(p); };
    result = finish::mergeAndFinish(std::move(options), align_options, &clock_line);
  }
  // A failed merge is told in one line by the caller; its warnings would only bury it.
  if (result.ok) {
    for (const std::string& warning : result.warnings) std::cerr << prefix << warning << "\n";
    if (!clock_line.empty()) std::cerr << prefix << clock_line << "\n";
  }
  return result;
}

namespace {

// What the signal handler reads: written only while `g_temp_ready` is false.
char g_temp_path[4096];
char g_temp_journal[4096 + 16];
char g_guard_message[1024];
volatile sig_atomic_t g_temp_ready = 0;
constexpr int kGuardedSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_saved[std::size(kGuardedSignals)];

void onSignalDuringMerge(int sig) {
  if (g_temp_ready) {
    ::unlink(g_temp_journal);
    ::unlink(g_temp_path);
  }
  const size_t n = std::strlen(g_guard_message);
  if (n > 0) {
    ssize_t ignored = write(STDERR_FILENO, g_guard_message, n);
    (void)ignored;
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

MergeSignalGuard::MergeSignalGuard(const std::string& message) {
  std::snprintf(g_guard_message, sizeof g_guard_message, "%s", message.c_str());
  struct sigaction action {};
  action.sa_handler = onSignalDuringMerge;
  sigemptyset(&action.sa_mask);
  for (size_t i = 0; i < std::size(kGuardedSignals); ++i)
    sigaction(kGuardedSignals[i], &action, &g_saved[i]);
}

MergeSignalGuard::~MergeSignalGuard() {
  for (size_t i = 0; i < std::size(kGuardedSignals); ++i)
    sigaction(kGuardedSignals[i], &g_saved[i], nullptr);
  g_temp_ready = 0;
}

void MergeSignalGuard::noteTempFile(const std::string& path) {
  g_temp_ready = 0;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (path.empty() || path.size() >= sizeof g_temp_path) return;
  std::snprintf(g_temp_path, sizeof g_temp_path, "%s", path.c_str());
  std::snprintf(g_temp_journal, sizeof g_temp_journal, "%s-journal", path.c_str());
  std::atomic_signal_fence(std::memory_order_seq_cst);
  g_temp_ready = 1;
}

bool printTraceSummary(const std::string& trace, std::string_view prefix) {
  storage::StageTimer timer("summary");
  std::string error;
  // The trace this process has just merged and published: a quick_check would read all of it
  // again (859 MB at 1,024 ranks, ~2.5 CPU-s) before the summary reads what it needs.
  storage::TraceOpenOptions open;
  open.quick_check = false;
  std::unique_ptr<storage::TraceReader> reader = storage::TraceReader::open(trace, open, &error);
  analyzer::Summary summary;
  if (reader == nullptr || !analyzer::summarize(*reader, &summary, &error)) {
    std::cerr << prefix << "cannot summarize the trace: " << error << "\n";  // names the file
    return false;
  }
  std::cerr << formatSummary(summary);
  const std::map<std::string, std::string> meta = reader->meta();
  if (auto live = meta.find("live_ranks"); live != meta.end() && !live->second.empty()) {
    // Not cut off (nothing crashed): their processes ran on while the merge read their files.
    std::cerr << "!! RANKS STILL RUNNING when merged " << format::printableText(live->second)
              << ": their rows end where the merge read them (merge again once they have ended)\n";
  }
  const std::string note = recordingNote(meta);
  if (!note.empty()) std::cerr << format::printableText(wrapText(note, kReportWidth, "", "  "));
  return true;
}

}  // namespace ringside::cli
