#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# dcx's own instructions per operation under callgrind, on the soft device
# and on the mlx5 backend over the emulated ConnectX, split by whose code
# ran, next to posix, in one run.  Instruction counts do not depend on the
# machine's load.
#
#   bench/backend-cpu.sh [-n N] [-o OPS] [-k DIR] [BUILD_DIR]
#
#   -n N        measured operations per run (default 1000)
#   -o OPS      operations (default "am_short put_short rx_poll tx_poll
#               tx_poll_am progress"; see bench/soft_cpu.c)
#   -k DIR      keep the callgrind output files there
#   BUILD_DIR   build tree whose contrib/dcx-run loads dcx and holds the
#               emulation (default: the first <repo>/build*/ that is not a
#               sanitizer build)
#
# Each operation runs bench/soft_cpu.c in its own process under
#   valgrind --tool=callgrind --fair-sched=yes --toggle-collect=bench_op
# (fair scheduling: the emulated device's engine thread gets its turn, or
# the mlx5 backend's atomic self-test at open can find no answer)
# three ways: dcx on a soft device (dcx-run --soft), dcx's mlx5 backend on
# an emulated device (dcx-run --mlx5-emu) and posix.  Every function is
# charged to the code it belongs to, by object file and source file:
#   transport   libuct_dcx.so, src/uct/dcx and the device layer src/common
#   backend     libuct_dcx.so, src/soft (the whole soft device: the model of
#               the NIC runs in the caller's thread) or src/mlx5 (what runs on
#               a ConnectX too, on top of libmlx5)
#   emulation   the emulated libibverbs.so.1 / libmlx5.so.1 (on hardware:
#               rdma-core's libmlx5 and the NIC, not dcx's cost)
#   rest        UCX (libucs, libuct, libucp) and the measuring call, less
#               the cost of the measuring call itself (op "nop")
# Code of the C library and the loader is charged to its caller's share
# (a memcpy the backend calls is the backend's).  dcx = transport + backend:
# on the mlx5 row, the number a user of real hardware pays on top of
# libmlx5.  rx_poll, tx_poll and tx_poll_am are per completion polled (dcx:
# every work request signalled for the last two, UCX_DCX_SIGNAL_PERIOD=1);
# "calls" is the number of progress calls per completion (1.00: no empty
# poll counted).  tx_poll is a put's send completion, which the soft device
# never makes (it does an 8-byte put within the call: n/a); tx_poll_am an
# am_short's, which both devices make.
# Threads other than the caller are not counted.

set -u
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
n=1000
ops="am_short put_short rx_poll tx_poll tx_poll_am progress"
keep=""

while getopts "n:o:k:h" opt; do
    case $opt in
    n) n=$OPTARG ;;
    o) ops=$OPTARG ;;
    k) keep=$OPTARG ;;
    h) sed -n '3,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "backend-cpu.sh: bad count '$n'" >&2; exit 2; }

command -v valgrind >/dev/null || { echo "backend-cpu.sh: valgrind not found" >&2; exit 2; }
build=$(bench_find_build backend-cpu.sh "${1:-}") || exit 2
run="$build/contrib/dcx-run"
[ -e "$build/emu/libmlx5.so.1" ] || {
    echo "backend-cpu.sh: $build has no emulation (built without mlx5)" >&2
    exit 2
}

work=$(mktemp -d /tmp/dcx-backendcpu.XXXXXX) || exit 2
# soft_cpu ends with _exit: its fabrics' shared files, and the emulation's
# sysfs view when nobody else holds it, are removed here
trap 'rm -rf "$work" /dev/shm/dcx-emu.$(id -u).bcpu$$ \
          /dev/shm/dcx-soft.$(id -u).bcpu$$.*; bench_emu_sysfs_leave' EXIT
bin=$work/soft_cpu
cc -O2 -g -o "$bin" "$here/soft_cpu.c" -lucp -luct -lucs || {
    echo "backend-cpu.sh: cannot build soft_cpu.c against the installed UCX" >&2
    exit 2
}

# whose code ran: the shares of the table (see above)
cg_rules='backend libuct_dcx\.so /src/(soft|mlx5)/
transport libuct_dcx\.so .
emulation /lib(ibverbs|mlx5)\.so .
rest /libuc[mpst]\.so|/soft_cpu$ .'

# "total transport backend emulation" of one callgrind output
cg_split() {
    local l
    l=$(bench_cg_split "$1" "$cg_rules")
    echo "$(bench_kv total "$l") $(bench_kv transport "$l") $(bench_kv backend "$l") $(bench_kv emulation "$l")"
}

# cg_run MODE OP -> "calls total transport backend emulation" (sums over
# the run), or "fail"
cg_run() {
    local mode=$1 op=$2 out=$work/cg.$1.$2 tl=dcx dev env=()
    case $mode in
    soft)  dev=soft0:1; env=("$run" --soft --fabric "bcpu$$") ;;
    mlx5)  dev=mlx5_0:1; env=("$run" --mlx5-emu --fabric "bcpu$$") ;;
    posix) dev=memory; tl=posix ;;
    esac
    case $op in
    tx_poll*) env=(env UCX_DCX_SIGNAL_PERIOD=1 "${env[@]}") ;;
    esac
    if ! UCX_TLS=$tl "${env[@]}" valgrind --tool=callgrind --fair-sched=yes \
            --toggle-collect=bench_op --callgrind-out-file="$out" \
            "$bin" "$tl" "$dev" "$op" "$n" >"$out.log" 2>&1 ||
       ! grep -q "^ops $n" "$out.log"; then
        echo "backend-cpu.sh: $mode $op failed, see below" >&2
        tail -3 "$out.log" >&2
        echo "fail"
        return
    fi
    [ -n "$keep" ] && mkdir -p "$keep" && cp "$out" "$keep/"
    calls=$(awk '/^calls / { print $2 }' "$out.log")
    echo "${calls:-$n} $(cg_split "$out")"
}

per_op() { awk -v a="$1" -v n="$n" 'BEGIN { printf "%.0f", a / n }'; }

declare -A row
for mode in soft mlx5 posix; do
    read -r _ base _ <<<"$(cg_run "$mode" nop)"
    for op in $ops; do
        r=fail
        case $mode.$op in
        # posix has no send completions to poll, the soft device none
        # for an 8-byte put
        posix.tx_poll* | soft.tx_poll) ;;
        *) r=$(cg_run "$mode" "$op") ;;
        esac
        if [ "$r" = fail ]; then
            row[$mode.$op]="n/a n/a n/a n/a n/a n/a n/a"
            continue
        fi
        read -r calls t tr be em <<<"$r"
        # the measuring call, once per measured call
        t=$(( t - base * calls / n ))
        rest=$(( t - tr - be - em ))
        row[$mode.$op]="$(per_op "$tr") $(per_op "$be") $(per_op $((tr + be))) $(per_op "$em") $(per_op "$rest") $(per_op "$t") $(awk -v c="$calls" -v n="$n" 'BEGIN { printf "%.2f", c / n }')"
    done
done

printf "dcx's instructions per operation (callgrind, %d ops, measuring call subtracted)\n\n" "$n"
printf "| %-10s | %-5s | %9s | %7s | %6s | %9s | %6s | %6s | %5s |\n" \
    operation path transport backend dcx emulation rest total calls
printf "|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n" ------------ ------- ----------- \
    --------- -------- ----------- -------- -------- -------
for op in $ops; do
    for mode in soft mlx5 posix; do
        read -r tr be dcx em rest t calls <<<"${row[$mode.$op]}"
        if [ "$mode" = posix ]; then
            tr=- be=- dcx=- em=-
        elif [ "$mode" = soft ]; then
            em=-
        fi
        printf "| %-10s | %-5s | %9s | %7s | %6s | %9s | %6s | %6s | %5s |\n" \
            "$op" "$mode" "$tr" "$be" "$dcx" "$em" "$rest" "$t" "$calls"
    done
done
