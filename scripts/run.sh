#!/usr/bin/env bash
# Installs what is missing, builds bbrtop (release) and starts it with the given flags.
#   sudo ./scripts/run.sh --lab     # live TUI on a built-in BBR vs CUBIC lab
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
setup_build
cargo build --release --locked
exec target/release/bbrtop "$@"
