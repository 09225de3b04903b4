#!/usr/bin/env bash
# The release binary for every fleet distribution: it needs no glibc symbol newer than 2.28 (RHEL 8,
# and so RHEL 9, Amazon Linux 2023, Debian 10+, Ubuntu 20.04+) and no shared library but glibc's.
#   ./scripts/build-portable.sh          # prints the binary's path, target/portable/bbrtop
#   ./scripts/build-portable.sh --profile portable-check   # the test suite's: target/portable/bbrtop-portable-check
# `cargo build --release` links against this machine's glibc and takes its newest symbol versions
# (2.35 for hypotf, from plotters' dashed lines; 2.34 for __libc_start_main and pthread_*), so
# its binary does not start where glibc is older. Here the same release profile is linked by zig
# against glibc 2.28's symbol lists with cargo-zigbuild, as many Rust projects ship theirs; libbpf,
# libelf and zlib are built from libbpf-sys's vendored sources and linked in statically
# (`--features libbpf-rs/vendored`; no Cargo.toml or Cargo.lock change). One shim: glibc has had
# gettid() only since 2.30, and tracing-logfmt calls it, so a gettid() of our own (the syscall, as
# glibc's is) is linked into the binary. The result is checked: any GLIBC_x.y above 2.28 fails.
#
# Tools: zig (PyPI's ziglang) and cargo-zigbuild (its PyPI wheel, a prebuilt binary), pinned, in a
# virtualenv at target/portable-tools; zig's caches under target/portable too, nothing outside
# target/ but Debian's autoconf, automake, autopoint, flex, bison and gawk, which libbpf-sys needs
# to build the vendored libelf (need_pkgs; it runs autoreconf in cargo's registry copy of
# libbpf-sys). The build has a target directory of its own, target/portable/cargo, so it never
# invalidates a developer's target/release; cargo's own fingerprints decide what to rebuild. On two
# cores: 8 to 11 minutes cold (as long as `cargo build --release`), about a second when nothing
# changed.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
setup_build
need_pkgs autoconf automake autopoint flex bison gawk binutils

# The release profile, or another (the test suite's portable-check: the same target and link,
# without the optimisation that takes most of a release build's minutes; Cargo.toml says why that
# checks the same glibc requirement).
profile=release
if [ "${1:-}" = --profile ]; then profile=${2:?--profile NAME}; shift 2; fi

GLIBC=2.28
ZIGLANG_VERSION=0.15.2
ZIGBUILD_VERSION=0.24.1
out="${CARGO_TARGET_DIR:-target}/portable"
mkdir -p "$out"
out=$(cd "$out" && pwd)
# One build at a time (tests build it from several threads); the others wait and reuse it.
exec 9>"$out/.lock"
flock 9

tools="$TARGET_DIR/portable-tools"
setup_venv "$tools" ziglang "$ZIGLANG_VERSION"
# After ziglang, so pip keeps the pinned zig (cargo-zigbuild asks for any ziglang >= 0.9).
setup_venv "$tools" cargo-zigbuild "$ZIGBUILD_VERSION"
zig="$("$tools/bin/python" -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')"
export CARGO_ZIGBUILD_ZIG_PATH="$zig"
export CARGO_ZIGBUILD_CACHE_DIR="$out/zigbuild-cache"
export ZIG_GLOBAL_CACHE_DIR="$out/zig-cache" ZIG_LOCAL_CACHE_DIR="$out/zig-cache"

arch=$(uname -m)
# gettid() for glibc before 2.30. Its object's name carries its hash, so that a change to it
# changes rustc's arguments and cargo links again.
shim_src='#define _GNU_SOURCE
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>
/* glibc 2.30 added gettid(); tracing-logfmt calls it. */
pid_t gettid(void) { return (pid_t)syscall(SYS_gettid); }'
shim="$out/compat/gettid-$(printf '%s\n%s' "$GLIBC" "$shim_src" | sha256sum | cut -c1-16).o"
if [ ! -s "$shim" ]; then
    mkdir -p "$out/compat"
    printf '%s\n' "$shim_src" >"$out/compat/gettid.c"
    "$zig" cc -target "$arch-linux-gnu.$GLIBC" -O2 -fPIC -c "$out/compat/gettid.c" -o "$shim.tmp"
    mv "$shim.tmp" "$shim"
fi

start=$(date +%s)
"$tools/bin/cargo-zigbuild" rustc --profile "$profile" --locked --bin bbrtop \
    --target "$arch-unknown-linux-gnu.$GLIBC" --features libbpf-rs/vendored \
    --target-dir "$out/cargo" -- -C "link-arg=$shim" >&2
built="$out/cargo/$arch-unknown-linux-gnu/$profile/bbrtop"
echo "build-portable.sh: built in $(($(date +%s) - start)) s" >&2

# The check the tests make too: the newest glibc symbol version the binary asks for.
newest=$(objdump -T "$built" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
if [ "$(printf '%s\n%s\n' "$newest" "$GLIBC" | sort -V | tail -1)" != "$GLIBC" ]; then
    echo "build-portable.sh: $built needs GLIBC_$newest, above $GLIBC:" >&2
    objdump -T "$built" | grep -E "GLIBC_$newest([^.0-9]|$)" >&2
    exit 1
fi
name=bbrtop
[ "$profile" = release ] || name="bbrtop-$profile"
cp -f "$built" "$out/$name.tmp"
mv -f "$out/$name.tmp" "$out/$name"
echo "$out/$name"
