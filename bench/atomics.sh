#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# ucx_perftest atomics over dcx (the soft device) and posix in one run, side
# by side: per test the dcx figure, the posix figure and dcx/posix.
#
#   bench/atomics.sh [-r REPEAT] [-n ITERS] [-b DCX_RUN] [-l LOGDIR] [-P] [-v]
#
#   -r, DCX_BENCH_REPEAT runs per cell, dcx and posix taking turns (dcx,
#                        posix, dcx, ...); the median is shown (for an even
#                        count the lower middle run) with the spread, max/min
#                        over the runs (default 5)
#   -n ITERS             ucx_perftest iterations per run (default 100000;
#                        warm-up a tenth); the default run takes about a
#                        minute on 2 cores
#   -b DCX_RUN           also run dcx from another build (its dcx-run
#                        wrapper, e.g. of the commit before a change) as a
#                        column "before", taking turns with the others: the
#                        before/after of a change in one run
#   -l LOGDIR            keep every server/client log there (default: a
#                        temporary directory, removed unless something failed)
#   -v                   print each run's command line and Final: line
#   -P, DCX_BENCH_PIN    pin the server to CPU 0 and the client to CPU 1
#                        (taskset; set to 1 to enable); only on a quiet
#                        machine: a pinned process cannot move away from a
#                        CPU that other work is using
#   DCX_RUN              dcx-run wrapper (default: from PATH, else the first
#                        <repo>/build*/contrib/dcx-run that is not a
#                        sanitizer build)
#   DCX_BENCH_TIMEOUT    seconds allowed per server/client run (default 30)
#
# Tests, each with 64-bit and 32-bit operands (-s 8 and -s 4):
#   UCT (dcx: -x dcx -d soft0:1 under dcx-run --soft with a fresh soft fabric
#   per run; posix: -x posix -d memory): add_lat (ucx_perftest's UCT add: a
#   ping-pong of atomic adds, half a round trip), fadd and cswap (one
#   operation and its result at a time). A width the transport does not list
#   in `ucx_info -d` is not run.
#   UCP (UCX_TLS=dcx,self and posix,self): ucp_fadd and ucp_cswap (one
#   operation and its result at a time) and ucp_add (adds posted one after the
#   other without waiting for completion: the time to post one, which
#   ucx_perftest calls overhead). The client runs with UCX_LOG_LEVEL=info;
#   its ep_cfg line must name the transport, or for dcx (whose atomic-only
#   endpoint has no am lane, so UCP prints no ep_cfg line) the dcx md's
#   traffic line must count packets sent or atomics executed directly.
#
# Figures, in usec: the typical latency (the 50th percentile, the first
# latency column of ucx_perftest's Final: line), and in a second table the
# overall latency (total time / iterations). Lower is better; dcx/posix < 1
# means dcx is faster. A run that fails, or a test a transport does not
# offer, prints n/a and a numbered note, never a figure. Exit status: 1 if
# any dcx run failed, 2 on a usage or setup error, else 0.

set -u
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

reps=${DCX_BENCH_REPEAT:-5}
iters=100000
tmo=${DCX_BENCH_TIMEOUT:-30}
pin=${DCX_BENCH_PIN:-0}
logdir=""
verbose=0
dcx_run_before=""

while getopts "r:n:b:l:Pvh" opt; do
    case $opt in
    b) dcx_run_before=$OPTARG ;;
    r) reps=$OPTARG ;;
    n) iters=$OPTARG ;;
    l) logdir=$OPTARG ;;
    P) pin=1 ;;
    v) verbose=1 ;;
    h) sed -n '3,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || { echo "atomics.sh: unexpected argument '$1' (-h for usage)" >&2; exit 2; }

[[ "$reps" =~ ^[1-9][0-9]*$ ]] || { echo "atomics.sh: bad repeat count '$reps'" >&2; exit 2; }
[[ "$iters" =~ ^[1-9][0-9]*$ ]] || { echo "atomics.sh: bad iteration count '$iters'" >&2; exit 2; }
[[ "$tmo" =~ ^[1-9][0-9]*$ ]] || { echo "atomics.sh: bad timeout '$tmo'" >&2; exit 2; }
for tool in ucx_perftest ucx_info; do
    command -v $tool >/dev/null || { echo "atomics.sh: $tool not found" >&2; exit 2; }
done
bench_pin atomics.sh "$pin" || exit 2

if [ -n "${DCX_RUN:-}" ]; then
    dcx_run=$DCX_RUN
elif ! dcx_run=$(command -v dcx-run); then
    build=$(bench_find_build atomics.sh) || exit 2
    dcx_run=$build/contrib/dcx-run
fi
dcx_lib=$("$dcx_run" --lib 2>/dev/null) ||
    { echo "atomics.sh: '$dcx_run --lib' failed" >&2; exit 2; }
tls=(dcx posix)
if [ -n "$dcx_run_before" ]; then
    before_lib=$("$dcx_run_before" --lib 2>/dev/null) ||
        { echo "atomics.sh: '$dcx_run_before --lib' failed" >&2; exit 2; }
    tls=(before dcx posix)
fi

keep_logs=1
if [ -z "$logdir" ]; then
    logdir=$(mktemp -d /tmp/dcx-atomics.XXXXXX) || exit 2
    keep_logs=0
fi
mkdir -p "$logdir" || exit 2

# ---------------------------------------------------------------- the record
commit=$(git -C "$bench_top" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$bench_top" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    commit="$commit (with uncommitted changes)"
fi
load0=$(cut -d' ' -f1-3 /proc/loadavg)
runs_s=s
[ "$reps" = 1 ] && runs_s=""
echo "atomics.sh: ucx_perftest atomics, dcx (soft0:1) next to posix (memory)"
echo "load average at start: $load0 ($(nproc) cores; other work on the machine skews the figures)"
echo "commit: $commit"
echo "dcx module: $dcx_lib"
[ -n "$dcx_run_before" ] && echo "before: dcx module $before_lib"
echo "UCX $(ucx_info -v 2>/dev/null | sed -n 's/^# Version //p' | head -1);" \
     "$reps alternating run$runs_s per cell, $iters iterations each;" \
     "$(if [ ${#srv_pin[@]} -gt 0 ]; then echo "server on CPU 0, client on CPU 1"; else echo "not pinned"; fi)"

# ---------------------------------------------------------------- caps
# "tl dev op bits" lines from one ucx_info -d under the wrapper, e.g.
# "dcx soft0:1 atomic_fadd 32", "posix memory atomic_cswap 64"
caps=$logdir/caps.txt
timeout "$tmo" "$dcx_run" --soft --fabric "at$$-caps" ucx_info -d 2>"$logdir/ucx_info.err" |
    awk '/Transport:/ { tl = $NF; next }
         /Device:/    { dev = $NF; next }
         /^# +atomic_[a-z]+: / {
             op = $2; sub(":", "", op)
             for (i = 3; i <= NF; i++) {
                 w = $i; gsub(/,/, "", w)
                 if (w == "32" || w == "64") print tl, dev, op, w
             }
         }' >"$caps"

has_cap() {   # has_cap TL DEV OP BITS
    awk -v t="$1" -v d="$2" -v o="$3" -v b="$4" '
        $1 == t && $2 == d && $3 == o && $4 == b { f = 1 } END { exit !f }' "$caps"
}

# ---------------------------------------------------------------- running
# run_pair NAME COLUMN -- ENV... -- PERFTEST ARGS: bench_pair under the
# column's dcx-run (none for posix)
run_pair() {
    local name=$1 wrap=""
    case $2 in
    dcx) wrap=$dcx_run ;;
    before) wrap=$dcx_run_before ;;
    esac
    shift 3
    bench_pair "$name" "$wrap" "$@"
}

# ucp_check TL LOG: empty if UCP ran its atomics over TL, else the reason
ucp_check() {
    local tl=$1 log=$2 lanes ops
    lanes=$(grep -oE 'ep_cfg\[[0-9]+\]: .*' "$log" | sort -u | paste -sd' ')
    if [ -n "$lanes" ]; then
        grep -q "amo[_a-z]*($tl/" <<<"$lanes" && return
        echo "UCP did not run atomics over $tl ($lanes)"
        return
    fi
    if [ "$tl" = dcx ]; then
        # "dcx md soft0: traffic: tx N packets ...; direct ... [A atomics]":
        # packets sent, or atomics the device executed directly
        ops=$(grep -E 'dcx md [^ ]+: traffic: ' "$log" | awk '{
                  for (i = 2; i <= NF; i++) {
                      if ($(i - 1) == "tx" && $(i + 1) == "packets") n += $i
                      if ($(i + 1) == "atomics") n += $i
                  }
              } END { print n + 0 }')
        [ "$ops" -gt 0 ] && return
    fi
    if [ "$tl" = dcx ]; then
        echo "could not tell which transport UCP used (no ep_cfg line, no dcx md traffic line)"
    else
        echo "could not tell which transport UCP used (no ep_cfg line)"
    fi
}

# Results per key "level:test:bits:tl": V = "typical overall" lines, one per
# run; NA = the reason the cell has no figure; EMU = 1 where UCP emulated the
# atomics over active messages.
declare -A V NA EMU
dcx_failed=0

# cell LEVEL TEST BITS TL: one run of the cell, added to V
cell() {
    local level=$1 test=$2 bits=$3 col=$4 tl=$4 key name dev reason vals args envs=()
    [ "$col" = before ] && tl=dcx
    key=$level:$test:$bits:$col
    [ -n "${NA[$key]:-}" ] && return
    name=${level}_${test}_${bits}_$col.$rep
    if [ "$level" = uct ]; then
        if [ "$tl" = dcx ]; then dev=soft0:1; else dev=memory; fi
        if ! has_cap "$tl" "$dev" "atomic_${test%_lat}" "$bits"; then
            NA[$key]="$tl $dev: ucx_info -d lists no ${bits}-bit atomic_${test%_lat}"
            return
        fi
        args=(-x "$tl" -d "$dev")
    else
        envs=(UCX_TLS="$tl,self" UCX_LOG_LEVEL=info)
        args=()
    fi
    args+=(-t "$test" -s $((bits / 8)) -n "$iters" -w $((iters / 10 > 0 ? iters / 10 : 1)))
    if ! run_pair "$name" "$col" -- ${envs[@]+"${envs[@]}"} -- "${args[@]}"; then
        NA[$key]="$col: $(bench_fail_note "$name")"
        [ "$col" = dcx ] && dcx_failed=1
        return
    fi
    if [ "$level" = ucp ]; then
        reason=$(ucp_check "$tl" "$logdir/$name.client")
        if [ -n "$reason" ]; then
            NA[$key]="$col: $reason"
            [ "$col" = dcx ] && dcx_failed=1
            return
        fi
        grep -q "amo_am($tl/" "$logdir/$name.client" && EMU[$key]=1
    fi
    # Final: iters typical avg overall (latency, usec) ...
    vals=$(awk '/^Final:/ { v = $3 " " $5 } END { print v }' "$logdir/$name.client")
    V[$key]+="$vals"$'\n'
}

cells=()
for t in add_lat fadd cswap; do
    cells+=("uct $t 64" "uct $t 32")
done
for t in ucp_add ucp_fadd ucp_cswap; do
    cells+=("ucp $t 64" "ucp $t 32")
done

t0=$SECONDS
for c in "${cells[@]}"; do
    echo "# $((SECONDS - t0))s: $c" >&2
    for rep in $(seq 1 "$reps"); do
        for tl in "${tls[@]}"; do
            # shellcheck disable=SC2086 # c is "LEVEL TEST BITS"
            cell $c "$tl"
        done
    done
done
elapsed=$((SECONDS - t0))

# ---------------------------------------------------------------- tables
notes=()

# stat KEY COLUMN -> "median min max" of that column over the runs, or nothing
stat() {
    [ -n "${V[$1]:-}" ] || return
    printf '%s' "${V[$1]}" | awk -v c="$2" '{ print $c }' | sort -g |
        awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)], v[1], v[NR] }'
}

fmt_ratio() {   # fmt_ratio A B -> A/B, or n/a unless both are > 0
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (!(a > 0 && b > 0)) { print "n/a"; exit }
        r = a / b
        if (r >= 100) printf "%.0f", r; else if (r < 0.1) printf "%.2g", r; else printf "%.2f", r }'
}

fmt_spread() {   # fmt_spread MIN MAX
    awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "n/a" }'
}

coarse=0
table() {   # table COLUMN TITLE
    local col=$1 c level test bits tl key med mn mx ratio line
    local -A m s cellv
    echo
    echo "$2"
    line=$(printf "%-22s" "")
    [ ${#tls[@]} = 3 ] && line+=$(printf " %12s %12s" before before/posix)
    printf "%s %12s %12s %10s %11s %13s\n" "$line" dcx posix dcx/posix "dcx spread" "posix spread"
    for c in "${cells[@]}"; do
        read -r level test bits <<<"$c"
        for tl in "${tls[@]}"; do
            key=$level:$test:$bits:$tl
            m[$tl]=""
            s[$tl]=n/a
            if [ -n "${NA[$key]:-}" ]; then
                bench_note_ref "${NA[$key]}"
                cellv[$tl]="n/a $ref"
            else
                read -r med mn mx <<<"$(stat "$key" "$col")"
                m[$tl]=$med
                s[$tl]=$(fmt_spread "$mn" "$mx")
                cellv[$tl]=$med
                if [ -n "${EMU[$key]:-}" ]; then
                    bench_note_ref "$tl: UCP emulated the atomics over active messages (amo_am in ep_cfg)"
                    cellv[$tl]="$med $ref"
                fi
            fi
            if [ -n "${m[$tl]}" ] && awk -v v="${m[$tl]}" 'BEGIN { exit !(v < 0.1) }'; then
                coarse=1
            fi
        done
        line=$(printf "%-22s" "${level^^} $test ${bits}-bit")
        if [ ${#tls[@]} = 3 ]; then
            line+=$(printf " %12s %12s" "${cellv[before]}" "$(fmt_ratio "${m[before]}" "${m[posix]}")")
        fi
        ratio=$(fmt_ratio "${m[dcx]}" "${m[posix]}")
        line+=$(printf " %12s %12s %10s %11s %13s" "${cellv[dcx]}" "${cellv[posix]}" "$ratio" "${s[dcx]}" "${s[posix]}")
        echo "$line"
    done
}

table 1 "Typical latency (ucx_perftest's 50th percentile), usec, median of $reps run$runs_s (lower is better; dcx/posix < 1: dcx faster)"
table 2 "Overall latency (total time / iterations), usec, median of $reps run$runs_s"

echo
echo "add_lat: half a round trip; fadd, cswap, ucp_fadd, ucp_cswap: one operation and its result;"
echo "ucp_add: the time to post one add (no wait for completion). Spread: max/min over the runs."
if [ $coarse = 1 ]; then
    echo "Figures under 0.1 usec are a few ticks of ucx_perftest's clock; ratios between them"
    echo "are coarse."
fi
if [ ${#notes[@]} -gt 0 ]; then
    echo "Notes:"
    for i in "${!notes[@]}"; do
        echo "  [$((i + 1))] ${notes[$i]}"
    done
fi
echo "load average at start: $load0, after: $(cut -d' ' -f1-3 /proc/loadavg); ${elapsed}s of runs"

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
