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
#   emulate.sh up     --case slow-link|square|ring-only [--prefix rs] [--rate 200mbit] ...
#   emulate.sh run    --case ... [--out DIR] [--algo ring,tree] [--sizes 1M,4M] [--probe] [--keep]
#   emulate.sh run-job [--case square] [--ranks-per-host 2] [--out DIR] [--allreduce ALGO] -- CMD [ARGS...]
#                     one `ringside record --nnodes 4 --node-rank i --ranks R` per host running
#                     CMD (MASTER_ADDR: host 0), merged into DIR/trace.sqlite; --allreduce ring|
#                     tree|multipath reroutes the job's Gloo all-reduces (record --allreduce),
#                     the ranks get RINGSIDE_TOPOLOGY (the case's topology file);
#                     --job-hosts H runs the job on h0..h(H-1) only (default 4); --launcher: CMD
#                     starts its own ranks (torchrun with c10d rendezvous): `record` gets no
#                     --ranks, --master-addr or --run-id (the run id is torchrun's --rdzv-id), and
#                     --ranks-per-host only says where the truth places the ranks; --node-merge:
#                     each host merges its own ranks as the job ends (`record --node-merge`, all
#                     hosts at once), then one merge of the node traces gives DIR/trace.sqlite
#   emulate.sh status [--prefix rs]
#   emulate.sh down   [--prefix rs]
#   emulate.sh topology --case ...   (prints the matching topology file)
#
# Cases (the matching topology files sit beside this script, docs/topology-emulation.md):
#   slow-link  4-host full mesh, link h1-h2 5x slower than the 5 others
#   square     4-host full mesh, all links equal: the ring uses the 4 sides
#              (h0-h1-h2-h3-h0), the double binary tree also the diagonals h0-h2, h1-h3
#   ring-only  4 hosts cabled in a ring, h0-h1-h2-h3-h0, all links equal, no diagonals:
#              h_i reaches h_i+2 through h_i+1 (IP forwarding on, this case only), so the
#              rendezvous and a tree's h0-h2 messages are relayed over two cables
#   switch     4 hosts, one NIC each (--rate, both ways) to a switch (a bridge in namespace
#              <prefix>-sw): every pair is reachable, but all of a host's traffic shares its
#              NIC, so the ring is already optimal. The topology file lists every pair at the
#              NIC's rate (a topology file has no switch), which is also what the probe sees;
#              the byte counters are per NIC (h<i>->sw)
#
# The bench ranks get RINGSIDE_TOPOLOGY=<out>/topology.txt (the case's topology file), from
# which `--algo multipath` takes its link capacities; with --probe they get none, and multipath
# measures every host pair when the communicator is created (docs/reference.md).
#
# Queues: each link's tbf holds at most --queue-ms (default 50) of data at its rate before it
# drops. A link loaded both ways (multipath) queues the ACKs of one direction behind up to that
# much data of the other; docs/bench.md has figures for both depths.
#
# Packets: every veth gets --mtu (default 65000). The links' rates are what is emulated; the
# packet size is not. At a 1500-byte MTU the kernel shapes and acknowledges each 1.5 kB packet
# on the ranks' own CPUs (a real NIC segments and checksums in hardware): on a 2-core machine a
# 16 MiB ring at 200 Mbit/s then spent 10 s of system time over the bench, and an algorithm that
# drives all 12 directed links at once was measured CPU-bound rather than link-bound.
# At 65000 the same bench spends 1.4 s. --mtu 1500 gives the old behaviour.
#
# Clocks (run, run-job): --clocks gives every host a clock of its own: a time namespace
# whose CLOCK_MONOTONIC and CLOCK_BOOTTIME are hours off the others' (--mono-offsets-s,
# default 3600,14400,25200,36000), a wall clock some milliseconds off (--wall-offsets-ms,
# default 0,8,-5,13), and with --drift I:PPM host I's monotonic clock PPM ppm fast (negative:
# slow), through libringside_clockshift.so (--clockshift PATH; found next to ringside's lib/).
# The truth goes to DIR/clock-truth.json (docs/multi-node.md, "The emulated cluster").
#
# Exit status: 0 ok, 1 the bench or a step failed, 2 bad usage, 77 this machine
# cannot emulate (not root, no network namespaces, no tc, no veth/netem, no time namespaces).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
N=4

usage() {
  sed -n '2,/^set -euo pipefail/{/^set/!p}' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 2
}

die() { echo "emulate.sh: $*" >&2; exit 1; }
cannot() { echo "emulate.sh: cannot emulate here: $*" >&2; exit 77; }

CMD="${1:-}"
[[ -z "$CMD" || "$CMD" == -h || "$CMD" == --help ]] && usage
shift
CASE="" PREFIX="rs" RATE="200mbit" SLOW_RATE="" DELAY=0 BURST=64kb OUT="" ALGO="ring,tree"
QUEUE_MS=50 MTU=65000 SIZES="1M,4M" ITERS=3 WARMUP=1 KEEP=0 RINGSIDE="" PORT=29500 TIMEOUT_S=60
CLOCKS=0 MONO_OFFSETS="3600,14400,25200,36000" WALL_OFFSETS="0,8,-5,13" DRIFT="" CLOCKSHIFT=""
RANKS_PER_HOST=2 JOB=() JOB_ALLREDUCE="" PROBE=0 JOB_HOSTS=$N LAUNCHER=0 NODE_MERGE=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --clocks) CLOCKS=1; shift ;;
    --probe) PROBE=1; shift ;;
    --allreduce) JOB_ALLREDUCE="$2"; shift 2 ;;
    --mono-offsets-s) MONO_OFFSETS="$2"; shift 2 ;;
    --wall-offsets-ms) WALL_OFFSETS="$2"; shift 2 ;;
    --drift) DRIFT="$2"; shift 2 ;;
    --clockshift) CLOCKSHIFT="$2"; shift 2 ;;
    --ranks-per-host) RANKS_PER_HOST="$2"; shift 2 ;;
    --job-hosts) JOB_HOSTS="$2"; shift 2 ;;
    --launcher) LAUNCHER=1; shift ;;
    --node-merge) NODE_MERGE=1; shift ;;
    --port) PORT="$2"; shift 2 ;;
    --) shift; JOB=("$@"); break ;;
    --case) CASE="$2"; shift 2 ;;
    --prefix) PREFIX="$2"; shift 2 ;;
    --rate) RATE="$2"; shift 2 ;;
    --slow-rate) SLOW_RATE="$2"; shift 2 ;;
    --delay) DELAY="$2"; shift 2 ;;
    --burst) BURST="$2"; shift 2 ;;
    --queue-ms) QUEUE_MS="$2"; shift 2 ;;
    --mtu) MTU="$2"; shift 2 ;;
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
[[ "$RANKS_PER_HOST" =~ ^[1-9][0-9]?$ ]] || die "--ranks-per-host must be 1..99"
[[ "$JOB_HOSTS" =~ ^[1-9]$ ]] && ((JOB_HOSTS <= N)) || die "--job-hosts must be 1..$N"
[[ "$QUEUE_MS" =~ ^[1-9][0-9]{0,3}$ ]] || die "--queue-ms must be 1..9999"
[[ "$MTU" =~ ^[1-9][0-9]{2,4}$ ]] && ((MTU >= 576 && MTU <= 65000)) || die "--mtu must be 576..65000 (a packet must fit the tbf burst, 64 kB by default)"

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
# Whether hosts i<j are cabled in the case.
has_link() {
  [[ "$CASE" != ring-only ]] || (($2 - $1 == 1 || $2 - $1 == N - 1))
}
# Rate of link i-j for the case.
link_rate() {
  local i=$1 j=$2
  if [[ "$CASE" == slow-link ]] && ((i == 1 && j == 2)); then echo "$SLOW_RATE"; else echo "$RATE"; fi
}

our_namespaces() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${PREFIX}-(h[0-9]+|sw)\$" || true
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
    square | ring-only | switch) ;;
    "") die "--case slow-link|square|ring-only|switch is required" ;;
    *) die "unknown case '$CASE' (slow-link, square, ring-only, switch)" ;;
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
    rm -rf "/etc/netns/$n"
    # Processes still inside (a crashed run) would keep the namespace's links alive.
    local pids
    pids="$(ip netns pids "$n" 2>/dev/null || true)"
    [[ -n "$pids" ]] && kill $pids 2>/dev/null || true
    ip netns del "$n" 2>/dev/null || true
  done
  rmdir /etc/netns 2>/dev/null || true  # only when no other namespace has files there
  if [[ -n "$(our_namespaces)" ]]; then
    echo "emulate.sh: could not delete: $(our_namespaces | tr '\n' ' ')" >&2
    return 1
  fi
}

# Egress of one end: tbf for the rate, netem under it for the one-way delay (if any).
shape() {
  ip netns exec "$1" tc qdisc add dev "$2" root handle 1: tbf rate "$3" burst "$BURST" \
    latency "${QUEUE_MS}ms"
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
    # `ip netns exec` mounts /etc/netns/<ns>/hosts over /etc/hosts: each emulated host's name
    # resolves to its identity address (PyTorch's Gloo binds to what its hostname resolves to).
    mkdir -p "/etc/netns/$(ns $i)"
    {
      echo "127.0.0.1 localhost"
      for ((j = 0; j < N; j++)); do echo "$(ident $j) h$j"; done
    } >"/etc/netns/$(ns $i)/hosts"
    ip netns add "$(ns $i)"
    ip -n "$(ns $i)" link set lo up
    ip -n "$(ns $i)" addr add "$(ident $i)/32" dev lo
    # No relaying: traffic between h_i and h_j must cross link i-j or nothing.
    ip netns exec "$(ns $i)" sysctl -qw net.ipv4.ip_forward=0 net.ipv4.conf.all.rp_filter=0 \
      net.ipv4.conf.default.rp_filter=0
  done
  if [[ "$CASE" == switch ]]; then
    up_switch
    echo "up: case $CASE, prefix $PREFIX, $N hosts, one NIC each at $RATE, delay ${DELAY/#0/none} each way, mtu $MTU"
    return 0
  fi
  for ((i = 0; i < N; i++)); do
    for ((j = i + 1; j < N; j++)); do
      has_link $i $j || continue
      k=$(linkidx $i $j)
      local a b rate
      a="$(ns $i)" b="$(ns $j)" rate="$(link_rate $i $j)"
      ip -n "$a" link add "to-h$j" type veth peer name "to-h$i" netns "$b"
      ip -n "$a" addr add "10.200.$k.1/30" dev "to-h$j"
      ip -n "$b" addr add "10.200.$k.2/30" dev "to-h$i"
      ip -n "$a" link set "to-h$j" mtu "$MTU"
      ip -n "$b" link set "to-h$i" mtu "$MTU"
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
  ((N == 4)) && [[ "$CASE" == ring-only ]] && route_diagonals
  echo "up: case $CASE, prefix $PREFIX, $N hosts, rate $RATE${SLOW_RATE:+ (h1-h2: $SLOW_RATE)}, delay ${DELAY/#0/none} each way, mtu $MTU"
}

# switch: namespace <prefix>-sw holds a bridge; host i's veth "nic" (10.202.0.<i+1>/24) is its
# port "port<i>". The NIC's rate is shaped both ways: on "nic" (sending) and on "port<i>"
# (the switch toward the host: receiving).
up_switch() {
  local sw="${PREFIX}-sw" i j
  ip netns add "$sw"
  ip -n "$sw" link set lo up
  ip -n "$sw" link add br0 type bridge 2>/dev/null || cannot "no Linux bridge support (the switch case)"
  ip -n "$sw" link set br0 up
  for ((i = 0; i < N; i++)); do
    ip -n "$(ns $i)" link add nic type veth peer name "port$i" netns "$sw"
    ip -n "$(ns $i)" link set nic mtu "$MTU"
    ip -n "$sw" link set "port$i" mtu "$MTU"
    ip -n "$sw" link set "port$i" master br0
    ip -n "$(ns $i)" addr add "10.202.0.$((i + 1))/24" dev nic
    ip -n "$(ns $i)" link set nic up
    ip -n "$sw" link set "port$i" up
    shape "$(ns $i)" nic "$RATE"
    shape "$sw" "port$i" "$RATE"
    ip netns exec "$(ns $i)" sysctl -qw net.ipv4.conf.nic.rp_filter=0
  done
  for ((i = 0; i < N; i++)); do
    for ((j = 0; j < N; j++)); do
      ((i == j)) && continue
      ip -n "$(ns $i)" route add "$(ident $j)/32" via "10.202.0.$((j + 1))" dev nic src "$(ident $i)"
    done
  done
}

# Address of host $1 on its link to host $2 (cabled).
link_addr() {
  local lo=$(($1 < $2 ? $1 : $2)) hi=$(($1 < $2 ? $2 : $1))
  echo "10.200.$(linkidx $lo $hi).$(($1 == lo ? 1 : 2))"
}

# ring-only: h_i reaches h_(i+2) through h_(i+1), which forwards.
route_diagonals() {
  local i via far
  for ((i = 0; i < N; i++)); do
    via=$(((i + 1) % N)) far=$(((i + 2) % N))
    ip netns exec "$(ns $i)" sysctl -qw net.ipv4.ip_forward=1
    ip -n "$(ns $i)" route add "$(ident $far)/32" via "$(link_addr $via $i)" dev "to-h$via" \
      src "$(ident $i)"
  done
}

cmd_status() {
  local nss
  nss="$(our_namespaces)"
  if [[ -z "$nss" ]]; then echo "no namespaces with prefix '$PREFIX'"; return 0; fi
  local i j
  printf '%-10s %-6s %-14s %-24s %s\n' host dev address qdisc tx_bytes
  if ip netns list | awk '{print $1}' | grep -qx "${PREFIX}-sw"; then
    for ((i = 0; i < N; i++)); do
      local n="$(ns $i)"
      printf '%-10s %-6s %-14s %-24s %s\n' "h$i" nic \
        "$(ip -n "$n" -4 -o addr show dev nic | awk '{print $4}')" \
        "$(ip netns exec "$n" tc qdisc show dev nic | head -1 | grep -oE 'rate [^ ]+' || true)" \
        "$(ip netns exec "$n" cat /sys/class/net/nic/statistics/tx_bytes)"
    done
    return 0
  fi
  directed_links | while read -r i j; do
    local n qd
    n="$(ns $i)"
    ip netns list | awk '{print $1}' | grep -qx "$n" || continue
    qd="$(ip netns exec "$n" tc qdisc show dev "to-h$j" | head -1 | grep -oE 'rate [^ ]+' || true)"
    printf '%-10s %-6s %-14s %-24s %s\n' "h$i" "to-h$j" \
      "$(ip -n "$n" -4 -o addr show dev "to-h$j" | awk '{print $4}')" "$qd" "$(tx_bytes $i $j)"
  done
}

# Every directed link of the case (not the switch): lines "i j".
directed_links() {
  local i j
  for ((i = 0; i < N; i++)); do
    for ((j = 0; j < N; j++)); do
      ((i == j)) && continue
      has_link $((i < j ? i : j)) $((i < j ? j : i)) && echo "$i $j"
    done
  done
  return 0
}

tx_bytes() { ip netns exec "$(ns $1)" cat "/sys/class/net/to-h$2/statistics/tx_bytes"; }

# Snapshot of every directed link's tx bytes: lines "i j bytes" (switch: "i sw bytes", what host
# i's NIC sent).
snapshot() {
  local i j
  if [[ "$CASE" == switch ]]; then
    for ((i = 0; i < N; i++)); do
      echo "$i sw $(ip netns exec "$(ns $i)" cat /sys/class/net/nic/statistics/tx_bytes)"
    done
    return 0
  fi
  directed_links | while read -r i j; do echo "$i $j $(tx_bytes $i $j)"; done
}

# The topology file (analyzer/include/ringside/analyzer/topology.h, docs/topology.md) of
# what `up` builds with these options; samples/topology/<case>.topo is the default's.
topology_file() {
  local i j lat="$DELAY"
  # Without netem the one-way latency is the veth's own (tens of microseconds here).
  [[ "$lat" == 0 ]] && lat=25us
  echo "ringside-topology 1"
  if [[ "$CASE" == switch ]]; then
    echo "# emulate.sh --case switch: 4 namespaces, one NIC each to a switch. A topology file has"
    echo "# no switch: every pair is listed at the NIC's rate, though a host's pairs share its NIC."
  elif [[ "$CASE" == ring-only ]]; then
    echo "# emulate.sh --case $CASE: 4 namespaces cabled in a ring of veth pairs shaped with tc"
  else
    echo "# emulate.sh --case $CASE: 4 namespaces, full mesh of veth pairs shaped with tc"
  fi
  for ((i = 0; i < N; i++)); do echo "node h$i ranks $i"; done
  for ((i = 0; i < N; i++)); do
    for ((j = i + 1; j < N; j++)); do
      has_link $i $j || continue
      echo "link h$i h$j bandwidth $(link_rate $i $j | sed 's/mbit$/Mbit/;s/gbit$/Gbit/;s/kbit$/kbit/') latency $lat"
    done
  done
}

# ---------------------------------------------------------------------------- clocks

# Entry $2 (0-based) of the comma-separated list $1.
list_item() { echo "$1" | cut -d, -f"$(($2 + 1))"; }
mono_offset_s() { if ((CLOCKS)); then list_item "$MONO_OFFSETS" "$1"; else echo 0; fi; }
wall_offset_ns() {
  if ((CLOCKS)); then awk -v ms="$(list_item "$WALL_OFFSETS" "$1")" 'BEGIN { printf "%d", ms * 1e6 }'
  else echo 0; fi
}
drift_ppm() {
  if [[ -n "$DRIFT" && "${DRIFT%%:*}" == "$1" ]]; then echo "${DRIFT#*:}"; else echo 0; fi
}

check_clocks() {
  if ((!CLOCKS)); then
    [[ -z "$DRIFT" ]] || die "--drift needs --clocks"
    return 0
  fi
  local i
  for ((i = 0; i < JOB_HOSTS; i++)); do
    [[ "$(list_item "$MONO_OFFSETS" $i)" =~ ^[0-9]+$ ]] ||
      die "--mono-offsets-s needs $JOB_HOSTS whole numbers of seconds >= 0, e.g. 3600,14400,25200,36000"
    [[ "$(list_item "$WALL_OFFSETS" $i)" =~ ^-?[0-9]+(\.[0-9]+)?$ ]] ||
      die "--wall-offsets-ms needs $JOB_HOSTS numbers of milliseconds, e.g. 0,8,-5,13"
  done
  [[ -z "$DRIFT" || "$DRIFT" =~ ^[0-3]:-?[0-9]+(\.[0-9]+)?$ ]] || die "--drift takes HOST:PPM, e.g. 2:20"
  unshare --time --fork --monotonic 1 --boottime 1 true 2>/dev/null ||
    cannot "time namespaces are not available (unshare --time failed: Linux >= 5.6 and root needed)"
  if [[ -z "$CLOCKSHIFT" ]]; then
    local d c
    d="$(dirname "$RINGSIDE")"
    for c in "$d/../lib/libringside_clockshift.so" "$d/libringside_clockshift.so"; do
      [[ -f "$c" ]] && { CLOCKSHIFT="$(cd "$(dirname "$c")" && pwd)/$(basename "$c")"; break; }
    done
  fi
  [[ -f "$CLOCKSHIFT" ]] || die "libringside_clockshift.so not found (build target ringside_clockshift, or --clockshift PATH)"
}

# The CLOCK_MONOTONIC origin of host $1's drift, in the host's own clock; set by write_truth.
declare -a ORIGIN_NS=()

# DIR/clock-truth.json: what each emulated host's clocks are, against the machine's own.
# $1: ranks per host (host i runs ranks i*$1 .. i*$1+$1-1).
write_truth() {
  local per=$1 now i r
  now="$(python3 -c 'import time; print(time.monotonic_ns())')"
  {
    echo "{"
    echo '  "version": 1,'
    echo '  "reference": "CLOCK_MONOTONIC and CLOCK_REALTIME of the machine (the root time namespace)",'
    echo '  "model": "host monotonic = t + monotonic_offset_ns + (t + monotonic_offset_ns - rate_origin_ns) * rate_ppm / 1e6, t the reference monotonic; host boottime likewise with boottime_offset_ns; host wall = reference wall + wall_offset_ns",'
    echo '  "hosts": ['
    for ((i = 0; i < JOB_HOSTS; i++)); do
      local off_ns=$(($(mono_offset_s $i) * 1000000000))
      ORIGIN_NS[$i]=$((now + off_ns))
      local ranks=""
      for ((r = i * per; r < (i + 1) * per; r++)); do ranks+="${ranks:+, }$r"; done
      printf '    {"host": "h%d", "index": %d, "ranks": [%s], "monotonic_offset_ns": %d, "boottime_offset_ns": %d, "wall_offset_ns": %d, "rate_ppm": %s, "rate": %s, "rate_origin_ns": %d}%s\n' \
        $i $i "$ranks" $off_ns $off_ns "$(wall_offset_ns $i)" "$(drift_ppm $i)" \
        "$(awk -v p="$(drift_ppm $i)" 'BEGIN { printf "%.9f", 1 + p / 1e6 }')" "${ORIGIN_NS[$i]}" \
        "$( ((i < JOB_HOSTS - 1)) && echo ,)"
    done
    echo '  ]'
    echo "}"
  } >"$OUT/clock-truth.json"
}

# Runs CMD as emulated host $1: its network namespace, its own UTS namespace (hostname h<i>),
# with --clocks its own time namespace and clock shifts.
host_exec() {
  local i=$1
  shift
  local pre=(ip netns exec "$(ns $i)" unshare --uts --fork) vars=()
  if ((CLOCKS)); then
    local s
    s="$(mono_offset_s $i)"
    pre+=(--time --monotonic "$s" --boottime "$s")
    vars=(LD_PRELOAD="$CLOCKSHIFT${LD_PRELOAD:+:$LD_PRELOAD}" RINGSIDE_CLOCKSHIFT_WALL_NS="$(wall_offset_ns $i)"
      RINGSIDE_CLOCKSHIFT_PPM="$(drift_ppm $i)" RINGSIDE_CLOCKSHIFT_ORIGIN_NS="${ORIGIN_NS[$i]}")
  fi
  "${pre[@]}" env -u RINGSIDE_BENCH_PORT -u TORCHELASTIC_USE_AGENT_STORE -u GLOO_SOCKET_IFNAME \
    "${vars[@]}" sh -c 'hostname "$0" && exec "$@"' "h$i" "$@"
}

# ------------------------------------------------------------------------------- runs

# Finds ringside, makes OUT, brings the namespaces up (and down at exit) unless they are.
prepare_run() {
  check_case
  [[ -n "$RINGSIDE" ]] || for c in "$REPO/build/bin/ringside" "$REPO/build-topo/bin/ringside"; do
    [[ -x "$c" ]] && { RINGSIDE="$c"; break; }
  done
  [[ -x "$RINGSIDE" ]] || die "no ringside binary (build it, or give --ringside PATH)"
  check_clocks
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
}

cmd_run() {
  prepare_run
  topology_file >"$OUT/topology.txt"
  write_truth 1
  snapshot >"$OUT/counters-before.txt"
  local trace="$OUT/trace.sqlite" i pids=() rc=0
  rm -rf "$trace" "$trace.ranks"
  for ((i = N - 1; i >= 0; i--)); do
    # One rank per namespace; every rank writes its rank file into the same folder
    # ($trace.ranks on the shared filesystem), so rank 0 can merge all four.
    # Own UTS namespace per rank with hostname h<i>: the trace's rank.host names the
    # emulated host, as in the topology files (node h<i> ranks <i>).
    host_exec $i env RANK=$i WORLD_SIZE=$N MASTER_ADDR="$(ident 0)" MASTER_PORT=$PORT \
      RINGSIDE_TOPOLOGY="$( ((PROBE)) || echo "$OUT/topology.txt")" \
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
  awk '{printf "  h%s->%s %12d\n", $1, ($2 == "sw" ? "sw" : "h" $2), $3}' "$OUT/link-bytes.txt"
  echo "trace: $trace"
  echo "out:   $OUT"
  return $rc
}

# CMD on every host under `ringside record --nnodes`, as a user runs a job over 4 machines
# (docs/multi-node.md), then one merge of the 4 node folders (--node-merge: of the 4 node traces).
cmd_run_job() {
  ((${#JOB[@]} > 0)) || die "run-job needs the job's command after --"
  [[ -n "$CASE" ]] || CASE=square
  prepare_run
  write_truth "$RANKS_PER_HOST"
  local trace="$OUT/trace.sqlite" i pids=() rc=0 run_id
  run_id="emulate-$(date +%Y%m%d-%H%M%S)-$$"
  rm -rf "$trace" "$trace.ranks"
  local reroute=()
  if [[ -n "$JOB_ALLREDUCE" ]]; then
    topology_file >"$OUT/topology.txt"
    reroute=(--allreduce "$JOB_ALLREDUCE")
  fi
  # ringside starts the ranks (--ranks), or the command is a launcher that does (torchrun
  # with its own rendezvous: the run id is its --rdzv-id, which record reads).
  local ranks=(--ranks "$RANKS_PER_HOST" --master-addr "$(ident 0)" --master-port "$PORT" --run-id "$run_id")
  if ((LAUNCHER)); then ranks=(); run_id="(the launcher's)"; fi
  local node_merge=()
  if ((NODE_MERGE)); then node_merge=(--node-merge); fi
  for ((i = 0; i < JOB_HOSTS; i++)); do
    host_exec $i env RINGSIDE_TOPOLOGY="$( ((PROBE)) || echo "${JOB_ALLREDUCE:+$OUT/topology.txt}")" \
      "$RINGSIDE" record --nnodes $JOB_HOSTS --node-rank $i "${ranks[@]}" "${node_merge[@]}" -o "$trace" \
      "${reroute[@]}" --grace-s 10 -q -- "${JOB[@]}" >"$OUT/host$i.out" 2>"$OUT/host$i.err" &
    pids[$i]=$!
  done
  for ((i = 0; i < JOB_HOSTS; i++)); do
    wait "${pids[$i]}" || { echo "host h$i failed (exit $?): $(tail -3 "$OUT/host$i.err")" >&2; rc=1; }
  done
  local inputs=("$trace.ranks")
  if ((NODE_MERGE)); then inputs=("$trace.ranks"/node-*.sqlite); fi
  "$RINGSIDE" merge -q -f "${inputs[@]}" -o "$trace" 2>"$OUT/merge.err" ||
    { echo "merge failed: $(cat "$OUT/merge.err")" >&2; rc=1; }
  echo "run id: $run_id"
  echo "trace: $trace"
  echo "truth: $OUT/clock-truth.json"
  echo "out:   $OUT"
  return $rc
}

case "$CMD" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  run) cmd_run ;;
  run-job) cmd_run_job ;;
  topology) check_case; topology_file ;;
  *) echo "emulate.sh: unknown command '$CMD'" >&2; usage ;;
esac
