#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# rdma-core's own tools on the emulated ConnectX, unchanged and linked
# against the system's rdma-core 44, the emulation found through
# "dcx-run --mlx5-emu" (docs/mlx5-emulation.md):
#   - ibv_devices lists mlx5_0;
#   - ibv_devinfo -v prints a whole ConnectX: vendor and part, an ACTIVE
#     port on InfiniBand with a LID and a non-zero GID of IB type (it calls
#     ibv_query_gid_type of the private node);
#   - perftest's programs start: they link libefa.so.1, whose constructor
#     registers a provider through the private node (their usage text);
#   - perftest's write, read, send and atomic latency and bandwidth runs
#     over DC and over RC, and its send latency and bandwidth over UD,
#     between two processes complete, both exiting 0 and the client
#     printing its result;
#   - rdma-core's example programs (ibverbs-utils): ibv_rc_pingpong,
#     ibv_srq_pingpong and ibv_ud_pingpong between two processes, each
#     polling and sleeping on completion events (-e), rc also with its
#     buffer check (-c) and 64 KiB messages; ibv_uc_pingpong and
#     ibv_xsrq_pingpong (UC and XRC, not modelled) fail at their start
#     and crash nothing: UC's QP and XRC's domain refused with the
#     emulation's line (the domain with EOPNOTSUPP, errno 95, which the
#     program prints).
# Each run on a fabric of its own; at the end, nothing of it is left in
# /dev/shm (its LID directory, the devices' sysfs view).  Prints one PASS/FAIL line a check, exits 1 if any failed, 77
# when the tools are not installed.
#
#   test/emu/rdma-tools.sh      (DCX_RUN: the dcx-run wrapper to use)

set -u

top=$(cd "$(dirname "$0")/../.." && pwd)
run=${DCX_RUN:-$top/build/contrib/dcx-run}
fabric=tools-$$
uid=$(id -u)
out=$(mktemp)
fails=0
# ibv_xsrq_pingpong makes /tmp/xrc_domain (its XRC domain's file) before
# the emulation refuses the domain, and leaves it: it goes with the run
# unless it was there before
xrc_file=/tmp/xrc_domain
xrc_had=0
[ -e "$xrc_file" ] && xrc_had=1
trap 'rm -f "$out"; [ $xrc_had -eq 1 ] || rm -f "$xrc_file"' EXIT

command -v ibv_devinfo > /dev/null || { echo "SKIP: no ibv_devinfo (ibverbs-utils)"; exit 77; }

check() {   # check NAME STATUS
    if [ "$2" = 0 ]; then
        echo "PASS: $1"
    else
        echo "FAIL: $1"
        sed 's/^/    /' "$out" | head -40
        fails=$((fails + 1))
    fi
}

emu() {
    "$run" --mlx5-emu --fabric "$fabric" "$@"
}

emu ibv_devices > "$out" 2>&1
st=$?
grep -Eq '^[[:space:]]*mlx5_0[[:space:]]+0002c903' "$out"
check "ibv_devices lists mlx5_0" $((st + $?))

emu ibv_devinfo -v > "$out" 2>&1
st=$?
grep -q 'hca_id:.*mlx5_0' "$out" &&
    grep -q 'vendor_id:.*0x02c9' "$out" &&
    grep -q 'vendor_part_id:.*4123' "$out" &&
    grep -q 'state:.*PORT_ACTIVE' "$out" &&
    grep -q 'link_layer:.*InfiniBand' "$out" &&
    grep -Eq 'port_lid:[[:space:]]+[1-9]' "$out" &&
    grep -Eq 'GID\[ *0\]:[[:space:]]+fe80(:0000){3}:0002:c903' "$out" &&
    ! grep -q 'mlx5-emu:' "$out"
check "ibv_devinfo -v: a ConnectX with an active port and its GID" $((st + $?))

# A TCP port for perftest's connection exchange: below the kernel's
# ephemeral range, where no connection's local port lands (an earlier
# run's, in TIME_WAIT, would keep perftest's server from binding), and
# not in use now
free_port() {
    local lo p i
    lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
    [ "${lo:-0}" -gt 12000 ] 2>/dev/null || lo=32768
    for i in 1 2 3 4 5 6 7 8; do
        p=$((10000 + RANDOM % (lo - 10000)))
        ss -Htan "( sport = :$p )" 2>/dev/null | grep -q . || break
    done
    echo "$p"
}

# A server and its client of PROGRAM, two processes on the fabric, each
# given a free port and ARGS, the client "localhost" too.  0 if both exit
# 0, the client's output matches RESULT (an extended regular expression)
# and the emulation said nothing.  A server that could not listen on its
# port (taken meanwhile by another program) is started again on another,
# up to three times: that says nothing of the emulation.  Both outputs
# are left in $out, the client's first.
pair_run() {   # pair_run PROGRAM RESULT [ARGS...]
    local t=$1 result=$2 port srv=$out.srv st try pid
    shift 2
    for try in 1 2 3; do
        port=$(free_port)
        emu timeout 60 "$t" -p "$port" "$@" > "$srv" 2>&1 &
        pid=$!
        sleep 1
        emu timeout 60 "$t" -p "$port" "$@" localhost > "$out" 2>&1
        st=$?
        wait "$pid" || st=1
        grep -q "Couldn't listen to port" "$srv" || break
    done
    grep -qE "$result" "$out" || st=1
    cat "$srv" >> "$out"
    rm -f "$srv"
    [ "$st" -eq 0 ] && ! grep -q 'mlx5-emu:' "$out"
}

# perftest over a connection type (DC, RC, UD); the client's result line
# (a read or atomic test's server prints none)
perftest_run() {   # perftest_run CONN PROGRAM
    pair_run "$2" '^ +[0-9]+ +200 ' -d mlx5_0 -c "$1" -n 200
}

if command -v ib_write_lat > /dev/null; then
    for t in ib_write_lat ib_read_lat ib_send_lat ib_atomic_lat ib_write_bw; do
        emu "$t" -h > "$out" 2>&1
        grep -q 'Usage:' "$out" && ! grep -q 'not found' "$out"
        check "$t starts (libefa's provider registers)" $?
    done
    for c in DC RC; do
        for t in ib_write_lat ib_read_lat ib_send_lat ib_atomic_lat \
                 ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw; do
            perftest_run "$c" "$t"
            check "$t -c $c between two processes" $?
        done
    done
    # UD carries sends only
    for t in ib_send_lat ib_send_bw; do
        perftest_run UD "$t"
        check "$t -c UD between two processes" $?
    done
else
    echo "SKIP: perftest not installed"
fi

# rdma-core's pingpong examples; the client's iteration line
pingpong_run() {   # pingpong_run PROGRAM [ARGS...]
    local t=$1
    shift
    pair_run "$t" ' iters in ' -d mlx5_0 -n 200 "$@"
}

if command -v ibv_rc_pingpong > /dev/null; then
    for t in "ibv_rc_pingpong" "ibv_rc_pingpong -e" "ibv_rc_pingpong -c" \
             "ibv_rc_pingpong -e -c -s 65536" "ibv_srq_pingpong" \
             "ibv_srq_pingpong -e" "ibv_ud_pingpong" "ibv_ud_pingpong -e"; do
        # shellcheck disable=SC2086
        pingpong_run $t
        check "$t between two processes" $?
    done
    # not modelled: refused where the program makes the QP or the XRC
    # domain (ibv_open_xrcd, through the context's op), with the
    # emulation's line; the program, started as a server, exits with an
    # error at once
    for t in ibv_uc_pingpong ibv_xsrq_pingpong; do
        emu timeout 30 "$t" -d mlx5_0 -p "$(free_port)" > "$out" 2>&1
        st=$?
        [ "$st" -ne 0 ] && [ "$st" -lt 124 ] && grep -q 'mlx5-emu:' "$out"
        check "$t refused with one error (not modelled)" $?
    done
else
    echo "SKIP: ibverbs-utils' pingpong examples not installed"
fi

# the fabric's LID directory and the devices' sysfs view go with the last
# process that used them
ls /dev/shm 2>/dev/null |
    grep -E "^dcx-(emu|soft)\.$uid\.($fabric|sys)(\.|$)" > "$out"
[ ! -s "$out" ]
check "nothing of the runs left in /dev/shm (LID directory, sysfs view)" $?

[ $fails -eq 0 ]
