#!/usr/bin/env bash
# The whole test suite, the same one CI runs (.ci/run calls this). As root: the lab, eBPF and
# exporter tests use network namespaces, BPF and real Prometheus/Alertmanager servers. Under
# CI=true a privileged test that cannot run fails; it never skips.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
setup_test

export CARGO_TERM_COLOR=never
step() { printf '\n== %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy (all targets, -D warnings)"
cargo clippy --locked --workspace --all-targets -- -D warnings
step "netlink-only build (--no-default-features)"
cargo build --locked --no-default-features
step "the kernel matrix's kernels (Debian's 5.10, 6.1, 6.12; cached in target/kernels)"
./scripts/kernels.sh fetch
step "cargo test: build"
cargo test --locked --workspace --lib --bins --tests --no-run
step "cargo test: the kernel matrix (QEMU) beside the portable release build"
# QEMU's emulation keeps one core busy for the matrix's 6-9 minutes; the portable release build,
# which tests/portable.rs reads, takes the other meanwhile instead of minutes of its own later.
# Nothing else runs then: the guests time responses against their clients' clocks.
./scripts/build-portable.sh >target/build-portable.log 2>&1 &
portable=$!
matrix=0
cargo test --locked --test kernel_matrix -- --test-threads=1 root_kernel_debian_ || matrix=$?
wait "$portable" || { cat target/build-portable.log >&2; echo "scripts/build-portable.sh failed" >&2; exit 1; }
[ "$matrix" -eq 0 ] || exit "$matrix"
step "cargo test"
# Tests that shape links and run flows share two cores; one test binary at a time keeps their
# figures honest, and each binary decides its own parallelism.
cargo test --locked --workspace --lib --bins --tests -- --test-threads="${BBRTOP_TEST_THREADS:-2}" \
    --skip root_kernel_debian_
step "doc tests (bbrtop-core's examples)"
cargo test --locked -p bbrtop-core --doc
step "parser fuzzing (${BBRTOP_FUZZ_CASES:=20000} inputs per parser; crates/bbrtop-core/src/testing/fuzz.rs has the full run)"
BBRTOP_FUZZ_CASES="$BBRTOP_FUZZ_CASES" cargo test --locked --workspace --lib fuzz -- --ignored
