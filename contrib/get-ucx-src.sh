#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# Fetches the UCX source of exactly the installed UCX version and prints the
# directory of the unpacked tree (for configure --with-ucx-src=DIR).
#
# The dcx transport compiles against UCX's internal headers, which the -dev
# package does not ship; the headers of the upstream (orig) tarball suffice,
# UCX itself is not configured or built.
#
# Usage: get-ucx-src.sh [--cached] [--cache-dir DIR] [--tarball FILE]
#   --cached          only print an already unpacked tree; exit 1 if none
#   --cache-dir DIR   where to keep the tarball and the tree
#                     (default: $DCX_CACHE_DIR, else ${XDG_CACHE_HOME:-~/.cache}/dcx)
#   --tarball FILE    unpack this ucx_<version>.orig.tar.* instead of
#                     downloading one
#
# On Debian it runs "apt-get source --download-only ucx=<installed version>"
# with dcx's own apt configuration in <cache dir>/apt/<release> (a deb-src
# entry for the release's main component on the mirror the system's sources
# use, and its own lists; see contrib/apt-private.sh): it changes no package
# sources of the machine and needs no root.  deb-src files an earlier dcx
# version added to /etc/apt/sources.list.d are removed (as root), with one
# line saying so.
#
# Idempotent: a second run finds the tree and prints it at once.

set -eu

. "$(dirname "$0")/ucx-src-opts.sh"
. "$(dirname "$0")/apt-private.sh"

while [ $# -gt 0 ]; do
    ucx_src_common_opt "$@"
    [ "$ucx_src_opt_words" -eq 0 ] || { shift "$ucx_src_opt_words"; continue; }
    die "unknown argument '$1' (see --help)"
done

private_apt_forget_old

# --- the installed version ------------------------------------------------
# Debian version (with revision, for apt) and upstream version (for the tree).
deb_version=
if command -v dpkg-query >/dev/null 2>&1; then
    deb_version=$(dpkg-query -W -f='${Version}' libucx0 2>/dev/null || true)
fi
ucx_version=
if command -v ucx_info >/dev/null 2>&1; then
    ucx_version=$(ucx_info -v 2>/dev/null |
                  sed -n 's/^# *\(Library version:\|Version\) *\([0-9.]*\).*/\2/p' | head -n 1)
fi
if [ -z "$ucx_version" ] && [ -n "$deb_version" ]; then
    ucx_version=$(echo "$deb_version" | sed -e 's/^[0-9]*://' -e 's/-[^-]*$//')
fi
[ -n "$ucx_version" ] ||
    die "cannot tell the installed UCX version (no ucx_info, no libucx0 package)"

tree="$cache_dir/ucx-$ucx_version"

src_version() {
    sed -n 's/^define(.\{0,1\}ucx_ver_\(major\|minor\|patch\).\{0,1\}, *\([0-9]*\)).*/\2/p' \
        "$1/configure.ac" 2>/dev/null | tr '\n' '.' | sed 's/\.$//'
}

if [ -f "$tree/src/uct/base/uct_iface.h" ] &&
   [ "$(src_version "$tree")" = "$ucx_version" ]; then
    echo "$tree"
    exit 0
fi
[ "$cached_only" = no ] || die "no unpacked UCX $ucx_version source in $cache_dir"

mkdir -p "$cache_dir" || die "cannot create $cache_dir"

# --- the tarball ----------------------------------------------------------
find_orig() {
    for f in "$cache_dir"/ucx_"$ucx_version".orig.tar.*; do
        [ -f "$f" ] && { echo "$f"; return 0; }
    done
    return 1
}

# Does the private configuration's lists hold the source package?
apt_has_source() {
    private_apt apt-cache showsrc ucx 2>/dev/null | grep -q "^Version: $deb_version\$"
}

if [ -z "$tarball" ]; then
    tarball=$(find_orig || true)
fi
if [ -z "$tarball" ]; then
    command -v apt-get >/dev/null 2>&1 ||
        die "no apt-get: download ucx-$ucx_version.tar.gz from https://github.com/openucx/ucx/releases and pass --tarball FILE"
    [ -n "$deb_version" ] || die "UCX is not installed from a Debian package (libucx0); pass --tarball FILE"
    release=$(release_codename) || exit 1
    private_apt_setup "$release" "$release"
    if ! apt_has_source; then
        private_apt_update || die "apt-get update of $private_apt_dir failed"
    fi
    apt_has_source ||
        die "$private_apt_mirror has no source package ucx=$deb_version for $release (pass --tarball FILE)"
    note "downloading the ucx=$deb_version source package into $cache_dir"
    (cd "$cache_dir" && private_apt apt-get source --download-only "ucx=$deb_version" >&2) ||
        die "apt-get source --download-only ucx=$deb_version failed"
    tarball=$(find_orig) || die "apt-get source left no ucx_$ucx_version.orig.tar.* in $cache_dir"
fi
[ -f "$tarball" ] || die "no such tarball: $tarball"

# --- unpack ---------------------------------------------------------------
# Into a scratch directory first, then renamed, so an interrupted run never
# leaves a half tree where the next run would accept it.
scratch=$(mktemp -d "$cache_dir/.unpack.XXXXXX") || die "cannot create a scratch directory in $cache_dir"
trap 'rm -rf "$scratch"' EXIT INT TERM
tar -xf "$tarball" -C "$scratch" || die "cannot unpack $tarball"
top=
for d in "$scratch"/*; do
    [ -f "$d/src/uct/base/uct_iface.h" ] && { top=$d; break; }
done
[ -n "$top" ] || die "$tarball holds no UCX source tree (no src/uct/base/uct_iface.h)"
got=$(src_version "$top")
[ "$got" = "$ucx_version" ] ||
    die "$tarball is UCX '$got', but the installed UCX is $ucx_version"
rm -rf "$tree"
mv "$top" "$tree" || die "cannot move the tree to $tree"
echo "$tree"
