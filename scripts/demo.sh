#!/usr/bin/env bash
# The README's first command: install the dependencies (and pip's torch, cached), build ringside,
# record the DDP sample on 4 local ranks under torchrun and print ringside's summary. Run as root (or with sudo for apt).
# The trace lands in ./ddp.sqlite (open it with sqlite3; docs/schema.md has the tables).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup-deps.sh
if [[ -f build/CMakeCache.txt ]] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' build/CMakeCache.txt; then
  rm -rf build/CMakeCache.txt build/CMakeFiles  # configured with another generator before
fi
cmake -S . -B build -G Ninja -DRINGSIDE_GUI=OFF >/dev/null
ninja -C build -j"${JOBS:-2}" ringside ringside_preload

# The PyTorch people run: pip's torch 2.x under torchrun (scripts/setup-pip-torch.sh: a cached
# virtual environment outside the checkout, minutes and ~5 GB the first time). Where PyPI cannot
# be reached, Debian's python3-torch with `record --ranks` instead (the same job and summary).
echo
if python=$(bash scripts/setup-pip-torch.sh); then
  torchrun="$(dirname "$python")/torchrun"
  echo "+ build/bin/ringside record -o ddp.sqlite -f -- $torchrun --standalone --nproc-per-node 4 samples/ddp_train.py"
  exec env OMP_NUM_THREADS=1 build/bin/ringside record -o ddp.sqlite -f -- \
    "$torchrun" --standalone --nproc-per-node 4 samples/ddp_train.py
fi
echo "demo: no pip torch (see the line above): Debian's python3-torch instead"
echo "+ build/bin/ringside record --ranks 4 -o ddp.sqlite -f -- /usr/bin/python3 samples/ddp_train.py"
exec build/bin/ringside record --ranks 4 -o ddp.sqlite -f -- /usr/bin/python3 samples/ddp_train.py
