#!/bin/sh
# The size limits of docs/architecture.md ("Size limits"): no function of a
# .c or .cu file under src/, baselines/ or gpu/ is longer than 150 lines, and
# no such .c file is longer than 1,200 lines, except the functions and files
# that section lists (at most three functions, each with its reason). The
# files are found by a glob, and the exceptions are read from the doc, so a new
# file is checked without editing the build and the doc cannot drift from the
# check: a listed function that no longer exists or now fits is an error too.
#
# A function is a '{' met at brace depth 0 after a ')' (comments, strings,
# character constants and preprocessor lines are skipped, so any brace style
# counts: "int f(void) {" as well as a '{' on a line of its own); it runs from
# the first line of its signature to the '}' that closes it.
# Usage: tests/function_length.sh SOURCE_ROOT. Exit 0 when every one fits, 1
# with a list of those that do not.
# tests/function_length.sh --self-test: the check run on made-up trees must
# catch a long function written in another brace style, braces in strings and
# comments must not fool it, and a stale exception must fail.
set -u
if [ "${1:-}" = --self-test ]; then
    self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
    t=$(mktemp -d) || exit 2
    trap 'rm -rf "$t"' EXIT
    mkdir -p "$t/src/a" "$t/docs"
    # f(n): a K&R-style function of n lines, its body full of decoys
    fn() {
        echo "static int $1(int x) {"
        echo '    const char *s = "}{ not a brace"; char c = '"'}'"'; /* } */ // }'
        i=3
        while [ "$i" -lt "$2" ]; do echo "    x += (int)s[0] + c;"; i=$((i + 1)); done
        echo "    return x; }"
    }
    printf '# A\n\n## Size limits\n\n' >"$t/docs/architecture.md"
    fails=0
    { fn fits 150; fn long_one 151; } >"$t/src/a/k.c"
    out=$(sh "$self" "$t" 2>&1) && { echo "self-test: a 151-line function passed"; fails=1; }
    printf '%s\n' "$out" | grep -q "src/a/k.c:151: long_one is 151 lines" ||
        { echo "self-test: long_one not named: $out"; fails=1; }
    printf '%s\n' "$out" | grep -q " fits " && { echo "self-test: a 150-line function failed"; fails=1; }
    echo '- `src/a/k.c` `long_one`: the self-test' >>"$t/docs/architecture.md"
    sh "$self" "$t" >/dev/null 2>&1 || { echo "self-test: a listed exception failed"; fails=1; }
    fn long_one 20 >"$t/src/a/k.c"
    sh "$self" "$t" >/dev/null 2>&1 && { echo "self-test: a stale exception passed"; fails=1; }
    [ "$fails" -eq 0 ] && echo "function length self-test: passed" && echo "script: 1 passed, 0 failed" && exit 0
    echo "script: 0 passed, 1 failed"
    exit 1
fi
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2
limit=${FUNCTION_LENGTH_LIMIT:-150}
file_limit=1200
doc=docs/architecture.md
[ -f "$doc" ] || { echo "function_length: no $doc"; exit 2; }

# The exceptions: in the "Size limits" section, lines such as
#   - `gpu/taot_gpu.cu` `phase2`: why
#   - `src/trace/gen.c` (file): why
exceptions=$(awk '/^## /{on = ($0 ~ /^## Size limits/)} on && /^- `[^`]+` (`[^`]+`|\(file\))/' "$doc" |
    sed -E 's/^- `([^`]+)` (`([^`]+)`|\((file)\)).*/\1 \3\4/')
n_func_ex=$(printf '%s\n' "$exceptions" | awk 'NF == 2 && $2 != "file"' | wc -l)

dirs=$(for d in src baselines gpu; do [ -d "$d" ] && echo "$d"; done)
tmp=$(mktemp) || exit 2
trap 'rm -f "$tmp"' EXIT
files=$(find $dirs -type f \( -name '*.c' -o -name '*.cu' \) | sort)
[ -n "$files" ] || { echo "function_length: no sources found under $root"; exit 2; }

# Every function over the limit: "FILE NAME LENGTH START".
long=$(for f in $files; do
    awk -v file="$f" -v limit="$limit" -v sq="'" '
        function flush_sig() { sig = ""; sig_start = 0 }
        BEGIN { depth = 0; in_comment = 0; cont = 0; flush_sig() }
        {
            line = $0
            # preprocessor lines and their continuations carry no braces we count
            if (cont || line ~ /^[ \t]*#/) { cont = (line ~ /\\$/); next }
            code = ""
            i = 1; n = length(line)
            while (i <= n) {
                c = substr(line, i, 1); c2 = substr(line, i, 2)
                if (in_comment) {
                    if (c2 == "*/") { in_comment = 0; i += 2 } else i++
                    continue
                }
                if (c2 == "/*") { in_comment = 1; i += 2; continue }
                if (c2 == "//") break
                if (c == "\"" || c == sq) {
                    q = c; i++
                    while (i <= n && substr(line, i, 1) != q) i += (substr(line, i, 1) == "\\") ? 2 : 1
                    i++; code = code "0"; continue
                }
                code = code c; i++
            }
            for (j = 1; j <= length(code); j++) {
                c = substr(code, j, 1)
                if (depth == 0) {
                    if (c == "{") {
                        t = sig; gsub(/[ \t]+$/, "", t)
                        in_func = (t ~ /\)$/ && t ~ /\(/)
                        if (in_func) {
                            # the name stands before the parameter list, the last (...) group
                            k = length(t); d = 0
                            for (; k > 0; k--) {
                                ch = substr(t, k, 1)
                                if (ch == ")") d++
                                else if (ch == "(" && --d == 0) break
                            }
                            name = substr(t, 1, k - 1); sub(/[ \t]+$/, "", name); sub(/.*[^A-Za-z0-9_]/, "", name)
                            fstart = sig_start
                        }
                        depth = 1
                        continue
                    }
                    if (c == ";" || c == "}") { flush_sig(); continue }
                    if (c !~ /[ \t]/ && sig_start == 0) sig_start = NR
                    if (sig_start) sig = sig c
                    continue
                }
                if (c == "{") depth++
                else if (c == "}") {
                    depth--
                    if (depth == 0) {
                        if (in_func && NR - fstart + 1 > limit)
                            printf "%s %s %d %d\n", file, name, NR - fstart + 1, fstart
                        in_func = 0
                        flush_sig()
                    }
                }
            }
            if (depth == 0 && sig_start) sig = sig " "
        }
    ' "$f"
done)

status=0
# Functions over the limit that the doc does not list.
printf '%s\n' "$long" | while read -r f name len start; do
    [ -n "$f" ] || continue
    if printf '%s\n' "$exceptions" | grep -qx "$f $name"; then
        echo "$f:$start: $name is $len lines (limit $limit; listed in $doc)"
    else
        echo "$f:$start: $name is $len lines (limit $limit)"
        echo FAIL
    fi
done >"$tmp"
grep -v '^FAIL$' "$tmp"
grep -q '^FAIL$' "$tmp" && status=1

# Listed exceptions that are stale, and too many of them.
if [ "$n_func_ex" -gt 3 ]; then
    echo "$doc: $n_func_ex functions listed over the limit; at most 3"
    status=1
fi
printf '%s\n' "$exceptions" | while read -r f name; do
    [ -n "$f" ] || continue
    if [ ! -f "$f" ]; then
        echo "$doc: lists $f, which does not exist"
        echo FAIL
    elif [ "$name" = file ]; then
        lines=$(wc -l <"$f")
        # a file split since it was listed is only a note: its split may land
        # before the doc line goes
        [ "$lines" -le "$file_limit" ] && echo "note: $doc lists $f ($lines lines), which now fits: drop the line"
    elif ! printf '%s\n' "$long" | grep -q "^$f $name "; then
        echo "$doc: lists $name of $f, which is not over $limit lines (drop the line)"
        echo FAIL
    fi
done >"$tmp"
grep -v '^FAIL$' "$tmp"
grep -q '^FAIL$' "$tmp" && status=1

# Files over the limit (.c only: a CUDA file keeps its kernels together).
nfiles=0
for f in $files; do
    nfiles=$((nfiles + 1))
    case "$f" in *.c) ;; *) continue ;; esac
    lines=$(wc -l <"$f")
    [ "$lines" -le "$file_limit" ] && continue
    if printf '%s\n' "$exceptions" | grep -qx "$f file"; then
        echo "$f: $lines lines (limit $file_limit; listed in $doc)"
    else
        echo "$f: $lines lines (limit $file_limit)"
        status=1
    fi
done

if [ "$status" -eq 0 ]; then
    echo "function length: every function of $nfiles files fits in $limit lines, every .c file in $file_limit, but those $doc lists"
    echo "script: 1 passed, 0 failed"
else
    echo "script: 0 passed, 1 failed"
fi
exit "$status"
