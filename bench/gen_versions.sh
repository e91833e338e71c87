#!/bin/sh
# CPU seconds (user + system) of `taotsim gen` per generator version, as
# ratios within one run: every configuration is run REPS times, the builds
# and versions in turn, each after a sync, and the least CPU time of each is
# kept (the machine's other load only ever adds time).
#   bench/gen_versions.sh BEFORE_TAOTSIM AFTER_TAOTSIM [REPS] [VERSIONS]
# BEFORE runs its default generator; AFTER runs each of VERSIONS (default
# "1 2 3"). Writes .jsonl into a temporary directory, removed at the end.
set -eu
before=$1 after=$2 reps=${3:-3} versions=${4:-"1 2 3"}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cpu() { # prints user + system seconds of one run of "$@"
    # the last run's file out of the page cache's dirty pages first, so that
    # no run is throttled (and charged) for writing back another's
    rm -f "$dir/t.jsonl"
    sync
    /usr/bin/time -f '%U %S' -o "$dir/time" "$@" >/dev/null 2>&1
    awk '{printf "%.2f\n", $1 + $2}' "$dir/time"
}
least() { sort -n | head -1; }
printf '| tokens per rank | records | mode | before | %s |\n' "$(for v in $versions; do printf 'version %s | ' "$v"; done | sed 's/ | $//')"
for shape in "256 1000" "4096 100"; do
    set -- $shape
    tokens=$1 mb=$2 records=$(($2 * 4))
    for mode in "--hot-fraction 0.05" "calibrated"; do
        extra=$mode
        [ "$mode" = calibrated ] && extra=
        args="-o $dir/t.jsonl --ep 32 --tokens $tokens --microbatches $mb --layers 4 $extra"
        : > "$dir/b"
        for v in $versions; do : > "$dir/v$v"; done
        for r in $(seq "$reps"); do
            cpu "$before" gen $args >> "$dir/b"
            for v in $versions; do cpu "$after" gen $args --generator "$v" >> "$dir/v$v"; done
        done
        b=$(least < "$dir/b")
        row="| $tokens | $records | $mode | $b"
        for v in $versions; do
            t=$(least < "$dir/v$v")
            row="$row | $t ($(awk -v b="$b" -v t="$t" 'BEGIN { printf "%.1fx", (t > 0 ? b / t : 0) }'))"
        done
        echo "$row |"
    done
done
