#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# Builds a UCX other than the system one, for building and testing dcx
# against it, and prints its install prefix (for configure --with-ucx=PREFIX;
# the source tree it was built from is PREFIX/share/dcx-ucx-src, for
# --with-ucx-src).
#
# Usage: build-ucx.sh [options] VERSION
#   VERSION           upstream version, e.g. 1.18.1 (Debian 13) or 1.23
#                     (Debian unstable: the newest 1.23.x it has)
#   --cached          only print an already built prefix; exit 1 if none
#   --cache-dir DIR   where sources, builds and prefixes are kept
#                     (default: $DCX_CACHE_DIR, else ${XDG_CACHE_HOME:-~/.cache}/dcx)
#   --tarball FILE    build from this UCX source tarball instead of
#                     downloading one
#   --src DIR         build from this UCX source tree (copied first)
#   -j N              parallel make jobs (default 2)
#
# The source comes from Debian's source package (apt-get source
# --download-only ucx=<the Debian version of VERSION>), fetched with dcx's
# own apt configuration in <cache dir>/apt/newer: deb-src entries for
# Debian 13 (trixie) and unstable (sid) on the mirror the system's sources
# use, with their own lists, updated before each download (see
# contrib/apt-private.sh).  It changes no package sources of the machine
# and needs no root; deb-src files an earlier dcx version added to
# /etc/apt/sources.list.d are removed (as root), with one line saying so.
#
# UCX is configured for what dcx and its tests use: libucs, libuct, libucp,
# libucm, the shared-memory and TCP transports, ucx_info and ucx_perftest;
# no documentation, bindings, GPU, InfiniBand, RDMA-CM or CMA support.  It
# is built at the lowest CPU priority (nice 19).
#
# Layout under the cache directory:
#   ucx-VERSION/             the unpacked source (as contrib/get-ucx-src.sh)
#   build/ucx-VERSION/       the object tree (removed after a good install)
#   install/ucx-VERSION/     the prefix; .dcx-build-ucx marks it complete
#
# Idempotent: a second run finds the complete prefix and prints it at once.
#
# Checksums: the source is identified by its tree checksum, the SHA-256 of
# the sorted sha256sum lines of every file of the tree except those
# UCX's autogen.sh generates (configure, Makefile.in, aclocal.m4,
# config.h.in, libtool's files...), so a tree checksums the same before and
# after autogen.sh.  When a source enters the cache, ucx-VERSION/.dcx-source
# records where it came from (tarball and its SHA-256, source tree and its
# git commit, or Debian source package) and its tree checksum; the prefix's
# .dcx-build-ucx records the tree checksum it was built from.  Every run,
# also with a cached prefix, checksums the tree again: a tree changed since
# it was recorded or built (dcx compiles against its internal headers, so
# it must be the source of the UCX installed) is an error.  The checksums
# of the sources dcx was tested with are in contrib/ucx-sources.txt;
# test/ucx-versions.sh says whether the one it builds is among them.
#
# Exit status: 0 and the prefix printed; 3 if no source of VERSION could be
# had (the archive does not carry it); 1 for any other failure.

set -eu

. "$(dirname "$0")/ucx-src-opts.sh"
. "$(dirname "$0")/apt-private.sh"
src_in=
jobs=2
want=

# die_nosrc MESSAGE: the source cannot be had (exit status 3)
die_nosrc() {
    echo "$prog: $*" >&2
    exit 3
}

while [ $# -gt 0 ]; do
    ucx_src_common_opt "$@"
    [ "$ucx_src_opt_words" -eq 0 ] || { shift "$ucx_src_opt_words"; continue; }
    case "$1" in
    --src)          [ $# -ge 2 ] || die "--src needs a directory"
                    src_in=$2; shift ;;
    --src=*)        src_in=${1#*=} ;;
    -j)             [ $# -ge 2 ] || die "-j needs a number"
                    jobs=$2; shift ;;
    -j*)            jobs=${1#-j} ;;
    -*)             die "unknown option '$1' (see --help)" ;;
    *)              [ -z "$want" ] || die "one VERSION only (got '$want' and '$1')"
                    want=$1 ;;
    esac
    shift
done

[ -n "$want" ] || die "no VERSION given (e.g. 1.18.1; see --help)"
echo "$want" | grep -qE '^[0-9]+\.[0-9]+(\.[0-9]+)?$' ||
    die "VERSION '$want' is not of the form MAJOR.MINOR[.PATCH]"
echo "$jobs" | grep -qE '^[1-9][0-9]*$' || die "-j '$jobs' is not a positive number"

private_apt_forget_old

# The version of a source tree, from its configure.ac.
src_version() {
    sed -n 's/^define(.\{0,1\}ucx_ver_\(major\|minor\|patch\).\{0,1\}, *\([0-9]*\)).*/\2/p' \
        "$1/configure.ac" 2>/dev/null | tr '\n' '.' | sed 's/\.$//'
}

# Does upstream version $1 satisfy the requested VERSION (1.23 matches 1.23.x)?
version_matches() {
    case "$want" in
    *.*.*)  [ "$1" = "$want" ] ;;
    *)      case "$1" in "$want".*) return 0 ;; *) return 1 ;; esac ;;
    esac
}

# The tree checksum of source tree $1 (see the header)
tree_checksum() {
    (cd "$1" && find . -name autom4te.cache -prune -o -type f -print0 |
        grep -zvE '(^|/)(Makefile\.in|configure|aclocal\.m4|config\.h\.in|config\.guess|config\.sub|install-sh|ltmain\.sh|missing|compile|depcomp|test-driver|ar-lib|libtool\.m4|ltoptions\.m4|ltsugar\.m4|ltversion\.m4|lt~obsolete\.m4|\.dcx-source)$' |
        LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
}

# record_source TREE ORIGIN: writes TREE/.dcx-source
record_source() {
    {
        echo "origin=$2"
        echo "tree_sha256=$(tree_checksum "$1")"
        echo "recorded=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    } > "$1/.dcx-source" || die "cannot write $1/.dcx-source"
}

# check_source TREE: the tree's checksum, after checking it against what
# TREE/.dcx-source recorded (recorded now, if the tree came into the cache
# before sources were recorded)
check_source() {
    sum=$(tree_checksum "$1")
    if [ ! -f "$1/.dcx-source" ]; then
        note "$1 has no record of its origin (cached before dcx recorded sources): recording its tree checksum $sum now"
        record_source "$1" "unknown (in the cache before dcx recorded sources)"
    fi
    rec=$(sed -n 's/^tree_sha256=//p' "$1/.dcx-source")
    [ "$sum" = "$rec" ] ||
        die "the UCX source in $1 changed since it was recorded (tree checksum $sum, recorded $rec): remove it and its prefix in $cache_dir/install to get and build it again"
    echo "$sum"
}

# check_prefix PREFIX: its source tree is still the one it was built from;
# adds the source's record to a prefix built before sources were recorded
check_prefix() {
    tree=$(sed -n 's/^source=//p' "$1/.dcx-build-ucx")
    [ -d "$tree" ] ||
        die "the source tree $tree of $1 is gone: remove $1 to build it again"
    sum=$(check_source "$tree")
    built=$(sed -n 's/^source_sha256=//p' "$1/.dcx-build-ucx")
    if [ -z "$built" ]; then
        note "$1 was built before dcx recorded sources: taking the tree checksum $sum of $tree as its source's"
        {
            echo "source_origin=$(sed -n 's/^origin=//p' "$tree/.dcx-source")"
            echo "source_sha256=$sum"
        } >> "$1/.dcx-build-ucx" || die "cannot write $1/.dcx-build-ucx"
    elif [ "$built" != "$sum" ]; then
        die "$1 was built from a UCX source of tree checksum $built, but $tree now has $sum: remove $1 to build it again"
    fi
}

# A complete prefix for the requested version, if one is cached.
find_prefix() {
    for p in "$cache_dir"/install/ucx-*; do
        [ -f "$p/.dcx-build-ucx" ] || continue
        v=$(sed -n 's/^version=//p' "$p/.dcx-build-ucx")
        version_matches "$v" && { echo "$p"; return 0; }
    done
    return 1
}

if prefix=$(find_prefix); then
    check_prefix "$prefix"
    echo "$prefix"
    exit 0
fi
[ "$cached_only" = no ] || die "no complete UCX $want build in $cache_dir/install"

mkdir -p "$cache_dir" || die "cannot create $cache_dir"

# One build of a version at a time per cache directory.
lock="$cache_dir/.build-ucx-$want.lock"
if command -v flock >/dev/null 2>&1 && [ -z "${DCX_BUILD_UCX_LOCKED:-}" ]; then
    DCX_BUILD_UCX_LOCKED=1 exec flock "$lock" "$0" --cache-dir "$cache_dir" \
        ${tarball:+--tarball "$tarball"} ${src_in:+--src "$src_in"} -j "$jobs" "$want"
fi

# --- the source -------------------------------------------------------------
# A cached tree of the version, else --src, --tarball, or Debian's package.
find_tree() {
    for d in "$cache_dir"/ucx-*; do
        [ -f "$d/src/uct/base/uct_iface.h" ] || continue
        version_matches "$(src_version "$d")" && { echo "$d"; return 0; }
    done
    return 1
}

# The Debian source version whose upstream part matches VERSION, newest
# first, in the lists of the private apt configuration
deb_source_version() {
    private_apt apt-cache showsrc ucx 2>/dev/null | sed -n 's/^Version: //p' |
    while read -r dv; do
        up=$(echo "$dv" | sed -e 's/^[0-9]*://' -e 's/-[^-]*$//' -e 's/[+~].*$//')
        version_matches "$up" && echo "$dv"
    done | sort -rV | head -n 1
}

# Unpacks tarball $1 (or copies tree $1) into the cache as ucx-<version>,
# recording ORIGIN $2 and its tree checksum in it.
install_tree() {
    scratch=$(mktemp -d "$cache_dir/.unpack.XXXXXX") || die "cannot create a scratch directory in $cache_dir"
    trap 'rm -rf "$scratch"' EXIT INT TERM
    if [ -d "$1" ]; then
        cp -a "$1" "$scratch/" || die "cannot copy $1"
    else
        tar -xf "$1" -C "$scratch" || die "cannot unpack $1"
    fi
    top=
    for d in "$scratch"/*; do
        [ -f "$d/src/uct/base/uct_iface.h" ] && { top=$d; break; }
    done
    [ -n "$top" ] || die "$1 holds no UCX source tree (no src/uct/base/uct_iface.h)"
    got=$(src_version "$top")
    version_matches "$got" || die "$1 is UCX '$got', not $want"
    record_source "$top" "$2"
    rm -rf "$cache_dir/ucx-$got"
    mv "$top" "$cache_dir/ucx-$got" || die "cannot move the tree to $cache_dir/ucx-$got"
    rm -rf "$scratch"
    trap - EXIT INT TERM
}

if [ -n "$src_in" ]; then
    [ -d "$src_in" ] || die "--src $src_in is not a directory"
    commit=$(git -C "$src_in" rev-parse HEAD 2>/dev/null) || commit=
    dirty=
    [ -z "$commit" ] || [ -z "$(git -C "$src_in" status --porcelain 2>/dev/null)" ] ||
        dirty=", with uncommitted changes"
    install_tree "$src_in" "source tree $(cd "$src_in" && pwd)${commit:+ at git commit $commit$dirty}"
elif [ -n "$tarball" ]; then
    [ -f "$tarball" ] || die "no such tarball: $tarball"
    install_tree "$tarball" "tarball $(cd "$(dirname "$tarball")" && pwd)/$(basename "$tarball") (sha256 $(sha256sum "$tarball" | cut -d' ' -f1))"
elif ! find_tree >/dev/null; then
    command -v apt-get >/dev/null 2>&1 ||
        die_nosrc "no apt-get: pass --tarball FILE (https://github.com/openucx/ucx/releases)"
    private_apt_setup newer trixie sid
    private_apt_update || die "apt-get update of $private_apt_dir failed"
    dv=$(deb_source_version)
    [ -n "$dv" ] || die_nosrc "Debian 13 and unstable (trixie, sid on $private_apt_mirror) have no ucx source package of version $want"
    dl="$cache_dir/dl"
    mkdir -p "$dl"
    note "downloading the ucx=$dv source package into $dl"
    (cd "$dl" && private_apt apt-get source --download-only "ucx=$dv" >&2) ||
        die_nosrc "apt-get source --download-only ucx=$dv failed (the archive may no longer carry it: pass --tarball FILE or --src DIR)"
    up=$(echo "$dv" | sed -e 's/^[0-9]*://' -e 's/-[^-]*$//')
    orig=
    for f in "$dl"/ucx_"$up".orig.tar.*; do
        [ -f "$f" ] && { orig=$f; break; }
    done
    [ -n "$orig" ] || die "apt-get source left no ucx_$up.orig.tar.* in $dl"
    install_tree "$orig" "Debian source package ucx=$dv, $(basename "$orig") (sha256 $(sha256sum "$orig" | cut -d' ' -f1))"
fi
tree=$(find_tree) || die "no UCX $want source tree in $cache_dir"
version=$(src_version "$tree")
tree_sum=$(check_source "$tree")

# --- configure, build, install ---------------------------------------------
prefix="$cache_dir/install/ucx-$version"
build="$cache_dir/build/ucx-$version"
config_args="--prefix=$prefix --enable-mt --disable-doxygen-doc --disable-examples
    --without-java --without-go --without-cuda --without-rocm --without-ze
    --without-gdrcopy --without-verbs --without-rdmacm --without-knem
    --without-xpmem --without-ugni --without-fuse3 --without-mad --without-mpi
    --disable-cma"

run() {
    note "$*"
    nice -n 19 "$@"
}

if [ ! -x "$tree/configure" ]; then
    note "generating $tree/configure"
    (cd "$tree" && run ./autogen.sh >&2) || die "autogen.sh failed in $tree"
fi

start=$(date +%s)
rm -rf "$build" "$prefix"
mkdir -p "$build" || die "cannot create $build"
log="$build/build.log"
note "building UCX $version in $build (log: $log)"
# shellcheck disable=SC2086
(cd "$build" && run "$tree/configure" $config_args) > "$log" 2>&1 ||
    die "UCX configure failed, see $log"
(cd "$build" && run make -j"$jobs" && run make install) >> "$log" 2>&1 ||
    die "UCX build failed, see $log"
[ -x "$prefix/bin/ucx_info" ] && [ -x "$prefix/bin/ucx_perftest" ] ||
    die "UCX $version installed no ucx_info or ucx_perftest in $prefix"
got=$("$prefix/bin/ucx_info" -v | sed -n 's/^# *\(Library version:\|Version\) *\([0-9.]*\).*/\2/p' | head -n 1)
[ "$got" = "$version" ] || die "$prefix/bin/ucx_info reports version '$got', not $version"
mkdir -p "$prefix/share"
ln -sfn "$tree" "$prefix/share/dcx-ucx-src"
{
    echo "version=$version"
    echo "source=$tree"
    echo "source_origin=$(sed -n 's/^origin=//p' "$tree/.dcx-source")"
    echo "source_sha256=$tree_sum"
    echo "seconds=$(( $(date +%s) - start ))"
} > "$prefix/.dcx-build-ucx"
rm -rf "$build"
note "UCX $version built in $(( $(date +%s) - start )) s"
echo "$prefix"
