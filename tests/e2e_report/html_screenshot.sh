#!/bin/sh
# End to end: a real bench trace -> `ringside report --format html` -> a
# headless Chromium screenshot, checked for size and content (CHECK_PNG --page:
# tests/e2e_gui/check_png.py).
# Exit 77 (skipped) when Chromium is not installed (scripts/setup-deps.sh adds it).
# Usage: html_screenshot.sh RINGSIDE PYTHON CHECK_PNG [KEEP_PNG]
set -u
ringside=$1 python=$2 check=$3 keep=${4:-}
chromium=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chromium" ] || { echo "skipped: chromium not installed (scripts/setup-deps.sh)"; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
"$ringside" bench --ranks 3 --algo ring,tree --sizes 4K,64K --iters 2 -o t.sqlite >bench.log 2>&1 ||
  { cat bench.log; exit 1; }
"$ringside" report --format html -o report.html t.sqlite || exit 1
if grep -q -E 'https?://' report.html; then echo "report.html references the network"; exit 1; fi
timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$dir/profile" --screenshot="$dir/out.png" --window-size=1200,2000 \
  "file://$dir/report.html" >chromium.log 2>&1
[ -s out.png ] || { cat chromium.log; echo "no screenshot"; exit 1; }
"$python" "$check" --page out.png 1200 2000 || exit 1
[ -z "$keep" ] || cp out.png "$keep"
