#!/usr/bin/env bash
# CBC against GLPK for the `optimal` planner (issue 23): the same records,
# the same node budget, both solvers; prints per solver the records proven,
# stopped at the budget (with the gap to the proven bound), and the median
# plan time (wall clock, so only indicative; the rest is deterministic).
#   bench/optimal_solvers.sh [BUILD_DIR] [NODE_LIMIT]
set -euo pipefail
build=${1:-build}
nodes=${2:-20000}
tsim=$build/taotsim
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Small random records: R 2, 4, 8 (E = 4R, 2 ranks per node), 8 records each.
for R in 2 4 8; do
    "$tsim" gen -o "$tmp/r$R.jsonl" --ep "$R" --experts $((4 * R)) --rpn 2 --topk 2 --tokens 512 \
        --microbatches 4 --layers 2 --imbalance 0.5 --seed 7 >/dev/null
done
# A few records of a bundled trace at its real size (R 16, E 128).
{ zcat traces/ep16-imb50.jsonl.gz || true; } | head -n 5 >"$tmp/ep16.jsonl"
for t in r2 r4 r8 ep16; do
    for solver in cbc glpk; do
        "$tsim" replay "$tmp/$t.jsonl" --planners optimal --optimal-solver "$solver" \
            --optimal-node-limit "$nodes" --timing --format json >"$tmp/out.json"
        python3 - "$t" "$solver" "$tmp/out.json" <<'PY'
import json, sys
t, solver, path = sys.argv[1:]
p = json.load(open(path))["results"][0]
s = p.get("search", {})
ms = p["metrics"]["plan_ns"]["p50"] / 1e6
print(f"{t:5} {solver:5} records {p['record_count']:3} proved {s.get('proved', 0):3} "
      f"stopped {s.get('stopped', 0):3} none {s.get('no_incumbent', 0):3} "
      f"gap mean {s.get('gap_mean', 0):.6f} max {s.get('gap_max', 0):.6f} "
      f"weighted {p['metrics']['weighted']['mean']:.2f} rho_after {100 * p['metrics']['rho_after']['mean']:.3f}% "
      f"plan p50 {ms:.1f} ms")
PY
    done
done
