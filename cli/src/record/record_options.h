// cli/record/record_options.h — the command line of `ringside record`, parsed
// without side effects (no files touched, no processes started).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "options.h"

namespace ringside::cli {

inline constexpr int kMaxLocalRanks = 1024;
inline constexpr int kMaxNodes = 65536;
// torchrun's default master port, for a job over several nodes (each must know it).
inline constexpr int kDefaultMultiNodePort = 29500;

struct RecordOptions {
  std::string output;  // "" = ringside-YYYYmmdd-HHMMSS.sqlite in the current folder
  bool force = false;  // overwrite an existing output
  int ranks = 0;       // 0 = run the command once (it is the launcher)
  std::string dir;     // "" = <output>.ranks
  bool keep_rank_files = false;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;      // 0 = a free port
  bool master_set = false;  // --master-addr or --master-port given
  bool quiet = false;
  int buffer_mb = 0;  // 0 = leave RINGSIDE_BUFFER_MB alone
  std::string allreduce;  // "", ring, tree or multipath: RINGSIDE_ALLREDUCE for an A/B run
  bool no_merge = false;
  bool node_merge = false;  // --nnodes: merge this node's rank files into NODES_DIR/node-K.sqlite
  bool nccl_log = false;  // NCCL writes its INFO log (rings, trees) into the rank folder
  bool redact = false;    // RINGSIDE_REDACT: command lines stored without their arguments
  bool share = false;     // RINGSIDE_SHARE: files and folders get the umask's modes, not 0600/0700
  double grace_s = 30.0;             // --ranks: how long the others may run after one failed
  // After the command exited: how long to wait for traced processes still writing their rank
  // files (a launcher that exits before its ranks), docs/recording.md.
  double wait_s = 60.0;
  // A job over several machines, torchrun's meanings: --ranks is ranks per node, RANK is
  // node_rank * ranks + local rank. 0 = one node (and no node folder).
  int nnodes = 0;
  int node_rank = -1;  // -1 = not given
  std::string run_id;  // --run-id: "" = RINGSIDE_RUN_ID, the launcher's job id or a new one
  bool run_id_set = false;
  // Bounded recording (docs/recording.md), passed to the ranks as RINGSIDE_STEPS,
  // RINGSIDE_DELAY_S, RINGSIDE_DURATION_S, RINGSIDE_TRIGGER_FILE, RINGSIDE_DETAIL and
  // RINGSIDE_MESSAGE_ROWS; "" = not given (the variable is left as the environment has it).
  std::string steps, delay_s, duration_s, trigger_file, detail, message_rows;
  // The watchdog (docs/flight-recorder.md): a hang is a collective open with none completed on
  // any rank for this long; 0 = off. --on-hang kill stops the job after the verdict.
  double hang_timeout_s = 300.0;
  bool on_hang_kill = false;
  std::vector<std::string> command;  // CMD ARGS...
};

// Parses the words after "record". kError fills *error with one line.
ParseStatus parseRecordArgs(std::span<const std::string> args, RecordOptions* out,
                            std::string* error);

std::string recordHelp();

// Whether the options describe one node of a job over several (--nnodes N with N > 1).
inline bool isMultiNode(const RecordOptions& options) { return options.nnodes > 1; }

// A run id given on the command line or in RINGSIDE_RUN_ID: 1..256 printable characters
// without spaces. False (with *error) otherwise.
bool validRunId(std::string_view id, std::string* error);

// torchrun's rendezvous id in COMMAND when it runs torchrun (`torchrun ...` or
// `python -m torch.distributed.run ...`): its --rdzv-id / --rdzv_id option (also as
// --rdzv-id=ID), else torchrun's own PET_RDZV_ID variable (pet_rdzv_id: its value, as the caller
// read it; nullptr = unset). "" when the command is not torchrun, the id is not given or is
// torchrun's default "none" (the same on every job, so it names no run).
std::string torchrunRdzvId(std::span<const std::string> command, const char* pet_rdzv_id);

}  // namespace ringside::cli
