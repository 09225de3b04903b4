#!/usr/bin/env bash
# The kernel matrix's kernels: Debian's own kernel packages, downloaded from Debian's mirror,
# unpacked and trimmed to the image, its config and the modules the guests load, cached under
# target/kernels/RELEASE/ as a tree virtme-ng boots (boot/vmlinuz-RELEASE, boot/config-RELEASE,
# lib/modules/RELEASE/). The host's apt is left as it was: the suites are read through a private
# apt configuration under target/kernels/apt, never through /etc/apt.
#
#   scripts/kernels.sh fetch [NAME...]   # NAME: 5.10, 6.1, 6.12 (default: these three), or
#                                        # backports (trixie-backports' newest, for
#                                        # bench/response_hooks.sh); prints each tree
#
# Each kernel is picked by pattern, the newest package of its suite (the ABI number moves with
# security updates), and the tree says which ran (its directory is the kernel's release). Also
# installs what booting them needs: QEMU (software emulation: this machine's /dev/kvm cannot boot
# stock kernels), busybox-static and kmod from Debian, virtme-ng from PyPI into target/vng-venv.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh

KERNELS_DIR="$TARGET_DIR/kernels"
VNG_VERSION=1.42
MIRROR="${BBRTOP_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SECURITY_MIRROR="${BBRTOP_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"

# NAME -> package pattern (an extended regex on the package name).
declare -A PATTERN=(
    [5.10]='^linux-image-5\.10\.0-[0-9]+-amd64$'
    [6.1]='^linux-image-6\.1\.0-[0-9]+-amd64$'
    [6.12]='^linux-image-6\.12\.[0-9]+\+deb12-amd64$'
    [backports]='^linux-image-[0-9]+\.[0-9]+\.[0-9]+\+deb13-amd64$'
)
ALL=(5.10 6.1 6.12)

# What the guests load: the 9p root and virtio (virtme-ng's own list adds its own), and what
# the tests use: BBR, the lab's qdiscs, classifiers and devices, inet_diag for ss and bbrtop.
MODULES=(9p 9pnet_virtio virtio_pci virtio_net virtio_console overlay netfs
    tcp_bbr tcp_dctcp sch_tbf sch_htb sch_ingress cls_bpf act_bpf veth tun
    inet_diag tcp_diag udp_diag)

setup_vm() {
    need_pkgs qemu-system-x86 busybox-static kmod file
    setup_venv "$TARGET_DIR/vng-venv" virtme-ng "$VNG_VERSION"
}

apt_private() {
    local apt="$KERNELS_DIR/apt"
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
    local key=/usr/share/keyrings/debian-archive-keyring.gpg
    cat >"$apt/sources.list" <<EOF
deb [signed-by=$key] $MIRROR bullseye main
deb [signed-by=$key] $SECURITY_MIRROR bullseye-security main
deb [signed-by=$key] $MIRROR bookworm main
deb [signed-by=$key] $SECURITY_MIRROR bookworm-security main
deb [signed-by=$key] $MIRROR trixie-backports main
EOF
    APT_OPTS=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o APT::Get::List-Cleanup=0)
    # The lists are read again once a day at most, or when the suites above change.
    if [ -z "$(find "$apt/lists" -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null | head -1)" ] ||
        ! cmp -s "$apt/sources.list" "$apt/sources.list.read"; then
        apt-get "${APT_OPTS[@]}" update -qq >&2
        cp "$apt/sources.list" "$apt/sources.list.read"
    fi
}

# The newest package whose name matches NAME's pattern.
newest() {
    apt-cache "${APT_OPTS[@]}" search --names-only "${PATTERN[$1]}" | cut -d' ' -f1 |
        grep -E "${PATTERN[$1]}" | sort -V | tail -1
}

# Unpacks PACKAGE into DIR: the image, its config and System.map, and MODULES with what they
# depend on, then depmod. Everything else of the package (~90% of it) is left out.
unpack() {
    local pkg=$1 dir=$2 release
    work=$(mktemp -d "$KERNELS_DIR/unpack.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    # Newer packages split the image into parts (linux-base-*, linux-binary-*, linux-modules-*).
    local parts=("$pkg") part
    for part in base binary modules; do
        part="linux-$part-${pkg#linux-image-}"
        apt-cache "${APT_OPTS[@]}" show "$part" >/dev/null 2>&1 && parts+=("$part")
    done
    (cd "$work" && apt-get "${APT_OPTS[@]}" download -qq "${parts[@]}" >&2)
    for part in "$work"/*.deb; do dpkg-deb -x "$part" "$work/root"; done
    # Trixie's packages put the modules under /usr/lib (merged /usr); depmod and virtme-ng look
    # in /lib/modules of the tree.
    if [ ! -d "$work/root/lib/modules" ] && [ -d "$work/root/usr/lib/modules" ]; then
        mkdir -p "$work/root/lib"
        mv "$work/root/usr/lib/modules" "$work/root/lib/modules"
    fi
    release=$(basename "$(ls -d "$work"/root/lib/modules/*)")
    local tree="$work/tree" f
    mkdir -p "$tree/boot" "$tree/lib/modules/$release"
    # /boot/vmlinuz-RELEASE, or (split packages) vmlinuz and config beside the modules.
    for f in vmlinuz config; do
        if [ -f "$work/root/boot/$f-$release" ]; then
            cp "$work/root/boot/$f-$release" "$tree/boot/"
        else
            cp "$work/root/lib/modules/$release/$f" "$tree/boot/$f-$release"
        fi
    done
    cp "$work/root/boot/System.map-$release" "$tree/boot/" 2>/dev/null || true
    local src="$work/root/lib/modules/$release"
    cp "$src"/modules.order "$src"/modules.builtin* "$tree/lib/modules/$release/" 2>/dev/null || true
    depmod -b "$work/root" "$release"
    local m f
    for m in "${MODULES[@]}"; do
        # Built in, or absent from this kernel: nothing to copy.
        { modprobe -d "$work/root" -S "$release" --show-depends "$m" 2>/dev/null || true; } |
            awk '$1 == "insmod" {print $2}'
    done | sort -u | while read -r f; do
        mkdir -p "$tree/$(dirname "${f#"$work/root"}")"
        cp "$f" "$tree/${f#"$work/root"}"
    done
    depmod -b "$tree" "$release"
    rm -rf "$dir.tmp"
    mv "$tree" "$dir.tmp"
    echo "$pkg" >"$dir.tmp/package"
    mv "$dir.tmp" "$dir"
    rm -rf "$work"
    trap - EXIT
}

fetch() {
    local name pkg dir
    mkdir -p "$KERNELS_DIR"
    exec 9>"$KERNELS_DIR/.lock"
    flock 9
    apt_private
    for name in "$@"; do
        [ -n "${PATTERN[$name]:-}" ] || { echo "kernels.sh: unknown kernel '$name' (one of: ${ALL[*]})" >&2; exit 2; }
        pkg=$(newest "$name")
        [ -n "$pkg" ] || { echo "kernels.sh: no package matches ${PATTERN[$name]} in Debian's suites" >&2; exit 1; }
        dir="$KERNELS_DIR/${pkg#linux-image-}"
        if [ ! -f "$dir/package" ]; then
            echo "kernels.sh: $name: downloading $pkg" >&2
            unpack "$pkg" "$dir"
        fi
        echo "$name $dir"
    done
}

case "${1:-}" in
fetch)
    shift
    setup_vm
    if (($#)); then fetch "$@"; else fetch "${ALL[@]}"; fi
    ;;
*)
    echo "usage: scripts/kernels.sh fetch [${ALL[*]}]" >&2
    exit 2
    ;;
esac
