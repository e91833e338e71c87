#!/bin/sh
# Issue 24 item 2: replay --traffic --plots draws one heat map per planner
# (PNG and SVG) with the gnuplot on PATH, and leaves no temporary file behind.
# Exits 77 (skip) when gnuplot is missing.
set -u
root=${TSIM_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
bin=${TAOTSIM:-$root/build/taotsim}
command -v "${TAOTSIM_GNUPLOT:-gnuplot}" >/dev/null 2>&1 || { echo "gnuplot not found: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TAOTSIM_NO_PROGRESS=1
"$bin" replay "$root/traces/ep32-imb50.jsonl.gz" --planners taot,t2=trtllm --traffic rank --plots "$tmp/figs" \
    --plot-format both -o "$tmp/r.md" || { echo "FAIL: replay --plots"; exit 1; }
want="traffic_t2.dat traffic_t2.gp traffic_t2.png traffic_t2.svg traffic_taot.dat traffic_taot.gp traffic_taot.png traffic_taot.svg"
got=$(cd "$tmp/figs" && ls -A | tr '\n' ' ' | sed 's/ $//')
[ "$got" = "$want" ] || { echo "FAIL: files: $got"; exit 1; }
for p in taot t2; do
    head -c 8 "$tmp/figs/traffic_$p.png" | od -An -tx1 | grep -q '89 50 4e 47 0d 0a 1a 0a' ||
        { echo "FAIL: traffic_$p.png is not a PNG"; exit 1; }
    grep -q '<svg' "$tmp/figs/traffic_$p.svg" || { echo "FAIL: traffic_$p.svg is not an SVG"; exit 1; }
    # 32 ranks: 32 rows of 32 cells
    [ "$(grep -c '^[0-9]' "$tmp/figs/traffic_$p.dat")" = 1024 ] || { echo "FAIL: traffic_$p.dat cells"; exit 1; }
done
echo "ok"
