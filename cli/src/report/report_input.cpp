#include "report/report_input.h"

#include <filesystem>

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
                                                      bool transfers_checked_by_reading) {
  if (!traceFileExists(path, error)) return nullptr;
  std::string why;
  storage::TraceOpenOptions open_options;
  open_options.transfers_checked_by_reading = transfers_checked_by_reading;
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

}  // namespace ringside::cli
