#!/bin/sh
# Issue 26: for every registered cheap planner (read from `taotsim planners`,
# so a new planner is covered without an edit here), on a generated trace:
#   - replay at -j 1, 2 and 4 prints the same bytes;
#   - shards read with the trace's index write the same partials as shards
#     read without it;
#   - merging the indexed shards prints what one run prints.
# Expensive planners (cost class "expensive", e.g. optimal) are left out: one
# run of them on this trace takes minutes. Exit 0 all hold, 1 otherwise.
# Usage: tests/shard_every_planner.sh TAOTSIM
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
export TAOTSIM_NO_PROGRESS=1
"$bin" gen -o t.jsonl.gz --ep 8 --experts 32 --topk 4 --tokens 64 --microbatches 40 --layers 3 \
    --hot-fraction 0.1 2>/dev/null || { echo "gen failed"; exit 1; }
# "NAME: summary" starts a planner's entry; its "cost:" line follows.
planners=$("$bin" planners | awk '/^[a-z0-9_-]+: / { name = substr($1, 1, length($1) - 1) }
                                   /^  cost: +cheap/ { print name }')
[ -n "$planners" ] || { echo "no cheap planner listed by 'taotsim planners'"; exit 1; }
fail=0 pass=0
check() { # what, command...: one property
    what=$1; shift
    if "$@"; then pass=$((pass + 1)); else echo "FAIL $what"; fail=$((fail + 1)); fi
}
nocmd() { grep -v '"command"' "$1"; }
# a missing or empty output is a failure, never two empty files that agree
same_json() { [ -s "$1" ] && [ -s "$2" ] && nocmd "$1" > a.cmp && nocmd "$2" > b.cmp && cmp -s a.cmp b.cmp; }
for p in $planners; do
    for j in 1 2 4; do
        "$bin" replay t.jsonl.gz --planners "$p" -j $j --format json -o "one$j.json" 2>/dev/null ||
            { echo "FAIL $p: replay -j $j failed"; fail=$((fail + 1)); continue 2; }
    done
    check "$p: -j 1 = -j 2" same_json one1.json one2.json
    check "$p: -j 1 = -j 4" same_json one1.json one4.json
    for i in 0 1 2; do "$bin" replay t.jsonl.gz --planners "$p" --shard $i/3 -o "plain$i.json" 2>/dev/null; done
    "$bin" index --every 16 t.jsonl.gz >/dev/null || { echo "index failed"; exit 1; }
    for i in 0 1 2; do "$bin" replay t.jsonl.gz --planners "$p" --shard $i/3 -j 2 -o "indexed$i.json" 2>/dev/null; done
    rm -f t.jsonl.gz.tsidx
    for i in 0 1 2; do check "$p: shard $i/3 with the index = without" same_json "plain$i.json" "indexed$i.json"; done
    "$bin" merge indexed0.json indexed1.json indexed2.json --format json -o merged.json 2>/dev/null
    check "$p: merge of the indexed shards = one run" same_json one1.json merged.json
    rm -f one?.json plain?.json indexed?.json merged.json
done
echo "script: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
