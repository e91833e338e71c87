#!/usr/bin/env bash
# Builds taotsim (if needed) and runs the main job on the bundled traces.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
if [ ! -f build/build.ninja ]; then
    meson setup build -Dwerror=true >/dev/null
fi
ninja -C build >/dev/null
exec ./build/taotsim table1 "$@"
