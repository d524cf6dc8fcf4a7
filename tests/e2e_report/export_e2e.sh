#!/bin/sh
# End to end: a real 3-rank bench trace, exported for Perfetto and validated (check_perfetto.py:
# the trace-event rules, and the trace's counts per link); bad inputs give one line and exit
# status 1.
# Usage: export_e2e.sh RINGSIDE PYTHON CHECK_SCRIPT
set -u
ringside=$1 python=$2 check=$3
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
"$ringside" bench --ranks 3 --algo ring,tree --sizes 4K,64K --iters 2 -o t.sqlite >bench.log 2>&1 ||
  { cat bench.log; echo "bench failed"; exit 1; }
"$ringside" export --perfetto t.sqlite -o t.json || { echo "export failed"; exit 1; }
"$python" "$check" t.json 3 t.sqlite --all-flows || exit 1
# A bin given: the counters say it, and still carry the links' bytes.
"$ringside" export --perfetto t.sqlite -o b.json --counter-bin-us 50 ||
  { echo "export failed"; exit 1; }
grep -q '"bytes/s (50 us bins)"' b.json ||
  { echo "--counter-bin-us 50 not in the counters"; exit 1; }
"$python" "$check" b.json 3 t.sqlite --all-flows || exit 1
"$ringside" export --perfetto t.sqlite -o c.json --counter-bin-us 0 2>/dev/null
[ $? -eq 2 ] || { echo "--counter-bin-us 0: want usage error 2"; exit 1; }
# Bad inputs: a foreign file, a truncated trace, a missing file.
echo "not a trace" > foreign.sqlite
head -c 3000 t.sqlite > truncated.sqlite
for bad in foreign.sqlite truncated.sqlite missing.sqlite; do
  "$ringside" export --perfetto "$bad" -o bad.json 2>err.txt
  rc=$?
  [ "$rc" -eq 1 ] || { echo "$bad: exit $rc, want 1"; cat err.txt; exit 1; }
  [ "$(wc -l < err.txt)" -eq 1 ] || { echo "$bad: not one line:"; cat err.txt; exit 1; }
  [ ! -e bad.json ] || { echo "$bad: left an output file"; exit 1; }
done
"$ringside" export t.sqlite -o x.json 2>/dev/null; [ $? -eq 2 ] || { echo "usage: want 2"; exit 1; }
echo "export e2e ok"
