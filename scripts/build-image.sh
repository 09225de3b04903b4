#!/usr/bin/env bash
# Builds the container image (deploy/container/Containerfile) with buildah, from the Debian
# package (scripts/package-deb.sh builds one unless --deb gives it). As root.
#   ./scripts/build-image.sh                                   # FROM debian:bookworm-slim (a registry)
#   ./scripts/build-image.sh --base-tar "$(./scripts/debian-base.sh target/debian-base)"
#   ./scripts/build-image.sh --deb PATH --base IMAGE --tag NAME:TAG
# --base-tar imports a root filesystem tarball as the base, for machines without a registry.
# Builds use chroot isolation (BBRTOP_BUILD_ISOLATION overrides), so no OCI runtime is needed.
# Prints the image's name on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
need_pkgs buildah

deb="" base="" base_tar="" tag="localhost/bbrtop:$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
while (($#)); do
    case "$1" in
        --deb) deb="$2"; shift 2 ;;
        --base) base="$2"; shift 2 ;;
        --base-tar) base_tar="$2"; shift 2 ;;
        --tag) tag="$2"; shift 2 ;;
        *) echo "build-image.sh: unknown argument $1 (--deb, --base, --base-tar, --tag)" >&2; exit 2 ;;
    esac
done

ctx=$(mktemp -d)
cleanup() { rm -rf "$ctx"; }
trap cleanup EXIT
if [ -z "$deb" ]; then
    deb=$(./scripts/package-deb.sh --out "$ctx/out")
fi
cp "$deb" "$ctx/bbrtop.deb"
cp deploy/container/Containerfile "$ctx/Containerfile"

if [ -n "$base_tar" ]; then
    base="localhost/bbrtop-base:$(basename "$base_tar" .tar)"
    if ! buildah inspect --type image "$base" >/dev/null 2>&1; then
        ctr=$(buildah from scratch)
        buildah add --quiet "$ctr" "$base_tar" / >/dev/null
        buildah commit --quiet --rm "$ctr" "$base" >/dev/null
    fi
fi
args=(--isolation "${BBRTOP_BUILD_ISOLATION:-chroot}" --layers=false -t "$tag" -f "$ctx/Containerfile")
[ -n "$base" ] && args+=(--build-arg "BASE=$base")
buildah build --quiet "${args[@]}" "$ctx" >&2
echo "$tag"
