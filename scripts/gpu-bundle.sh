#!/usr/bin/env bash
# Makes the GPU check bundle HERE, for a GPU machine that has CUDA's driver but
# none of this project's libraries, no compiler and no network:
#   1. a release CUDA build for sm_90, warnings as errors, in $BUILD
#      (default build-gpubundle; nvcc from PATH or /usr/local/cuda/bin);
#   2. the folder $BUNDLE (default .gpu-bundle, git-ignored):
#        gpu-check.sh             the check to run there (scripts/gpu-check.sh)
#        taotsim                  wrapper: bin/taotsim with lib/ first on the library path
#        bin/                     taotsim, test_gpu_parity, test_gpu_fallback
#        lib/                     every shared library they load except glibc and the
#                                 CUDA driver (found with ldd; the CUDA runtime is static),
#                                 and CBC and CLP, which taotsim opens with dlopen
#        traces/ plots/ tests/spec/vectors/taot/
#        MANIFEST                 version, build, glibc needed, files
#   3. checks: every library resolves inside the bundle, sm_90 code is in,
#      the size stays under 64 MiB (what may travel to the GPU machine).
# Usage: scripts/gpu-bundle.sh   (then: .gpu-bundle/gpu-check.sh --dry-run)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build-gpubundle}
BUNDLE=${BUNDLE:-.gpu-bundle}
ARCH=${GPU_ARCH:-9.0}
LIMIT_MIB=64

die() { echo "gpu-bundle: $*" >&2; exit 1; }

command -v nvcc >/dev/null 2>&1 || export PATH="$PATH:/usr/local/cuda/bin"
command -v nvcc >/dev/null 2>&1 || die "nvcc not found (PATH or /usr/local/cuda/bin): the bundle needs a CUDA build"
echo "== nvcc: $(nvcc --version | tail -1)"

# --- 1. build ---------------------------------------------------------------
opts=(-Dbuildtype=release -Db_ndebug=if-release -Dcuda=enabled -Dgpu_arch="$ARCH" -Dwerror=true -Dtests=enabled)
if [ -f "$BUILD/build.ninja" ]; then
    meson configure "$BUILD" "${opts[@]}" >/dev/null
else
    meson setup "$BUILD" "${opts[@]}" >/dev/null
fi
echo "== build: $BUILD (release, sm_${ARCH/./}, -Dwerror=true)"
ninja -C "$BUILD" taotsim tests/test_gpu_parity tests/test_gpu_fallback >/dev/null ||
    { ninja -C "$BUILD" taotsim tests/test_gpu_parity tests/test_gpu_fallback; die "build failed"; }

programs=("$BUILD/taotsim" "$BUILD/tests/test_gpu_parity" "$BUILD/tests/test_gpu_fallback")
for p in "${programs[@]}"; do
    [ -x "$p" ] || die "$p was not built"
    # ptxas leaves its command line in the cubin: the kernels were built for this arch.
    grep -aq -- "-arch sm_${ARCH/./} " "$p" || die "$p holds no sm_${ARCH/./} code"
done

# --- 2. the folder ----------------------------------------------------------
rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/bin" "$BUNDLE/lib" "$BUNDLE/tests/spec/vectors"
cp "${programs[@]}" "$BUNDLE/bin/"
cp scripts/gpu-check.sh "$BUNDLE/gpu-check.sh"
cp -r traces plots "$BUNDLE/"
cp -r tests/spec/vectors/taot "$BUNDLE/tests/spec/vectors/"
cat > "$BUNDLE/taotsim" <<'EOF'
#!/bin/sh
# bin/taotsim with the bundle's libraries first on the search path (the
# machine's own path after them: the CUDA driver's libcuda may be found there).
# gpu-check.sh may name another library folder in TSIM_BUNDLE_LIB.
here=$(cd "$(dirname "$0")" && pwd)
LD_LIBRARY_PATH="${TSIM_BUNDLE_LIB:-$here/lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
TAOTSIM_PLOTS_DIR=${TAOTSIM_PLOTS_DIR:-$here/plots}
export LD_LIBRARY_PATH TAOTSIM_PLOTS_DIR
exec "$here/bin/taotsim" "$@"
EOF
chmod +x "$BUNDLE/taotsim" "$BUNDLE/gpu-check.sh"

# glibc and the CUDA driver come from the machine; everything else travels.
system_lib() {
    case "$1" in
    linux-vdso.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libmvec.so.* | libpthread.so.* | libdl.so.* | \
        librt.so.* | libresolv.so.* | libutil.so.* | libanl.so.* | libnss_*.so.* | libBrokenLocale.so.* | \
        libc_malloc_debug.so.* | libthread_db.so.* | libcuda.so.* | libnvidia-*.so.*) return 0 ;;
    esac
    return 1
}
# CBC and CLP are opened with dlopen when a solve needs them
# (src/bound/coin.c), so ldd does not list them: the sonames taotsim tries
# are read from the binary, found with ldconfig, and travel with their own
# closures.
dlopened=()
for name in $(strings "$BUNDLE/bin/taotsim" | grep -E '^lib(CbcSolver|Clp)\.so\.[0-9]+$' | sort -u); do
    path=$(ldconfig -p | awk -v n="$name" '$1 == n && /x86-64/ { print $NF; exit }')
    [ -n "$path" ] || die "$name (which taotsim opens with dlopen) is not known to ldconfig"
    cp -L "$path" "$BUNDLE/lib/$name"
    dlopened+=("$path")
done
[ "${#dlopened[@]}" -ge 2 ] || die "taotsim names no CBC and CLP sonames to bundle"
# ldd lists the whole closure (libraries of libraries too).
for p in "$BUNDLE"/bin/* "${dlopened[@]}"; do
    ldd "$p" | while read -r name arrow path _; do
        [ "$arrow" = "=>" ] || continue
        system_lib "$name" && continue
        [ -f "$path" ] || die "$p: $name not found here (ldd: $arrow $path)"
        [ -f "$BUNDLE/lib/$name" ] || cp -L "$path" "$BUNDLE/lib/$name"
    done
done

# --- 3. checks and the manifest ---------------------------------------------
# Every library must now resolve inside the bundle (or be glibc / the driver).
bad=0
for f in "$BUNDLE"/bin/* "$BUNDLE"/lib/*; do
    while read -r name arrow path _; do
        [ "$arrow" = "=>" ] || continue
        system_lib "$name" && continue
        case "$path" in
        "$PWD/$BUNDLE"/lib/*) ;;
        *) echo "gpu-bundle: $f: $name resolves to $path, outside the bundle" >&2; bad=1 ;;
        esac
    done < <(env -i LD_LIBRARY_PATH="$PWD/$BUNDLE/lib" ldd "$f")
done
[ "$bad" -eq 0 ] || die "libraries resolve outside the bundle"

# The newest glibc symbol version any file needs: the GPU machine's glibc must
# be at least that (gpu-check.sh checks).
glibc_of() { # files...
    for f in "$@"; do objdump -T "$f"; done 2>/dev/null | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' |
        sort -uV | tail -1
}
glibc_needed=$(glibc_of "$BUNDLE"/bin/* "$BUNDLE"/lib/*)
# Without the C++ runtime, which gpu-check.sh may take from the machine when
# its glibc is older than the bundled libstdc++ needs.
own_cxx=()
for f in "$BUNDLE"/bin/* "$BUNDLE"/lib/*; do
    case "$f" in */libstdc++.so.* | */libgcc_s.so.*) ;; *) own_cxx+=("$f") ;; esac
done
glibc_needed_own_cxx=$(glibc_of "${own_cxx[@]}")
{
    echo "taotsim GPU check bundle (scripts/gpu-bundle.sh)"
    echo "version: $("$BUNDLE/taotsim" --version)"
    echo "source: $ROOT at $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(
        [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && echo ' (uncommitted changes)')"
    echo "built: $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -m), $(getconf GNU_LIBC_VERSION), $(nvcc --version | tail -1)"
    echo "cuda arch: sm_${ARCH/./}"
    echo "glibc needed: $glibc_needed"
    echo "glibc needed with the machine's libstdc++: $glibc_needed_own_cxx"
    echo "source root: $ROOT"
    echo "files:"
    (cd "$BUNDLE" && find . -type f ! -name MANIFEST | sort | while read -r f; do
        printf '  %s %s\n' "$(sha256sum "$f" | cut -c1-16)" "${f#./}"
    done)
} > "$BUNDLE/MANIFEST"

bytes=$(du -sb "$BUNDLE" | cut -f1)
mib=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
echo "== bundle: $BUNDLE: $(find "$BUNDLE" -type f | wc -l) files, $(ls "$BUNDLE/lib" | wc -l) libraries, $mib MiB" \
    "(limit $LIMIT_MIB MiB); glibc needed >= $glibc_needed"
[ "$bytes" -lt $((LIMIT_MIB * 1048576)) ] || die "$BUNDLE is $mib MiB, over the $LIMIT_MIB MiB that may travel"
if git rev-parse --git-dir >/dev/null 2>&1; then
    # What travels with it: the tracked and untracked-not-ignored files.
    tree=$(git ls-files -z -co --exclude-standard | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
    echo "   with the working tree that travels beside it: $(awk -v b="$((bytes + tree))" \
        'BEGIN { printf "%.1f", b / 1048576 }') MiB"
fi
echo "next: $BUNDLE/gpu-check.sh --dry-run (here), $BUNDLE/gpu-check.sh (on the GPU machine)"
