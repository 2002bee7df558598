#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Tag-matching offload on versus off, side by side: UCP tag_bw over
# UCX_TLS=dcx,self (ucx_perftest: its receiver posts one receive at a time,
# so most eager messages arrive unexpected), eager 1-64 KiB and rendezvous
# 256 KiB-16 MiB, bandwidth and the on/off ratio.  "on" is
# UCX_DCX_TM_ENABLE=y with UCP's offload thresholds lowered
# (UCX_TM_THRESH=1, UCX_TM_FORCE_THRESH=1); "off" is UCX_DCX_TM_ENABLE=n.
# With -D, "on" keeps UCP's own thresholds (UCX_TM_THRESH 1 KiB,
# UCX_TM_FORCE_THRESH 8 KiB), as a user runs it.  The two differ where
# most messages arrive unexpected (this receiver): forced, every receive
# first posts to the device each receive UCP holds in software, many of
# which are then cancelled (dcx-stat: tm.posted, tm.cancels); by default,
# below 8 KiB UCP posts hardly any (bench/README.md, "tm.sh").
#
# With -W WINDOW, eager bandwidth with WINDOW receives posted before the
# sender sends (bench/tm_overlap.c -W, as an MPI program's window of
# MPI_Irecv): every message arrives expected, which offload places in the
# user's buffer; median MB/s of ITERS rounds (default 51), off and on.
#
# Then rendezvous with a receiver that computes (bench/tm_overlap.c, built
# here with cc): the receiver posts a receive of 256 KiB-16 MiB, computes
# C us in 50 us slices with one ucp_worker_progress between slices, then
# polls to completion; median time from post to completion, offload off
# and on, and their ratio (above 1: offload completes sooner).
#
#   bench/tm.sh [-n ITERS] [-r REPS] [-l path/to/libuct_dcx.so] [-E] [-O]
#               [-S "SIZES"] [-W WINDOW] [-D] [-P] [-e]
#     -e  over dcx's mlx5 backend on the emulated ConnectX (mlx5_0, the
#         environment of the module's build's "dcx-run --mlx5-emu"), whose
#         tag matching is the DEVX XRQ the backend makes; without -e, the
#         soft device.  The emulation's figures say what the backend does,
#         not what a ConnectX would: its device is the soft device behind
#         an engine thread
#     -E  only the eager/bandwidth table   -O  only the overlap table
#     -D  "on" with UCP's default offload thresholds (see above)
#     -W  only the table of receives posted first (its sizes: -S, default
#         1024 4096 16384 65536)
#     -S  the bandwidth table's sizes (default 1024 4096 16384 65536 262144
#         1048576 4194304 16777216)
#     -r  runs per cell, off and on taking turns (off, on, off, ...); the
#         median is shown (default 1; DCX_BENCH_REPS)
#     -P  pin tag_bw's server to CPU 0 and its client to CPU 1 (taskset),
#         as perftest.sh -P does: on a quiet machine, unpinned pairs that
#         the scheduler moves between the cores vary run to run by more
#         than the difference measured (DCX_BENCH_PIN=1)
#
set -u

iters=${DCX_BENCH_ITERS:-500}
lib="${DCX_LIB:-}"
do_bw=1
do_overlap=1
reps=${DCX_BENCH_REPS:-1}
sizes="1024 4096 16384 65536 262144 1048576 4194304 16777216"
sizes_set=0
iters_set=${DCX_BENCH_ITERS:+1}
window=0
pin=${DCX_BENCH_PIN:-0}
on_envs="UCX_DCX_TM_ENABLE=y UCX_TM_THRESH=1 UCX_TM_FORCE_THRESH=1"
emu=0
while getopts "n:r:l:S:W:EODPeh" opt; do
    case $opt in
    n) iters=$OPTARG; iters_set=1 ;;
    r) reps=$OPTARG ;;
    l) lib=$OPTARG ;;
    S) sizes=$OPTARG; sizes_set=1 ;;
    E) do_overlap=0 ;;
    O) do_bw=0 ;;
    W) window=$OPTARG; do_bw=0; do_overlap=0 ;;
    D) on_envs="UCX_DCX_TM_ENABLE=y" ;;
    P) pin=1 ;;
    e) emu=1 ;;
    *) sed -n '3,47p' "$0"; exit 2 ;;
    esac
done
[[ "$window" =~ ^[0-9]+$ ]] && [ "$window" -le 1024 ] ||
    { echo "tm.sh: bad -W '$window' (1..1024)" >&2; exit 2; }
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || { echo "tm.sh: bad -r '$reps'" >&2; exit 2; }

# median of the numbers on stdin ("-" if none)
median() {
    grep -E '^[0-9.]+$' | sort -n |
        awk '{ v[NR] = $1 } END { if (NR == 0) print "-";
             else if (NR % 2) print v[(NR + 1) / 2];
             else printf "%.0f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

. "$(dirname "$0")/lib.sh"
top=$bench_top
lib=$(bench_find_lib tm.sh "$lib") || exit 2

bench_pin tm.sh "$pin" || exit 2

# dev_env FABRIC: the device's variables, one NAME=value a line: a soft
# device on FABRIC, or (-e) the emulated ConnectX on an emulated FABRIC
wrapper=$(dirname "$lib")/../contrib/dcx-run
dev_env() {
    bench_dev_env "$emu" "$wrapper" "$lib" "$1"
}
if [ $emu -eq 1 ] && { [ ! -x "$wrapper" ] || ! dev_env probe >/dev/null; }; then
    echo "tm.sh: -e needs the dcx-run of the module's build ($wrapper)" >&2
    exit 2
fi
# the emulation's table of a fabric outlives its processes
fabrics=()
trap '[ $emu -eq 0 ] || for f in ${fabrics[@]+"${fabrics[@]}"}; do
          rm -f "/dev/shm/dcx-emu.$(id -u).${f:0:32}"; done' EXIT

port=$(( 30000 + ($$ % 20000) ))
logdir=$(mktemp -d /tmp/dcx-tm-bench.XXXXXX)

# prints the overall bandwidth (MB/s) of one tag_bw run, or "-"
run() {
    local mode=$1 size=$2 n=$3 tag=$4 envs
    if [ "$mode" = on ]; then
        envs=$on_envs
    else
        envs="UCX_DCX_TM_ENABLE=n"
    fi
    port=$((port + 1))
    local devenv common
    fabrics+=("tmb$$-$tag")
    mapfile -t devenv < <(dev_env "tmb$$-$tag")
    common=("${devenv[@]}" UCX_TLS=dcx,self LD_PRELOAD="$lib" $envs)
    env "${common[@]}" timeout 120 ${srv_pin[@]+"${srv_pin[@]}"} \
        ucx_perftest -t tag_bw -s "$size" -n "$n" -w 50 -p $port \
        >"$logdir/$tag.server" 2>&1 &
    local srv=$! i ok=1
    for i in $(seq 1 50); do
        sleep 0.1
        if env "${common[@]}" timeout 120 ${cli_pin[@]+"${cli_pin[@]}"} \
               ucx_perftest localhost -t tag_bw \
               -s "$size" -n "$n" -w 50 -p $port >"$logdir/$tag.client" 2>&1; then
            ok=0
            break
        fi
        grep -q "connect\|Connection refused" "$logdir/$tag.client" || break
    done
    wait $srv
    if [ $ok -eq 0 ]; then
        awk '/^Final:/ { print $7 }' "$logdir/$tag.client"
    else
        echo "-"
    fi
}

# one run of tm_overlap (ARGS...) in MODE, appended to $logdir/NAME.MODE
overlap() {
    local name=$1 mode=$2 envs
    shift 2
    if [ "$mode" = on ]; then
        envs=$on_envs
    else
        envs="UCX_DCX_TM_ENABLE=n"
    fi
    local devenv
    fabrics+=("tmo$$-$mode")
    mapfile -t devenv < <(dev_env "tmo$$-$mode")
    env "${devenv[@]}" UCX_TLS=dcx,self LD_PRELOAD="$lib" $envs \
        timeout 300 "$logdir/tm_overlap" "$@" >>"$logdir/$name.$mode" 2>&1
}

# one line "A-B median" per cell (first two columns A B, figure in the
# third) of a mode's runs in $logdir/NAME.MODE
cells() {
    local f=$logdir/$1.$2 k
    for k in $(grep -E '^[0-9]' "$f" | awk '{print $1"-"$2}' | sort -u); do
        echo "$k $(grep -E "^${k%-*} ${k#*-} " "$f" | awk '{print $3}' | median)"
    done
}

# the cells of both modes side by side, RATIO "off/on" or "on/off"
side_by_side() {
    local name=$1 ratio=$2
    join <(cells "$name" off | sort) <(cells "$name" on | sort) |
        tr '-' ' ' | sort -n -k1 -k2 |
        awk -v r="$ratio" '{ a = (r == "off/on") ? $3 : $4;
                             b = (r == "off/on") ? $4 : $3;
                             printf "%-10s %8s %10s %10s %8.2f\n", $1, $2,
                                    $3, $4, (b > 0) ? a / b : 0 }'
    grep -q '^[0-9]' "$logdir/$name.on" || { echo "on:"; cat "$logdir/$name.on"; }
    grep -q '^[0-9]' "$logdir/$name.off" || { echo "off:"; cat "$logdir/$name.off"; }
    echo
}

if [ $do_overlap -eq 1 ] || [ "$window" -gt 0 ]; then
    if ! cc -O2 -o "$logdir/tm_overlap" "$top/bench/tm_overlap.c" -lucp -lucs; then
        echo "tm.sh: cannot build tm_overlap" >&2
        do_overlap=0
        window=0
    fi
fi
if [ "$window" -gt 0 ]; then
    [ $sizes_set -eq 1 ] || sizes="1024 4096 16384 65536"
    rounds=51
    [ -n "$iters_set" ] && rounds=$iters
    for r in $(seq 1 "$reps"); do
        overlap window off -W "$window" -n "$rounds" -s "$sizes"
        overlap window on -W "$window" -n "$rounds" -s "$sizes"
    done
    echo "eager, $window receives posted before the sender sends: MB/s (median of $reps alternating runs, each the median of $rounds rounds)"
    printf "%-10s %8s %10s %10s %8s\n" "size" "window" "off MB/s" "on MB/s" "on/off"
    side_by_side window on/off
fi
if [ $do_overlap -eq 1 ]; then
    for r in $(seq 1 "$reps"); do
        overlap overlap off -n 5
        overlap overlap on -n 5
    done
    echo "rendezvous, receiver computing C us (50 us slices): median us from post to completion (median of $reps alternating runs of 5)"
    printf "%-10s %8s %10s %10s %8s\n" "size" "C us" "off us" "on us" "off/on"
    side_by_side overlap off/on
fi
[ $do_bw -eq 1 ] || { rm -rf "$logdir"; exit 0; }

where=soft0
[ $emu -eq 0 ] || where="mlx5_0 (the mlx5 backend on the emulated ConnectX)"
echo "tag_bw over dcx on $where, offload off and on (on: $on_envs): MB/s (median of $reps alternating runs)"
printf "%-10s %12s %12s %8s\n" "size" "off MB/s" "on MB/s" "on/off"
for size in $sizes; do
    [[ "$size" =~ ^[1-9][0-9]*$ ]] || { echo "tm.sh: bad size '$size'" >&2; exit 2; }
    n=$iters
    [ "$size" -ge 1048576 ] && n=$(( iters / 5 > 20 ? iters / 5 : 20 ))
    offs=() ons=()
    for r in $(seq 1 "$reps"); do
        offs+=("$(run off $size $n off$size)")
        ons+=("$(run on $size $n on$size)")
    done
    off=$(printf '%s\n' "${offs[@]}" | median)
    on=$(printf '%s\n' "${ons[@]}" | median)
    ratio=$(awk -v a="$on" -v b="$off" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }')
    printf "%-10s %12s %12s %8s\n" "$size" "$off" "$on" "$ratio"
done
rm -rf "$logdir"
