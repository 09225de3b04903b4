#!/usr/bin/env bash
# Installs what bbrtop needs to build and test, if it is missing. Debian/Ubuntu, as root.
# Sourced by run.sh and test.sh; safe to run twice.
set -euo pipefail

need_pkgs() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if ((${#missing[@]})); then
        echo "bbrtop setup: installing ${missing[*]}" >&2
        if [ "$(id -u)" -ne 0 ]; then
            echo "bbrtop setup: missing packages and not root; run as root or install: ${missing[*]}" >&2
            exit 1
        fi
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
}

# Build: clang compiles the BPF C; libelf and zlib for libbpf; pkg-config to find them.
BUILD_PKGS=(clang llvm libelf-dev zlib1g-dev pkg-config libbpf-dev make gcc)
# Run: iproute2 for the lab (ip, tc, ss), bpftool to inspect programs.
RUN_PKGS=(iproute2 bpftool procps)
# Test: the real servers and tools the tests compare with; dpkg-dev (dpkg-shlibdeps) builds the
# Debian package, debootstrap a Debian root filesystem and buildah the image from it
# (tests/packaging.rs).
TEST_PKGS=(prometheus prometheus-alertmanager bpftrace iperf3 tmux openssl systemd curl dpkg-dev debootstrap buildah)

setup_build() {
    need_pkgs "${BUILD_PKGS[@]}" "${RUN_PKGS[@]}"
    if ! command -v cargo >/dev/null 2>&1; then
        [ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
    fi
    command -v cargo >/dev/null 2>&1 || {
        echo "bbrtop setup: cargo not found; install Rust 1.85 or later (https://rustup.rs)" >&2
        exit 1
    }
}

# DuckDB reads recordings in the tests as a user would, without bbrtop (tests/record.rs): from
# PyPI, into a virtualenv of the project's own, so no system Python package is touched.
DUCKDB_VERSION=2.0.0
DUCKDB_VENV="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/target/duckdb-venv"

setup_duckdb() {
    if "$DUCKDB_VENV/bin/python" -c "import duckdb, sys; sys.exit(duckdb.__version__ != '$DUCKDB_VERSION')" 2>/dev/null; then
        return
    fi
    echo "bbrtop setup: installing DuckDB $DUCKDB_VERSION (PyPI) into $DUCKDB_VENV" >&2
    need_pkgs python3 python3-venv
    python3 -m venv "$DUCKDB_VENV"
    "$DUCKDB_VENV/bin/pip" install -q --disable-pip-version-check "duckdb==$DUCKDB_VERSION"
}

# mmdb-writer writes MaxMind-format databases of the tests' own networks (scripts/mmdb_write.py):
# a real writer, independent of the reader bbrtop uses. From PyPI, into a virtualenv of its own.
MMDB_WRITER_VERSION=0.2.7
MMDB_VENV="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/target/mmdb-venv"

setup_mmdb_writer() {
    if "$MMDB_VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mmdb_writer') != '$MMDB_WRITER_VERSION')" 2>/dev/null; then
        return
    fi
    echo "bbrtop setup: installing mmdb-writer $MMDB_WRITER_VERSION (PyPI) into $MMDB_VENV" >&2
    need_pkgs python3 python3-venv
    python3 -m venv "$MMDB_VENV"
    "$MMDB_VENV/bin/pip" install -q --disable-pip-version-check "mmdb-writer==$MMDB_WRITER_VERSION"
}

setup_test() {
    setup_build
    need_pkgs "${TEST_PKGS[@]}"
    setup_duckdb
    setup_mmdb_writer
    # bpftrace's tracepoint probes read their formats from tracefs (tests/bpf_scripts.rs).
    if [ ! -e /sys/kernel/tracing/events ] && [ "$(id -u)" = 0 ]; then
        mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
    fi
}
