#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# MPI benchmark over several UCX transports in one run, side by side.
#
#   bench/mpi/run.sh [-t "dcx posix tcp"] [-s SCALE] [BUILD_DIR]
#
#   -t, DCX_BENCH_TLS    transports to compare (default "dcx posix tcp").
#                        dcx is skipped, with a note, when the dcx-run
#                        wrapper or the module is not available.
#   -s, DCX_BENCH_SCALE  multiplies the iteration counts (default 1)
#   DCX_RUN              dcx-run wrapper (default: from PATH, else
#                        <repo>/build/contrib/dcx-run)
#   DCX_BENCH_MAX        largest ping-pong message in bytes (default 4 MiB)
#
# Per transport: pingpong with 2 processes (latency = half round trip,
# bandwidth = windowed stream) and allreduce with 4 processes. Each run is
# checked like the tests (test/mpi/run.sh): exit status, and UCX's ep_cfg
# info lines must name the transport asked for and nothing but it and self.
#
# Prints one table per metric with a column per transport, and ratio
# columns REF/X where REF is the first transport that ran (dcx by default):
# for latency and allreduce time a ratio below 1 means REF is faster, for
# bandwidth a ratio above 1 means REF is faster.

set -u
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

tls_list=${DCX_BENCH_TLS:-dcx posix tcp}
scale=${DCX_BENCH_SCALE:-1}
max=${DCX_BENCH_MAX:-4194304}

while getopts "t:s:h" opt; do
    case $opt in
    t) tls_list=$OPTARG ;;
    s) scale=$OPTARG ;;
    h) sed -n '3,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))

if [ $# -ge 1 ]; then
    bdir=$1; mkdir -p "$bdir" || exit 1; bdir=$(cd "$bdir" && pwd)
else
    bdir=$(mktemp -d /tmp/dcx-mpibench.XXXXXX) || exit 1
fi
mkdir -p "$bdir/logs"

for src in pingpong allreduce; do
    mpicc -O2 -Wall -o "$bdir/$src" "$here/$src.c" >"$bdir/logs/build_$src.log" 2>&1 || {
        echo "bench: building $src failed:"; cat "$bdir/logs/build_$src.log"; exit 1; }
done

# Same transport check as test/mpi/run.sh.
lane_tls() {
    grep -E 'UCX +INFO +ep_cfg\[[0-9]+\]:' "$1" |
        sed -E 's/.*ep_cfg\[[0-9]+\]://' |
        grep -oE '[A-Za-z0-9_]+/[^ )]+' | cut -d/ -f1 | sort -u
}
check_transport() {   # check_transport LOG TLS
    local seen other
    seen=$(lane_tls "$1" | paste -sd' ')
    [ -n "$seen" ] || { echo "no ep_cfg lines"; return 1; }
    lane_tls "$1" | grep -qx -- "$2" || { echo "'$2' not used (lanes: $seen)"; return 1; }
    other=$(lane_tls "$1" | grep -vx -e "$2" -e self | paste -sd' ')
    [ -z "$other" ] || { echo "other transports used: $other"; return 1; }
}

ran=()
t_start=$SECONDS
for tls in $tls_list; do
    xa=(-x "UCX_TLS=$tls,self")
    case $tls in
    tcp) xa+=(-x UCX_NET_DEVICES=lo) ;;
    dcx)
        dcx_run=${DCX_RUN:-$(command -v dcx-run || echo "$top/build/contrib/dcx-run")}
        if [ ! -x "$dcx_run" ]; then
            echo "# NOTE: dcx skipped: wrapper $dcx_run not found (set DCX_RUN)"
            continue
        fi
        if ! preload=$("$dcx_run" --print-preload 2>"$bdir/logs/dcx-run.err") || [ -z "$preload" ]; then
            echo "# NOTE: dcx skipped: '$dcx_run --print-preload' failed: $(head -1 "$bdir/logs/dcx-run.err")"
            continue
        fi
        xa+=(-x "LD_PRELOAD=$preload" -x UCX_DCX_SOFT_DEVICES=1
             -x "UCX_DCX_SOFT_FABRIC=mpibench-$$")
        ;;
    esac
    common=(--allow-run-as-root --oversubscribe
            --mca pml ucx --mca osc ucx
            --mca pml_ucx_tls any --mca pml_ucx_devices any
            --mca mpi_yield_when_idle 1 "${xa[@]}" -x UCX_LOG_LEVEL=info)
    ok=1
    : >"$bdir/$tls.results"
    for run in "pingpong 2 $max $scale" "allreduce 4 $scale"; do
        set -- $run
        prog=$1 np=$2; shift 2
        log=$bdir/logs/${tls}_$prog.log
        t0=$SECONDS
        timeout -k 10 150 mpirun "${common[@]}" -np "$np" "$bdir/$prog" "$@" >"$log" 2>&1 </dev/null
        rc=$?
        why=
        [ $rc -eq 0 ] || why="exit status $rc $(grep -m1 '^FAIL' "$log")"
        [ -n "$why" ] || why=$(check_transport "$log" "$tls") || true
        if [ -n "$why" ]; then
            echo "# $tls $prog -np $np: FAILED: $why (log $log)"
            ok=0
        else
            echo "# $tls $prog -np $np: ok ($((SECONDS - t0)) s, lanes: $(lane_tls "$log" | paste -sd' '))"
            grep '^RESULT ' "$log" >>"$bdir/$tls.results"
        fi
    done
    [ $ok -eq 0 ] || ran+=("$tls")
done
echo "# total benchmark time $((SECONDS - t_start)) s; raw results and logs in $bdir"

[ ${#ran[@]} -gt 0 ] || { echo "bench: no transport completed"; exit 1; }

# ---- tables ----------------------------------------------------------------
table() {   # table METRIC TITLE FORMAT
    local metric=$1 title=$2 fmt=$3 t
    echo
    echo "$title"
    for t in "${ran[@]}"; do
        awk -v t="$t" -v m="$metric" '$2 == m { print t, $3, $4 }' "$bdir/$t.results"
    done | awk -v order="${ran[*]}" -v fmt="$fmt" '
        function hsize(b) {
            if (b >= 1048576 && b % 1048576 == 0) return (b / 1048576) "M"
            if (b >= 1024 && b % 1024 == 0) return (b / 1024) "K"
            return b
        }
        { v[$1, $2] = $3; if (!($2 in seen)) { seen[$2] = 1; sizes[++ns] = $2 } }
        END {
            nt = split(order, ts, " ")
            line = sprintf("%8s", "size")
            for (i = 1; i <= nt; i++) line = line sprintf(" %11s", ts[i])
            for (i = 2; i <= nt; i++) line = line sprintf(" %11s", ts[1] "/" ts[i])
            print line
            # sizes come in increasing order from the programs; sort anyway
            for (i = 1; i <= ns; i++) for (j = i + 1; j <= ns; j++)
                if (sizes[j] + 0 < sizes[i] + 0) { x = sizes[i]; sizes[i] = sizes[j]; sizes[j] = x }
            for (k = 1; k <= ns; k++) {
                s = sizes[k]
                line = sprintf("%8s", hsize(s))
                for (i = 1; i <= nt; i++)
                    line = line (((ts[i], s) in v) ? sprintf(" %11" fmt, v[ts[i], s]) : sprintf(" %11s", "-"))
                for (i = 2; i <= nt; i++)
                    if (((ts[1], s) in v) && ((ts[i], s) in v) && v[ts[i], s] > 0)
                        line = line sprintf(" %11.2f", v[ts[1], s] / v[ts[i], s])
                    else
                        line = line sprintf(" %11s", "-")
                print line
            }
        }'
}

table latency_us "Ping-pong latency, 2 processes (us, half round trip; lower is better)" .2f
table bandwidth_MBps "Stream bandwidth, 2 processes, window 16 (MB/s; higher is better)" .1f
table allreduce_us "MPI_Allreduce SUM of doubles, 4 processes (us per call, slowest rank; lower is better)" .1f
