#include "record/record_options.h"

#include <algorithm>

#include "ringside/collective/names.h"
#include "ringside/collector/collector.h"
#include "ringside/collector/window.h"

namespace ringside::cli {
namespace {

// --buffer-mb's help names the collector's range: keep them in step.
static_assert(collector::kBufferMbMin == 1 && collector::kBufferMbMax == 65536);

// An option's text, kept when `valid` accepts it.
std::function<bool(std::string_view, std::string*)> checked(std::string* target,
                                                            const char* expected,
                                                            bool (*valid)(std::string_view)) {
  return [target, expected, valid](std::string_view value, std::string* error) {
    if (!valid(value)) {
      *error = expected;
      return false;
    }
    *target = std::string(value);
    return true;
  };
}

bool validSeconds(std::string_view v) {
  int64_t ns = 0;
  return collector::parseSecondsNs(v, &ns);
}

std::vector<OptionSpec> recordSpecs(RecordOptions* o) {
  return {
      {"output", 'o', "TRACE.sqlite",
       "merged trace to write (default: ringside-YYYYmmdd-HHMMSS.sqlite)", storeText(&o->output)},
      {"force", 'f', "", "overwrite an existing trace", setFlag(&o->force)},
      {"ranks", 'n', "N", "start N local ranks of CMD (sets RANK, WORLD_SIZE, MASTER_*, ...)",
       storeInteger(&o->ranks, 1, kMaxLocalRanks)},
      {"dir", 0, "DIR", "where the rank files go (default: <output>.ranks)", storeText(&o->dir)},
      {"keep-rank-files", 0, "", "keep the rank files after a successful merge",
       setFlag(&o->keep_rank_files)},
      {"master-addr", 0, "ADDR", "MASTER_ADDR for --ranks (default: 127.0.0.1)",
       [o](std::string_view value, std::string* error) {
         o->master_set = true;
         return storeText(&o->master_addr)(value, error);
       }},
      {"master-port", 0, "PORT",
       "MASTER_PORT for --ranks (default: a free port; 29500 with --nnodes)",
       [o](std::string_view value, std::string* error) {
         o->master_set = true;
         return storeInteger(&o->master_port, 1, 65535)(value, error);
       }},
      {"grace-s", 0, "SECONDS", "with --ranks: time the others get after one failed (default: 30)",
       [o](std::string_view value, std::string* error) {
         if (parseSeconds(value, &o->grace_s)) return true;
         *error = "expected seconds >= 0, or a duration: 500ms, 2.5s, 5m";
         return false;
       }},
      {"wait-s", 0, "SECONDS",
       "after CMD exited: wait for traced processes still writing (default: 60)",
       [o](std::string_view value, std::string* error) {
         if (parseSeconds(value, &o->wait_s)) return true;
         *error = "expected seconds >= 0, or a duration: 500ms, 2.5s, 5m";
         return false;
       }},
      {"hang-timeout", 0, "SECS",
       "a call open, none done this long: say who is stuck (default 300)",
       [o](std::string_view value, std::string* error) {
         if (parseSeconds(value, &o->hang_timeout_s)) return true;
         *error = "expected a number of seconds >= 0";
         return false;
       }},
      {"on-hang", 0, "ACTION", "after a hang's verdict: report (default) or kill (stop the job)",
       [o](std::string_view value, std::string* error) {
         if (value == "report" || value == "kill") {
           o->on_hang_kill = value == "kill";
           return true;
         }
         *error = "expected report or kill";
         return false;
       }},
      {"buffer-mb", 0, "N",
       "event buffer memory per process in MiB, 1..65536 (RINGSIDE_BUFFER_MB)",
       storeInteger(&o->buffer_mb, collector::kBufferMbMin, collector::kBufferMbMax)},
      {"allreduce", 0, "ALGO",
       "run Gloo's all-reduces on ring, tree or multipath (RINGSIDE_ALLREDUCE)",
       [o](std::string_view value, std::string* error) {
         collective::Algorithm chosen = collective::Algorithm::kDefault;
         if (collective::parseAllreduceChoice(value, &chosen)) {
           o->allreduce = collective::name(chosen);  // "" for gloo: Gloo's own
           return true;
         }
         *error = std::string("expected ") + collective::kAllreduceChoices;
         return false;
       }},
      {"nccl-log", 0, "",
       "NCCL logs rings and trees to the rank folder; the trace keeps them",
       setFlag(&o->nccl_log)},
      {"redact", 0, "",
       "store command lines without their arguments (RINGSIDE_REDACT)",
       setFlag(&o->redact)},
      {"share", 0, "",
       "files follow the umask, not 0600/0700 (RINGSIDE_SHARE)",
       setFlag(&o->share)},
      {"no-merge", 0, "", "leave the rank files unmerged (merge later with `ringside merge`)",
       setFlag(&o->no_merge)},
      {"nnodes", 0, "N",
       "the job spans N nodes, one `record` each (--ranks: ranks per node)",
       storeInteger(&o->nnodes, 1, kMaxNodes)},
      {"node-merge", 0, "",
       "with --nnodes: merge this node's rank files into DIR/node-K.sqlite",
       setFlag(&o->node_merge)},
      {"node-rank", 0, "K",
       "with --nnodes: this node, 0..N-1 (RANK = K * ranks + local rank)",
       storeInteger(&o->node_rank, 0, kMaxNodes - 1)},
      {"run-id", 0, "ID",
       "the run id of the rank files, the same on every node (RINGSIDE_RUN_ID)",
       [o](std::string_view value, std::string* error) {
         o->run_id_set = true;
         o->run_id = std::string(value);
         return validRunId(value, error);
       }},
      {"steps", 0, "A:B",
       "record steps A..B-1 (0-based; A: or :B) and setup (RINGSIDE_STEPS)",
       checked(&o->steps, "expected A:B with 0 <= A < B (or A:, :B)",
               [](std::string_view v) {
                 int64_t a = 0, b = 0;
                 return collector::parseStepRange(v, &a, &b);
               })},
      {"delay", 0, "SECONDS", "record from SECONDS after each rank's start (RINGSIDE_DELAY_S)",
       checked(&o->delay_s, "expected seconds >= 0, or a duration: 500ms, 2.5s, 5m", validSeconds)},
      {"duration", 0, "SECONDS",
       "record for SECONDS (after --delay, if given) (RINGSIDE_DURATION_S)",
       checked(&o->duration_s, "expected seconds >= 0, or a duration: 500ms, 2.5s, 5m", validSeconds)},
      {"trigger-file", 0, "PATH",
       "touch PATH to start recording, again to stop (RINGSIDE_TRIGGER_FILE)",
       checked(&o->trigger_file, "expected a path", [](std::string_view v) { return !v.empty(); })},
      {"detail", 0, "LEVEL",
       "calls, links, messages or auto (default) (RINGSIDE_DETAIL)",
       checked(&o->detail, "expected calls, links, messages or auto",
               [](std::string_view v) {
                 collector::Detail d;
                 return collector::parseDetail(v, &d);
               })},
      {"message-rows", 0, "N",
       "auto: message rows per rank before links (RINGSIDE_MESSAGE_ROWS)",
       checked(&o->message_rows, "expected a whole number >= 0",
               [](std::string_view v) {
                 return !v.empty() && v.size() <= 15 &&
                        v.find_first_not_of("0123456789") == std::string_view::npos;
               })},
      {"quiet", 'q', "", "do not print the summary", setFlag(&o->quiet)},
  };
}

// --nnodes and --node-rank: both or neither (one node), K below N, and a trace name every
// node can be given alike (the default one holds the time, which differs between nodes).
bool checkNodeOptions(const RecordOptions& o, std::string* error) {
  if (o.node_rank >= 0 && o.nnodes == 0) {
    *error = "--node-rank needs --nnodes N";
    return false;
  }
  if (o.nnodes > 1 && o.node_rank < 0) {
    *error = "--nnodes " + std::to_string(o.nnodes) + " needs --node-rank K (0.." +
             std::to_string(o.nnodes - 1) + "), this node's number";
    return false;
  }
  if (o.node_rank >= std::max(o.nnodes, 1)) {
    *error = "--node-rank " + std::to_string(o.node_rank) + " must be below --nnodes " +
             std::to_string(o.nnodes);
    return false;
  }
  if (o.node_merge && (o.nnodes < 2 || o.no_merge)) {
    *error = "--node-merge needs --nnodes N (N > 1) and no --no-merge";
    return false;
  }
  if (o.nnodes > 1 && o.output.empty() && o.dir.empty()) {
    *error = "--nnodes: give -o TRACE.sqlite or --dir DIR, the same on every node";
    return false;
  }
  return true;
}

}  // namespace

bool validRunId(std::string_view id, std::string* error) {
  if (id.empty() || id.size() > 256) {
    *error = "a run id has 1 to 256 characters";
    return false;
  }
  for (char c : id) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
      *error = "a run id has no spaces or control characters";
      return false;
    }
  }
  return true;
}

namespace {

// Where torchrun's own options start in COMMAND (after `torchrun`, or after
// `python -m torch.distributed.run`); 0 when the command is not torchrun.
size_t torchrunOptionsStart(std::span<const std::string> command) {
  if (command.empty()) return 0;
  std::string_view first = command[0];
  if (first.substr(first.rfind('/') + 1) == "torchrun") return 1;
  for (size_t i = 1; i + 1 < command.size(); ++i) {
    if (command[i] == "-m" && command[i + 1] == "torch.distributed.run") return i + 2;
    if (command[i].empty() || command[i][0] != '-') break;  // python's script: not torchrun
  }
  return 0;
}

// torchrun's options that take no value: the rest take the next word unless written with '='.
bool torchrunFlag(std::string_view option) {
  for (std::string_view flag : {"--standalone", "--no-python", "--no_python", "-m", "--module",
                                "--run-path", "--run_path", "--virtual-local-rank",
                                "--virtual_local_rank", "-h", "--help"}) {
    if (option == flag) return true;
  }
  return false;
}

}  // namespace

std::string torchrunRdzvId(std::span<const std::string> command, const char* pet_rdzv_id) {
  size_t i = torchrunOptionsStart(command);
  if (i == 0) return "";
  std::string id = pet_rdzv_id != nullptr ? pet_rdzv_id : "";
  // Up to the training script (the first word that is not an option or an option's value).
  for (; i < command.size() && !command[i].empty() && command[i][0] == '-'; ++i) {
    std::string_view word = command[i];
    size_t eq = word.find('=');
    std::string_view name = word.substr(0, eq);
    bool is_id = name == "--rdzv-id" || name == "--rdzv_id";
    if (eq != std::string_view::npos) {
      if (is_id) id = word.substr(eq + 1);
    } else if (!torchrunFlag(name) && i + 1 < command.size()) {
      if (is_id) id = command[i + 1];
      ++i;
    }
  }
  return id == "none" ? "" : id;
}

ParseStatus parseRecordArgs(std::span<const std::string> args, RecordOptions* out,
                            std::string* error) {
  *out = RecordOptions{};
  std::vector<OptionSpec> specs = recordSpecs(out);
  ParseStatus status = parseOptions(args, specs, Positionals::kStopAtFirst, &out->command, error);
  if (status != ParseStatus::kOk) return status;
  if (out->command.empty()) {
    *error = "no command to record (usage: ringside record [options] [--] CMD [ARGS...])";
    return ParseStatus::kError;
  }
  if (out->command.front().empty()) {
    *error = "the command to record is an empty string";
    return ParseStatus::kError;
  }
  return checkNodeOptions(*out, error) ? ParseStatus::kOk : ParseStatus::kError;
}

std::string recordHelp() {
  RecordOptions scratch;
  return "Usage: ringside record [options] [--] CMD [ARGS...]\n"
         "\n"
         "Runs CMD with ringside's preload library, so every process that makes Gloo or NCCL\n"
         "calls writes a rank file; then merges the rank files into one trace and prints a\n"
         "summary. The library is also set as NCCL's profiler plugin (NCCL_PROFILER_PLUGIN)\n"
         "unless that variable is set already.\n"
         "CMD may be a launcher (torchrun, mpirun, srun, a script), or use --ranks N to let\n"
         "ringside start N local ranks itself. The job's own output is left untouched; ringside\n"
         "writes to stderr only.\n"
         "Exit status: the job's (128+N if it died of signal N), also when ringside's own\n"
         "writing or merging fails (the rank files are then kept, and one line says how to\n"
         "merge them later); 2 when the job was not started: a bad option, an output that\n"
         "exists, a folder that cannot be written, or another recording into the same rank\n"
         "folder; 1 when ringside cannot start it (no preload library, no free port).\n"
         "Put '--' before CMD when CMD starts with '-'.\n"
         "A job over several machines: one `record --nnodes N --node-rank K` per node, each\n"
         "writing into DIR/node-K (DIR: --dir, or <output>.ranks) and merging nothing; the\n"
         "last line says which `ringside merge` to run once every node is done. The run id\n"
         "(--run-id, RINGSIDE_RUN_ID, else the launcher's job id: torchrun, Open MPI, Slurm;\n"
         "else with --ranks from MASTER_ADDR:MASTER_PORT) must be the same on every node.\n"
         "See docs/multi-node.md.\n"
         "Bounded recording (docs/recording.md): --steps counts the job's ringside_step()\n"
         "markers (samples/ringside_steps.py) and keeps the calls before the first one; a job\n"
         "that marks no steps is recorded up to its first marker, i.e. whole. --delay and\n"
         "--duration count from each rank's first Gloo/NCCL call; --trigger-file is checked\n"
         "every 100 ms. Given together, all must hold. --detail: calls only; links: calls plus\n"
         "one row per call, peer and side (bytes, message count); messages: every message;\n"
         "auto: every message for the first --message-rows rows of a rank, then links.\n"
         "\n" +
         formatOptionsHelp(recordSpecs(&scratch)) +
         "\n"
         "Examples (Debian: /usr/bin/python3 is the python with python3-torch; Debian's torchrun\n"
         "does not run on it, so let --ranks start the ranks):\n"
         "  ringside record --ranks 4 -o run.sqlite -- /usr/bin/python3 train.py\n"
         "  ringside record --ranks 4 --allreduce tree -o tree.sqlite -- /usr/bin/python3 train.py\n"
         "  ringside record -o run.sqlite -- torchrun --nproc-per-node 4 train.py   (a torchrun that runs)\n"
         "  ringside record --nnodes 2 --node-rank 0 --ranks 4 --master-addr node0 \\\n"
         "      -o /shared/run.sqlite -- /usr/bin/python3 train.py   (and --node-rank 1 on node1)\n";
}

}  // namespace ringside::cli
