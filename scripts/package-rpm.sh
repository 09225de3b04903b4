#!/usr/bin/env bash
# Builds the RPM beside the .deb: the same files (scripts/package-files.sh lays out both), the
# same systemd units and capabilities (the unit's, no file capabilities), packed by rpmbuild from
# deploy/rpm/bbrtop.spec with Debian's own rpm package.
#   ./scripts/package-rpm.sh                      # the portable build (scripts/build-portable.sh)
#   ./scripts/package-rpm.sh --binary PATH --out DIR
# Prints the path of the .rpm on stdout. Runs as any user once rpm is installed. The binary should
# be the portable one: rpm writes Requires from the glibc symbol versions it asks for, and
# `cargo build --release`'s ask for more than RHEL 9 and Amazon Linux 2023 have. Packager: as the
# .deb's Maintainer, DEBFULLNAME <DEBEMAIL> or the packaged commit's author, left out if neither.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
need_pkgs rpm binutils

binary="" out="${CARGO_TARGET_DIR:-target}"
while (($#)); do
    case "$1" in
        --binary) binary="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        *) echo "package-rpm.sh: unknown argument $1 (--binary PATH, --out DIR)" >&2; exit 2 ;;
    esac
done
if [ -z "$binary" ]; then
    binary=$(./scripts/build-portable.sh)
fi
[ -x "$binary" ] || { echo "package-rpm.sh: $binary is not an executable" >&2; exit 1; }

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
if [ -n "${DEBEMAIL:-}" ]; then
    packager="${DEBFULLNAME:-bbrtop maintainers} <$DEBEMAIL>"
else
    packager=$(git log -1 --format='%an <%ae>' 2>/dev/null || true)
fi
arch=$(uname -m)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root="$stage/root"
./scripts/package-files.sh --binary "$binary" --root "$root" --format rpm

mkdir -p "$out"
out=$(cd "$out" && pwd)
defs=(--define "_topdir $stage/rpmbuild" --define "_rpmdir $out"
    --define "_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm"
    --define "bbrtop_version $version" --define "bbrtop_root $root")
case "$packager" in
    *"<"*"@"*">"*) defs+=(--define "packager $packager") ;;
esac
# --nodeps: the spec has no BuildRequires, and Debian's rpm database is empty anyway.
rpmbuild -bb --nodeps --quiet --target "$arch" "${defs[@]}" deploy/rpm/bbrtop.spec >&2
echo "$out/bbrtop-$version-1.$arch.rpm"
