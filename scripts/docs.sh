#!/bin/sh
# Rewrites the numbers in the documentation from the current build, so that
# they cannot go stale. A block is
#
#   <!-- BEGIN taotsim: table1 --traces traces --format md -->
#   ...what that command prints...
#   <!-- END -->
#
# and the command after "taotsim:" runs from the source root. A kind may come
# before the colon:
#   slow    takes more than a minute (the fit): left out by --fast, so CI
#           checks it only when someone runs `scripts/docs.sh --check` by hand;
#   timing  wall-clock numbers that differ on every run: never checked, rerun
#           only with --timing, and written with the date and the machine.
# After the command, `| excerpt REGEX` keeps only the first table's header and
# its rows that match REGEX (an awk regular expression). Headings the command
# prints go down two levels (`# T` becomes `### T`) to sit inside a section.
#
# Usage: scripts/docs.sh [--check] [--fast] [--timing] [FILE...]
#   (default FILE: README.md docs/*.md; TAOTSIM names the binary, default
#   build/taotsim)
#   without --check: rewrite stale blocks in place (atomically);
#   --check: change nothing, print a diff of every stale block, exit 1.
# Exit 2 on a malformed block or a command that fails.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${TAOTSIM:-$root/build/taotsim}
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
cd "$root" || exit 2
check=0 fast=0 timing=0
while [ $# -gt 0 ]; do
    case $1 in
        --check) check=1 ;;
        --fast) fast=1 ;;
        --timing) timing=1 ;;
        -h | --help) sed -n '2,/^set -u/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "docs.sh: unknown option '$1'" >&2; exit 2 ;;
        *) break ;;
    esac
    shift
done
[ $# -gt 0 ] || set -- README.md docs/*.md
[ -x "$bin" ] || { echo "docs.sh: no taotsim binary at $bin (build first, or set TAOTSIM)" >&2; exit 2; }

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
stale=0

die() { echo "docs.sh: $*" >&2; exit 2; }

# The machine a timing block was measured on, in one line.
machine() {
    cpu=$(sed -n 's/^model name[^:]*: *//p' /proc/cpuinfo 2>/dev/null | head -n 1)
    printf '%s cores%s' "$(nproc 2>/dev/null || echo '?')" "${cpu:+, $cpu}"
}

# run_block SPEC WHERE: print the block's new content (blank line, output,
# blank line) on stdout.
run_block() {
    spec=$1 where=$2
    kind=${spec%%:*}
    cmd=${spec#*:}
    filter=
    case $cmd in
        *' | excerpt '*) filter=${cmd#*' | excerpt '}; cmd=${cmd%%' | excerpt '*} ;;
    esac
    if ! eval "\"\$bin\" $cmd" > "$tmp/out" 2> "$tmp/err"; then
        cat "$tmp/err" >&2
        die "$where: 'taotsim$cmd' failed"
    fi
    if [ -n "$filter" ]; then
        # ENVIRON, not -v: -v would turn the backslashes of \| into escapes.
        EXCERPT=$filter awk '
            /^\|/ { n++; if (n <= 2 || $0 ~ ENVIRON["EXCERPT"]) print; seen = 1; next }
            seen { exit }' "$tmp/out" > "$tmp/cut"
        [ "$(wc -l < "$tmp/cut")" -gt 2 ] || die "$where: excerpt '$filter' matches no row"
        mv "$tmp/cut" "$tmp/out"
    fi
    echo
    [ "$kind" = " timing" ] && printf 'Measured %s on %s:\n\n' "$(date -u +%Y-%m-%d)" "$(machine)"
    # Trailing blank lines are dropped so that one blank line ends the block.
    sed 's/^\(#\{1,4\}\) /##\1 /' "$tmp/out" | sed -e ':a' -e '/^\n*$/{$d;N;ba' -e '}'
    echo
}

# want KIND: whether this run recomputes blocks of that kind.
want() {
    case $1 in
        '') return 0 ;;
        ' slow') [ "$fast" = 0 ] ;;
        ' timing') [ "$check" = 0 ] && [ "$timing" = 1 ] ;;
        *) return 2 ;;
    esac
}

for f in "$@"; do
    [ -f "$f" ] || die "$f: no such file"
    : > "$tmp/new"
    inblock=0 lineno=0 changed=0 fenced=0
    while IFS= read -r line || [ -n "$line" ]; do
        lineno=$((lineno + 1))
        if [ "$inblock" = 0 ]; then
            printf '%s\n' "$line" >> "$tmp/new"
            case $line in
                '```'*) fenced=$((1 - fenced)); continue ;; # a marker shown as an example
                '<!-- BEGIN taotsim'*) [ "$fenced" = 0 ] || continue ;;
                *) continue ;;
            esac
            case $line in
                *' -->') ;;
                *) die "$f:$lineno: a BEGIN marker must end with ' -->' on its line" ;;
            esac
            spec=${line#'<!-- BEGIN taotsim'}
            spec=${spec%' -->'}
            case $spec in *:*) ;; *) die "$f:$lineno: no ':' before the command" ;; esac
            want "${spec%%:*}"
            [ $? = 2 ] && die "$f:$lineno: unknown block kind '${spec%%:*}' (slow or timing)"
            inblock=1 begin=$lineno
            : > "$tmp/old"
        else
            case $line in
                '<!-- BEGIN taotsim'*) die "$f:$lineno: BEGIN inside the block begun at line $begin" ;;
                '<!-- END -->') ;;
                *) printf '%s\n' "$line" >> "$tmp/old"; continue ;;
            esac
            inblock=0
            if want "${spec%%:*}"; then
                run_block "$spec" "$f:$begin" > "$tmp/block"
            else
                cp "$tmp/old" "$tmp/block"
            fi
            if ! cmp -s "$tmp/old" "$tmp/block"; then
                changed=1
                if [ "$check" = 1 ]; then
                    echo "STALE: $f:$begin: the block 'taotsim$spec' differs from what the build prints:"
                    diff -u "$tmp/old" "$tmp/block" | sed '1,2d'
                fi
            fi
            cat "$tmp/block" >> "$tmp/new"
            printf '%s\n' "$line" >> "$tmp/new"
        fi
    done < "$f"
    [ "$inblock" = 0 ] || die "$f:$begin: the block has no '<!-- END -->'"
    [ "$changed" = 1 ] || continue
    if [ "$check" = 1 ]; then
        stale=1
    else
        { cp "$tmp/new" "$f.docs-tmp" && mv "$f.docs-tmp" "$f"; } || die "$f: could not write"
        echo "docs.sh: rewrote $f"
    fi
done
[ "$stale" = 0 ] || { echo "docs.sh: stale blocks above; run scripts/docs.sh to rewrite them"; exit 1; }
exit 0
