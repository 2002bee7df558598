#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Instructions per operation under callgrind, dcx (soft device) next to posix
# in one run.  Instruction counts do not depend on the machine's load.
#
#   bench/soft-cpu.sh [-n N] [-o OPS] [-k DIR] [BUILD_DIR]
#
#   -n N        measured operations per run (default 1000)
#   -o OPS      operations (default "progress am_short put_short get_bcopy am_lat
#               tag_send tag_lat"; see bench/soft_cpu.c)
#   -k DIR      keep the callgrind output files there
#   BUILD_DIR   build tree whose contrib/dcx-run loads dcx (default: the
#               first <repo>/build*/ with one that is not a sanitizer build)
#
# bench/soft_cpu.c is compiled against the installed UCX (cc -lucp -luct
# -lucs).  Each operation runs in its own process under
#   valgrind --tool=callgrind --toggle-collect=bench_op
# so only the measured calls count; the cost of the measuring call itself
# (op "nop") is subtracted.  For dcx the total is split into the device
# (inclusive cost of every call from outside the soft device into a soft_*
# or dcx_soft_* function) and the transport (the rest: dcx, UCT and UCP
# code).  Threads other than the caller (the soft device's helper) are not
# counted: callgrind collects per thread.
#
# Operations (two interfaces, or two UCP workers, of one process):
#   progress   uct_iface_progress() with nothing to do
#   am_short   uct_ep_am_short(), 8-byte header
#   put_short  uct_ep_put_short(), 8 bytes
#   put_bcopy  uct_ep_put_bcopy(), 4 KiB (not in the default list)
#   get_bcopy  uct_ep_get_bcopy(), 8 bytes, and the progress calls until
#              it completes
#   fadd       uct_ep_atomic64_fetch() of an add, and the progress calls
#              until it completes (not in the default list)
#   cswap      uct_ep_atomic_cswap64(), the same (not in the default list)
#   am_lat     one am_lat round trip, both sides, all their polls
#   tag_send   ucp_tag_send_nbx(), 8 bytes (UCX_TLS=<tl>)
#   tag_lat    one UCP tag_lat round trip (both receives posted first), both
#              workers, all their ucp_worker_progress calls (UCX_TLS=<tl>)

set -u
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
n=1000
ops="progress am_short put_short get_bcopy am_lat tag_send tag_lat"
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
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "soft-cpu.sh: bad count '$n'" >&2; exit 2; }

command -v valgrind >/dev/null || { echo "soft-cpu.sh: valgrind not found" >&2; exit 2; }
build=$(bench_find_build soft-cpu.sh "${1:-}") || exit 2
run="$build/contrib/dcx-run"

work=$(mktemp -d /tmp/dcx-softcpu.XXXXXX) || exit 2
trap 'rm -rf "$work"' EXIT
bin=$work/soft_cpu
cc -O2 -g -o "$bin" "$here/soft_cpu.c" -lucp -luct -lucs || {
    echo "soft-cpu.sh: cannot build soft_cpu.c against the installed UCX" >&2
    exit 2
}

# total and device instructions of one callgrind output
cg_sum() {
    awk '
    function nm(s,    id) {
        if (match(s, /^\([0-9]+\)/)) {
            id = substr(s, 2, RLENGTH - 2)
            s  = substr(s, RLENGTH + 1)
            sub(/^ /, "", s)
            if (s != "") { names[id] = s } else { s = names[id] }
        }
        return s
    }
    function dev(s) { return s ~ /^(soft_|dcx_soft_)/ }
    /^fn=/     { cur = nm(substr($0, 4)); next }
    /^cfn=/    { callee = nm(substr($0, 5)); next }
    /^calls=/  { getline; if (!dev(cur) && dev(callee)) d += $NF; next }
    /^totals:/ { t = $2 }
    END        { printf "%d %d\n", t, d }' "$1"
}

# callgrind_run TL DEV OP -> "total device" per operation * 100 (integers)
cg_run() {
    local tl=$1 dev=$2 op=$3 out=$work/cg.$1.$3 env=()
    if [ "$tl" = dcx ]; then
        env=("$run" --soft --fabric "softcpu$$")
    fi
    if ! UCX_TLS=$tl "${env[@]}" valgrind --tool=callgrind \
            --toggle-collect=bench_op --callgrind-out-file="$out" \
            "$bin" "$tl" "$dev" "$op" "$n" >"$out.log" 2>&1 ||
       ! grep -q "^ops $n" "$out.log"; then
        echo "soft-cpu.sh: $tl $op failed, see below" >&2
        tail -5 "$out.log" >&2
        echo "fail"
        return
    fi
    [ -n "$keep" ] && mkdir -p "$keep" && cp "$out" "$keep/"
    cg_sum "$out"
}

declare -A tot devi
for tl in dcx posix; do
    dev=memory
    [ "$tl" = dcx ] && dev=soft0:1
    read -r t d < <(cg_run "$tl" "$dev" nop)
    base=$(( t / n ))
    for op in $ops; do
        r=$(cg_run "$tl" "$dev" "$op")
        if [ "$r" = fail ]; then
            tot[$tl.$op]=n/a
            devi[$tl.$op]=n/a
            continue
        fi
        read -r t d <<<"$r"
        tot[$tl.$op]=$(( t / n - base ))
        devi[$tl.$op]=$(( d / n ))
    done
done

printf "instructions per operation (callgrind, %d ops, measuring call subtracted)\n\n" "$n"
printf "| %-10s | %9s | %9s | %9s | %9s | %7s |\n" operation "dcx" "transport" "device" posix "ratio"
printf "|%s|%s|%s|%s|%s|%s|\n" ------------ ----------- ----------- ----------- ----------- ---------
for op in $ops; do
    t=${tot[dcx.$op]} d=${devi[dcx.$op]} p=${tot[posix.$op]}
    tr=n/a ratio=n/a
    if [ "$t" != n/a ]; then
        tr=$(( t - d ))
    fi
    if [ "$t" != n/a ] && [ "$p" != n/a ] && [ "$p" -gt 0 ]; then
        ratio=$(awk -v a="$t" -v b="$p" 'BEGIN { printf "%.1fx", a / b }')
    fi
    printf "| %-10s | %9s | %9s | %9s | %9s | %7s |\n" "$op" "$t" "$tr" "$d" "$p" "$ratio"
done
