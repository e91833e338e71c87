#!/usr/bin/env bash
# Builds taotsim (if needed) and runs every test suite: Criterion unit and
# property tests, vector tests, CLI golden tests. Usage: scripts/test.sh [BUILDDIR]
# Extra meson options can be passed in TSIM_BUILD_OPTIONS (CI passes
# -Dwerror=true; here warnings are not errors, a newer compiler may warn more).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
dir=${1:-build}
if [ ! -f "$dir/build.ninja" ]; then
    # quiet unless it fails; then show why
    # shellcheck disable=SC2086
    out=$(meson setup "$dir" -Dtests=enabled ${TSIM_BUILD_OPTIONS:-} 2>&1) || { printf '%s\n' "$out"; exit 1; }
fi
out=$(ninja -C "$dir" 2>&1) || { printf '%s\n' "$out"; exit 1; }
meson test -C "$dir" --print-errorlogs --num-processes "$(nproc)"
