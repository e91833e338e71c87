#!/bin/sh
# Interrupted runs and full disks (the hardening issue):
#  - SIGINT, SIGTERM and every other signal that ends a process (USR1, ALRM,
#    SEGV, ABRT, ...) during a long replay writing -o FILE and
#    --dump-plans FILE, a long gen and a long convert: exit 128+signal and
#    nothing left in the output directory, neither the file nor a temporary;
#  - -o /dev/full, --dump-plans /dev/full: a clear "No space left" error, exit 2;
#  - gen, convert and replay on a disk that fills up mid-file (a file size
#    limit, EFBIG): exit 2, an error naming the file, and no output left;
#  - gen -o /dev/full and convert IN /dev/full: exit 2 with a message.
# Run by meson (TAOTSIM set) or by hand: tests/cli/signals.sh [TAOTSIM].
set -u
ulimit -c 0 2>/dev/null # the crash signals below must not leave core files
root=${TSIM_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${1:-${TAOTSIM:-$root/build/taotsim}}
command -v python3 >/dev/null 2>&1 || { echo "signals.sh: python3 is missing" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TAOTSIM_NO_PROGRESS=1
pass=0
fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }

# A long trace: per-expert totals, EP16 x 128 experts; replaying it with TAOT
# and LPLB takes seconds, converting it about a second: both still run when the signal comes.
python3 - "$work/long.jsonl.gz" 100000 <<'PY'
import gzip, random, sys
path, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(5)
rows = [",".join(str(rnd.randrange(0, 40) + (60 if e < 8 else 0)) for e in range(128)) for _ in range(101)]
with gzip.open(path, "wt", compresslevel=1) as f:
    f.write('{"format":"moe-routing-trace","version":1,"experts":128,"ep":16,"ranks_per_node":8}\n')
    f.write("".join('{"microbatch":%d,"layer":%d,"expert_counts":[%s]}\n' % (k // 4, k % 4, rows[k % 101])
                    for k in range(n)))
PY

# catches PID SIGNAL: true once PID has a handler for SIGNAL (Linux's
# /proc/PID/status, SigCgt: one bit per signal, signal n at bit n - 1).
catches() {
    case $2 in HUP) n=1 ;; INT) n=2 ;; QUIT) n=3 ;; PIPE) n=13 ;; TERM) n=15 ;; *) return 1 ;; esac
    mask=$(sed -n 's/^SigCgt:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null)
    [ -n "$mask" ] || return 1
    mask=${mask#????????}
    [ $(((0x$mask >> (n - 1)) & 1)) -eq 1 ]
}

# Under AddressSanitizer a crash signal reaches ASan's own handler after our
# cleanup, and abort_on_error turns it into SIGABRT (134): still a crash.
asan_crash() {
    case $1 in SEGV | BUS) ;; *) return 1 ;; esac
    nm -D "$bin" 2>/dev/null | grep -q __asan_init || nm "$bin" 2>/dev/null | grep -q __asan_init
}

# interrupt SIGNAL WANT WAIT DESCRIPTION ARGS...: starts taotsim ARGS (outputs
# under $work/out), sends SIGNAL once the run is under way, and checks the exit
# status and that $work/out is empty afterwards. WAIT says when that is:
# "data", a temporary output with data in it (so the signal lands mid-write);
# "handler", taotsim has installed its handler for SIGNAL (for runs that write
# their output only at the end). Polling, at most 20 s, instead of fixed sleeps.
interrupt() {
    sig=$1
    want=$2
    until=$3
    what=$4
    shift 4
    rm -rf "$work/out"
    mkdir "$work/out"
    "$bin" "$@" >"$work/stdout" 2>"$work/stderr" &
    pid=$!
    i=0
    while [ $i -lt 400 ]; do
        if [ "$until" = data ]; then
            [ -n "$(find "$work/out" -type f -size +0 2>/dev/null)" ] && break
        else
            catches "$pid" "$sig" && break
        fi
        sleep 0.05
        i=$((i + 1))
    done
    reached=$i
    # a little more work between the handler and the signal
    [ "$until" = handler ] && sleep 0.2
    kill -"$sig" "$pid" 2>/dev/null
    wait "$pid"
    status=$?
    left=$(ls -A "$work/out")
    if [ "$reached" -ge 400 ]; then
        bad "$what: no $until after 20 s"
    elif [ "$status" != "$want" ] && ! { [ "$status" = 134 ] && asan_crash "$sig"; }; then
        bad "$what: exit status $status, expected $want"
        head -3 "$work/stderr"
    elif [ -n "$left" ]; then
        bad "$what: left behind: $left"
    else
        ok "$what"
    fi
}

interrupt INT 130 data "SIGINT during replay -o --dump-plans" replay "$work/long.jsonl.gz" --planners taot,lplb \
    --dump-plans "$work/out/plans.jsonl" -o "$work/out/result.json" --format json
interrupt TERM 143 data "SIGTERM during replay -o --dump-plans" replay "$work/long.jsonl.gz" --planners taot,lplb \
    --dump-plans "$work/out/plans.jsonl" -o "$work/out/result.md"
interrupt HUP 129 data "SIGHUP during replay -o --dump-plans" replay "$work/long.jsonl.gz" --planners taot,lplb \
    --dump-plans "$work/out/plans.jsonl" -o "$work/out/result.md"
interrupt PIPE 141 handler "SIGPIPE during replay -o" replay "$work/long.jsonl.gz" --planners taot,lplb \
    -o "$work/out/result.md"
interrupt QUIT 131 handler "SIGQUIT during replay -o" replay "$work/long.jsonl.gz" --planners taot,lplb \
    -o "$work/out/result.md"
# Every other signal whose default action ends the process cleans up too
# (issue 20 item 11), with -j 2: the temporaries are open while workers plan.
# A crash signal keeps its default action after the cleanup (a signal death).
for pair in USR1:138 USR2:140 ALRM:142 VTALRM:154 PROF:155 SEGV:139 ABRT:134 BUS:135; do
    interrupt "${pair%:*}" "${pair#*:}" data "SIG${pair%:*} during replay -j 2 -o --dump-plans" replay "$work/long.jsonl.gz" \
        -j 2 --planners taot,lplb --dump-plans "$work/out/d.jsonl" -o "$work/out/o.md"
done
interrupt INT 130 handler "SIGINT during gen" gen --microbatches 200000 --tokens 64 -o "$work/out/gen.jsonl.gz"
interrupt INT 130 data "SIGINT during convert" convert "$work/long.jsonl.gz" "$work/out/long.json"

# full_disk WANT PATTERN DESCRIPTION ARGS...: the run must fail with WANT, say
# PATTERN on stderr, and leave $work/out empty.
full_disk() {
    want=$1
    pattern=$2
    what=$3
    shift 3
    rm -rf "$work/out"
    mkdir "$work/out"
    "$bin" "$@" >/dev/null 2>"$work/stderr"
    status=$?
    left=$(ls -A "$work/out")
    if [ "$status" != "$want" ]; then
        bad "$what: exit status $status, expected $want"
        head -3 "$work/stderr"
    elif ! grep -q "$pattern" "$work/stderr"; then
        bad "$what: stderr does not say '$pattern': $(head -2 "$work/stderr")"
    elif [ -n "$left" ]; then
        bad "$what: left behind: $left"
    else
        ok "$what"
    fi
}

small=$root/traces/ep16-imb10.jsonl.gz
full_disk 2 "/dev/full: write failed: No space left" "replay -o /dev/full" replay "$small" -o /dev/full
full_disk 2 "/dev/full: write failed: No space left" "replay --dump-plans /dev/full" \
    replay "$small" --dump-plans /dev/full -o "$work/out/result.md"
full_disk 2 "/dev/full" "gen -o /dev/full" gen --microbatches 2 -o /dev/full
full_disk 2 "/dev/full" "convert IN /dev/full" convert "$small" /dev/full

# A disk that fills up part way: a file size limit of 64 KiB, with SIGXFSZ
# ignored so that writes fail with EFBIG as they would with ENOSPC.
limited() {
    if (
        trap '' XFSZ
        ulimit -f 128
        fail=0
        full_disk "$@"
        exit "$fail"
    ); then pass=$((pass + 1)); else fail=$((fail + 1)); fi
}
limited 2 "out/gen.jsonl: write failed" "gen on a filling disk" gen --microbatches 64 --tokens 64 \
    -o "$work/out/gen.jsonl"
limited 2 "out/long.json: write failed" "convert on a filling disk" convert "$small" "$work/out/long.json"
limited 2 "out/plans.jsonl: write failed" "replay --dump-plans on a filling disk" \
    replay "$small" --planners taot,echo --dump-plans "$work/out/plans.jsonl" -o "$work/out/result.md"
echo "signals: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
