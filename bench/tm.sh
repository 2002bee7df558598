#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Tag-matching offload on versus off, side by side: UCP tag_bw over
# UCX_TLS=dcx,self (ucx_perftest: its receiver posts one receive at a time,
# so most eager messages arrive unexpected), eager 1-64 KiB and rendezvous
# 256 KiB-16 MiB, bandwidth and the ratios to "off".  Three modes take
# turns in each cell:
#   off     UCX_DCX_TM_ENABLE=n
#   on      UCX_DCX_TM_ENABLE=y with UCP's own thresholds, what a user gets:
#           UCP posts a receive to the device from the larger of
#           UCX_TM_THRESH and the interface's tag.recv.min_recv on (0 by
#           default; UCX_DCX_TM_MIN_RECV=auto: the device's model), and
#           the tag lane's eager maximum is the model's (docs/tag-matching.md)
#   forced  UCX_DCX_TM_ENABLE=y UCX_TM_THRESH=1 UCX_TM_FORCE_THRESH=1:
#           every receive is posted first, many then cancelled as their
#           messages were already there (dcx-stat: tm.posted, tm.cancels)
# Without -n, a run sends 4 GiB (1000 to 1000000 messages): shorter runs
# of the small sizes swing by 2x between runs.
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
#               [-S "SIZES"] [-W WINDOW] [-D|-F] [-X "ENVS"] [-P] [-e]
#     -e  over dcx's mlx5 backend on the emulated ConnectX (mlx5_0, the
#         environment of the module's build's "dcx-run --mlx5-emu"), whose
#         tag matching is the DEVX XRQ the backend makes; without -e, the
#         soft device.  The emulation's figures say what the backend does,
#         not what a ConnectX would: its device is the soft device behind
#         an engine thread
#     -E  only the eager/bandwidth table   -O  only the overlap table
#     -D  only "on" in the bandwidth table; the other tables run "on"
#         with UCP's default thresholds (without -D: forced)
#     -F  only "forced" in the bandwidth table
#     -X  "NAME=value ...": one more column in the bandwidth table, "extra",
#         UCX_DCX_TM_ENABLE=y with these variables (e.g. a former default,
#         for a before/after in one run)
#     -W  only the table of receives posted first (its sizes: -S, default
#         1024 4096 16384 65536)
#     -S  the bandwidth table's sizes (default 1024 4096 16384 65536 262144
#         1048576 4194304 16777216)
#     -r  runs per cell, the modes taking turns (off, on, forced, off,
#         ...); the median is shown (default 1; DCX_BENCH_REPS)
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
forced_envs="UCX_TM_THRESH=1 UCX_TM_FORCE_THRESH=1"
ovl_on=forced # the mode of "on" in the window and overlap tables
bw_modes=both
extra_envs=""
emu=0
while getopts "n:r:l:S:W:X:EODFPeh" opt; do
    case $opt in
    n) iters=$OPTARG; iters_set=1 ;;
    r) reps=$OPTARG ;;
    l) lib=$OPTARG ;;
    S) sizes=$OPTARG; sizes_set=1 ;;
    E) do_overlap=0 ;;
    O) do_bw=0 ;;
    W) window=$OPTARG; do_bw=0; do_overlap=0 ;;
    D) ovl_on=on; bw_modes=default ;;
    F) bw_modes=forced ;;
    X) extra_envs=$OPTARG ;;
    P) pin=1 ;;
    e) emu=1 ;;
    *) sed -n '3,56p' "$0"; exit 2 ;;
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

# bw_iters SIZE: messages of one tag_bw run: -n ITERS as given (a fifth of
# it from 1 MiB on), or else 4 GiB worth, 1000 to 1000000 of them, so that a
# run lasts long enough to be steady at every size
bw_iters() {
    local size=$1 n
    if [ -n "$iters_set" ]; then
        n=$iters
        [ "$size" -ge 1048576 ] && n=$(( iters / 5 > 20 ? iters / 5 : 20 ))
    else
        n=$(( 4294967296 / size ))
        [ $n -gt 1000000 ] && n=1000000
        [ $n -lt 1000 ] && n=1000
    fi
    echo $n
}

# mode_envs MODE: the variables of a mode (off, on, forced, extra)
mode_envs() {
    case $1 in
    on) echo "UCX_DCX_TM_ENABLE=y" ;;
    forced) echo "UCX_DCX_TM_ENABLE=y $forced_envs" ;;
    extra) echo "UCX_DCX_TM_ENABLE=y $extra_envs" ;;
    *) echo "UCX_DCX_TM_ENABLE=n" ;;
    esac
}

# prints the overall bandwidth (MB/s) of one tag_bw run, or "-"
run() {
    local mode=$1 size=$2 n=$3 tag=$4 envs
    envs=$(mode_envs "$mode")
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
        envs=$(mode_envs "$ovl_on")
    else
        envs=$(mode_envs off)
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
cols=()
[ "$bw_modes" = forced ] || cols+=(on)
[ "$bw_modes" = default ] || cols+=(forced)
[ -z "$extra_envs" ] || cols+=(extra)
echo "tag_bw over dcx on $where: MB/s (median of $reps alternating runs)"
echo "  off: $(mode_envs off)"
[ "$bw_modes" = forced ] || echo "  on: $(mode_envs on), UCP's own thresholds (what a user gets)"
[ "$bw_modes" = default ] || echo "  forced: $(mode_envs forced) (every receive posted)"
[ -z "$extra_envs" ] || echo "  extra: $(mode_envs extra)"
header=$(printf "%-10s %12s" "size" "off MB/s")
for c in "${cols[@]}"; do header+=$(printf " %12s" "$c MB/s"); done
for c in "${cols[@]}"; do header+=$(printf " %9s" "$c/off"); done
echo "$header"
for size in $sizes; do
    [[ "$size" =~ ^[1-9][0-9]*$ ]] || { echo "tm.sh: bad size '$size'" >&2; exit 2; }
    n=$(bw_iters "$size")
    declare -A cell=()
    for r in $(seq 1 "$reps"); do
        cell[off]+="$(run off $size $n off$size) "
        for c in "${cols[@]}"; do
            cell[$c]+="$(run $c $size $n $c$size) "
        done
    done
    off=$(printf '%s\n' ${cell[off]} | median)
    line=$(printf "%-10s %12s" "$size" "$off")
    ratios=""
    for c in "${cols[@]}"; do
        v=$(printf '%s\n' ${cell[$c]} | median)
        line+=$(printf " %12s" "$v")
        ratios+=$(awk -v a="$v" -v b="$off" 'BEGIN { if (a == "-" || b == "-" || b == 0) printf " %9s", "-"; else printf " %9.2f", a / b }')
    done
    echo "$line$ratios"
    unset cell
done
rm -rf "$logdir"
