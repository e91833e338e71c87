#!/usr/bin/env bash
# Runs a taotsim command as N shards on a Slurm cluster and merges them: the
# two sbatch commands of docs/scale-out.md as one.
set -uo pipefail

usage() {
    cat <<'EOF'
usage: scripts/slurm/submit.sh -n N -o OUT [options] -- COMMAND [ARGS...]

Submits an N-task Slurm job array (scripts/slurm/array.sbatch) in which task I
runs 'taotsim COMMAND ARGS... --shard I/N' and writes PARTS/part-I.json, and a
merge job (scripts/slurm/merge.sbatch, --dependency=afterok on the array)
that runs 'taotsim merge' over the parts into OUT. Prints both job ids.
If a shard fails, the merge job is cancelled (DependencyNeverSatisfied).

Options:
  -n, --shards N       array tasks, one shard each (required)
  -o, --output OUT     the merged result (required)
  --format FMT         the merged result's format: md, csv or json
  --parts DIR          partial results and job logs (default OUT.parts);
                       must not hold part-*.json from an earlier run
  --merge-arg ARG      pass ARG on to taotsim merge (repeatable), e.g.
                       --merge-arg=--fail-if --merge-arg='taot.rho_after.p95 > 0.05'
  --sbatch-arg ARG     pass ARG to both sbatch calls (repeatable), e.g.
                       --sbatch-arg=--partition=cpu --sbatch-arg=--time=30
  --taotsim PATH       taotsim as the compute nodes see it (default: taotsim
                       on PATH, else this checkout's build/taotsim)
  --parsable           print only "ARRAY_JOB_ID MERGE_JOB_ID"
  -h, --help           this help

Paths are made absolute; every node must see them (a shared file system).
Example:
  scripts/slurm/submit.sh -n 64 -o month.md --format md -- replay month.jsonl.gz --slots 2
  squeue -j ARRAY_JOB_ID,MERGE_JOB_ID     # month.md appears when the merge job ends
Exit status: 0 submitted, 1 sbatch refused a job, 2 usage error.
EOF
}

die() { echo "submit.sh: $*" >&2; exit 2; }
need_value() { [ $# -ge 2 ] || die "$1 needs a value"; }

here=$(cd "$(dirname "$0")" && pwd)
shards="" out="" format="" parts="" taotsim="" parsable=0
merge_args=()
sbatch_args=()
while [ $# -gt 0 ]; do
    case "$1" in
    -n | --shards) need_value "$@"; shards=$2; shift 2 ;;
    --shards=*) shards=${1#*=}; shift ;;
    -o | --output) need_value "$@"; out=$2; shift 2 ;;
    --output=*) out=${1#*=}; shift ;;
    --format) need_value "$@"; format=$2; shift 2 ;;
    --format=*) format=${1#*=}; shift ;;
    --parts) need_value "$@"; parts=$2; shift 2 ;;
    --parts=*) parts=${1#*=}; shift ;;
    --merge-arg) need_value "$@"; merge_args+=("$2"); shift 2 ;;
    --merge-arg=*) merge_args+=("${1#*=}"); shift ;;
    --sbatch-arg) need_value "$@"; sbatch_args+=("$2"); shift 2 ;;
    --sbatch-arg=*) sbatch_args+=("${1#*=}"); shift ;;
    --taotsim) need_value "$@"; taotsim=$2; shift 2 ;;
    --taotsim=*) taotsim=${1#*=}; shift ;;
    --parsable) parsable=1; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    *) die "unknown option '$1' (the taotsim command goes after --; see --help)" ;;
    esac
done
[ $# -ge 1 ] || die "no taotsim command after -- (see --help)"
case "$shards" in '' | *[!0-9]* | 0*) die "-n/--shards needs a positive integer" ;; esac
[ -n "$out" ] || die "-o/--output is required"
case "$format" in '' | md | csv | json) ;; *) die "--format must be md, csv or json" ;; esac
command -v sbatch >/dev/null 2>&1 || die "sbatch not found (is this a Slurm submit host?)"

if [ -z "$taotsim" ]; then
    taotsim=$(command -v taotsim 2>/dev/null) || taotsim=$here/../../build/taotsim
fi
[ -x "$taotsim" ] || die "taotsim '$taotsim' is not an executable file (use --taotsim)"
taotsim=$(realpath "$taotsim")
# Fail here, not in N queued jobs, when the command cannot be sharded.
# (all of the help through grep: with -q the writer could die of SIGPIPE under pipefail)
"$taotsim" "$1" --help 2>/dev/null | grep -- --shard >/dev/null ||
    die "'taotsim $1' has no --shard option"

out=$(realpath -m "$out")
parts=$(realpath -m "${parts:-$out.parts}")
mkdir -p "$parts" "$(dirname "$out")" || die "cannot create $parts"
for f in "$parts"/part-*.json; do
    [ -e "$f" ] && die "$parts holds partial results of an earlier run ($f): remove them or use another --parts"
done
[ -n "$format" ] && merge_args=(--format "$format" "${merge_args[@]}")

# taotsim goes as an argument: --export=ALL,VAR=... would make slurmd load
# the user's login environment (seconds per job), and SBATCH_EXPORT=NONE
# sites would drop an environment variable.
array_id=$(sbatch --parsable --array=0-$((shards - 1)) --output="$parts/slurm-%A_%a.out" \
    "${sbatch_args[@]}" "$here/array.sbatch" --taotsim "$taotsim" "$parts" "$@") || { echo "submit.sh: sbatch refused the array job" >&2; exit 1; }
array_id=${array_id%%;*}
merge_id=$(sbatch --parsable --dependency=afterok:"$array_id" --kill-on-invalid-dep=yes \
    --output="$parts/slurm-%j-merge.out" "${sbatch_args[@]}" \
    "$here/merge.sbatch" --taotsim "$taotsim" "$parts" "$out" "${merge_args[@]}") || {
    echo "submit.sh: sbatch refused the merge job; cancelling array job $array_id" >&2
    scancel "$array_id"
    exit 1
}
merge_id=${merge_id%%;*}

if [ "$parsable" = 1 ]; then
    echo "$array_id $merge_id"
else
    echo "array job $array_id: $shards shards of 'taotsim $*'; parts and logs in $parts"
    echo "merge job $merge_id: after every shard succeeds, writes $out"
    echo "watch: squeue -j $array_id,$merge_id"
fi
