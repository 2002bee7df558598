#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# dcx's mlx5 backend and UCX's own dc_mlx5 side by side, on the same
# emulated ConnectX, in one run: instructions per operation (callgrind),
# then latency and message rate (ucx_perftest between two processes), with
# the ratios dcx / dc_mlx5.
#
#   bench/vs-dc-mlx5.sh [-n N] [-s SETTLE_US] [-r RUNS] [-o OPS] [-P]
#                       [-k DIR] [BUILD_DIR]
#
#   -n N          measured operations per callgrind run (default 1000)
#   -s SETTLE_US  pause before each measured poll (default 20000; see below)
#   -r RUNS       ucx_perftest runs per cell, the transports taking turns;
#                 the median is shown with [min-max] (default 5; 0: none)
#   -o OPS        instruction-count operations (default "am_short put_short
#                 get_bcopy rx_poll tx_poll progress"; see bench/soft_cpu.c)
#   -P            pin the perftest server to CPU 0 and client to CPU 1
#   -k DIR        keep the callgrind and perftest outputs there
#   BUILD_DIR     build tree holding contrib/dcx-run and the emulation
#
# Both run in the private /dev of "dcx-run --mlx5-emu --uverbs-ns" (UCX's
# ib module needs it to offer mlx5_0), on a fabric of their own; dcx with
# its mlx5 backend (UCX_DCX_MLX5=y), dc_mlx5 from the installed UCX with no
# rebuild.
#
# Instructions: bench/soft_cpu.c, one operation N times between two
# interfaces of one process, under valgrind --tool=callgrind
# --toggle-collect=bench_op --fair-sched=yes (the emulated device's engine
# thread gets its turn).  Counted, per operation: the transport's own code
# and what it calls in the C library — libuct_dcx.so for dcx (transport and
# backend), libuct_ib.so for dc_mlx5 (transport and its driver: it writes
# WQEs and reads CQEs itself).  Not counted: the emulated libibverbs and
# libmlx5 (the device's work; for UCX's raw WQEs it runs in the engine
# thread, which is not measured) and UCX's core (libucs, libuct: shown as
# "ucx").  Both write their WQEs into the send queue and read CQEs from
# CQ memory themselves (dcx: UCX_DCX_MLX5_RAW=y, its default), so neither
# calls a library to post or poll; with UCX_DCX_MLX5_RAW=n set by the
# caller, dcx posts through libmlx5's ibv_wr_* builders, whose
# instructions the emulation cannot stand for: shown as "dcx-wr", beside
# the two.  rx_poll and tx_poll are per
# completion polled (every send signalled: UCX_DCX_SIGNAL_PERIOD=1; DC in
# UCX signals every send); get_bcopy is the post and the polls up to its
# completion.  The raw-queue engine answers a doorbell in a thread of its
# own, so before each measured poll the caller pauses SETTLE_US (outside
# the measured region); "calls" shows the progress calls per operation
# (1.00: no empty poll was counted).  "dbg" counts what dc_mlx5 spends
# in a check UCX compiles in only with assertions on (the installed UCX's
# configure default, and dcx is built with the same configuration), and
# the last column compares dcx with dc_mlx5 less that check.
#
# Latency and message rate: ucx_perftest -t am_lat and -t put_bw -s 8,
# server and client in two processes, over the emulation: both transports
# pay the emulation's cost (for dc_mlx5 a thread wake-up per doorbell), so
# these ratios say more about the emulation's two paths than about a
# ConnectX; the instruction counts are the yardstick.

set -u
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
n=1000
settle=20000
runs=5
ops="am_short put_short get_bcopy rx_poll tx_poll progress"
pin=0
keep=""

while getopts "n:s:r:o:Pk:h" opt; do
    case $opt in
    n) n=$OPTARG ;;
    s) settle=$OPTARG ;;
    r) runs=$OPTARG ;;
    o) ops=$OPTARG ;;
    P) pin=1 ;;
    k) keep=$OPTARG ;;
    h) sed -n '3,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
name=vs-dc-mlx5.sh
for v in "$n" "$settle" "$runs"; do
    [[ "$v" =~ ^[0-9]+$ ]] || { echo "$name: bad number '$v'" >&2; exit 2; }
done
[ "$n" -gt 0 ] || { echo "$name: -n must be positive" >&2; exit 2; }

command -v valgrind >/dev/null || { echo "$name: valgrind not found" >&2; exit 2; }
command -v ucx_perftest >/dev/null || { echo "$name: ucx_perftest not found" >&2; exit 2; }
build=$(bench_find_build "$name" "${1:-}") || exit 2
run="$build/contrib/dcx-run"
[ -e "$build/emu/libmlx5.so.1" ] || {
    echo "$name: $build has no emulation (built without mlx5)" >&2
    exit 2
}
bench_pin "$name" "$pin" || exit 2

work=$(mktemp -d /tmp/dcx-vsdc.XXXXXX) || exit 2
# soft_cpu ends with _exit: its fabrics' shared files, and the emulation's
# sysfs view when nobody else holds it, are removed here
trap 'rm -rf "$work" /dev/shm/dcx-emu.$(id -u).vsdc$$.* \
          /dev/shm/dcx-soft.$(id -u).vsdc$$.*; bench_emu_sysfs_leave' EXIT
bin=$work/soft_cpu
cc -O2 -g -o "$bin" "$here/soft_cpu.c" -lucp -luct -lucs || {
    echo "$name: cannot build soft_cpu.c against the installed UCX" >&2
    exit 2
}

# emu NAME CMD...: CMD on the emulation, on a fabric of its own
emu() {
    local fab=$1
    shift
    "$run" --mlx5-emu --fabric "vsdc$$.$fab" --uverbs-ns "$@"
}

# the transport's module, per transport
declare -A lib=([dcx]='libuct_dcx\.so' [dcx-wr]='libuct_dcx\.so'
                [dc_mlx5]='libuct_ib\.so')

# Instructions of dc_mlx5 that only a build with assertions runs: UCX
# checks each WQE it posts there (uct_ib_mlx5_txwq_validate) when built
# with assertions, as the installed one is (its configure default; UCX's
# contrib/configure-release turns them off).  dcx is compiled with the
# installed UCX's configuration (ucx_build_config.h), its own assertions
# included, so "own" compares builds of one kind; "dbg" shows what the
# other kind would take off dc_mlx5.
dbg_fn=uct_ib_mlx5_txwq_validate_always

# cg_run TL OP -> "calls total tl ucx dbg", or "fail"
cg_run() {
    local tl=$1 op=$2 out=$work/cg.$1.$2 env=(env) rules l
    [ "$op" = tx_poll ] && env+=(UCX_DCX_SIGNAL_PERIOD=1)
    [ "$tl" = dcx-wr ] && env+=(UCX_DCX_MLX5_RAW=n)
    if ! emu "$tl.$op" "${env[@]}" valgrind --tool=callgrind \
            --fair-sched=yes --toggle-collect=bench_op \
            --callgrind-out-file="$out" \
            "$bin" "${tl%-wr}" mlx5_0:1 "$op" "$n" "$settle" >"$out.log" 2>&1 ||
       ! grep -q "^ops $n" "$out.log"; then
        echo "$name: $tl $op failed, see below" >&2
        tail -3 "$out.log" >&2
        echo fail
        return
    fi
    [ -n "$keep" ] && mkdir -p "$keep" && cp "$out" "$out.log" "$keep/"
    rules="tl ${lib[$tl]} .
emulation /lib(ibverbs|mlx5)\\.so .
ucx /libuc[mpst]\\.so .
bench /soft_cpu\$ ."
    l=$(bench_cg_split "$out" "$rules")
    dbg=$(callgrind_annotate --inclusive=no "$out" 2>/dev/null |
          awk -v f="$dbg_fn" 'index($0, ":" f " ") { gsub(",", "", $1); s += $1 }
                              END { print s + 0 }')
    echo "$(awk '/^calls / { print $2 }' "$out.log" | grep . || echo "$n")" \
         "$(bench_kv total "$l") $(bench_kv tl "$l") $(bench_kv ucx "$l")" \
         "$dbg"
}

per_op() { awk -v a="$1" -v n="$n" 'BEGIN { printf "%.0f", a / n }'; }
per_op2() { awk -v a="$1" -v n="$n" 'BEGIN { printf "%.2f", a / n }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "n/a" }'; }

declare -A row
for tl in dcx dcx-wr dc_mlx5; do
    for op in $ops; do
        r=$(cg_run "$tl" "$op")
        if [ "$r" = fail ]; then
            row[$tl.$op]="n/a n/a n/a n/a"
            continue
        fi
        read -r calls _ own ucx dbg <<<"$r"
        row[$tl.$op]="$(per_op "$own") $(per_op "$ucx") $(per_op2 "$calls") $(per_op "$dbg")"
    done
done

printf "Instructions per operation on the emulated ConnectX (callgrind, %d ops, load %s)\n\n" \
    "$n" "$(cut -d' ' -f1 /proc/loadavg)"
printf "| %-9s | %-7s | %6s | %5s | %5s | %4s | %11s | %14s |\n" \
    operation tl own ucx calls dbg "own dcx/dc" "dcx/(dc - dbg)"
printf "|%s|%s|%s|%s|%s|%s|%s|%s|\n" ----------- --------- -------- ------- \
    ------- ------ ------------- ----------------
for op in $ops; do
    read -r uown _ _ udbg <<<"${row[dc_mlx5.$op]}"
    urel=n/a
    [[ "$uown" =~ ^[0-9]+$ && "$udbg" =~ ^[0-9]+$ ]] && urel=$((uown - udbg))
    for tl in dcx dcx-wr dc_mlx5; do
        read -r own ucx calls dbg <<<"${row[$tl.$op]}"
        r="" rr=""
        if [ "$tl" != dc_mlx5 ]; then
            r=$(ratio "$own" "$uown") rr=n/a
            [ "$urel" != n/a ] && rr=$(ratio "$own" "$urel")
        fi
        printf "| %-9s | %-7s | %6s | %5s | %5s | %4s | %11s | %14s |\n" \
            "$op" "$tl" "$own" "$ucx" "$calls" "$dbg" "$r" "$rr"
    done
done
echo
echo "own: the transport's module (dcx: libuct_dcx.so; dc_mlx5: libuct_ib.so) and"
echo "the C library it calls; ucx: UCX's core; calls: progress calls per operation."
echo "dbg: of own, the WQE check ($dbg_fn) that UCX runs only when"
echo "built with assertions, as the installed UCX is (dcx is built with its"
echo "configuration); dc - dbg: dc_mlx5 as a build without assertions would run."
echo "dcx-wr: dcx with UCX_DCX_MLX5_RAW=n, posting through libmlx5's ibv_wr_*"
echo "and polling with ibv_start_poll; its own figure leaves libmlx5's calls out."

[ "$runs" -gt 0 ] || exit 0

# --- latency and message rate ------------------------------------------------
pair=$work/pair
cat > "$pair" <<'EOF'
#!/bin/bash
# $1 output prefix, $2 server pin, $3 client pin, then ucx_perftest's args
o=$1 sp=$2 cp=$3
shift 3
port=$((20000 + $$ % 20000))
# shellcheck disable=SC2086
timeout 120 $sp ucx_perftest "$@" -p "$port" > "$o.srv" 2>&1 &
pid=$!
sleep 1
# shellcheck disable=SC2086
timeout 120 $cp ucx_perftest "$@" -p "$port" localhost > "$o.cli" 2>&1
st=$?
wait "$pid" || st=1
exit $st
EOF
chmod +x "$pair"

# pt TL TEST SEQ -> "latency rate" of the client's Final: line, or nothing
pt() {
    local tl=$1 t=$2 o=$work/pt.$1.$2.$3 iters=20000
    [ "$t" = am_lat ] && iters=5000
    emu "pt.$tl.$t.$3" "$pair" "$o" "${srv_pin[*]:-}" \
        "${cli_pin[*]:-}" -x "$tl" -d mlx5_0:1 -t "$t" -s 8 -n "$iters" \
        -w 500 > /dev/null 2>&1 || return
    [ -n "$keep" ] && cp "$o.srv" "$o.cli" "$keep/"
    awk '/^Final:/ { print $3, $9 / 1000 }' "$o.cli" | tail -1
}

# med LIST -> "median [min-max]"
med() {
    tr ' ' '\n' | grep . | sort -g | awk '
        { v[NR] = $1 }
        END {
            if (NR == 0) { print "n/a"; exit }
            m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf "%.2f [%.2f-%.2f]\n", m, v[1], v[NR]
        }'
}

declare -A lat rate
for ((i = 0; i < runs; i++)); do
    for tl in dcx dc_mlx5; do
        read -r l _ <<<"$(pt "$tl" am_lat "$i")"
        lat[$tl]="${lat[$tl]:-} ${l:-}"
        read -r _ m <<<"$(pt "$tl" put_bw "$i")"
        rate[$tl]="${rate[$tl]:-} ${m:-}"
    done
done

echo
printf "ucx_perftest over the emulation, 8 bytes, %d runs each taking turns (median [min-max])\n\n" "$runs"
printf "| %-24s | %-24s | %-24s | %11s |\n" figure dcx dc_mlx5 "dcx/dc_mlx5"
printf "|%s|%s|%s|%s|\n" -------------------------- -------------------------- \
    -------------------------- -------------
for f in lat rate; do
    if [ "$f" = lat ]; then
        label="am_lat latency (us)"
        a=$(echo "${lat[dcx]}" | med) b=$(echo "${lat[dc_mlx5]}" | med)
    else
        label="put_bw rate (k msg/s)"
        a=$(echo "${rate[dcx]}" | med) b=$(echo "${rate[dc_mlx5]}" | med)
    fi
    printf "| %-24s | %-24s | %-24s | %11s |\n" "$label" "$a" "$b" \
        "$(ratio "${a%% *}" "${b%% *}")"
done
