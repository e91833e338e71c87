#!/bin/sh
# Function length check (issue 21, "keep functions short"): no function of the
# files named after the source root is longer than 150 lines, counted from the
# line that starts its signature to its closing brace (a function is a '{' at
# the start of a line, its signature the lines above it up to one that starts
# at column 0, its end the next '}' at the start of a line). Exit 0 when every
# one fits, 1 with a list of those that do not.
# Usage: tests/function_length.sh SOURCE_ROOT FILE...
set -u
root=$1
shift
cd "$root" || exit 2
limit=150
status=0
for f in "$@"; do
    [ -f "$f" ] || { echo "$f: no such file"; status=1; continue; }
    awk -v file="$f" -v limit="$limit" '
        { line[NR] = $0 }
        $0 == "{" {
            s = NR - 1
            while (s > 1 && line[s] ~ /^[ \t]/) s--
            start[++n] = s
        }
        $0 == "}" && n > 0 && !done[n] {
            done[n] = 1
            len = NR - start[n] + 1
            if (len > limit) {
                name = line[start[n]]
                sub(/\(.*/, "", name)
                sub(/.*[ *]/, "", name)
                printf "%s:%d: %s is %d lines (limit %d)\n", file, start[n], name, len, limit
                bad = 1
            }
        }
        END { exit bad }
    ' "$f" || status=1
done
[ "$status" -eq 0 ] && echo "function length: every function of $# files fits in $limit lines"
exit "$status"
