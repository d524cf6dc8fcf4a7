// storage/src/flight_store.h — writes a flight ring's snapshot as the trace's flight_* and
// rank_exit rows (merge: one ring file per rank file).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>

#include "ringside/storage/flight_ring.h"

namespace ringside::storage::detail {

// Inserts `s`'s dumps (an `end` dump when it has none), calls, messages and exit row as rank
// `rank`'s. Runs inside the caller's transaction; false with *error on a write error.
bool storeFlight(sqlite3* db, const flight::Snapshot& s, int32_t rank, std::string* error);

// The ring file in `folder` written by the process (pid, start_unix_ns); "" if none.
std::string findRing(const std::string& folder, int64_t pid, int64_t start_unix_ns);

}  // namespace ringside::storage::detail
