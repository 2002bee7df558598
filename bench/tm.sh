#!/bin/bash
#
# Tag-matching offload on versus off, side by side: UCP tag_bw over
# UCX_TLS=dcx,self (ucx_perftest, receives pre-posted by the perftest loop),
# eager 1-64 KiB and rendezvous 256 KiB-16 MiB, bandwidth and the on/off
# ratio.  "on" is UCX_DCX_TM_ENABLE=y with UCP's offload thresholds lowered
# (UCX_TM_THRESH=1, UCX_TM_FORCE_THRESH=1); "off" is UCX_DCX_TM_ENABLE=n.
#
#   bench/tm.sh [-n ITERS] [-l path/to/libuct_dcx.so]
#
# Not measured here yet: a receiver computing between polls (ucx_perftest
# polls continuously); see docs/tag-matching.md.
#
set -u

iters=${DCX_BENCH_ITERS:-500}
lib="${DCX_LIB:-}"
while getopts "n:l:h" opt; do
    case $opt in
    n) iters=$OPTARG ;;
    l) lib=$OPTARG ;;
    *) sed -n '2,13p' "$0"; exit 2 ;;
    esac
done

top=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "$lib" ]; then
    for cand in "$top"/build/.libs/libuct_dcx.so "$top"/build*/.libs/libuct_dcx.so; do
        if [ -f "$cand" ] && ! ldd "$cand" 2>/dev/null | grep -q libasan; then
            lib=$cand
            break
        fi
    done
fi
if [ -z "$lib" ] || [ ! -f "$lib" ]; then
    echo "tm.sh: libuct_dcx.so not found; build first or pass -l" >&2
    exit 2
fi

port=$(( 30000 + ($$ % 20000) ))
logdir=$(mktemp -d /tmp/dcx-tm-bench.XXXXXX)

# prints the overall bandwidth (MB/s) of one tag_bw run, or "-"
run() {
    local mode=$1 size=$2 n=$3 tag=$4 envs
    if [ "$mode" = on ]; then
        envs="UCX_DCX_TM_ENABLE=y UCX_TM_THRESH=1 UCX_TM_FORCE_THRESH=1"
    else
        envs="UCX_DCX_TM_ENABLE=n"
    fi
    port=$((port + 1))
    local common=(UCX_DCX_SOFT_DEVICES=1 "UCX_DCX_SOFT_FABRIC=tmb$$-$tag"
                  UCX_TLS=dcx,self LD_PRELOAD="$lib" $envs)
    env "${common[@]}" timeout 120 ucx_perftest -t tag_bw -s "$size" \
        -n "$n" -w 50 -p $port >"$logdir/$tag.server" 2>&1 &
    local srv=$! i ok=1
    for i in $(seq 1 50); do
        sleep 0.1
        if env "${common[@]}" timeout 120 ucx_perftest localhost -t tag_bw \
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

printf "%-10s %12s %12s %8s\n" "size" "off MB/s" "on MB/s" "on/off"
for size in 1024 4096 16384 65536 262144 1048576 4194304 16777216; do
    n=$iters
    [ "$size" -ge 1048576 ] && n=$(( iters / 5 > 20 ? iters / 5 : 20 ))
    off=$(run off $size $n off$size)
    on=$(run on $size $n on$size)
    ratio=$(awk -v a="$on" -v b="$off" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }')
    printf "%-10s %12s %12s %8s\n" "$size" "$off" "$on" "$ratio"
done
rm -rf "$logdir"
