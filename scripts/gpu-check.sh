#!/usr/bin/env bash
# One prepared check for a machine with an NVIDIA GPU (written for an H200,
# sm_90), about 10 minutes in all:
#   1. build with CUDA, warnings as errors (build dir $BUILD, default build-gpu);
#   2. the GPU parity suite (tests/test_gpu_parity.c: 10,000 random records and
#      every bundled trace, CPU against GPU, bit for bit);
#   3. `taotsim replay --taot-device gpu` against the CPU on every bundled
#      trace, comparing the dumped plans byte for byte (the CLI path, one record
#      per launch);
#   4. the GPU benchmark (tsim_taot_gpu_bench: CPU reference, one-record
#      latency, per-record time in launches of 48), through the test suite.
# Logs and results go to $OUT (default ./gpu-out). Exit status 0 when every
# step passed, 1 otherwise; the summary is the last lines of $OUT/gpu-check.log.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-./gpu-out}
BUILD=${BUILD:-build-gpu}
ARCH=${GPU_ARCH:-9.0}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
exec > >(tee "$OUT/gpu-check.log") 2>&1

failed=()
step() { echo; echo "=== $* ($(date +%T))"; }

step "machine"
nvidia-smi || echo "nvidia-smi: not available"
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
nvcc --version | tail -2
nproc

step "1. build ($BUILD, -Dcuda=enabled -Dgpu_arch=$ARCH -Dwerror=true)"
if [ ! -f "$BUILD/build.ninja" ]; then
    timeout 120 meson setup "$BUILD" -Dcuda=enabled -Dgpu_arch="$ARCH" -Dwerror=true -Dtests=enabled \
        > "$OUT/meson-setup.log" 2>&1 || { cat "$OUT/meson-setup.log"; failed+=("meson setup"); }
fi
if timeout 300 ninja -C "$BUILD" > "$OUT/build.log" 2>&1; then
    echo "build: ok"
else
    tail -50 "$OUT/build.log"
    failed+=("build")
fi

if [ -x "$BUILD/taotsim" ] && [ -x "$BUILD/tests/test_gpu_parity" ]; then
    step "2. parity tests"
    # Run by meson so that the suite gets its environment (TAOTSIM, TSIM_SOURCE_ROOT).
    if timeout 420 meson test -C "$BUILD" test_gpu_parity --print-errorlogs --timeout-multiplier 1 \
        > "$OUT/parity.log" 2>&1; then
        echo "parity: ok"
    else
        tail -60 "$OUT/parity.log"
        failed+=("parity tests")
    fi
    cp "$BUILD/meson-logs/testlog.txt" "$OUT/parity-testlog.txt" 2>/dev/null || true
    grep -E "SKIP|PASS|FAIL|ERR|differ|compared" "$OUT/parity-testlog.txt" 2>/dev/null | head -60
    # On this machine a skip means the GPU did not answer: that is a failure here.
    if grep -q "skipped: no GPU" "$OUT/parity-testlog.txt" 2>/dev/null; then
        grep -m1 "skipped: no GPU" "$OUT/parity-testlog.txt"
        failed+=("no usable GPU (parity tests skipped)")
    fi

    step "3. replay --taot-device gpu against the CPU, every bundled trace"
    mkdir -p "$OUT/replay"
    for t in traces/*.jsonl.gz traces/*.json; do
        [ -f "$t" ] || continue
        name=$(basename "$t")
        for variant in auction split; do
            base="$OUT/replay/$name.$variant"
            timeout 60 "$BUILD/taotsim" replay "$t" --planners taot --taot-phase3 "$variant" \
                --dump-plans "$base.cpu.jsonl" > "$base.cpu.md" 2> "$base.cpu.err"
            timeout 60 "$BUILD/taotsim" replay "$t" --planners taot --taot-phase3 "$variant" --taot-device gpu \
                --dump-plans "$base.gpu.jsonl" > "$base.gpu.md" 2> "$base.gpu.err"
            if cmp -s "$base.cpu.jsonl" "$base.gpu.jsonl" && ! grep -q gpu_fallback "$base.gpu.md"; then
                echo "$name $variant: same plans"
            else
                echo "$name $variant: DIFFERENT plans or a GPU fallback (see $base.*)"
                failed+=("replay $name $variant")
            fi
        done
    done

    step "4. benchmark (tsim_taot_gpu_bench, 960 records per shape)"
    # Called through the test suite, which needs no CLI wiring; `taotsim bench
    # --taot-device gpu` calls the same function once the CLI has it.
    TSIM_GPU_BENCH_RECORDS=960 TSIM_GPU_BENCH_OUT="$OUT/bench.md" TSIM_SOURCE_ROOT="$PWD" \
        TAOTSIM="$PWD/$BUILD/taotsim" timeout 240 "$BUILD/tests/test_gpu_parity" \
        --filter 'gpu_fallback/bench_entry' --verbose > "$OUT/bench.err" 2>&1 || failed+=("benchmark")
    cat "$OUT/bench.md" 2>/dev/null || tail -20 "$OUT/bench.err"
fi

step "summary"
if [ ${#failed[@]} -eq 0 ]; then
    echo "gpu-check: all steps passed"
    exit 0
fi
printf 'gpu-check: FAILED: %s\n' "${failed[@]}"
exit 1
