#!/usr/bin/env bash
# Builds taotsim (if needed) and runs the main job on the bundled traces.
# Warnings are not errors here (a newer compiler may warn more); CI has them as errors.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
if [ ! -f build/build.ninja ]; then
    meson setup build >/dev/null
fi
ninja -C build >/dev/null
exec ./build/taotsim table1 "$@"
