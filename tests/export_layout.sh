#!/bin/sh
# Issue 24 item 4: --export-layout and the fixed-layout options, end to end.
# For eplb, trtllm and swift and both file forms: a replay with exactly one
# update per layer (record 1 of each layer: --X-interval larger than the
# trace) exports the layout it ended with; Python's json module reads the
# file back and checks its keys, its shape [L, P] (or L keys of P slots) and
# that every logical expert has a copy in every layer; a second replay serves
# that layout with --X-layout and must give the first run's metrics on every
# record after the update. Exits 77 (skip) without python3.
set -u
root=${TSIM_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
bin=${TAOTSIM:-$root/build/taotsim}
command -v python3 >/dev/null 2>&1 || { echo "python3 not found: skipped"; exit 77; }
trace=$root/traces/ep16-imb50.jsonl.gz
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TAOTSIM_NO_PROGRESS=1
fail=0
for planner in eplb trtllm swift; do
    for form in sglang trtllm; do
        a=$tmp/$planner-$form-run.json
        b=$tmp/$planner-$form-fixed.json
        layout=$tmp/$planner-$form-layout.json
        if ! "$bin" replay "$trace" --planners "$planner" --"$planner"-interval 1000 --per-record --format json \
            -o "$a" --export-layout "$layout" --export-format "$form"; then
            echo "FAIL $planner $form: the exporting replay failed"; fail=1; continue
        fi
        if ! python3 - "$layout" "$form" <<'EOF'
import json, sys
path, form = sys.argv[1], sys.argv[2]
with open(path) as f:
    doc = json.load(f)
E, R, K = 128, 16, 2
P = E + R * K  # physical experts: E + redundant (SGLang), num_slots (TensorRT-LLM)
if form == "sglang":
    assert list(doc) == ["physical_to_logical_map"], list(doc)
    rows = doc["physical_to_logical_map"]
else:
    assert set(doc) == {"num_slots", "layer_updates_per_iter", "initial_global_assignments"}, list(doc)
    assert doc["num_slots"] == P and doc["layer_updates_per_iter"] == 0
    table = doc["initial_global_assignments"]
    assert sorted(table, key=int) == [str(l) for l in range(4)], list(table)
    rows = [table[str(l)] for l in range(4)]
assert len(rows) == 4, len(rows)
for l, row in enumerate(rows):
    assert len(row) == P, (l, len(row))
    assert all(isinstance(x, int) and 0 <= x < E for x in row), l
    assert set(row) == set(range(E)), ("layer", l, "lacks", set(range(E)) - set(row))
EOF
        then
            echo "FAIL $planner $form: the layout file"; fail=1; continue
        fi
        if ! "$bin" replay "$trace" --planners "$planner" --"$planner"-layout "$layout" --per-record \
            --format json -o "$b"; then
            echo "FAIL $planner $form: the fixed-layout replay failed"; fail=1; continue
        fi
        if ! python3 - "$a" "$b" <<'EOF'
import json, sys
runs = [json.load(open(p))["results"][0]["records"] for p in sys.argv[1:3]]
same = ["rho_before", "rho_after", "improve_pp", "intra", "inter", "weighted", "offloaded",
        "traffic_inter_before", "traffic_inter_after"]
seen, compared = {}, 0
for ra, rb in zip(*runs):
    assert ra["record"] == rb["record"]
    i = seen.get(ra["layer"], 0)
    seen[ra["layer"]] = i + 1
    if i == 0:
        continue  # before the update: the run's initial layout, not the exported one
    for m in same:
        assert ra[m] == rb[m], (ra["record"], m, ra[m], rb[m])
    compared += 1
assert compared == len(runs[0]) - len(seen) and compared > 0, compared
# The update's re-homes: on the run's record 1 of a layer, on the fixed run's record 0.
for key in ("rehomed_intra", "rehomed_inter"):
    assert sum(r[key] for r in runs[0]) == sum(r[key] for r in runs[1]), key
EOF
        then
            echo "FAIL $planner $form: the fixed layout does not reproduce the run after its update"; fail=1; continue
        fi
        echo "ok $planner $form"
    done
done
exit $fail
