#!/usr/bin/env bash
# Slurm check on a real one-node Slurm (scripts/slurm/local-cluster.sh, the
# packages from scripts/slurm/install.sh).
# Full mode, when taotsim has --shard and merge: a sweep and a replay of a
# generated trace run once unsharded and once through scripts/slurm/submit.sh
# as a 4-task array plus a dependent merge job; the outputs must be the same
# bytes. Smoke mode, until then: the same scripts drive a stand-in for
# taotsim that records what each job was asked to do; every task must run
# once with the right --shard, -o and --format, the merge job only after all
# of them, and a failing shard must cancel its merge job.
# Exit status: 0 passed, 1 failed, 77 skipped (Slurm cannot be installed).
# Usage: tests/slurm.sh TAOTSIM   (as root; about 10 s)
set -uo pipefail
bin=${1:?usage: tests/slurm.sh TAOTSIM}
root=$(cd "$(dirname "$0")/.." && pwd)
slurm=$root/scripts/slurm
[ -x "$bin" ] || { echo "slurm.sh: $bin is not executable" >&2; exit 1; }
bin=$(realpath "$bin")
t0=$(date +%s.%N)
shards=4

elapsed() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}'; }

"$slurm/install.sh"
case $? in
0) ;;
77)
    echo "skipped: the Slurm packages (slurmctld slurmd slurm-client munge) cannot be installed"
    exit 77
    ;;
*) echo "FAIL: scripts/slurm/install.sh"; exit 1 ;;
esac

# The test's own cluster (home and ports), so that it neither reuses nor
# stops a cluster someone started by hand; a crashed earlier run's is cleaned.
export TAOTSIM_SLURM_HOME=/tmp/taotsim-slurm-test TAOTSIM_SLURM_PORT=6837
scratch=$(mktemp -d)
chmod 0755 "$scratch"
cleanup() {
    "$slurm/local-cluster.sh" stop || echo "slurm.sh: stopping the cluster failed"
    rm -rf "$scratch"
    echo "slurm.sh: wall time $(elapsed) s"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
"$slurm/local-cluster.sh" start || { echo "FAIL: the local Slurm cluster did not start"; exit 1; }
eval "$("$slurm/local-cluster.sh" env)"
echo "cluster up at $(elapsed) s"
cd "$scratch" || exit 1

fails=0
check() { # DESCRIPTION COMMAND...: one assertion
    if "${@:2}"; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi
}

# wait_jobs SECONDS JOBID...: polls squeue (sbatch --wait polls far slower)
# until none of the jobs is pending or running.
wait_jobs() {
    local limit=$1 ids deadline out
    shift
    ids=$(IFS=,; echo "$*")
    deadline=$(($(date +%s) + limit))
    while [ "$(date +%s)" -lt "$deadline" ]; do
        if out=$(squeue -h -j "$ids" -o %i 2>&1) && [ -z "$out" ]; then return 0; fi
        sleep 0.25
    done
    echo "slurm.sh: jobs $ids still queued after ${limit}s:"
    squeue -j "$ids"
    return 1
}

# job_states JOBID: the state of the job, or of each of its array tasks.
job_states() { scontrol -o show job "$1" | grep -oE 'JobState=[A-Z_]+' | cut -d= -f2 | sort | uniq -c | xargs; }

show_logs() { # DIR
    local f
    for f in "$1"/slurm-*.out; do
        [ -e "$f" ] && { echo "--- $f"; cat "$f"; }
    done
}

# submit NAME OUT FORMAT COMMAND...: submit.sh with $shards tasks; sets
# array_id and merge_id.
submit() {
    local name=$1 out=$2 format=$3 ids
    shift 3
    ids=$("$slurm/submit.sh" --parsable -n "$shards" -o "$out" --format "$format" \
        --parts "$scratch/$name.parts" --taotsim "$taotsim" -- "$@") || return 1
    read -r array_id merge_id <<<"$ids"
    echo "submitted $name: array job $array_id, merge job $merge_id"
}

# same_json NAME REF MERGED: equal bytes but for the top-level "command"
# line, which names the command that wrote the file (and its own -o).
same_json() {
    grep -v '^."command":' "$2" >"$2.body" && grep -v '^."command":' "$3" >"$3.body" &&
        cmp "$2.body" "$3.body"
}

full_mode() {
    local trace=$scratch/trace.jsonl.gz name ids
    "$bin" gen -o "$trace" --experts 64 --ep 16 --rpn 8 --tokens 256 --microbatches 24 --layers 4 \
        --imbalance 0.4 --seed 11 2>/dev/null || { echo "FAIL: taotsim gen"; return 1; }
    taotsim=$bin
    # LPLB's history and EPLB-style windows cross the shard boundaries.
    # shellcheck disable=SC2054 # the commas separate planners
    local replay=(replay "$trace" --planners none,taot,echo,llep,lplb,fastermoe)
    # shellcheck disable=SC2054
    local sweep=(sweep "$trace" --planners taot,echo,lplb -j 1)
    submit replay "$scratch/replay.md" md "${replay[@]}" || return 1
    local replay_ids="$array_id $merge_id"
    submit sweep "$scratch/sweep.md" md "${sweep[@]}" || return 1
    local sweep_ids="$array_id $merge_id"
    # The unsharded references, while the sharded runs queue.
    for name in md json; do
        if ! "$bin" "${replay[@]}" --format $name -o "$scratch/replay.ref.$name" ||
            ! "$bin" "${sweep[@]}" --format $name -o "$scratch/sweep.ref.$name"; then
            echo "FAIL: unsharded replay or sweep (--format $name)"
            return 1
        fi
    done
    # shellcheck disable=SC2086
    wait_jobs 300 $replay_ids $sweep_ids || return 1
    echo "all jobs done at $(elapsed) s"
    for name in replay sweep; do
        ids=${name}_ids
        read -r array_id merge_id <<<"${!ids}"
        check "$name: all $shards array tasks COMPLETED" test "$(job_states "$array_id")" = "$shards COMPLETED"
        check "$name: merge job COMPLETED" test "$(job_states "$merge_id")" = "1 COMPLETED"
        check "$name: $shards shards + merge job: same bytes as unsharded (md)" \
            cmp "$scratch/$name.ref.md" "$scratch/$name.md"
        # The same parts once more, merged here to JSON (every statistic).
        "$bin" merge $(seq -f "$scratch/$name.parts/part-%g.json" 0 $((shards - 1))) \
            --format json -o "$scratch/$name.json" 2>&1
        check "$name: $shards shards merged to JSON: same bytes as unsharded (but \"command\")" \
            same_json "$name" "$scratch/$name.ref.json" "$scratch/$name.json"
    done
    [ "$fails" = 0 ] || { show_logs "$scratch/replay.parts"; show_logs "$scratch/sweep.parts"; }
}

# A stand-in for taotsim: answers --version with the real one's, claims
# --shard in --help, and writes down what each job asked of it.
write_stand_in() {
    cat >"$scratch/stand-in" <<EOF
#!/usr/bin/env bash
real=$(printf %q "$bin")
EOF
    cat >>"$scratch/stand-in" <<'EOF'
[ "${1:-}" = --version ] && exec "$real" --version
[ "${2:-}" = --help ] && { echo "  --shard I/N   (stand-in)"; exit 0; }
start=$(date +%s.%N)
cmd=$1
args="$*"
out="" shard="" format="" inputs=()
shift
while [ $# -gt 0 ]; do
    case "$1" in
    -o) out=$2; shift 2 ;;
    --shard) shard=$2; shift 2 ;;
    --format) format=$2; shift 2 ;;
    *) [ "$cmd" = merge ] && inputs+=("$1"); shift ;;
    esac
done
[ -n "$out" ] || { echo "stand-in: no -o" >&2; exit 2; }
if [ "$cmd" = merge ]; then
    {
        echo "merge start=$start format=$format host=$(hostname -s)"
        for f in "${inputs[@]}"; do echo "input=${f##*/}"; cat "$f"; done
    } >"$out.tmp" && mv "$out.tmp" "$out"
    exit 0
fi
# a flag file beside the parts makes that shard fail
[ -e "$(dirname "$out")/fail-shard-${shard%/*}" ] && { echo "stand-in: failing shard $shard" >&2; exit 1; }
sleep 0.5
printf 'task=%s shard=%s format=%s host=%s version=%s\nargs=%s\nend=%s\n' \
    "$SLURM_ARRAY_TASK_ID" "$shard" "$format" "$(hostname -s)" "$("$real" --version)" "$args" \
    "$(date +%s.%N)" >"$out"
EOF
    chmod 0755 "$scratch/stand-in"
}

smoke_mode() {
    local i part version host ok_ids fail_ids merge_start last_end
    write_stand_in
    taotsim=$scratch/stand-in
    version=$("$bin" --version)
    host=$(hostname -s)
    submit smoke "$scratch/smoke.out" md replay /data/trace.jsonl.gz --slots 2 || return 1
    ok_ids="$array_id $merge_id"
    mkdir -p "$scratch/failing.parts" && touch "$scratch/failing.parts/fail-shard-2"
    submit failing "$scratch/failing.out" md replay /data/trace.jsonl.gz || return 1
    fail_ids="$array_id $merge_id"
    # shellcheck disable=SC2086
    wait_jobs 120 $ok_ids $fail_ids || return 1
    echo "all jobs done at $(elapsed) s"

    read -r array_id merge_id <<<"$ok_ids"
    check "array: all $shards tasks COMPLETED" test "$(job_states "$array_id")" = "$shards COMPLETED"
    check "merge job COMPLETED" test "$(job_states "$merge_id")" = "1 COMPLETED"
    for i in $(seq 0 $((shards - 1))); do
        part=$scratch/smoke.parts/part-$i.json
        check "task $i ran taotsim replay ... --shard $i/$shards -o part-$i.json --format json on $host" \
            grep -qxF "task=$i shard=$i/$shards format=json host=$host version=$version" "$part"
        check "task $i passed the command through" \
            grep -qxF "args=replay /data/trace.jsonl.gz --slots 2 --shard $i/$shards -o $scratch/smoke.parts/part-$i.json --format json" "$part"
    done
    check "merge read part-0..$((shards - 1)) in shard order" \
        test "$(grep '^input=' "$scratch/smoke.out" 2>/dev/null | xargs)" = "$(seq -f 'input=part-%g.json' 0 $((shards - 1)) | xargs)"
    check "merge got --format md" grep -q '^merge start=.* format=md ' "$scratch/smoke.out"
    merge_start=$(sed -n 's/^merge start=\([0-9.]*\) .*/\1/p' "$scratch/smoke.out")
    last_end=$(sed -n 's/^end=//p' "$scratch/smoke.out" | sort -g | tail -1)
    check "merge started after the last task ended ($merge_start >= $last_end)" \
        awk -v m="${merge_start:-0}" -v e="${last_end:-1}" 'BEGIN {exit !(m + 0 >= e + 0)}'

    read -r array_id merge_id <<<"$fail_ids"
    check "failing array: shard 2 FAILED, the others COMPLETED" \
        test "$(job_states "$array_id")" = "$((shards - 1)) COMPLETED 1 FAILED"
    check "failing array: its merge job was CANCELLED" test "$(job_states "$merge_id")" = "1 CANCELLED"
    check "failing array: no merged result" test ! -e "$scratch/failing.out"
    [ "$fails" = 0 ] || { show_logs "$scratch/smoke.parts"; show_logs "$scratch/failing.parts"; }
}

missing=""
for cmd in replay sweep; do
    # grep reads all of the help: -q would quit at the match and the writer die of
    # SIGPIPE, which pipefail reports as a failure
    "$bin" "$cmd" --help 2>/dev/null | grep -- --shard >/dev/null || missing="$missing '$cmd --shard'"
done
"$bin" merge --help >/dev/null 2>&1 || missing="$missing 'merge'"
if [ -z "$missing" ]; then
    echo "mode: full (sweep and replay, unsharded vs $shards-task array + merge, compared with cmp)"
    full_mode || fails=$((fails + 1))
else
    echo "mode: SMOKE ONLY (taotsim lacks$missing): a $shards-task array + dependent job of a stand-in taotsim"
    smoke_mode || fails=$((fails + 1))
fi
if [ "$fails" != 0 ]; then
    echo "slurm.sh: $fails check(s) failed"
    exit 1
fi
echo "slurm.sh: passed"
