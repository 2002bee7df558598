#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# SPDX lines of the tracked source files.
#
#   contrib/spdx.sh --check   lists every source file without an
#                             "SPDX-License-Identifier: BSD-3-Clause" line in
#                             its first 3 lines; exits 1 if there is one
#   contrib/spdx.sh --add     writes the line into each of them:
#                               C, C++, headers, .inl: line 1,
#                                 /* SPDX-License-Identifier: BSD-3-Clause */
#                               scripts (shebang): after the shebang, as a
#                                 '#' comment
#                               Makefile.am, *.inc, *.m4, dcx.pc.in: line 1,
#                                 '#' comment
#                               configure.ac: line 1, 'dnl' comment
#   contrib/spdx.sh --list    prints the files the two above look at
#
# Source files are the tracked files of these kinds (git ls-files, so run it
# in a git work tree): *.c *.cc *.cpp *.h *.hpp *.inl *.sh *.py *.m4 *.inc
# Makefile.am configure.ac *.in, contrib/dcx-stat and .ci/run.
# Documentation (*.md) and data files (*.txt, .gitignore) are not.
set -euo pipefail

ID='SPDX-License-Identifier: BSD-3-Clause'

usage() {
    sed -n '3,20p' "$0" | sed 's/^# \{0,1\}//'
    exit "${1:-0}"
}

cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"

# One tracked source file a line.
spdx_files() {
    git ls-files -- '*.c' '*.cc' '*.cpp' '*.h' '*.hpp' '*.inl' '*.sh' \
        '*.py' '*.m4' '*.inc' '*.in' 'Makefile.am' '*/Makefile.am' \
        'configure.ac' 'contrib/dcx-stat' '.ci/run' | sort -u
}

# How a file takes the line: c, hash (after a shebang if there is one), dnl
spdx_kind() {
    case "$1" in
    *.c|*.cc|*.cpp|*.h|*.hpp|*.inl) echo c ;;
    configure.ac)                   echo dnl ;;
    *)                              echo hash ;;
    esac
}

spdx_has() {
    head -n 3 -- "$1" | grep -q "$ID"
}

spdx_add_one() {
    local f=$1 tmp
    tmp=$(mktemp "$f.spdx.XXXXXX")
    case "$(spdx_kind "$f")" in
    c)
        { printf '/* %s */\n' "$ID"; cat -- "$f"; } > "$tmp" ;;
    dnl)
        { printf 'dnl %s\n' "$ID"; cat -- "$f"; } > "$tmp" ;;
    hash)
        if head -n 1 -- "$f" | grep -q '^#!'; then
            { head -n 1 -- "$f"; printf '# %s\n' "$ID"; tail -n +2 -- "$f"; } \
                > "$tmp"
        else
            { printf '# %s\n' "$ID"; cat -- "$f"; } > "$tmp"
        fi ;;
    esac
    # keep the mode (executable scripts stay executable)
    chmod --reference="$f" "$tmp"
    mv -- "$tmp" "$f"
}

# Files without the line, one a line
spdx_missing() {
    local f
    while IFS= read -r f; do
        if [ -f "$f" ] && ! spdx_has "$f"; then
            echo "$f"
        fi
    done < <(spdx_files)
}

[ $# -eq 1 ] || usage 2
case "$1" in
--check|--add)
    n=0
    while IFS= read -r f; do
        if [ "$1" = --add ]; then
            spdx_add_one "$f"
        else
            echo "$f: no '$ID' line in the first 3 lines"
        fi
        n=$((n + 1))
    done < <(spdx_missing)
    if [ "$1" = --add ]; then
        echo "spdx: line added to $n file(s)"
    elif [ "$n" -ne 0 ]; then
        exit 1
    fi
    ;;
--list)
    spdx_files
    ;;
-h|--help)
    usage 0 ;;
*)
    usage 2 ;;
esac
