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
step "cargo test"
# Tests that shape links and run flows share two cores; one test binary at a time keeps their
# figures honest, and each binary decides its own parallelism (tests/kernel_matrix.rs boots one
# guest at a time).
cargo test --locked --workspace --lib --bins --tests -- --test-threads="${BBRTOP_TEST_THREADS:-2}"
step "doc tests (bbrtop-core's examples)"
cargo test --locked -p bbrtop-core --doc
step "parser fuzzing (${BBRTOP_FUZZ_CASES:=20000} inputs per parser; crates/bbrtop-core/src/testing/fuzz.rs has the full run)"
BBRTOP_FUZZ_CASES="$BBRTOP_FUZZ_CASES" cargo test --locked --workspace --lib fuzz -- --ignored
