#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Runs ucx_perftest server/client pairs over the dcx transport on a soft
# device, for every UCT and UCP test dcx is expected to pass, and prints one
# line per test and a summary 'N passed, N failed'.  Exit status 0 only if
# all passed.
#
# Usage: test/perftest.sh [-l path/to/libuct_dcx.so] [-n iterations]
#                         [-k name-filter] [-e] [-v]
#   default module: $DCX_LIB, else the libuct_dcx.so of the source tree's
#   own build, of build/, or of another build*/ directory (sanitizer builds
#   are skipped: they cannot be preloaded into an uninstrumented program).
#   -e: over dcx's mlx5 backend on the emulated ConnectX (mlx5_0:1, the
#   environment of "dcx-run --mlx5-emu --print-env") instead of the soft
#   device.  A test needing a capability the device does not offer (an
#   atomic operation, tag matching: "ucx_info -d -t dcx" under that
#   environment) is reported SKIP there; on the soft device, which offers
#   them all, a missing one fails the test.
#
set -u

iters=1000
filter=""
verbose=0
lib="${DCX_LIB:-}"
timeout_s=${DCX_PERFTEST_TIMEOUT:-60}

emu=0

while getopts "l:n:k:evh" opt; do
    case $opt in
    l) lib=$OPTARG ;;
    n) iters=$OPTARG ;;
    k) filter=$OPTARG ;;
    e) emu=1 ;;
    v) verbose=1 ;;
    *) sed -n '3,20p' "$0"; exit 2 ;;
    esac
done

top=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "$lib" ]; then
    for cand in "$top"/.libs/libuct_dcx.so "$top"/build/.libs/libuct_dcx.so \
                "$top"/build*/.libs/libuct_dcx.so; do
        # a sanitizer build cannot be preloaded into ucx_perftest
        if [ -f "$cand" ] && ! ldd "$cand" 2>/dev/null | grep -q libasan; then
            lib=$cand
            break
        fi
    done
fi
if [ -z "$lib" ] || [ ! -f "$lib" ]; then
    echo "perftest.sh: libuct_dcx.so not found; build first or pass -l" >&2
    exit 2
fi
if ! command -v ucx_perftest >/dev/null; then
    echo "perftest.sh: ucx_perftest not found" >&2
    exit 2
fi

# the dcx-run wrapper next to the module (the build tree's), else DCX_RUN
wrapper=$(dirname "$lib")/../contrib/dcx-run
[ -x "$wrapper" ] || wrapper=${DCX_RUN:-}

# dev_env FABRIC: the device's variables, one NAME=value a line
. "$top/bench/lib.sh"
dev_env() {
    bench_dev_env "$emu" "$wrapper" "$lib" "$1"
}

if [ $emu -eq 1 ]; then
    dev=mlx5_0:1
    if [ -z "$wrapper" ] || ! dev_env probe >/dev/null; then
        echo "perftest.sh: -e needs dcx-run --mlx5-emu (set DCX_RUN)" >&2
        exit 2
    fi
else
    dev=soft0:1
fi
logdir=$(mktemp -d /tmp/dcx-perftest.XXXXXX)
port=$(( 20000 + ($$ % 20000) ))
passed=0
failed=0
skipped=0
failed_names=""
skipped_names=""

# The device's capabilities, as ucx_info prints them ("atomic_add: 64 bit",
# "tag_eager_short: ..."; tag matching asked for with UCX_DCX_TM_ENABLE=y,
# which a device without it refuses): one word a line, e.g. atomic_add
mapfile -t probe_env < <(dev_env "ptcap$$")
caps=$(for tm in try y; do
           env "${probe_env[@]}" LD_PRELOAD="$lib${LD_PRELOAD:+:$LD_PRELOAD}" \
               UCX_DCX_TM_ENABLE=$tm ucx_info -d -t dcx 2>/dev/null
       done | sed -nE 's/^# +(atomic_[a-z]+|tag_eager_short): .*/\1/p' | sort -u)
[ $emu -eq 0 ] || rm -f "/dev/shm/dcx-emu.$(id -u).ptcap$$"

# needed_cap NAME ARGS: the capability a test needs of the device, if any
needed_cap() {
    case "$1" in
    tm_*) echo tag_eager_short; return ;;
    esac
    case " $2 " in
    *" -x dcx "*" -t add_lat "*|*" -x dcx "*" -t add_mr "*) echo atomic_add ;;
    *" -x dcx "*" -t fadd "*) echo atomic_fadd ;;
    *" -x dcx "*" -t swap "*) echo atomic_swap ;;
    *" -x dcx "*" -t cswap "*) echo atomic_cswap ;;
    esac
}

# tm_* runs also pass only if dcx's close-time counters ("tag matching:
# posted N matched M ...", logged at info level) show device matches
tm_env="UCX_DCX_TM_ENABLE=y UCX_TM_THRESH=1 UCX_TM_FORCE_THRESH=1 UCX_LOG_LEVEL=info"

# tm_matched LOG... -> the sum of the "matched" counters of the logs
tm_matched() {
    cat "$@" 2>/dev/null |
        sed -nE 's/.*tag matching: posted [0-9]+ matched ([0-9]+) .*/\1/p' |
        awk '{ m += $1 } END { print m + 0 }'
}

# name | env | perftest arguments
tests=(
    "am_lat_short|-|-x dcx -d $dev -t am_lat -D short"
    "am_lat_bcopy|-|-x dcx -d $dev -t am_lat -D bcopy -s 1024"
    "am_lat_zcopy|-|-x dcx -d $dev -t am_lat -D zcopy -s 4096"
    "am_bw_short|-|-x dcx -d $dev -t am_bw -D short -s 64"
    "am_bw_shortiov|-|-x dcx -d $dev -t am_bw -D shortiov -s 16,16,16"
    "am_bw_bcopy|-|-x dcx -d $dev -t am_bw -D bcopy -s 4096"
    "am_bw_zcopy|-|-x dcx -d $dev -t am_bw -D zcopy -s 8000"
    "put_lat_short|-|-x dcx -d $dev -t put_lat -D short"
    "put_lat_bcopy|-|-x dcx -d $dev -t put_lat -D bcopy -s 2048"
    "put_lat_zcopy|-|-x dcx -d $dev -t put_lat -D zcopy -s 65536"
    "put_bw_short|-|-x dcx -d $dev -t put_bw -D short -s 256"
    "put_bw_bcopy|-|-x dcx -d $dev -t put_bw -D bcopy -s 8192"
    "put_bw_zcopy|-|-x dcx -d $dev -t put_bw -D zcopy -s 1048576"
    # ucx_perftest's get test has no short variant (its default -D short
    # fails "Invalid parameter" in ucx_perftest itself, before any transport
    # call); dcx does not offer get_short anyway (docs/uct-contract.md,
    # gtest_uct uct_dcx_ops.get_short_not_offered)
    "get_8_bcopy|-|-x dcx -d $dev -t get -D bcopy -s 8"
    "get_8_zcopy|-|-x dcx -d $dev -t get -D zcopy -s 8"
    "get_4k_bcopy|-|-x dcx -d $dev -t get -D bcopy -s 4096"
    "get_4k_zcopy|-|-x dcx -d $dev -t get -D zcopy -s 4096"
    "get_zcopy|-|-x dcx -d $dev -t get -D zcopy -s 1048576"
    # bench/perftest.sh at 8 B over dcx alone: every cell must run (it once
    # picked -D short for get, which ucx_perftest does not implement)
    "bench_dcx_8|-|bench"
    "add_lat|-|-x dcx -d $dev -t add_lat"
    "add_mr|-|-x dcx -d $dev -t add_mr"
    "fadd_lat|-|-x dcx -d $dev -t fadd"
    "swap_lat|-|-x dcx -d $dev -t swap"
    "cswap_lat|-|-x dcx -d $dev -t cswap"
    "am_bw_dcs|UCX_DCX_DCI_POLICY=dcs|-x dcx -d $dev -t am_bw -D bcopy -s 1024"
    "am_bw_rand|UCX_DCX_DCI_POLICY=rand|-x dcx -d $dev -t am_bw -D bcopy -s 1024"
    "tag_lat|UCX_TLS=dcx,self|-t tag_lat -s 8"
    "tag_bw_64k|UCX_TLS=dcx,self|-t tag_bw -s 65536"
    "tag_bw_4m|UCX_TLS=dcx,self|-t tag_bw -s 4194304"
    "ucp_put_bw|UCX_TLS=dcx,self|-t ucp_put_bw -s 65536"
    "ucp_get|UCX_TLS=dcx,self|-t ucp_get -s 65536"
    "stream_bw|UCX_TLS=dcx,self|-t stream_bw -s 65536"
    "ucp_am_lat|UCX_TLS=dcx,self|-t ucp_am_lat -s 64"
    "ucp_am_bw|UCX_TLS=dcx,self|-t ucp_am_bw -s 262144"
    "ucp_put_lat|UCX_TLS=dcx,self|-t ucp_put_lat -s 8"
    "ucp_add|UCX_TLS=dcx,self|-t ucp_add"
    "ucp_fadd|UCX_TLS=dcx,self|-t ucp_fadd"
    "ucp_swap|UCX_TLS=dcx,self|-t ucp_swap"
    "ucp_cswap|UCX_TLS=dcx,self|-t ucp_cswap"
    "tag_lat_rand|UCX_TLS=dcx,self UCX_DCX_DCI_POLICY=rand|-t tag_lat -s 8"
    # wake-up mode: both sides sleep on the worker's fd between messages
    # (dcx's event fd: the soft device's channel, or the mlx5 backend's)
    "tag_lat_sleep|UCX_TLS=dcx,self|-t tag_lat -s 8 -E sleep"
    "tag_bw_dcs|UCX_TLS=dcx,self UCX_DCX_DCI_POLICY=dcs|-t tag_bw -s 65536"
    # tag-matching offload forced: every receive goes to the device's list
    "tm_tag_lat|UCX_TLS=dcx,self $tm_env|-t tag_lat -s 8"
    "tm_tag_lat_16k|UCX_TLS=dcx,self $tm_env|-t tag_lat -s 16384"
    "tm_tag_bw_64k|UCX_TLS=dcx,self $tm_env|-t tag_bw -s 65536"
    "tm_tag_bw_4m|UCX_TLS=dcx,self $tm_env|-t tag_bw -s 4194304"
    "tm_tag_bw_rand|UCX_TLS=dcx,self UCX_DCX_DCI_POLICY=rand $tm_env|-t tag_bw -s 300000"
)

# bench/perftest.sh over dcx at 8 B, one short run per cell; it exits 1 if
# any dcx run failed
run_bench() {
    local name=$1
    env ${wrapper:+DCX_RUN=$wrapper} DCX_BENCH_TIMEOUT="$timeout_s" \
        "$top/bench/perftest.sh" -t dcx -S 8 -r 1 -s 0.1 \
        >"$logdir/$name.client" 2>&1
}

run_one() {
    local name=$1 envs=$2 args=$3 n=$4
    local fabric="pt$$-$name"
    local env_list srv_pid srv_rc cli_rc i attempt

    mapfile -t env_list < <(dev_env "${fabric:0:32}")
    env_list+=(LD_PRELOAD="$lib${LD_PRELOAD:+:$LD_PRELOAD}")

    if [ "$envs" != "-" ]; then
        env_list+=($envs)
    fi

    # the port is the machine's: a server that finds it taken (by another
    # program, or a client's ephemeral port) moves to the next one
    for attempt in 1 2 3 4 5; do
        port=$((port + 1))
        env "${env_list[@]}" timeout "$timeout_s" ucx_perftest $args -n "$n" \
            -w 100 -p $port >"$logdir/$name.server" 2>&1 &
        srv_pid=$!

        # the client retries until the server listens (or is gone)
        for i in $(seq 1 50); do
            sleep 0.1
            if ! kill -0 $srv_pid 2>/dev/null; then
                cli_rc=1   # the server is gone: no client for its port
                break
            fi
            if env "${env_list[@]}" timeout "$timeout_s" ucx_perftest \
                   localhost $args -n "$n" -w 100 -p $port \
                   >"$logdir/$name.client" 2>&1; then
                cli_rc=0
                break
            fi
            cli_rc=$?
            if ! grep -q "connect\|Connection refused" "$logdir/$name.client"; then
                break
            fi
        done
        wait $srv_pid
        srv_rc=$?
        grep -q "bind() failed: Address already in use" \
            "$logdir/$name.server" || break
        echo "perftest.sh: $name: port $port in use, trying the next" \
            >>"$logdir/$name.ports"
    done
    # the emulation's table of the fabric outlives its processes
    [ $emu -eq 0 ] || rm -f "/dev/shm/dcx-emu.$(id -u).${fabric:0:32}"
    [ $cli_rc -eq 0 ] && [ $srv_rc -eq 0 ] || return 1
    if [[ $name == tm_* ]] &&
       [ "$(tm_matched "$logdir/$name.server" "$logdir/$name.client")" -eq 0 ]; then
        echo "perftest.sh: $name: no device tag matches in dcx's counters" \
            >>"$logdir/$name.client"
        return 1
    fi
}

for t in "${tests[@]}"; do
    IFS='|' read -r name envs args <<<"$t"
    if [ -n "$filter" ] && [[ "$name" != *$filter* ]]; then
        continue
    fi
    cap=$(needed_cap "$name" "$args")
    if [ -n "$cap" ] && ! grep -qx "$cap" <<<"$caps"; then
        if [ $emu -eq 1 ]; then
            skipped=$((skipped + 1))
            skipped_names="$skipped_names $name"
            printf "%-16s SKIP  (%s has no %s)\n" "$name" "$dev" "$cap"
            continue
        fi
        failed=$((failed + 1))
        failed_names="$failed_names $name"
        printf "%-16s FAIL  (%s does not offer %s)\n" "$name" "$dev" "$cap"
        continue
    fi
    # bench/perftest.sh runs on the soft device only
    if [ "$args" = bench ] && [ $emu -eq 1 ]; then
        continue
    fi
    n=$iters
    case $name in
        *4m*|*zcopy*) n=$(( iters < 200 ? iters : 200 )) ;;
    esac
    start=$(date +%s.%N)
    if [ "$args" = bench ]; then
        run_bench "$name"
    else
        run_one "$name" "$envs" "$args" "$n"
    fi
    if [ $? -eq 0 ]; then
        passed=$((passed + 1))
        result=PASS
    else
        failed=$((failed + 1))
        failed_names="$failed_names $name"
        result=FAIL
    fi
    secs=$(echo "$(date +%s.%N) - $start" | bc)
    line=$(grep "^Final:" "$logdir/$name.client" 2>/dev/null | tr -s ' ')
    printf "%-16s %s  %5.1fs  %s\n" "$name" "$result" "$secs" "$line"
    if [ $verbose -eq 1 ] && [ $result = FAIL ]; then
        tail -n 5 "$logdir/$name.client" "$logdir/$name.server"
    fi
done

[ $skipped -eq 0 ] ||
    echo "skipped by capability ($dev):$skipped_names"
echo "$passed passed, $failed failed${failed_names:+ (failed:$failed_names; logs in $logdir)}"
[ $failed -eq 0 ] && [ -z "$failed_names" ] && rm -rf "$logdir"
[ $failed -eq 0 ]
