#!/usr/bin/env bash
# A minimal Debian root filesystem from Debian's own packages (debootstrap --variant=minbase, plus
# libelf1, the one library bbrtop links that minbase lacks, and systemd, whose targets
# `systemd-analyze verify --root` needs), as a tarball cached in DIR:
#   ./scripts/debian-base.sh DIR        # prints DIR/debian-SUITE-minbase-PACKAGES.tar
# No image registry is needed: the container image test builds its base from this (standing in
# for debian:bookworm-slim), and the package test installs the .deb into a fresh copy. As root;
# the first run downloads ~50 MB and takes a few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
need_pkgs debootstrap

dir="${1:?usage: debian-base.sh DIR}"
. /etc/os-release
suite="${BBRTOP_DEBIAN_SUITE:-${VERSION_CODENAME:-bookworm}}"
mirror="${BBRTOP_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
include="${BBRTOP_DEBIAN_INCLUDE:-libelf1,systemd}"
tar="$dir/debian-$suite-minbase-${include//,/-}.tar"
mkdir -p "$dir"
# One builder at a time; the others wait and reuse its tarball.
exec 9>"$tar.lock"
flock 9
if [ ! -s "$tar" ]; then
    tree=$(mktemp -d "$dir/debootstrap.XXXXXX")
    trap 'rm -rf "$tree"' EXIT
    echo "debian-base.sh: debootstrap $suite (minbase) from $mirror" >&2
    debootstrap --variant=minbase --include="$include" "$suite" "$tree" "$mirror" >&2
    # apt's downloaded packages are not part of the base.
    rm -rf "$tree"/var/cache/apt/archives/*.deb "$tree"/var/lib/apt/lists/*
    tar -C "$tree" --numeric-owner -cf "$tar.tmp" .
    mv "$tar.tmp" "$tar"
fi
echo "$tar"
