// storage/flight_ring.h — the flight recorder's ring file: the last calls of each communicator
// and the last messages of a traced process, in a small file it maps MAP_SHARED (docs/flight-recorder.md).
//
// Why a mapped file: its pages live in the page cache, so what the process wrote survives
// SIGKILL, SIGSTOP and a hang, and other processes (`ringside record`'s watchdog, `ringside
// dump`, merge) read it without the process's help. The layout is fixed-size (no allocation after
// create), written lock-free: each slot carries a generation that a writer sets to kWriting
// before it fills the slot and to the slot's number + 1 after, so a reader copies a slot and keeps
// it only when the generation read before and after is the same. Times are on the process's
// CLOCK_MONOTONIC (the rank file's clock).
//
// Contract: the Writer's record* functions are the hot path (no allocation, no lock, no syscall;
// async-signal-safe, so a signal handler may stamp a dump). Everything else may allocate.
// Errors are returned as one line; nothing here prints or throws.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "ringside/storage/records.h"

namespace ringside::storage::flight {

// The ring's fences (a seqlock's). ThreadSanitizer does not model std::atomic_thread_fence (GCC
// refuses it under -fsanitize=thread with -Werror=tsan); there the fence is an acquire/release
// operation on one shared atomic, which TSan does follow (stronger ordering than the fence, only
// in sanitizer builds). Every other build uses the plain fence.
#if defined(__SANITIZE_THREAD__)
inline std::atomic<uint32_t> g_tsan_fence{0};
inline void fence(std::memory_order order) {
  if (order == std::memory_order_acquire) {
    (void)g_tsan_fence.load(std::memory_order_acquire);
  } else {
    g_tsan_fence.fetch_add(1, std::memory_order_acq_rel);
  }
}
#else
inline void fence(std::memory_order order) { std::atomic_thread_fence(order); }
#endif

inline constexpr char kMagic[8] = {'R', 'S', 'F', 'L', 'I', 'G', 'H', 'T'};
inline constexpr uint32_t kFormat = 1;
inline constexpr int kComms = 16;         // communicators kept (later ones are not recorded)
inline constexpr int kCallsPerComm = 64;  // the last calls of each
inline constexpr int kMessages = 256;     // the last messages of the process, all communicators
inline constexpr int kDumps = 16;         // dump stamps kept (later ones overwrite the last)
inline constexpr int kDetailBytes = 232;
inline constexpr uint64_t kWriting = ~uint64_t{0};

// Why a dump was stamped (flight_dump.reason).
enum class Reason : uint8_t {
  kWatchdog, kTimeout, kError, kSignal, kExitOpen, kSigusr2, kRequest, kPeriodic, kEnd,
};
const char* reasonName(Reason r);

// A call's state (flight_call.state).
enum class CallState : uint8_t { kQueued, kEntered, kTransferring, kDone, kFailed };
const char* stateName(CallState s);

// How the process ended (header.ended).
enum class Ended : int32_t { kRunning = 0, kExited = 1, kSignal = 2 };

struct alignas(64) CallSlot {
  std::atomic<uint64_t> gen;  // 0 empty, kWriting, else the call's number in its comm + 1
  int64_t seq;
  int64_t bytes;
  int64_t count;
  int64_t step;      // the job's last step marker, kNone if none
  int64_t enter_ns;
  std::atomic<int64_t> exit_ns;  // 0 while open
  int32_t root;
  int32_t tid;
  uint8_t op, library, dtype;  // indexes into the header's name tables
  std::atomic<uint8_t> state;  // CallState
};

struct alignas(64) MessageSlot {
  std::atomic<uint64_t> gen;  // 0 empty, kWriting, else the message's number + 1
  uint64_t key;               // the library's buffer object (matches a completion to its post)
  int64_t seq;                // the enclosing call's seq, kNone if none
  int64_t bytes;
  int64_t posted_ns;
  std::atomic<int64_t> done_ns;  // 0 until completed
  int32_t peer;
  int16_t comm;  // index into the header's communicators, -1 if none
  uint8_t direction;  // 1 send, 2 recv
};

struct CommSlot {
  char name[48];
  int32_t comm_rank;
  int32_t comm_size;
  std::atomic<uint64_t> calls;  // calls begun on it (the next call's number)
  std::atomic<uint32_t> ready;  // name and shape written
};

struct DumpSlot {
  std::atomic<uint32_t> ready;  // 0 empty, 1 being written, 2 written
  uint8_t reason;               // Reason
  int64_t time_ns;
  uint64_t calls_dropped;
  char detail[kDetailBytes];
};

struct Header {
  char magic[8];
  uint32_t format;
  uint32_t file_bytes;
  int64_t pid;
  int64_t start_unix_ns;  // the rank file's start (pairs the ring with its rank file)
  int64_t start_ns;
  char host[64];
  std::atomic<int32_t> rank;
  std::atomic<int32_t> world_size;
  std::atomic<int64_t> last_done_ns;  // the last call that returned, on any communicator
  std::atomic<int64_t> step;          // the job's last step marker, kNone if none
  std::atomic<uint32_t> comm_count;
  std::atomic<uint32_t> dump_count;
  std::atomic<uint64_t> message_count;
  std::atomic<int32_t> ended;          // Ended
  std::atomic<int32_t> ended_by;       // 1 the process itself, 2 the launcher (record)
  std::atomic<int32_t> exit_status;    // -1 unknown
  std::atomic<int32_t> exit_signal;    // 0 none
  std::atomic<int64_t> exit_ns;        // 0 unknown
  char op_names[32][16];               // CallSlot::op -> name ("" unknown)
  char library_names[8][16];
  char dtype_names[16][8];
};

// The whole file.
struct Layout {
  Header header;
  CommSlot comms[kComms];
  DumpSlot dumps[kDumps];
  CallSlot calls[kComms][kCallsPerComm];
  MessageSlot messages[kMessages];
};
inline constexpr size_t kFileBytes = sizeof(Layout);

// The process's side: creates and maps the file; the record* functions are the hot path.
class Writer {
 public:
  Writer() = default;
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Creates `path` exclusively (mode 0600, or the umask's with `share`) and maps it. The name
  // tables are filled by the caller through layout() before the first call.
  bool create(const std::string& path, int64_t pid, int64_t start_unix_ns, int64_t start_ns,
              const std::string& host, bool share, std::string* error);
  Layout* layout() const { return l_; }
  bool ok() const { return l_ != nullptr; }
  // Unmaps without touching the file (a child forked without exec).
  void release();

 private:
  Layout* l_ = nullptr;
};

// Opens an existing ring file for reading (and, with `writable`, for stamping dumps and exits
// from outside: the watchdog, `ringside dump`, record's exit notes). Checks magic, format, size.
class Mapping {
 public:
  Mapping() = default;
  ~Mapping();
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  bool open(const std::string& path, bool writable, std::string* error);
  Layout* layout() const { return l_; }

 private:
  Layout* l_ = nullptr;
};

// Stamps a dump (async-signal-safe; `detail` may be null). Returns the dump's number.
int stampDump(Layout* l, Reason reason, int64_t time_ns, const char* detail);
// Registers communicator `index` (once; ignored past kComms).
void noteComm(Layout* l, int index, const char* name, int32_t comm_rank, int32_t comm_size);
// Records how the process ended (async-signal-safe): the process's first note wins over its
// later ones; the launcher's (by = 2) overwrites.
void noteEnd(Layout* l, Ended how, int32_t by, int32_t exit_status, int32_t signal, int64_t ns);
// Calls still inside their API call (entered, transferring) in the ring. Queued calls (NCCL: the
// API returned, completion unknown) are not counted: without a completion source every NCCL call
// stays queued, and a healthy job exiting after its last enqueue is not a job with a call open.
int openCalls(const Layout* l);

// What a ring holds, read consistently slot by slot (rows as the trace stores them; rank from
// the header, -1 if the process never learned it).
struct Snapshot {
  int32_t rank = -1;
  int32_t world_size = -1;
  int64_t pid = 0;
  int64_t start_unix_ns = 0;
  std::string host;
  int64_t last_done_ns = 0;
  int64_t step = kNone;
  Ended ended = Ended::kRunning;
  int32_t ended_by = 0;
  int32_t exit_status = -1;
  int32_t exit_signal = 0;
  int64_t exit_ns = 0;
  uint64_t calls_dropped = 0;  // calls begun that the ring no longer holds
  std::vector<FlightDumpRow> dumps;  // `dump` numbered from 0; calls and messages under the last
  std::vector<FlightCallRow> calls;  // ordered by (comm, seq)
  std::vector<FlightMessageRow> messages;  // ordered by posted_ns
};
void snapshot(const Layout* l, Snapshot* out);
bool readRing(const std::string& path, Snapshot* out, std::string* error);

// The rank exit row a snapshot holds (false: the ring does not say how the process ended).
bool exitRow(const Snapshot& s, RankExitRow* out);

// Ring files in `folder` (names ending in kSuffix), sorted; the ring of process (pid, start).
inline constexpr const char* kSuffix = ".flight";
std::string ringPath(const std::string& folder, int64_t pid, int64_t start_unix_ns);
std::vector<std::string> listRings(const std::string& folder);

}  // namespace ringside::storage::flight
