#!/usr/bin/env bash
# End to end: the topology, traffic matrix and statistics views under Xvfb (Mesa llvmpipe).
# A 4-rank ring all-reduce (ringside bench) with a full-mesh topology file leaves 8 of the 12
# directed links idle (the reverse directions and the diagonals 0<->2, 1<->3). The topology
# screenshot must show the idle grey exactly on those edges (sampled along the geometry that
# --dump-layout writes) and one node per rank; the matrix and stats screenshots must show
# their tables. --export-csv also runs without a window.
# Exit 77 (skipped) when Xvfb or the viewer is missing. The viewer runs on a private Xvfb (xserver.py).
set -euo pipefail
bin=$1 python=$2 checker=$3 topo=$4
[[ -x $bin/ringside-view ]] || { echo "SKIP: no viewer in this build"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
"$bin/ringside" bench --ranks 4 --algo ring --sizes 4K,256K --iters 2 -o ring.sqlite >bench.log 2>&1 ||
  { cat bench.log; exit 1; }

# CSV export needs no display.
"$bin/ringside-view" ring.sqlite --view stats --export-csv stats-nowin.csv
"$bin/ringside-view" ring.sqlite --view matrix --export-csv matrix-nowin.csv
head -1 stats-nowin.csv | grep -q '^op,library,size_lo,size_hi,count,total_ns,mean_ns,p50_ns,p99_ns,busbw_gbps$' ||
  { cat stats-nowin.csv; exit 1; }
[[ $(grep -c '^allreduce,ringside-ring,' stats-nowin.csv) == 2 ]] || { cat stats-nowin.csv; exit 1; }
# The ring: rank r sends only to r+1.
"$python" - matrix-nowin.csv <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))[1:-1]
for s, row in enumerate(rows):
    for d, v in enumerate(row[1:-1]):
        assert (int(v) > 0) == (d == (s + 1) % 4), f"{s}->{d}: {v} bytes"
print("matrix CSV: a ring")
PY
if "$bin/ringside-view" ring.sqlite --export-csv /nonexistent-dir/x.csv 2>err.txt; then
  echo "expected a failure writing into a missing folder"; exit 1
fi
grep -q "cannot write" err.txt || { cat err.txt; exit 1; }

command -v Xvfb >/dev/null || { echo "SKIP: Xvfb not installed (the CSV checks passed)"; exit 77; }
xrun=("$python" "$(dirname "$(readlink -f "$0")")/xserver.py" --screen 1280x800x24 --)
shot() {  # view, extra options...
  local view=$1; shift
  LIBGL_ALWAYS_SOFTWARE=1 "${xrun[@]}" \
    "$bin/ringside" view ring.sqlite --topology "$topo" --view "$view" --screenshot "$view.png" \
    --frames 5 --size 1200x760 "$@"
}
shot topology --dump-layout layout.json
"$python" "$checker" topology topology.png layout.json 4
# The same state gives the same picture.
cp topology.png first.png
shot topology --dump-layout layout2.json
cmp -s first.png topology.png || { echo "two screenshots of the same state differ"; exit 1; }
cmp -s layout.json layout2.json || { echo "two layouts of the same state differ"; exit 1; }
# The scrubber: over the last collective (a 256 KiB all-reduce), the edge colours follow the window.
last=$("$python" -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from (select distinct comm, seq from collective)').fetchone()[0] - 1)" ring.sqlite)
for pos in 0 0.5 1; do
  shot topology --select "$last" --scrub "$pos" --dump-layout "scrub-$pos.json"
done
"$python" - scrub-0.json scrub-0.5.json scrub-1.json <<'PY'
import json, sys
looks = [tuple(tuple(e["color"]) for e in json.load(open(p))["edges"] if not e["idle"]) for p in sys.argv[1:]]
assert all(len(l) == 4 for l in looks), looks
assert len(set(looks)) > 1, f"the same edge colours at every scrubber position: {looks[0]}"
print(f"scrubber: {len(set(looks))} different colourings at 3 positions")
PY
shot matrix --export-csv matrix.csv
"$python" "$checker" matrix matrix.png matrix.csv
shot stats --export-csv stats.csv
"$python" "$checker" stats stats.png stats.csv
cmp -s stats.csv stats-nowin.csv || { echo "the CSV with and without a window differ"; exit 1; }
[[ ! -e imgui.ini ]] || { echo "imgui.ini written"; exit 1; }
echo "OK"
