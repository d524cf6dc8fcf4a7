#include "options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iostream>
#include <vector>

#include "ringside/fileio/input_file.h"
#include "ringside/format/units.h"

namespace ringside::cli {
namespace {

std::string displayName(const OptionSpec& spec) { return "--" + std::string(spec.long_name); }

const OptionSpec* findLong(std::span<const OptionSpec> specs, std::string_view name) {
  for (const OptionSpec& spec : specs) {
    if (spec.long_name == name) return &spec;
  }
  return nullptr;
}

const OptionSpec* findShort(std::span<const OptionSpec> specs, char name) {
  for (const OptionSpec& spec : specs) {
    if (spec.short_name != 0 && spec.short_name == name) return &spec;
  }
  return nullptr;
}

// Edit distance (insertions, deletions, substitutions) between two short option names.
size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The known long option a mistyped one most likely meant ("--rank" -> "--ranks"): the closest
// within two edits, or the only one it is a prefix of; nullptr when none is close.
const OptionSpec* closestLong(std::span<const OptionSpec> specs, std::string_view name) {
  const OptionSpec* best = nullptr;
  size_t best_distance = 3;
  const OptionSpec* prefix_of = nullptr;
  int prefixes = 0;
  for (const OptionSpec& spec : specs) {
    size_t d = editDistance(name, spec.long_name);
    if (d < best_distance) {
      best_distance = d;
      best = &spec;
    }
    if (name.size() >= 3 && spec.long_name.starts_with(name)) {
      prefix_of = &spec;
      ++prefixes;
    }
  }
  if (best != nullptr && best_distance < name.size()) return best;
  return prefixes == 1 ? prefix_of : nullptr;
}

bool apply(const OptionSpec& spec, std::string_view value, std::string* error) {
  std::string why;
  if (spec.apply(value, &why)) return true;
  *error = "invalid value '" + std::string(value) + "' for " + displayName(spec);
  if (!why.empty()) *error += ": " + why;
  return false;
}

}  // namespace

ParseStatus parseOptions(std::span<const std::string> args, std::span<const OptionSpec> specs,
                         Positionals mode, std::vector<std::string>* positionals,
                         std::string* error) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      positionals->insert(positionals->end(), args.begin() + static_cast<ptrdiff_t>(i) + 1,
                          args.end());
      return ParseStatus::kOk;
    }
    if (arg == "-h" || arg == "--help") return ParseStatus::kHelp;
    if (arg.size() < 2 || arg[0] != '-') {  // "-" alone is a positional too (stdin-style)
      if (mode == Positionals::kStopAtFirst) {
        positionals->insert(positionals->end(), args.begin() + static_cast<ptrdiff_t>(i),
                            args.end());
        return ParseStatus::kOk;
      }
      positionals->push_back(arg);
      continue;
    }

    const OptionSpec* spec = nullptr;
    std::string_view inline_value;
    bool has_inline_value = false;
    if (arg[1] == '-') {
      std::string_view name = std::string_view(arg).substr(2);
      if (size_t eq = name.find('='); eq != std::string_view::npos) {
        inline_value = name.substr(eq + 1);
        has_inline_value = true;
        name = name.substr(0, eq);
      }
      spec = findLong(specs, name);
    } else {
      spec = findShort(specs, arg[1]);
      if (spec != nullptr && arg.size() > 2) {
        inline_value = std::string_view(arg).substr(2);
        has_inline_value = true;
      }
    }
    if (spec == nullptr) {
      *error = "unknown option '" + arg + "'";
      std::string_view typed = std::string_view(arg).substr(0, arg.find('='));
      const OptionSpec* meant = typed.starts_with("--") ? closestLong(specs, typed.substr(2)) : nullptr;
      if (meant != nullptr) {
        *error += "; did you mean " + displayName(*meant) + "?";
      } else if (mode == Positionals::kStopAtFirst) {
        *error += " (put '--' before a command that starts with '-')";
      }
      return ParseStatus::kError;
    }

    if (spec->value_name.empty()) {
      if (has_inline_value) {
        *error = "option " + displayName(*spec) + " takes no value";
        return ParseStatus::kError;
      }
      if (!apply(*spec, "", error)) return ParseStatus::kError;
      continue;
    }
    if (!has_inline_value) {
      if (i + 1 >= args.size()) {
        *error = "option " + displayName(*spec) + " needs a value (" +
                 std::string(spec->value_name) + ")";
        return ParseStatus::kError;
      }
      inline_value = args[++i];
    }
    if (!apply(*spec, inline_value, error)) return ParseStatus::kError;
  }
  return ParseStatus::kOk;
}

ParseStatus parseOptionsOneInput(std::span<const std::string> args,
                                 std::span<const OptionSpec> specs, std::string_view if_none,
                                 std::string_view if_many, std::string* input, std::string* error) {
  std::vector<std::string> positionals;
  ParseStatus status = parseOptions(args, specs, Positionals::kInterleaved, &positionals, error);
  if (status != ParseStatus::kOk) return status;
  if (positionals.size() != 1) {
    *error = positionals.empty() ? if_none : if_many;
    return ParseStatus::kError;
  }
  *input = positionals.front();
  return ParseStatus::kOk;
}

std::string formatOptionsHelp(std::span<const OptionSpec> specs) {
  std::vector<std::string> left;
  size_t width = 0;
  for (const OptionSpec& spec : specs) {
    std::string text = spec.short_name != 0 ? std::string("-") + spec.short_name + ", " : "    ";
    text += "--" + std::string(spec.long_name);
    if (!spec.value_name.empty()) text += " " + std::string(spec.value_name);
    width = std::max(width, text.size());
    left.push_back(std::move(text));
  }
  std::string out = "Options:\n";
  for (size_t i = 0; i < specs.size(); ++i) {
    out += "  " + left[i] + std::string(width - left[i].size() + 2, ' ') +
           std::string(specs[i].help) + "\n";
  }
  out += "  -h, --help" + std::string(width > 10 ? width - 10 + 2 : 2, ' ') + "show this help\n";
  return out;
}

std::function<bool(std::string_view, std::string*)> setFlag(bool* target) {
  return [target](std::string_view, std::string*) {
    *target = true;
    return true;
  };
}

std::function<bool(std::string_view, std::string*)> storeText(std::string* target) {
  return [target](std::string_view value, std::string* error) {
    if (value.empty()) {
      *error = "must not be empty";
      return false;
    }
    *target = std::string(value);
    return true;
  };
}

std::function<bool(std::string_view, std::string*)> storeChoice(
    std::string* target, std::vector<std::string_view> choices) {
  return [target, choices](std::string_view value, std::string* error) {
    if (std::find(choices.begin(), choices.end(), value) != choices.end()) {
      *target = std::string(value);
      return true;
    }
    *error = "'" + std::string(value) + "' is not one of ";
    for (size_t i = 0; i < choices.size(); ++i) {
      *error += (i > 0 ? ", " : "") + std::string(choices[i]);
    }
    return false;
  };
}

bool parseInteger(std::string_view text, int64_t min, int64_t max, int64_t* out) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < min || value > max) return false;
  *out = value;
  return true;
}

int handleParseOutcome(ParseStatus status, const std::function<std::string()>& help,
                       std::string_view prefix, const std::string& error) {
  switch (status) {
    case ParseStatus::kHelp:
      std::cout << help();
      return kExitOk;
    case ParseStatus::kError:
      std::cerr << prefix << error << "\n";
      return kExitUsage;
    case ParseStatus::kOk:
      break;
  }
  return -1;
}

int fail(std::string_view prefix, std::string_view message, int status) {
  std::cerr << prefix << message << "\n";
  return status;
}

int refuseOutputsThatAreInputs(std::string_view prefix, const std::vector<std::string>& outputs,
                               const std::vector<std::string>& inputs) {
  std::string error;
  for (const std::string& output : outputs) {
    if (fileio::outputIsAnInput(output, inputs, &error)) return fail(prefix, error, kExitUsage);
  }
  return -1;
}

std::function<bool(std::string_view, std::string*)> storeInteger(int* target, int64_t min,
                                                                 int64_t max) {
  return [target, min, max](std::string_view value, std::string* error) {
    int64_t parsed = 0;
    if (!parseInteger(value, min, max, &parsed)) {
      *error = "expected an integer from " + std::to_string(min) + " to " + std::to_string(max);
      return false;
    }
    *target = static_cast<int>(parsed);
    return true;
  };
}

bool parseSeconds(std::string_view text, double* out) {
  double ns = 0;
  if (!format::parseDuration(text, format::BareDuration::kSeconds, &ns)) return false;
  *out = ns / 1e9;
  return true;
}

}  // namespace ringside::cli
