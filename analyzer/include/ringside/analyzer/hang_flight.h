// ringside/analyzer/hang_flight.h — the flight recorder's rows (storage/records.h: flight_call,
// flight_message, rank_exit) as judgeHang()'s input (hang.h). The one conversion both callers
// use: analyze() on a merged trace's flight tables, and `ringside record`'s watchdog on the live
// rings. Pure functions; an unknown call state reads as "entered" (open), kNone times as -1.
#pragma once

#include "ringside/analyzer/hang.h"
#include "ringside/storage/records.h"

namespace ringside::analyzer::hang {

Call fromFlight(const storage::FlightCallRow& row);
Message fromFlight(const storage::FlightMessageRow& row);
// How the rank ended, from its exit: a fatal signal -> kSignaled, a status -> kExited; a row
// with neither leaves *rank untouched.
void applyExit(int exit_status, int signal, Rank* rank);

}  // namespace ringside::analyzer::hang
