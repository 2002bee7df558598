#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# dcx lint step: the conventions a tool can check, on the tracked files.
#
#   contrib/lint.sh           checks; one line per violation, exit 1 if any
#   contrib/lint.sh -v        the same, and every place clang-format would
#                             change (file:line:column) instead of a count
#   contrib/lint.sh --fix     writes what can be written: the SPDX lines
#                             (contrib/spdx.sh --add), then clang-format -i
#                             on every C/C++ file the format check covers;
#                             then checks as above
#
# Checks:
#   format    C/C++ files (.c .cc .h .inl) of src/ include/ test/ bench/
#             as .clang-format says (clang-format 14)
#   spelling  codespell over the tracked text of src/ include/ test/ bench/
#             docs/ contrib/ examples/ and the top-level files; words it
#             mistakes for typos (identifiers, API names) are listed in
#             contrib/codespell-words.txt
#   spdx      contrib/spdx.sh --check
#   cites     no comment cites a document outside the repository: in src/
#             include/ test/ bench/ the word "semantics" (except as
#             docs/device-semantics.md), a section sign, "shared/docs",
#             DESIGN.md, ANCHORS.md and STYLE.md; in docs/ contrib/
#             examples/ and README.md the citing forms (rdma-core-semantics,
#             "semantics file", "semantics section N", "semantics N.N", a
#             section sign, an outside path).  Cite
#             docs/device-semantics.md section N, or public rdma-core/UCX
#             documentation by name.
#   length    no file in src/ longer than 1100 lines
#   layout    README.md's Layout section names every file of src/uct/dcx/
#             (in backquotes) and every top-level directory
#   commits   every commit after SUBJECT_BASE (the last one written before
#             the rule) has a subject of at most 72 characters of the form
#             "area: what it does", and a body; a clone without that commit
#             (shallow) says so and checks nothing
#
# Needs clang-format and codespell (contrib/install-deps.sh installs both);
# a missing tool is reported and fails the step (exit 2).
set -uo pipefail

MAX_LINES=1100
SUBJECT_MAX=72
SUBJECT_BASE=4076497
verbose=0
fix=0
for arg in "$@"; do
    case "$arg" in
    -v|--verbose) verbose=1 ;;
    --fix)        fix=1 ;;
    -h|--help)    sed -n '4,38p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *)            echo "lint: unknown argument '$arg' (see --help)" >&2
                  exit 2 ;;
    esac
done

cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)" || exit 2

for tool in clang-format codespell; do
    if ! command -v "$tool" >/dev/null; then
        echo "lint: $tool not found (contrib/install-deps.sh installs it)" >&2
        exit 2
    fi
done

fail=0
violation() {
    echo "$*"
    fail=1
}

format_files() {
    git ls-files -- 'src/*' 'include/*' 'test/*' 'bench/*' |
        grep -E '\.(c|cc|h|inl)$'
}

if [ "$fix" -eq 1 ]; then
    contrib/spdx.sh --add
    mapfile -t files < <(format_files)
    clang-format -i --style=file "${files[@]}" || exit 2
    echo "lint: clang-format -i on ${#files[@]} files"
fi

# format: one clang-format process for all files; --dry-run reports each
# place that would change as "file:line:col: warning: ..."
mapfile -t files < <(format_files)
out=$(clang-format --dry-run --style=file "${files[@]}" 2>&1 >/dev/null)
if [ $? -ne 0 ] && ! grep -q 'clang-format-violations' <<< "$out"; then
    echo "lint: clang-format failed:" >&2
    echo "$out" >&2
    exit 2
fi
re_place='^[^ ]+:[0-9]+:[0-9]+: (warning|error): code should be clang-formatted'
places=$(grep -E "$re_place" <<< "$out" |
         cut -d: -f1-3)
if [ -n "$places" ]; then
    if [ "$verbose" -eq 1 ]; then
        while IFS= read -r p; do
            violation "format: $p: differs from .clang-format"
        done <<< "$places"
    else
        while read -r count f; do
            violation "format: $f: $count place(s) differ from .clang-format" \
                      "(contrib/lint.sh --fix, or -v to list them)"
        done < <(cut -d: -f1 <<< "$places" | uniq -c)
    fi
fi

# spelling
mapfile -t text < <(git ls-files -- 'src/*' 'include/*' 'test/*' 'bench/*' \
                        'docs/*' 'contrib/*' 'examples/*' '.ci/*' \
                        README.md configure.ac Makefile.am 'config/*' |
                    grep -v -E '^contrib/codespell-words\.txt$')
while IFS= read -r line; do
    [ -n "$line" ] && violation "spelling: $line"
done < <(codespell --ignore-words=contrib/codespell-words.txt \
                   "${text[@]}" 2>&1)

# SPDX lines
while IFS= read -r line; do
    [ -n "$line" ] && violation "spdx: $line"
done < <(contrib/spdx.sh --check)

# cites of documents outside the repository
code_pat='semantics|§|shared/docs|DESIGN\.md|ANCHORS\.md|STYLE\.md'
doc_pat='rdma-core-semantics|semantics (file|section|[0-9])|semantics *§'
doc_pat+='|§ *[0-9]'
doc_pat+='|/work/|shared/docs|DESIGN\.md|ANCHORS\.md|STYLE\.md'
cite_scan() {
    local pat=$1
    shift
    git ls-files -z -- "$@" |
        xargs -0 grep -n -I -E "$pat" -- 2>/dev/null |
        while IFS= read -r hit; do
            # the project's own account is the one "semantics" to cite
            rest=$(sed -e 's|docs/device-semantics\.md||g' \
                       -e 's|device-semantics\.md||g' <<< "${hit#*:*:}")
            if grep -q -E "$pat" <<< "$rest"; then
                echo "$hit"
            fi
        done
}
while IFS= read -r hit; do
    violation "cites: ${hit%%:*}:$(cut -d: -f2 <<< "$hit"): cites a" \
              "document outside the repository: $(cut -d: -f3- <<< "$hit" |
                                                  sed 's/^ *//')"
done < <(cite_scan "$code_pat" 'src/*' 'include/*' 'test/*' 'bench/*';
         cite_scan "$doc_pat" 'docs/*' 'examples/*' README.md \
             $(git ls-files 'contrib/*' | grep -v -x contrib/lint.sh))

# file length
while IFS= read -r f; do
    n=$(wc -l < "$f")
    if [ "$n" -gt "$MAX_LINES" ]; then
        violation "length: $f: $n lines (at most $MAX_LINES in src/)"
    fi
done < <(git ls-files -- 'src/*')

# README's layout: every transport file and top-level directory named
layout=$(awk '/^## Layout/ { on = 1; next } /^## / { on = 0 } on' README.md)
while IFS= read -r f; do
    base=${f##*/}
    [ "$base" = Makefile.inc ] && continue
    if ! grep -q -F "\`$base\`" <<< "$layout"; then
        violation "layout: README.md: the Layout section does not describe $f"
    fi
done < <(git ls-files -- 'src/uct/dcx/*')
while IFS= read -r d; do
    if ! grep -q -E "^\\.?$d/|^$d/" <<< "$layout"; then
        violation "layout: README.md: the Layout section does not name $d/"
    fi
done < <(git ls-files | grep / | cut -d/ -f1 | sort -u)

# commit messages: subject "area: what", at most 72 characters, a body
if git cat-file -e "$SUBJECT_BASE^{commit}" 2>/dev/null; then
    while IFS= read -r c; do
        subject=$(git log -1 --format=%s "$c")
        body=$(git log -1 --format=%b "$c" | grep -c -v '^[[:space:]]*$')
        if [ "${#subject}" -gt "$SUBJECT_MAX" ]; then
            violation "commits: ${c:0:12}: subject of ${#subject} characters" \
                      "(at most $SUBJECT_MAX)"
        fi
        if ! grep -q -E '^[][A-Za-z0-9_./+{},* -]+: [^ ]' <<< "$subject"; then
            violation "commits: ${c:0:12}: subject is not 'area: what it does'"
        fi
        if [ "$body" -eq 0 ]; then
            violation "commits: ${c:0:12}: no body saying why"
        fi
    done < <(git rev-list --no-merges "$SUBJECT_BASE..HEAD")
else
    echo "lint: commits: $SUBJECT_BASE not in this clone; subjects not checked"
fi

if [ "$fail" -ne 0 ]; then
    echo "lint: FAILED" >&2
    exit 1
fi
echo "lint: ok"
