#!/usr/bin/env bash
# An installed taotsim finds its plot templates and bundled traces in the data
# directory, not in the source tree: install into a scratch DESTDIR, hide the
# source tree's copies from it (run it from elsewhere, as a copy would), and
# run table1 and a plot. Usage: tests/install.sh BUILDDIR
set -euo pipefail
build=$(cd "${1:?usage: tests/install.sh BUILDDIR}" && pwd)
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
DESTDIR="$dest" meson install -C "$build" --no-rebuild --only-changed >/dev/null 2>&1 ||
    DESTDIR="$dest" meson install -C "$build" --no-rebuild >/dev/null
bin=$(find "$dest" -path '*/bin/taotsim' -type f | head -1)
[ -x "$bin" ] || { echo "install: no taotsim installed"; echo "script: 0 passed, 1 failed"; exit 1; }
share=$(dirname "$(dirname "$bin")")/share/taotsim
for d in plots traces; do
    [ -d "$share/$d" ] || { echo "install: $share/$d missing"; echo "script: 0 passed, 1 failed"; exit 1; }
done
cd "$dest"
"$bin" table1 --planners taot,echo --format json -o "$dest/t1.json"
env -u TAOTSIM_PLOTS_DIR "$bin" plot "$dest/t1.json" -o "$dest/figs" --format none >/dev/null
[ -s "$dest/figs/table1_weighted.gp" ] || { echo "install: no figure script written"; echo "script: 0 passed, 1 failed"; exit 1; }
echo "install: the installed binary ran table1 and plot from $share"
echo "script: 1 passed, 0 failed"
