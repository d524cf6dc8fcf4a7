#!/usr/bin/env bash
# One row of the pip-torch compatibility table per torch version: sets up (or reuses) the pip
# environment of each version with scripts/setup-pip-torch.sh, runs the end-to-end test
# e2e.pip-torchrun-2 on it (the DDP sample under torchrun, recorded), and prints what the trace
# said: the gloo::Context layout identified, the interposition verdict, and the test's outcome;
# then e2e.pip-ab-ring-2 (`record --allreduce ring`: every all-reduce on ringside's ring, the
# losses of an untraced run), and
# e2e.cluster-pip-torchrun (torchrun --nnodes 2 with c10d rendezvous on 2 emulated hosts, each
# under `record --nnodes 2`, merged: needs root, else SKIP with the reason).
#
#   bash scripts/pip-torch-matrix.sh [BUILD_DIR] -- 2.15.0 2.7.1 ...
#
# BUILD_DIR (default build/) must hold ringside, the preload library and
# libringside_clockshift.so (the emulated hosts' clocks). Each new version costs
# a few GB and minutes the first time (see docs/pip-torch.md).
set -uo pipefail
cd "$(dirname "$0")/.."

build=build
if (($# > 0)) && [[ $1 != -- ]]; then build=$1; shift; fi
[[ ${1:-} == -- ]] && shift
(($# > 0)) || { echo "usage: $0 [BUILD_DIR] -- TORCH_VERSION..." >&2; exit 2; }

printf '| torch | install | gloo::Context layout | interposition | e2e.pip-torchrun-2 | e2e.pip-ab-ring-2 | e2e.cluster-pip-torchrun |\n'
printf '|---|---|---|---|---|---|---|\n'
for v in "$@"; do
  if ! python=$(RINGSIDE_TORCH_VERSION=$v bash scripts/setup-pip-torch.sh); then
    printf '| %s | pip: not set up | | | skipped | skipped | skipped |\n' "$v"
    continue
  fi
  log=$(mktemp)
  RINGSIDE_TORCH_VERSION=$v python3 tests/e2e/test_pip_torch.py --scenario pip-torchrun-2 --keep \
    --ringside "$PWD/$build/bin/ringside" --preload "$PWD/$build/lib/libringside_preload.so" \
    --ddp-sample "$PWD/samples/ddp_train.py" >"$log" 2>&1
  rc=$?
  outcome=$(grep -m1 -E '^(PASS|FAIL|SKIP) ' "$log" | cut -c1-120)
  scratch=$(sed -n 's/^scratch folder kept: //p' "$log" | tail -n1)
  layout="" verdict=""
  if [[ -n $scratch && -f $scratch/ddp.sqlite ]]; then
    layout=$(sqlite3 "$scratch/ddp.sqlite" "SELECT value FROM meta WHERE key = 'rank.0.gloo_context_layout'")
    verdict=$(sqlite3 "$scratch/ddp.sqlite" "SELECT value FROM meta WHERE key = 'rank.0.interposition'")
  fi
  [[ -n $scratch ]] && rm -rf "$scratch"
  RINGSIDE_TORCH_VERSION=$v python3 tests/e2e/test_pip_torch.py --scenario pip-ab-ring-2 \
    --ringside "$PWD/$build/bin/ringside" --preload "$PWD/$build/lib/libringside_preload.so" \
    --ddp-sample "$PWD/samples/ddp_train.py" >"$log" 2>&1
  ab_rc=$?
  ab=$(grep -m1 -E '^(PASS|FAIL|SKIP) ' "$log" | cut -c1-80)
  RINGSIDE_TORCH_VERSION=$v python3 tests/e2e_topology/test_cluster.py --scenario pip-torchrun \
    --ringside "$PWD/$build/bin/ringside" --clockshift "$PWD/$build/lib/libringside_clockshift.so" \
    >"$log" 2>&1
  nodes_rc=$?
  nodes=$(grep -m1 -E '^(PASS|FAIL|SKIP) ' "$log" | cut -c1-100)
  installed=$("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null)
  printf '| %s | pip (%s) | %s | %s | %s (exit %d) | %s (exit %d) | %s (exit %d) |\n' "$v" "$installed" \
    "$layout" "$verdict" "$outcome" "$rc" "$ab" "$ab_rc" "$nodes" "$nodes_rc"
  rm -f "$log"
done
