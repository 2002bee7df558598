#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# OpenSHMEM fetch-add latency over dcx (the soft device) and posix in one
# run, side by side, for each place Open MPI can put the symmetric heap:
# per heap the dcx median, posix's median and dcx/posix.  posix runs with
# its default heap (sshmem ucx) only: with the heap in SysV segments
# (sshmem sysv), UCX 1.13.1's posix and sysv transports under Open MPI
# 4.1.4 hang after wire-up, so "the same job over posix" is the job a
# posix user runs.
#
#   bench/shmem-atomics.sh [-r RUNS] [-H HEAPS] [-P] [-k DIR] [BUILD_DIR]
#
#   -r RUNS       runs per cell, the cells taking turns (posix, then dcx
#                 on every heap, then again); the median run is shown with
#                 [min-max] (default 5)
#   -H HEAPS      Open MPI sshmem components to place the heap with
#                 (default "ucx sysv mmap": UCX's allocation, which dcx's
#                 memory domain serves; SysV segments each PE attaches and
#                 registers; and a shared file mapping, which dcx's
#                 initiators do not map: its atomics take the target's
#                 responder, the round trip this shows)
#   -P            bind the two PEs to CPUs 0 and 1 (--bind-to core); only
#                 on a quiet machine
#   -k DIR        keep every job's output there
#   BUILD_DIR     build tree holding libuct_dcx.so (default: the first
#                 non-sanitizer build*/ of the source tree)
#
# The job is contrib/demo/shmem_demo.c with 2 PEs (spml ucx, UCX_TLS=<tl>,
# self): its figure is the median of PE 1's fetch-adds on PE 0's heap
# counter, one at a time (0.01 us resolution).  Each dcx run also shows
# the atomics its initiators executed themselves (dcx's traffic counters):
# on memory every PE maps they should be all of them; 0 means the
# target's responder served every one (a round trip through its CPU).
set -u
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
runs=5
heaps="ucx sysv mmap"
pin=0
keep=""

while getopts "r:H:Pk:h" opt; do
    case $opt in
    r) runs=$OPTARG ;;
    H) heaps=$OPTARG ;;
    P) pin=1 ;;
    k) keep=$OPTARG ;;
    h) sed -n '3,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
name=shmem-atomics.sh
build=$(bench_find_build "$name" "${1:-}") || exit 2
lib=$build/.libs/libuct_dcx.so
command -v oshrun > /dev/null || { echo "$name: oshrun not found" >&2; exit 2; }

work=$(mktemp -d /tmp/dcx-shmem-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
oshcc -O2 -o "$work/shmem_demo" "$bench_top/contrib/demo/shmem_demo.c" ||
    { echo "$name: oshcc failed" >&2; exit 2; }
out=${keep:-$work}
mkdir -p "$out"
bind=()
[ "$pin" = 0 ] || bind=(--bind-to core --map-by core)

# one job: run_job TL HEAP RUN -> "median initiator_atomics", or "n/a"
run_job() {
    local tl=$1 heap=$2 r=$3 log
    local env=(-x "UCX_TLS=$tl,self")

    log=$out/$tl.$heap.$r.log
    [ "$tl" = dcx ] && env+=(-x "LD_PRELOAD=$lib" -x UCX_DCX_SOFT_DEVICES=1
                             -x "UCX_DCX_SOFT_FABRIC=shb$$-$r"
                             -x UCX_LOG_LEVEL=info)
    timeout 60 oshrun --allow-run-as-root --oversubscribe "${bind[@]}" \
        --mca pml ucx --mca osc ucx --mca pml_ucx_tls any \
        --mca pml_ucx_devices any --mca spml ucx --mca sshmem "$heap" \
        "${env[@]}" -np 2 "$work/shmem_demo" > "$log" 2>&1 || { echo n/a; return; }
    awk '$2 == "shmem_remote_fadd_median_us" { m = $3 }
         /dcx md .*: traffic: tx/ {
             if (match($0, /([0-9]+) atomics/)) { s = substr($0, RSTART); split(s, f, " "); a += f[1] }
         }
         END { if (m == "") print "n/a"; else printf "%s %d\n", m, a }' "$log"
}

declare -A fig
for ((r = 0; r < runs; ++r)); do
    fig[posix.ucx.$r]=$(run_job posix ucx "$r")
    for heap in $heaps; do
        fig[dcx.$heap.$r]=$(run_job dcx "$heap" "$r")
    done
done

# median [min-max] of a cell's first field; the dcx cells' atomics count
cell() {   # cell TL HEAP
    local r
    for ((r = 0; r < runs; ++r)); do echo "${fig[$1.$2.$r]}"; done |
        awk '$1 != "n/a"' | sort -n -k1,1 |
        awk '{ v[++n] = $1; a = $2 }
             END {
                 if (n == 0) { print "n/a"; exit }
                 printf "%s [%s-%s] %d\n", v[int((n + 1) / 2)], v[1], v[n], a
             }'
}

load=$(cut -d' ' -f1 /proc/loadavg)
printf 'OpenSHMEM fetch-add PE 1 -> PE 0, median us over %d runs (load %s%s)\n\n' \
    "$runs" "$load" "$([ "$pin" = 1 ] && echo ', PEs bound to cores')"
printf '| heap (sshmem) | dcx | posix (heap ucx) | dcx/posix | dcx atomics by initiators (last run) |\n'
printf '|---|---|---|---|---|\n'
p=$(cell posix ucx)
for heap in $heaps; do
    d=$(cell dcx "$heap")
    ratio=$(awk -v a="${d%% *}" -v b="${p%% *}" \
        'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "n/a" }')
    printf '| %s | %s | %s | %s | %s |\n' "$heap" "$(echo "$d" | cut -d' ' -f1-2)" \
        "$(echo "$p" | cut -d' ' -f1-2)" "$ratio" "$(echo "$d" | cut -d' ' -f3)"
done
