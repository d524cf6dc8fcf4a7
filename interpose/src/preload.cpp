// libringside_preload.so: nothing happens at load time. Launchers, shells and
// every other process that inherits LD_PRELOAD stay untouched until one of the
// wrapped functions (interpose/src/*_wrappers.cpp) is called; that call
// activates the collector.
//
// Adding a library (NCCL next) means one more *_wrappers.cpp with its list of
// wrapped functions, feeding the same collector events.
