// Internals shared by collector.cpp (hot path, lifecycle), writer.cpp (the
// background thread) and identity.cpp (who this process is). Not exported.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ringside/collector/event.h"
#include "ringside/collector/window.h"
#include "ringside/storage/records.h"

namespace ringside::collector::detail {

// One thread's single-producer/single-consumer event ring.
struct Ring {
  Event* events = nullptr;
  uint64_t mask = 0;  // capacity - 1 (capacity is a power of two)
  alignas(64) std::atomic<uint64_t> head{0};  // next slot the producer writes
  alignas(64) std::atomic<uint64_t> tail{0};  // next slot the writer reads
  alignas(64) std::atomic<uint64_t> emitted{0};
  std::atomic<uint64_t> dropped{0};
  // Left out by the recording window or the detail level (never emitted, so not counted above).
  std::atomic<uint64_t> left_out_calls{0};
  std::atomic<uint64_t> left_out_messages{0};
  std::atomic<bool> retired{false};  // owning thread exited
  std::atomic<int32_t> tid{0};
  Ring* next = nullptr;  // registry list, appended under Registry::mutex
};

struct Comm {
  std::atomic<const void*> key{nullptr};
  std::atomic<int64_t> seq{0};
  int32_t rank = -1;
  int32_t size = -1;
  char name[48] = {};
};

inline constexpr int kMaxComms = 256;

// A communicator's life as the trace's communicator table shows it (under Global::mutex).
struct CommNote {
  bool noted = false;   // noteCommCreated() was called
  bool dirty = false;   // changed since the writer last stored it
  int32_t parent = -1;
  int64_t created_ns = -1;
  int64_t ended_ns = -1;
  std::string end_state;
  std::string topology;
};

// One queued GPU activity record (collector/gpu.h), waiting for the writer.
struct PendingActivity {
  uint8_t kind = 0;
  uint8_t copy_kind = 0;
  int32_t device = -1;
  int64_t start_ns = 0, end_ns = -1, stream = -1, bytes = -1, correlation_id = -1;
  uint64_t collective_id = 0;
  std::string name;
};

enum class State : int {
  kDormant = 0,   // never activated
  kActive = 1,
  kDisabled = 2,  // RINGSIDE_DISABLE, or the writer failed (I/O); events dropped
  kClosed = 3,    // final flush done
  kForked = 4,    // a child forked without exec: quiet forever
};

struct Config {
  std::string dir;
  uint64_t buffer_bytes = 64ull << 20;
  int flush_ms = 200;
  int exit_timeout_ms = 3000;
  bool verbose = false;
  std::string run_id;
  WindowConfig window;  // RINGSIDE_STEPS, _DELAY_S, _DURATION_S, _TRIGGER_FILE, _DETAIL
};

// One opening or closing of the recording window, for the trace's meta.
struct WindowChange {
  int64_t t_ns = 0;  // nowNs()
  bool open = false;
  const char* cause = "";  // static string: "start", "step", "time", "trigger"
  int64_t step = -1;       // cause "step": the step that begins
};
inline constexpr int kMaxWindowChanges = 64;

struct Identity {
  int32_t rank = -1;
  int32_t world_size = -1;
  int32_t local_rank = -1;
  std::string launcher;         // torchrun, ompi, slurm, pmi, ringside, unknown
  std::string source;           // gloo, env, none
  int32_t env_rank = -1;        // what the launcher's environment said
  int32_t env_world_size = -1;
  std::string host;
  std::string command_line;
  int64_t pid = 0;
};

// One page shared (MAP_SHARED) between an active process and every child it forks without
// exec: the children, quiet, count their wrapped calls here; the parent's writer stores the
// counts in its rank file. Atomics only: no lock is shared across processes.
struct ForkShared {
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> children{0};
};

struct Global {
  std::atomic<int> state{static_cast<int>(State::kDormant)};
  ForkShared* fork_shared = nullptr;  // set at activation, before any fork can inherit it
  std::mutex mutex;  // activation, registry appends, meta, identity (never on the hot path)
  Config config;
  Ring* rings = nullptr;     // registry (under mutex)
  Ring* free_rings = nullptr;// drained rings of exited threads, for reuse (under mutex)
  uint64_t ring_capacity = 0;
  uint64_t ring_bytes_allocated = 0;
  std::atomic<uint64_t> overflow_emitted{0};  // threads that got no ring (memory cap)
  std::atomic<uint64_t> overflow_dropped{0};
  std::atomic<uint64_t> recorded{0};          // events the writer consumed
  std::atomic<uint64_t> next_collective{1};
  Comm comms[kMaxComms];
  std::atomic<int> comm_count{0};
  CommNote comm_notes[kMaxComms];        // under mutex
  std::atomic<bool> comm_notes_dirty{false};
  // GPU activity queue (gpu.cpp fills, the writer takes it whole).
  std::mutex gpu_mutex;
  std::vector<PendingActivity> gpu_pending;  // under gpu_mutex
  uint64_t gpu_pending_bytes = 0;            // under gpu_mutex
  std::atomic<uint64_t> gpu_queued{0};
  std::atomic<uint64_t> gpu_dropped{0};
  Identity identity;                     // under mutex
  std::atomic<uint64_t> identity_gen{0}; // bumped on change
  std::vector<std::pair<std::string, std::string>> meta;  // under mutex; writer takes them
  int64_t start_ns = 0;
  int64_t start_unix_ns = 0;
  // The CPU counters at start_ns (cpu_usage.h), taken by the activating call: the writer thread
  // samples only once it runs and has created its file, which a busy host delays past the
  // first steps (seen: 220 ms, longer than a whole 6-step job); its first row.
  storage::CpuSampleRow start_cpu;
  bool start_cpu_ok = false;
  // The recording window (collector.cpp). A call is kept when its collective id lies in
  // [keep_from, keep_until): ids are taken at the call's entry, so a call is kept or left out
  // whole, with its messages. Completions carry no id: they pass while dones_open.
  std::atomic<uint64_t> keep_from{0};
  std::atomic<uint64_t> keep_until{UINT64_MAX};
  std::atomic<bool> window_open{true};  // events with no collective id
  std::atomic<bool> dones_open{true};   // closed by the writer once the kept posts completed
  std::atomic<int64_t> markers{0};      // ringside_step() calls so far
  std::atomic<int64_t> touches{0};      // trigger file touches the writer saw
  std::atomic_flag window_lock = ATOMIC_FLAG_INIT;  // transitions only (spin; never the hot path)
  WindowChange window_changes[kMaxWindowChanges];   // under window_lock
  int window_change_count = 0;                      // under window_lock (may exceed the array)
  // Writer handshake (atomics only: the signal handler uses them).
  std::atomic<int> flush_request{0};     // 0 none, 1 final (exit), >1 fatal signal number + 1
  std::atomic<int> writer_done{0};       // 1 once the final flush finished
  std::atomic<bool> writer_running{false};
};

Global& global();

inline State state() { return static_cast<State>(global().state.load(std::memory_order_acquire)); }

// identity.cpp
void readLauncherIdentity(Identity* id);
std::string hostName();
std::string commandLine();

// The window's state side (collector.cpp): evaluates windowWanted() on the inputs now (markers,
// time since start, trigger touches) and opens or closes the window if that differs from its
// state, recording the change with `cause`. Any thread; serialized by a spin flag.
void updateWindow(const char* cause, int64_t step = -1);

// writer.cpp: starts the writer thread (all signals blocked). False on failure.
bool startWriter();
// Takes the rings list snapshot and drains them; used by the writer only.

void logWarning(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void logVerbose(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace ringside::collector::detail
