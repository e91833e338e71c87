#!/bin/sh
# taotsim(1): the build made it with help2man, groff and man render it
# without a warning, it holds every command's --help and meson installs it.
# Exits 77 (skipped) where help2man is not installed (the build then makes no
# page). Usage: tests/render/man.sh BUILDDIR   ($TAOTSIM: the binary)
set -u
build=${1:?usage: tests/render/man.sh BUILDDIR}
bin=${TAOTSIM:-$build/taotsim}
page=$build/man/taotsim.1
if ! command -v help2man >/dev/null 2>&1; then
    echo "skipped: help2man is not installed (Debian: help2man), so the build makes no man page"
    exit 77
fi
if ! command -v groff >/dev/null 2>&1; then
    echo "skipped: groff is not installed, so the man page cannot be rendered here"
    exit 77
fi
fail=0
pass=0
check() { # check DESCRIPTION COMMAND...: one assertion
    what=$1
    shift
    if "$@"; then pass=$((pass + 1)); else echo "FAIL: $what"; fail=$((fail + 1)); fi
}
if [ ! -s "$page" ]; then
    echo "FAIL: help2man is installed but $page was not built (reconfigure: meson setup --reconfigure $build)"
    echo "script: 0 passed, 1 failed"
    exit 1
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# groff at every warning level: nothing on stderr
LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z "$page" 2>"$scratch/groff.err"
check "groff -ww warns: $(head -3 "$scratch/groff.err")" test ! -s "$scratch/groff.err"
LC_ALL=C.UTF-8 MANWIDTH=80 groff -man -Tutf8 -ww -P-c "$page" >"$scratch/page.txt" 2>/dev/null
if command -v man >/dev/null 2>&1; then
    LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings=all -l "$page" >"$scratch/man.txt" 2>"$scratch/man.err"
    check "man -l fails or warns: $(head -3 "$scratch/man.err")" test ! -s "$scratch/man.err"
    check "man -l prints nothing" test -s "$scratch/man.txt"
fi
check "the page has no NAME line for taotsim" grep -q '^ *taotsim - replay MoE routing traces' "$scratch/page.txt"
# Every command that `taotsim --help` lists has its subsection, holding every
# line of its --help as the binary prints it today.
commands=$("$bin" --help | sed -n '/^Commands:/,/^$/p' | sed -n 's/^  \([a-z0-9]*\) .*/\1/p')
check "no commands in 'taotsim --help'" test -n "$commands"
sed 's/^ *//' "$scratch/page.txt" >"$scratch/page.lines"
for c in $commands; do
    check "no subsection for taotsim $c" grep -q "^\.SS taotsim $c\$" "$page"
    "$bin" "$c" --help | sed 's/^ *//; /^$/d' >"$scratch/help.lines"
    missing=$(grep -vxF -f "$scratch/page.lines" "$scratch/help.lines" | head -1)
    check "taotsim $c --help: '$missing' is not a line of the rendered page" test -z "$missing"
done
# No character the page cannot show: λ and ± come out as themselves.
check "λ does not render" grep -q 'λ' "$scratch/page.txt"
# meson install puts it in man1.
if command -v meson >/dev/null 2>&1; then
    meson introspect --installed "$build" >"$scratch/installed.json" 2>/dev/null
    check "meson does not install taotsim.1 into man1" grep -q 'man1/taotsim\.1' "$scratch/installed.json"
fi
echo "script: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
