#!/usr/bin/env bash
# samples/topology/emulate.sh — emulated multi-host topologies on one machine.
#
# Builds 4 "hosts" as network namespaces (<prefix>-h0 .. <prefix>-h3) joined by a
# full mesh of veth pairs, shapes both ends of every link with tc (tbf: rate;
# netem under it: one-way delay, --delay, where the kernel has it), and runs
# `ringside bench` across them, one rank per namespace.
# Traffic never leaves the namespaces this script creates: every address is
# inside them (10.200.k.0/30 per link, 10.201.0.<i+1>/32 identity on lo), and
# nothing is routed to the root namespace or beyond.
#
#   emulate.sh up     --case slow-link|square [--prefix rs] [--rate 200mbit] ...
#   emulate.sh run    --case ... [--out DIR] [--algo ring,tree] [--sizes 1M,4M] [--keep]
#   emulate.sh status [--prefix rs]
#   emulate.sh down   [--prefix rs]
#   emulate.sh topology --case ...   (prints the matching topology file)
#
# Cases (the matching topology files sit beside this script, docs/topology-emulation.md):
#   slow-link  4-host full mesh, link h1-h2 5x slower than the 5 others
#   square     4-host full mesh, all links equal: the ring uses the 4 sides
#              (h0-h1-h2-h3-h0), the double binary tree also the diagonals h0-h2, h1-h3
#
# Exit status: 0 ok, 1 the bench or a step failed, 2 bad usage, 77 this machine
# cannot emulate (not root, no network namespaces, no tc, no veth/netem).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
N=4

usage() {
  sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 2
}

die() { echo "emulate.sh: $*" >&2; exit 1; }
cannot() { echo "emulate.sh: cannot emulate here: $*" >&2; exit 77; }

CMD="${1:-}"
[[ -z "$CMD" || "$CMD" == -h || "$CMD" == --help ]] && usage
shift
CASE="" PREFIX="rs" RATE="200mbit" SLOW_RATE="" DELAY=0 BURST=64kb OUT="" ALGO="ring,tree"
SIZES="1M,4M" ITERS=3 WARMUP=1 KEEP=0 RINGSIDE="" PORT=29500 TIMEOUT_S=60
while [[ $# -gt 0 ]]; do
  case "$1" in
    --case) CASE="$2"; shift 2 ;;
    --prefix) PREFIX="$2"; shift 2 ;;
    --rate) RATE="$2"; shift 2 ;;
    --slow-rate) SLOW_RATE="$2"; shift 2 ;;
    --delay) DELAY="$2"; shift 2 ;;
    --burst) BURST="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --algo) ALGO="$2"; shift 2 ;;
    --sizes) SIZES="$2"; shift 2 ;;
    --iters) ITERS="$2"; shift 2 ;;
    --warmup) WARMUP="$2"; shift 2 ;;
    --ringside) RINGSIDE="$2"; shift 2 ;;
    --timeout-s) TIMEOUT_S="$2"; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) usage ;;
    *) echo "emulate.sh: unknown option '$1'" >&2; usage ;;
  esac
done
[[ "$PREFIX" =~ ^[A-Za-z0-9_]{1,40}$ ]] || die "--prefix must be 1-40 letters, digits or _"

ns() { echo "${PREFIX}-h$1"; }
ident() { echo "10.201.0.$(($1 + 1))"; }
# Link index of the pair i<j (0..5) -> subnet 10.200.<k>.0/30, i is .1, j is .2.
linkidx() {
  local i=$1 j=$2 k=0 a b
  for ((a = 0; a < N; a++)); do
    for ((b = a + 1; b < N; b++)); do
      if ((a == i && b == j)); then echo $k; return; fi
      k=$((k + 1))
    done
  done
}
# Rate of link i-j for the case.
link_rate() {
  local i=$1 j=$2
  if [[ "$CASE" == slow-link ]] && ((i == 1 && j == 2)); then echo "$SLOW_RATE"; else echo "$RATE"; fi
}

our_namespaces() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${PREFIX}-h[0-9]+\$" || true
}

check_can() {
  [[ "$(id -u)" == 0 ]] || cannot "needs root (network namespaces, veth, tc); try sudo"
  command -v ip >/dev/null || cannot "'ip' (iproute2) not found"
  command -v tc >/dev/null || cannot "'tc' (iproute2) not found"
  local probe="${PREFIX}-probe$$"
  ip netns add "$probe" 2>/dev/null || cannot "cannot create network namespaces (ip netns add failed)"
  local ok=1
  ip -n "$probe" link add p0 type veth peer name p1 2>/dev/null || ok=0
  if ((ok)); then
    ip netns exec "$probe" tc qdisc add dev p0 root handle 1: tbf rate 100mbit burst "$BURST" latency 50ms \
      2>/dev/null || ok=2
  fi
  if ((ok == 1)) && [[ "$DELAY" != 0 ]]; then
    ip netns exec "$probe" tc qdisc add dev p0 parent 1:1 handle 10: netem delay "$DELAY" 2>/dev/null || ok=3
  fi
  ip netns del "$probe" 2>/dev/null || true
  case $ok in
    0) cannot "cannot create veth pairs" ;;
    2) cannot "tc tbf is not available (sch_tbf)" ;;
    3) cannot "--delay needs tc netem, which this kernel lacks (sch_netem); run with --delay 0" ;;
  esac
}

check_case() {
  case "$CASE" in
    slow-link) [[ -n "$SLOW_RATE" ]] || SLOW_RATE="$(slow_default)" ;;
    square) ;;
    "") die "--case slow-link|square is required" ;;
    *) die "unknown case '$CASE' (slow-link, square)" ;;
  esac
}
# 5x slower than --rate (200mbit -> 40mbit), for plain <number><unit> rates.
slow_default() {
  [[ "$RATE" =~ ^([0-9]+)([a-zA-Z]*)$ ]] || die "give --slow-rate for --rate '$RATE'"
  echo "$((BASH_REMATCH[1] / 5))${BASH_REMATCH[2]}"
}

cmd_down() {
  local n
  for n in $(our_namespaces); do
    # Processes still inside (a crashed run) would keep the namespace's links alive.
    local pids
    pids="$(ip netns pids "$n" 2>/dev/null || true)"
    [[ -n "$pids" ]] && kill $pids 2>/dev/null || true
    ip netns del "$n" 2>/dev/null || true
  done
  if [[ -n "$(our_namespaces)" ]]; then
    echo "emulate.sh: could not delete: $(our_namespaces | tr '\n' ' ')" >&2
    return 1
  fi
}

# Egress of one end: tbf for the rate, netem under it for the one-way delay (if any).
shape() {
  ip netns exec "$1" tc qdisc add dev "$2" root handle 1: tbf rate "$3" burst "$BURST" latency 50ms
  if [[ "$DELAY" != 0 ]]; then
    ip netns exec "$1" tc qdisc add dev "$2" parent 1:1 handle 10: netem delay "$DELAY"
  fi
}

cmd_up() {
  check_case
  check_can
  [[ -z "$(our_namespaces)" ]] || die "namespaces with prefix '$PREFIX' exist already (emulate.sh down --prefix $PREFIX)"
  local i j k
  for ((i = 0; i < N; i++)); do
    ip netns add "$(ns $i)"
    ip -n "$(ns $i)" link set lo up
    ip -n "$(ns $i)" addr add "$(ident $i)/32" dev lo
    # No relaying: traffic between h_i and h_j must cross link i-j or nothing.
    ip netns exec "$(ns $i)" sysctl -qw net.ipv4.ip_forward=0 net.ipv4.conf.all.rp_filter=0 \
      net.ipv4.conf.default.rp_filter=0
  done
  for ((i = 0; i < N; i++)); do
    for ((j = i + 1; j < N; j++)); do
      k=$(linkidx $i $j)
      local a b rate
      a="$(ns $i)" b="$(ns $j)" rate="$(link_rate $i $j)"
      ip -n "$a" link add "to-h$j" type veth peer name "to-h$i" netns "$b"
      ip -n "$a" addr add "10.200.$k.1/30" dev "to-h$j"
      ip -n "$b" addr add "10.200.$k.2/30" dev "to-h$i"
      ip -n "$a" link set "to-h$j" up
      ip -n "$b" link set "to-h$i" up
      # Identity routes with 'src': the address a rank finds toward MASTER_ADDR (and so
      # advertises to its peers) is its identity address, reached by each peer over the
      # direct link.
      ip -n "$a" route add "$(ident $j)/32" via "10.200.$k.2" dev "to-h$j" src "$(ident $i)"
      ip -n "$b" route add "$(ident $i)/32" via "10.200.$k.1" dev "to-h$i" src "$(ident $j)"
      # Both directions shaped: each end's egress gets the link's rate and one-way delay.
      shape "$a" "to-h$j" "$rate"
      shape "$b" "to-h$i" "$rate"
      ip netns exec "$a" sysctl -qw "net.ipv4.conf.to-h$j.rp_filter=0"
      ip netns exec "$b" sysctl -qw "net.ipv4.conf.to-h$i.rp_filter=0"
    done
  done
  echo "up: case $CASE, prefix $PREFIX, $N hosts, rate $RATE${SLOW_RATE:+ (h1-h2: $SLOW_RATE)}, delay ${DELAY/#0/none} each way"
}

cmd_status() {
  local nss
  nss="$(our_namespaces)"
  if [[ -z "$nss" ]]; then echo "no namespaces with prefix '$PREFIX'"; return 0; fi
  local i j
  printf '%-10s %-6s %-14s %-24s %s\n' host dev address qdisc tx_bytes
  for ((i = 0; i < N; i++)); do
    for ((j = 0; j < N; j++)); do
      ((i == j)) && continue
      local n qd
      n="$(ns $i)"
      ip netns list | awk '{print $1}' | grep -qx "$n" || continue
      qd="$(ip netns exec "$n" tc qdisc show dev "to-h$j" | head -1 | grep -oE 'rate [^ ]+' || true)"
      printf '%-10s %-6s %-14s %-24s %s\n' "h$i" "to-h$j" \
        "$(ip -n "$n" -4 -o addr show dev "to-h$j" | awk '{print $4}')" "$qd" "$(tx_bytes $i $j)"
    done
  done
}

tx_bytes() { ip netns exec "$(ns $1)" cat "/sys/class/net/to-h$2/statistics/tx_bytes"; }

# Snapshot of every directed link's tx bytes: lines "i j bytes".
snapshot() {
  local i j
  for ((i = 0; i < N; i++)); do
    for ((j = 0; j < N; j++)); do
      ((i == j)) || echo "$i $j $(tx_bytes $i $j)"
    done
  done
}

# The topology file (analyzer/include/ringside/analyzer/topology.h, docs/topology.md) of
# what `up` builds with these options; samples/topology/<case>.topo is the default's.
topology_file() {
  local i j lat="$DELAY"
  # Without netem the one-way latency is the veth's own (tens of microseconds here).
  [[ "$lat" == 0 ]] && lat=25us
  echo "ringside-topology 1"
  echo "# emulate.sh --case $CASE: 4 namespaces, full mesh of veth pairs shaped with tc"
  for ((i = 0; i < N; i++)); do echo "node h$i ranks $i"; done
  for ((i = 0; i < N; i++)); do
    for ((j = i + 1; j < N; j++)); do
      echo "link h$i h$j bandwidth $(link_rate $i $j | sed 's/mbit$/Mbit/;s/gbit$/Gbit/;s/kbit$/kbit/') latency $lat"
    done
  done
}

cmd_run() {
  check_case
  [[ -n "$RINGSIDE" ]] || for c in "$REPO/build/bin/ringside" "$REPO/build-topo/bin/ringside"; do
    [[ -x "$c" ]] && { RINGSIDE="$c"; break; }
  done
  [[ -x "$RINGSIDE" ]] || die "no ringside binary (build it, or give --ringside PATH)"
  [[ -n "$OUT" ]] || OUT="$(mktemp -d /tmp/ringside-topo-XXXXXX)"
  mkdir -p "$OUT"
  OUT="$(cd "$OUT" && pwd)"
  local created=0
  if [[ -z "$(our_namespaces)" ]]; then
    cmd_up
    created=1
  fi
  if ((created && !KEEP)); then trap 'cmd_down || true' EXIT; fi
  trap 'exit 130' INT TERM

  topology_file >"$OUT/topology.txt"
  snapshot >"$OUT/counters-before.txt"
  local trace="$OUT/trace.sqlite" i pids=() rc=0
  rm -rf "$trace" "$trace.ranks"
  for ((i = N - 1; i >= 0; i--)); do
    # One rank per namespace; every rank writes its rank file into the same folder
    # ($trace.ranks on the shared filesystem), so rank 0 can merge all four.
    # Own UTS namespace per rank with hostname h<i>: the trace's rank.host names the
    # emulated host, as in the topology files (node h<i> ranks <i>).
    ip netns exec "$(ns $i)" unshare --uts env -u RINGSIDE_BENCH_PORT -u TORCHELASTIC_USE_AGENT_STORE \
      -u GLOO_SOCKET_IFNAME RANK=$i WORLD_SIZE=$N MASTER_ADDR="$(ident 0)" MASTER_PORT=$PORT \
      sh -c 'hostname "$0" && exec "$@"' "h$i" \
      "$RINGSIDE" bench --algo "$ALGO" --sizes "$SIZES" --iters "$ITERS" --warmup "$WARMUP" \
      --timeout-s "$TIMEOUT_S" --json "$OUT/bench.json" -o "$trace" -f \
      >"$OUT/rank$i.out" 2>"$OUT/rank$i.err" &
    pids[$i]=$!
  done
  for ((i = 0; i < N; i++)); do
    wait "${pids[$i]}" || { echo "rank $i failed (exit $?): $(tail -3 "$OUT/rank$i.err")" >&2; rc=1; }
  done
  snapshot >"$OUT/counters-after.txt"
  cat "$OUT/rank0.out"
  echo
  echo "kernel byte counters per directed link (tx of the sender's veth, bench run only):"
  printf '  %-8s %12s\n' link bytes
  # Lines "i j bytes" -> delta per link, also saved for tests.
  paste -d' ' "$OUT/counters-before.txt" "$OUT/counters-after.txt" |
    awk '{printf "%s %s %d\n", $1, $2, $6 - $3}' >"$OUT/link-bytes.txt"
  awk '{printf "  h%s->h%s %12d\n", $1, $2, $3}' "$OUT/link-bytes.txt"
  echo "trace: $trace"
  echo "out:   $OUT"
  return $rc
}

case "$CMD" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  run) cmd_run ;;
  topology) check_case; topology_file ;;
  *) echo "emulate.sh: unknown command '$CMD'" >&2; usage ;;
esac
