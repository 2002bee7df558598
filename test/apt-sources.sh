#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Checks that fetching UCX sources leaves the machine's package sources as
# they were: contrib/get-ucx-src.sh and contrib/build-ucx.sh fetch through
# dcx's own apt configuration (contrib/apt-private.sh) and create or change
# nothing under /etc/apt.  Each run below goes against a scratch copy of
# the apt configuration (APT_CONFIG naming it as Dir::Etc) and a scratch
# cache directory, and the real /etc/apt is compared before and after too:
#   1. get-ucx-src.sh fetches the installed UCX's source (apt-get update of
#      its own lists, apt-get source), with the two deb-src files earlier
#      dcx versions added planted in the copy: they must be removed, with
#      one line saying so, and nothing else in the copy may change;
#   2. as an unprivileged user (user nobody; when run as root), with the
#      lists of run 1 but no tarball: the source is fetched without root,
#      the planted files cannot be removed and a line says so;
#   3. build-ucx.sh's lookup of newer sources (Debian 13 and unstable) for
#      a version Debian does not have (1.99): it must fetch those suites'
#      lists into the scratch cache and exit 3 ("no source").
# Needs the network to the system's Debian mirror (about 35 MB).  Ends
# with one line "N passed, N failed"; exit status 0 only if all passed.
#
# Usage: test/apt-sources.sh [--keep]   (--keep: keep the scratch directory)
#        test/apt-sources.sh --snapshot FILE
#        test/apt-sources.sh --same-as FILE
#   --snapshot writes a snapshot of /etc/apt (every entry's type, mode,
#   owner and name, every file's SHA-256) to FILE; --same-as compares
#   /etc/apt with such a FILE, shows the differences and fails if there
#   are any (contrib/test.sh checks its whole run so).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
keep=0
mode="test"
case "${1:-}" in
--keep)     keep=1 ;;
--snapshot|--same-as)
            [ $# -eq 2 ] || { echo "apt-sources.sh: $1 needs a FILE" >&2; exit 2; }
            mode=${1#--}; file=$2 ;;
"")         ;;
*)          echo "apt-sources.sh: unknown argument '$1'" >&2; exit 2 ;;
esac

check() {   # check WHAT CONDITION...
    local what=$1; shift
    if "$@"; then
        passed=$((passed + 1)); echo "   ok: $what"
    else
        failed=$((failed + 1)); echo "   FAILED: $what"
    fi
}

# snapshot DIR: every entry's type, mode, owner and name (links with their
# target), and every file's SHA-256
snapshot() {
    (cd "$1" && find . -printf '%y %m %u:%g %p %l\n' | LC_ALL=C sort &&
        find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum)
}

# same_as SNAPSHOT-FILE DIR: DIR is still as SNAPSHOT-FILE recorded
same_as() {
    snapshot "$2" > "$1.now"
    diff "$1" "$1.now" >&2
}

# What earlier dcx versions wrote (contrib/get-ucx-src.sh and
# contrib/build-ucx.sh when they still changed /etc/apt)
plant_old_files() {
    local suites k=/usr/share/keyrings/debian-archive-keyring.gpg
    for suites in "$release:dcx-src" "trixie sid:dcx-ucx-newer"; do
        {
            echo "Types: deb-src"
            echo "URIs: http://deb.debian.org/debian"
            echo "Suites: ${suites%:*}"
            echo "Components: main"
            [ ! -f "$k" ] || echo "Signed-By: $k"
        } > "$1/sources.list.d/${suites#*:}.sources"
    done
}

real_etc=$(apt-config shell d Dir::Etc/d | sed -n "s/^d='\(.*\)'\$/\1/p")
real_etc=${real_etc%/}
[ -d "$real_etc/sources.list.d" ] || { echo "apt-sources.sh: no $real_etc/sources.list.d"; exit 1; }
case $mode in
snapshot)   snapshot "$real_etc" > "$file"; exit ;;
same-as)    if same_as "$file" "$real_etc"; then
                echo "$real_etc is as $file recorded"; exit 0
            fi
            echo "$real_etc changed since $file was recorded (above: < then, > now)"
            exit 1 ;;
esac

work=$(mktemp -d /tmp/dcx-apt-sources.XXXXXX) || exit 1
chmod 755 "$work"
[ $keep -eq 1 ] || trap 'rm -rf "$work"' EXIT
passed=0
failed=0
release=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
ucx_version=$(dpkg-query -W -f='${Version}' libucx0 | sed -e 's/^[0-9]*://' -e 's/-[^-]*$//')

etc="$work/etc-apt"
cp -a "$real_etc" "$etc" || exit 1
rm -f "$etc/sources.list.d/dcx-src.sources" "$etc/sources.list.d/dcx-ucx-newer.sources"
echo "Dir::Etc \"$etc/\";" > "$work/apt.conf"
export APT_CONFIG="$work/apt.conf"
snapshot "$real_etc" > "$work/real.snap"
snapshot "$etc" > "$work/copy.snap"
cache="$work/cache"

echo "== 1. get-ucx-src.sh, old deb-src files in the copy (as $(id -un))"
plant_old_files "$etc"
DCX_CACHE_DIR=$cache "$top/contrib/get-ucx-src.sh" > "$work/1.out" 2> "$work/1.err"
rc=$?
sed 's/^/   | /' "$work/1.err"
check "exit status 0 (got $rc)" [ $rc -eq 0 ]
# printed_tree OUT-FILE [OWNER]: OUT-FILE names the unpacked tree (and
# OWNER owns it)
printed_tree() {
    [ "$(cat "$1")" = "$cache/ucx-$ucx_version" ] &&
        [ -f "$cache/ucx-$ucx_version/src/uct/base/uct_iface.h" ] &&
        { [ -z "${2:-}" ] || [ "$(stat -c %U "$cache/ucx-$ucx_version")" = "$2" ]; }
}
check "prints the tree $cache/ucx-$ucx_version" printed_tree "$work/1.out"
check "fetched with its own lists in $cache/apt/$release" \
    grep -q "^get-ucx-src.sh: updating the lists of $cache/apt/$release " "$work/1.err"
check "one line says both old files were removed" \
    [ "$(grep -c "^get-ucx-src.sh: removed $etc/sources.list.d/dcx-src.sources and $etc/sources.list.d/dcx-ucx-newer.sources: " "$work/1.err")" -eq 1 ]
check "the copy is as before, without the old files" same_as "$work/copy.snap" "$etc"
check "$real_etc unchanged" same_as "$work/real.snap" "$real_etc"

if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
    echo "== 2. get-ucx-src.sh as user nobody, no tarball cached, old files in the copy"
    rm -rf "$cache/ucx-$ucx_version" "$cache"/ucx_"$ucx_version"*
    chown -R nobody "$cache"
    plant_old_files "$etc"
    snapshot "$etc" > "$work/copy2.snap"
    setpriv --reuid=nobody --regid=nogroup --clear-groups \
        env HOME="$work" APT_CONFIG="$APT_CONFIG" DCX_CACHE_DIR="$cache" \
        "$top/contrib/get-ucx-src.sh" > "$work/2.out" 2> "$work/2.err"
    rc=$?
    sed 's/^/   | /' "$work/2.err"
    check "exit status 0 (got $rc)" [ $rc -eq 0 ]
    check "fetched and unpacked the tree as nobody" printed_tree "$work/2.out" nobody
    check "one line says the old files cannot be removed" \
        [ "$(grep -c "^get-ucx-src.sh: cannot remove $etc/sources.list.d/dcx-src.sources and $etc/sources.list.d/dcx-ucx-newer.sources (not root?)" "$work/2.err")" -eq 1 ]
    check "the copy is as before" same_as "$work/copy2.snap" "$etc"
    check "$real_etc unchanged" same_as "$work/real.snap" "$real_etc"
    rm -f "$etc/sources.list.d/dcx-src.sources" "$etc/sources.list.d/dcx-ucx-newer.sources"
else
    echo "== 2. (not root, or no setpriv: the run as another user is left out)"
fi

echo "== 3. build-ucx.sh 1.99: looks for newer sources, finds none"
DCX_CACHE_DIR=$cache "$top/contrib/build-ucx.sh" 1.99 > "$work/3.out" 2> "$work/3.err"
rc=$?
sed 's/^/   | /' "$work/3.err"
check "exit status 3, no source (got $rc)" [ $rc -eq 3 ]
# newer_lists DIR: DIR holds source lists of trixie and of sid
newer_lists() {
    compgen -G "$1/*_dists_trixie_main_source_Sources*" >/dev/null &&
        compgen -G "$1/*_dists_sid_main_source_Sources*" >/dev/null
}
check "fetched trixie's and sid's source lists into $cache/apt/newer" \
    newer_lists "$cache/apt/newer/lists"
check "the copy is as before" same_as "$work/copy.snap" "$etc"
check "$real_etc unchanged" same_as "$work/real.snap" "$real_etc"

echo
[ $keep -eq 0 ] || echo "scratch directory kept: $work"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
