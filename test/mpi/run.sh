#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Build and run the MPI (test/mpi) and OpenSHMEM (test/shmem) test programs
# over one UCX transport, with 2 and 4 processes each (or the counts a
# program asks for, e.g. 2, 3 and 4 for the one-sided programs).
#
#   test/mpi/run.sh [-t TLS] [-e] [-n "2 4"] [-o PATTERN] [BUILD_DIR]
#
# BUILD_DIR receives the binaries and one log per run (default: a new
# temporary directory, kept when something fails).
#
# Settings (option or environment variable):
#   -t, DCX_TEST_TLS     transport: posix (default), tcp, sysv, dcx, ... The
#                        processes get UCX_TLS=<TLS>,self. tcp is pinned to
#                        loopback (UCX_NET_DEVICES=lo).
#                        dcx additionally exports LD_PRELOAD from
#                        "$DCX_RUN --print-preload" and the soft device
#                        (UCX_DCX_SOFT_DEVICES=1, UCX_DCX_SOFT_FABRIC=<name>).
#   -e, DCX_TEST_EMU=1   with dcx: dcx's mlx5 backend on the emulated
#                        ConnectX instead of the soft device: every variable
#                        of "$DCX_RUN --mlx5-emu --print-env" is passed with
#                        -x, the fabric as DCX_EMU_FABRIC=<name>
#                        (docs/mlx5-emulation.md)
#   DCX_RUN              path of the dcx-run wrapper (default: dcx-run from
#                        PATH, else <repo>/build/contrib/dcx-run)
#   DCX_TEST_FABRIC      soft fabric name prefix (default mt<pid>); each run
#                        gets its own fabric <prefix>-<run number> (fabric
#                        names have at most 32 characters)
#   -n, DCX_TEST_NP      process counts for every program (default "2 4",
#                        or the list a program names in a line
#                        "dcx-test-np: 2 3 4" of its source)
#   -o, DCX_TEST_ONLY    run only programs whose name matches this
#                        extended regex (e.g. 'mpi/p2p|shmem/atomics')
#   DCX_TEST_SKIP        skip the programs whose name matches this extended
#                        regex (after DCX_TEST_ONLY)
#   DCX_TEST_TIMEOUT     seconds per run (default 120); a run still going
#                        then has the CPU time of its processes' threads
#                        (twice, 5 s apart: a spinning process gains time,
#                        a blocked or starved one none) and their stacks
#                        (gdb, where installed) written to <log>.stacks
#                        before it is ended
#   DCX_TEST_STRICT      1 (default): a run whose output has a UCX error
#                        line ("UCX  ERROR", any process) fails; 0: such
#                        lines are only reported on the PASS line
#   DCX_TEST_MPIRUN_ARGS extra arguments for mpirun/oshrun
#
# Every run is checked four ways: exit status 0, the program's own "OK"
# line, no UCX error line (unless DCX_TEST_STRICT=0), and the transport
# check: every process runs with
# UCX_LOG_LEVEL=info, so UCX 1.13 prints one line per endpoint
# configuration it creates, e.g.
#     ucp_worker.c:1763 UCX  INFO    ep_cfg[1]: tag(posix/memory)
#     ucp_worker.c:1763 UCX  INFO    ep_cfg[0]: rma_am(tcp/lo) amo_am(tcp/lo)
# naming the transport/device behind every lane. The run passes the check
# only if the requested transport appears in those lines and no transport
# other than it and "self" does (so no silent fallback to posix, tcp,
# sysv, cma, ...).
#
# Over dcx there is one more check: every process must print the soft
# device's counters ("soft device soft0: traffic: tx N packets B bytes ...",
# one info line per device at close) and the job must have sent bytes
# through it; the PASS line shows the totals.  With -e the mlx5 backend
# keeps no counters of its own (a ConnectX counts in the NIC): every dcx
# lane of the ep_cfg lines must be on an emulated mlx5_* device instead.
#
# Device tag matching over dcx: a program whose source has a line
# "dcx-test-tm: matched" (mpi/p2p: specific-source receives of 64 KiB and
# more) must show device matches: the processes' "tag matching: posted N
# matched M ..." counters summed must have M > 0, else the run fails.  The
# PASS line of every dcx run shows the counters ("tm: matched M of posted
# P ..."); programs that post no receive UCP can offload (one-sided,
# probes, wildcard sources, messages below UCP's offload threshold) show
# 0 of 0.
# Not checked when UCX_DCX_TM_ENABLE=n is exported to the runner, nor with
# -e on a device without tag matching (ucx_info shows none there with
# UCX_DCX_TM_ENABLE=y): a skip by capability.
#
# Atomics by the initiator over the soft device: a program whose source
# has a line "dcx-test-direct: atomics" (shmem/heap_atomics: atomics on the
# symmetric heap, which every PE maps) must show atomics the initiators
# executed themselves: the "direct ... N atomics" of the processes'
# traffic lines summed must be above 0, else the run fails.  Not checked
# with -e (the mlx5 backend's atomics are the device's).
#
# DCI pool policies over dcx: a program whose source has a line
# "dcx-test-policies: dcs dcs_quota rand hybrid streams" runs once per policy named there
# (UCX_DCX_DCI_POLICY), for every process count, and with a line
# "dcx-test-num-dci: 2" with that pool size (UCX_DCX_NUM_DCI, and
# UCX_DCX_NUM_DCI_STREAMS: the pool of the streams policy); each such
# run keeps its interfaces' counters (UCX_DCX_STATS_DIR, read with
# contrib/dcx-stat) and passes only if every process's interface ran that
# policy with that pool and never held more DCIs than it. Over another
# transport the program runs once per process count.
#
# Output: one line per run, then "N passed, N failed"; exit status 1 if any
# run failed.

set -u
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

tls=${DCX_TEST_TLS:-posix}
nps=${DCX_TEST_NP:-2 4}
nps_forced=${DCX_TEST_NP:+1}
only=${DCX_TEST_ONLY:-}
skip=${DCX_TEST_SKIP:-}
tmo=${DCX_TEST_TIMEOUT:-120}
strict=${DCX_TEST_STRICT:-1}
extra=${DCX_TEST_MPIRUN_ARGS:-}

usage() { sed -n '3,/^$/s/^# \{0,1\}//p' "$0"; }

emu=${DCX_TEST_EMU:-0}

while getopts "t:en:o:h" opt; do
    case $opt in
    t) tls=$OPTARG ;;
    e) emu=1 ;;
    n) nps=$OPTARG; nps_forced=1 ;;
    o) only=$OPTARG ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))

# Early fatal problems still end with the summary line the callers expect.
fatal() {
    echo "run.sh: $*" >&2
    echo "0 passed, 1 failed"
    exit 1
}

if [ $# -ge 1 ]; then
    bdir=$1
    mkdir -p "$bdir" || fatal "cannot create $bdir"
    bdir=$(cd "$bdir" && pwd)
    keep=1
else
    bdir=$(mktemp -d /tmp/dcx-mpitest.XXXXXX) || fatal "mktemp failed"
    keep=0
fi
logdir=$bdir/logs
mkdir -p "$logdir"

for t in mpicc oshcc mpirun oshrun timeout; do
    command -v $t >/dev/null || fatal "$t not found"
done

# ---- transport settings ---------------------------------------------------
xargs_tl=(-x "UCX_TLS=$tls,self")
case "$tls" in
tcp) xargs_tl+=(-x UCX_NET_DEVICES=lo) ;;
dcx)
    dcx_run=${DCX_RUN:-}
    if [ -z "$dcx_run" ]; then
        dcx_run=$(command -v dcx-run || true)
        [ -n "$dcx_run" ] || dcx_run=$top/build/contrib/dcx-run
    fi
    [ -x "$dcx_run" ] || fatal "dcx requested but the dcx-run wrapper '$dcx_run' is missing (set DCX_RUN)"
    preload=$("$dcx_run" --print-preload) ||
        fatal "'$dcx_run --print-preload' failed (is libuct_dcx.so built?)"
    [ -n "$preload" ] || fatal "'$dcx_run --print-preload' printed nothing"
    fabric_prefix=${DCX_TEST_FABRIC:-mt$$}
    if [ "$emu" = 1 ]; then
        # the variables dcx-run gives (the fabric: one per run, below)
        emu_env=$("$dcx_run" --mlx5-emu --print-env) ||
            fatal "'$dcx_run --mlx5-emu --print-env' failed (is emu/ built?)"
        while read -r v; do
            xargs_tl+=(-x "$v")
        done <<<"$emu_env"
        # tag matching offload, where the device has it: what ucx_info
        # shows with UCX_DCX_TM_ENABLE=y (a device without refuses it)
        emu_tm=$(env $emu_env DCX_EMU_FABRIC="$fabric_prefix-caps" \
                     UCX_DCX_TM_ENABLE=y ucx_info -d -t dcx 2>/dev/null |
                 grep -c '^# *tag_eager_short:')
        # the streams DCI policy, where the device has DCI streams: an
        # interface opens with UCX_DCX_DCI_POLICY=streams (a device without
        # refuses it)
        emu_streams=$(env $emu_env DCX_EMU_FABRIC="$fabric_prefix-caps" \
                          UCX_DCX_DCI_POLICY=streams ucx_info -d -t dcx 2>/dev/null |
                      grep -c '^# *am_short:')
        rm -f "/dev/shm/dcx-emu.$(id -u).$fabric_prefix-caps"
    else
        xargs_tl+=(-x "LD_PRELOAD=$preload" -x UCX_DCX_SOFT_DEVICES=1)
    fi
    ;;
*)
    [ "$emu" = 0 ] || fatal "-e (DCX_TEST_EMU) goes with -t dcx"
    ;;
esac

common=(--allow-run-as-root --oversubscribe
        --mca pml ucx --mca osc ucx
        --mca pml_ucx_tls any --mca pml_ucx_devices any
        --mca mpi_yield_when_idle 1
        "${xargs_tl[@]}" -x UCX_LOG_LEVEL=info)
# (osc ucx is already in common: OpenSHMEM needs it, osc rdma crashes at
# finalize on this distribution; Open MPI rejects an MCA option given twice)
shmem_extra=(--mca spml ucx)

echo "# transport: UCX_TLS=$tls,self${preload:+  LD_PRELOAD=$preload}"
[ "$emu" = 0 ] || echo "# device: dcx's mlx5 backend on the emulated ConnectX ($(echo $emu_env))"
echo "# build and logs: $bdir"

# ---- build ----------------------------------------------------------------
passed=0
failed=0
progs=()   # entries "kind/name"
declare -A prog_src   # "kind/name" -> source file

selected() {    # selected KIND/NAME: DCX_TEST_ONLY and DCX_TEST_SKIP let it run
    if [ -n "$only" ] && ! [[ $1 =~ $only ]]; then return 1; fi
    if [ -n "$skip" ] && [[ $1 =~ $skip ]]; then return 1; fi
    return 0
}

build_one() {   # build_one CC KIND SRC
    local cc=$1 kind=$2 src=$3 name
    name=$(basename "$src" .c)
    selected "$kind/$name" || return 0
    if "$cc" -O2 -g -Wall -Wextra -o "$bdir/${kind}_$name" "$src" \
            >"$logdir/build_${kind}_$name.log" 2>&1; then
        progs+=("$kind/$name")
        prog_src["$kind/$name"]=$src
    else
        failed=$((failed + 1))
        echo "FAIL build $kind/$name (see $logdir/build_${kind}_$name.log)"
        sed 's/^/   | /' "$logdir/build_${kind}_$name.log" | head -20
    fi
}

for src in "$here"/*.c; do build_one mpicc mpi "$src"; done
for src in "$top"/test/shmem/*.c; do build_one oshcc shmem "$src"; done

# ---- transport check ------------------------------------------------------
# Prints the transports named by the ep_cfg lines of a log, one a line.
# UCX 1.13 writes "ep_cfg[1]: tag(...)", newer UCX "inter-node cfg#1 tag(...)"
# (or intra-node, self), possibly after the context name.
ep_cfg_re='UCX +INFO +(ep_cfg\[[0-9]+\]:|(.* )?(self|intra-node|inter-node) cfg#[0-9]+ )'
ep_cfg_strip='s/.*(ep_cfg\[[0-9]+\]:|cfg#[0-9]+ ) *//'
lane_tls() {
    grep -E "$ep_cfg_re" "$1" | sed -E "$ep_cfg_strip" |
        grep -oE '[A-Za-z0-9_]+/[^ )]+' | cut -d/ -f1 | sort -u
}
# Distinct lane descriptions "kind(tl/dev ...)", for the report.
lane_desc() {
    grep -E "$ep_cfg_re" "$1" |
        sed -E "$ep_cfg_strip" | tr ' ' '\n' | paste -sd' ' |
        grep -oE '[a-z_]+\([^)]*\)' | sort -u | paste -sd' '
}

check_transport() {   # check_transport LOG -> prints a reason on failure
    local log=$1 seen other
    seen=$(lane_tls "$log" | paste -sd' ')
    if [ -z "$seen" ]; then
        echo "no ep_cfg lines in the output (UCX_LOG_LEVEL=info not honoured?)"
        return 1
    fi
    if ! lane_tls "$log" | grep -qx -- "$tls"; then
        echo "requested transport '$tls' not used; lanes used: $seen"
        return 1
    fi
    other=$(lane_tls "$log" | grep -vx -e "$tls" -e self | paste -sd' ')
    if [ -n "$other" ]; then
        echo "other transport(s) used besides '$tls': $other"
        return 1
    fi
    return 0
}

# The soft device's counters: every process prints one "soft device <dev>:
# traffic: tx N packets B bytes, ..." info line when it closes its device.  A dcx run
# passes only if every process printed one and some bytes went out; prints
# "<processes> <tx bytes total>" or a reason.
check_dcx_traffic() {   # check_dcx_traffic LOG NP
    local log=$1 np=$2
    grep -E 'DCX +INFO +soft device [^:]+: traffic: tx' "$log" |
        sed -E 's/.*traffic: tx ([0-9]+) packets ([0-9]+) bytes.*/\1 \2/' |
        awk -v np="$np" '
            { n++; pk += $1; by += $2 }
            END {
                if (n < np) { printf "only %d of %d processes reported dcx traffic\n", n, np; exit 1 }
                if (by == 0) { print "dcx counted no bytes sent"; exit 1 }
                printf "%d %d\n", pk, by
            }'
}

# dcx's tag-matching counters (UCX_DCX_TM_ENABLE): the "dcx iface ...: tag
# matching: posted N matched N ..." info lines at close, summed; prints
# "tm: matched M of posted P, unexpected U, rndv device R" or nothing when no
# interface used offload.
tm_summary() {   # tm_summary LOG
    grep -E 'UCX +INFO +dcx iface .*: tag matching: posted' "$1" |
        sed -E 's/.*posted ([0-9]+) matched ([0-9]+) unexp_eager ([0-9]+) unexp_rndv ([0-9]+) rndv_hw ([0-9]+).*/\1 \2 \3 \4 \5/' |
        awk '{ p += $1; m += $2; u += $3 + $4; r += $5; n++ }
             END { if (n > 0) printf "tm: matched %d of posted %d, unexpected %d, rndv by device %d\n", m, p, u, r }'
}

# The atomics the soft device's initiators executed themselves ("direct
# ... N atomics" of the traffic lines), summed over the processes
direct_atomics() {   # direct_atomics LOG
    grep -E 'DCX +INFO +soft device [^:]+: traffic: tx' "$1" |
        sed -nE 's/.*direct .* ([0-9]+) atomics.*/\1/p' |
        awk '{ n += $1 } END { print n + 0 }'
}

# "atomics" if the program's source asks that its atomics be executed by
# the initiator over the soft device ("dcx-test-direct: atomics")
prog_direct_required() {   # prog_direct_required SRC
    grep -q 'dcx-test-direct:[[:space:]]*atomics' "$1" && echo atomics
}

# "tm_required" if the program's source asks for device tag matching
prog_tm_required() {   # prog_tm_required SRC
    grep -q 'dcx-test-tm:[[:space:]]*matched' "$1" && echo tm_required
}

# Process counts of one program: -n / DCX_TEST_NP if given, else the list
# in the program's "dcx-test-np:" line, else the default.
prog_nps() {   # prog_nps SRC
    local own
    if [ -z "$nps_forced" ]; then
        own=$(sed -n 's/.*dcx-test-np:[[:space:]]*\([0-9 ]*[0-9]\).*/\1/p' "$1" | head -n 1)
        if [ -n "$own" ]; then
            echo "$own"
            return
        fi
    fi
    echo "$nps"
}

# The DCI policies a program asks to run under ("dcx-test-policies:"), over
# dcx only; else one empty entry (the default policy)
prog_policies() {   # prog_policies SRC
    local own=
    if [ "$tls" = dcx ]; then
        own=$(sed -n 's/.*dcx-test-policies:[[:space:]]*\([a-z_ ]*[a-z_]\).*/\1/p' "$1" | head -n 1)
    fi
    echo "${own:--}"
}

prog_num_dci() {   # prog_num_dci SRC -> the "dcx-test-num-dci:" count or ""
    sed -n 's/.*dcx-test-num-dci:[[:space:]]*\([0-9][0-9]*\).*/\1/p' "$1" | head -n 1
}

# The pool every process's interface ran with, from its counters file:
# prints "policy P, N DCIs, peak H, waits W" or a reason
check_pool() {   # check_pool STATS_DIR NP POLICY NUM_DCI
    local dir=$1 np=$2 pol=$3 ndci=$4
    python3 "$top/contrib/dcx-stat" -a "$dir" 2>&1 | awk -v np="$np" \
        -v pol="$pol" -v ndci="$ndci" '
        function odd(what) { if (!(what in seen)) { seen[what] = 1; bad = bad " " what } }
        /^pid / { n++; if ($8 != pol) odd("policy " $8) }
        $1 == "dci.num_dci" { if (ndci != "" && $2 != ndci) odd("num_dci " $2) }
        $1 == "dci.high_water" { if ($2 > peak) peak = $2 }
        $1 == "dci.waits" { waits += $2 }
        $1 == "dci.shared_wrs" { shared += $2 }
        END {
            if (n < np) { printf "counters of %d interfaces for %d processes\n", n, np; exit 1 }
            if (bad != "") { printf "pool not as asked (%s, %s DCIs):%s\n", pol, ndci, bad; exit 1 }
            if (ndci != "" && peak > ndci) { printf "%d DCIs at once in a pool of %s\n", peak, ndci; exit 1 }
            if (pol == "hybrid" && waits > 0) { printf "%d waits for a DCI under hybrid\n", waits; exit 1 }
            printf "policy %s, %s DCIs, peak %d, waits %d, shared-DCI sends %d\n", pol, ndci, peak, waits, shared
        }'
}

# The processes of the program EXE among PID's descendants
run_procs() {   # run_procs PID EXE
    local p
    for p in $(pgrep -P "$1"); do
        [ "$(readlink -f "/proc/$p/exe" 2>/dev/null)" != "$2" ] || echo "$p"
        run_procs "$p" "$2"
    done
}

# Every thread of the processes: "pid tid name state utime stime" (ticks)
thread_times() {   # thread_times PID...
    local p t line rest
    for p in "$@"; do
        for t in /proc/"$p"/task/*; do
            line=$(cat "$t/stat" 2>/dev/null) || continue
            rest=${line##*) }
            # shellcheck disable=SC2086
            set -- $rest
            echo "$p ${t##*/} $(cat "$t/comm" 2>/dev/null) $1 ${12} ${13}"
        done
    done
}

# Waits for the run PID for SECONDS (a look a second; returns when it
# ends); a run still going then has what its processes do written to
# LOG.stacks -- the CPU time of their threads twice, 5 s apart, and their
# stacks -- so that a hang (threads spinning or asleep with no progress)
# tells itself from a run too slow for the limit; then it is ended.
watchdog() {   # watchdog PID SECONDS EXE LOG
    local pid=$1 limit=$2 exe=$3 log=$4 s p procs
    for ((s = 0; s < limit; s++)); do
        sleep 1
        kill -0 "$pid" 2>/dev/null || return 0
    done
    mapfile -t procs < <(run_procs "$pid" "$(readlink -f "$exe")")
    {
        echo "== run.sh: the run is past ${limit}s; its processes' threads:"
        echo "== pid tid name state utime stime (clock ticks), 5 s apart"
        thread_times "${procs[@]}"
        sleep 5
        echo "=="
        thread_times "${procs[@]}"
        if command -v gdb >/dev/null; then
            for p in "${procs[@]}"; do
                echo "== stacks of pid $p"
                timeout 30 gdb -p "$p" -batch -ex 'thread apply all bt' \
                    </dev/null 2>&1
            done
        fi
    } >"$log.stacks" 2>&1
    kill -TERM "$pid" 2>/dev/null
}

# ---- run ------------------------------------------------------------------
t_all=$SECONDS
run_no=0
for p in "${progs[@]}"; do
    selected "$p" || continue
    kind=${p%%/*}
    name=${p#*/}
    exe=$bdir/${kind}_$name
    ndci=$(prog_num_dci "${prog_src[$p]}")
    for np in $(prog_nps "${prog_src[$p]}"); do
      for pol in $(prog_policies "${prog_src[$p]}"); do
        if [ "$pol" = streams ] && [ "$emu" = 1 ] && [ "$emu_streams" = 0 ]; then
            echo "SKIP ${kind}/$name np=$np streams: the device has no DCI streams (capability)"
            continue
        fi
        run_no=$((run_no + 1))
        log=$logdir/${kind}_$name.np$np.log
        args=("${common[@]}")
        stats=
        if [ "$pol" != - ]; then
            log=$logdir/${kind}_$name.np$np.$pol.log
            stats=$logdir/stats.$run_no
            rm -rf "$stats"
            mkdir -p "$stats"
            args+=(-x "UCX_DCX_DCI_POLICY=$pol" -x "UCX_DCX_STATS_DIR=$stats")
            [ -z "$ndci" ] || args+=(-x "UCX_DCX_NUM_DCI=$ndci"
                                     -x "UCX_DCX_NUM_DCI_STREAMS=$ndci")
        fi
        launcher=mpirun
        if [ "$kind" = shmem ]; then
            launcher=oshrun
            args+=("${shmem_extra[@]}")
        fi
        if [ "$tls" = dcx ] && [ "$emu" = 1 ]; then
            args+=(-x "DCX_EMU_FABRIC=$fabric_prefix-$run_no")
        elif [ "$tls" = dcx ]; then
            args+=(-x "UCX_DCX_SOFT_FABRIC=$fabric_prefix-$run_no")
        fi
        # shellcheck disable=SC2086
        # (the watchdog ends the run at $tmo s; timeout's limit is the
        # bound should the watchdog's look at it not end)
        cmd=(timeout -k 10 "$((tmo + 900))" "$launcher" "${args[@]}" $extra -np "$np" "$exe")
        echo "${cmd[*]}" >"$log"
        rm -f "$log.stacks"
        t0=$(date +%s.%N)
        "${cmd[@]}" >>"$log" 2>&1 </dev/null &
        run_pid=$!
        watchdog "$run_pid" "$tmo" "$exe" "$log" &
        wd_pid=$!
        wait "$run_pid"
        rc=$?
        # a run that ended by itself leaves the watchdog a second's sleep
        # from its next look: ended, not waited for
        kill "$wd_pid" 2>/dev/null
        wait "$wd_pid" 2>/dev/null
        # the emulation's table of the fabric outlives its processes
        [ "$emu" = 0 ] || rm -f "/dev/shm/dcx-emu.$(id -u).$fabric_prefix-$run_no"
        dt=$(echo "$(date +%s.%N) $t0" | awk '{printf "%.1f", $1 - $2}')

        reason=
        if [ -e "$log.stacks" ]; then
            reason="timed out after ${tmo}s (threads' CPU time and stacks: $log.stacks)"
        elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
            reason="timed out after ${tmo}s"
        elif [ $rc -ne 0 ]; then
            reason="exit status $rc"
            fl=$(grep -m1 '^FAIL ' "$log")
            [ -z "$fl" ] || reason="$reason: $fl"
        elif ! grep -q "^OK $name n" "$log"; then
            reason="no OK line from rank 0"
        fi
        tcheck=$(check_transport "$log")
        tc_rc=$?
        if [ -z "$reason" ] && [ $tc_rc -ne 0 ]; then
            reason="transport check: $tcheck"
        fi
        traffic=
        direct=
        tm=
        if [ "$tls" = dcx ] && [ "$emu" = 1 ]; then
            # the backend keeps no traffic counters (a ConnectX counts in
            # the NIC): every dcx lane must be on an emulated device
            if [ -z "$reason" ] && lane_desc "$log" | tr ' ' '\n' |
                   grep -o 'dcx/[^ )]*' | grep -qv '^dcx/mlx5_'; then
                reason="dcx lanes not on the emulated mlx5 devices: $(lane_desc "$log")"
            fi
            tm=$(tm_summary "$log")
            if [ -z "$reason" ] && [ "$emu_tm" != 0 ] &&
               [ "${UCX_DCX_TM_ENABLE:-try}" != n ] &&
               [ -n "$(prog_tm_required "${prog_src[$p]}")" ] &&
               ! [[ $tm =~ ^tm:\ matched\ [1-9] ]]; then
                reason="no device tag matching (${tm:-no tag matching counters})"
            fi
        elif [ "$tls" = dcx ]; then
            traffic=$(check_dcx_traffic "$log" "$np")
            if [ $? -ne 0 ] && [ -z "$reason" ]; then
                reason="dcx counters: $traffic"
            fi
            if [ -n "$(prog_direct_required "${prog_src[$p]}")" ]; then
                direct=$(direct_atomics "$log")
                if [ -z "$reason" ] && [ "$direct" -eq 0 ]; then
                    reason="no atomic executed by its initiator (dcx counters: 0 direct atomics)"
                fi
            fi
            tm=$(tm_summary "$log")
            if [ -z "$reason" ] && [ "${UCX_DCX_TM_ENABLE:-try}" != n ] &&
               [ -n "$(prog_tm_required "${prog_src[$p]}")" ] &&
               ! [[ $tm =~ ^tm:\ matched\ [1-9] ]]; then
                reason="no device tag matching (${tm:-no tag matching counters}; UCX_DCX_TM_ENABLE=${UCX_DCX_TM_ENABLE:-try})"
            fi
        fi
        pool=
        if [ -n "$stats" ]; then
            pool=$(check_pool "$stats" "$np" "$pol" "$ndci")
            if [ $? -ne 0 ] && [ -z "$reason" ]; then
                reason="DCI pool: $pool"
            fi
        fi
        nerr=$(grep -cE 'UCX +ERROR' "$log")
        if [ -z "$reason" ] && [ "$strict" = 1 ] && [ "$nerr" -gt 0 ]; then
            reason="$nerr UCX error line(s): $(grep -m1 -E 'UCX +ERROR' "$log" |
                sed -E 's/^.*UCX +ERROR +//')"
        fi
        notes=$(grep -h '^NOTE ' "$log" | sort -u | sed 's/^NOTE //' | paste -sd';')

        lanes=$(lane_desc "$log")
        label=$(printf '%-20s np=%s tls=%s' "$kind/$name" "$np" "$tls")
        [ "$pol" = - ] || label="$label policy=$pol"
        if [ -z "$reason" ]; then
            passed=$((passed + 1))
            line="PASS $label ${dt}s  lanes: $lanes"
            [ -z "$traffic" ] ||
                line="$line  dcx: $(echo "$traffic" | awk '{printf "%d packets, %.1f MB", $1, $2 / 1e6}')"
            [ -z "$direct" ] || line="$line, $direct atomics by initiators"
            [ -z "$tm" ] || line="$line  $tm"
            [ -z "$pool" ] || line="$line  pool: $pool"
            [ "$nerr" -eq 0 ] || line="$line  [note: $nerr 'UCX  ERROR' line(s), see $log]"
            [ -z "$notes" ] || line="$line  [note: $notes]"
            echo "$line"
        else
            failed=$((failed + 1))
            keep=1
            echo "FAIL $label ${dt}s  $reason  (log: $log)"
            # the first UCX warnings/errors usually say why, then the tail
            grep -E 'UCX +(WARN|ERROR)' "$log" | head -n 4 | sed 's/^/   | /'
            grep -v -E 'UCX +(INFO|DIAG|WARN|ERROR)' "$log" | tail -n 8 | sed 's/^/   | /'
        fi
      done
    done
done

echo "# total run time $((SECONDS - t_all)) s"
[ $keep -eq 1 ] || rm -rf "$bdir"
if [ $((passed + failed)) -eq 0 ]; then
    echo "no program selected (DCX_TEST_ONLY='$only' DCX_TEST_SKIP='$skip')"
    failed=1
fi
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
