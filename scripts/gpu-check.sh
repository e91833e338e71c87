#!/usr/bin/env bash
# The GPU check: one command on a machine with an NVIDIA GPU (written for an
# H200, sm_90), run from the bundle that scripts/gpu-bundle.sh makes; it needs
# no compiler, meson or network there, only bash, coreutils and the driver.
#   .gpu-bundle/gpu-check.sh            the check (a few minutes, at most 8)
#   .gpu-bundle/gpu-check.sh --dry-run  the bundle alone, on any machine
# Steps of the check:
#   0. the bundle: programs start, libraries resolve inside it, glibc is new enough;
#   1. nvidia-smi;
#   2. parity: bin/test_gpu_parity (10,000 random records and every bundled
#      trace under 8 option sets, the TAOT spec vectors; CPU against GPU bit for
#      bit) and bin/test_gpu_fallback (--taot-device gpu must not fall back);
#   3. replay: every bundled trace, --taot-phase3 auction and split, CPU and
#      --taot-device gpu, --dump-plans compared byte for byte;
#   4. benchmark: `taotsim bench` (one record per call, CPU and GPU, and the
#      GPU in launches of 48 beside the CPU reference), the parity suite's bench
#      at 960 records per shape, and replay --timing (the planner interface).
# The dry run does step 0 and runs the GPU-free suite (test_gpu_fallback); the
# parity suite must report "skipped: no GPU" (exit 77) where there is no GPU.
# Without a GPU the check itself fails: every GPU step fails.
# Logs go to $OUT (default ./gpu-out), at most 8 files: gpu-check.log (this
# output; its last lines are the summary), machine.txt, parity.log,
# replay.log, bench.md, bench.log. Exit status 0 only when every step passed.
set -uo pipefail

B=$(cd "$(dirname "$0")" && pwd)
if [ ! -x "$B/bin/taotsim" ]; then
    # Called as scripts/gpu-check.sh in the source tree: the bundle is beside it.
    [ -x "$B/../.gpu-bundle/gpu-check.sh" ] && exec "$B/../.gpu-bundle/gpu-check.sh" "$@"
    echo "gpu-check: no bundle at $B (bin/taotsim missing): run scripts/gpu-bundle.sh, then .gpu-bundle/gpu-check.sh" >&2
    exit 2
fi

DRY=0
case "${1:-}" in
"") ;;
--dry-run) DRY=1 ;;
-h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
*) echo "usage: $0 [--dry-run]" >&2; exit 2 ;;
esac
[ $# -le 1 ] || { echo "usage: $0 [--dry-run]" >&2; exit 2; }

OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
LOGS=(gpu-check.log machine.txt parity.log replay.log bench.md bench.log)
for f in "${LOGS[@]}"; do rm -f "$OUT/$f"; done

# Wherever the driver put nvidia-smi; ldconfig.
PATH="$PATH:/usr/local/nvidia/bin:/usr/bin:/bin:/usr/sbin:/sbin"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX") || exit 2
trap 'rm -rf "$WORK"' EXIT

# glibc is the machine's: it must be at least what the bundle was built
# against. When only the bundled libstdc++ needs a newer one, the machine's
# C++ runtime is taken instead (a folder of links to lib/ without it).
version_ge() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -1)" = "$2" ]; }
GLIBC_HAVE=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
GLIBC_NEED=$(sed -n 's/^glibc needed: //p' "$B/MANIFEST" 2>/dev/null)
GLIBC_NEED_OWN_CXX=$(sed -n "s/^glibc needed with the machine's libstdc++: //p" "$B/MANIFEST" 2>/dev/null)
LIBDIR=$B/lib
MACHINE_CXX=0
if [ -n "$GLIBC_HAVE" ] && [ -n "$GLIBC_NEED" ] && ! version_ge "$GLIBC_HAVE" "$GLIBC_NEED" &&
    [ -n "$GLIBC_NEED_OWN_CXX" ] && version_ge "$GLIBC_HAVE" "$GLIBC_NEED_OWN_CXX" &&
    ldconfig -p 2>/dev/null | grep -q 'libstdc++\.so\.6 ' && ldconfig -p 2>/dev/null | grep -q 'libgcc_s\.so\.1 '; then
    LIBDIR=$WORK/lib
    mkdir -p "$LIBDIR"
    for f in "$B"/lib/*; do
        case "$f" in */libstdc++.so.* | */libgcc_s.so.*) ;; *) ln -s "$f" "$LIBDIR/" ;; esac
    done
    MACHINE_CXX=1
fi
# The bundle's libraries first, then the machine's path (where the driver's
# libcuda may be); the tests find the traces, vectors and taotsim through these.
export TSIM_BUNDLE_LIB=$LIBDIR
export LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TSIM_SOURCE_ROOT="$B" TSIM_SPEC_DIR="$B/tests/spec" TAOTSIM="$B/taotsim" TAOTSIM_PLOTS_DIR="$B/plots"
export CRITERION_NO_EARLY_EXIT=1

START=$SECONDS
BUDGET=${GPU_CHECK_SECONDS:-450} # the whole run; each step gets at most what is left
failed=()

say() { printf '%s\n' "$*"; }
step() { say; say "=== $* (at $((SECONDS - START)) s)"; }
fail() { say "FAILED: $*"; failed+=("$*"); }
# Seconds for the next command: its cap, or what is left of the budget.
allow() {
    local left=$((BUDGET - (SECONDS - START)))
    [ "$left" -gt "$1" ] && left=$1
    echo "$left"
}
# Runs a command under timeout; 124 or 137 when it ran out of time.
limited() { # seconds, command...
    local t=$1; shift
    if [ "$t" -lt 5 ]; then say "(no time left for: $*)"; return 124; fi
    timeout -k 5 "$t" "$@"
}

# glibc and the CUDA driver are the machine's; the rest must be in lib/.
system_lib() {
    case "$1" in
    linux-vdso.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libmvec.so.* | libpthread.so.* | libdl.so.* | \
        librt.so.* | libresolv.so.* | libutil.so.* | libanl.so.* | libnss_*.so.* | libBrokenLocale.so.* | \
        libc_malloc_debug.so.* | libthread_db.so.* | libcuda.so.* | libnvidia-*.so.*) return 0 ;;
    libstdc++.so.* | libgcc_s.so.*) [ "$MACHINE_CXX" -eq 1 ] && return 0 ;;
    esac
    return 1
}

check_bundle() {
    step "0. the bundle ($B)"
    local ok=1 f
    for f in bin/taotsim bin/test_gpu_parity bin/test_gpu_fallback taotsim MANIFEST plots/terminal.gp; do
        [ -e "$B/$f" ] || { fail "bundle: $f is missing"; ok=0; }
    done
    [ -n "$(ls "$B"/traces/*.json* 2>/dev/null)" ] || { fail "bundle: no trace in traces/"; ok=0; }
    [ -n "$(ls "$B"/tests/spec/vectors/taot/*.json 2>/dev/null)" ] || { fail "bundle: no TAOT vector"; ok=0; }
    [ "$ok" -eq 1 ] || return
    grep -E '^(version|source|built|cuda arch|glibc needed):' "$B/MANIFEST"

    # glibc: see LIBDIR above.
    if [ "$MACHINE_CXX" -eq 1 ]; then
        say "glibc: $GLIBC_HAVE here, the bundled libstdc++ needs $GLIBC_NEED: using the machine's libstdc++" \
            "and libgcc_s (the rest needs >= $GLIBC_NEED_OWN_CXX)"
    elif [ -n "$GLIBC_HAVE" ] && [ -n "$GLIBC_NEED" ] && ! version_ge "$GLIBC_HAVE" "$GLIBC_NEED"; then
        fail "glibc $GLIBC_HAVE here, the bundle needs >= $GLIBC_NEED (build the bundle on an older system)"
    else
        say "glibc: ${GLIBC_HAVE:-unknown} here, the bundle needs >= ${GLIBC_NEED:-unknown}"
    fi

    # Every library resolves, inside the bundle unless it is glibc or the driver,
    # and nothing comes from the machine the bundle was built on.
    local src bad=0 name arrow path
    src=$(sed -n 's/^source root: //p' "$B/MANIFEST")
    for f in "$B"/bin/* "$B"/lib/*; do
        while read -r name arrow path _; do
            if [ "$arrow" = "=>" ] && [ "$path" = "not" ]; then
                say "ldd ${f#"$B"/}: $name not found"; bad=1
            elif [[ "$path" == "$B"/lib/* || "$path" == "$LIBDIR"/* ]]; then
                continue
            elif [ "$arrow" = "=>" ] && ! system_lib "$name"; then
                say "ldd ${f#"$B"/}: $name resolves to $path, outside the bundle"; bad=1
            elif [ -n "$src" ] && [[ "$path" == "$src"/* ]]; then
                say "ldd ${f#"$B"/}: $name comes from the source tree ($path)"; bad=1
            fi
        done < <(ldd "$f" 2>&1)
        # A search path baked in must stay inside the bundle ($ORIGIN-relative).
        local rp
        rp=$(readelf -d "$f" 2>/dev/null | sed -n 's/.*R\(UN\)\{0,1\}PATH.*\[\(.*\)\]/\2/p' | tr ':' '\n' |
            grep -v "^\\\$ORIGIN" || true)
        if [ -n "$rp" ]; then
            say "${f#"$B"/}: searches libraries in ${rp//$'\n'/ } (RPATH/RUNPATH outside the bundle)"; bad=1
        fi
    done
    if [ "$bad" -eq 0 ]; then
        say "libraries: $(ls "$LIBDIR" | wc -l) in ${LIBDIR#"$B"/}, every one resolves inside the bundle (glibc and the driver aside)"
    else
        fail "bundle libraries (ldd)"
    fi

    # Every program starts.
    local v
    if v=$(limited 20 "$B/taotsim" --version 2>&1) && [[ "$v" == taotsim\ * ]]; then say "taotsim --version: $v"
    else fail "taotsim --version: $v"; fi
    for f in test_gpu_parity test_gpu_fallback; do
        if v=$(limited 20 "$B/bin/$f" --version 2>&1) && [[ "$v" == *Criterion* ]]; then say "$f --version: $v"
        else fail "$f --version: $v"; fi
    done
}

machine() {
    step "1. machine"
    {
        date -u
        uname -a
        getconf GNU_LIBC_VERSION
        nproc
        say "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
        ldd "$B/bin/taotsim"
        cat "$B/MANIFEST"
    } > "$OUT/machine.txt" 2>&1
    if ! command -v nvidia-smi >/dev/null 2>&1; then
        fail "nvidia-smi: not found (no NVIDIA driver here)"
        return
    fi
    local t; t=$(allow 60)
    if limited "$t" nvidia-smi >> "$OUT/machine.txt" 2>&1; then
        limited 20 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,compute_mode \
            --format=csv 2>&1 | tee -a "$OUT/machine.txt"
    else
        tail -5 "$OUT/machine.txt"
        fail "nvidia-smi"
    fi
}

# A Criterion suite from bin/; output appended to log; returns its status.
suite() { # seconds, log, program, args...
    local t=$1 log=$2 prog=$3; shift 3
    say "--- $prog $* (at most $t s)" >> "$log"
    limited "$t" "$B/bin/$prog" "$@" >> "$log" 2>&1
}

parity() {
    step "2. parity: CPU against GPU, bit for bit"
    local log=$OUT/parity.log rc
    # All but the bench (step 4 runs it alone, at full size), 4 tests at a time.
    suite "$(allow 300)" "$log" test_gpu_parity --jobs=4 --verbose --filter '!(gpu_parity/bench)'
    rc=$?
    grep -E 'skipped: no GPU|gpu parity:|differ|R = .* runs on the CPU|Synthesis|FAIL|CRASH' "$log" | head -40
    if [ "$rc" -eq 77 ]; then fail "parity: no usable GPU ($(grep -m1 'skipped: no GPU' "$log"))"
    elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then fail "parity: out of time"
    elif [ "$rc" -ne 0 ]; then fail "parity: test_gpu_parity exit status $rc (see parity.log)"
    else say "parity: ok"; fi

    suite "$(allow 120)" "$log" test_gpu_fallback --jobs=4 --verbose
    rc=$?
    grep -E 'Synthesis|FAIL|CRASH' "$log" | tail -1
    if [ "$rc" -ne 0 ]; then fail "parity: test_gpu_fallback exit status $rc (see parity.log)"
    else say "fallback suite: ok (with a GPU: no record fell back)"; fi
}

replay() {
    step "3. replay: CPU against --taot-device gpu, every bundled trace, both phase-3 variants"
    local log=$OUT/replay.log t name variant base n=0 bad=0
    for t in "$B"/traces/*.json "$B"/traces/*.jsonl "$B"/traces/*.jsonl.gz; do
        [ -f "$t" ] || continue
        name=$(basename "$t")
        for variant in auction split; do
            base="$WORK/$name.$variant"
            n=$((n + 1))
            limited "$(allow 60)" "$B/taotsim" replay "$t" --planners taot --taot-phase3 "$variant" \
                --dump-plans "$base.cpu.jsonl" > "$base.cpu.md" 2> "$base.cpu.err"
            local rc_cpu=$?
            limited "$(allow 60)" "$B/taotsim" replay "$t" --planners taot --taot-phase3 "$variant" \
                --taot-device gpu --dump-plans "$base.gpu.jsonl" > "$base.gpu.md" 2> "$base.gpu.err"
            local rc_gpu=$?
            {
                say "--- $name --taot-phase3 $variant: exit status CPU $rc_cpu, GPU $rc_gpu"
                cat "$base.gpu.md" "$base.cpu.err" "$base.gpu.err"
            } >> "$log"
            if [ "$rc_cpu" -ne 0 ] || [ "$rc_gpu" -ne 0 ]; then
                say "$name $variant: replay failed (exit status CPU $rc_cpu, GPU $rc_gpu)"; bad=$((bad + 1))
            elif grep -qE 'gpu_fallback|fell back' "$base.gpu.md" "$base.gpu.err"; then
                say "$name $variant: the GPU run fell back to the CPU: $(grep -hE -m1 'gpu_fallback|fell back' \
                    "$base.gpu.err" "$base.gpu.md" | head -1)"; bad=$((bad + 1))
            elif [ ! -s "$base.cpu.jsonl" ]; then
                say "$name $variant: no plans dumped"; bad=$((bad + 1))
            elif ! cmp -s "$base.cpu.jsonl" "$base.gpu.jsonl"; then
                say "$name $variant: DIFFERENT plans: $(cmp "$base.cpu.jsonl" "$base.gpu.jsonl" 2>&1 | head -1)"
                {
                    say "first differing plan (line $(cmp "$base.cpu.jsonl" "$base.gpu.jsonl" | sed -n 's/.* line //p')):"
                    diff <(tr ',' '\n' < "$base.cpu.jsonl") <(tr ',' '\n' < "$base.gpu.jsonl") | head -20
                } >> "$log"
                bad=$((bad + 1))
            else
                say "$name $variant: same plans ($(wc -l < "$base.cpu.jsonl") records)"
            fi
        done
    done
    [ "$n" -gt 0 ] || fail "replay: no bundled trace"
    [ "$bad" -eq 0 ] || fail "replay: $bad of $n trace x variant runs differ or fell back (see replay.log)"
}

bench() {
    step "4. benchmark"
    local md=$OUT/bench.md log=$OUT/bench.log rc
    {
        say "# TAOT on the GPU: benchmark"
        say
        say "$(date -u +%Y-%m-%d), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null |
            head -1), $(nproc) CPUs, bundle $(sed -n 's/^version: //p' "$B/MANIFEST")"
        say
        say "## taotsim bench --planners taot --records 2000: CPU (one record per plan call)"
        say
    } > "$md"
    limited "$(allow 60)" "$B/taotsim" bench --planners taot --records 2000 >> "$md" 2>> "$log"
    rc=$?
    [ "$rc" -eq 0 ] || fail "bench: CPU reference, exit status $rc"
    {
        say
        say "## the same with --taot-device gpu: one record per plan call, then launches of 48 beside the CPU"
        say
    } >> "$md"
    limited "$(allow 120)" "$B/taotsim" bench --planners taot --records 2000 --taot-device gpu >> "$md" 2> "$WORK/bench.err"
    rc=$?
    cat "$WORK/bench.err" >> "$log"
    if [ "$rc" -ne 0 ]; then fail "bench: taotsim bench --taot-device gpu, exit status $rc (1: a GPU plan differed)"
    elif grep -qE 'ran on the CPU|no batched GPU table|fell back' "$WORK/bench.err"; then
        fail "bench: taotsim bench --taot-device gpu did not run on the GPU: $(head -1 "$WORK/bench.err")"
    fi

    {
        say
        say "## parity suite bench (tsim_taot_gpu_bench, 960 records per shape, every GPU plan checked)"
        say
    } >> "$md"
    TSIM_GPU_BENCH_RECORDS=960 TSIM_GPU_BENCH_OUT="$WORK/suite-bench.md" \
        suite "$(allow 180)" "$log" test_gpu_parity --jobs=1 --verbose --filter 'gpu_parity/bench'
    rc=$?
    cat "$WORK/suite-bench.md" >> "$md" 2>/dev/null
    if [ "$rc" -eq 77 ]; then fail "bench: no usable GPU (parity suite skipped)"
    elif [ "$rc" -ne 0 ]; then fail "bench: test_gpu_parity --filter gpu_parity/bench, exit status $rc"; fi

    # replay plans through the planner interface, as a study would; a
    # generated trace of 20 microbatches x 48 layers at EP32 (token counts
    # smaller than the bundled traces' to make it in seconds).
    local trace=$WORK/gen-ep32.jsonl.gz
    {
        say
        say "## replay --timing, CPU and --taot-device gpu (generated: EP32, 20 microbatches x 48 layers)"
        say
    } >> "$md"
    if limited "$(allow 60)" "$B/taotsim" gen -o "$trace" --ep 32 --microbatches 20 --layers 48 --tokens 512 \
        --hot-fraction 0.03 2>> "$log"; then
        limited "$(allow 60)" "$B/taotsim" replay "$trace" --timing \
            --planners taot-cpu=taot,taot-gpu=taot:--taot-device=gpu >> "$md" 2> "$WORK/replay.err"
        rc=$?
        cat "$WORK/replay.err" >> "$log"
        if [ "$rc" -ne 0 ]; then fail "bench: replay --timing, exit status $rc"
        elif grep -qE 'gpu_fallback|fell back' "$md" "$WORK/replay.err"; then
            fail "bench: replay --taot-device gpu fell back to the CPU"
        fi
    else
        fail "bench: taotsim gen (for replay --timing)"
    fi
    cat "$md"
}

main() {
    say "gpu-check $([ "$DRY" -eq 1 ] && echo '--dry-run ')from $B, logs in $OUT, $(date -u +%FT%TZ)"
    check_bundle
    if [ "$DRY" -eq 1 ]; then
        step "dry run: the parity suite skips without a GPU, the fallback suite passes"
        local rc log=$OUT/parity.log
        suite 60 "$log" test_gpu_parity --filter 'gpu_parity/wrong_shape_refused'
        rc=$?
        if [ "$rc" -eq 77 ] && grep -q 'skipped: no GPU' "$log"; then
            say "test_gpu_parity: $(grep -m1 'skipped: no GPU' "$log") (exit 77: skip)"
        elif [ "$rc" -eq 0 ]; then
            say "test_gpu_parity: a GPU answers here; one parity test ran and passed"
        else
            tail -5 "$log"
            fail "dry run: test_gpu_parity exit status $rc, expected 77 and 'skipped: no GPU'"
        fi
        suite 120 "$log" test_gpu_fallback --verbose
        rc=$?
        grep -E 'Synthesis' "$log" | tail -1
        [ "$rc" -eq 0 ] || fail "dry run: test_gpu_fallback exit status $rc (see parity.log)"
    else
        machine
        parity
        replay
        bench
    fi

    step "summary"
    local n
    n=$(find "$OUT" -maxdepth 1 -type f | wc -l)
    [ "$n" -le 8 ] || fail "$OUT holds $n files, more than the 8 that come back"
    say "logs: $(cd "$OUT" && ls | tr '\n' ' ')"
    if [ ${#failed[@]} -eq 0 ]; then
        say "gpu-check$([ "$DRY" -eq 1 ] && echo ' --dry-run'): all steps passed"
        return 0
    fi
    say "gpu-check$([ "$DRY" -eq 1 ] && echo ' --dry-run'): FAILED (${#failed[@]}):"
    printf '  %s\n' "${failed[@]}"
    return 1
}

main 2>&1 | tee "$OUT/gpu-check.log"
exit "${PIPESTATUS[0]}"
