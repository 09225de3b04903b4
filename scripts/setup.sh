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
# (tests/packaging.rs); autoconf, automake, autopoint, flex, bison and gawk build libbpf-sys's
# vendored libelf for the portable binary (scripts/build-portable.sh), rpm (rpmbuild) packs the
# RPM (tests/portable.rs); QEMU, busybox-static, kmod and file boot the kernel matrix's kernels
# (scripts/kernels.sh, tests/kernel_matrix.rs).
TEST_PKGS=(prometheus prometheus-alertmanager bpftrace iperf3 tmux openssl systemd curl dpkg-dev debootstrap buildah
    autoconf automake autopoint flex bison gawk rpm qemu-system-x86 busybox-static kmod file)

# The edge benchmark (bench/edge.sh): Debian's nginx and wrk, an edge server and its load. Only
# that script asks for them; CI does not.
BENCH_PKGS=(nginx-light wrk)

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

# A virtualenv of the project's own at DIR holding PACKAGE==VERSION from PyPI, so no system
# Python package is touched; made (again) unless it holds that version already.
setup_venv() {
    local dir=$1 package=$2 version=$3
    if "$dir/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('$package') != '$version')" 2>/dev/null; then
        return
    fi
    echo "bbrtop setup: installing $package $version (PyPI) into $dir" >&2
    need_pkgs python3 python3-venv
    python3 -m venv "$dir"
    "$dir/bin/pip" install -q --disable-pip-version-check "$package==$version"
}

TARGET_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/target"
# DuckDB reads recordings in the tests as a user would, without bbrtop (tests/record.rs).
# mmdb-writer writes MaxMind-format databases of the tests' own networks (scripts/mmdb_write.py):
# a real writer, independent of the reader bbrtop uses.
setup_python_tools() {
    setup_venv "$TARGET_DIR/duckdb-venv" duckdb 2.0.0
    setup_venv "$TARGET_DIR/mmdb-venv" mmdb-writer 0.2.7
}

# A real OpenTelemetry Collector for the OTLP log export tests (tests/support/otelcol.rs): the
# distribution in scripts/otelcol (core OTLP receiver, debug and contrib file exporters, one pinned
# release in its go.mod) built from the Go module proxy into target/otelcol/bbrtop-otelcol, once:
# the binary is rebuilt only when go.mod, go.sum or main.go differ from the ones it was built from
# (their hash is kept beside it). Needs Go 1.26 (`go`, or /usr/local/go/bin/go); go.sum pins every
# module (-mod=readonly). About 80 s on two idle cores, on a fresh machine (450 MB of modules, a
# few seconds of it) as with the modules cached; twice that beside a cargo build. Go's own output
# goes to target/otelcol/build.log.
setup_otelcol() {
    local src out go stamp
    src="$(dirname "$TARGET_DIR")/scripts/otelcol"
    out="$TARGET_DIR/otelcol"
    stamp=$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -d' ' -f1)
    if [ -x "$out/bbrtop-otelcol" ] && [ "$(cat "$out/bbrtop-otelcol.sha256" 2>/dev/null)" = "$stamp" ]; then
        return
    fi
    go=$(command -v go || true)
    [ -z "$go" ] && [ -x /usr/local/go/bin/go ] && go=/usr/local/go/bin/go
    if [ -z "$go" ]; then
        echo "bbrtop setup: go not found; install Go 1.26 to build the test collector (scripts/otelcol)" >&2
        exit 1
    fi
    echo "bbrtop setup: building the OpenTelemetry Collector (scripts/otelcol) into $out" >&2
    mkdir -p "$out"
    rm -f "$out/bbrtop-otelcol.sha256"
    if ! (cd "$src" && CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS= "$go" build -mod=readonly -trimpath \
        -buildvcs=false -ldflags='-s -w' -o "$out/bbrtop-otelcol" .) >"$out/build.log" 2>&1; then
        cat "$out/build.log" >&2
        echo "bbrtop setup: building the collector failed (log above, kept in $out/build.log)" >&2
        exit 1
    fi
    echo "$stamp" >"$out/bbrtop-otelcol.sha256"
}

setup_test() {
    setup_build
    need_pkgs "${TEST_PKGS[@]}"
    setup_python_tools
    setup_otelcol
    # bpftrace's tracepoint probes read their formats from tracefs (tests/bpf_scripts.rs).
    if [ ! -e /sys/kernel/tracing/events ] && [ "$(id -u)" = 0 ]; then
        mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
    fi
}

# What bench/edge.sh needs: a build (clang and libbpf's headers for its empty programs, cargo for
# bbrtop), the server and load generator, and python3 for its arithmetic.
setup_bench() {
    setup_build
    need_pkgs "${BENCH_PKGS[@]}" python3
}
