#!/usr/bin/env bash
# The README's quick start on a machine without CUDA, from a fresh clone.
# Hides the CUDA toolkit in a mount namespace (an empty directory bound over
# every toolkit directory, an empty non-executable file over every nvcc left on
# PATH, CUDA's directories taken off PATH), proves that nvcc cannot be found,
# then clones the current checkout and runs the README's two commands exactly
# as it writes them, with the default -Dcuda=auto: scripts/table1.sh, then
# scripts/test.sh (the full test suite). Checks that meson found no CUDA and
# built the stub, and that this configuration also compiles with
# -Dwerror=true (CI's setting). Needs root (unshare -m, mount --bind).
# Usage: tests/quickstart_nocuda.sh CLONE_DIR   (CLONE_DIR must not exist; it is
# kept, so that its build/meson-logs can be read afterwards)
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
clone=${1:?usage: tests/quickstart_nocuda.sh CLONE_DIR}

if [ -z "${TSIM_IN_NOCUDA_NS:-}" ]; then
    [ "$(id -u)" = 0 ] || { echo "quickstart_nocuda.sh: needs root (unshare -m)" >&2; exit 2; }
    [ ! -e "$clone" ] || { echo "quickstart_nocuda.sh: $clone already exists" >&2; exit 2; }
    # private propagation: the bind mounts stay inside the namespace
    exec env TSIM_IN_NOCUDA_NS=1 unshare -m --propagation private "$0" "$@"
fi

pass=0
fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
finish() {
    echo "script: $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
    exit
}

# ---- Hide CUDA.
empty=$(mktemp -d)
trap 'rmdir "$empty" 2>/dev/null; rm -f "$empty.file"' EXIT
: >"$empty.file"
chmod 644 "$empty.file"
for d in /usr/local/cuda /usr/local/cuda-* /opt/cuda /opt/nvidia/cuda /usr/lib/cuda; do
    [ -d "$d" ] || continue
    mount --bind "$empty" "$(realpath "$d")" || bad "cannot hide $d"
done
# Every executable nvcc on PATH ("command -v" also reports non-executable files).
nvcc_on_path() {
    local d
    local IFS=:
    for d in $PATH; do [ -f "$d/nvcc" ] && [ -x "$d/nvcc" ] && echo "$d/nvcc"; done
}
# nvcc elsewhere on PATH (a wrapper in /usr/local/bin, Debian's nvidia-cuda-toolkit)
while read -r nvcc; do
    [ -n "$nvcc" ] && { mount --bind "$empty.file" "$(realpath "$nvcc")" || bad "cannot hide $nvcc"; }
done < <(nvcc_on_path)
strip_cuda() { printf '%s' "$1" | tr ':' '\n' | grep -vi cuda | paste -sd:; }
PATH=$(strip_cuda "$PATH")
export PATH
for v in LIBRARY_PATH LD_LIBRARY_PATH; do
    if [ -n "${!v:-}" ]; then export "$v=$(strip_cuda "${!v}")"; fi
done
unset CUDA_HOME CUDA_PATH CUDA_ROOT CUDACXX
hash -r

if [ -n "$(nvcc_on_path)" ] || nvcc --version >/dev/null 2>&1; then
    bad "nvcc is still found: $(nvcc_on_path)"
    finish
fi
if [ -e /usr/local/cuda/bin/nvcc ]; then
    bad "/usr/local/cuda/bin/nvcc still exists"
    finish
fi
ok "no nvcc on PATH nor in /usr/local/cuda (PATH=$PATH)"

# ---- A fresh clone of this checkout (its committed state, as a user gets it).
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
    echo "note: the checkout has uncommitted changes; the clone tests HEAD only" >&2
fi
if ! git clone -q "$repo" "$clone"; then
    bad "git clone $repo $clone"
    finish
fi
cd "$clone" || finish
ok "fresh clone of $(git rev-parse --short HEAD)"

# ---- The README's quick start, exactly as written.
# shellcheck disable=SC2016
readme_cmds=$(sed -n '/^## Quick start/,/^## /p' README.md | sed -n '/^```sh$/,/^```$/p' | grep '^scripts/' | sed 's/ *#.*//')
if [ "$readme_cmds" != "$(printf 'scripts/table1.sh\nscripts/test.sh')" ]; then
    bad "the README's quick start is no longer 'scripts/table1.sh' then 'scripts/test.sh': update this check ($readme_cmds)"
fi
if scripts/table1.sh >table1.out 2>table1.err && grep -q '^|' table1.out; then
    ok "scripts/table1.sh (a table of $(grep -c '^|' table1.out) lines)"
else
    bad "scripts/table1.sh: $(tail -5 table1.err)"
fi
if grep -q "Compiler for language cuda for the host machine not found" build/meson-logs/meson-log.txt; then
    ok "meson setup found no CUDA compiler"
else
    bad "meson's log does not say that no CUDA compiler was found: $(grep -i cuda build/meson-logs/meson-log.txt | head -3)"
fi
if grep -q '^#define TSIM_HAVE_CUDA 0' build/tsim_config.h; then
    ok "built without CUDA (TSIM_HAVE_CUDA 0, the stub)"
else
    bad "build/tsim_config.h: $(grep TSIM_HAVE_CUDA build/tsim_config.h)"
fi
if scripts/test.sh >test.out 2>&1 && grep -q '"name": "test_core"' build/meson-logs/testlog.json; then
    ok "scripts/test.sh: $(grep -E '^Ok:|^Skipped:' test.out | tr -s ' \n' ' ')"
else
    bad "scripts/test.sh failed:"
    grep -E 'FAIL|TIMEOUT|ERROR' test.out | head -20
    tail -20 test.out
fi
# The quick start treats warnings as warnings; CI treats them as errors, so
# the same CUDA-less configuration also compiles with -Dwerror=true (the
# library and the binary, where the CPU stub lives; CI's other builds compile
# the test programs with warnings as errors).
if meson setup build-werror -Dwerror=true -Dtests=disabled >werror.out 2>&1 && ninja -C build-werror >>werror.out 2>&1; then
    ok "the same build with -Dwerror=true"
else
    bad "-Dwerror=true without CUDA:"
    grep -E 'error|warning' werror.out | head -20
fi
finish
