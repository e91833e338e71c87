#!/usr/bin/env bash
# Builds taotsim (if needed) and runs the main job on the bundled traces.
# Warnings are not errors here (a newer compiler may warn more); CI has them as errors.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
if [ ! -f build/build.ninja ]; then
    # quiet unless it fails; then show why
    out=$(meson setup build 2>&1) || { printf '%s\n' "$out"; exit 1; }
fi
out=$(ninja -C build 2>&1) || { printf '%s\n' "$out"; exit 1; }
exec ./build/taotsim table1 "$@"
