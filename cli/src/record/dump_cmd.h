// cli/record/dump_cmd.h — `ringside dump DIR [--rank R]`: a flight-recorder dump of a running
// (or hung, or dead) job, from outside: stamps a `request` dump into the rings in the rank folder
// and prints each rank's state (docs/flight-recorder.md). The job is never signalled.
#pragma once

#include <span>
#include <string>

namespace ringside::cli {

int runDump(std::span<const std::string> args);

}  // namespace ringside::cli
