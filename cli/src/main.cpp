// ringside: the command-line front end. Everything happens in verbs.cpp;
// this only turns argv into strings and makes sure nothing escapes as a crash.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "options.h"
#include "verbs.h"

int main(int argc, char** argv) {
  try {
    std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
    return ringside::cli::runCli(args);
  } catch (const std::exception& e) {
    std::cerr << "ringside: internal error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "ringside: internal error\n";
  }
  return ringside::cli::kExitDataError;
}
