#!/usr/bin/env bash
# What the OTLP export of closed flows costs a host, in one run: two `bbrtop export`s watch the same
# loopback churn (--loopback, so its flows ship), one pushing every closed flow to a real
# OpenTelemetry Collector (scripts/setup.sh builds it into target/otelcol), one not (the
# reference); then each one's CPU, the records sent, dropped and their bytes, plain and gzipped
# (two runs). The churn is paced at RATE connections a second (each closes two sockets, both
# shipped); 0 is as fast as python makes them. Needs root (eBPF), python3, and
# `cargo build --release --bin bbrtop`.
# Usage: bench/otlp.sh [CONNECTIONS] [RATE]
set -euo pipefail
CONNS=${1:-10000} RATE=${2:-500}
cd "$(dirname "$0")/.."
BIN=${BBRTOP:-target/release/bbrtop}
COL=target/otelcol/bbrtop-otelcol
[ -x "$BIN" ] || { echo "build bbrtop first (cargo build --release --bin bbrtop)" >&2; exit 1; }
[ -x "$COL" ] || { echo "build the collector first (. scripts/setup.sh && setup_otelcol)" >&2; exit 1; }
DIR=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$DIR"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
metric() { # PORT NAME: the sum of a metric's samples
  curl -fsS "http://127.0.0.1:$1/metrics" | python3 -c "import sys; print(sum(float(l.rsplit(' ',1)[1]) for l in sys.stdin if l.startswith('$2') and l[len('$2')] in '{ '))"
}
ready() { for _ in $(seq 100); do curl -fsS "http://127.0.0.1:$1/-/ready" >/dev/null 2>&1 && return; sleep 0.2; done; echo "exporter on $1 not ready" >&2; exit 1; }

run() { # COMPRESSION
  local cport ship plain sink
  cport=$(free_port)
  cat >"$DIR/col.yaml" <<YAML
receivers: {otlp: {protocols: {http: {endpoint: "127.0.0.1:$cport"}}}}
exporters: {file: {path: "$DIR/received-$1.jsonl", rotation: {max_megabytes: 1024}}}
service: {telemetry: {metrics: {level: none}}, pipelines: {logs: {receivers: [otlp], exporters: [file]}}}
YAML
  "$COL" --config "$DIR/col.yaml" >"$DIR/col.log" 2>&1 & PIDS+=($!)
  ship=$(free_port); plain=$(free_port)
  "$BIN" export --loopback --hindsight.window 0 --web.listen-address "127.0.0.1:$ship" \
    --otlp.endpoint "http://127.0.0.1:$cport" --otlp.compression "$1" 2>"$DIR/ship.log" & PIDS+=($!)
  "$BIN" export --loopback --hindsight.window 0 --web.listen-address "127.0.0.1:$plain" 2>"$DIR/plain.log" & PIDS+=($!)
  ready "$ship"; ready "$plain"
  local c0s c0p t0 t1
  c0s=$(metric "$ship" process_cpu_seconds_total); c0p=$(metric "$plain" process_cpu_seconds_total)
  t0=$(date +%s.%N)
  sink=$(free_port)
  python3 - "$sink" "$CONNS" "$RATE" <<'PY'
import socket, sys, threading, time
port, n, rate = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); l.bind(("127.0.0.1", port)); l.listen(512)
def serve():
    for _ in range(n):
        s, _ = l.accept(); s.recv(8192); s.close()
t = threading.Thread(target=serve); t.start()
start = time.monotonic()
for i in range(n):
    if rate > 0 and (ahead := start + i / rate - time.monotonic()) > 0:
        time.sleep(ahead)
    c = socket.create_connection(("127.0.0.1", port)); c.sendall(b"x" * 4096); c.close()
t.join()
PY
  t1=$(date +%s.%N)
  sleep 3 # the last batch (sent each second) and a scrape after it
  python3 - "$1" "$CONNS" "$t0" "$t1" "$c0s" "$(metric "$ship" process_cpu_seconds_total)" "$c0p" \
    "$(metric "$plain" process_cpu_seconds_total)" "$(metric "$ship" bbrtop_otlp_log_records_sent_total)" \
    "$(metric "$ship" bbrtop_otlp_log_records_dropped_total)" "$(metric "$ship" bbrtop_otlp_sent_bytes_total)" \
    "$(metric "$ship" process_resident_memory_bytes)" "$(metric "$plain" process_resident_memory_bytes)" <<'PY'
import sys
z, n, t0, t1, s0, s1, p0, p1, sent, dropped, sbytes, srss, prss = sys.argv[1], int(sys.argv[2]), *map(float, sys.argv[3:])
secs = t1 - t0
print(f"{z:>4}: {n} connections in {secs:.1f} s ({sent/secs:.0f} records/s); sent {sent:.0f}, dropped {dropped:.0f}; "
      f"{sbytes/max(sent,1):.0f} bytes a record; CPU with OTLP {100*(s1-s0)/secs:.1f}% of a core, "
      f"without {100*(p1-p0)/secs:.1f}% (the same closes); RSS {srss/2**20:.0f} MiB against {prss/2**20:.0f} MiB")
PY
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; PIDS=()
}
run none
run gzip
