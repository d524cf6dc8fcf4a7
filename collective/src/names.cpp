// collective/names.cpp — names.h's lists turned into name() and parse().
#include "ringside/collective/names.h"

#include <iterator>

namespace ringside::collective {
namespace {

#define RINGSIDE_NAME(id, text) text,
constexpr const char* kOpNames[] = {RINGSIDE_OPS(RINGSIDE_NAME)};
constexpr const char* kLibraryNames[] = {RINGSIDE_LIBRARIES(RINGSIDE_NAME)};
constexpr const char* kDTypeNames[] = {RINGSIDE_DTYPES(RINGSIDE_NAME)};
constexpr const char* kReduceOpNames[] = {RINGSIDE_REDUCE_OPS(RINGSIDE_NAME)};
constexpr const char* kAlgorithmNames[] = {RINGSIDE_ALGORITHMS(RINGSIDE_NAME)};
constexpr const char* kProtocolNames[] = {RINGSIDE_PROTOCOLS(RINGSIDE_NAME)};
constexpr const char* kPhaseNames[] = {RINGSIDE_PHASES(RINGSIDE_NAME)};
#undef RINGSIDE_NAME

// Values are the list's positions (the enums above are declared from the same lists).
template <typename Enum, size_t N>
const char* nameIn(const char* const (&names)[N], Enum v) {
  const auto i = static_cast<size_t>(v);
  return i < N ? names[i] : names[0];
}

template <typename Enum, size_t N>
bool parseIn(const char* const (&names)[N], std::string_view text, Enum* out) {
  for (size_t i = 0; i < N; ++i) {
    if (text == names[i]) {
      *out = static_cast<Enum>(i);
      return true;
    }
  }
  return false;
}

}  // namespace

const char* name(Op v) { return nameIn(kOpNames, v); }
const char* name(Library v) { return nameIn(kLibraryNames, v); }
const char* name(DType v) { return nameIn(kDTypeNames, v); }
const char* name(ReduceOp v) { return nameIn(kReduceOpNames, v); }
const char* name(Algorithm v) { return nameIn(kAlgorithmNames, v); }
const char* name(Protocol v) { return nameIn(kProtocolNames, v); }
const char* name(Phase v) { return nameIn(kPhaseNames, v); }
const char* name(Side v) { return v == Side::kSend ? "send" : "recv"; }

bool parse(std::string_view text, Op* out) { return parseIn(kOpNames, text, out); }
bool parse(std::string_view text, Library* out) { return parseIn(kLibraryNames, text, out); }
bool parse(std::string_view text, DType* out) { return parseIn(kDTypeNames, text, out); }
bool parse(std::string_view text, ReduceOp* out) { return parseIn(kReduceOpNames, text, out); }
bool parse(std::string_view text, Algorithm* out) { return parseIn(kAlgorithmNames, text, out); }
bool parse(std::string_view text, Protocol* out) { return parseIn(kProtocolNames, text, out); }
bool parse(std::string_view text, Phase* out) { return parseIn(kPhaseNames, text, out); }
bool parse(std::string_view text, Side* out) {
  if (text != "send" && text != "recv") return false;
  *out = text == "send" ? Side::kSend : Side::kRecv;
  return true;
}

bool referenceRuns(Algorithm a) {
  return a == Algorithm::kRing || a == Algorithm::kTree || a == Algorithm::kMultipath;
}

Library referenceLibrary(Algorithm a) {
  switch (a) {
    case Algorithm::kRing: return Library::kRingsideRing;
    case Algorithm::kTree: return Library::kRingsideTree;
    case Algorithm::kMultipath: return Library::kRingsideMultipath;
    default: return Library::kUnknown;
  }
}

bool parseAllreduceChoice(std::string_view text, Algorithm* out) {
  Algorithm a = Algorithm::kDefault;
  if (text != "gloo" && !(parse(text, &a) && referenceRuns(a))) return false;
  *out = a;
  return true;
}

}  // namespace ringside::collective
