#!/bin/sh
# CLI golden tests. Each case is tests/cli/cases/NAME.cmd: one shell command
# line run from the source root with $TAOTSIM set to the binary and $TMP to a
# fresh scratch directory. Its stdout must equal NAME.out byte for byte and its
# exit status must equal NAME.status (0 when that file is absent); when
# NAME.err exists, stderr must equal it too; a case that exits non-zero must
# have one.
# TSIM_UPDATE_GOLDEN=1 rewrites the .out/.status files from the current binary.
set -u
root=${TSIM_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${TAOTSIM:-$root/build/taotsim}
cd "$root" || exit 2
pass=0
fail=0
for cmd in tests/cli/cases/*.cmd; do
    [ -e "$cmd" ] || continue
    name=${cmd%.cmd}
    scratch=$(mktemp -d)
    actual=$scratch/stdout
    TAOTSIM=$bin TMP=$scratch TAOTSIM_NO_PROGRESS=1 sh -c "$(cat "$cmd")" >"$actual" 2>"$scratch/stderr"
    status=$?
    want_status=0
    [ -f "$name.status" ] && want_status=$(cat "$name.status")
    if [ "${TSIM_UPDATE_GOLDEN:-0}" = 1 ]; then
        cp "$actual" "$name.out"
        # stderr is pinned for the cases that have a .err file
        [ -f "$name.err" ] && cp "$scratch/stderr" "$name.err"
        if [ "$status" -ne 0 ]; then echo "$status" >"$name.status"; else rm -f "$name.status"; fi
        echo "updated $name"
    elif [ "$want_status" != 0 ] && [ ! -f "$name.err" ]; then
        # every failing case pins its message, not only its status
        echo "FAIL $name: exits $want_status but has no $name.err to pin its stderr"
        fail=$((fail + 1))
    elif [ "$status" != "$want_status" ]; then
        echo "FAIL $name: exit status $status, expected $want_status"
        sed 's/^/  stderr: /' "$scratch/stderr" | head -5
        fail=$((fail + 1))
    elif ! cmp -s "$actual" "$name.out"; then
        echo "FAIL $name: stdout differs from $name.out"
        diff "$name.out" "$actual" | head -20
        fail=$((fail + 1))
    elif [ -f "$name.err" ] && ! cmp -s "$scratch/stderr" "$name.err"; then
        echo "FAIL $name: stderr differs from $name.err"
        diff "$name.err" "$scratch/stderr" | head -20
        fail=$((fail + 1))
    else
        pass=$((pass + 1))
    fi
    rm -rf "$scratch"
done
echo "cli golden: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
