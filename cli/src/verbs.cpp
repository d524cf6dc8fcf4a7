#include "verbs.h"

#include <iostream>
#include <vector>

#include "bench/bench.h"
#include "export/export.h"
#include "options.h"
#include "record/dump_cmd.h"
#include "record/merge_cmd.h"
#include "record/record.h"
#include "report/diff_cmd.h"
#include "simulate/simulate.h"
#include "report/report.h"
#include "view_cmd.h"

namespace ringside::cli {
namespace {

int runHelp(std::span<const std::string> args);

constexpr Verb kVerbs[] = {
    {"record", "run a job with tracing, merge its rank files, print a summary", runRecord},
    {"merge", "merge rank files (or a folder of them) into one trace", runMerge},
    {"dump", "a running job's flight-recorder state, per rank, from its rank folder", runDump},
    {"bench", "all-reduce bandwidth: ringside's ring and tree and Gloo, side by side", runBench},
    {"report", "where a trace's collective time went: text, md, html, json, csv", runReport},
    {"diff", "A vs B by op and size: which trace is faster where, and by how much", runDiff},
    {"simulate", "a step's all-reduces per algorithm on a cluster you describe, 8 to 16,384 ranks", runSimulate},
    {"export", "a trace as Chrome/Perfetto trace-event JSON (--perfetto)", runExport},
    {"view", "open traces in the desktop viewer (timeline of ranks and links)", runView},
    {"help", "show help for ringside or for one command", runHelp},
};

int runHelp(std::span<const std::string> args) {
  if (args.empty() || args.front() == "--help" || args.front() == "-h") {
    std::cout << topLevelHelp();
    return kExitOk;
  }
  const Verb* verb = findVerb(args.front());
  if (verb == nullptr || verb->run == runHelp) {
    std::cerr << "ringside: no help for '" << args.front() << "': not a ringside command\n";
    return kExitUsage;
  }
  const std::vector<std::string> help_flag = {"--help"};
  return verb->run(help_flag);
}

}  // namespace

std::span<const Verb> verbs() { return kVerbs; }

const Verb* findVerb(std::string_view name) {
  for (const Verb& verb : kVerbs) {
    if (verb.name == name) return &verb;
  }
  return nullptr;
}

std::string topLevelHelp() {
  std::string out = "ringside " RINGSIDE_VERSION
                    " - where the collective-communication time of a distributed job goes\n"
                    "\n"
                    "Usage: ringside COMMAND [options] [ARGS...]\n"
                    "       ringside --version\n"
                    "\n"
                    "Commands:\n";
  for (const Verb& verb : kVerbs) {
    out += "  " + std::string(verb.name) + std::string(10 - verb.name.size(), ' ') +
           std::string(verb.summary) + "\n";
  }
  out +=
      "\n"
      "Run 'ringside COMMAND --help' for a command's options.\n"
      "Example: ringside record --ranks 2 -o run.sqlite -- /usr/bin/python3 train.py\n";
  return out;
}

int runCli(std::span<const std::string> args) {
  if (args.empty()) {
    std::cerr << topLevelHelp();
    return kExitUsage;
  }
  const std::string& first = args.front();
  if (first == "--help" || first == "-h") {
    std::cout << topLevelHelp();
    return kExitOk;
  }
  if (first == "--version" || first == "-V") {
    std::cout << "ringside " RINGSIDE_VERSION "\n";
    return kExitOk;
  }
  const Verb* verb = findVerb(first);
  if (verb == nullptr) {
    std::cerr << "ringside: unknown " << (first.starts_with("-") ? "option" : "command") << " '"
              << first << "' (see 'ringside --help')\n";
    return kExitUsage;
  }
  return verb->run(args.subspan(1));
}

}  // namespace ringside::cli
