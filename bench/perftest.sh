#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# ucx_perftest over dcx, posix and tcp in one run, side by side.
#
#   bench/perftest.sh [-t "dcx posix tcp"] [-s SCALE] [-r REPEAT] [-l LOGDIR]
#                     [-S SIZES] [-T TESTS] [-a] [-P] [-v]
#
#   -t, DCX_BENCH_TLS    transports to compare (default "dcx posix tcp")
#   -s, DCX_BENCH_SCALE  multiplies the iteration counts (default 1; the
#                        default run takes well under 3 minutes on 2 cores)
#   -r, DCX_BENCH_REPEAT runs per cell, the best one is shown (default 2)
#   -a                   alternate: each cell runs -r times with the
#                        transports taking turns (dcx, posix, dcx, ...);
#                        the median run is shown and a spread table gives
#                        max/min of each cell's figure; no time budget
#                        (e.g. -a -r 10 -t "dcx posix"); with -a the
#                        sizes default to "8 4096 1048576 4194304" (8 B,
#                        4 KiB, 1 MiB, 4 MiB: the full comparison)
#   -S, DCX_BENCH_SIZES  message sizes (default "8 4096 1048576", with -a
#                        "8 4096 1048576 4194304")
#   -T, DCX_BENCH_TESTS  only these tests (default all: "am_lat am_bw
#                        put_lat put_bw get tag_lat tag_bw tag_lat_sleep"),
#                        e.g. -a -r 10 -T tag_bw -S "1048576 4194304"
#   DCX_BENCH_BUDGET     seconds after which cells get a single run (default
#                        120), to keep the whole run under 3 minutes
#   -l LOGDIR            keep every server/client log there (default: a
#                        temporary directory, removed unless something failed)
#   -v                   print each run's command line and Final: line
#   -P, DCX_BENCH_PIN    pin the server to CPU 0 and the client to CPU 1
#                        (taskset), so the two never share a core and every
#                        run sees the same placement (set to 1 to enable);
#                        only on a quiet machine: a pinned process cannot
#                        move away from a CPU that other work is using
#   DCX_RUN              dcx-run wrapper (default: from PATH, else the first
#                        <repo>/build*/contrib/dcx-run whose module is not a
#                        sanitizer build)
#   DCX_BENCH_TIMEOUT    seconds allowed per server/client run (default 30)
#
# UCT level, per transport (dcx: -x dcx -d soft0:1 under dcx-run --soft with a
# fresh soft fabric per run; posix: -x posix -d memory; tcp: -x tcp -d lo):
#   am_lat, put_lat                 latency: 50th percentile and overall
#   am_bw, put_bw                   bandwidth (MB/s) and message rate (msg/s),
#                                   both "overall"; am_bw at 8 B is the
#                                   message-rate test
# at 8 B, 4 KiB and 1 MiB where the transport can send that size. The data
# path (-D) is picked per transport from its `ucx_info -d` limits: below
# 64 KiB the first of short, bcopy, zcopy that fits the size, from 64 KiB
# up the first of zcopy, bcopy, short (get: bcopy or zcopy only, as
# ucx_perftest has no get short test). The path used is shown in the cell.
# No transport here sends a 1 MiB active message, so am_* stop at 4 KiB.
#
# UCP level (what MPI sees): tag_lat and tag_bw at the same sizes with
# UCX_TLS=<tl>,self (tcp also UCX_NET_DEVICES=lo); the client runs with
# UCX_LOG_LEVEL=info and its ep_cfg line must name the transport.
# tag_lat_sleep: tag_lat in wake-up mode (-E sleep: both sides sleep in
# ucp_worker_wait whenever a progress found nothing) at 8 B and 4 KiB, the
# latency of event-driven services and progress threads.  ucx_perftest
# takes -E at the UCP level only (its UCT tests ignore it), so there is no
# UCT am_lat counterpart.
#
# Tables have a column per transport and the ratios dcx/posix and dcx/tcp.
# Latency: lower is better, ratio < 1 means dcx is faster. Bandwidth and
# message rate: higher is better, ratio > 1 means dcx is faster.
# A run that fails, or a size a transport cannot send, prints n/a and a
# numbered note. Exit status: 1 if any dcx run failed, 2 on a usage or
# setup error, else 0 (posix/tcp failures are only reported).

set -u
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
. "$here/lib.sh"

tls_list=${DCX_BENCH_TLS:-dcx posix tcp}
scale=${DCX_BENCH_SCALE:-1}
tmo=${DCX_BENCH_TIMEOUT:-30}
reps=${DCX_BENCH_REPEAT:-2}
budget=${DCX_BENCH_BUDGET:-120}
logdir=""
verbose=0
pin=${DCX_BENCH_PIN:-0}
alt=0
sizes=${DCX_BENCH_SIZES:-}
tests=${DCX_BENCH_TESTS:-am_lat am_bw put_lat put_bw get tag_lat tag_bw tag_lat_sleep}

while getopts "t:s:r:l:S:T:aPvh" opt; do
    case $opt in
    a) alt=1 ;;
    S) sizes=$OPTARG ;;
    T) tests=$OPTARG ;;
    t) tls_list=$OPTARG ;;
    s) scale=$OPTARG ;;
    r) reps=$OPTARG ;;
    l) logdir=$OPTARG ;;
    v) verbose=1 ;;
    P) pin=1 ;;
    h) sed -n '3,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
if [ -z "$sizes" ]; then
    # the default run stays short; the alternating one covers 4 MiB too
    if [ $alt = 1 ]; then sizes="8 4096 1048576 4194304"; else sizes="8 4096 1048576"; fi
fi

command -v ucx_perftest >/dev/null || { echo "perftest.sh: ucx_perftest not found" >&2; exit 2; }
bench_pin perftest.sh "$pin" || exit 2
command -v ucx_info >/dev/null || { echo "perftest.sh: ucx_info not found" >&2; exit 2; }
awk -v s="$scale" 'BEGIN { exit !(s + 0 > 0) }' || { echo "perftest.sh: bad scale '$scale'" >&2; exit 2; }
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || { echo "perftest.sh: bad repeat count '$reps'" >&2; exit 2; }
[[ "$budget" =~ ^[0-9]+$ ]] || { echo "perftest.sh: bad time budget '$budget'" >&2; exit 2; }
reps0=$reps

keep_logs=1
if [ -z "$logdir" ]; then
    logdir=$(mktemp -d /tmp/dcx-perfbench.XXXXXX) || exit 2
    keep_logs=0
fi
mkdir -p "$logdir" || exit 2

# ---------------------------------------------------------------- dcx wrapper
find_wrapper() {
    local w
    if [ -n "${DCX_RUN:-}" ]; then echo "$DCX_RUN"; return; fi
    if w=$(command -v dcx-run); then echo "$w"; return; fi
    for w in "$top"/build/contrib/dcx-run "$top"/build*/contrib/dcx-run; do
        [ -x "$w" ] || continue
        # a sanitizer-built module cannot be preloaded into ucx_perftest
        if ldd "$("$w" --lib 2>/dev/null)" 2>/dev/null | grep -q libasan; then
            continue
        fi
        echo "$w"; return
    done
}

dcx_ok=1
dcx_why=""
dcx_run=""
if [[ " $tls_list " == *" dcx "* ]]; then
    dcx_run=$(find_wrapper)
    if [ -z "$dcx_run" ] || [ ! -x "$dcx_run" ]; then
        dcx_ok=0; dcx_why="dcx-run wrapper not found (set DCX_RUN)"
    elif ! "$dcx_run" --lib >/dev/null 2>&1; then
        dcx_ok=0; dcx_why="'$dcx_run --lib' failed"
    fi
fi

# ---------------------------------------------------------------- caps
# One ucx_info -d (under the wrapper when dcx is wanted, so it is listed
# too) gives "tl dev op limit" lines, e.g. "dcx soft0:1 put_short 828".
caps_file=$logdir/caps.txt
{
    if [ -n "$dcx_run" ] && [ $dcx_ok = 1 ]; then
        timeout "$tmo" "$dcx_run" --soft --fabric "pb$$-caps" ucx_info -d
    else
        timeout "$tmo" ucx_info -d
    fi
} 2>"$logdir/ucx_info.err" | awk '
    function bytes(v,   n, u) {
        if (v == "unlimited") return 9e18
        n = v + 0; u = substr(v, length(v))
        if (u == "K") n *= 1024; else if (u == "M") n *= 1048576
        else if (u == "G") n *= 1073741824; else if (u == "T") n *= 1099511627776
        return n
    }
    /Transport:/ { tl = $NF; next }
    /Device:/    { dev = $NF; next }
    /^# +(am|put|get)_(short|bcopy|zcopy): / {
        op = $2; sub(":", "", op)
        v = ($3 == "<=") ? $4 : $3
        gsub(/,/, "", v)
        print tl, dev, op, bytes(v)
    }' >"$caps_file"

cap() {   # cap TL DEV OP -> max bytes, empty if not supported
    awk -v t="$1" -v d="$2" -v o="$3" '$1 == t && $2 == d && $3 == o { print $4; exit }' "$caps_file"
}

# pick_method TL DEV OP SIZE -> short|bcopy|zcopy, or nothing
pick_method() {
    local tl=$1 dev=$2 op=$3 size=$4 m lim order
    if [ "$size" -lt 65536 ]; then order="short bcopy zcopy"; else order="zcopy bcopy short"; fi
    # ucx_perftest's UCT get test has no short variant (UCX 1.13.1
    # uct_tests.cc calls only uct_ep_get_bcopy/zcopy and fails "Invalid
    # parameter" for -D short), whatever get_short the transport offers
    [ "$op" = get ] && order=${order/short/}
    for m in $order; do
        lim=$(cap "$tl" "$dev" "${op}_$m")
        [ -n "$lim" ] || continue
        if awk -v l="$lim" -v s="$size" 'BEGIN { exit !(s <= l) }'; then
            echo "$m"; return
        fi
    done
}

uct_dev() {
    case $1 in
    dcx) echo soft0:1 ;;
    posix) echo memory ;;
    tcp) echo lo ;;
    *) echo "" ;;
    esac
}

# ---------------------------------------------------------------- running

# iterations for a test kind and size, times the scale; warm-up is a tenth.
# A large-message run lasts at least ~50 ms on either transport (4 MiB at
# 25 GB/s is 170 us): with 60 or 30 messages a run was over in 5-20 ms, a
# few scheduler ticks, and one preemption moved its figure by a quarter.
iters_for() {   # iters_for lat|bw SIZE
    local n
    case $1:$2 in
    lat:1048576) n=400 ;;
    lat:4194304) n=150 ;;
    lat:*)       n=5000 ;;
    bw:8)        n=40000 ;;
    bw:1048576)  n=1000 ;;
    bw:4194304)  n=300 ;;
    bw:*)        n=10000 ;;
    esac
    awk -v n="$n" -v s="$scale" 'BEGIN { v = int(n * s); print (v < 10 ? 10 : v) }'
}

# run_pair NAME TL ENVLIST -- PERFTEST ARGS: bench_pair, under dcx-run
# for dcx, with the words of ENVLIST as the environment
run_pair() {
    local name=$1 tl=$2 wrap=""
    local -a envs
    read -r -a envs <<<"$3"
    shift 4
    [ "$tl" = dcx ] && wrap=$dcx_run
    bench_pair "$name" "$wrap" ${envs[@]+"${envs[@]}"} -- "$@"
}

# Results: R[key]="iters p50 avg overall bw_avg bw_overall mr_avg mr_overall"
# or "NA note-text"; key = "level:test:size:tl". M[key] = data path used.
declare -A R M B
dcx_failed=0

final_line() {   # the numbers of the client's Final: line
    awk '/^Final:/ { print $2, $3, $4, $5, $6, $7, $8, $9 }' "$1" | tail -1
}


# measure KEY NAME TL KIND ENVS -- PERFTEST ARGS
# Runs the pair $reps times and keeps the best run (lowest overall latency,
# highest overall bandwidth): on a shared 2-core machine a run can lose the
# CPU to anything else, and the best run is the one that did not. Any failed
# repetition makes the cell n/a.
measure() {
    if [ $alt = 1 ]; then
        measure_alt "$@"
        return
    fi
    local key=$1 name=$2 tl=$3 kind=$4 envs=$5; shift 6
    local r vals best="" rname
    for r in $(seq 1 "$reps"); do
        rname=$name.$r
        if ! run_pair "$rname" "$tl" "$envs" -- "$@" ||
           ! vals=$(final_line "$logdir/$rname.client") || [ -z "$vals" ]; then
            R[$key]="NA $tl: $(bench_fail_note "$rname")"
            [ "$tl" = dcx ] && dcx_failed=1
            return 1
        fi
        if [ -z "$best" ] || awk -v k="$kind" -v a="$vals" -v b="$best" 'BEGIN {
               split(a, x, " "); split(b, y, " ")
               exit !(k == "lat" ? x[4] < y[4] : x[6] > y[6]) }'; then
            best=$vals
            B[$key]=$rname
        fi
    done
    R[$key]=$best
}

# measure_alt: like measure, one run (repetition $alt_rep) added to the
# cell's runs; the cell holds the median run so far (by overall latency or
# overall bandwidth) and S[KEY] the spread, max/min of that figure.
measure_alt() {
    local key=$1 name=$2 tl=$3 kind=$4 envs=$5; shift 6
    local rname=$name.$alt_rep vals col=6
    [ "$kind" = lat ] && col=4
    [[ "${R[$key]:-}" == NA* ]] && return 1
    if ! run_pair "$rname" "$tl" "$envs" -- "$@" ||
       ! vals=$(final_line "$logdir/$rname.client") || [ -z "$vals" ]; then
        R[$key]="NA $tl: $(bench_fail_note "$rname")"
        [ "$tl" = dcx ] && dcx_failed=1
        return 1
    fi
    V[$key]+="$vals"$'\n'
    B[$key]=$rname
    R[$key]=$(printf '%s' "${V[$key]}" | sort -g -k$col |
              awk '{ a[NR] = $0 } END { print a[int((NR + 1) / 2)] }')
    S[$key]=$(printf '%s' "${V[$key]}" | awk -v c=$col '
              NR == 1 || $c < mn { mn = $c } NR == 1 || $c > mx { mx = $c }
              END { printf "%.2f (%d runs)", (mn > 0) ? mx / mn : 0, NR }')
}

uct_cell() {   # uct_cell TEST OP KIND SIZE TL
    local test=$1 op=$2 kind=$3 size=$4 tl=$5 dev meth n key
    key="uct:$test:$size:$tl"
    dev=$(uct_dev "$tl")
    if [ "$tl" = dcx ] && [ $dcx_ok = 0 ]; then
        R[$key]="NA dcx: $dcx_why"; dcx_failed=1; return
    fi
    meth=$(pick_method "$tl" "$dev" "$op" "$size")
    if [ -z "$meth" ]; then
        R[$key]="NA $tl: no ${op} data path takes $size B (ucx_info -d: ${op}_short/bcopy/zcopy limits)"
        return
    fi
    M[$key]=$meth
    n=$(iters_for "$kind" "$size")
    measure "$key" "uct_${test}_${size}_$tl" "$tl" "$kind" "" -- \
            -x "$tl" -d "$dev" -t "$test" -D "$meth" -s "$size" -n "$n" -w $((n / 10 > 0 ? n / 10 : 1))
}

ucp_cell() {   # ucp_cell TEST KIND SIZE TL
    local test=$1 kind=$2 size=$3 tl=$4 n key envs used targs
    key="ucp:$test:$size:$tl"
    if [ "$tl" = dcx ] && [ $dcx_ok = 0 ]; then
        R[$key]="NA dcx: $dcx_why"; dcx_failed=1; return
    fi
    envs="UCX_TLS=$tl,self UCX_LOG_LEVEL=info"
    [ "$tl" = tcp ] && envs="$envs UCX_NET_DEVICES=lo"
    n=$(iters_for "$kind" "$size")
    targs=(-t "$test")
    # wake-up mode: every side sleeps in ucp_worker_wait when idle
    [ "$test" = tag_lat_sleep ] && targs=(-t tag_lat -E sleep)
    measure "$key" "ucp_${test}_${size}_$tl" "$tl" "$kind" "$envs" -- \
            "${targs[@]}" -s "$size" -n "$n" -w $((n / 10 > 0 ? n / 10 : 1)) || return
    # the endpoint must really run over the transport asked for
    used=$(grep -oE 'ep_cfg\[[0-9]+\]: .*' "$logdir/${B[$key]}.client" | grep -oE '[a-z0-9_]+/' | tr -d / | sort -u | paste -sd' ')
    if [[ "${R[$key]}" != NA* ]] && ! grep -qw "$tl" <<<"$used"; then
        R[$key]="NA $tl: UCP did not use $tl (ep_cfg lanes: ${used:-none})"
        [ "$tl" = dcx ] && dcx_failed=1
    fi
}

declare -A V S
load0=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$SECONDS
for tl in $tls_list; do
    if [ -z "$(uct_dev "$tl")" ]; then
        echo "perftest.sh: unknown transport '$tl' (known: dcx posix tcp)" >&2; exit 2
    fi
done
for t in $tests; do
    case $t in
    am_lat|am_bw|put_lat|put_bw|get|tag_lat|tag_bw|tag_lat_sleep) ;;
    *) echo "perftest.sh: unknown test '$t' (known: am_lat am_bw put_lat put_bw get tag_lat tag_bw tag_lat_sleep)" >&2; exit 2 ;;
    esac
done

# Cells run one after the other with the transports interleaved, so that a
# burst of other load on the machine hits all transports of a cell alike.
# Past the time budget, repetitions stop (the table header says so).
cells=()
for size in 8 4096; do
    cells+=("uct_cell am_lat am lat $size" "uct_cell am_bw am bw $size"
            "ucp_cell tag_lat_sleep lat $size")
done
for size in $sizes; do
    cells+=("uct_cell put_lat put lat $size" "uct_cell put_bw put bw $size"
            "uct_cell get get bw $size"
            "ucp_cell tag_lat lat $size" "ucp_cell tag_bw bw $size")
done
reps_cut=""
for c in "${cells[@]}"; do
    read -r _ c_test _ <<<"$c"
    [[ " $tests " == *" $c_test "* ]] || continue
    if [ $alt = 1 ]; then
        echo "# $((SECONDS - t0))s: ${c#* } ($reps alternating runs)" >&2
        for alt_rep in $(seq 1 "$reps"); do
            for tl in $tls_list; do
                $c "$tl"
            done
        done
        continue
    fi
    if [ "$reps" -gt 1 ] && [ $((SECONDS - t0)) -ge "$budget" ]; then
        reps=1; reps_cut="${c#* }"
    fi
    echo "# $((SECONDS - t0))s: ${c#* }" >&2
    for tl in $tls_list; do
        $c "$tl"
    done
done
elapsed=$((SECONDS - t0))

# ---------------------------------------------------------------- tables
notes=()

tl_arr=($tls_list)
have() { [[ " $tls_list " == *" $1 "* ]]; }
ratio_cols=()
have dcx && have posix && ratio_cols+=(posix)
have dcx && have tcp && ratio_cols+=(tcp)

size_name() {
    case $1 in 8) echo "8 B" ;; 4096) echo "4 KiB" ;; 1048576) echo "1 MiB" ;; 4194304) echo "4 MiB" ;; *) echo "$1 B" ;; esac
}

# field numbers in R values: 2=p50 4=overall lat 6=MB/s overall 8=msg/s overall
fmt_num() {
    awk -v v="$1" 'BEGIN {
        if (v >= 100000) printf "%.0f", v; else if (v >= 100) printf "%.1f", v;
        else if (v >= 1) printf "%.2f", v; else printf "%.3f", v }'
}

value_of() {   # value_of KEY FIELD -> number or empty
    local r=${R[$1]:-}
    [ -z "$r" ] || [[ "$r" == NA* ]] && return
    echo "$r" | awk -v f="$2" '{ print $f }'
}

# row LABEL KEY-PREFIX(level:test:size) FIELD
row() {
    local label=$1 kp=$2 field=$3 tl key cell v d o line ref
    line=$(printf "%-24s" "$label")
    for tl in "${tl_arr[@]}"; do
        key="$kp:$tl"
        if [ -z "${R[$key]:-}" ]; then
            cell="-"
        elif [[ "${R[$key]}" == NA* ]]; then
            bench_note_ref "${R[$key]#NA }"   # not in a subshell: it adds to notes
            cell="n/a $ref"
        else
            cell=$(fmt_num "$(value_of "$key" "$field")")
            [ -n "${M[$key]:-}" ] && cell="$cell ${M[$key]}"
        fi
        line+=$(printf " %17s" "$cell")
    done
    for o in "${ratio_cols[@]}"; do
        d=$(value_of "$kp:dcx" "$field")
        v=$(value_of "$kp:$o" "$field")
        if [ -n "$d" ] && [ -n "$v" ] && awk -v v="$v" 'BEGIN { exit !(v > 0) }'; then
            cell=$(awk -v d="$d" -v v="$v" 'BEGIN { r = d / v; printf (r < 0.1 ? "%.2g" : "%.2f"), r }')
        else
            cell="n/a"
        fi
        line+=$(printf " %10s" "$cell")
    done
    echo "$line"
}

header() {   # header TITLE
    local tl o line
    echo
    echo "$1"
    line=$(printf "%-24s" "")
    for tl in "${tl_arr[@]}"; do line+=$(printf " %17s" "$tl"); done
    for o in "${ratio_cols[@]}"; do line+=$(printf " %10s" "dcx/$o"); done
    echo "$line"
    echo "$line" | sed 's/./-/g'
}

echo "load average before: $load0, after: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews results)"
echo "UCX $(ucx_info -v 2>/dev/null | sed -n 's/^# Version //p' | head -1) ;" \
     "$(nproc) cores; scale $scale; $(if [ $alt = 1 ]; then echo "median of $reps0 alternating runs per cell"; else echo "best of $reps0 runs per cell${reps_cut:+ (1 run from '$reps_cut' on: time budget)}"; fi); ${elapsed}s of runs"
[ -n "$dcx_run" ] && echo "dcx module: $("$dcx_run" --lib 2>/dev/null)"
echo "UCT cells show the data path (-D) each transport used."

header "UCT latency, usec (lower is better; ratio < 1: dcx faster)"
for t in am_lat put_lat; do
    for size in $sizes; do
        [ $t = am_lat ] && [ $size -ge 1048576 ] && continue
        row "$t $(size_name $size) p50" "uct:$t:$size" 2
        row "$t $(size_name $size) overall" "uct:$t:$size" 4
    done
done

header "UCT bandwidth, MB/s overall (higher is better; ratio > 1: dcx faster)"
for t in am_bw put_bw get; do
    for size in $sizes; do
        [ $t = am_bw ] && [ $size -ge 1048576 ] && continue
        row "$t $(size_name $size)" "uct:$t:$size" 6
    done
done

header "UCT message rate, msg/s overall (higher is better; ratio > 1: dcx faster)"
for t in am_bw put_bw get; do
    for size in $sizes; do
        [ $t = am_bw ] && [ $size -ge 1048576 ] && continue
        row "$t $(size_name $size)" "uct:$t:$size" 8
    done
done

header "UCP latency (UCX_TLS=<tl>,self), usec (lower is better; ratio < 1: dcx faster)"
for size in $sizes; do
    row "tag_lat $(size_name $size) p50" "ucp:tag_lat:$size" 2
    row "tag_lat $(size_name $size) overall" "ucp:tag_lat:$size" 4
done

header "UCP latency in wake-up mode (-E sleep), usec (lower is better; ratio < 1: dcx faster)"
for size in 8 4096; do
    row "tag_lat_sleep $(size_name $size) p50" "ucp:tag_lat_sleep:$size" 2
    row "tag_lat_sleep $(size_name $size) overall" "ucp:tag_lat_sleep:$size" 4
done

header "UCP bandwidth (UCX_TLS=<tl>,self) (higher is better; ratio > 1: dcx faster)"
for size in $sizes; do
    row "tag_bw $(size_name $size) MB/s" "ucp:tag_bw:$size" 6
done
for size in $sizes; do
    row "tag_bw $(size_name $size) msg/s" "ucp:tag_bw:$size" 8
done

header "UCT get latency, usec overall (lower is better; ratio < 1: dcx faster)"
for size in $sizes; do
    row "get $(size_name $size)" "uct:get:$size" 4
done

if [ $alt = 1 ]; then
    echo
    echo "Spread: max/min of each cell's figure over its runs (latency: overall"
    echo "usec; bandwidth: overall MB/s); 1.00 means every run gave the same."
    for key in $(printf '%s\n' "${!S[@]}" | sort -t: -k1,1 -k2,2 -k3,3n -k4,4); do
        printf "  %-32s %s\n" "$key" "${S[$key]}"
    done
fi

echo
echo "Not covered: am_lat/am_bw at 1 MiB and up (larger than any transport's largest active message)."
if [ ${#notes[@]} -gt 0 ]; then
    echo "Notes:"
    for i in "${!notes[@]}"; do
        echo "  [$((i + 1))] ${notes[$i]}"
    done
fi

if [ $dcx_failed = 1 ]; then
    echo "dcx: at least one run failed; logs kept in $logdir"
    exit 1
fi
if [ ${#notes[@]} -gt 0 ] || [ $keep_logs = 1 ]; then
    echo "logs: $logdir"
else
    rm -rf "$logdir"
fi
exit 0
