#!/bin/sh
# Memcheck over the bundled traces: replays four of traces/*.jsonl.gz and the
# start of the long one (and traces/tiny-4rank.json, with an LPLB graph that
# fits its 4 ranks; and -j 2 over JSON Lines and blocked gzip) with every
# planner the binary knows, TAOT's split phase 3 and LPLB's exact solver
# (expensive planners on the tiny trace only), plus the error paths
# that free half-built state (a bad trace, a full disk, a bad planner option).
# Fails on any memcheck error or leak, or on a replay that does not succeed.
# Usage: tests/valgrind.sh TAOTSIM   (run from anywhere; needs valgrind)
set -u
bin=${1:?usage: valgrind.sh TAOTSIM}
root=$(cd "$(dirname "$0")/.." && pwd)
command -v valgrind >/dev/null 2>&1 || { echo "valgrind.sh: valgrind is missing" >&2; exit 2; }
case "$bin" in /*) ;; *) bin=$(pwd)/$bin ;; esac
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT INT TERM
cd "$root" || exit 2

# 99: memcheck found something (distinct from the tool's own exit statuses).
vg="valgrind --quiet --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect,possible
    --errors-for-leak-kinds=definite,indirect,possible"
# Where an uninitialised value came from costs memcheck about twice the time
# on every run; CI only needs to know that there is one. To find it, run
# with TSIM_VALGRIND_ORIGINS=1.
[ "${TSIM_VALGRIND_ORIGINS:-0}" = 1 ] && vg="$vg --track-origins=yes"
# Every planner the binary knows: the registry's list, as the error for an
# unknown planner names it ("known: none, taot, ..."), so a new planner is
# covered without editing this file. An expensive planner ('taotsim planners
# NAME' says its cost class) replays only the tiny trace, on a small budget
# (its --NAME-node-limit when it has one).
known=$("$bin" replay /dev/null --planners - 2>&1 | sed -n 's/.*(known: \([^;]*\);.*/\1/p' | tr -d ' ')
[ -n "$known" ] || { echo "valgrind.sh: cannot read the planner list from $bin" >&2; exit 2; }
cheap=""
expensive=""
for name in $(echo "$known" | tr ',' ' '); do
    planner_help=$("$bin" planners "$name")
    if echo "$planner_help" | grep -q "^  cost: *expensive"; then
        budget=""
        echo "$planner_help" | grep -q -- "--$name-node-limit" && budget=":--$name-node-limit=20"
        expensive="$expensive,$name=$name$budget"
    else
        cheap="$cheap,$name"
    fi
done
planners="${cheap#,},taot-split=taot:--taot-phase3=split,lplb-exact=lplb:--lplb-solver=exact"
echo "planners: $planners$expensive"
export TAOTSIM_NO_PROGRESS=1
pass=0
fail=0

# run WANT_STATUS DESCRIPTION ARGS...: the exit status must be WANT_STATUS and
# memcheck must stay silent.
run() {
    want=$1
    what=$2
    shift 2
    # shellcheck disable=SC2086
    $vg --log-file="$scratch/vg.log" "$bin" "$@" >"$scratch/out" 2>"$scratch/err"
    status=$?
    if [ "$status" = 99 ] || [ -s "$scratch/vg.log" ]; then
        echo "FAIL $what: memcheck errors"
        head -40 "$scratch/vg.log"
        fail=$((fail + 1))
    elif [ "$status" != "$want" ]; then
        echo "FAIL $what: exit status $status, expected $want"
        head -5 "$scratch/err"
        fail=$((fail + 1))
    else
        echo "ok   $what"
        pass=$((pass + 1))
    fi
}

# Memcheck runs some 50x slower, and the bundled traces differ in imbalance,
# not in code paths: each EP size's lowest and highest imbalance (few and
# many replicas), and the long drifting trace's first 32 records (EPLB's
# interval of 8 records per layer is reached within them).
for trace in traces/ep16-imb10.jsonl.gz traces/ep16-imb70.jsonl.gz traces/ep32-imb10.jsonl.gz \
    traces/ep32-imb70.jsonl.gz traces/ep32-drift-long.jsonl.gz; do
    [ -e "$trace" ] || continue
    if [ "$(gzip -dc "$trace" | wc -l)" -gt 33 ]; then
        gzip -dc "$trace" | head -n 33 | gzip > "$scratch/head.jsonl.gz"
        run 0 "replay $trace (first 32 records)" replay "$scratch/head.jsonl.gz" --planners "$planners" \
            --format json --dump-plans "$scratch/plans.jsonl" -o "$scratch/result.json"
        continue
    fi
    run 0 "replay $trace" replay "$trace" --planners "$planners" --format json \
        --dump-plans "$scratch/plans.jsonl" -o "$scratch/result.json"
done
if [ -e traces/tiny-4rank.json ]; then
    run 0 "replay traces/tiny-4rank.json" replay traces/tiny-4rank.json --planners "$planners$expensive" \
        --lplb-graph torus:2x2 --per-record --step-model
    # threads: an instance started on one thread plans on others (GLPK's per-thread memory)
    run 0 "replay -j 3 traces/tiny-4rank.json" replay traces/tiny-4rank.json --planners "$planners$expensive" \
        --lplb-graph torus:2x2 -j 3
fi

# Error paths: everything built so far must be freed on the way out.
# -j 2: lines parsed, members inflated and record buffers handed between
# threads (a leak or a double free there shows here)
if [ -e traces/ep16-imb10.jsonl.gz ]; then
    run 0 "replay -j 2 traces/ep16-imb10.jsonl.gz" replay traces/ep16-imb10.jsonl.gz -j 2 --planners none,taot,lplb
fi
"$bin" gen -o "$scratch/members.jsonl.gz" --ep 8 --experts 32 --topk 4 --tokens 64 --microbatches 2000 \
    --layers 4 --hot-fraction 0.1 --gzip-level 1 --generator 2 2>/dev/null
run 0 "replay -j 2 of a blocked .jsonl.gz (5 members)" replay "$scratch/members.jsonl.gz" -j 2 --planners none

first=$(ls traces/*.jsonl.gz 2>/dev/null | head -1)
if [ -n "$first" ]; then
    run 2 "replay -o /dev/full" replay "$first" --planners taot,lplb -o /dev/full
    run 2 "replay --dump-plans /dev/full" replay "$first" --planners echo --dump-plans /dev/full
    run 2 "replay with an LPLB graph that does not fit" replay "$first" --planners taot,lplb --lplb-graph ring8
    run 0 "convert to .jsonl.gz" convert "$first" "$scratch/copy.jsonl.gz"
    run 2 "convert to /dev/full" convert "$first" /dev/full
    # a disk that fills up part way: a file size limit, SIGXFSZ ignored (EFBIG)
    (
        trap '' XFSZ
        ulimit -f 64
        run 2 "convert on a filling disk" convert "$first" "$scratch/big.json"
        run 2 "replay --dump-plans on a filling disk" replay "$first" --planners taot \
            --dump-plans "$scratch/plans.jsonl" -o "$scratch/result.md"
        exit "$fail"
    ) || fail=$((fail + 1))
fi
for bad in tests/data/trace/bad-*; do
    [ -e "$bad" ] || continue
    run 2 "validate $bad" validate "$bad"
done
head -c 2000 "${first:-/dev/null}" >"$scratch/cut.jsonl.gz"
run 2 "replay a truncated .gz" replay "$scratch/cut.jsonl.gz" --planners none
run 2 "gen -o /dev/full" gen --microbatches 2 -o /dev/full
# generator version 3 on 2 threads, calibrated on a sample and written in
# one pass (a scratch file copied after the header); and the one-pass
# writer on a filling disk
run 0 "gen --generator 3 -j 2" gen -j 2 --generator 3 -o "$scratch/g3.jsonl" --ep 16 --tokens 256 \
    --microbatches 200 --layers 1
(
    trap '' XFSZ
    ulimit -f 64
    run 2 "gen --generator 3 on a filling disk" gen --generator 3 -o "$scratch/g3big.jsonl" --ep 16 \
        --tokens 256 --microbatches 200 --layers 1 --hot-fraction 0.05
    exit "$fail"
) || fail=$((fail + 1))

echo "valgrind: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
