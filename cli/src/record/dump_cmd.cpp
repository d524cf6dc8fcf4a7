// cli/src/record/dump_cmd.cpp — `ringside dump` (dump_cmd.h).
#include "record/dump_cmd.h"

#include <time.h>

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "options.h"
#include "ringside/format/units.h"
#include "ringside/storage/flight_ring.h"

namespace ringside::cli {
namespace {

namespace ring = storage::flight;
constexpr std::string_view kPrefix = "ringside dump: ";

struct DumpOptions {
  std::string dir;
  int rank = -1;  // -1: every rank
};

std::string dumpHelp() {
  return "usage: ringside dump DIR [--rank R]\n"
         "\n"
         "Stamps a flight-recorder dump (reason request) into the rings of the job recording into\n"
         "the rank folder DIR (record's --dir, default <output>.ranks), without signalling it, and\n"
         "prints each rank's last calls: the open one, how long it has been open, the step. The\n"
         "next merge stores the dump (tables flight_dump, flight_call, flight_message).\n"
         "\n";
}

ParseStatus parseDumpArgs(std::span<const std::string> args, DumpOptions* out, std::string* error) {
  const OptionSpec specs[] = {
      {"rank", 0, "R", "only rank R", storeInteger(&out->rank, 0, 1 << 20)},
  };
  std::vector<std::string> inputs;
  const ParseStatus status = parseOptions(args, specs, Positionals::kInterleaved, &inputs, error);
  if (status != ParseStatus::kOk) return status;
  if (inputs.size() != 1) {
    *error = inputs.empty() ? "expected the rank folder DIR" : "expected one rank folder";
    return ParseStatus::kError;
  }
  out->dir = inputs.front();
  return ParseStatus::kOk;
}

int64_t monotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// "rank 1 (pid 42): allreduce #12 open 4.2 s (entered, step 5); last done allreduce #11"
std::string stateLine(const ring::Snapshot& s, int64_t now) {
  std::string line = "rank " + std::to_string(s.rank) + " (pid " + std::to_string(s.pid) + ")";
  if (s.ended != ring::Ended::kRunning) line += s.ended == ring::Ended::kSignal ? " ended by a signal" : " exited";
  const storage::FlightCallRow* open = nullptr;
  const storage::FlightCallRow* done = nullptr;
  for (const storage::FlightCallRow& c : s.calls) {
    const bool is_open = c.exit_ns == storage::kNone && c.state != "failed";
    if (is_open && (open == nullptr || c.enter_ns < open->enter_ns)) open = &c;
    if (!is_open && (done == nullptr || c.exit_ns > done->exit_ns)) done = &c;
  }
  if (open != nullptr) {
    line += ": " + open->op + " #" + std::to_string(open->seq) + " on " + open->comm + " open " +
            format::duration(now - open->enter_ns) + " (" + open->state +
            (open->step != storage::kNone ? ", step " + std::to_string(open->step) : "") + ")";
  } else {
    line += ": no call open";
    if (s.step != storage::kNone) line += " (at step " + std::to_string(s.step) + ")";
  }
  if (done != nullptr) line += "; last returned " + done->op + " #" + std::to_string(done->seq) + " (" + done->state + ")";
  return line;
}

}  // namespace

int runDump(std::span<const std::string> args) {
  DumpOptions options;
  if (int code = parseVerbArgs(args, parseDumpArgs, dumpHelp, kPrefix, &options); code >= 0) return code;
  std::error_code ec;
  if (!std::filesystem::is_directory(options.dir, ec))
    return fail(kPrefix, options.dir + ": not a folder");
  const std::vector<std::string> rings = ring::listRings(options.dir);
  if (rings.empty()) return fail(kPrefix, options.dir + ": no flight rings (not a rank folder of a running job?)");
  const int64_t now = monotonicNs();
  int dumped = 0;
  for (const std::string& path : rings) {
    ring::Mapping m;
    std::string error;
    if (!m.open(path, true, &error)) {
      std::cerr << kPrefix << error << "\n";
      continue;
    }
    const int32_t rank = m.layout()->header.rank.load();
    if (options.rank >= 0 && rank != options.rank) continue;
    ring::stampDump(m.layout(), ring::Reason::kRequest, now, "ringside dump");
    ring::Snapshot s;
    ring::snapshot(m.layout(), &s);
    std::cout << stateLine(s, now) << "\n";
    ++dumped;
  }
  if (dumped == 0) return fail(kPrefix, "no ring of rank " + std::to_string(options.rank) + " in " + options.dir);
  return kExitOk;
}

}  // namespace ringside::cli
