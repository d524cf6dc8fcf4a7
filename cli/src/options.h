// cli/options.h — the one option parser every verb uses.
//
// A verb declares its options once as a table of OptionSpec; parsing and the
// "Options:" part of its --help text are both derived from that table, so the
// two cannot drift apart. Parsing never prints and never exits: it returns a
// status and a one-line error, which keeps it testable without a process.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ringside::cli {

// Exit codes shared by all verbs (commands run by `record` pass theirs through).
inline constexpr int kExitOk = 0;
inline constexpr int kExitDataError = 1;  // bad input file, failed merge, ...
inline constexpr int kExitUsage = 2;      // bad command line

struct OptionSpec {
  std::string_view long_name;   // without the leading "--"
  char short_name = 0;          // 0: no short form
  std::string_view value_name;  // empty: a flag that takes no value
  std::string_view help;        // one line for --help
  // Applies the option (value is "" for flags). Returns false and fills *error
  // (without the option name; the parser adds it) when the value is invalid.
  std::function<bool(std::string_view value, std::string* error)> apply;
};

enum class Positionals {
  kInterleaved,  // options and inputs may be mixed (merge FILE -o OUT)
  kStopAtFirst,  // the first non-option starts a command line (record CMD ARGS)
};

enum class ParseStatus { kOk, kHelp, kError };

// Parses `args` (the words after the verb). Accepts --name VALUE, --name=VALUE,
// -x VALUE and -xVALUE; "--" ends the options; -h/--help returns kHelp.
// Everything that is not an option is appended to *positionals.
ParseStatus parseOptions(std::span<const std::string> args, std::span<const OptionSpec> specs,
                         Positionals mode, std::vector<std::string>* positionals,
                         std::string* error);
// parseOptions for a verb that takes exactly one input (a trace), stored in *input; none or
// more than one is an error, `if_none` or `if_many`.
ParseStatus parseOptionsOneInput(std::span<const std::string> args,
                                 std::span<const OptionSpec> specs, std::string_view if_none,
                                 std::string_view if_many, std::string* input, std::string* error);

// The "Options:" block of a --help text, aligned, one option per line.
std::string formatOptionsHelp(std::span<const OptionSpec> specs);

// Ready-made OptionSpec::apply functions: a flag that sets *target, and a
// non-empty text value stored in *target.
std::function<bool(std::string_view, std::string*)> setFlag(bool* target);
std::function<bool(std::string_view, std::string*)> storeText(std::string* target);
// One of `choices` into *target ("'x' is not one of a, b, c" otherwise).
std::function<bool(std::string_view, std::string*)> storeChoice(
    std::string* target, std::vector<std::string_view> choices);
// A whole number in [min, max] into *target.
std::function<bool(std::string_view, std::string*)> storeInteger(int* target, int64_t min,
                                                                 int64_t max);

// Value parsers for OptionSpec::apply. They accept only the whole text.
bool parseInteger(std::string_view text, int64_t min, int64_t max, int64_t* out);
// A duration >= 0 in format/'s grammar, seconds when bare ("30", "0.25", "500ms", "2m"), in seconds.
bool parseSeconds(std::string_view text, double* out);

// What every verb does with its parse outcome: --help prints `help` to stdout,
// an error prints "<prefix><error>" to stderr. Returns the exit status when the
// verb must stop there (kExitOk or kExitUsage), -1 when it should go on.
int handleParseOutcome(ParseStatus status, const std::function<std::string()>& help,
                       std::string_view prefix, const std::string& error);

// How a verb's run starts: `parse` (its parseXArgs) fills *options from `args`, then
// handleParseOutcome; the same return value.
template <typename Options>
int parseVerbArgs(std::span<const std::string> args,
                  ParseStatus (*parse)(std::span<const std::string>, Options*, std::string*),
                  const std::function<std::string()>& help, std::string_view prefix,
                  Options* options) {
  std::string error;
  ParseStatus status = parse(args, options, &error);
  return handleParseOutcome(status, help, prefix, error);
}

// A verb giving up: prints "<prefix><message>" to stderr and returns `status`.
int fail(std::string_view prefix, std::string_view message, int status = kExitDataError);

// Every verb with inputs and outputs asks this before it reads or writes anything: an output
// that is one of its inputs (the same device and inode, so also through a symbolic or a hard
// link, or a file inside an input folder) is refused, with --force too, since writing it would
// destroy what it is made from (`report t.sqlite -o t.sqlite`). Empty outputs and "-" (standard
// output) are skipped. Returns -1 when the verb may go on, else kExitUsage after one line
// "<prefix><output>: is the input <input>; an output never replaces its input (...)".
int refuseOutputsThatAreInputs(std::string_view prefix, const std::vector<std::string>& outputs,
                               const std::vector<std::string>& inputs);

}  // namespace ringside::cli
