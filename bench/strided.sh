#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Strided column benchmark (bench/strided.c): one column of an N x N matrix
# of doubles, N = 256..8192, moved three ways side by side -- one put into
# the peer's strided key ("key"), pack + one put ("pack"), one iov entry
# per element in puts of max_iov entries ("iov") -- over dcx on the soft
# device.  Prints
#   1. the median time per transfer (methods alternating in every round);
#   2. the sender's CPU instructions per transfer, counted by callgrind with
#      collection toggled on only inside the posting functions
#      (--toggle-collect=bench_post_*): posting, packing and whatever the
#      device does inline while posting, not the wait for completion;
#   3. the ratios, and the crossover: the smallest N from which the key
#      beats packing.
#
#   bench/strided.sh [-b BUILD_DIR] [-n N,N,...] [-r ROUNDS] [-k COUNT_ROUNDS]
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build="$top/build"
sizes="256,512,1024,2048,4096,8192"
rounds=31
count_rounds=20
while getopts "b:n:r:k:" o; do
    case $o in
    b) build=$(cd "$OPTARG" && pwd) ;;
    n) sizes=$OPTARG ;;
    r) rounds=$OPTARG ;;
    k) count_rounds=$OPTARG ;;
    *) echo "usage: $0 [-b build] [-n N,...] [-r rounds] [-k count_rounds]" >&2
       exit 2 ;;
    esac
done

bin="$build/bench/strided"
[ -x "$bin" ] || { echo "strided.sh: build bench/strided first (make)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== time per transfer (median of $rounds, us)"
# DCX_BENCH_STRIDED_ARGS=-a: the target's matrix is device memory
# shellcheck disable=SC2086
"$bin" -q -r "$rounds" -n "$sizes" ${DCX_BENCH_STRIDED_ARGS:-} | tee "$tmp/time"

echo
echo "== sender instructions per transfer (callgrind, posting code only)"
calls=$((count_rounds + 1))   # the warm-up round is counted too
if command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null; then
    for n in ${sizes//,/ }; do
        line="N=$n"
        for m in key pack iov; do
            rm -f "$tmp"/cg.*
            valgrind --tool=callgrind --toggle-collect="bench_post_$m" \
                --callgrind-out-file="$tmp/cg.%p" \
                "$bin" -c -m "$m" -r "$count_rounds" -n "$n" >"$tmp/vg.log" 2>&1 ||
                { cat "$tmp/vg.log" >&2; exit 1; }
            # the total, and the part spent in memcpy/memmove: the soft
            # device copying the payload into its packets
            line="$line $(for f in "$tmp"/cg.*; do
                    callgrind_annotate --threshold=100 --auto=no "$f" 2>/dev/null
                done | awk -v m="$m" -v calls="$calls" '
                    /PROGRAM TOTALS/ { gsub(",", "", $1); if ($1 ~ /^[0-9]+$/) tot += $1 }
                    /__mem(cpy|move)/ { gsub(",", "", $1); if ($1 ~ /^[0-9]+$/) cp += $1 }
                    END { printf "%s_ir=%.0f %s_copy=%.0f", m, tot / calls, m, cp / calls }')"
        done
        echo "$line"
    done | tee "$tmp/ir"
else
    echo "(valgrind not installed: no instruction counts)"
    : >"$tmp/ir"
fi

echo
echo "== summary"
awk '
    FNR == NR {
        split($1, n, "="); split($2, mm, "="); split($3, t, "=")
        time[n[2], mm[2]] = t[2]
        if (!(n[2] in seen)) { order[++k] = n[2]; seen[n[2]] = 1 }
        next
    }
    {
        split($1, n, "=")
        for (f = 2; f <= NF; ++f) { split($f, kv, "="); v[n[2], kv[1]] = kv[2] }
        for (j = 1; j <= 3; ++j) {
            m = (j == 1) ? "key" : (j == 2) ? "pack" : "iov"
            ir[n[2], m] = v[n[2], m "_ir"]
            xc[n[2], m] = v[n[2], m "_ir"] - v[n[2], m "_copy"]
        }
    }
    END {
        printf "%6s | %9s %9s %9s %8s %8s | %8s %8s %8s %8s %8s | %9s %9s %9s\n", "N",
               "key us", "pack us", "iov us", "pack/key", "iov/key",
               "key Ir", "pack Ir", "iov Ir", "pack/key", "iov/key",
               "key Ir-cp", "pack Ir-cp", "iov Ir-cp"
        for (i = 1; i <= k; ++i) {
            N = order[i]
            printf "%6s | %9.1f %9.1f %9.1f %8.2f %8.2f | %8s %8s %8s %8s %8s | %9s %9s %9s\n", N,
                   time[N, "key"], time[N, "pack"], time[N, "iov"],
                   time[N, "pack"] / time[N, "key"], time[N, "iov"] / time[N, "key"],
                   ir[N, "key"], ir[N, "pack"], ir[N, "iov"],
                   (ir[N, "key"] > 0) ? sprintf("%.2f", ir[N, "pack"] / ir[N, "key"]) : "-",
                   (ir[N, "key"] > 0) ? sprintf("%.2f", ir[N, "iov"] / ir[N, "key"]) : "-",
                   xc[N, "key"], xc[N, "pack"], xc[N, "iov"]
            if (tx == "" && time[N, "key"] < time[N, "pack"]) tx = N
            if (tx != "" && time[N, "key"] >= time[N, "pack"]) tx = ""
            if (ix == "" && ir[N, "key"] > 0 && ir[N, "key"] < ir[N, "pack"]) ix = N
            if (ix != "" && ir[N, "key"] >= ir[N, "pack"]) ix = ""
        }
        print ""
        print "Ir: sender instructions per transfer in the posting code; Ir-cp: the same"
        print "without memcpy/memmove (the soft device copying the payload into its"
        print "packets: the same bytes for every method)"
        print "crossover (key faster than pack from this N on), time:    " (tx == "" ? "none in range" : "N = " tx)
        print "crossover (key fewer sender instructions from this N on): " (ix == "" ? "none in range" : "N = " ix)
    }' "$tmp/time" "$tmp/ir"
