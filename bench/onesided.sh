#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# One-sided bandwidth, dcx (soft device) next to posix, in one run:
# ucx_perftest put_bw and get at 1 MiB and 4 MiB, REPEAT runs alternating
# dcx / posix, then per figure the median MB/s of each transport, the
# ratio dcx/posix of the medians and the spread (max/min) of each.
#
# Usage: bench/onesided.sh [-r REPEAT] [-n ITERS] [-l path/to/libuct_dcx.so]
#   dcx:   -x dcx -d soft0:1, put_bw and get over zcopy (RDMA WRITE/READ);
#          ucx_perftest's buffers come from uct_iface_mem_alloc, which the
#          dcx md serves (memory peers map: one memcpy per operation, as
#          posix's segments)
#   posix: -x posix -d memory, put_bw and get over bcopy (what mm offers)
#   UCX_DCX_SOFT_DIRECT=n in the environment measures the responder path.
#
set -u

repeat=10
iters=300
lib="${DCX_LIB:-}"
while getopts "r:n:l:h" opt; do
    case $opt in
    r) repeat=$OPTARG ;;
    n) iters=$OPTARG ;;
    l) lib=$OPTARG ;;
    *) sed -n '3,17p' "$0"; exit 2 ;;
    esac
done

. "$(dirname "$0")/lib.sh"
lib=$(bench_find_lib onesided.sh "$lib") || exit 2

logdir=$(mktemp -d /tmp/dcx-onesided.XXXXXX)
port=$(( 21000 + ($$ % 20000) ))

# prints the client's overall MB/s, or nothing on failure
run_pair() {
    local tl=$1 test=$2 size=$3 tag=$4
    local args envs=()

    port=$((port + 1))
    if [ "$tl" = dcx ]; then
        args="-x dcx -d soft0:1 -t $test -D zcopy -s $size"
        envs=(UCX_DCX_SOFT_DEVICES=1 "UCX_DCX_SOFT_FABRIC=os$$-$tag"
              LD_PRELOAD="$lib")
    else
        args="-x posix -d memory -t $test -D bcopy -s $size"
    fi
    env "${envs[@]}" timeout 120 ucx_perftest $args -n "$iters" -w 20 \
        -p $port >"$logdir/$tag.server" 2>&1 &
    local srv=$! i
    for i in $(seq 1 50); do
        sleep 0.1
        if env "${envs[@]}" timeout 120 ucx_perftest localhost $args \
               -n "$iters" -w 20 -p $port >"$logdir/$tag.client" 2>&1; then
            break
        fi
        grep -q "connect\|Connection refused" "$logdir/$tag.client" || break
    done
    wait $srv
    # Final: iters typ avg overall (lat) ... bw-avg bw-overall ...
    awk '/^Final:/ { print $7 }' "$logdir/$tag.client"
}

stats() {   # median min max of the numbers on stdin
    sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "- - -"; exit }
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.0f %.0f %.0f\n", m, v[1], v[NR] }'
}

figures=("put_bw 1048576" "put_bw 4194304" "get 1048576" "get 4194304")
load0=$(cut -d' ' -f1-3 /proc/loadavg)
declare -A res
for r in $(seq 1 "$repeat"); do
    for f in "${figures[@]}"; do
        read -r test size <<<"$f"
        for tl in dcx posix; do
            v=$(run_pair $tl $test $size "$tl-$test-$size-$r")
            res["$tl $f"]+="${v:-} "
        done
    done
done

printf "%-16s %10s %10s %7s %12s %12s\n" figure "dcx MB/s" "posix MB/s" \
       ratio "dcx spread" "posix spread"
for f in "${figures[@]}"; do
    read -r dm dmin dmax <<<"$(tr ' ' '\n' <<<"${res["dcx $f"]}" | grep . | stats)"
    read -r pm pmin pmax <<<"$(tr ' ' '\n' <<<"${res["posix $f"]}" | grep . | stats)"
    ratio=$(awk -v a="$dm" -v b="$pm" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
    dsp=$(awk -v a="$dmax" -v b="$dmin" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')
    psp=$(awk -v a="$pmax" -v b="$pmin" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')
    read -r test size <<<"$f"
    printf "%-16s %10s %10s %7s %12s %12s\n" "$test $((size >> 20))M" \
           "$dm" "$pm" "$ratio" "$dsp" "$psp"
done
echo "runs: $repeat alternating, $iters iterations each; logs in $logdir"
echo "load average before: $load0, after: $(cut -d' ' -f1-3 /proc/loadavg)" \
     "($(nproc) cores; other work on the machine skews the figures)"
