#!/usr/bin/env bash
# What starting a response costs on each hook, where a kernel has both: the tracepoint
# tcp:tcp_sendmsg_locked (6.16) and fentry on tcp_sendmsg_locked (the fallback below it), each
# against an empty program on the same hook, alternating (examples/response_hooks.rs).
#   bench/response_hooks.sh [ROUNDS] [REQUESTS]            # here, on this machine's kernel
#   bench/response_hooks.sh --guest [ROUNDS] [REQUESTS]    # in Debian's newest backports kernel
# This project's machine refuses fentry programs (no trampolines for us), so the comparison runs
# in a guest: Debian trixie-backports' kernel (scripts/kernels.sh fetch backports), booted under
# QEMU's software emulation like the kernel matrix. Emulation inflates every figure alike: read the
# ratios to the empty programs, not the nanoseconds.
set -euo pipefail
cd "$(dirname "$0")/.."
guest=0
if [ "${1:-}" = --guest ]; then guest=1; shift; fi
ROUNDS=${1:-6} REQUESTS=${2:-3000}
cargo build --locked --example response_hooks >&2
floor=target/bench-floor-sendmsg.o
clang -O2 -g -target bpf -D__TARGET_ARCH_x86 -I crates/bbrtop-collect/bpf -c bench/floor_sendmsg.bpf.c \
    -o "$floor"
run=(target/debug/examples/response_hooks "$PWD/$floor" "$ROUNDS" "$REQUESTS")
if [ "$guest" = 0 ]; then
    exec "${run[@]}"
fi
tree=$(./scripts/kernels.sh fetch backports | cut -d' ' -f2)
release=$(basename "$tree")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "response_hooks.sh: Linux $release ($(cat "$tree/package")) under QEMU, 1 vCPU" >&2
PATH="$PWD/target/vng-venv/bin:$PATH" vng --run "$tree/boot/vmlinuz-$release" --disable-kvm --force-9p \
    --cpus 1 --memory 1G --rwdir "$out" \
    --exec "$PWD/scripts/guest.sh --run $tree $out ${run[*]}" </dev/null >/dev/null 2>&1 || true
cat "$out/output"
[ "$(cat "$out/exit" 2>/dev/null)" = 0 ]
