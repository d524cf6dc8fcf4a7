#include "report/report_input.h"

#include <filesystem>
#include <system_error>

namespace ringside::cli {

std::unique_ptr<storage::TraceReader> openReportTrace(const std::string& path, std::string* error) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    *error = path + ": no such file";
    return nullptr;
  }
  if (std::filesystem::is_directory(path, ec)) {
    *error = path + ": is a folder, not a trace (merge it first: ringside merge " + path + ")";
    return nullptr;
  }
  std::string why;
  std::unique_ptr<storage::TraceReader> reader = storage::TraceReader::open(path, &why);
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
