#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# Runs UCX's own UCT test suite (test/gtest/uct of the UCX source) on the dcx
# transport over the soft device, or with --ucp its UCP test suite
# (test/gtest/ucp) with UCX_TLS=dcx.  Opt-in: slow, not part of
# contrib/test.sh.
#
# Usage: ucx-gtest.sh [options]
#   --dcx LIB         the dcx module to test (a build's .libs/libuct_dcx.so;
#                     default: the one of the build tree this script runs
#                     next to, ../build/.libs/libuct_dcx.so)
#   --filter PATTERN  gtest filter of the tests to run (default '*dcx*': every
#                     dcx instance; with --ucp 'dcx_uct/*'); '*' and '?' as
#                     gtest, ':' separates patterns, a leading '-' pattern
#                     excludes
#   --ucp             UCX's UCP tests instead, instantiated for "dcx" as
#                     dcx_uct/... (UCX's own "dcx" instances are dc_mlx5's);
#                     built on first use beside the UCT test binary
#   --timeout SEC     seconds one test may take before it is reported hung,
#                     its threads' stacks taken with gdb and it is killed
#                     (default 120)
#   --devices N       soft devices offered, UCX_DCX_SOFT_DEVICES (default 1)
#   --ib              UCX's own InfiniBand transports instead, on one emulated
#                     ConnectX (implies --mlx5-emu; default filter
#                     '*rc_mlx5*:*dc_mlx5*:*ud_mlx5*'): UCX built a second
#                     time, with verbs and mlx5 (CACHE/ucx-gtest-ib-VERSION),
#                     its ib tests (test/gtest/uct/ib) compiled in, and every
#                     test run in the private /dev of "dcx-run --mlx5-emu
#                     --uverbs-ns", where UCX's ib module finds mlx5_0.  DEVX
#                     as UCX configures it (UCX_IB_MLX5_DEVX, default "try");
#                     --no-devx sets it to "no"
#   --no-devx         with --ib: UCX_IB_MLX5_DEVX=no
#   --mlx5-emu        run dcx's mlx5 backend on one emulated ConnectX
#                     instead (soft devices off; the emulated libibverbs and
#                     libmlx5 of the build tree of --dcx, or of DCX_EMU_DIR,
#                     first on the library path; as contrib/dcx-run
#                     --mlx5-emu), each test on an emulated fabric of its own
#   --out DIR         where the per-test logs and the summary go
#                     (default: a new directory under /tmp)
#   --list            list the tests the filter selects and exit
#   --build-only      build the test binary (if not built) and exit
#   --no-gdb          do not rerun a crashed test under gdb for its stack
#   --ucx-src DIR     the UCX source tree (default: contrib/get-ucx-src.sh
#                     --cached, the source of the installed UCX)
#   --cache-dir DIR   where the test build is kept (default: $DCX_CACHE_DIR,
#                     else ${XDG_CACHE_HOME:-~/.cache}/dcx)
#   -j N              parallel make jobs for the build (default 2)
#
# The first run builds UCX with its gtest in CACHE/ucx-gtest-VERSION, at the
# lowest CPU priority (nice 19); later runs find it built.  The source is
# copied first (the cached tree is never modified: dcx's build checks it),
# and in the copy:
#   - dcx is added to the transports UCX's UCT tests are instantiated for
#     (UCT_TEST_NO_SELF_TLS in uct/uct_test.h, which every test using
#     UCT_INSTANTIATE_TEST_CASE, _NO_SELF_ and _NO_GPU_ expands to; the
#     tag-offload tests of uct/test_tag.cc; the memory-domain tests of
#     uct/test_md.cc, whose instances are named by component);
#   - the gtest binary is cut to the common/ code and the uct/ tests (UCX's
#     ucs, ucm and ucp tests are not compiled);
# and only the libraries the binary links are built.  UCX is configured with
# the options of the installed UCX that change the layout of the structures
# dcx shares with it (ENABLE_* and the highest log level, as "ucx_info -b"
# reports them; checked after configure), so a dcx module built against the
# system UCX loads into the test binary.
#
# Each selected test runs in a process of its own (LD_PRELOAD=LIB,
# UCX_DCX_SOFT_DEVICES=N, a fabric of its own), and ends as one of
#   passed    the test ran and succeeded
#   skipped   the test skipped itself (UCX's "[ SKIP ]" line: a capability
#             dcx does not advertise, a transport-specific test...)
#   failed    gtest reported a failure
#   crashed   the process died of a signal; the test is run again under gdb
#             and the stack of the faulting thread saved (unless --no-gdb)
#   hung      still running after --timeout seconds; the stacks of all its
#             threads are saved, then it is killed
# The summary names every test that did not pass; the logs are in --out.
# Exit status: 0 if no test failed, crashed or hung; 1 otherwise or on error.

set -eu

contrib=$(cd "$(dirname "$0")" && pwd)
. "$contrib/ucx-src-opts.sh"

dcx_lib=
filter=
ucp=no
test_timeout=120
devices=1
mlx5_emu=no
ib=no
out=
action=run
use_gdb=yes
ucx_src=
jobs=2

while [ $# -gt 0 ]; do
    case "$1" in
    --cache-dir|--cache-dir=*|-h|--help)
                    ucx_src_common_opt "$@"
                    shift "$ucx_src_opt_words"; continue ;;
    --dcx)          [ $# -ge 2 ] || die "--dcx needs a file"
                    dcx_lib=$2; shift ;;
    --dcx=*)        dcx_lib=${1#*=} ;;
    --filter)       [ $# -ge 2 ] || die "--filter needs a pattern"
                    filter=$2; shift ;;
    --filter=*)     filter=${1#*=} ;;
    --timeout)      [ $# -ge 2 ] || die "--timeout needs a number of seconds"
                    test_timeout=$2; shift ;;
    --timeout=*)    test_timeout=${1#*=} ;;
    --devices)      [ $# -ge 2 ] || die "--devices needs a number"
                    devices=$2; shift ;;
    --devices=*)    devices=${1#*=} ;;
    --mlx5-emu)     mlx5_emu=yes ;;
    --ib)           ib=yes; mlx5_emu=yes ;;
    --no-devx)      UCX_IB_MLX5_DEVX=no; export UCX_IB_MLX5_DEVX ;;
    --ucp)          ucp=yes ;;
    --out)          [ $# -ge 2 ] || die "--out needs a directory"
                    out=$2; shift ;;
    --out=*)        out=${1#*=} ;;
    --list)         action=list ;;
    --build-only)   action=build ;;
    --no-gdb)       use_gdb=no ;;
    --ucx-src)      [ $# -ge 2 ] || die "--ucx-src needs a directory"
                    ucx_src=$2; shift ;;
    --ucx-src=*)    ucx_src=${1#*=} ;;
    -j)             [ $# -ge 2 ] || die "-j needs a number"
                    jobs=$2; shift ;;
    -j*)            jobs=${1#-j} ;;
    *)              die "unknown argument '$1' (see --help)" ;;
    esac
    shift
done

is_number() {
    case "$1" in ''|*[!0-9]*) return 1 ;; esac
    [ "$1" -gt 0 ]
}
is_number "$test_timeout" || die "--timeout '$test_timeout' is not a positive number"
is_number "$devices" || die "--devices '$devices' is not a positive number"
is_number "$jobs" || die "-j '$jobs' is not a positive number"

# --- the source ---------------------------------------------------------------
if [ -z "$ucx_src" ]; then
    ucx_src=$("$contrib/get-ucx-src.sh" --cached --cache-dir "$cache_dir") ||
        die "no UCX source of the installed UCX: run contrib/get-ucx-src.sh, or pass --ucx-src DIR"
fi
[ -f "$ucx_src/src/uct/base/uct_iface.h" ] && [ -f "$ucx_src/test/gtest/uct/uct_test.h" ] ||
    die "$ucx_src is not a UCX source tree with its gtest (no src/uct/base/uct_iface.h or test/gtest/uct/uct_test.h)"
ucx_src=$(cd "$ucx_src" && pwd)
version=$(sed -n 's/^define(.\{0,1\}ucx_ver_\(major\|minor\|patch\).\{0,1\}, *\([0-9]*\)).*/\2/p' \
              "$ucx_src/configure.ac" | tr '\n' '.' | sed 's/\.$//')
[ -n "$version" ] || die "cannot tell the version of the UCX source in $ucx_src"

if [ "$ib" = yes ]; then
    work="$cache_dir/ucx-gtest-ib-$version"
    ib_opts="--with-verbs --without-rdmacm"
else
    work="$cache_dir/ucx-gtest-$version"
    ib_opts="--without-verbs --without-rdmacm"
fi
src="$work/src"
build="$work/build"
stamp="$work/.dcx-ucx-gtest"
gtest="$build/test/gtest/gtest"
# Raised whenever the way the source is patched or built changes: a build
# made by an older script is made again.
recipe=2

# --- the build options that change struct layouts ----------------------------
# UCX's configure options that decide an ENABLE_* or UCS_MAX_LOG_LEVEL line of
# its config.h, taken from the installed UCX's configure line.
layout_opts() {
    ucx_info -b 2>/dev/null | sed -n 's/^#define UCX_CONFIGURE_FLAGS *"\(.*\)"$/\1/p' |
        tr ' ' '\n' | grep -E '^--(enable|disable)-(mt|logging|stats|tuning|assertions|params-check|debug-data|debug|fault-injection|profiling|builtin-memcpy|backtrace-detail)(=.*)?$' || true
}

# The ENABLE_* and UCS_MAX_LOG_LEVEL lines of a config.h on stdin
layout_lines() {
    sed -n 's/^#define \(ENABLE_[A-Z_]*\|UCS_MAX_LOG_LEVEL\)[ \t]\{1,\}\(.*\)/\1=\2/p' |
        sed 's/[ \t]*$//' | LC_ALL=C sort
}

# --- patching the copy ---------------------------------------------------------
# insert_after FILE LINE_REGEX TEXT: adds TEXT as a line after the first line
# matching LINE_REGEX; an error if no line matches
insert_after() {
    grep -qE -- "$2" "$1" || die "cannot patch $1: no line matches '$2' (UCX $version's test sources differ from what this script knows)"
    # (through the environment: awk -v would take the backslashes as escapes)
    RE=$2 TEXT=$3 awk '
        { print }
        !done && $0 ~ ENVIRON["RE"] { print ENVIRON["TEXT"]; done = 1 }' \
        "$1" > "$1.dcx" &&
        mv "$1.dcx" "$1" || die "cannot write $1"
}

# The patches Debian builds its UCX with, when its packaging of this version
# is in the cache beside the source (contrib/get-ucx-src.sh downloads it);
# they keep UCX compiling with newer compilers (UCX builds with -Werror).
# Without them configure still needs the debian/ directory of the upstream
# tarball, which Debian's repacked one holds as debian.upstream/.
debian_source() {
    deb=
    for f in "$(dirname "$ucx_src")"/ucx_"$version"-*.debian.tar.*; do
        [ -f "$f" ] && deb=$f
    done
    if [ -n "$deb" ]; then
        note "applying the patches of $deb"
        # as dpkg-source unpacks a source package: debian/ in the tree
        rm -rf "$src/debian" && tar -xf "$deb" -C "$src" ||
            die "cannot unpack $deb"
        sed -e 's/#.*//' "$src/debian/patches/series" | while read -r p; do
            [ -n "$p" ] || continue
            patch -d "$src" -p1 -s < "$src/debian/patches/$p" ||
                die "Debian's patch $p does not apply to $src"
        done || exit 1
    elif [ ! -d "$src/debian" ] && [ -d "$src/debian.upstream" ]; then
        cp -a "$src/debian.upstream" "$src/debian" || die "cannot copy $src/debian.upstream"
    fi
}

patch_source() {
    g="$src/test/gtest"

    # every generic UCT test instantiated for dcx too
    insert_after "$g/uct/uct_test.h" '^ *posix, *\\$' \
        '    dcx,                     \'
    sed -n '/^#define UCT_TEST_NO_SELF_TLS/,/^$/p' "$g/uct/uct_test.h" |
        grep -q '^ *dcx, *\\$' || die "dcx did not go into UCT_TEST_NO_SELF_TLS of $g/uct/uct_test.h"

    # the tag-offload tests (written for rc_mlx5 and dc_mlx5)
    insert_after "$g/uct/test_tag.cc" '^ *_UCT_INSTANTIATE_TEST_CASE\(_test_case, rc_mlx5\) *\\$' \
        '    _UCT_INSTANTIATE_TEST_CASE(_test_case, dcx) \'

    # the memory-domain tests, by component name
    insert_after "$g/uct/test_md.cc" '^ *posix, *\\$' \
        '                   dcx, \'

    # the binary: the common/ code and the uct/ tests only
    am="$g/Makefile.am"
    # (the first "gtest_SOURCES =" list is written again without them)
    awk '
        function flush(  i) {
            print "gtest_SOURCES = \\"
            for (i = 1; i < n; i++) print "\t" keep[i] " \\"
            print "\t" keep[n]
        }
        !done && /^gtest_SOURCES[ \t]*=/ { in_src = 1; next }
        in_src {
            more = /\\[ \t]*$/
            sub(/\\[ \t]*$/, ""); gsub(/^[ \t]+|[ \t]+$/, "")
            if ($0 != "" && $0 !~ /^(ucs|ucm|ucp)\//) keep[++n] = $0
            if (!more) { flush(); in_src = 0; done = 1 }
            next
        }
        { print }' "$am" > "$am.dcx" && mv "$am.dcx" "$am" ||
        die "cannot write $am"
    list=$(sed -n '/^gtest_SOURCES = /,/[^\\]$/p' "$am")
    echo "$list" | grep -q 'uct/uct_test.cc' && echo "$list" | grep -q 'common/main.cc' ||
        die "cutting $am lost the common or uct sources"
    ! echo "$list" | grep -qE '(ucs|ucm|ucp)/[^ ]*\.cc' ||
        die "cutting $am left ucs/ucm/ucp tests in gtest_SOURCES"
}

# --- the build -----------------------------------------------------------------
run() {
    note "$*"
    nice -n 19 "$@"
}

build_ok() {
    [ -f "$stamp" ] && [ -x "$gtest" ] &&
    [ "$(sed -n 's/^recipe=//p' "$stamp")" = "$recipe" ] &&
    [ "$(sed -n 's/^source=//p' "$stamp")" = "$ucx_src" ] &&
    [ "$(sed -n 's/^layout_opts=//p' "$stamp")" = "$(layout_opts | tr '\n' ' ')" ]
}

build_gtest() {
    command -v ucx_info >/dev/null 2>&1 || die "no ucx_info: the installed UCX's build options cannot be read"
    opts=$(layout_opts | tr '\n' ' ')
    start=$(date +%s)
    note "building UCX $version with its UCT gtest in $work (log: $work/build.log)"
    rm -rf "$work"
    mkdir -p "$work" || die "cannot create $work"
    log="$work/build.log"
    cp -a "$ucx_src" "$src" || die "cannot copy $ucx_src to $src"
    rm -f "$src/.dcx-source"
    debian_source
    patch_source
    (cd "$src" && run ./autogen.sh) > "$log" 2>&1 ||
        die "UCX autogen.sh failed, see $log"
    mkdir -p "$build"
    # shellcheck disable=SC2086
    (cd "$build" && run "$src/configure" --enable-gtest $opts \
        --disable-doxygen-doc --disable-examples --without-java --without-go \
        --without-cuda --without-rocm --without-ze --without-gdrcopy \
        $ib_opts --without-knem --without-xpmem \
        --without-ugni --without-fuse3 --without-mad --without-mpi \
        --disable-cma) >> "$log" 2>&1 ||
        die "UCX configure failed, see $log"

    # the same layout as the installed UCX, or dcx refuses to load
    want=$(ucx_info -b | layout_lines)
    got=$(layout_lines < "$build/config.h")
    [ "$want" = "$got" ] ||
        die "the UCX configured in $build differs from the installed one in options that change struct layouts: installed [$(echo $want)], built [$(echo $got)]"

    # only what the test binary links, and ucx_info
    for d in src/ucm src/ucs src/uct src/ucp src/tools/perf/lib src/tools/info \
             test/gtest/common/googletest; do
        (cd "$build/$d" && run make -j"$jobs") >> "$log" 2>&1 ||
            die "UCX build failed in $d, see $log"
    done
    (cd "$build/test/gtest" && run make -j"$jobs" gtest) >> "$log" 2>&1 ||
        die "UCX gtest build failed, see $log"
    [ -x "$gtest" ] || die "the build left no $gtest"
    {
        echo "version=$version"
        echo "source=$ucx_src"
        echo "recipe=$recipe"
        echo "layout_opts=$opts"
        echo "seconds=$(( $(date +%s) - start ))"
    } > "$stamp"
    note "UCX $version gtest built in $(( $(date +%s) - start )) s: $gtest"
}

if ! build_ok; then
    mkdir -p "$cache_dir" || die "cannot create $cache_dir"
    lock="$cache_dir/.ucx-gtest-$version.lock"
    if command -v flock >/dev/null 2>&1 && [ -z "${DCX_UCX_GTEST_LOCKED:-}" ]; then
        # one build at a time; a second caller waits and finds it built
        DCX_UCX_GTEST_LOCKED=1 flock "$lock" "$0" --cache-dir "$cache_dir" \
            --ucx-src "$ucx_src" -j "$jobs" --build-only \
            $([ "$ib" = no ] || echo --ib) ||
            die "the build failed"
    else
        build_gtest
    fi
    build_ok || die "no complete build in $work"
fi
# --- the UCP tests (--ucp) ----------------------------------------------------
# Built from the cached build's objects, not by its Makefile (whose binary
# stays cut to the UCT tests): UCX's test/gtest/ucp copied beside it, "dcx"
# added to the transports its instantiation macros list (as dcx_uct: UCX's
# own "dcx" instances are dc_mlx5's), each test compiled with the flags the
# gtest Makefile compiles its sources with, and linked with the common/
# objects and libraries of the UCT binary.  The performance tests
# (test_ucp_perf.cc, test_ucp_tag_perf.cc) are left out: they time.
ucp_dir="$work/ucp-tests"
ucp_gtest="$ucp_dir/gtest"
ucp_stamp="$ucp_dir/.dcx-ucp-gtest"
ucp_recipe=1

ucp_build_ok() {
    [ -x "$ucp_gtest" ] && [ -f "$ucp_stamp" ] &&
    [ "$(cat "$ucp_stamp")" = "recipe=$ucp_recipe" ] &&
    [ "$ucp_stamp" -nt "$stamp" ]
}

build_ucp_gtest() {
    start=$(date +%s)
    log="$ucp_dir.log"
    note "building UCX $version's UCP tests in $ucp_dir (log: $log)"
    rm -rf "$ucp_dir"
    mkdir -p "$ucp_dir/obj" || die "cannot create $ucp_dir"
    cp -a "$src/test/gtest/ucp" "$ucp_dir/ucp" || die "cannot copy the UCP tests"
    u="$ucp_dir/ucp"
    insert_after "$u/ucp_test.h" '^#define UCP_INSTANTIATE_TEST_CASE\(_test_case\) *\\$' \
        '    UCP_INSTANTIATE_TEST_CASE_TLS(_test_case, dcx_uct, "dcx") \'
    insert_after "$u/ucp_test.h" '^#define UCP_INSTANTIATE_TEST_CASE_GPU_AWARE\(_test_case\) *\\$' \
        '    UCP_INSTANTIATE_TEST_CASE_TLS_GPU_AWARE(_test_case, dcx_uct, "dcx") \'
    insert_after "$u/test_ucp_tag_offload.cc" '^#define UCP_INSTANTIATE_TAG_OFFLOAD_TEST_CASE\(_test_case\) *\\$' \
        '    UCP_INSTANTIATE_TEST_CASE_TLS(_test_case, dcx_uct, "dcx") \'
    # compiled and linked by a makefile read after the gtest Makefile: its
    # rules use that Makefile's own variables, so the flags (quoting and
    # all) are the ones its sources were compiled with
    printf '%s\n' \
        'DCX_SRCS := $(filter-out %/test_ucp_perf.cc %/test_ucp_tag_perf.cc,$(wildcard $(DCX_OUT)/ucp/*.cc))' \
        'DCX_OBJS := $(patsubst $(DCX_OUT)/ucp/%.cc,$(DCX_OUT)/obj/%.o,$(DCX_SRCS))' \
        'dcx-ucp: $(DCX_OUT)/gtest' \
        '$(DCX_OUT)/obj/%.o: $(DCX_OUT)/ucp/%.cc' \
        '	$(CXX) $(DEFS) $(DEFAULT_INCLUDES) $(INCLUDES) $(gtest_CPPFLAGS) $(CPPFLAGS) $(gtest_CXXFLAGS) $(CXXFLAGS) -c -o $@ $<' \
        '$(DCX_OUT)/gtest: $(DCX_OBJS)' \
        '	$(LIBTOOL) --silent --tag=CXX --mode=link $(CXX) $(gtest_CXXFLAGS) $(CXXFLAGS) $(gtest_LDFLAGS) $(LDFLAGS) -o $@ $(filter common/%,$(gtest_OBJECTS)) $(DCX_OBJS) $(gtest_LDADD) $(LIBS)' \
        > "$ucp_dir/ucp.mk"
    (cd "$build/test/gtest" && run make -j"$jobs" -f Makefile -f "$ucp_dir/ucp.mk" \
        DCX_OUT="$ucp_dir" dcx-ucp) > "$log" 2>&1 ||
        die "building UCX's UCP tests failed, see $log"
    [ -x "$ucp_gtest" ] || die "the build left no $ucp_gtest"
    echo "recipe=$ucp_recipe" > "$ucp_stamp"
    note "UCX $version UCP tests built in $(( $(date +%s) - start )) s: $ucp_gtest"
}

if [ "$ucp" = yes ]; then
    ucp_build_ok || build_ucp_gtest
    gtest=$ucp_gtest
    suite=UCP
    [ -n "$filter" ] || filter='dcx_uct/*'
elif [ "$ib" = yes ]; then
    suite="UCT (ib)"
    [ -n "$filter" ] || filter='*rc_mlx5*:*dc_mlx5*:*ud_mlx5*'
else
    suite=UCT
    [ -n "$filter" ] || filter='*dcx*'
fi
[ "$action" != build ] || { echo "$gtest"; exit 0; }

# --- the module ----------------------------------------------------------------
if [ -z "$dcx_lib" ]; then
    dcx_lib="$contrib/../build/.libs/libuct_dcx.so"
fi
[ -f "$dcx_lib" ] || die "no dcx module $dcx_lib (pass --dcx BUILD/.libs/libuct_dcx.so)"
dcx_lib=$(cd "$(dirname "$dcx_lib")" && pwd)/$(basename "$dcx_lib")
# a module built with AddressSanitizer needs its runtime loaded first
asan=$(ldd "$dcx_lib" 2>/dev/null | awk '/libasan/ { print $3; exit }')
preload="${asan:+$asan:}$dcx_lib"

# --ib: UCX's own transports are judged, dcx is not loaded (its build tree
# gives the emulation and dcx-run); the rest of the run goes on in the
# private /dev of "dcx-run --uverbs-ns", with no preload for this script's
# own tools
if [ "$ib" = yes ]; then
    preload=
    if [ -z "${DCX_UCX_GTEST_NS:-}" ]; then
        dcx_run="$(dirname "$dcx_lib")/../contrib/dcx-run"
        [ -x "$dcx_run" ] || die "no $dcx_run beside the module"
        exec "$dcx_run" --mlx5-emu --uverbs-ns -- env -u LD_PRELOAD \
            DCX_UCX_GTEST_NS=1 "$0" --ib --dcx "$dcx_lib" --filter "$filter" \
            --timeout "$test_timeout" --cache-dir "$cache_dir" \
            --ucx-src "$ucx_src" -j "$jobs" \
            $([ "$use_gdb" = yes ] || echo --no-gdb) \
            $([ "$action" != list ] || echo --list) \
            ${out:+--out "$out"}
    fi
fi

# The UCX libraries of the build, before any installed ones
libpath=
for d in src/ucs src/ucs/vfs/sock src/uct src/ucm src/ucp src/tools/perf/lib \
         test/gtest/common/googletest; do
    libpath="$libpath${libpath:+:}$build/$d/.libs"
done

# --mlx5-emu: the emulated libraries ahead of the system's rdma-core, the
# mlx5 backend on, no soft device offered (each test's fabric: fabric_env)
if [ "$mlx5_emu" = yes ]; then
    emu_dir=${DCX_EMU_DIR:-$(dirname "$dcx_lib")/../emu}
    [ -f "$emu_dir/libibverbs.so.1" ] && [ -f "$emu_dir/libmlx5.so.1" ] ||
        die "no emulated libibverbs.so.1/libmlx5.so.1 in $emu_dir (build dcx, or set DCX_EMU_DIR)"
    libpath="$libpath:$(cd "$emu_dir" && pwd)"
    devices=0
    DCX_EMU_DEVICES=1 UCX_DCX_MLX5=y
    export DCX_EMU_DEVICES UCX_DCX_MLX5
    where="the mlx5 backend on the emulated ConnectX"
    [ "$ib" = no ] ||
        where="the emulated ConnectX, DEVX ${UCX_IB_MLX5_DEVX:-try}"
else
    where="the soft device"
fi

# fabric_env NAME: the variables that put one test on a fabric of its own
fabric_env() {
    echo "UCX_DCX_SOFT_FABRIC=$1 DCX_EMU_FABRIC=$1"
}

# run_gtest ARGS...: the test binary with the module, the soft devices and
# the settings of UCX's "make test"; exec'd, so that a run in the background
# has the test's own process id
run_gtest() {
    exec env LD_PRELOAD="$preload" \
        LD_LIBRARY_PATH="$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        UCX_DCX_SOFT_DEVICES="$devices" \
        UCX_LOG_LEVEL="${UCX_LOG_LEVEL:-warn}" \
        UCX_LOG_PRINT_ENABLE=y \
        "$@"
}

# The tests the filter selects: "Suite.test" lines
list_tests() {
    (run_gtest "$gtest" --gtest_list_tests --gtest_filter="$filter") 2>&1 |
    awk '
        /^[^ ]/ && /\.$/ { suite = $1; next }
        /^  [^ ]/ && suite != "" { print suite $1 }'
}

tests=$(list_tests) || true
if [ -z "$tests" ]; then
    # the reason: the module refused to load, the filter selects nothing...
    (run_gtest "$gtest" --gtest_list_tests --gtest_filter="$filter") 2>&1 |
        tail -n 20 >&2
    die "no test matches '$filter' (is dcx loaded? see above)"
fi
if [ "$action" = list ]; then
    echo "$tests"
    exit 0
fi

command -v gdb >/dev/null 2>&1 || use_gdb=no
if [ -z "$out" ]; then
    out=$(mktemp -d /tmp/ucx-gtest.XXXXXX) || die "cannot create an output directory"
else
    mkdir -p "$out" || die "cannot create $out"
fi
results="$out/results.txt"
: > "$results"
ntests=$(echo "$tests" | wc -l)
note "running $ntests tests on $dcx_lib over $where ($test_timeout s each at most); logs in $out"

# run_one TEST LOG: runs TEST alone; prints its outcome
run_one() {
    hung_mark="$2.hung"
    rm -f "$hung_mark"
    # a fabric of its own, so that a test killed while its peers held
    # shared state cannot disturb the next one
    (export $(fabric_env "ucxgtest$$.$n") && run_gtest \
        "$gtest" -t $((test_timeout * 2)) --gtest_filter="$1" > "$2" 2>&1) &
    pid=$!
    (
        trap 'kill "$sp" 2>/dev/null; exit 0' TERM
        sleep "$test_timeout" & sp=$!
        wait "$sp"
        [ -d "/proc/$pid" ] || exit 0
        : > "$hung_mark"
        if [ "$use_gdb" = yes ]; then
            echo "=== hung after $test_timeout s: stacks of all threads ===" >> "$2"
            timeout 60 gdb -p "$pid" -batch -nx -ex 'thread apply all bt' \
                >> "$2" 2>&1 < /dev/null || true
        fi
        kill -KILL "$pid" 2>/dev/null || true
    ) > /dev/null 2>&1 &
    wd=$!
    rc=0
    wait "$pid" 2>/dev/null || rc=$?
    kill "$wd" 2>/dev/null || true
    wait "$wd" 2>/dev/null || true
    if [ -f "$hung_mark" ]; then
        rm -f "$hung_mark"
        echo hung
    elif [ "$rc" -ge 128 ] || grep -q 'Caught signal' "$2"; then
        echo "crashed(rc=$rc)"
    elif grep -q '^\[  FAILED  \]' "$2" || [ "$rc" -ne 0 ]; then
        echo failed
    elif grep -q '^\[     SKIP \]' "$2"; then
        echo skipped
    elif grep -q '^\[       OK \]' "$2"; then
        echo passed
    else
        echo "failed(no result)"
    fi
}

# On the emulation a store to a UAR page is a doorbell that faults into the
# emulation's SIGSEGV handler: gdb lets it through
gdb_segv="stop print"
[ "$mlx5_emu" = no ] || gdb_segv="nostop noprint pass"

# gdb_stack TEST LOG: runs a crashed TEST again under gdb, its stack into LOG
gdb_stack() {
    {
        echo "=== run again under gdb ==="
        env LD_LIBRARY_PATH="$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
            UCX_DCX_SOFT_DEVICES="$devices" \
            $(fabric_env "ucxgtest$$.$n.gdb") UCX_HANDLE_ERRORS=none \
            UCX_LOG_LEVEL="${UCX_LOG_LEVEL:-warn}" UCX_LOG_PRINT_ENABLE=y \
            timeout $((test_timeout + 60)) gdb -batch -nx \
            -ex "set environment LD_PRELOAD=$preload" \
            -ex 'set startup-with-shell off' -ex "handle SIGSEGV $gdb_segv" \
            -ex run -ex bt \
            -ex 'thread apply all bt' \
            --args "$gtest" -t $((test_timeout * 2)) --gtest_filter="$1" \
            < /dev/null 2>&1 || true
    } >> "$2"
}

n=0
for t in $tests; do
    n=$((n + 1))
    log="$out/$(echo "$t" | tr '/' '_').log"
    outcome=$(run_one "$t" "$log")
    case "$outcome" in
    crashed*) [ "$use_gdb" = no ] || gdb_stack "$t" "$log" ;;
    esac
    reason=
    case "$outcome" in
    skipped) reason=$(sed -n 's/^\[     SKIP \] *//p' "$log" | head -n 1) ;;
    failed*) reason=$(grep -m 1 -E 'Failure|error:|Expected|Which is' "$log" || true) ;;
    crashed*) reason=$(grep -m 1 'Caught signal' "$log" || true) ;;
    esac
    printf '%-8s %s%s\n' "${outcome%%(*}" "$t" "${reason:+  -- $reason}" >> "$results"
    printf '[%d/%d] %-16s %s\n' "$n" "$ntests" "$outcome" "$t" >&2
done

# a test that crashed, hung or was killed left its fabric's shared files
rm -f /dev/shm/dcx-emu."$(id -u)".ucxgtest$$.* \
      /dev/shm/dcx-soft."$(id -u)".ucxgtest$$.*

# --- summary -------------------------------------------------------------------
{
    if [ "$ib" = yes ]; then
        echo "UCX $version $suite gtest over $where, filter '$filter':"
    else
        echo "UCX $version $suite gtest on dcx ($dcx_lib) over $where, filter '$filter':"
    fi
    for k in passed skipped failed crashed hung; do
        printf '  %-8s %d\n' "$k" "$(grep -c "^$k " "$results" || true)"
    done
    for k in failed crashed hung skipped; do
        grep "^$k " "$results" || true
    done
    echo "logs: $out"
} | tee "$out/summary.txt"

! grep -qE '^(failed|crashed|hung) ' "$results"
