#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The structure check: contrib/call-pairs.py --check over every folder of
# src/ with .c files, in each build tree given: no two files of a folder
# call each other and no cycle of calls goes through more than two files
# (calls leaving the folder are not counted), but for the exceptions
# contrib/call-pairs.allow lists, each with its reason: pairs of files
# allowed to call each other, and folders reported, not checked (their
# pairs and cycles printed, never a failure).  Each build tree compiles
# the files against its own UCX, so what dcx_compat.c compiles only
# against a newer UCX is checked in that UCX's build.
#
#   contrib/structure.sh [BUILD_DIR]...
#
#   BUILD_DIR   a configured dcx build tree (default: build/ and every
#               build-ucx-*/ of the source tree).  One that is not
#               configured (test/ucx-versions.sh leaves only its logs there
#               when that UCX's source cannot be had) is skipped with a line
#               saying so.
#
# Prints every run in full, then one line per build and folder.  Exit
# status 0 when every checked folder passes in every configured build, 1
# when one fails, 2 when no build tree given is configured or the script
# cannot run (a compile failure, a bad line of the exceptions).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -eq 0 ]; then
    shopt -s nullglob
    set -- "$top/build" "$top"/build-ucx-*
    shopt -u nullglob
fi

# the folders: every directory of src/ holding a .c file
mapfile -t folders < <(cd "$top" && find src -name '*.c' -printf '%h\n' | sort -u)

summary=()
skipped=()
built=0
rc=0
for b in "$@"; do
    if [ ! -f "$b/Makefile" ]; then
        skipped+=("$b: no configured build tree there")
        continue
    fi
    b=$(cd "$b" && pwd)
    built=$((built + 1))
    ucx=$(sed -n 's/^UCX_VERSION = //p' "$b/Makefile")
    echo "== build tree $b (UCX ${ucx:-of unknown version})"
    for f in "${folders[@]}"; do
        echo "--- $f"
        out=$(python3 "$top/contrib/call-pairs.py" --check -b "$b" "$top/$f" 2>&1)
        r=$?
        echo "$out"
        echo
        if [ $r -eq 0 ] || [ $r -eq 1 ]; then
            summary+=("UCX ${ucx:-?}  $(tail -n 1 <<<"$out")")
        else
            summary+=("UCX ${ucx:-?}  $f: could not run (status $r)")
        fi
        [ $r -le $rc ] || rc=$r
    done
done

echo "== structure: contrib/call-pairs.py --check, exceptions in contrib/call-pairs.allow"
for line in "${summary[@]}"; do
    echo "  $line"
done
for line in "${skipped[@]}"; do
    echo "  skipped: $line"
done
[ ${#skipped[@]} -eq 0 ] ||
    echo "  (test/ucx-versions.sh configures build-ucx-VERSION only where" \
         "that UCX's source can be had)"
if [ $built -eq 0 ]; then
    echo "  no configured build tree: nothing checked"
    exit 2
fi
exit $rc
