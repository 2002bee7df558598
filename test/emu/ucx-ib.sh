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
#     line, and no UCX error line appears.
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
    local t=$1 st
    shift
    UCX_TLS=rc_verbs,ud_verbs,self emu "$pair" "$out" -t "$t" -n 1000 "$@" \
        > /dev/null 2>&1
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

ls /dev/shm 2>/dev/null | grep -E "^dcx-(emu|soft)\.$uid\.($fabric|sys)(\.|$)" > "$out"
[ ! -s "$out" ] && [ ! -e /dev/infiniband ]
check "nothing left (LID directory, sysfs view, /dev/infiniband)" $?

[ $fails -eq 0 ]
