// cli/verbs.h — the verbs of `ringside`, dispatched from one table.
//
// A new verb (bench, report, diff, export, view) is one entry in kVerbs
// (verbs.cpp): `ringside --help` and `ringside help VERB` list and find it
// from there.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace ringside::cli {

struct Verb {
  std::string_view name;
  std::string_view summary;                       // one line for `ringside --help`
  int (*run)(std::span<const std::string> args);  // args after the verb; handles --help
};

std::span<const Verb> verbs();
const Verb* findVerb(std::string_view name);

std::string topLevelHelp();

// The whole command line after the program name. Returns the exit status.
int runCli(std::span<const std::string> args);

}  // namespace ringside::cli
