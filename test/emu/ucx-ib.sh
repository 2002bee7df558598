#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# UCX's own ib transports on the emulated ConnectX, from Debian's UCX with
# no rebuild, in the private /dev of "dcx-run --mlx5-emu --uverbs-ns"
# (docs/mlx5-emulation.md):
#   - ucx_info -d lists the ib module's memory domain mlx5_0 and its
#     rc_verbs and ud_verbs transports on mlx5_0:1;
#   - ucx_perftest over rc_verbs between two processes: active-message
#     latency and bandwidth, put latency and bandwidth, get (bcopy and
#     zcopy), fetch-add and compare-swap; over ud_verbs, active messages;
#     and UCP with UCX_TLS=rc_verbs,ud_verbs,self (tagged latency and
#     bandwidth, put and get): both exit 0, the client prints its final
#     line, and no UCX error line appears;
#   - the same for UCX's mlx5 transports on the emulation's raw queues:
#     rc_mlx5 and dc_mlx5 (active messages, put, get, atomics) with UCX's
#     DEVX domain (checked to be the one in use) and again with DEVX off,
#     ud_mlx5 (active messages), and UCP with UCX_TLS=dc_mlx5,self;
#   - UCP's tagged latency and bandwidth over dc_mlx5 with tag matching
#     offloaded to the emulated device (UCX_DC_MLX5_TM_ENABLE=y);
#   - an MPI job (point-to-point, RMA) and an OpenSHMEM job (atomics),
#     2 processes each, over UCX's dc_mlx5; point-to-point again with tag
#     matching offloaded.
# Prints one PASS/FAIL line a check, exits 1 if any failed, 77 when UCX's
# tools or a mount namespace are not available.
#
#   test/emu/ucx-ib.sh      (DCX_RUN: the dcx-run wrapper to use)

set -u

top=$(cd "$(dirname "$0")/../.." && pwd)
run=${DCX_RUN:-$top/build/contrib/dcx-run}
fabric=ucxib-$$
uid=$(id -u)
out=$(mktemp)
fails=0
trap 'rm -f "$out" "$out".*' EXIT

command -v ucx_perftest > /dev/null || { echo "SKIP: ucx_perftest not installed"; exit 77; }
if ! unshare --mount true 2>/dev/null && ! unshare --mount --map-root-user true 2>/dev/null; then
    echo "SKIP: no mount namespace for this user (--uverbs-ns)"
    exit 77
fi

check() {   # check NAME STATUS
    if [ "$2" -eq 0 ]; then
        echo "PASS: $1"
    else
        echo "FAIL: $1"
        sed 's/^/    /' "$out"
        fails=$((fails + 1))
    fi
}

emu() {
    "$run" --mlx5-emu --fabric "$fabric" --uverbs-ns "$@"
}

# UCX's error lines; the emulation's one warning for the DEVX event
# channel UCX's DEVX domain asks for (not modelled) is expected
ucx_errors() {
    grep -e 'UCX  ERROR' -e '\[dcx error\]' "$1"
}

emu ucx_info -d > "$out" 2>&1
st=$?
grep -A1 '^# Memory domain: mlx5_0$' "$out" | grep -q '^#     Component: ib$' &&
    grep -A1 '^#      Transport: rc_verbs$' "$out" |
    grep -q '^#         Device: mlx5_0:1$' &&
    grep -A1 '^#      Transport: ud_verbs$' "$out" |
    grep -q '^#         Device: mlx5_0:1$' &&
    ! grep -A3 '^#      Transport: ud_verbs$' "$out" | grep -q 'failed to open'
check "ucx_info -d: the ib module's mlx5_0, rc_verbs and ud_verbs on mlx5_0:1" $((st + $?))

# server and client in one namespace (a script run under --uverbs-ns)
pair=$out.pair
cat > "$pair" <<'EOF'
#!/bin/sh
# $1 output prefix, then ucx_perftest's arguments
o=$1; shift
port=$((20000 + $$ % 20000))
timeout 60 ucx_perftest "$@" -p "$port" > "$o.srv" 2>&1 &
pid=$!
sleep 1
timeout 60 ucx_perftest "$@" -p "$port" localhost > "$o.cli" 2>&1
st=$?
wait "$pid" || st=1
exit $st
EOF
chmod +x "$pair"

perftest_uct() {   # perftest_uct TL TEST [ARGS...]
    local tl=$1 t=$2 st
    shift 2
    emu "$pair" "$out" -x "$tl" -d mlx5_0:1 -t "$t" -n 1000 "$@" > /dev/null 2>&1
    st=$?
    cat "$out.cli" "$out.srv" > "$out" 2>/dev/null
    grep -q '^Final:' "$out.cli" 2>/dev/null && ! ucx_errors "$out" > /dev/null &&
        [ "$st" -eq 0 ]
}

for spec in "am_lat" "am_bw -D bcopy" "put_lat" "put_bw" "get -D bcopy" \
            "get -D zcopy -s 4096" "fadd" "cswap"; do
    # shellcheck disable=SC2086
    perftest_uct rc_verbs $spec
    check "ucx_perftest -x rc_verbs -t $spec between two processes" $?
done
for spec in "am_lat" "am_bw -D bcopy" "am_bw -D zcopy -s 2048"; do
    # shellcheck disable=SC2086
    perftest_uct ud_verbs $spec
    check "ucx_perftest -x ud_verbs -t $spec between two processes" $?
done

# UCP over UCX's verbs transports: RC lanes, wired up over UD
perftest_ucp() {   # perftest_ucp TEST [ARGS...]
    UCX_TLS=rc_verbs,ud_verbs,self perftest_ucp_tls "$@"
}
perftest_ucp_tls() {   # perftest_ucp_tls TEST [ARGS...], UCX_TLS set
    local t=$1 st
    shift
    emu "$pair" "$out" -t "$t" -n 1000 "$@" > /dev/null 2>&1
    st=$?
    cat "$out.cli" "$out.srv" > "$out" 2>/dev/null
    grep -q '^Final:' "$out.cli" 2>/dev/null && ! ucx_errors "$out" > /dev/null &&
        [ "$st" -eq 0 ]
}
for spec in "tag_lat" "tag_bw -s 65536" "ucp_put_bw" "ucp_get"; do
    # shellcheck disable=SC2086
    perftest_ucp $spec
    check "ucx_perftest -t $spec with UCX_TLS=rc_verbs,ud_verbs,self" $?
done

# UCX's mlx5 transports, on the emulation's raw queues, through UCX's DEVX
# domain (its default: QPs, DCTs, RMPs and KSM keys made by firmware
# commands, queues in user memory) ...
emu env UCX_LOG_LEVEL=debug ucx_info -d > "$out" 2>&1
grep -q 'mlx5_0: opened DEVX md' "$out" &&
    grep -q 'created DevX DCI' "$out"
check "ucx_info -d: UCX's DEVX domain on mlx5_0, its DCIs made through DEVX" $?
for tl in rc_mlx5 dc_mlx5; do
    for spec in "am_lat" "am_bw -D zcopy -s 2048" "put_bw" "get -D zcopy -s 4096" \
                "fadd" "cswap"; do
        # shellcheck disable=SC2086
        perftest_uct $tl $spec
        check "ucx_perftest -x $tl -t $spec between two processes" $?
    done
done
# ... and with DEVX off (UCX_IB_MLX5_DEVX=n: verbs objects, mlx5dv_init_obj)
for tl in rc_mlx5 dc_mlx5; do
    for spec in "am_lat" "put_bw" "fadd"; do
        # shellcheck disable=SC2086
        UCX_IB_MLX5_DEVX=n perftest_uct $tl $spec
        check "ucx_perftest -x $tl -t $spec, DEVX off" $?
    done
done
for spec in "am_lat" "am_bw -D bcopy"; do
    # shellcheck disable=SC2086
    perftest_uct ud_mlx5 $spec
    check "ucx_perftest -x ud_mlx5 -t $spec between two processes" $?
done
for spec in "tag_lat" "tag_bw -s 65536" "ucp_put_bw" "ucp_get"; do
    # shellcheck disable=SC2086
    UCX_TLS=dc_mlx5,self perftest_ucp_tls $spec
    check "ucx_perftest -t $spec with UCX_TLS=dc_mlx5,self" $?
done
# ... with tag matching offloaded (an XRQ, list operations on its command
# QP, rendezvous fetched by the device): UCP takes the offload (its debug
# line says so) for eager messages and rendezvous, most of the latter
# unexpected (answered in software, with UCX's DC credit requests and
# grants between them)
for spec in "tag_lat -s 4096" "tag_bw -s 65536"; do
    # shellcheck disable=SC2086
    UCX_TLS=dc_mlx5,self UCX_DC_MLX5_TM_ENABLE=y UCX_LOG_LEVEL=debug \
        perftest_ucp_tls $spec
    st=$?
    grep -q 'Activate tag offload iface' "$out" || st=1
    check "ucx_perftest -t $spec over dc_mlx5, tag matching offloaded" $st
done

# MPI and OpenSHMEM over UCX's dc_mlx5 (built here from test/mpi and
# test/shmem): point-to-point, RMA with its atomics, OpenSHMEM atomics
mpi_run() {   # mpi_run LAUNCHER NP PROGRAM [-x VAR=VALUE...]
    local l=$1 np=$2 prog=$3 extra=
    shift 3
    [ "$l" = oshrun ] && extra="--mca spml ucx"
    # shellcheck disable=SC2086
    emu timeout 120 "$l" --allow-run-as-root --oversubscribe -np "$np" "$@" \
        -x LD_PRELOAD -x LD_LIBRARY_PATH -x DCX_EMU_DEVICES -x DCX_EMU_FABRIC \
        -x UCX_DCX_SOFT_DEVICES -x UCX_DCX_MLX5 -x UCX_TLS=dc_mlx5,self \
        -x UCX_WARN_UNUSED_ENV_VARS=n --mca pml ucx --mca pml_ucx_tls any \
        --mca pml_ucx_devices any --mca btl ^openib,uct,ofi --mca mtl ^ofi \
        --mca osc ucx $extra "$prog" > "$out" 2>&1 < /dev/null &&
        grep -q '^OK ' "$out" && ! grep -q -e 'UCX  ERROR' -e 'dcx error' "$out"
}
if command -v mpicc > /dev/null && command -v oshcc > /dev/null; then
    bdir=$(mktemp -d)
    for p in p2p rma; do
        mpicc -O2 -o "$bdir/mpi_$p" "$top/test/mpi/$p.c" > "$out" 2>&1 ||
            echo "FAIL: build $p"
    done
    oshcc -O2 -o "$bdir/shmem_atomics" "$top/test/shmem/atomics.c" > "$out" 2>&1 ||
        echo "FAIL: build shmem atomics"
    for p in p2p rma; do
        mpi_run mpirun 2 "$bdir/mpi_$p"
        check "MPI $p over UCX's dc_mlx5, 2 processes" $?
    done
    mpi_run mpirun 2 "$bdir/mpi_p2p" -x UCX_DC_MLX5_TM_ENABLE=y
    check "MPI p2p over UCX's dc_mlx5, tag matching offloaded" $?
    mpi_run oshrun 2 "$bdir/shmem_atomics"
    check "OpenSHMEM atomics over UCX's dc_mlx5, 2 PEs" $?
    rm -rf "$bdir"
else
    echo "SKIP: MPI and OpenSHMEM: mpicc or oshcc not installed"
fi

ls /dev/shm 2>/dev/null | grep -E "^dcx-(emu|soft)\.$uid\.($fabric|sys)(\.|$)" > "$out"
[ ! -s "$out" ] && [ ! -e /dev/infiniband ]
check "nothing left (LID directory, sysfs view, /dev/infiniband)" $?

[ $fails -eq 0 ]
