#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# dcx-run --mlx5-emu: the environment it sets (--print-env), the private
# /dev of --uverbs-ns (UCX's ib module then offers the emulated device) and,
# where UCX's
# ucx_info is installed, that "dcx-run --mlx5-emu ucx_info -d" shows the
# dcx transport on mlx5_0:1 (the mlx5 backend over the emulated ConnectX)
# without an error line, with every atomic, tag offload (when asked for)
# and the strided keys its UMR probe derived.
# UCX's own ib module links the same two libraries: with UCX_TLS unset, with
# ib transports on UCX_TLS in a UCP run (ucx_info -e), and with its memory
# domain opened on the emulated device next to dcx's (emu_ib_open), no
# error line and no crash; an interface of each of its transports opens
# there, verbs and mlx5 (emu_ib_open).  A sysfs view a killed user left
# behind is built anew by the next user.
#
# Run by "make check" from the top build directory.

set -u

run=./contrib/dcx-run
fails=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

[ -x "$run" ] || { echo "FAIL: $run not built (run from the build directory)"; exit 1; }

check() {   # check NAME CONDITION-STATUS
    if [ "$2" = 0 ]; then
        echo "PASS: $1"
    else
        echo "FAIL: $1"
        sed 's/^/    /' "$out"
        fails=$((fails + 1))
    fi
}

has() {     # has LINE: OUTPUT holds exactly that line
    grep -qx -- "$1" "$out"
}

"$run" --mlx5-emu --print-env > "$out" 2>&1
st=$?
has "LD_LIBRARY_PATH=$(pwd)/emu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" &&
    has "DCX_EMU_DEVICES=1" && has "UCX_DCX_SOFT_DEVICES=0" &&
    has "UCX_DCX_MLX5=y" && ! grep -q '^DCX_EMU_FABRIC=' "$out"
check "--mlx5-emu --print-env" $(( st + $? ))

"$run" --mlx5-emu=2 --fabric f1 --print-env > "$out" 2>&1
st=$?
has "DCX_EMU_DEVICES=2" && has "DCX_EMU_FABRIC=f1" &&
    ! grep -q '^UCX_DCX_SOFT_FABRIC=' "$out"
check "--mlx5-emu=2 --fabric f1 --print-env" $(( st + $? ))

"$run" --mlx5-emu=x true > "$out" 2>&1
[ $? -ne 0 ] && grep -q 'expected a number of devices' "$out"
check "--mlx5-emu=x refused" $?

"$run" --mlx5-emu --soft=1 true > "$out" 2>&1
[ $? -ne 0 ] && grep -q 'exclude each other' "$out"
check "--mlx5-emu with --soft refused" $?

"$run" --uverbs-ns true > "$out" 2>&1
[ $? -ne 0 ] && grep -q -- '--uverbs-ns needs --mlx5-emu' "$out"
check "--uverbs-ns without --mlx5-emu refused" $?

# --uverbs-ns: the command sees /dev/infiniband/uverbs0..N-1 as character
# devices and the machine's /dev/shm; afterwards the machine has neither
# the node nor the namespace's staging mount
if unshare --mount true 2>/dev/null || unshare --mount --map-root-user true 2>/dev/null; then
    probe=/dev/shm/dcx-uverbs-probe.$$
    "$run" --mlx5-emu=2 --uverbs-ns sh -c \
        "test -c /dev/infiniband/uverbs0 && test -c /dev/infiniband/uverbs1 &&
         test -r /dev/infiniband/uverbs0 && test -w /dev/infiniband/uverbs0 &&
         echo seen > $probe" > "$out" 2>&1
    st=$?
    [ "$(cat "$probe" 2>/dev/null)" = seen ] && [ ! -e /dev/infiniband ] &&
        ! findmnt -rn -o SOURCE /mnt | grep -q dcx-uverbs-ns
    check "--uverbs-ns: uverbs nodes inside, the machine's /dev/shm, nothing left" \
        $(( st + $? ))
    rm -f "$probe"
    if command -v ucx_info > /dev/null 2>&1; then
        DCX_EMU_FABRIC=dcxrun-check "$run" --mlx5-emu --uverbs-ns \
            ucx_info -d > "$out" 2>&1
        st=$?
        grep -A1 '^# Memory domain: mlx5_0$' "$out" |
            grep -q '^#     Component: ib$' &&
            grep -A1 '^#      Transport: rc_verbs$' "$out" |
            grep -q '^#         Device: mlx5_0:1$' && [ ! -e /dev/infiniband ]
        check "--uverbs-ns ucx_info -d: UCX's ib module offers mlx5_0, rc_verbs on mlx5_0:1" \
            $(( st + $? ))
    fi
else
    echo "SKIP: --uverbs-ns: no mount namespace for this user"
fi

if command -v ucx_info > /dev/null 2>&1; then
    DCX_EMU_FABRIC=dcxrun-check "$run" --mlx5-emu ucx_info -d > "$out" 2>&1
    st=$?
    grep -A1 '^#      Transport: dcx$' "$out" |
        grep -q '^#         Device: mlx5_0:1$' &&
        ! grep -q '\[dcx error\]' "$out"
    check "dcx-run --mlx5-emu ucx_info -d: dcx on mlx5_0:1" $(( st + $? ))

    # every UCT atomic at both sizes: the masked ones on raw queues
    sed -n '/^#      Transport: dcx$/,/^#      Transport: /p' "$out" > "$out.dcx"
    st=0
    for op in add and or xor fadd fand for fxor swap cswap; do
        grep -q "^# *atomic_$op: 32, 64 bit\$" "$out.dcx" ||
            { echo "no 32- and 64-bit atomic_$op"; st=1; }
    done
    rm -f "$out.dcx"
    check "dcx-run --mlx5-emu ucx_info -d: every atomic, 32 and 64 bit" $st

    # tag matching, which the interface offers where the user asks for it
    # (UCP does with its tag feature; ucx_info with UCX_DCX_TM_ENABLE=y):
    # the backend's DEVX XRQ on the emulated ConnectX
    UCX_DCX_TM_ENABLE=y DCX_EMU_FABRIC=dcxrun-check \
        "$run" --mlx5-emu ucx_info -d > "$out" 2>&1
    st=$?
    sed -n '/^#      Transport: dcx$/,/^#      Transport: /p' "$out" > "$out.dcx"
    for op in tag_eager_short tag_eager_bcopy tag_eager_zcopy tag_rndv_zcopy \
        tag_recv tag_max_outstanding; do
        grep -q "^# *$op: <= [0-9]" "$out.dcx" || { echo "no $op"; st=1; }
    done
    rm -f "$out.dcx"
    ! grep -q '\[dcx error\]' "$out"
    check "dcx-run --mlx5-emu ucx_info -d with UCX_DCX_TM_ENABLE=y: tag offload" \
        $(( st + $? ))

    # the strided keys the backend derived from its UMR probe (said at
    # debug level: ucx_info has no line for them)
    DCX_EMU_FABRIC=dcxrun-check UCX_LOG_LEVEL=debug \
        "$run" --mlx5-emu ucx_info -d > "$out" 2>&1
    st=$?
    grep -q 'mlx5_0: strided keys: up to 52 entries, UMR queue depth up to [0-9]*, remote atomics through keys yes' "$out" &&
        ! grep -q 'strided keys not offered' "$out" &&
        ! grep -q '\[dcx error\]' "$out"
    check "dcx-run --mlx5-emu ucx_info -d: strided keys from the UMR probe" \
        $(( st + $? ))

    # no error line from UCX or the emulation
    no_error() {
        ! grep -q -e 'UCX  ERROR' -e '\[dcx error\]' "$out"
    }

    env -u UCX_TLS DCX_EMU_FABRIC=dcxrun-check "$run" --mlx5-emu \
        ucx_info -d > "$out" 2>&1
    st=$?
    grep -A1 '^#      Transport: dcx$' "$out" |
        grep -q '^#         Device: mlx5_0:1$' && no_error
    check "ucx_info -d with UCX_TLS unset: every module, no error line" \
        $(( st + $? ))

    # a UCP context, worker and endpoint with ib's transports on the list
    # (they find no device the ib module can use: UCX's usual warning).
    # ucx_info 1.13 -e never frees the worker address it queries: no leak
    # check for it in a sanitizer build
    UCX_TLS=rc,ud,dc,dcx,self DCX_EMU_FABRIC=dcxrun-check \
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        "$run" --mlx5-emu ucx_info -e -u t > "$out" 2>&1
    st=$?
    grep -q 'lane\[[0-9]*\]: *[0-9]*:dcx/mlx5_0:1' "$out" && no_error
    check "UCP with UCX_TLS=rc,ud,dc,dcx,self: a dcx lane on mlx5_0:1, no error line" \
        $(( st + $? ))
else
    echo "SKIP: ucx_info not installed"
fi

# the ib module's memory domain and dcx's on one emulated device, and an
# interface of each of its transports, with no error line: rc_verbs and
# ud_verbs (their completion channel, CQs, SRQ and UD QP on the
# emulation) and the mlx5 transports the ib module offers on a ConnectX
# (it reads the PCI IDs from the sysfs view; their CQs and queues are the
# emulation's raw queues)
DCX_EMU_FABRIC=dcxrun-check "$run" --mlx5-emu \
    test/gtest/emu/emu_ib_open > "$out" 2>&1
st=$?
if [ $st = 77 ]; then
    echo "SKIP: this UCX has no ib module"
else
    [ "$(grep -c 'md mlx5_0: open Success$' "$out")" = 4 ] &&
        grep -q '^round 1: closed$' "$out" &&
        grep -qx 'ib iface rc_verbs on mlx5_0:1: open Success' "$out" &&
        grep -qx 'ib iface ud_verbs on mlx5_0:1: open Success' "$out" &&
        grep -qx 'ib iface rc_mlx5 on mlx5_0:1: open Success' "$out" &&
        grep -qx 'ib iface dc_mlx5 on mlx5_0:1: open Success' "$out" &&
        grep -qx 'ib iface ud_mlx5 on mlx5_0:1: open Success' "$out" &&
        ! grep -q 'ibv_create_comp_channel() failed' "$out" &&
        ! grep -q -e 'UCX  ERROR' -e 'DCX  ERROR' -e '\[dcx error\]' "$out"
    check "ib and dcx memory domains on mlx5_0 in one process; every ib transport opens" $(( st + $? ))
fi
rm -f "/dev/shm/dcx-emu.$(id -u).dcxrun-check"

# a sysfs view left by a user killed before it could remove it: the next
# user that finds no other one builds the view anew (here, under a user id
# of its own, so that the view of the other tests running meanwhile is not
# touched); the run's end leaves neither the view nor its lock
stale_view() {
    local suid=$((60000 + $$ % 5000)) sroot fn st
    sroot=/dev/shm/dcx-emu.$suid.sys
    fn=$sroot/devices/pci0000:00/0000:01:00.0
    as_suid() {
        setpriv --reuid=$suid --regid=$suid --clear-groups "$@"
    }
    if ! as_suid test -x "$run" -a -r emu/libibverbs.so.1; then
        echo "SKIP: a killed user's sysfs view: the build is not readable by uid $suid"
        return
    fi
    as_suid sh -c "mkdir -p $fn && echo 0xdead > $fn/vendor &&
                   : > $sroot.lock && chmod 600 $sroot.lock"
    # (python's own allocations are no leak of ours: no leak check for it
    # in a sanitizer build)
    DCX_EMU_FABRIC=stale-view \
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        as_suid "$run" --mlx5-emu python3 -c '
import ctypes, os
verbs = ctypes.CDLL("libibverbs.so.1")
verbs.ibv_get_device_list.restype = ctypes.c_void_p
num = ctypes.c_int(0)
verbs.ibv_get_device_list(ctypes.byref(num))
path = "/dev/shm/dcx-emu.%d.sys/class/infiniband/mlx5_0/device/vendor"
print("vendor", open(path % os.getuid()).read().strip())
' > "$out" 2>&1
    st=$?
    has "vendor 0x15b3" && [ ! -e "$sroot" ] && [ ! -e "$sroot.lock" ] &&
        ! ls /dev/shm | grep -q "^dcx-emu\.$suid\."
    check "a killed user's sysfs view is built anew by the next user" \
        $(( st + $? ))
    rm -rf "$sroot" "$sroot.lock" /dev/shm/dcx-emu.$suid.*
}
if [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null 2>&1 &&
    command -v python3 > /dev/null 2>&1; then
    stale_view
else
    echo "SKIP: a killed user's sysfs view: needs root, setpriv and python3"
fi

[ "$fails" = 0 ]
