#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Small one-sided operations, paired A/B: 8-byte ucx_perftest put_lat,
# put_bw, get (bcopy and zcopy) over dcx for each build given, with posix
# run in the same round, the ucx_perftest server pinned to one CPU and the
# client to another, and the builds taking turns round by round (so that a
# change of load or of the machine's placement hits all alike).
#
#   bench/small-onesided.sh [-r ROUNDS] [-n ITERS] [-c "SRV CLI"]
#                           [-t "TEST[:DATA] ..."] [-s SIZE] BUILD_DIR...
#
#   -r ROUNDS   rounds (default 5)
#   -n ITERS    ucx_perftest iterations per run (default 50000)
#   -c "S C"    CPUs of the server and the client (default "0 1")
#   -t TESTS    default "put_lat put_bw get:bcopy get:zcopy"
#   -s SIZE     message size (default 8)
#
# Prints per test and transport the median over the rounds of the typical
# (p50) latency, the overall (mean) latency and the overall message rate,
# with each build's ratio to posix, then each build's soft-device counters
# per 10 000 operations, summed over the rounds: the client's (direct
# writes and reads, those through a mapping, packets sent, futex wakes,
# locked polls) and the server's (packets received, helper passes).  The
# counters come from bench/soft_stats_shim.c, compiled here and preloaded
# before each build's libuct_dcx.so.

set -u
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
rounds=5
iters=50000
cpus="0 1"
tests="put_lat put_bw get:bcopy get:zcopy"
size=8

while getopts "r:n:c:t:s:h" opt; do
    case $opt in
    r) rounds=$OPTARG ;;
    n) iters=$OPTARG ;;
    c) cpus=$OPTARG ;;
    t) tests=$OPTARG ;;
    s) size=$OPTARG ;;
    h) sed -n '3,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "small-onesided.sh: give at least one build dir" >&2; exit 2; }
read -r scpu ccpu <<<"$cpus"

builds=()
for b in "$@"; do
    [ -f "$b/.libs/libuct_dcx.so" ] || { echo "small-onesided.sh: no $b/.libs/libuct_dcx.so" >&2; exit 2; }
    builds+=("$(cd "$b" && pwd)")
done

work=$(mktemp -d /tmp/dcx-small1s.XXXXXX) || exit 2
trap 'rm -rf "$work"' EXIT
cc -shared -fPIC -O2 -I"$bench_top/src/soft" -I"$bench_top/src/common" \
   -o "$work/shim.so" "$here/soft_stats_shim.c" -ldl || exit 2

# name of a transport for the tables: posix, or a build's directory with
# its parent's name
bname() {
    local d=$1
    if [ "$d" = posix ]; then
        echo posix
    else
        echo "$(basename "$(dirname "$d")")/$(basename "$d")"
    fi
}

# one run: prints "p50 overall_lat overall_rate"; counters to $work/stats.
# A pair whose server could not listen on its random port (one in the
# ~300 runs of a long table met a port still held by an earlier pair)
# or whose client found nobody listening is run again on another port,
# up to 3 times; any other failure prints n/a.
run_one() {   # transport(posix|build dir) test data key
    local tl=$1 test=$2 data=$3 key=$4 port fab srv cli out envs args try
    for try in 1 2 3; do
        port=$((32000 + RANDOM % 8000))
        fab=small1s$$-$port
        if [ "$tl" = posix ]; then
            envs=()
            args=(-x posix -d memory)
        else
            envs=(LD_PRELOAD="$work/shim.so:$tl/.libs/libuct_dcx.so"
                  UCX_DCX_SOFT_DEVICES=1 UCX_DCX_SOFT_FABRIC="$fab"
                  DCX_BENCH_STATS_FILE="$work/stats.$key.$port")
            args=(-x dcx -d soft0:1)
        fi
        env "${envs[@]}" taskset -c "$scpu" ucx_perftest -p "$port" \
            >"$work/srv" 2>&1 &
        srv=$!
        sleep 0.3
        env "${envs[@]}" taskset -c "$ccpu" ucx_perftest 127.0.0.1 \
            -p "$port" -t "$test" "${args[@]}" ${data:+-D "$data"} \
            -s "$size" -n "$iters" >"$work/out" 2>&1 &
        cli=$!
        wait "$cli"
        wait "$srv"
        out=$(awk '/^Final:/ { print $3, $5, $9 }' "$work/out")
        if [ -z "$out" ] && [ "$try" -lt 3 ] &&
            { grep -q "bind() failed" "$work/srv" ||
                  grep -q "connect() failed" "$work/out"; }; then
            rm -f "$work/stats.$key.$port" # no run: its counters neither
            echo "small-onesided.sh: $test over $(bname "$tl"): port" \
                 "$port was taken, run again on another" >&2
            continue
        fi
        if [ -f "$work/stats.$key.$port" ]; then
            sed -n "s/^$cli /cli /p; s/^$srv /srv /p" \
                "$work/stats.$key.$port" >>"$work/counters.$key"
            rm -f "$work/stats.$key.$port"
        fi
        break
    done
    echo "${out:-n/a n/a n/a}"
}

for r in $(seq 1 "$rounds"); do
    for t in $tests; do
        test=${t%%:*}
        data=
        [ "$t" != "$test" ] && data=${t#*:}
        for i in "${!builds[@]}" posix; do
            if [ "$i" = posix ]; then tl=posix; else tl=${builds[$i]}; fi
            res=$(run_one "$tl" "$test" "$data" "$t.$i")
            echo "$t $i $res" >>"$work/results"
            echo "round $r $t $(bname "$tl"): $res" >&2
        done
    done
done

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo
echo "ucx_perftest, ${size} B, $rounds rounds, $iters iterations, server cpu $scpu, client cpu $ccpu (medians)"
echo
printf "| %-10s | %-22s | %9s | %9s | %12s | %8s | %8s |\n" test transport "p50 us" "mean us" "msg/s" "p50/px" "rate/px"
printf "|%s|%s|%s|%s|%s|%s|%s|\n" ------------ ------------------------ ----------- ----------- -------------- ---------- ----------
for t in $tests; do
    get() { awk -v t="$t" -v i="$1" -v c="$2" '$1 == t && $2 == i && $(c) != "n/a" { print $(c) }' "$work/results" | median; }
    pp50=$(get posix 3)
    prate=$(get posix 5)
    for i in "${!builds[@]}" posix; do
        p50=$(get "$i" 3); mean=$(get "$i" 4); rate=$(get "$i" 5)
        if [ "$i" = posix ]; then name=posix; else name=$(bname "${builds[$i]}"); fi
        r1=$(awk -v a="$p50" -v b="$pp50" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "n/a" }')
        r2=$(awk -v a="$rate" -v b="$prate" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.4f", a / b; else print "n/a" }')
        printf "| %-10s | %-22s | %9s | %9s | %12s | %8s | %8s |\n" "$t" "$name" "$p50" "$mean" "$rate" "$r1" "$r2"
    done
done

echo
echo "soft-device counters per 10 000 operations (sum over the rounds)"
for t in $tests; do
    for i in "${!builds[@]}"; do
        f=$work/counters.$t.$i
        [ -f "$f" ] || continue
        for side in cli srv; do
            awk -v side="$side" -v ops=$((iters * rounds)) -v t="$t" \
                -v b="$(bname "${builds[$i]}")" '
                $1 == side { for (k = 2; k <= NF; ++k) { split($k, kv, "="); s[kv[1]] += kv[2]; o[k] = kv[1] } n = NF }
                END {
                    if (n == 0) exit
                    line = sprintf("%-10s %-22s %s:", t, b, side)
                    for (k = 2; k <= n; ++k) {
                        v = s[o[k]] * 10000 / ops
                        if (v != 0) line = line sprintf(" %s %.4g", o[k], v)
                    }
                    print line
                }' "$f"
        done
    done
done
