#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Memory per endpoint and per interface, dcx (soft device) next to posix,
# in one run: builds bench/mem_eps.c against the installed UCX, opens one
# interface of each transport and creates 1, 1 000 and 10 000 endpoints to
# it; prints the heap an interface open takes, the heap per endpoint at
# each count, and the ratios dcx/posix.
#
# Usage: bench/mem.sh [-l path/to/libuct_dcx.so]
#
set -u

lib="${DCX_LIB:-}"
while getopts "l:h" opt; do
    case $opt in
    l) lib=$OPTARG ;;
    *) sed -n '3,11p' "$0"; exit 2 ;;
    esac
done

. "$(dirname "$0")/lib.sh"
top=$bench_top
lib=$(bench_find_lib mem.sh "$lib") || exit 2

work=$(mktemp -d /tmp/dcx-mem.XXXXXX)
trap 'rm -rf "$work"' EXIT
if ! cc -O2 -Wall -o "$work/mem_eps" "$top/bench/mem_eps.c" -luct -lucs; then
    echo "mem.sh: cannot build mem_eps (UCX development headers?)" >&2
    exit 2
fi

counts="1 1000 10000"
UCX_DCX_SOFT_DEVICES=1 UCX_DCX_SOFT_FABRIC=mem$$ LD_PRELOAD="$lib" \
    "$work/mem_eps" dcx soft0 soft0:1 $counts >"$work/dcx" || exit 1
"$work/mem_eps" posix posix memory $counts >"$work/posix" || exit 1

field() {   # file key -> value
    case $2 in
    iface) awk '/^iface_heap/ { print $2 }' "$1" ;;
    *)     awk -v n="$2" '$1 == "eps" && $2 == n { print $6 }' "$1" ;;
    esac
}

printf "%-22s %12s %12s %7s\n" figure dcx posix ratio
for k in iface $counts; do
    d=$(field "$work/dcx" $k)
    p=$(field "$work/posix" $k)
    r=$(awk -v a="$d" -v b="$p" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
    if [ $k = iface ]; then
        name="iface open (heap B)"
    else
        name="per ep at $k (B)"
    fi
    printf "%-22s %12s %12s %7s\n" "$name" "$d" "$p" "$r"
done
