#!/usr/bin/env bash
# What bbrtop's eBPF programs cost on an edge server's workload, per request, against the floor:
# nginx (Debian's nginx-light, one worker, keep-alive, a 15 kB file) in one network namespace,
# wrk (Debian's, 64 connections) in another, joined by a veth pair. ROUNDS alternating rounds
# (ABBA order), each of one SECONDS-long wrk run per arm:
#   bbrtop  `bbrtop export` with default flags (the socket walk, the alert, close records and
#           response times all on; --web.listen-address 127.0.0.1:0 and --hindsight.dir only
#           keep it off the host's port and directory);
#   floor   empty programs on the same five hooks (bench/floor_edge.bpf.c, loaded by the
#           bpf_floor example): the trampoline's call and bpf_stats' two clock reads;
#   LABEL   each other build named in EDGE_BINARIES or EDGE_OBJECTS (see below), the same way.
# For each: requests/s from wrk, and per program, from bpf_stats (kernel.bpf_stats_enabled=1 for
# the run, restored after): runs and ns per request (run_time_ns delta / requests), pooled over
# the rounds; the total, the ratio to the floor per hook and per round. The hooks fire for every
# socket of the host: both ends here (a request's runs are the server's and the client's), and
# anything else running, so measure on a quiet host; the report says when other tracing programs
# were loaded. Needs root; installs nginx-light and wrk through scripts/setup.sh (setup_bench)
# and builds what is missing.
# Usage: bench/edge.sh [ROUNDS] [SECONDS]      (BBRTOP=PATH: another bbrtop binary)
set -euo pipefail
usage() { echo "usage: bench/edge.sh [ROUNDS] [SECONDS]" >&2; exit 2; }
ROUNDS=${1:-3} SECS=${2:-10}
[[ $ROUNDS =~ ^[1-9][0-9]*$ && $SECS =~ ^[1-9][0-9]*$ && $# -le 2 ]] || usage
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench/edge.sh: needs root (network namespaces, bpf_stats)" >&2; exit 1; }
# shellcheck source=scripts/setup.sh
. scripts/setup.sh
setup_bench

BIN=${BBRTOP:-target/release/bbrtop}
[ -x "$BIN" ] || cargo build --release --locked --bin bbrtop >&2
FLOOR_LOADER=target/release/examples/bpf_floor
[ -x "$FLOOR_LOADER" ] || cargo build --release --locked --example bpf_floor >&2

tmp=$(mktemp -d /tmp/bbrtop-edge.XXXXXX)
id=$$
ns_srv=bbrtop-edge-$id-srv ns_cli=bbrtop-edge-$id-cli
pids=()
stats_before=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    ip netns del "$ns_srv" 2>/dev/null || true
    ip netns del "$ns_cli" 2>/dev/null || true
    sysctl -qw kernel.bpf_stats_enabled="$stats_before" || true
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
forget() { # PID: no longer ours to end
    local p keep=()
    for p in "${pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
    pids=("${keep[@]}")
}
stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; forget "$1"; }

clang -O2 -g -target bpf -D__TARGET_ARCH_x86 -I crates/bbrtop-collect/bpf -c bench/floor_edge.bpf.c \
    -o "$tmp/floor.o"

# Two namespaces and a veth pair; deleting the namespaces (cleanup) deletes the pair.
ip netns add "$ns_srv"
ip netns add "$ns_cli"
ip link add "edge${id}s" netns "$ns_srv" type veth peer name "edge${id}c" netns "$ns_cli"
ip -n "$ns_srv" addr add 10.99.0.1/24 dev "edge${id}s"
ip -n "$ns_cli" addr add 10.99.0.2/24 dev "edge${id}c"
for ns in "$ns_srv" "$ns_cli"; do ip -n "$ns" link set lo up; done
ip -n "$ns_srv" link set "edge${id}s" up
ip -n "$ns_cli" link set "edge${id}c" up

# nginx: its own prefix, config, logs and temp paths under $tmp; in the foreground (daemon off),
# so the PID `ip netns exec` leaves is the master's, which ends its worker as it ends.
mkdir -p "$tmp/nginx/www" "$tmp/nginx/temp"
chmod a+rx "$tmp" # nginx's worker runs as an unprivileged user
head -c 15000 /dev/urandom >"$tmp/nginx/www/body"
cat >"$tmp/nginx/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 300s;
    keepalive_requests 100000000;
    client_body_temp_path $tmp/nginx/temp/body;
    proxy_temp_path $tmp/nginx/temp/proxy;
    fastcgi_temp_path $tmp/nginx/temp/fastcgi;
    uwsgi_temp_path $tmp/nginx/temp/uwsgi;
    scgi_temp_path $tmp/nginx/temp/scgi;
    server {
        listen 10.99.0.1:80;
        root $tmp/nginx/www;
    }
}
EOF
ip netns exec "$ns_srv" nginx -p "$tmp/nginx/" -c "$tmp/nginx/nginx.conf" -e "$tmp/nginx/error.log" &
nginx_pid=$!
pids+=("$nginx_pid")
for _ in $(seq 100); do
    [ -n "$(ip netns exec "$ns_srv" ss -Htln 'sport = :80')" ] && break
    kill -0 "$nginx_pid" 2>/dev/null || { cat "$tmp/nginx/error.log" >&2; echo "bench/edge.sh: nginx did not start" >&2; exit 1; }
    sleep 0.1
done

# Per-program bpf_stats of the tracing programs a process holds, by the prog_id its file
# descriptors' fdinfo names (bpftool's own "pids" needs a build this one may lack), and how many
# other tracing programs are loaded (another bbrtop's run on the same hooks, on the same CPUs):
# {"progs": {name: [run_time_ns, run_cnt]}, "others": N}.
progs() {
    bpftool prog show -j | python3 -c '
import glob, json, sys
ids = set()
for f in glob.glob(f"/proc/{sys.argv[1]}/fdinfo/*"):
    try:
        ids.update(int(l.split()[1]) for l in open(f) if l.startswith("prog_id:"))
    except OSError:
        pass
tracing = [x for x in json.load(sys.stdin) if x.get("type") == "tracing"]
out = {x.get("name", str(x["id"])): [x.get("run_time_ns", 0), x.get("run_cnt", 0)]
       for x in tracing if x["id"] in ids}
others = sum(1 for x in tracing if x["id"] not in ids)
print(json.dumps({"progs": out, "others": others}, separators=(",", ":")))' "$1"
}
loaded() { # PID NAME: wait (bounded) until that process holds a program of that name
    for _ in $(seq 600); do
        grep -q "\"$2\"" <<<"$(progs "$1")" && return
        kill -0 "$1" 2>/dev/null || break
        sleep 0.1
    done
    echo "bench/edge.sh: process $1 never attached $2" >&2
    return 1
}

# One wrk run in the client's namespace, between two snapshots of PID's programs: a line
# "KIND REQUESTS REQ_PER_S BEFORE AFTER" in $tmp/results.
measure() {
    local kind=$1 pid=$2 before after out
    before=$(progs "$pid")
    ip netns exec "$ns_cli" wrk -t1 -c64 -d"${SECS}s" http://10.99.0.1/body >"$tmp/wrk.out" 2>&1 &
    local w=$!
    pids+=("$w")
    wait "$w" || { cat "$tmp/wrk.out" >&2; exit 1; }
    forget "$w"
    after=$(progs "$pid")
    out=$(cat "$tmp/wrk.out")
    if grep -q "Non-2xx\|Socket errors" <<<"$out"; then
        echo "$out" >&2
        echo "bench/edge.sh: wrk saw errors" >&2
        exit 1
    fi
    echo "$kind $(awk '/requests in/ {print $1}' <<<"$out") $(awk '/Requests\/sec/ {print $2}' <<<"$out") $before $after" >>"$tmp/results"
}

with_bbrtop() { # KIND BINARY: `BINARY export`, default flags
    "$2" export --web.listen-address 127.0.0.1:0 \
        --hindsight.dir "$tmp/hindsight" >"$tmp/bbrtop.log" 2>&1 &
    local b=$!
    pids+=("$b")
    loaded "$b" tcp_probe || { tail -5 "$tmp/bbrtop.log" >&2; exit 1; }
    sleep 1 # its first poll and the walk's seeding, out of the measured run
    measure "$1" "$b"
    stop "$b"
    rm -rf "$tmp/hindsight"
}
with_object() { # KIND OBJECT PROGRAM: OBJECT's programs attached by the floor loader
    coproc LOADER { exec "$FLOOR_LOADER" "$2"; }
    local f=$LOADER_PID
    pids+=("$f")
    read -r _ <&"${LOADER[0]}"
    loaded "$f" "$3" || exit 1
    measure "$1" "$f"
    local fin=${LOADER[1]}
    exec {fin}>&- # the loader detaches as its stdin closes
    stop "$f"
}
# Other builds measured beside bbrtop and the floor, in the same rounds:
#   EDGE_BINARIES="LABEL=PATH ...": another bbrtop binary (the build before a change), whole;
#   EDGE_OBJECTS="LABEL=OBJECT.o ...": a build of crates/bbrtop-collect/bpf/bbrtop.bpf.c with a
#   change under test, by the floor's loader (walk_on set in its source: the loader sets no
#   read-only data; and nothing drains its ring).
arms=(bbrtop floor)
declare -A object=([floor]="$tmp/floor.o") binary=([bbrtop]="$BIN")
take_arms() { # VAR TEST WHAT TABLE: each LABEL=PATH of $VAR (PATH passing `test TEST PATH`) an arm
    local o
    local -n into=$4
    for o in ${!1:-}; do
        local label=${o%%=*} path=${o#*=}
        [[ $o == ?*=?* && $label != bbrtop && $label != floor && -z ${object[$label]:-} &&
            -z ${binary[$label]:-} ]] && test "$2" "$path" ||
            { echo "bench/edge.sh: $1: $o is not a new LABEL=$3" >&2; exit 2; }
        arms+=("$label")
        into[$label]=$path
    done
}
take_arms EDGE_BINARIES -x EXECUTABLE binary
take_arms EDGE_OBJECTS -r READABLE_OBJECT object
arm() {
    if [ -n "${binary[$1]:-}" ]; then
        with_bbrtop "$1" "${binary[$1]}"
    elif [ "$1" = floor ]; then
        with_object floor "${object[floor]}" floor_probe
    else
        with_object "$1" "${object[$1]}" tcp_probe
    fi
}

sysctl -qw kernel.bpf_stats_enabled=1
for r in $(seq "$ROUNDS"); do
    echo "round $r of $ROUNDS" >&2
    # Alternating order (ABBA), so that drift within a round falls on every arm alike.
    order=("${arms[@]}")
    ((r % 2)) || mapfile -t order < <(printf '%s\n' "${arms[@]}" | tac)
    for a in "${order[@]}"; do arm "$a"; done
done

python3 - "$tmp/results" "$ROUNDS" "$SECS" "$(uname -r)" <<'PY'
import json, statistics as st, sys

path, rounds, secs, kernel = sys.argv[1:5]
# Which hook each program runs on: bbrtop's (crates/bbrtop-collect/bpf/bbrtop.bpf.c) and the floor's.
HOOK = {
    "tcp_probe": "tcp_probe", "floor_probe": "tcp_probe",
    "tcp_sendmsg_locked": "tcp_sendmsg_locked", "tcp_sendmsg_fentry": "tcp_sendmsg_locked",
    "floor_sendmsg": "tcp_sendmsg_locked",
    "tcp_rcv_space_adjust": "tcp_rcv_space_adjust", "floor_rcv_space": "tcp_rcv_space_adjust",
    "tcp_established": "inet_sock_set_state", "floor_set_state": "inet_sock_set_state",
    "tcp_destroy_sock": "tcp_destroy_sock", "floor_destroy": "tcp_destroy_sock",
}
runs = {}
others = 0
for line in open(path):
    kind, reqs, rps, before, after = line.split()
    before, after = json.loads(before), json.loads(after)
    others = max(others, before["others"], after["others"])
    d = {}
    for name, (t, c) in after["progs"].items():
        t0, c0 = before["progs"].get(name, (0, 0))
        h = HOOK.get(name, name)
        dt, dc = d.get(h, (0, 0))
        d[h] = (dt + t - t0, dc + c - c0)
    runs.setdefault(kind, []).append((int(reqs), float(rps), d))

def pooled(kind):
    reqs = sum(r for r, _, _ in runs[kind])
    hooks = {}
    for _, _, d in runs[kind]:
        for h, (t, c) in d.items():
            a = hooks.setdefault(h, [0, 0])
            a[0] += t
            a[1] += c
    return reqs, hooks

extra = [k for k in runs if k not in ("bbrtop", "floor")]
hooks = list(dict.fromkeys(HOOK.values()))
rb, hb = pooled("bbrtop")
rf, hf = pooled("floor")
hooks += sorted(set(hb) - set(hooks))
print(f"edge workload: nginx (1 worker, 15000-byte body, keep-alive) <- wrk (1 thread, 64 connections), "
      f"veth between two namespaces; {rounds} rounds of {secs} s each, Linux {kernel}")
for kind in runs:
    rps = [x for _, x, _ in runs[kind]]
    print(f"requests/s with {kind:6}: {' '.join(f'{x:,.0f}' for x in rps)}  mean {st.mean(rps):,.0f}")
print()
hdr = f"{'program (hook)':22} {'runs/req':>9} {'ns/run':>7} {'ns/req':>7}   {'runs/req':>9} {'ns/run':>7} {'ns/req':>7}   {'ratio':>6}"
print(f"{'':22} {'bbrtop':^25}   {'floor':^25}")
print(hdr)
tb = tf = 0.0
for h in hooks:
    bt, bc = hb.get(h, (0, 0))
    ft, fc = hf.get(h, (0, 0))
    b, f = bt / max(rb, 1), ft / max(rf, 1)
    tb += b
    tf += f
    ratio = f"{b / f:.2f}x" if f else "-"
    print(f"{h:22} {bc / max(rb, 1):9.3f} {bt / max(bc, 1):7.0f} {b:7.0f}   {fc / max(rf, 1):9.3f} {ft / max(fc, 1):7.0f} {f:7.0f}   {ratio:>6}")
print(f"{'total':22} {'':9} {'':7} {tb:7.0f}   {'':9} {'':7} {tf:7.0f}   {tb / max(tf, 1e-9):5.2f}x")

def total(run):
    reqs, _, d = run
    return sum(t for t, _ in d.values()) / max(reqs, 1)

def runs_per_req(run):
    reqs, _, d = run
    return sum(c for _, c in d.values()) / max(reqs, 1)

# Per round, with each arm's runs per request: a round where they jump (other traffic on the
# host's hooks) is a disturbed one, and the medians below leave it aside.
print("per round, ns/req (runs/req): " + "  ".join(
    " ".join(f"{k} {total(runs[k][i]):.0f} ({runs_per_req(runs[k][i]):.1f})" for k in runs) + ";"
    for i in range(min(len(v) for v in runs.values()))))
per_round = [(total(b), total(f)) for b, f in zip(runs["bbrtop"], runs["floor"])]
print("total ns/req per round, bbrtop/floor: " + "  ".join(f"{b:.0f}/{f:.0f}={b / f:.2f}x" for b, f in per_round)
      + f"  median ratio {st.median(b / f for b, f in per_round):.2f}x")
for k in extra:
    ratios = [total(a) / total(f) for a, f in zip(runs[k], runs["floor"])]
    print(f"total ns/req per round, {k}/floor: " + "  ".join(f"{x:.2f}x" for x in ratios)
          + f"  median ratio {st.median(ratios):.2f}x")
if extra:
    print("\nns per request, pooled (ratio to the floor's)")
    print(f"{'program (hook)':22}" + "".join(f" {k:>16}" for k in ["bbrtop"] + extra))
    pool = {k: pooled(k) for k in ["bbrtop"] + extra}
    for h in hooks + ["total"]:
        f = tf if h == "total" else hf.get(h, (0, 0))[0] / max(rf, 1)
        cells = []
        for k in ["bbrtop"] + extra:
            r, hk = pool[k]
            v = sum(t for t, _ in hk.values()) / max(r, 1) if h == "total" else hk.get(h, (0, 0))[0] / max(r, 1)
            cells.append(f"{v:7.0f} ({v / f:5.2f}x)" if f else f"{v:7.0f}  (-)")
        print(f"{h:22}" + "".join(f" {c:>16}" for c in cells))
if others:
    print(f"disturbed: up to {others} other tracing programs were loaded during the runs (another bbrtop?); "
          "their runs are not counted, but they share the CPUs, the hooks and each socket's storage")
PY
