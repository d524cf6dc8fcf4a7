// storage/two_threads.h — independent per-file work (opening and reading 1,024 inputs) spread
// over the calling thread and one helper, for the second core of a small machine.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

namespace ringside::storage {

// Calls fn(i) once for every i in [0, n), on the calling thread and one helper thread, each
// taking the next index in turn; returns when all calls have returned. fn must be safe to call
// from two threads at once for different indexes (each writing only its own result); the
// caller reads the results afterwards, in index order, so what it reports keeps that order.
// Once `stop_after(i)` has returned true for an i, indexes above i are not started (the caller
// will stop at i anyway). With `tally` given, the StageTimers of that name on both threads are
// folded into one line (stage_timings.h): the caller's tally of that name when it has one. Without a helper thread (n < 2, or none could be started), fn runs
// on the caller alone. An exception thrown by fn on the helper is rethrown here.
void forEachIndexOnTwoThreads(size_t n, const std::function<void(size_t)>& fn,
                              const std::function<bool(size_t)>& stop_after = {},
                              std::string_view tally = {});

// Turns SQLite's memory statistics off for this process. With them on (SQLite's default), every
// allocation of every connection takes one process-wide mutex: two threads working SQLite at
// once (the merge's probe, its copy beside the clock fit's read, a reader's read-ahead) then
// spend more CPU on that lock than they save (1,024 inputs probed on two threads: 1.8 CPU-s
// instead of 0.5). Call it first thing in main(), before any SQLite use (after that it changes
// nothing). Not from the preload library: a traced program's own SQLite keeps its statistics.
void configureSqliteForThreads();

}  // namespace ringside::storage
