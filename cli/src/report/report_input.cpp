#include "report/report_input.h"

#include <filesystem>
#include <system_error>
#include <utility>

namespace ringside::cli {

bool traceFileExists(const std::string& path, std::string* error) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    *error = path + ": no such file";
    return false;
  }
  if (std::filesystem::is_directory(path, ec)) {
    *error = path + ": is a folder, not a trace (merge it first: ringside merge " + path + ")";
    return false;
  }
  return true;
}

std::unique_ptr<storage::TraceReader> openReportTrace(const std::string& path, std::string* error,
                                                      bool quick_check) {
  if (!traceFileExists(path, error)) return nullptr;
  std::string why;
  storage::TraceOpenOptions open_options;
  open_options.quick_check = quick_check;
  std::unique_ptr<storage::TraceReader> reader = storage::TraceReader::open(path, open_options, &why);
  if (!reader) {
    *error = why.starts_with(path) ? why : path + ": " + why;
    return nullptr;
  }
  if (reader->collectiveCount() == 0) {
    *error = path + ": the trace holds no collective calls";
    return nullptr;
  }
  return reader;
}

TraceCheck::TraceCheck(std::string path) : path_(std::move(path)) {
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error&) {
    run();
  }
}

TraceCheck::~TraceCheck() {
  if (thread_.joinable()) thread_.join();
}

void TraceCheck::run() {
  std::string why;
  ok_ = storage::TraceReader::open(path_, &why) != nullptr;
  if (!ok_) error_ = why.starts_with(path_) ? why : path_ + ": " + why;
}

bool TraceCheck::passed(std::string* error) {
  if (thread_.joinable()) thread_.join();
  if (!ok_ && error != nullptr) *error = error_;
  return ok_;
}

}  // namespace ringside::cli
