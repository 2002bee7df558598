#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# rdma-core's pingpong examples (ibverbs-utils) on the emulated ConnectX,
# between two processes: microseconds per iteration as each program prints
# it, polling and sleeping on completion events (-e) side by side, with
# events/polling; with -b, the same programs over a second build's
# emulation in the same run (the before of a change), taking turns.
#
#   bench/emu-pingpong.sh [-r RUNS] [-n ITERS] [-b BUILD] [-P] [BUILD_DIR]
#
#   -r RUNS     runs per cell, the cells taking turns; the median is shown
#               with [min-max] (default 5)
#   -n ITERS    iterations per run (default 2000)
#   -b BUILD    a second build tree whose contrib/dcx-run to compare with
#               (its column "before")
#   -P          pin the server to CPU 0 and the client to CPU 1; only on a
#               quiet machine
#   BUILD_DIR   the build tree measured (default: the first build*/)
#
# Programs: ibv_rc_pingpong, ibv_srq_pingpong and ibv_ud_pingpong with
# their default message sizes.  The event figures are what a program that
# sleeps between messages sees: the emulation's wake-up path (the soft
# device's helper serving what a peer sends, the completion firing the
# channel), not a ConnectX's interrupt path.

set -u
. "$(dirname "$0")/lib.sh"

runs=5
iters=2000
before=
pin=0
while getopts "r:n:b:P" o; do
    case $o in
    r) runs=$OPTARG ;;
    n) iters=$OPTARG ;;
    b) before=$OPTARG ;;
    P) pin=1 ;;
    *) sed -n '3,20p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
build=$(bench_find_build emu-pingpong.sh "${1:-}") || exit 2
bench_pin emu-pingpong.sh "$pin" || exit 2
command -v ibv_rc_pingpong > /dev/null ||
    { echo "emu-pingpong.sh: ibverbs-utils not installed" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# one run: prints the client's usec/iter, or "fail"
one() {   # one BUILD PROGRAM [ARGS...]
    local b=$1 t=$2 port=$((20000 + RANDOM % 10000)) st
    shift 2
    "$b/contrib/dcx-run" --mlx5-emu --fabric "pp$$" --uverbs-ns \
        "${srv_pin[@]}" timeout 60 "$t" -d mlx5_0 -n "$iters" -p "$port" \
        "$@" > "$work/srv" 2>&1 &
    sleep 0.5
    "$b/contrib/dcx-run" --mlx5-emu --fabric "pp$$" --uverbs-ns \
        "${cli_pin[@]}" timeout 60 "$t" -d mlx5_0 -n "$iters" -p "$port" \
        "$@" localhost > "$work/cli" 2>&1
    st=$?
    wait $! || st=1
    if [ "$st" -ne 0 ]; then
        echo fail
        return
    fi
    sed -n 's/.* = \([0-9.]*\) usec\/iter/\1/p' "$work/cli" | tail -1
}

# median [min-max] of the numbers on stdin
stat() {
    sort -n | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "fail"; exit }
        printf "%.1f [%.1f-%.1f]", v[int((NR + 1) / 2)], v[1], v[NR] }'
}

builds=("$build")
[ -n "$before" ] && builds=("$before" "$build")
load0=$(cut -d' ' -f1-3 /proc/loadavg)
declare -A res
for r in $(seq "$runs"); do
    for t in ibv_rc_pingpong ibv_srq_pingpong ibv_ud_pingpong; do
        for mode in poll events; do
            for b in "${builds[@]}"; do
                if [ "$mode" = events ]; then
                    v=$(one "$b" "$t" -e)
                else
                    v=$(one "$b" "$t")
                fi
                [ "$v" = fail ] || res["$b $t $mode"]+="$v "
            done
        done
    done
done

echo "usec per iteration, median [min-max] of $runs runs, $iters iterations"
echo "(load at start $load0, at end $(cut -d' ' -f1-3 /proc/loadavg))"
for b in "${builds[@]}"; do
    tag=after
    [ "$b" = "$before" ] && tag=before
    [ -z "$before" ] && tag=$(basename "$b")
    printf '\n%s (%s)\n' "$tag" "$b"
    printf '%-18s %-22s %-22s %s\n' program polling events events/polling
    for t in ibv_rc_pingpong ibv_srq_pingpong ibv_ud_pingpong; do
        p=$(tr ' ' '\n' <<< "${res["$b $t poll"]:-}" | grep . | stat)
        e=$(tr ' ' '\n' <<< "${res["$b $t events"]:-}" | grep . | stat)
        ratio=$(awk -v p="${p%% *}" -v e="${e%% *}" \
            'BEGIN { if (p > 0) printf "%.1f", e / p; else print "-" }')
        printf '%-18s %-22s %-22s %s\n' "$t" "$p" "$e" "$ratio"
    done
done
