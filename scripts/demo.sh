#!/usr/bin/env bash
# The README's first command: install the dependencies, build ringside, record the DDP sample
# on 4 local ranks and print ringside's summary. Run as root (or with sudo for apt).
# The trace lands in ./ddp.sqlite (open it with sqlite3; docs/schema.md has the tables).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup-deps.sh
if [[ -f build/CMakeCache.txt ]] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' build/CMakeCache.txt; then
  rm -rf build/CMakeCache.txt build/CMakeFiles  # configured with another generator before
fi
cmake -S . -B build -G Ninja -DRINGSIDE_GUI=OFF >/dev/null
ninja -C build -j"${JOBS:-2}" ringside ringside_preload

echo
echo "+ build/bin/ringside record --ranks 4 -o ddp.sqlite -f -- /usr/bin/python3 samples/ddp_train.py"
exec build/bin/ringside record --ranks 4 -o ddp.sqlite -f -- /usr/bin/python3 samples/ddp_train.py
