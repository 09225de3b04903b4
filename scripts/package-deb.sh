#!/usr/bin/env bash
# Builds the Debian package: the binary, the systemd units, /etc/default/bbrtop, the manual pages
# and the shell completions, laid out by hand and packed by dpkg-deb (no cargo-deb to compile).
#   ./scripts/package-deb.sh                      # cargo build --release, package it into target/
#   ./scripts/package-deb.sh --binary PATH --out DIR
#   ./scripts/package-deb.sh --binary "$(./scripts/build-portable.sh)"   # for glibc 2.28 and later
# Prints the path of the .deb on stdout. Runs as any user (dpkg-deb --root-owner-group). The
# Maintainer is DEBFULLNAME <DEBEMAIL> when DEBEMAIL is set, else the packaged commit's author.
set -euo pipefail
cd "$(dirname "$0")/.."

binary="" out="${CARGO_TARGET_DIR:-target}"
while (($#)); do
    case "$1" in
        --binary) binary="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        *) echo "package-deb.sh: unknown argument $1 (--binary PATH, --out DIR)" >&2; exit 2 ;;
    esac
done
if [ -z "$binary" ]; then
    cargo build --release --locked >&2
    binary="${CARGO_TARGET_DIR:-target}/release/bbrtop"
fi
[ -x "$binary" ] || { echo "package-deb.sh: $binary is not an executable" >&2; exit 1; }
for tool in dpkg-deb dpkg-shlibdeps objcopy objdump; do
    command -v "$tool" >/dev/null || { echo "package-deb.sh: $tool not found (dpkg-dev, binutils)" >&2; exit 1; }
done

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
# The Maintainer: Debian's DEBFULLNAME and DEBEMAIL when set (as dch takes them), else the author
# of the commit packaged; never a made-up address.
if [ -n "${DEBEMAIL:-}" ]; then
    maintainer="${DEBFULLNAME:-bbrtop maintainers} <$DEBEMAIL>"
else
    maintainer=$(git log -1 --format='%an <%ae>' 2>/dev/null || true)
fi
case "$maintainer" in
    *"<"*"@"*">"*) ;;
    *) echo "package-deb.sh: no Maintainer: set DEBEMAIL (and DEBFULLNAME), or package from a git checkout" >&2; exit 1 ;;
esac
arch=$(dpkg --print-architecture)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root="$stage/root"

# The files, laid out as the RPM's are (scripts/package-files.sh: the binary without its debug
# sections, the units, /etc/default/bbrtop, manual pages, completions, README, docs/ and copyright).
./scripts/package-files.sh --binary "$binary" --root "$root" --format deb

# Depends from the libraries the binary links, as Debian computes it: libc6, libelf1, zlib1g and
# libgcc-s1 for `cargo build --release`; libc6 alone for the portable build.
mkdir -p "$stage/shlibs/debian"
printf 'Source: bbrtop\n\nPackage: bbrtop\nArchitecture: any\n' >"$stage/shlibs/debian/control"
depends=$(cd "$stage/shlibs" && dpkg-shlibdeps -O "$root/usr/bin/bbrtop" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "package-deb.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
# Debian's libc6 symbols file asks for 2.34 of any caller of sysconf(), since glibc 2.34's headers
# turned SIGSTKSZ into sysconf(_SC_SIGSTKSZ), which older glibc refuses. That holds for what is
# compiled against this machine's headers; a binary whose newest glibc symbol is older than 2.34
# was compiled and linked against an older glibc's (every link against 2.34 or later takes
# __libc_start_main@GLIBC_2.34): the portable build's 2.28. Its libc6 dependency is that newest
# version, so the package installs where the binary runs (Debian 11, Ubuntu 20.04).
newest=$(objdump -T "$root/usr/bin/bbrtop" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
if [ -n "$newest" ] && [ "$(printf '%s\n2.34\n' "$newest" | sort -V | head -1)" != 2.34 ]; then
    depends=$(printf '%s' "$depends" | sed -E "s/libc6 \(>= [0-9.]+\)/libc6 (>= $newest)/")
fi

install -d "$root/DEBIAN"
cat >"$root/DEBIAN/control" <<EOF
Package: bbrtop
Version: $version-1
Architecture: $arch
Maintainer: $maintainer
Depends: $depends
Recommends: iproute2
Section: net
Priority: optional
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Description: per-socket TCP BBR and congestion-control monitor
 bbrtop reads each TCP socket's congestion-control state (BBR's bandwidth
 estimate, min RTT, gains and phase, next to tcp_info) through netlink and
 eBPF, and serves it as a terminal UI, JSON, and a Prometheus exporter with
 alerts. The bbrtop service (bbrtop.service, or bbrtop.socket for socket
 activation) runs the exporter; its flags are in /etc/default/bbrtop.
EOF
echo /etc/default/bbrtop >"$root/DEBIAN/conffiles"
# Installing does not start the exporter (it reads every socket of the host): enable it with
# `systemctl enable --now bbrtop`. Removing stops it; purging removes what enabling made. The
# units' state goes through deb-systemd-helper, as dh_installsystemd's scripts do (without
# debhelper): recorded at install, masked at remove, purged at purge.
units="bbrtop.service bbrtop.socket"
cat >"$root/DEBIAN/postinst" <<EOF
#!/bin/sh
set -e
if [ "\$1" = configure ] && [ -x /usr/bin/deb-systemd-helper ]; then
    deb-systemd-helper unmask $units >/dev/null || true
    # Not enabled by the package (dh_installsystemd --no-enable): the links enabling makes are
    # recorded, so that purge removes them.
    for u in $units; do
        deb-systemd-helper update-state "\$u" >/dev/null || true
    done
fi
EOF
cat >>"$root/DEBIAN/postinst" <<'EOF'
if [ -d /run/systemd/system ]; then
    systemctl --system daemon-reload >/dev/null || true
    if [ "$1" = configure ] && [ -n "$2" ]; then
        systemctl try-restart bbrtop.service >/dev/null || true
    fi
fi
EOF
cat >"$root/DEBIAN/prerm" <<'EOF'
#!/bin/sh
set -e
if [ -d /run/systemd/system ] && [ "$1" = remove ]; then
    systemctl stop bbrtop.socket bbrtop.service >/dev/null || true
fi
EOF
cat >"$root/DEBIAN/postrm" <<EOF
#!/bin/sh
set -e
if [ -x /usr/bin/deb-systemd-helper ]; then
    if [ "\$1" = remove ]; then
        deb-systemd-helper mask $units >/dev/null || true
    fi
    if [ "\$1" = purge ]; then
        deb-systemd-helper purge $units >/dev/null || true
        deb-systemd-helper unmask $units >/dev/null || true
    fi
fi
if [ -d /run/systemd/system ]; then
    systemctl --system daemon-reload >/dev/null || true
fi
EOF
chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm" "$root/DEBIAN/postrm"

mkdir -p "$out"
deb="$out/bbrtop_${version}-1_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >&2
echo "$deb"
