// storage/src/two_threads.cpp — forEachIndexOnTwoThreads (ringside/storage/two_threads.h).
#include "ringside/storage/two_threads.h"

#include <sqlite3.h>

#include <atomic>
#include <exception>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

#include "ringside/storage/stage_timings.h"

namespace ringside::storage {

void forEachIndexOnTwoThreads(size_t n, const std::function<void(size_t)>& fn,
                              const std::function<bool(size_t)>& stop_after,
                              std::string_view tally) {
  std::atomic<size_t> next{0};
  std::atomic<size_t> stop_at{n};  // no index above it is started
  const std::string stage(tally);
  StageSums helper_sums;  // the helper's tally, added to the caller's line after the join
  auto work = [&](StageSums* into) {
    std::optional<StageTally> folded;
    if (!stage.empty()) folded.emplace(stage, "", into);
    for (size_t i; (i = next.fetch_add(1)) < n && i <= stop_at.load();) {
      fn(i);
      if (stop_after && stop_after(i)) {
        size_t seen = stop_at.load();
        while (i < seen && !stop_at.compare_exchange_weak(seen, i)) {
        }
      }
    }
  };
  std::exception_ptr helper_error;
  std::thread helper;
  if (n >= 2) {
    try {
      helper = std::thread([&] {
        try {
          work(&helper_sums);
        } catch (...) {
          helper_error = std::current_exception();
        }
      });
    } catch (const std::system_error&) {
      // no second thread: the caller does it all
    }
  }
  try {
    work(nullptr);
  } catch (...) {
    next.store(n);
    if (helper.joinable()) helper.join();
    throw;
  }
  if (helper.joinable()) helper.join();
  if (!stage.empty()) StageTally::add(stage, helper_sums);
  if (helper_error) std::rethrow_exception(helper_error);
}

void configureSqliteForThreads() { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

}  // namespace ringside::storage
