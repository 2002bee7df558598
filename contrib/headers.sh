#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The header check: every header of src/ and include/ (.h, and the .inl
# headers of inline functions) compiles on its own, so that a header
# includes what it uses and no file depends on the order of its includes.
#
#   contrib/headers.sh [-v] [BUILD_DIR]
#
#   BUILD_DIR   a configured dcx build tree (default: build/ of the source
#               tree), whose compiler and flags the headers are compiled with
#   -v          the compiler's whole output for each failing header
#
# Two rules for each header.  Its includes are at its top: no #include
# after its first line of code (a line that starts with a name or a brace,
# outside a comment).  It compiles alone (-fsyntax-only): a translation
# unit that includes it and nothing else but, where the flags define
# HAVE_CONFIG_H, config.h before it, as every .c file of the tree begins
# (config.h sets the feature macros, _GNU_SOURCE, which must come before
# any system header).  The unit names the header by its full path, so that
# the header's own quoted includes are found beside it.  The compiler and
# flags are those of the automake target of the build tree that builds
# most of the .c files of the header's folder (asked from make itself, as
# contrib/call-pairs.py does); a folder without .c files (include/) takes
# those of the first target whose include path names include/.  A folder
# no target of the build tree builds (the transport without the UCX
# source, the mlx5 backend and its emulation without rdma-core) is skipped
# with a line saying so.
#
# Prints one line per failing header (the header and its late include, or
# the compiler's first error) and a last line with the counts.  Exit
# status 0 when every header passes, 1 when one fails, 2 when the check
# cannot run.
set -uo pipefail

verbose=0
if [ "${1:-}" = "-v" ]; then
    verbose=1
    shift
fi
top=$(cd "$(dirname "$0")/.." && pwd)
b=${1:-$top/build}
if [ ! -f "$b/Makefile" ]; then
    echo "headers: $b is not a configured build tree" >&2
    exit 2
fi
b=$(cd "$b" && pwd)

# make_query EXPR...: the values of make expressions in the build tree, one
# a line, echoed by the one rule of an extra makefile (each marked, apart
# from what make prints when it first brings the Makefile up to date)
make_query() {
    local mk expr r
    mk=$(mktemp --suffix=.mk) || return 2
    {
        echo "__headers_query:"
        for expr in "$@"; do
            printf "\t@echo '=%s'\n" "${expr//\'/\'\\\'\'}"
        done
    } >"$mk"
    make -s --no-print-directory -C "$b" -f Makefile -f "$mk" \
        __headers_query >"$mk.out"
    r=$?
    sed -n 's/^=//p' "$mk.out"
    rm -f "$mk" "$mk.out"
    return $r
}

# the automake targets of the build tree (those its configuration builds:
# a target of a disabled conditional is commented out there), with the
# sources, compiler and flags of each
mapfile -t targets < <(sed -n 's/^\([A-Za-z0-9_]*\)_SOURCES *=.*/\1/p' \
                           "$b/Makefile" | grep -vx DIST | sort -u)
exprs=('$(top_srcdir)')
for t in "${targets[@]}"; do
    cpp="\$(if \$(value ${t}_CPPFLAGS),\$(${t}_CPPFLAGS),\$(AM_CPPFLAGS))"
    cfl="\$(if \$(value ${t}_CFLAGS),\$(${t}_CFLAGS),\$(AM_CFLAGS))"
    exprs+=("\$(${t}_SOURCES)"
            "\$(CC) \$(DEFS) \$(DEFAULT_INCLUDES) \$(INCLUDES) $cpp \$(CPPFLAGS) $cfl \$(CFLAGS)")
done
if ! mapfile -t values < <(make_query "${exprs[@]}") ||
    [ ${#values[@]} -ne ${#exprs[@]} ]; then
    echo "headers: make in $b failed" >&2
    exit 2
fi
top_srcdir=${values[0]}
declare -A sources flags
for i in "${!targets[@]}"; do
    sources[${targets[$i]}]=${values[$((2 * i + 1))]}
    flags[${targets[$i]}]=${values[$((2 * i + 2))]}
done

# target_of FOLDER: the target that builds most .c files of FOLDER, then
# the one with the fewest other files; for a folder without .c files under
# include/, the first whose include path names include/; empty when none
target_of() {
    local folder=$1 t n others best="" best_n=0 best_o=0
    for t in "${targets[@]}"; do
        n=$(tr ' ' '\n' <<<"${sources[$t]}" | grep -c "^$folder/[^/]*\.c$")
        others=$(($(wc -w <<<"${sources[$t]}") - n))
        if [ "$n" -gt 0 ] &&
            { [ "$n" -gt "$best_n" ] ||
                { [ "$n" -eq "$best_n" ] && [ "$others" -lt "$best_o" ]; }; }; then
            best=$t best_n=$n best_o=$others
        fi
    done
    if [ -z "$best" ] && [[ "$folder" == include/* ]]; then
        for t in "${targets[@]}"; do
            if [[ " ${flags[$t]} " == *" -I$top_srcdir/include "* ]]; then
                best=$t
                break
            fi
        done
    fi
    echo "$best"
}

shopt -s nullglob
mapfile -t folders < <(cd "$top" &&
                           find src include \( -name '*.h' -o -name '*.inl' \) \
                               -printf '%h\n' 2>/dev/null | sort -u)
passed=0
failed=0
skipped=()
for f in "${folders[@]}"; do
    t=$(target_of "$f")
    if [ -z "$t" ]; then
        skipped+=("$f")
        continue
    fi
    read -r -a cmd <<<"${flags[$t]}"
    for h in "$top/$f"/*.h "$top/$f"/*.inl; do
        # its includes at its top
        late=$(awk '/^\/\*/ { c = 1 }
                    c && /\*\// { c = 0; next }
                    c { next }
                    /^#include/ { if (code) { print FNR; exit } next }
                    /^[A-Za-z_}]/ && !/^extern "C"/ { code = 1 }' "$h")
        if [ -n "$late" ]; then
            failed=$((failed + 1))
            echo "${h#"$top"/}:$late: #include after the header's first declaration"
            continue
        fi
        out=$(cd "$b" &&
                  printf '#ifdef HAVE_CONFIG_H\n#include "config.h"\n#endif\n#include "%s"\n' "$h" |
                  "${cmd[@]}" -fsyntax-only -x c - 2>&1)
        if [ $? -eq 0 ]; then
            passed=$((passed + 1))
            continue
        fi
        failed=$((failed + 1))
        first=$(grep -m 1 -E 'error|warning' <<<"$out")
        first=${first//"$top"\//}
        echo "${h#"$top"/}: ${first:-does not compile alone}"
        [ $verbose -eq 0 ] || sed 's/^/    /' <<<"$out"
    done
done

for f in "${skipped[@]}"; do
    echo "skipped: $f (no target of $b builds it)"
done
echo "headers: $passed pass, $failed fail (compiled alone with the flags of $b)"
[ "$failed" -eq 0 ]
