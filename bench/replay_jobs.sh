#!/bin/sh
# Wall-time ratio of `replay -j 1` over `-j N` for every cheap built-in planner
# and the default list, on one trace, alternating the two runs (best of REPS)
# so that both see the same machine.
#   bench/replay_jobs.sh TAOTSIM TRACE [N [REPS]]
# Prints a Markdown table: planners, -j 1 s, -j N s, ratio.
set -eu
bin=$1 trace=$2 jobs=${3:-2} reps=${4:-2}
planners=$("$bin" planners | awk '/^[a-z0-9-]+:/ { name = $1; sub(":", "", name) }
    /^  cost: *cheap/ { print name }')
wall() {
    s=$(date +%s.%N)
    "$bin" replay "$trace" --planners "$1" -j "$2" -o /dev/null 2>/dev/null
    e=$(date +%s.%N)
    echo "$e - $s" | bc
}
min() { if [ -z "$1" ] || [ "$(echo "$2 < $1" | bc)" = 1 ]; then echo "$2"; else echo "$1"; fi; }
echo "| planners | \`-j 1\` s | \`-j $jobs\` s | ratio |"
echo "|---|---:|---:|---:|"
for p in $planners default; do
    list=$p
    [ "$p" = default ] && list=taot,echo,llep,lplb
    one= many=
    i=0
    while [ "$i" -lt "$reps" ]; do
        one=$(min "$one" "$(wall "$list" 1)")
        many=$(min "$many" "$(wall "$list" "$jobs")")
        i=$((i + 1))
    done
    printf '| %s | %.2f | %.2f | %.2fx |\n' "$list" "$one" "$many" "$(echo "$one / $many" | bc -l)"
done
