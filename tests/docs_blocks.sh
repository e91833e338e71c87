#!/bin/sh
# The numbers in the documentation are what the current build prints: every
# marked block of README.md and docs/*.md matches its command's output
# (scripts/docs.sh --check --fast; slow and timing blocks are left out), no
# test count is typed anywhere, and the check itself catches a stale block.
# Usage: docs_blocks.sh SOURCE_ROOT TAOTSIM
set -u
root=${1:?usage: docs_blocks.sh SOURCE_ROOT TAOTSIM}
bin=${2:?usage: docs_blocks.sh SOURCE_ROOT TAOTSIM}
cd "$root" || exit 2
fail=0

TAOTSIM=$bin scripts/docs.sh --check --fast || fail=1

# Test counts go stale with every new test: meson prints them.
if grep -niE '[0-9][0-9,]* (unit |golden |cli |criterion )?(tests|test cases|golden cases)( pass| passed| ran|\b)' \
    README.md docs/*.md; then
    echo "FAIL: the lines above type a test count; let meson print it"
    fail=1
fi

# The check can fail: a block holding the wrong text is reported stale (exit
# 1), rewriting fixes it, and a block without its END is an error (exit 2).
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/scripts" && cp scripts/docs.sh "$tmp/scripts/" || exit 2
printf 'x\n<!-- BEGIN taotsim: --version -->\n\nstale 0.0\n\n<!-- END -->\ny\n' > "$tmp/README.md"
TAOTSIM=$bin "$tmp/scripts/docs.sh" --check README.md > "$tmp/out" 2>&1
st=$?
if [ "$st" != 1 ] || ! grep -q '^STALE: README.md:2:' "$tmp/out" || ! grep -q '^-stale 0.0' "$tmp/out"; then
    echo "FAIL: a stale block was not reported (exit $st):"; cat "$tmp/out"; fail=1
fi
TAOTSIM=$bin "$tmp/scripts/docs.sh" README.md > /dev/null || { echo "FAIL: rewriting the block failed"; fail=1; }
want=$(printf 'x\n<!-- BEGIN taotsim: --version -->\n\n%s\n\n<!-- END -->\ny' "$("$bin" --version)")
[ "$(cat "$tmp/README.md")" = "$want" ] || { echo "FAIL: the rewritten block is:"; cat "$tmp/README.md"; fail=1; }
TAOTSIM=$bin "$tmp/scripts/docs.sh" --check README.md > /dev/null || { echo "FAIL: the rewritten block is still stale"; fail=1; }
printf '<!-- BEGIN taotsim: --version -->\nno end\n' > "$tmp/README.md"
TAOTSIM=$bin "$tmp/scripts/docs.sh" --check README.md > "$tmp/out" 2>&1
st=$?
if [ "$st" != 2 ] || ! grep -q "README.md:1: the block has no '<!-- END -->'" "$tmp/out"; then
    echo "FAIL: a block without END was not an error (exit $st):"; cat "$tmp/out"; fail=1
fi

[ "$fail" = 0 ] && echo "docs: every marked block is what the build prints"
exit "$fail"
