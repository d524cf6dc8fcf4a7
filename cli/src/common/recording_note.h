// cli/common/recording_note.h — the line that says a recording was bounded, shared by the run
// summary (record, merge) and `ringside report`.
#pragma once

#include <map>
#include <string>

namespace ringside::cli {

// One line (not wrapped) when the trace's meta says the recording was bounded (a window, or a
// detail level that left messages out or added them up; docs/recording.md), else "". Shared by
// the run summary and `ringside report`.
std::string recordingNote(const std::map<std::string, std::string>& meta);

}  // namespace ringside::cli
