#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Peer-churn test (test/churn/churn.c says what each rank checks): per
# trial, N ranks connect to each other and run tagged, active-message, RMA
# and atomic traffic; one is killed (kill -9) at a set time into it; a
# second later a late rank N starts, connects to the live ranks and they to
# it; a few seconds on, DIR/stop ends the run.  A trial passes when every
# survivor and the late rank exit 0 by themselves within the time limit,
# nothing was MISDELIVERED, each survivor reports the killed rank failed
# (within -F seconds of the kill) and no other, and each live pair has
# summary lines both ways.  One line a trial, then "N passed, N failed";
# exit 1 if any failed.
#
#   test/churn/run.sh [options]
#     -b soft|emu|both  backend: the soft device, dcx's mlx5 backend on the
#                       emulated ConnectX (dcx-run --mlx5-emu), or both
#                       (default both)
#     -n TRIALS         trials per backend (default 4)
#     -N RANKS          ranks started together (default 4); the late one is
#                       rank N
#     -k "TIMES"        seconds into the traffic at which a rank is killed,
#                       cycled through the trials (default "0.3 1 2 4")
#     -T                every other trial (trials 2, 4, ...) with small
#                       transport timeouts (UCX_DCX_TIMEOUT=100ms,
#                       UCX_DCX_RETRY_COUNT=3), the others with the defaults
#     -D SECONDS        from the kill to the late rank's start (default 1)
#     -r SECONDS        traffic after the late rank is connected (default 3)
#     -w SECONDS        each rank's deadline for an operation or a wait
#                       (default 20)
#     -F SECONDS        longest time from the kill to a survivor's endpoint
#                       error for the killed rank (default 15: about 1.1 s
#                       with work requests in flight; an endpoint waiting
#                       for credits asks again after UCX_DCX_FC_REQ_TIMEOUT,
#                       5 s, and that request may take the whole retry
#                       budget, 8 x 1.07 s, when a new process holds the
#                       dead one's address)
#     -S                pass -s to the ranks: an atomic to the killed rank
#                       that UCX 1.13 never completes (a software atomic
#                       purged from the pending queue; churn.c) is
#                       abandoned with a note instead of failing the trial
#     -d DIR            logs (default a new directory under /tmp, removed
#                       when every trial passed; DIR is kept)
#     -x BINARY         the churn program (default: built from churn*.c
#                       with cc into the log directory)
#     -l DCX_RUN        the dcx-run wrapper (default build/contrib/dcx-run,
#                       or $DCX_RUN)
#     -h                this help
# A rank that overruns a deadline prints its stacks (gdb, CHURN_GDB=1) when
# gdb is installed; so does the driver for a process past the time limit.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

backend=both
trials=4
nranks=4
kill_times="0.3 1 2 4"
small=0
delay=1
run_s=3
wait_s=20
detect_max=15
sw_amo=()
logdir=
binary=
dcx_run=${DCX_RUN:-$top/build/contrib/dcx-run}

usage() { sed -n '3,47p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

while getopts "b:n:N:k:TD:r:w:F:Sd:x:l:h" opt; do
    case $opt in
    b) backend=$OPTARG ;;
    n) trials=$OPTARG ;;
    N) nranks=$OPTARG ;;
    k) kill_times=$OPTARG ;;
    T) small=1 ;;
    D) delay=$OPTARG ;;
    r) run_s=$OPTARG ;;
    w) wait_s=$OPTARG ;;
    F) detect_max=$OPTARG ;;
    S) sw_amo=(-s) ;;
    d) logdir=$OPTARG ;;
    x) binary=$OPTARG ;;
    l) dcx_run=$OPTARG ;;
    h) usage 0 ;;
    *) usage 2 >&2 ;;
    esac
done
case $backend in
soft | emu) backends=$backend ;;
both) backends="soft emu" ;;
*) echo "run.sh: -b soft, emu or both" >&2; exit 2 ;;
esac
if [ "$nranks" -lt 2 ] || [ "$nranks" -gt 63 ]; then
    echo "run.sh: -N 2..63" >&2
    exit 2
fi
[ -x "$dcx_run" ] || { echo "run.sh: no dcx-run at $dcx_run (-l)" >&2; exit 2; }

keep=1
if [ -z "$logdir" ]; then
    logdir=$(mktemp -d /tmp/churn.XXXXXX) || exit 2
    keep=0
fi
mkdir -p "$logdir" || exit 2
if [ -z "$binary" ]; then
    binary=$logdir/churn
    cc -O2 -g -Wall -Wextra -o "$binary" "$here"/churn*.c -lucp -lucs \
        -lpthread || { echo "run.sh: cannot build churn.c" >&2; exit 2; }
fi
gdb_env=0
command -v gdb >/dev/null && gdb_env=1
read -r -a ktimes <<< "$kill_times"
uid=$(id -u)

# now in seconds, with a fraction
t_now() { date +%s.%N; }
# elapsed since $1 > $2 ?
t_past() {
    awk -v a="$1" -v b="$(t_now)" -v l="$2" 'BEGIN { exit !(b - a > l) }'
}
# $1 < $2 (decimals)?
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

# waits until every file named in $3.. exists in $1, for at most $2 s, and
# while each pid in the array named by $pids_var lives; 0 or 1
wait_files() {
    local dir=$1 limit=$2 t0 f missing
    shift 2
    t0=$(t_now)
    while :; do
        missing=
        for f in "$@"; do
            [ -e "$dir/$f" ] || missing="$missing $f"
        done
        [ -z "$missing" ] && return 0
        if t_past "$t0" "$limit"; then
            reason="no$missing after $limit s"
            return 1
        fi
        for p in "${!pid[@]}"; do
            if ! alive "${pid[$p]}"; then
                reason="rank $p ended before$missing appeared"
                return 1
            fi
        done
        sleep 0.05
    done
}

# the stacks of a process, into its log, then kill it
stack_and_kill() {
    local r=$1 p=$2 log=$3
    if [ $gdb_env -eq 1 ]; then
        echo "== run.sh: rank $r (pid $p) still running, its stacks:" >>"$log"
        timeout 60 gdb -p "$p" -batch -ex 'thread apply all bt' \
            </dev/null >>"$log" 2>&1
    fi
    kill -9 "$p" 2>/dev/null
}

# a process that has not ended (a zombie has)
alive() {
    local st
    st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
    [ -n "$st" ] && [ "${st%% *}" != Z ]
}

signame() { kill -l "$(($1 - 128))" 2>/dev/null || echo "?"; }

passed=0
failed=0
k=0
for b in $backends; do
    for ((i = 0; i < trials; i++)); do
        k=$((k + 1))
        kt=${ktimes[$(((k - 1) % ${#ktimes[@]}))]}
        victim=$(((k - 1) % nranks))
        late=$nranks
        tdir=$logdir/trial$k
        adir=$tdir/addr
        rm -rf "$tdir"
        mkdir -p "$adir"
        fabric=churn-$$-$k
        envs=("UCX_TLS=dcx,self" "CHURN_GDB=$gdb_env")
        mode=(--soft --fabric "$fabric")
        if [ "$b" = emu ]; then
            envs+=(UCX_NET_DEVICES=mlx5_0:1)
            mode=(--mlx5-emu --fabric "$fabric")
        fi
        tmo="default timeouts"
        if [ $small -eq 1 ] && [ $((k % 2)) -eq 0 ]; then
            envs+=(UCX_DCX_TIMEOUT=100ms UCX_DCX_RETRY_COUNT=3)
            tmo="UCX_DCX_TIMEOUT=100ms UCX_DCX_RETRY_COUNT=3"
        fi
        max_run=$(awk -v a="$kt" -v b="$delay" -v c="$run_s" -v w="$wait_s" \
                  'BEGIN { print int(a + b + c + 3 * w + 60) }')
        declare -A pid=()
        reason=
        start_rank() {
            env "${envs[@]}" "$dcx_run" "${mode[@]}" "$binary" -d "$adir" \
                -r "$1" -n "$nranks" -w "$wait_s" -m "$max_run" "${sw_amo[@]}" \
                >"$tdir/rank$1.log" 2>&1 &
            pid[$1]=$!
        }
        for ((r = 0; r < nranks; r++)); do
            start_rank $r
        done
        ready=()
        for ((r = 0; r < nranks; r++)); do ready+=("$r.ready"); done
        if wait_files "$adir" 30 "${ready[@]}"; then
            sleep "$kt"
            t_kill=$(t_now)
            kill -9 "${pid[$victim]}" 2>/dev/null
            wait "${pid[$victim]}" 2>/dev/null
            unset "pid[$victim]"
            echo "$t_kill" >"$adir/$victim.dead"
            rm -f "$adir/$victim.addr"
            echo "run.sh: rank $victim killed at $kt s into the traffic" \
                >>"$tdir/rank$victim.log"
            sleep "$delay"
            start_rank "$late"
            if wait_files "$adir" 30 "$late.ready"; then
                sleep "$run_s"
            fi
        fi
        : >"$adir/stop"
        # every rank ends by itself: its own deadlines bound each wait
        limit=$((2 * wait_s + 15))
        t0=$(t_now)
        declare -A status=() ended=()
        while [ ${#pid[@]} -gt ${#status[@]} ]; do
            for r in "${!pid[@]}"; do
                [ -n "${status[$r]:-}" ] && continue
                if ! alive "${pid[$r]}"; then
                    wait "${pid[$r]}"
                    status[$r]=$?
                    [ "${status[$r]}" -ne 0 ] && ended[$r]=$(t_now)
                fi
            done
            if t_past "$t0" "$limit"; then
                for r in "${!pid[@]}"; do
                    if [ -z "${status[$r]:-}" ]; then
                        stack_and_kill "$r" "${pid[$r]}" "$tdir/rank$r.log"
                        wait "${pid[$r]}" 2>/dev/null
                        status[$r]=hung
                    fi
                done
            fi
            sleep 0.1
        done

        # the verdict: the ranks' own failures first; ranks that only
        # waited for a peer that failed so are named together at the end
        why=()
        waited=
        [ -n "$reason" ] && why+=("$reason")
        for r in $(printf '%s\n' "${!status[@]}" | sort -n); do
            log=$tdir/rank$r.log
            s=${status[$r]}
            if [ "$s" = hung ]; then
                last=$(grep -E "^\[ *[0-9.]+\] rank $r: " "$log" | tail -n 1 |
                       sed 's/^\[ *[0-9.]*\] //')
                why+=("rank $r still running $limit s after stop (last: $last)")
            elif [ "$s" -gt 128 ]; then
                why+=("rank $r killed by SIG$(signame "$s")")
            elif [ "$s" -ne 0 ]; then
                last=$(grep -E "rank $r: ERROR: " "$log" | head -n 1 |
                       sed 's/^\[ *[0-9.]*\] //')
                waits="peers' (drained|closed) files: not done"
                if [[ "$last" =~ $waits ]]; then
                    waited="$waited $r"
                else
                    why+=("rank $r exit $s (${last:-see its log})")
                fi
            fi
            if [ "$r" -ne "$late" ]; then
                grep -qE "rank $r: peer $victim failed" "$log" ||
                    why+=("rank $r did not report killed rank $victim failed")
                d=$(grep -E "rank $r: summary peer $victim: " "$log" |
                    grep -oE '[0-9.]+ s after the kill' | awk '{print $1}')
                if [ -n "$d" ] && lt "$detect_max" "$d"; then
                    msg="rank $r saw killed rank $victim fail only $d s"
                    why+=("$msg after the kill (-F $detect_max)")
                fi
            fi
            # a peer that ended with an error is seen failing after it
            # ended: only a failure seen before that counts against r
            others=
            while read -r q t; do
                [ "$q" = "$victim" ] && continue
                if [ -z "${ended[$q]:-}" ] || lt "$t" "${ended[$q]}"; then
                    others="$others $q"
                fi
            done < <(grep -oE "rank $r: peer [0-9]+ failed: .* at [0-9.]+ s" \
                         "$log" | awk '{print $4, $(NF-1)}' | sort -un -k1,1)
            [ -n "$others" ] && why+=("rank $r failed live peer(s)$others")
            if [ "$s" = 0 ]; then
                for q in "${!status[@]}"; do
                    [ "$q" = "$r" ] && continue
                    grep -qE "rank $r: summary peer $q: .*, live$" "$log" ||
                        why+=("rank $r has no live summary of rank $q")
                done
            fi
        done
        [ -n "$waited" ] &&
            why+=("rank(s)$waited then stuck waiting for the peers' files")
        grep -l MISDELIVERED "$tdir"/rank*.log >/dev/null 2>&1 &&
            why+=("MISDELIVERED in $(grep -l MISDELIVERED "$tdir"/rank*.log |
                                      xargs -n1 basename | tr '\n' ' ')")

        # the fabric's leftovers (every process of the trial has ended)
        rm -f "/dev/shm/dcx-emu.$uid.$fabric" "/dev/shm/dcx-soft.$uid.$fabric."*

        # how long after the kill the survivors saw it fail; notes
        detect=$(grep -hE "summary peer $victim: " "$tdir"/rank*.log |
                 grep -oE '[0-9.]+ s after the kill' | awk '{print $1}' |
                 sort -n | sed -n '1p;$p' | paste -sd-)
        extra=
        [ -n "$detect" ] && extra=", failure seen after $detect s"
        notes=$(cat "$tdir"/rank*.log | grep -c 'note: atomic fetch-add')
        [ "$notes" -gt 0 ] && extra="$extra, $notes atomics abandoned (-S)"
        label="trial $k (backend $b, kill rank $victim at $kt s, $tmo$extra)"
        if [ ${#why[@]} -eq 0 ]; then
            echo "$label: PASS"
            passed=$((passed + 1))
        else
            echo "$label: FAIL: $(printf '%s; ' "${why[@]}" | sed 's/; $//')"
            echo "    logs: $tdir"
            failed=$((failed + 1))
        fi
        unset pid status ended
    done
done

echo "$passed passed, $failed failed"
if [ $failed -eq 0 ] && [ $keep -eq 0 ]; then
    rm -rf "$logdir"
elif [ $failed -ne 0 ]; then
    echo "logs in $logdir"
fi
[ $failed -eq 0 ]
