# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the bench scripts (bash): where the repository, the dcx module
# and the build tree are.
#
#   bench_top                      the repository (set on sourcing)
#   bench_find_lib NAME [LIB]      prints LIB, or else the first built
#                                  libuct_dcx.so that is not a sanitizer build
#                                  (build/, build*/, then the repository);
#                                  fails with "NAME: ... pass -l" when none
#   bench_find_build NAME [DIR]    prints DIR, or else the first build*/ whose
#                                  contrib/dcx-run exists and which is not a
#                                  sanitizer build; fails with a message
#   bench_pin NAME ON              sets the arrays srv_pin and cli_pin: with
#                                  ON = 1 the taskset prefixes that pin a
#                                  pair's server to CPU 0 and its client to
#                                  CPU 1 (fails with a message without
#                                  taskset or two CPUs), empty otherwise

bench_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

bench_find_lib() {
    local name=$1 lib=${2:-} cand

    if [ -z "$lib" ]; then
        for cand in "$bench_top"/build/.libs/libuct_dcx.so \
                    "$bench_top"/build*/.libs/libuct_dcx.so \
                    "$bench_top"/.libs/libuct_dcx.so; do
            if [ -f "$cand" ] && ! ldd "$cand" 2>/dev/null | grep -q libasan; then
                lib=$cand
                break
            fi
        done
    fi
    if [ -z "$lib" ] || [ ! -f "$lib" ]; then
        echo "$name: libuct_dcx.so not found; build first or pass -l" >&2
        return 2
    fi
    echo "$lib"
}

bench_find_build() {
    local name=$1 build=${2:-} d

    if [ -z "$build" ]; then
        for d in "$bench_top"/build*; do
            if [ -x "$d/contrib/dcx-run" ] &&
               ! grep -qs -- '--enable-asan' "$d/config.log"; then
                build=$d
                break
            fi
        done
    fi
    if [ ! -x "$build/contrib/dcx-run" ]; then
        echo "$name: no dcx-run in '$build'" >&2
        return 2
    fi
    echo "$build"
}

bench_pin() {
    srv_pin=()
    cli_pin=()
    [ "$2" = 1 ] || return 0
    command -v taskset >/dev/null ||
        { echo "$1: -P needs taskset (util-linux)" >&2; return 2; }
    [ "$(nproc)" -ge 2 ] ||
        { echo "$1: -P needs two CPUs, this machine has $(nproc)" >&2; return 2; }
    srv_pin=(taskset -c 0)
    cli_pin=(taskset -c 1)
}
