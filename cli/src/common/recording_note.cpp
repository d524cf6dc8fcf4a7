#include "common/recording_note.h"

#include <cstdint>
#include <cstdlib>

namespace ringside::cli {

std::string recordingNote(const std::map<std::string, std::string>& meta) {
  std::string window, detail;
  uint64_t calls = 0, messages = 0, totals = 0;
  for (const auto& [key, value] : meta) {
    const size_t dot = key.rfind('.');
    if (key.rfind("rank.", 0) != 0 || dot == std::string::npos) continue;
    const std::string name = key.substr(dot + 1);
    const uint64_t n = std::strtoull(value.c_str(), nullptr, 10);
    if (name == "recording_window" && window.empty()) window = value;
    if (name == "recording_detail" && detail.empty()) detail = value.substr(0, value.find(':'));
    if (name == "left_out_calls") calls += n;
    if (name == "left_out_messages") messages += n;
    if (name == "messages_in_link_totals") totals += n;
  }
  if (window.empty() && calls + messages + totals == 0) return "";
  std::string line = "recording was bounded: " + (window.empty() ? "everything" : window) +
                     "; detail " + (detail.empty() ? "messages" : detail) + "; left out " +
                     std::to_string(calls) + " calls and " + std::to_string(messages) +
                     " messages";
  if (totals > 0) line += "; " + std::to_string(totals) + " messages kept as per-link totals";
  return line + " (all ranks)";
}

}  // namespace ringside::cli
