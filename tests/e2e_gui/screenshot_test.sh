#!/usr/bin/env bash
# End to end: bench a 3-rank trace, screenshot the viewer under Xvfb (Mesa llvmpipe), check the PNG.
# Exit 77 (skipped) when Xvfb or the viewer is missing. The viewer runs on a private Xvfb (xserver.py).
set -euo pipefail
bin=$1 python=$2 checker=$3
command -v Xvfb >/dev/null || { echo "SKIP: Xvfb not installed (Debian: xvfb)"; exit 77; }
xrun=("$python" "$(dirname "$(readlink -f "$0")")/xserver.py" --screen 1280x800x24 --)
[[ -x $bin/ringside-view ]] || { echo "SKIP: no viewer in this build"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
"$bin/ringside" bench --ranks 3 --algo ring,tree --sizes 4K,1M --iters 2 -o t.sqlite >bench.log 2>&1 ||
  { cat bench.log; exit 1; }
LIBGL_ALWAYS_SOFTWARE=1 "${xrun[@]}" \
  "$bin/ringside" view t.sqlite --screenshot out.png --frames 5 --size 1200x700
"$python" "$checker" out.png 1200 700 3
# A file that is not a trace: exit 1 with one line on stderr, and the screenshot shows the error.
if LIBGL_ALWAYS_SOFTWARE=1 "${xrun[@]}" "$bin/ringside" view bench.log --screenshot bad.png 2>err.txt; then
  echo "expected a failure for a file that is not a trace"; exit 1
fi
grep -q "ringside view: " err.txt || { cat err.txt; exit 1; }
[[ -s bad.png ]] || { echo "no screenshot of the error"; exit 1; }
[[ ! -e imgui.ini ]] || { echo "imgui.ini written"; exit 1; }
echo "OK"
