#!/bin/bash
# Builds the libFuzzer targets of tests/fuzz with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer, compiling the core library sources directly (no
# meson: the list is every src/<layer>/*.c except the CLI layer, every
# baselines/**/*.c and the CPU stub of the GPU planner). Usage: tests/fuzz/build.sh [OUTDIR]
# (default build-fuzz in the source root). Needs clang and libclang-rt
# (apt-get install -y clang libclang-rt-14-dev).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/build-fuzz}
cc=${CC_FUZZ:-clang}
mkdir -p "$out/obj"

if ! command -v "$cc" >/dev/null 2>&1; then
    echo "build.sh: $cc not found (apt-get install -y clang libclang-rt-14-dev)" >&2
    exit 2
fi

# The configuration header meson would generate.
cat >"$out/tsim_config.h.new" <<CONF
#define TSIM_VERSION "0.1.0+fuzz"
#define TSIM_SOURCE_ROOT "$root"
#define TSIM_HAVE_CUDA 0
CONF
if ! cmp -s "$out/tsim_config.h.new" "$out/tsim_config.h" 2>/dev/null; then
    mv "$out/tsim_config.h.new" "$out/tsim_config.h"
else
    rm -f "$out/tsim_config.h.new"
fi

# Every library layer's folder is an include directory, as in meson.
layer_dirs="$root/src/util $root/src/model $root/src/trace $root/src/planner $root/src/bound $(find "$root/baselines" -type d) $root/gpu $root/src/registry $root/src/study $root/src/render"
layer_includes=""
for d in $layer_dirs; do layer_includes="$layer_includes -I$d"; done
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# -DTSIM_FUZZING: nothing in the library depends on it; handy for local guards.
cflags="-std=c11 -g -O1 -D_POSIX_C_SOURCE=200809L -ffp-contract=off -DTSIM_FUZZING $san
        -I$out $layer_includes $(pkg-config --cflags libcjson gsl zlib libzip cbc)"
# CBC's libraries before CLP's, as src/bound/meson.build explains.
libs="$(pkg-config --libs libcjson gsl zlib libzip cbc) -lClp -lCoinUtils -lglpk -lm -lpthread"

# Library objects, rebuilt when the source or any header is newer.
newest_header=$(find $layer_dirs -maxdepth 1 -name '*.h' -printf '%T@ %p\n' | sort -n | tail -1 | cut -d' ' -f2-)
objs=""
lib_sources=$(for d in $layer_dirs; do [ "$d" = "$root/gpu" ] || find "$d" -maxdepth 1 -name '*.c'; done | sort)
for src in $lib_sources "$root"/gpu/taot_gpu_stub.c; do
    base=$(basename "$src" .c)
    case "$base" in main | cmd_*) continue ;; esac
    obj="$out/obj/$(basename "$(dirname "$src")")_$base.o"
    if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ "$newest_header" -nt "$obj" ]; then
        # shellcheck disable=SC2086
        $cc $cflags -fsanitize=fuzzer-no-link -c "$src" -o "$obj"
    fi
    objs="$objs $obj"
done
rm -f "$out/libtsim_fuzz.a"
# shellcheck disable=SC2086
ar rcs "$out/libtsim_fuzz.a" $objs

for t in fuzz_trace_json fuzz_trace_jsonl fuzz_trace_csv fuzz_trace_npy fuzz_trace_safetensors fuzz_trace_megatron \
    fuzz_planners fuzz_failif fuzz_zip fuzz_pickle fuzz_layout; do
    # shellcheck disable=SC2086
    $cc $cflags -fsanitize=fuzzer "$root/tests/fuzz/$t.c" "$root/tests/fuzz/fuzz_common.c" \
        "$out/libtsim_fuzz.a" $libs -o "$out/$t"
done
echo "fuzz targets in $out"
