#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Long soak of the dcx transport over the soft device: runs the multi-process
# stress test of gtest_uct (uct_dcx_stress: every worker sends verified active
# messages, puts read back by gets and fetch-and-adds to every other one, one
# worker is killed half-way) again and again, with more rounds and processes
# than the test command uses, under each DCI policy, and prints per run and in
# total the operations, losses, corruptions and live peers declared dead.
#
#   bench/soak.sh [-b BUILD_DIR] [-n RUNS] [-r ROUNDS] [-p PROCS]
#                 [-P "dcs dcs_quota rand hybrid"] [-t TIME_LIMIT_S]
#
# Exit status 0 when every run finished with nothing lost or corrupted.
# Not part of `make check`: it takes minutes and keeps both cores busy.
set -uo pipefail

build=$(cd "$(dirname "$0")/.." && pwd)/build
runs=3
rounds=2000
procs=4
policies="dcs dcs_quota rand hybrid"
limit=900

usage() { sed -n '3,14p' "$0" | sed 's/^# \{0,1\}//'; exit "$1"; }
while getopts "b:n:r:p:P:t:h" opt; do
    case $opt in
    b) build=$OPTARG ;;
    n) runs=$OPTARG ;;
    r) rounds=$OPTARG ;;
    p) procs=$OPTARG ;;
    P) policies=$OPTARG ;;
    t) limit=$OPTARG ;;
    h) usage 0 ;;
    *) usage 1 ;;
    esac
done

gtest=$build/test/gtest/uct/gtest_uct
if [ ! -x "$gtest" ]; then
    echo "soak.sh: $gtest not found (build with 'make check TESTS=' first)" >&2
    exit 1
fi

total_ops=0 total_loss=0 total_corrupt=0 total_dead=0 failed_runs=0
for ((run = 1; run <= runs; run++)); do
    for policy in $policies; do
        case $policy in
        dcs) idx=0 ;; dcs_quota) idx=1 ;; rand) idx=2 ;;
        *) echo "soak.sh: unknown policy $policy" >&2; exit 1 ;;
        esac
        out=$(DCX_STRESS_ROUNDS=$rounds DCX_STRESS_PROCS=$procs \
              DCX_STRESS_TIME_LIMIT=$limit \
              "$gtest" --gtest_filter="policy/uct_dcx_stress.peer_killed_mid_run/$idx" 2>&1)
        rc=$?
        line=$(grep '^stress:' <<<"$out" | tail -n 1)
        if [ -z "$line" ]; then
            echo "run $run $policy: no summary (exit $rc)"
            tail -n 20 <<<"$out" | sed 's/^/  | /'
            failed_runs=$((failed_runs + 1))
            continue
        fi
        echo "run $run $policy: ${line#stress: } (exit $rc)"
        read -r ops loss corrupt dead < <(sed -E \
            's/.* ([0-9]+) operations, ([0-9]+) losses, ([0-9]+) corruptions, ([0-9]+) live.*/\1 \2 \3 \4/' \
            <<<"$line")
        total_ops=$((total_ops + ops))
        total_loss=$((total_loss + loss))
        total_corrupt=$((total_corrupt + corrupt))
        total_dead=$((total_dead + dead))
        [ $rc -eq 0 ] || failed_runs=$((failed_runs + 1))
    done
done

echo "total: $total_ops operations, $total_loss losses, $total_corrupt" \
     "corruptions, $total_dead live peers declared dead, $failed_runs" \
     "failed runs"
[ $failed_runs -eq 0 ] && [ $total_loss -eq 0 ] && [ $total_corrupt -eq 0 ]
