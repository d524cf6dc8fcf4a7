// ringside: the command-line front end. Everything happens in verbs.cpp;
// this only turns argv into strings and makes sure nothing escapes as a crash,
// and that output nobody could write never reads as success.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "options.h"
#include "ringside/fileio/output_file.h"
#include "ringside/storage/two_threads.h"
#include "verbs.h"

namespace {

// "ringside VERB: " for a known verb, else "ringside: ".
std::string prefixFor(const std::vector<std::string>& args) {
  if (!args.empty() && ringside::cli::findVerb(args.front()) != nullptr)
    return "ringside " + args.front() + ": ";
  return "ringside: ";
}

}  // namespace

int main(int argc, char** argv) {
  // Before any SQLite use: no process-wide lock per allocation for the verbs' threads.
  ringside::storage::configureSqliteForThreads();
  // Every write to standard output is checked: `ringside simulate > /dev/full` exits 1 and
  // says "ringside simulate: cannot write standard output: No space left on device".
  ringside::fileio::installCheckedStandardOutput();
  std::vector<std::string> args;
  int status = ringside::cli::kExitDataError;
  try {
    args.assign(argv + (argc > 0 ? 1 : 0), argv + argc);
    status = ringside::cli::runCli(args);
  } catch (const std::exception& e) {
    std::cerr << "ringside: internal error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "ringside: internal error\n";
  }
  std::string error;
  if (ringside::fileio::standardOutputFailedUnsaid(&error)) {
    std::cerr << prefixFor(args) << error << "\n";
    if (status == ringside::cli::kExitOk) status = ringside::cli::kExitDataError;
  }
  return status;
}
