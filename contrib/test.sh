#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# dcx test command: installs what is missing, checks that fetching UCX
# sources changes no package sources (test/apt-sources.sh), builds dcx twice
# (plain with -Werror, and with ASan/UBSan), runs every googletest suite in
# both builds, then the integration runs over the soft device: ucx_perftest
# (UCT and UCP), MPI and OpenSHMEM programs, the strided example -- each a
# second time over dcx's mlx5 backend on the emulated ConnectX (dcx-run
# --mlx5-emu, docs/mlx5-emulation.md) -- and last dcx against UCX 1.18.1
# built from source (test/ucx-versions.sh; DCX_TEST_UCX_VERSIONS), the
# structure of every source folder in those builds (contrib/structure.sh),
# that every header compiles on its own (contrib/headers.sh), that every
# operation of the device contract has every backend
# (contrib/contract-ops.sh), and checks
# that /etc/apt is as it was after the set-up.  Ends with one line
# "N passed, N failed".
#
#   contrib/test.sh [--quick]     --quick: skip the ASan build
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
quick=0
[ "${1:-}" = "--quick" ] && quick=1
jobs=$(nproc 2>/dev/null || echo 2)
logdir="$top/build-test-logs"
mkdir -p "$logdir"

passed=0
failed=0
failures=()
skipped=()

. "$top/contrib/step.sh"   # step NAME COMMAND...

fatal() { echo "test.sh: $*" >&2; echo "0 passed, 1 failed"; exit 1; }

./contrib/install-deps.sh || fatal "could not install the build dependencies"
ucx_src=$(./contrib/get-ucx-src.sh) || fatal "could not fetch the UCX source"
# /etc/apt once the set-up is done, compared at the end of the run
./test/apt-sources.sh --snapshot "$logdir/etc-apt.snapshot" ||
    fatal "cannot take a snapshot of /etc/apt"
./autogen.sh >"$logdir/autogen.log" 2>&1 || fatal "autogen failed (see $logdir/autogen.log)"

configure_build() {   # configure_build DIR ARGS...
    local dir=$1; shift
    mkdir -p "$dir" && cd "$dir" &&
        "$top/configure" --with-ucx-src="$ucx_src" "$@" &&
        make -j"$jobs" && make -j"$jobs" check TESTS=
}

# fetching UCX sources (get-ucx-src.sh, build-ucx.sh) changes no package
# sources: against a scratch copy of /etc/apt, and /etc/apt itself
step "package sources untouched (test/apt-sources.sh)" "$top/test/apt-sources.sh"
# formatting (.clang-format), spelling, SPDX lines, no outside cites, file
# sizes, the README's layout (contrib/lint.sh; --fix writes what it can)
step "lint (contrib/lint.sh)" "$top/contrib/lint.sh"
step "build (-Werror)" configure_build "$top/build" --enable-werror
# make check in build directory $1; when it fails, ends its output with
# the failing suites' own failure lines (the step prints the log's tail,
# where the automake summary alone would name no test)
make_check() {
    local trs log
    make -C "$1" check && return 0
    echo "== failing suites, their failure lines:"
    for trs in $(grep -rl '^:test-result: FAIL' --include='*.trs' "$1/test" 2>/dev/null); do
        log=${trs%.trs}.log
        echo "-- ${log#"$1"/}"
        # (gtest's own progress lines left out: test names say "timeout")
        grep -E '^\[  FAILED  \]|: Failure$|^Expected|^  Actual|^Which is|Value of|[Tt]imed? ?out|Aborted|Segmentation|Sanitizer' \
            "$log" | grep -vE '^\[ +(RUN|OK) +\]' | awk '!seen[$0]++' | head -n 12
        # where it stopped: a suite killed or crashed names no failure
        echo "   (its last lines)"
        tail -n 6 "$log" | sed 's/^/   /'
    done
    return 1
}
step "gtest suites" make_check "$top/build"
# make_check under the sanitizers' options (a shell function: env cannot
# run it)
asan_check() {
    (
        export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
        export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
        make_check "$1"
    )
}
if [ $quick -eq 0 ]; then
    step "build (ASan+UBSan)" configure_build "$top/build-asan" --enable-asan
    step "gtest suites under ASan+UBSan" asan_check "$top/build-asan"
fi
export DCX_RUN="$top/build/contrib/dcx-run"
# examples/strided_exchange: two processes exchange matrix columns and a
# 3-D halo face through strided registrations, checked element by element
step "example: strided exchange" \
    sh -c "'$top/build/examples/strided_exchange' 64 && '$top/build/examples/strided_exchange' 8192"
step "ucx_perftest over dcx (UCT and UCP)" \
    "$top/test/perftest.sh" -l "$top/build/.libs/libuct_dcx.so"
step "MPI and OpenSHMEM over dcx" env DCX_TEST_TLS=dcx "$top/test/mpi/run.sh" "$top/build/test-mpi"
# the symmetric heap in SysV segments (Open MPI's sshmem sysv) instead of
# dcx's allocation: its atomics executed by the initiators all the same
step "OpenSHMEM heap atomics over dcx, heap in SysV segments" \
    env DCX_TEST_TLS=dcx DCX_TEST_ONLY='shmem/heap_atomics' \
    DCX_TEST_MPIRUN_ARGS="--mca sshmem sysv" \
    "$top/test/mpi/run.sh" "$top/build/test-shmem-sysv"
# peer churn: 4 ranks under checked tag, AM, RMA and atomic traffic, one
# killed, a late one joining; default and small timeouts (test/churn)
step "peer churn over dcx (test/churn/run.sh)" \
    "$top/test/churn/run.sh" -b soft -n 6 -T -x "$top/build/test/churn/churn"

# the same over dcx's mlx5 backend on the emulated ConnectX (the UCT and
# UCP gtest suites run so in "make check": test/gtest/emu/test_u*_emu.sh).
# The example at 8191, the largest N whose column stride fits the
# hardware's 16-bit stride field; the MPI suite once (this build only)
emu_example() {
    local fabric=ex-emu-$$ rc
    "$DCX_RUN" --mlx5-emu --fabric "$fabric" sh -c \
        "'$top/build/examples/strided_exchange' 64 && '$top/build/examples/strided_exchange' 8191"
    rc=$?
    rm -f "/dev/shm/dcx-emu.$(id -u).$fabric"
    return $rc
}
# rdma-core's own tools, unchanged, on the emulation: ibv_devices,
# ibv_devinfo -v, perftest's programs start (test/emu/rdma-tools.sh)
step "rdma-core tools over mlx5 emulation" "$top/test/emu/rdma-tools.sh"
# UCX's own ib transports (rc_verbs, ud_verbs; rc_mlx5, dc_mlx5, ud_mlx5
# on raw queues) between two processes on the emulation, UCP over them and
# an MPI and an OpenSHMEM job over dc_mlx5, in the private /dev that
# dcx-run --uverbs-ns makes (test/emu/ucx-ib.sh)
step "UCX's ib transports over mlx5 emulation" "$top/test/emu/ucx-ib.sh"
# rdma-core 44's own test suite (python3-pyverbs) on the emulation: every
# test passes or skips, but a listed few not modelled yet
# (test/emu/pyverbs.sh)
step "rdma-core's test suite over mlx5 emulation" "$top/test/emu/pyverbs.sh"
step "example: strided exchange over mlx5 emulation" emu_example
step "ucx_perftest over mlx5 emulation (UCT, UCP)" \
    "$top/test/perftest.sh" -e -l "$top/build/.libs/libuct_dcx.so"
step "MPI and OpenSHMEM over mlx5 emulation" \
    env DCX_TEST_TLS=dcx DCX_TEST_EMU=1 "$top/test/mpi/run.sh" "$top/build/test-mpi-emu"
# peer churn over the backend: the killed rank's LID goes to the late rank,
# so an endpoint to it with nothing in flight learns of the death only
# when its next request runs out of retries at the new owner (8 x 1.07 s
# by default), as on a fabric: its credit request sent again after
# FC_REQ_TIMEOUT (5 s), or UCP's keepalive (a 20 s round), hence -F 40
# and -w 60 (docs/mlx5-emulation.md).  UCP's atomics go through the
# backend's device atomics, as on the soft device
step "peer churn over mlx5 emulation" \
    "$top/test/churn/run.sh" -b emu -n 6 -T -w 60 -F 40 \
    -x "$top/build/test/churn/churn"

# dcx against a newer UCX: Debian 13's 1.18.1 by default, built from source
# by contrib/build-ucx.sh and cached in ~/.cache/dcx (a rerun takes the
# cached build), then dcx's gtest suites, ucx_perftest and the MPI suite
# with it (test/ucx-versions.sh).  DCX_TEST_UCX_VERSIONS names the versions
# ("1.18.1 1.23" adds Debian unstable's; empty skips the step).  Where no
# source of a version can be had (Debian's archive or the cache), the step
# says so and is skipped.  The MPI/OpenSHMEM suite runs there too (with
# Debian's Open MPI on that libucp; mpi/rma_atomic_types under
# UCX_PROTO_ENABLE=n where the UCX defaults to its v2 protocols, see
# test/ucx-versions.sh); DCX_TEST_UCX_MPI=0 leaves it out.
ucx_mpi_opt=
[ "${DCX_TEST_UCX_MPI:-1}" != 0 ] || ucx_mpi_opt=--no-mpi
for v in ${DCX_TEST_UCX_VERSIONS-1.18.1}; do
    t0=$SECONDS
    printf '== %-44s\n' "dcx against UCX $v (test/ucx-versions.sh)"
    "$top/test/ucx-versions.sh" $ucx_mpi_opt --build-dir "$top/build-ucx-$v" "$v" \
        2>&1 | sed 's/^/   /'
    rc=${PIPESTATUS[0]}
    if [ "$rc" -eq 0 ]; then
        passed=$((passed + 1))
        echo "   ok ($((SECONDS - t0)) s)"
    elif [ "$rc" -eq 77 ]; then
        skipped+=("UCX $v")
        echo "   SKIPPED: the UCX $v source cannot be had on this machine"
    else
        failed=$((failed + 1))
        failures+=("UCX $v")
        echo "   FAILED ($((SECONDS - t0)) s)"
    fi
done

# every source folder cut along its objects: no two files call each other,
# no cycle of calls through more than two files, but the exceptions
# contrib/call-pairs.allow lists with their reasons (src/emu and src/soft
# reported, not checked); in the UCX 1.13 build and in each newer UCX's
# build above that exists (README "Layout")
structure_builds=("$top/build")
for v in ${DCX_TEST_UCX_VERSIONS-1.18.1}; do
    structure_builds+=("$top/build-ucx-$v")
done
step "structure: call pairs and cycles (contrib/structure.sh)" \
    "$top/contrib/structure.sh" "${structure_builds[@]}"

# every header of src/ and include/ compiles on its own with the flags of
# its folder, its includes at its top (HACKING.md "Rules the tree keeps")
step "headers: each compiles alone (contrib/headers.sh)" \
    "$top/contrib/headers.sh" "$top/build"

# every operation of the device contract is set by every backend, but
# those listed with their reason (HACKING.md "Rules the tree keeps")
step "device contract: no operation for one backend (contrib/contract-ops.sh)" \
    "$top/contrib/contract-ops.sh"

step "/etc/apt as it was after the set-up" \
    "$top/test/apt-sources.sh" --same-as "$logdir/etc-apt.snapshot"

echo
if [ ${#skipped[@]} -ne 0 ]; then
    echo "skipped: ${skipped[*]}"
fi
if [ $failed -ne 0 ]; then
    echo "failed steps: ${failures[*]} (logs in $logdir)"
fi
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
