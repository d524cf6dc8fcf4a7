#!/usr/bin/env bash
# One row of the pip-torch compatibility table per torch version: sets up (or reuses) the pip
# environment of each version with scripts/setup-pip-torch.sh, runs the end-to-end test
# e2e.pip-torchrun-2 on it (the DDP sample under torchrun, recorded), and prints what the trace
# said: the gloo::Context layout identified, the interposition verdict, and the test's outcome;
# then e2e.pip-ab-ring-2 (`record --allreduce ring`: same losses, or a clear refusal on 2.8+).
#
#   bash scripts/pip-torch-matrix.sh [BUILD_DIR] -- 2.15.0 2.7.1 ...
#
# BUILD_DIR (default build/) must hold ringside and the preload library. Each new version costs
# a few GB and minutes the first time (see docs/pip-torch.md).
set -uo pipefail
cd "$(dirname "$0")/.."

build=build
if (($# > 0)) && [[ $1 != -- ]]; then build=$1; shift; fi
[[ ${1:-} == -- ]] && shift
(($# > 0)) || { echo "usage: $0 [BUILD_DIR] -- TORCH_VERSION..." >&2; exit 2; }

printf '| torch | install | gloo::Context layout | interposition | e2e.pip-torchrun-2 | e2e.pip-ab-ring-2 |\n'
printf '|---|---|---|---|---|---|\n'
for v in "$@"; do
  if ! python=$(RINGSIDE_TORCH_VERSION=$v bash scripts/setup-pip-torch.sh); then
    printf '| %s | pip: not set up | | | skipped | skipped |\n' "$v"
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
  grep -q '^refused with the layout error' "$log" && ab="$ab: refused (layout not supported by the reroute yet)"
  installed=$("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null)
  printf '| %s | pip (%s) | %s | %s | %s (exit %d) | %s (exit %d) |\n' "$v" "$installed" "$layout" "$verdict" \
    "$outcome" "$rc" "$ab" "$ab_rc"
  rm -f "$log"
done
