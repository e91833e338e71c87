#!/bin/sh
# Import round trips (issue 13): every input that tests/import/make_data.py
# writes with numpy (.npy, .safetensors, Megatron directories, CSV) must
#   1. convert to JSON Lines with the same records as its reference JSON
#      trace (the same counts, written as the JSON format), and
#   2. replay, from that JSONL and straight from the input, to the same plans
#      (--dump-plans byte for byte) as the reference.
# Exits 77 (skip) when no python3 with numpy is installed (Debian:
# python3-numpy, in scripts/deps.sh).
set -u
root=${TSIM_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${TAOTSIM:-$root/build/taotsim}
py=""
for p in ${PYTHON:-} python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import numpy' >/dev/null 2>&1; then
        py=$p
        break
    fi
done
if [ -z "$py" ]; then
    echo "import round trips: no python3 with numpy (apt-get install python3-numpy): skipped"
    exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$py" "$root/tests/import/make_data.py" "$work" || exit 2
export TAOTSIM_NO_PROGRESS=1
planners=none,taot,echo,llep
pass=0
fail=0
while IFS='|' read -r name input opts ref; do
    [ -n "$name" ] || continue
    in=$work/$input
    problem=""
    # shellcheck disable=SC2086
    if ! "$bin" convert "$in" "$work/x.jsonl" $opts 2>"$work/err"; then
        problem="convert failed: $(head -2 "$work/err")"
    elif ! "$bin" convert "$work/$ref" "$work/r.jsonl" 2>"$work/err"; then
        problem="the reference does not convert: $(head -2 "$work/err")"
    elif ! tail -n +2 "$work/x.jsonl" >"$work/x.rec" || ! tail -n +2 "$work/r.jsonl" >"$work/r.rec" ||
        ! cmp -s "$work/x.rec" "$work/r.rec"; then
        # (line 1 is the header: its meta names the source and differs)
        problem="records differ from the reference: $(diff "$work/x.rec" "$work/r.rec" | head -4)"
    elif ! "$bin" replay "$work/x.jsonl" --planners $planners -o "$work/a.md" --dump-plans "$work/a.jsonl" 2>"$work/err" ||
        ! "$bin" replay "$work/$ref" --planners $planners -o "$work/b.md" --dump-plans "$work/b.jsonl" 2>>"$work/err"; then
        problem="replay failed: $(head -2 "$work/err")"
    elif ! cmp -s "$work/a.jsonl" "$work/b.jsonl"; then
        problem="plans from the JSONL differ from the reference's"
    fi
    # straight from the input, where replay takes the options it needs
    case "$opts" in *--tensor* | *--experts* | *--block*) direct=no ;; *) direct=yes ;; esac
    if [ -z "$problem" ] && [ "$direct" = yes ]; then
        # shellcheck disable=SC2086
        if ! "$bin" replay "$in" $opts --planners $planners -o "$work/c.md" --dump-plans "$work/c.jsonl" 2>"$work/err"; then
            problem="replay of the input failed: $(head -2 "$work/err")"
        elif ! cmp -s "$work/c.jsonl" "$work/b.jsonl"; then
            problem="plans replayed from the input differ from the reference's"
        fi
    fi
    if [ -n "$problem" ]; then
        echo "FAIL $name: $problem"
        fail=$((fail + 1))
    else
        echo "ok   $name"
        pass=$((pass + 1))
    fi
done <"$work/cases.txt"
echo "import round trips: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
