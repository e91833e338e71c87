#!/usr/bin/env bash
# A throw-away one-node Slurm cluster on this machine, for CI and for trying
# the scripts of scripts/slurm/ without a real cluster. No systemd: it starts
# munged, slurmctld and slurmd itself, with every key, socket, state, spool,
# log and pid file under a fresh temporary directory, and stops exactly the
# processes it started (by their pid files).
#
# Usage: scripts/slurm/local-cluster.sh start|stop|status|env
#   start   start the cluster (a running one is left as it is; stale state
#           from a crashed run is cleaned up first); waits until the node is idle
#   stop    cancel every job, stop the daemons, remove the temporary directory
#   status  exit 0 when all three daemons run and the node answers, else 3
#   env     print the line that points Slurm's commands at this cluster:
#           eval "$(scripts/slurm/local-cluster.sh env)"
# Needs root and the packages of scripts/slurm/install.sh (it installs nothing).
# Environment: TAOTSIM_SLURM_HOME (default /tmp/taotsim-slurm) holds the state
# file; TAOTSIM_SLURM_PORT (default 6817) is slurmctld's port, slurmd's is +1.
set -uo pipefail

home=${TAOTSIM_SLURM_HOME:-/tmp/taotsim-slurm}
state_file=$home/cluster.env
port=${TAOTSIM_SLURM_PORT:-6817}
ready_timeout=${TAOTSIM_SLURM_READY_TIMEOUT:-30}
me=local-cluster.sh

say() { echo "$me: $*" >&2; }

# pid_alive PID: the process exists and is not a zombie (a daemon that exited
# can stay a zombie until its parent, often PID 1 in a container, reaps it).
pid_alive() {
    local stat
    [ -n "${1:-}" ] || return 1
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    [ "${stat%% *}" != Z ]
}

# pid_is PID NAME: the live process PID is the program NAME (guards against
# a recycled pid in a stale pid file). Debian's binaries are alternatives
# (slurmd -> slurmd-wlm), so compare the command name, not the executable.
pid_is() {
    local comm
    pid_alive "$1" || return 1
    comm=$(cat "/proc/$1/comm" 2>/dev/null) || return 1
    [ "$comm" = "$2" ]
}

read_pid() { # FILE
    local pid
    [ -f "$1" ] || return 1
    read -r pid <"$1" 2>/dev/null || return 1
    case "$pid" in '' | *[!0-9]*) return 1 ;; esac
    echo "$pid"
}

load_state() {
    [ -f "$state_file" ] || return 1
    run_dir="" node=""
    # shellcheck disable=SC1090
    . "$state_file"
    [ -n "$run_dir" ] && [ -n "$node" ]
}

slurm_env() { export SLURM_CONF="$run_dir/slurm.conf"; }

# The daemons this cluster started, as "name pidfile" lines.
daemons() {
    echo "slurmd $run_dir/slurmd.pid"
    echo "slurmctld $run_dir/slurmctld.pid"
    echo "munged $run_dir/munge/munged.pid"
}

# stop_daemon NAME PIDFILE: TERM, wait up to 10 s, then KILL; only if the pid
# still belongs to NAME.
stop_daemon() {
    local name=$1 pid i
    pid=$(read_pid "$2") || return 0
    pid_is "$pid" "$name" || return 0
    kill -TERM "$pid" 2>/dev/null
    for i in $(seq 1 100); do
        pid_alive "$pid" || return 0
        sleep 0.1
    done
    say "$name (pid $pid) ignored SIGTERM for 10 s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null
    for i in $(seq 1 50); do
        pid_alive "$pid" || return 0
        sleep 0.1
    done
    say "$name (pid $pid) is still running"
    return 1
}

do_stop() {
    local name file status=0 i
    if ! load_state; then
        rm -f "$state_file"
        return 0
    fi
    slurm_env
    # Cancel every job first so that no slurmstepd outlives slurmd.
    if pid_is "$(read_pid "$run_dir/slurmctld.pid")" slurmctld; then
        local jobs
        jobs=$(timeout 10 squeue -h -o %A 2>/dev/null | sort -u)
        if [ -n "$jobs" ]; then
            # shellcheck disable=SC2086
            timeout 10 scancel $jobs 2>/dev/null
            for i in $(seq 1 100); do
                [ -z "$(timeout 10 squeue -h -o %A 2>/dev/null)" ] && break
                sleep 0.1
            done
        fi
    fi
    while read -r name file; do
        stop_daemon "$name" "$file" || status=1
    done < <(daemons)
    if [ "$status" = 0 ]; then
        case "$run_dir" in "$home"/run.*) rm -rf "$run_dir" ;; esac
        rm -f "$state_file"
    else
        say "left $run_dir in place: a daemon could not be stopped"
    fi
    return "$status"
}

# Prints which daemons run; succeeds when all do and the node answers sinfo.
do_status() {
    local name file pid all=0 node_state
    if ! load_state; then
        echo "stopped (no state in $state_file)"
        return 3
    fi
    slurm_env
    while read -r name file; do
        pid=$(read_pid "$file") && pid_is "$pid" "$name" && { echo "$name: running (pid $pid)"; continue; }
        echo "$name: not running"
        all=3
    done < <(daemons)
    node_state=$(timeout 10 sinfo -h -n "$node" -o %T 2>/dev/null | head -1)
    echo "node $node: ${node_state:-no answer}"
    [ -n "$node_state" ] || all=3
    echo "SLURM_CONF=$SLURM_CONF"
    return "$all"
}

# Dumps the end of every log after a failed start.
show_logs() {
    local log
    for log in "$run_dir/munge/munged.log" "$run_dir/slurmctld.log" "$run_dir/slurmd.log"; do
        [ -s "$log" ] || continue
        say "--- last lines of $log"
        tail -n 15 "$log" >&2
    done
}

fail_start() {
    say "start failed: $*"
    show_logs
    do_stop
    exit 1
}

write_conf() {
    cat >"$run_dir/slurm.conf" <<EOF
# Written by scripts/slurm/local-cluster.sh: a one-node test cluster.
ClusterName=taotsim
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# A private munged socket (not /run/munge): a system munged, if any, is untouched.
AuthInfo=socket=$run_dir/munge/munge.socket.2
StateSaveLocation=$run_dir/ctld-state
SlurmdSpoolDir=$run_dir/spool
SlurmctldPidFile=$run_dir/slurmctld.pid
SlurmdPidFile=$run_dir/slurmd.pid
SlurmctldLogFile=$run_dir/slurmctld.log
SlurmdLogFile=$run_dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
# Start batch jobs (array tasks, a dependent job) as soon as resources free up,
# not up to 3 s later: a 4-task array plus merge takes ~3 s instead of ~9 s.
SchedulerParameters=batch_sched_delay=0
MpiDefault=none
ReturnToService=2
# Finished jobs stay visible to scontrol for 10 minutes (exit codes for tests).
MinJobAge=600
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=local Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
}

# without_inherited_fds COMMAND...: runs COMMAND with only stdin, stdout and
# stderr open. The daemons would otherwise keep our lock (fd 9) and any pipe
# of the caller (a CI log reader waiting for EOF) open for their lifetime.
without_inherited_fds() {
    (
        for fd in /proc/self/fd/*; do
            fd=${fd##*/}
            [ "$fd" -gt 2 ] && eval "exec $fd>&-"
        done
        exec "$@"
    )
}

start_munged() {
    local m=$run_dir/munge i
    mkdir -p "$m"
    if command -v mungekey >/dev/null 2>&1; then
        mungekey --create --keyfile="$m/munge.key" >/dev/null || return 1
    else
        dd if=/dev/urandom of="$m/munge.key" bs=1024 count=1 status=none || return 1
    fi
    chmod 0400 "$m/munge.key"
    chown -R munge:munge "$m"
    chmod 0755 "$m"
    # munged refuses to run as root with a munge-owned key: run it as munge.
    without_inherited_fds runuser -u munge -- munged --socket="$m/munge.socket.2" --key-file="$m/munge.key" \
        --pid-file="$m/munged.pid" --log-file="$m/munged.log" --seed-file="$m/munged.seed" ||
        return 1
    for i in $(seq 1 50); do
        munge -n -S "$m/munge.socket.2" 2>/dev/null | unmunge -S "$m/munge.socket.2" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}

do_start() {
    local missing="" tool i node_state pid
    [ "$(id -u)" = 0 ] || { say "must run as root (the daemons run as root and munge)"; exit 2; }
    for tool in munged munge unmunge slurmctld slurmd sinfo squeue scancel runuser; do
        command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
    done
    [ -z "$missing" ] || { say "missing:$missing (run scripts/slurm/install.sh)"; exit 2; }
    id munge >/dev/null 2>&1 || { say "no munge user (run scripts/slurm/install.sh)"; exit 2; }

    if load_state; then
        if do_status >/dev/null 2>&1; then
            say "already running (SLURM_CONF=$run_dir/slurm.conf)"
            return 0
        fi
        say "cleaning up the stale cluster state of $state_file"
        do_stop || { say "could not clean up the stale cluster; not starting"; exit 1; }
    fi

    mkdir -p "$home" || exit 1
    run_dir=$(mktemp -d "$home/run.XXXXXX") || exit 1
    chmod 0755 "$home" "$run_dir"
    node=$(hostname -s)
    printf 'run_dir=%q\nnode=%q\n' "$run_dir" "$node" >"$state_file"
    mkdir -p "$run_dir/ctld-state" "$run_dir/spool"
    write_conf
    slurm_env

    start_munged || fail_start "munged did not come up"
    without_inherited_fds slurmctld -f "$SLURM_CONF" || fail_start "slurmctld exited with status $?"
    without_inherited_fds slurmd -f "$SLURM_CONF" -N "$node" || fail_start "slurmd exited with status $?"
    for i in $(seq 1 $((ready_timeout * 10))); do
        node_state=$(timeout 5 sinfo -h -n "$node" -o %T 2>/dev/null | head -1)
        [ "$node_state" = idle ] && break
        for pid in slurmctld slurmd; do
            pid_is "$(read_pid "$run_dir/$pid.pid")" "$pid" || [ "$i" -lt 20 ] ||
                fail_start "$pid is not running"
        done
        sleep 0.1
    done
    [ "$node_state" = idle ] ||
        fail_start "node $node not idle after ${ready_timeout}s (state: ${node_state:-no answer})"
    say "running: node $node idle after $(awk "BEGIN {print $i / 10}") s; SLURM_CONF=$SLURM_CONF"
}

# One start or stop at a time per cluster home (two CI jobs, a user and a test).
lock() {
    if ! mkdir -p "$home" || ! exec 9>"$home/lock" || ! flock -w 120 9; then
        say "cannot lock $home/lock"
        exit 1
    fi
}

case "${1:-}" in
start) lock; do_start ;;
stop) lock; do_stop ;;
status) do_status ;;
env)
    load_state || { say "not running"; exit 3; }
    printf 'export SLURM_CONF=%q\n' "$run_dir/slurm.conf"
    ;;
-h | --help)
    sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    ;;
*)
    echo "usage: $me start|stop|status|env" >&2
    exit 2
    ;;
esac
