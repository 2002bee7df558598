#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The DC curve: message rate and 8-byte latency as the number of
# destinations (endpoints, round-robin over up to 16 receiving interfaces)
# grows, for every DCI pool policy and pool size of dcx on the soft device,
# side by side in one run with posix (UCX's shared-memory transport) as the
# reference, and the heap each endpoint takes. Builds bench/dc_curve.c
# against the installed UCX; runs every configuration REPEATS times,
# alternating configurations run by run, and prints the median of each
# figure with its spread (min-max) as three tables.
#
# Usage: bench/dc-curve.sh [-l LIB] [-r REPEATS] [-n "1 16 256 4096"]
#                          [-p "dcs dcs_quota rand hybrid"] [-d "2 8 32"]
# (-p streams: the pool size is the streams of its one DCI)
#
set -u

lib="${DCX_LIB:-}"
reps=3
counts="1 16 256 4096"
policies="dcs dcs_quota rand hybrid"
pools="2 8 32"
while getopts "l:r:n:p:d:h" opt; do
    case $opt in
    l) lib=$OPTARG ;;
    r) reps=$OPTARG ;;
    n) counts=$OPTARG ;;
    p) policies=$OPTARG ;;
    d) pools=$OPTARG ;;
    *) sed -n '3,17p' "$0"; exit 2 ;;
    esac
done

. "$(dirname "$0")/lib.sh"
top=$bench_top
lib=$(bench_find_lib dc-curve.sh "$lib") || exit 2

work=$(mktemp -d /tmp/dcx-dccurve.XXXXXX)
trap 'rm -rf "$work"' EXIT
if ! cc -O2 -Wall -o "$work/dc_curve" "$top/bench/dc_curve.c" -luct -lucs; then
    echo "dc-curve.sh: cannot build dc_curve (UCX development headers?)" >&2
    exit 2
fi

configs=(posix)
for pol in $policies; do
    for nd in $pools; do
        configs+=("$pol/$nd")
    done
done

run_config() {   # run_config CONFIG OUT
    local cfg=$1 out=$2
    if [ "$cfg" = posix ]; then
        "$work/dc_curve" posix posix memory $counts >"$out"
    else
        UCX_DCX_SOFT_DEVICES=1 UCX_DCX_SOFT_FABRIC=dcc$$ LD_PRELOAD="$lib" \
            UCX_DCX_DCI_POLICY=${cfg%/*} UCX_DCX_NUM_DCI=${cfg#*/} \
            UCX_DCX_NUM_DCI_STREAMS=${cfg#*/} \
            "$work/dc_curve" dcx soft0 soft0:1 $counts >"$out"
    fi
}

echo "# dc-curve: $reps runs per configuration, alternated; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$reps"); do
    for c in "${configs[@]}"; do
        if ! run_config "$c" "$work/run.${c/\//_}.$r"; then
            echo "dc-curve.sh: configuration $c failed (run $r)" >&2
            exit 1
        fi
    done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"

# stat CONFIG N FIELD -> "median min max" over the runs
stat() {
    cat "$work"/run."${1/\//_}".* |
        awk -v n="$2" -v f="$3" '$1 == "n" && $2 == n {
            for (i = 3; i < NF; i += 2) if ($i == f) print $(i + 1) }' |
        sort -g | awk '{ v[NR] = $1 } END {
            if (NR == 0) { print "- - -"; exit }
            m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            print m, v[1], v[NR] }'
}

table() {   # table TITLE FIELD FORMAT
    local title=$1 field=$2 fmt=$3 c n
    echo
    echo "$title"
    printf "%-14s" "policy/DCIs"
    for n in $counts; do printf " %20s" "$n eps"; done
    echo
    for c in "${configs[@]}"; do
        printf "%-14s" "$c"
        for n in $counts; do
            # shellcheck disable=SC2046
            printf " %20s" "$(printf "$fmt" $(stat "$c" "$n" "$field"))"
        done
        echo
    done
}

table "message rate, 8-byte am_short round-robin (M msgs/s, median [min-max])" \
    rate_mps "%.3f [%.2f-%.2f]"
table "latency, one 8-byte am_short at a time, send to handler (us, median of medians [min-max])" \
    lat_us "%.2f [%.2f-%.2f]"
table "heap per endpoint (B; the first endpoints to a receiver also pay for its address, rand its DCI)" \
    heap_per_ep "%.0f [%.0f-%.0f]"
