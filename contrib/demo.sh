#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The main job: set dcx up on this machine and show it working over the soft
# device — ucx_perftest at UCT and UCP level, an MPI ping-pong and allreduce,
# and an OpenSHMEM program, all over the dcx transport — then print a short
# summary.  Installs missing packages and builds on first use.
#
#   contrib/demo.sh [BUILD_DIR]      (default: build/ in the source tree)
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
jobs=$(nproc 2>/dev/null || echo 2)
work=$(mktemp -d /tmp/dcx-demo.XXXXXX)
fabric="demo-$$"
port=$((20000 + $$ % 20000))
t_start=$SECONDS
declare -A fig

say()  { printf '\n==> %s\n' "$*"; }
die()  { echo "demo: $*" >&2; echo "demo: logs kept in $work" >&2; exit 1; }
next_port() { port=$((port + 1)); }

# ---------------------------------------------------------------- set-up
say "Setting up (packages, UCX headers, build in ${build#$top/})"
"$top/contrib/install-deps.sh" || die "could not install the packages"
ucx_src=$("$top/contrib/get-ucx-src.sh" 2>"$work/get-ucx-src.log") ||
    die "could not fetch the UCX source (see $work/get-ucx-src.log)"
# its line about deb-src files earlier versions left in /etc/apt, if any
grep -E '^get-ucx-src.sh: (removed|cannot remove) .*earlier dcx version' \
    "$work/get-ucx-src.log" | sed 's/^/    /'
if [ ! -x "$top/configure" ]; then
    (cd "$top" && ./autogen.sh) >"$work/autogen.log" 2>&1 ||
        die "autogen failed (see $work/autogen.log)"
fi
mkdir -p "$build"
# (re)configure unless this build dir was configured with the UCX headers
if ! grep -q -- "--with-ucx-src" "$build/config.status" 2>/dev/null; then
    (cd "$build" && "$top/configure" --with-ucx-src="$ucx_src") \
        >"$work/configure.log" 2>&1 || die "configure failed (see $work/configure.log)"
fi
make -C "$build" -j"$jobs" >"$work/make.log" 2>&1 || die "build failed (see $work/make.log)"
dcx_run="$build/contrib/dcx-run"
[ -x "$dcx_run" ] || die "$dcx_run was not built"
echo "    built in $((SECONDS - t_start)) s; wrapper: ${dcx_run}"

run_dcx() { "$dcx_run" --soft --fabric "$fabric" "$@"; }

# ---------------------------------------------------------------- ucx_info
say "What UCX sees: ucx_info -d through dcx-run --soft"
run_dcx ucx_info -d >"$work/ucx_info.log" 2>&1 || die "ucx_info failed"
grep -q 'Transport: dcx' "$work/ucx_info.log" || die "ucx_info does not list dcx"
dev=$(awk '/Transport: dcx/ { getline; print $NF; exit }' "$work/ucx_info.log")
grep -E 'Transport: dcx' -A 40 "$work/ucx_info.log" |
    grep -E 'Transport|Device|latency|bandwidth|am_short|put_zcopy|atomic_fadd|error handling' |
    sed 's/^#/   /'

# ---------------------------------------------------------------- perftest
# perftest NAME KEY lat|bw "SERVER/CLIENT ARGS" "CLIENT-ONLY ARGS" [ENV...]
# Runs a server and a client on loopback and records the "Final:" figures:
# KEY_lat (overall latency, us) and KEY_bw (overall bandwidth, MB/s), and
# prints the one the test measures: a latency test (one operation at a
# time: am_lat, tag_lat, fadd) its latency, a bandwidth test (a stream) its
# bandwidth; a stream's time per message is overhead, not latency.
perftest() {
    local name=$1 key=$2 kind=$3 args=$4 cargs=$5; shift 5
    local log="$work/perf-$key.log"
    next_port
    env "$@" "$dcx_run" --soft --fabric "$fabric" ucx_perftest $args -p $port \
        >"$work/perf-$key-server.log" 2>&1 &
    local srv=$!
    sleep 1
    if ! env "$@" timeout 60 "$dcx_run" --soft --fabric "$fabric" \
            ucx_perftest $args $cargs -p $port localhost >"$log" 2>&1; then
        kill $srv 2>/dev/null; wait $srv 2>/dev/null
        die "ucx_perftest $name failed (see $log)"
    fi
    wait $srv 2>/dev/null
    fig[${key}_lat]=$(awk '/^Final:/ { print $5 }' "$log")
    fig[${key}_bw]=$(awk '/^Final:/ { print $7 }' "$log")
    if [ "$kind" = lat ]; then
        printf '    %-34s latency   %9s us\n' "$name" "${fig[${key}_lat]}"
    else
        printf '    %-34s bandwidth %9s MB/s\n' "$name" "${fig[${key}_bw]}"
    fi
}

say "ucx_perftest over dcx (UCT level: -x dcx -d $dev; UCP level: UCX_TLS=dcx,self)"
perftest "UCT am_lat 8 B"            uct_am_lat  lat "-x dcx -d $dev -t am_lat" "-n 20000 -s 8"
perftest "UCT put_bw 1 MiB (zcopy)"  uct_put_bw  bw  "-x dcx -d $dev -t put_bw -D zcopy" "-n 500 -s 1048576"
perftest "UCT fadd 64-bit"           uct_fadd    lat "-x dcx -d $dev -t fadd" "-n 10000 -s 8"
perftest "UCP tag_lat 8 B"           ucp_tag_lat lat "-t tag_lat" "-n 20000 -s 8" UCX_TLS=dcx,self
perftest "UCP tag_bw 4 MiB"          ucp_tag_bw  bw  "-t tag_bw" "-n 100 -s 4194304" UCX_TLS=dcx,self

# ---------------------------------------------------------------- MPI
mpi_flags=(--allow-run-as-root --oversubscribe
           --mca pml ucx --mca osc ucx
           --mca pml_ucx_tls any --mca pml_ucx_devices any
           --mca mpi_yield_when_idle 1
           -x UCX_TLS=dcx,self -x LD_PRELOAD="$("$dcx_run" --print-preload)"
           -x UCX_DCX_SOFT_DEVICES=1 -x UCX_DCX_SOFT_FABRIC="$fabric-mpi"
           -x UCX_LOG_LEVEL=info)

# lanes LOG: the transports UCP put behind its endpoints' lanes
lanes() {
    grep -o 'ep_cfg\[[0-9]*\]: .*' "$1" | grep -oE '\([^)]*\)' |
        tr -d '()' | tr ' ' '\n' | sed -E 's/\/.*//' | sort -u | tr '\n' ' '
}

say "MPI over dcx (Open MPI pml ucx, UCX_TLS=dcx,self)"
mpicc -O2 -o "$work/pingpong" "$top/bench/mpi/pingpong.c" ||
    die "mpicc failed"
mpicc -O2 -o "$work/allreduce" "$top/bench/mpi/allreduce.c" ||
    die "mpicc failed"
timeout 120 mpirun -np 2 "${mpi_flags[@]}" "$work/pingpong" 4194304 0.3 \
    >"$work/mpi-pingpong.log" 2>&1 || die "MPI ping-pong failed (see $work/mpi-pingpong.log)"
timeout 120 mpirun -np 4 "${mpi_flags[@]}" "$work/allreduce" 0.3 \
    >"$work/mpi-allreduce.log" 2>&1 || die "MPI allreduce failed (see $work/mpi-allreduce.log)"
mpi_lanes=$(lanes "$work/mpi-pingpong.log")
case " $mpi_lanes" in
    *" dcx "*) ;;
    *) die "MPI did not select dcx (lanes: $mpi_lanes)" ;;
esac
fig[mpi_lat]=$(awk '$1=="RESULT" && $2=="latency_us" && $3==1 { print $4 }' "$work/mpi-pingpong.log")
fig[mpi_bw]=$(awk '$1=="RESULT" && $2=="bandwidth_MBps" && $3==4194304 { print $4 }' "$work/mpi-pingpong.log")
fig[mpi_ar8]=$(awk '$1=="RESULT" && $2=="allreduce_us" && $3==8 { print $4 }' "$work/mpi-allreduce.log")
fig[mpi_ar1m]=$(awk '$1=="RESULT" && $2=="allreduce_us" && $3==524288 { print $4 }' "$work/mpi-allreduce.log")
printf '    ping-pong, 2 ranks:  1 B latency %s us, 4 MiB bandwidth %s MB/s\n' \
    "${fig[mpi_lat]}" "${fig[mpi_bw]}"
printf '    MPI_Allreduce, 4 ranks: 8 B %s us, 512 KiB %s us\n' \
    "${fig[mpi_ar8]}" "${fig[mpi_ar1m]}"
# the soft device's counters: one "traffic:" info line per process at its close
traffic() {
    grep -E 'DCX +INFO +soft device [^:]+: traffic: tx' "$1" |
        sed -E 's/.*traffic: tx ([0-9]+) packets ([0-9]+) bytes.*/\1 \2/' |
        awk '{ n++; p += $1; b += $2 } END { printf "%d processes sent %d packets, %.1f MB", n, p, b / 1e6 }'
}
fig[mpi_traffic]=$(traffic "$work/mpi-pingpong.log")
echo "    UCX lanes used: $mpi_lanes"
echo "    dcx counters (ping-pong job): ${fig[mpi_traffic]}"

# ---------------------------------------------------------------- OpenSHMEM
say "OpenSHMEM over dcx (spml ucx, 4 PEs)"
oshcc -O2 -o "$work/shmem_demo" "$top/contrib/demo/shmem_demo.c" || die "oshcc failed"
shm_flags=("${mpi_flags[@]}")
shm_flags=("${shm_flags[@]/$fabric-mpi/$fabric-shmem}")
timeout 120 oshrun -np 4 --mca spml ucx "${shm_flags[@]}" "$work/shmem_demo" \
    >"$work/shmem.log" 2>&1 || die "OpenSHMEM demo failed (see $work/shmem.log)"
shm_lanes=$(lanes "$work/shmem.log")
case " $shm_lanes" in
    *" dcx "*) ;;
    *) die "OpenSHMEM did not select dcx (lanes: $shm_lanes)" ;;
esac
fig[shm_pes]=$(awk '$2=="shmem_pes" { print $3 }' "$work/shmem.log")
fig[shm_n]=$(awk '$2=="shmem_atomics" { print $3 }' "$work/shmem.log")
fig[shm_lat]=$(awk '$2=="shmem_remote_fadd_median_us" { print $3 }' "$work/shmem.log")
fig[shm_mean]=$(awk '$2=="shmem_remote_fadd_mean_us" { print $3 }' "$work/shmem.log")
fig[shm_sum]=$(awk '$2=="shmem_sum" { print $3 }' "$work/shmem.log")
printf '    %s fetch-adds from all %s PEs onto PE 0 all counted (PE 0'"'"'s own are local);\n' \
    "${fig[shm_n]}" "${fig[shm_pes]}"
printf '    ring put and sum (=%s) checked\n' "${fig[shm_sum]}"
printf '    fetch-add latency PE 1 -> PE 0 (remote, PE 1 alone): median %s us, mean %s us\n' \
    "${fig[shm_lat]}" "${fig[shm_mean]}"
echo "    UCX lanes used: $shm_lanes"
# the same job over UCX's shared-memory transport, for comparison: both
# map the symmetric heap and do a fetch-add as one CPU atomic
posix_flags=("${shm_flags[@]/UCX_TLS=dcx,self/UCX_TLS=posix,self}")
timeout 120 oshrun -np 4 --mca spml ucx "${posix_flags[@]}" "$work/shmem_demo" \
    >"$work/shmem-posix.log" 2>&1 || die "OpenSHMEM demo over posix failed (see $work/shmem-posix.log)"
fig[shm_posix]=$(awk '$2=="shmem_remote_fadd_median_us" { print $3 }' "$work/shmem-posix.log")
fig[shm_ratio]=$(awk -v a="${fig[shm_lat]}" -v b="${fig[shm_posix]}" \
    'BEGIN { if (a > 0 && b > 0) printf "%.1f", a / b; else print "n/a" }')
printf '    the same job over UCX_TLS=posix,self: median %s us (dcx/posix %s)\n' \
    "${fig[shm_posix]}" "${fig[shm_ratio]}"

# ---------------------------------------------------------------- summary
say "Summary ($((SECONDS - t_start)) s)"
cat <<EOF
    transport dcx on device $dev: the soft device (a software ConnectX model
    over shared memory), brought in by dcx-run (LD_PRELOAD of libuct_dcx.so)

    what ran                                  figure
    ucx_perftest UCT am_lat, 8 B              ${fig[uct_am_lat_lat]} us
    ucx_perftest UCT put_bw zcopy, 1 MiB      ${fig[uct_put_bw_bw]} MB/s
    ucx_perftest UCT fadd (64-bit)            ${fig[uct_fadd_lat]} us
    ucx_perftest UCP tag_lat, 8 B             ${fig[ucp_tag_lat_lat]} us
    ucx_perftest UCP tag_bw, 4 MiB            ${fig[ucp_tag_bw_bw]} MB/s
    MPI ping-pong latency, 1 B (2 ranks)      ${fig[mpi_lat]} us
    MPI ping-pong bandwidth, 4 MiB            ${fig[mpi_bw]} MB/s
    MPI_Allreduce 8 B / 512 KiB (4 ranks)     ${fig[mpi_ar8]} / ${fig[mpi_ar1m]} us
    OpenSHMEM fetch-add PE 1 -> PE 0 (median) ${fig[shm_lat]} us (posix: ${fig[shm_posix]} us)

    Every MPI and OpenSHMEM result above was checked by the programs; UCX's
    lane report shows the traffic went over dcx, and dcx's own counters
    agree (MPI ping-pong job: ${fig[mpi_traffic]}).
    Next: ./contrib/test.sh runs the full test suite; README.md explains
    how to run your own MPI and OpenSHMEM jobs over dcx.
EOF
rm -rf "$work"
