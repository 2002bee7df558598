#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Builds dcx against a UCX other than the system one and tests it there:
# the UCX is built from Debian's source package by contrib/build-ucx.sh (or
# taken from its cache), dcx is configured with --with-ucx=PREFIX and -Werror,
# and then
#   - the module is loaded into that UCX's ucx_info by preloading (dcx-run),
#     and, where that UCX can load plugins from a directory
#     (UCX_PLUGIN_PATH), that way too;
#   - every googletest suite of that build (gtest_uct, gtest_uct_md,
#     gtest_ucp, the load check, ...) runs: they are linked with a run path
#     to that UCX;
#   - a few ucx_perftest runs of that UCX go over dcx (UCT and UCP);
#   - the MPI and OpenSHMEM suite runs with Debian's Open MPI pointed at
#     that UCX's libucp by LD_LIBRARY_PATH (unless --no-mpi).  Where that
#     UCX selects its v2 protocols by default (UCX_PROTO_ENABLE=y, 1.18
#     on), mpi/rma_atomic_types runs with UCX_PROTO_ENABLE=n only: Open
#     MPI 4.1.4's MPI_Get_accumulate(MPI_REPLACE) issues a get and a put
#     to the same bytes without ordering them, which UCP does not order
#     either; the v2 protocols over posix,self deliver the put first
#     (docs/mpi-rma.md, problem 4), so that case checks Open MPI and the
#     protocol choice, not the transport.
# It says which UCX source it built against: where it came from, its tree
# checksum (contrib/build-ucx.sh checks it against the one recorded when
# the source was cached and built) and whether that is a source dcx was
# tested with (contrib/ucx-sources.txt).
# Ends with one line "N passed, N failed"; exit status 0 only if all passed,
# 77 if the UCX source cannot be had (nothing tested).
#
# Usage: test/ucx-versions.sh [--no-mpi] [--build-dir DIR] VERSION
#   VERSION          as for contrib/build-ucx.sh: 1.18.1, 1.23, ...
#   --no-mpi         skip the MPI/OpenSHMEM suite
#   --build-dir DIR  dcx build directory (default: build-ucx-VERSION in the
#                    source tree)
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
mpi=1
version=
bdir=

usage() { sed -n '3,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//p}' "$0"; }

while [ $# -gt 0 ]; do
    case "$1" in
    --no-mpi)       mpi=0 ;;
    --build-dir)    [ $# -ge 2 ] || { usage >&2; exit 2; }
                    bdir=$2; shift ;;
    -h|--help)      usage; exit 0 ;;
    -*)             echo "ucx-versions.sh: unknown option '$1'" >&2; exit 2 ;;
    *)              version=$1 ;;
    esac
    shift
done
[ -n "$version" ] || { usage >&2; exit 2; }
[ -n "$bdir" ] || bdir="$top/build-ucx-$version"
logdir="$bdir/logs"
mkdir -p "$logdir" || exit 2

passed=0
failed=0
failures=()

step_width=52
. "$top/contrib/step.sh"   # step NAME COMMAND...

finish() {
    echo
    [ $failed -eq 0 ] || echo "failed steps: ${failures[*]} (logs in $logdir)"
    echo "$passed passed, $failed failed"
    [ $failed -eq 0 ]
    exit
}

# --- UCX --------------------------------------------------------------------
# Built once per machine (cached); exit status 3 of build-ucx.sh: Debian's
# archive does not carry that source, so nothing here can be tested: the
# script says so and exits 77 ("skipped").
t0=$SECONDS
printf '== %-52s ' "UCX $version (built from source, or cached)"
prefix=$("$top/contrib/build-ucx.sh" "$version" 2>"$logdir/build-ucx.log")
rc=$?
if [ $rc -eq 3 ]; then
    echo "SKIPPED: no source of UCX $version can be had here:"
    sed 's/^/   | /' "$logdir/build-ucx.log"
    echo
    echo "0 passed, 0 failed"
    exit 77
elif [ $rc -ne 0 ] || [ -z "$prefix" ]; then
    failed=$((failed + 1))
    failures+=("UCX $version")
    echo "FAILED ($((SECONDS - t0)) s) — last lines of $logdir/build-ucx.log:"
    tail -n 30 "$logdir/build-ucx.log" | sed 's/^/   | /'
    finish
fi
passed=$((passed + 1))
echo "ok ($((SECONDS - t0)) s; $(sed -n 's/^seconds=//p' "$prefix/.dcx-build-ucx") s when built)"
ucx_version=$("$prefix/bin/ucx_info" -v | sed -n 's/^# *\(Library version:\|Version\) *\([0-9.]*\).*/\2/p' | head -n 1)

# Which source that UCX and dcx's build of it come from
src_tree=$(sed -n 's/^source=//p' "$prefix/.dcx-build-ucx")
src_sum=$(sed -n 's/^source_sha256=//p' "$prefix/.dcx-build-ucx")
src_origin=$(sed -n 's/^source_origin=//p' "$prefix/.dcx-build-ucx")
src_tested=$(awk -v v="$ucx_version" -v s="$src_sum" \
    '!/^#/ && $1 == v && $2 == s { $1 = ""; $2 = ""; sub(/^ +/, ""); print; exit }' \
    "$top/contrib/ucx-sources.txt")
{
    echo "== UCX $ucx_version source: $src_tree"
    echo "   tree checksum (sha256): $src_sum (unchanged since it was cached and built)"
    echo "   origin recorded in the cache: ${src_origin:-none}"
    if [ -n "$src_tested" ]; then
        echo "   a source dcx was tested with (contrib/ucx-sources.txt): $src_tested"
    else
        listed=$(awk -v v="$ucx_version" '!/^#/ && $1 == v { printf " %s", $2 }' \
                 "$top/contrib/ucx-sources.txt")
        echo "   NOT a source dcx was tested with: contrib/ucx-sources.txt lists for" \
             "$ucx_version:${listed:- none}"
    fi
} | tee "$logdir/ucx-source.txt"

# --- dcx against it ---------------------------------------------------------
build_dcx() {
    [ -x "$top/configure" ] || (cd "$top" && ./autogen.sh) || return 1
    cd "$bdir" &&
        "$top/configure" --with-ucx="$prefix" --enable-werror &&
        grep -Eq "^#define UCT_VERNO_STRING +\"$ucx_version\"" "$prefix/include/uct/api/version.h" &&
        make -j2 && make -j2 check TESTS=
}
step "dcx build against UCX $ucx_version (-Werror)" build_dcx
[ -f "$bdir/.libs/libuct_dcx.so" ] || finish

export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$prefix/bin:$PATH"
dcx_run="$bdir/contrib/dcx-run"

# The dcx transport as the given ucx_info lists it
lists_dcx() {
    "$@" ucx_info -d 2>&1 | tee /dev/stderr | grep -q "Transport: dcx"
}

load_preload() {
    ucx_info -v
    UCX_DCX_SOFT_DEVICES=1 lists_dcx "$dcx_run" --soft
}
step "module loads into UCX $ucx_version by preload" load_preload

# UCX_PLUGIN_PATH: newer UCX loads every lib<framework>_<name><ext> found
# in these directories, where <ext> is the extension of the libucs it runs
# from (".so.0": the library's soname), so the module goes there as
# libuct_dcx.so.0; older UCX loads only the modules it was built with.
if ucx_info -c 2>/dev/null | grep -q '^UCX_PLUGIN_PATH='; then
    load_plugin_path() {
        local dir="$bdir/plugin-dir" soname
        soname=$(objdump -p "$prefix/lib/libucs.so" | awk '/SONAME/ {print $2}')
        [ -n "$soname" ] || return 1
        rm -rf "$dir" && mkdir -p "$dir" &&
            ln -s "$bdir/.libs/libuct_dcx.so" "$dir/libuct_dcx${soname#libucs}" &&
            ls -l "$dir" &&
            UCX_PLUGIN_PATH=$dir UCX_DCX_SOFT_DEVICES=1 lists_dcx env
    }
    step "module loads into UCX $ucx_version by UCX_PLUGIN_PATH" load_plugin_path

    # the links the build and make install provide (dcx-run --plugin-dir)
    load_plugin_dir() {
        local dest="$bdir/inst" link
        UCX_PLUGIN_PATH=$("$dcx_run" --plugin-dir) UCX_DCX_SOFT_DEVICES=1 \
            lists_dcx env || return 1
        rm -rf "$dest" && make -C "$bdir" install DESTDIR="$dest" &&
            link=$(find "$dest" -path '*/dcx/ucx/libuct_dcx*' -type l) &&
            [ -n "$link" ] && ls -l "$link" &&
            UCX_PLUGIN_PATH=$(dirname "$link") UCX_DCX_SOFT_DEVICES=1 \
                lists_dcx env
    }
    step "module loads from the build's and make install's plugin dir" \
        load_plugin_dir
else
    echo "== (UCX $ucx_version has no UCX_PLUGIN_PATH: preload only)"
fi

step "gtest suites but gtest_ucp (gtest_uct, gtest_uct_md, ...)" \
    make -C "$bdir" check TESTS="test/gtest/soft/gtest_soft test/gtest/mlx5/gtest_mlx5 test/gtest/uct/gtest_uct test/gtest/uct/gtest_uct_md test/gtest/uct/test_load_check.sh"

# gtest_ucp with the UCP protocols this UCX selects by default, and with
# the older protocol selection (UCX_PROTO_ENABLE=n) where it has both.
gtest_ucp="$bdir/test/gtest/uct/gtest_ucp"
if ucx_info -c 2>/dev/null | grep -q '^UCX_PROTO_ENABLE='; then
    step "gtest_ucp, default protocols" "$gtest_ucp"
    step "gtest_ucp, UCX_PROTO_ENABLE=n" env UCX_PROTO_ENABLE=n "$gtest_ucp"
else
    step "gtest_ucp" "$gtest_ucp"
fi

# A few ucx_perftest runs of that UCX, UCT and UCP, over dcx
perftest_some() {
    local k rc=0
    for k in am_lat_short am_bw_zcopy put_bw_zcopy get_zcopy fadd_lat \
             tag_bw_64k ucp_put_bw ucp_cswap; do
        DCX_RUN=$dcx_run "$top/test/perftest.sh" -l "$bdir/.libs/libuct_dcx.so" \
            -k "$k" -n 200 || rc=1
    done
    return $rc
}
step "ucx_perftest $ucx_version over dcx" perftest_some

mpi_env=(DCX_RUN="$dcx_run" DCX_TEST_TLS=dcx DCX_TEST_NP=2)
if [ $mpi -eq 0 ]; then
    :
elif ucx_info -c 2>/dev/null | grep -q '^UCX_PROTO_ENABLE=y'; then
    # see the header: that program's get_accumulate REPLACE relies on an
    # order neither Open MPI 4.1.4 nor UCP asks for
    step "MPI and OpenSHMEM over dcx with libucp $ucx_version" \
        env "${mpi_env[@]}" DCX_TEST_SKIP='^mpi/rma_atomic_types$' \
            "$top/test/mpi/run.sh" "$bdir/test-mpi"
    step "mpi/rma_atomic_types over dcx, UCX_PROTO_ENABLE=n" \
        env "${mpi_env[@]}" DCX_TEST_ONLY='^mpi/rma_atomic_types$' \
            DCX_TEST_MPIRUN_ARGS="-x UCX_PROTO_ENABLE=n" \
            "$top/test/mpi/run.sh" "$bdir/test-mpi-proto-n"
else
    step "MPI and OpenSHMEM over dcx with libucp $ucx_version" \
        env "${mpi_env[@]}" "$top/test/mpi/run.sh" "$bdir/test-mpi"
fi

finish
