// ringside/finish/finish.h — what makes merged rank files a finished trace: the merge, then the
// clock model (align/, docs/clock-alignment.md) and the training steps (the analyzer's detection,
// table step, docs/steps.md) stored into the merge's temporary file before it is published.
// Every caller that merges (`ringside merge`, `record`, `bench`, tests, tools) goes through
// mergeAndFinish() so they all get the same trace.
//
// Prints nothing (but RINGSIDE_TIMINGS lines): lines for people come back in the result.
// mergeAndFinish() reads the clock fit's message sides from the inputs on a thread of its own
// while they are copied (align/input_sides.h); the rest runs on the caller's thread. Not
// reentrant for one path.
#pragma once

#include <string>

#include "ringside/align/align.h"
#include "ringside/storage/merge.h"

namespace ringside::finish {

// Fits the clock model of the merged trace at `path` and stores it in place. *clock_line gets
// one line describing the model when the trace spans several clock domains ("" otherwise).
// False with *error ("clock alignment failed: ...").
// `input_sides`: the message sides the merge read from its inputs (align::fitClockModel).
bool alignTrace(const std::string& path, const align::AlignOptions& options,
                std::string* clock_line, std::string* error,
                align::InputSides* input_sides = nullptr);

// Detects the training steps of the merged trace at `path` and stores them in place (none is
// a valid answer). False with *error ("training steps not stored: ...").
bool storeSteps(const std::string& path, std::string* error);

// alignTrace() then storeSteps(): every finishing step, in order.
bool finishTrace(const std::string& path, const align::AlignOptions& options,
                 std::string* clock_line, std::string* error,
                 align::InputSides* input_sides = nullptr);

// storage::mergeRankFiles(options) with finishTrace() run on the temporary file before it is
// renamed into place (after any before_publish the caller set): a trace is never published
// without its clock model and steps; when finishing fails (a full disk, a fit that cannot read
// the rows) the merge fails and nothing is published. *clock_line as in alignTrace().
storage::MergeResult mergeAndFinish(storage::MergeOptions options,
                                    const align::AlignOptions& align_options,
                                    std::string* clock_line);

}  // namespace ringside::finish
