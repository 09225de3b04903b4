#!/usr/bin/env bash
# eBPF overhead benchmark, in one run and alternating:
#  1. single-flow loopback iperf3 throughput without and with bbrtop tracing (ROUNDS each);
#  2. ns per run of each program, from bpf_stats (run_time_ns / run_cnt), during the traced runs,
#     of an empty program on the same tracepoint (bench/floor.bpf.c): the measurement's floor;
#     and of bpftrace running tests/bpftrace/rtt_inflation.bt (the same alert): the reference;
#  3. short loopback connections at the top churn rate: closes captured vs sockets closed.
# Needs root (CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN for bpf_stats), iperf3, python3, bpftool, clang,
# and `cargo build --release --example bpf_floor`.
#  4. request/response on one loopback keep-alive connection (CONNECTIONS requests of 15 kB):
#     ns per run of tcp_sendmsg_locked (which starts a response) and of tcp_probe (which ends it).
# Usage: [BBRTOP_COLLECTOR=walk|netlink] bench/bpf.sh [ROUNDS] [SECONDS] [CONNECTIONS]
set -euo pipefail
ROUNDS=${1:-3} SECS=${2:-5} CONNS=${3:-20000}
cd "$(dirname "$0")/.."
BIN=${BBRTOP:-target/release/bbrtop}
# Which collector the traced bbrtop runs: the socket walk's records are filled by tcp_probe too.
COLLECTOR=${BBRTOP_COLLECTOR:-auto}
case "$COLLECTOR" in # the collector toggles (docs/reference/exit-codes-and-files.md, "Flag names")
  walk) collector_flag=(--collector.walk) ;;
  netlink) collector_flag=(--no-collector.walk) ;;
  *) collector_flag=() ;;
esac
[ -x "$BIN" ] || BIN=target/debug/bbrtop
[ -x "$BIN" ] || { echo "build bbrtop first (cargo build --release)" >&2; exit 1; }
FLOOR_LOADER=target/release/examples/bpf_floor
[ -x "$FLOOR_LOADER" ] || { echo "build the floor loader first (cargo build --release --example bpf_floor)" >&2; exit 1; }
FLOOR_OBJ=$(mktemp --suffix=.o)
clang -O2 -g -target bpf -D__TARGET_ARCH_x86 -I crates/bbrtop-collect/bpf -c bench/floor.bpf.c \
    -o "$FLOOR_OBJ"
PORT=$((20000 + RANDOM % 20000))
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

stats_before=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
trap 'cleanup; rm -f "$FLOOR_OBJ"; sysctl -qw kernel.bpf_stats_enabled='"$stats_before" EXIT

iperf3 -s -p "$PORT" >/dev/null 2>&1 & pids+=($!)
sleep 0.5
gbps() { # one iperf3 run's received Gbit/s; retried when the server is still busy with the last
  local t
  for t in 1 2 3; do
    iperf3 -c 127.0.0.1 -p "$PORT" -t "$SECS" -J | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit("iperf3: "+d["error"]) if "error" in d else print(d["end"]["sum_received"]["bits_per_second"]/1e9)' && return
    sleep 1
  done
  return 1
}
prog_ids() { # name [type] -> ids of the loaded programs of that name (bpftrace's is tcp_probe too)
  bpftool prog show -j | python3 -c "import json,sys; print(' '.join(str(x['id']) for x in json.load(sys.stdin) if x.get('name')=='$1' and x.get('type')==('${2:-tracing}')))"
}
prog_stats() { # name [type] -> "run_time_ns run_cnt" of the one loaded program of that name
  local ids; ids=$(prog_ids "$@")
  [ "$(wc -w <<<"$ids")" = 1 ] || { echo "expected one $1 program, found: ${ids:-none}" >&2; exit 1; }
  bpftool prog show id "$ids" -j | python3 -c "import json,sys; x=json.load(sys.stdin); print(x.get('run_time_ns',0), x.get('run_cnt',0))"
}
gone() { # name [type]: wait (bounded) until a detached program of that name has been freed
  for _ in $(seq 100); do [ -z "$(prog_ids "$@")" ] && return; sleep 0.1; done
}
bt_start() { # FILE ARGS...: bpftrace ARGS, output to FILE; back once its tcp_probe program is loaded
  local out=$1; shift
  bpftrace "$@" >"$out" 2>&1 & bt=$!; pids+=($bt)
  for _ in $(seq 100); do [ -n "$(prog_ids tcp_probe tracepoint)" ] && break; sleep 0.1; done
}
bt_stop() { kill -INT "$bt"; wait "$bt" 2>/dev/null || true; gone tcp_probe tracepoint; }

without=() with=() ns=() floor=() bpftrace_ns=()
traced() { # one round's runs with bbrtop: throughput (stats off), then ns per run (stats on)
  gone tcp_probe
  "$BIN" watch "${collector_flag[@]}" --ndjson --port 1 --interval 1s >/dev/null 2>&1 & w=$!; pids+=($w)
  for _ in $(seq 100); do [ -n "$(prog_ids tcp_probe)" ] && break; sleep 0.05; done
  with+=("$(gbps)")
  sysctl -qw kernel.bpf_stats_enabled=1
  read -r t0 c0 <<<"$(prog_stats tcp_probe)"
  gbps >/dev/null
  read -r t c <<<"$(prog_stats tcp_probe)"
  ns+=("$(python3 -c "print(round(($t-$t0)/max($c-$c0,1),1))")")
  sysctl -qw kernel.bpf_stats_enabled=0
  kill "$w"; wait "$w" 2>/dev/null || true
}
untraced() { gone tcp_probe; without+=("$(gbps)"); }
for r in $(seq "$ROUNDS"); do
  # Throughput with bpf_stats off (it adds two clock reads to every program run), in ABBA order
  # so that drift between the runs of a round falls on both sides.
  sysctl -qw kernel.bpf_stats_enabled=0
  if ((r % 2)); then untraced; traced; else traced; untraced; fi
  # The floor: an empty program on the same tracepoint, the same flow.
  sysctl -qw kernel.bpf_stats_enabled=1
  coproc FLOOR { "$FLOOR_LOADER" "$FLOOR_OBJ"; }
  read -r _ <&"${FLOOR[0]}"
  gbps >/dev/null
  read -r ft fc <<<"$(prog_stats floor_probe)"
  floor+=("$(python3 -c "print(round($ft/max($fc,1),1))")")
  exec {FLOOR[1]}>&-; wait "$FLOOR_PID" 2>/dev/null || true
  gone floor_probe
  # The reference: bpftrace running the same alert (tests/bpftrace/rtt_inflation.bt) on the same flow.
  if command -v bpftrace >/dev/null; then
    bt_out=$(mktemp)
    bt_start "$bt_out" tests/bpftrace/rtt_inflation.bt
    gbps >/dev/null
    read -r bt_t bt_c <<<"$(prog_stats tcp_probe tracepoint)"
    bpftrace_ns+=("$(python3 -c "print(round($bt_t/max($bt_c,1),1))")")
    bt_stop
    rm -f "$bt_out"
  fi
done
# The mix of tcp_probe events on this flow: tcp_probe skips those that find nothing in flight
# (all of the receiver's), so its ns/run is a blend of skipped and full runs.
idle_share=n/a
if command -v bpftrace >/dev/null; then
  bt_out=$(mktemp)
  bt_start "$bt_out" -e "tracepoint:tcp:tcp_probe /args->sport == $PORT || args->dport == $PORT/ { @[args->snd_nxt == args->snd_una] = count(); }"
  gbps >/dev/null
  bt_stop
  idle_share=$(python3 -c "import re,sys; d={int(k):int(v) for k,v in re.findall(r'@\[(\d)\]: (\d+)', open('$bt_out').read())}; print(f'{100*d.get(1,0)/max(sum(d.values()),1):.0f}%')")
  rm -f "$bt_out"
fi
echo "tcp_probe events with nothing in flight (skipped after one load): $idle_share"
python3 - "${without[*]}" "${with[*]}" "${ns[*]}" "${floor[*]}" "${bpftrace_ns[*]}" <<'PY'
import sys, statistics as st
wo, wi, ns, fl, bt = ([float(x) for x in a.split()] for a in sys.argv[1:6])
print(f"throughput without bbrtop: {' '.join(f'{x:.2f}' for x in wo)} Gbit/s  mean {st.mean(wo):.2f}")
print(f"throughput with bbrtop:    {' '.join(f'{x:.2f}' for x in wi)} Gbit/s  mean {st.mean(wi):.2f}")
paired = [100 * (b / a - 1) for a, b in zip(wo, wi)]
print(f"throughput change: {100*(st.mean(wi)/st.mean(wo)-1):+.2f}% (means); per round {' '.join(f'{x:+.1f}' for x in paired)}%, median {st.median(paired):+.2f}%")
print(f"tcp_probe ns/run per round: {ns}  median {st.median(ns):.1f}")
print(f"empty tcp_probe program (the floor) ns/run per round: {fl}  median {st.median(fl):.1f}")
if bt:
    print(f"bpftrace tests/bpftrace/rtt_inflation.bt ns/run per round: {bt}  median {st.median(bt):.1f}")
PY

# Churn: CONNS short connections as fast as python can make them; both ends close in this
# namespace, so 2 x CONNS close records are expected (the loss counter explains any gap).
CPORT=$((PORT + 1))
"$BIN" watch --closed --ndjson --port 1 --interval 100ms > /tmp/bbrtop-bench-closed.$$ 2>/tmp/bbrtop-bench-closed.err.$$ & w=$!; pids+=($w)
sleep 1
python3 - "$CPORT" "$CONNS" <<'PY'
import socket, sys, threading, time
port, n = int(sys.argv[1]), int(sys.argv[2])
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port)); srv.listen(4096)
def serve():
    for _ in range(n):
        c, _ = srv.accept(); c.close()
threading.Thread(target=serve, daemon=True).start()
t = time.time()
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port)); s.close()
dt = time.time() - t
print(f"churn: {n} connections in {dt:.2f}s = {n/dt:.0f}/s")
PY
sleep 2
read -r dt dc <<<"$(prog_stats tcp_destroy_sock)"
read -r et ec <<<"$(prog_stats tcp_established)"
# Request/response: what timing responses costs per write and per ACK, over this phase alone.
read -r st0 sc0 <<<"$(prog_stats tcp_sendmsg_locked)"
read -r pt0 pc0 <<<"$(prog_stats tcp_probe tracing)"
python3 - "$((CPORT + 1))" "$CONNS" <<'PY'
import socket, sys, threading, time
port, n = int(sys.argv[1]), int(sys.argv[2])
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port)); srv.listen(1)
body = b"x" * 15000
def serve():
    c, _ = srv.accept()
    while c.recv(16):
        c.sendall(body)
threading.Thread(target=serve, daemon=True).start()
cl = socket.create_connection(("127.0.0.1", port))
t = time.time()
for _ in range(n):
    cl.sendall(b"GET"); got = 0
    while got < len(body):
        got += len(cl.recv(65536))
dt = time.time() - t
print(f"request/response: {n} responses of 15 kB in {dt:.2f}s = {n/dt:.0f}/s")
PY
read -r st1 sc1 <<<"$(prog_stats tcp_sendmsg_locked)"
read -r pt1 pc1 <<<"$(prog_stats tcp_probe tracing)"
echo "ns/run during request/response: tcp_sendmsg_locked $(python3 -c "print(round(($st1-$st0)/max($sc1-$sc0,1),1))") ($((sc1 - sc0)) runs), tcp_probe $(python3 -c "print(round(($pt1-$pt0)/max($pc1-$pc0,1),1))") ($((pc1 - pc0)) runs)"
lost=$(bpftool map dump name lost -j | python3 -c 'import json,sys; print(sum(v["value"] for m in json.load(sys.stdin) for v in m["formatted"]["values"]))')
kill -INT "$w"; wait "$w" 2>/dev/null || true
captured=$(grep -c ":$CPORT\"" /tmp/bbrtop-bench-closed.$$ || true)
echo "closes captured: $captured of $((2 * CONNS)) sockets (port $CPORT), ring-buffer losses counted: $lost; ns/run: tcp_destroy_sock $(python3 -c "print(round($dt/max($dc,1),1))"), tcp_established (every state change) $(python3 -c "print(round($et/max($ec,1),1))")"
cat /tmp/bbrtop-bench-closed.err.$$ >&2; rm -f /tmp/bbrtop-bench-closed.$$ /tmp/bbrtop-bench-closed.err.$$
