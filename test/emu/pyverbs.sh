#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# rdma-core 44's own test suite (Debian's python3-pyverbs ships it in
# /usr/share/doc/rdma-core/tests) on the emulated ConnectX, mlx5_0, in the
# private /dev of "dcx-run --mlx5-emu --uverbs-ns".  Every test must pass
# or skip (pyverbs skips a test for a capability the device does not
# report), but for those listed below, which the emulation does not model
# yet, each with its reason; one of those passing is said too, so that
# the list only shrinks.  Prints the tallies, one PASS/FAIL line, and exits
# 1 on a test that fails unlisted, 77 when the suite is not installed.
#
#   test/emu/pyverbs.sh      (DCX_RUN: the dcx-run wrapper to use)

set -u

top=$(cd "$(dirname "$0")/../.." && pwd)
run=${DCX_RUN:-$top/build/contrib/dcx-run}
suite=/usr/share/doc/rdma-core/tests
py=/usr/bin/python3

# tests the emulation does not model yet: "name: reason" (none now)
known=()

if [ ! -f "$suite/run_tests.py" ] || ! "$py" -c 'import pyverbs' 2>/dev/null; then
    echo "SKIP: rdma-core's test suite (python3-pyverbs) not installed"
    exit 77
fi
if ! unshare --mount true 2>/dev/null && ! unshare --mount --map-root-user true 2>/dev/null; then
    echo "SKIP: no mount namespace for this user (--uverbs-ns)"
    exit 77
fi

work=$(mktemp -d)
out=$work/out
trap 'rm -rf "$work"' EXIT
cp -r "$suite" "$work/tests"
gunzip -f "$work"/tests/*.gz
cat > "$work/run" <<EOF
#!/bin/sh
cd "$work" && exec timeout 600 "$py" tests/run_tests.py --dev mlx5_0 -v
EOF
chmod +x "$work/run"

DCX_EMU_FABRIC=pyverbs-$$ "$run" --mlx5-emu --uverbs-ns "$work/run" > "$out" 2>&1
st=$?

# the tests that passed: unittest -v names a test at the start of a line
# and says "ok" at the end of that line, or alone on a later one when the
# test has a docstring or something was logged meanwhile
passed=$work/passed
awk '/^test[a-zA-Z0-9_]* \(/ { cur = $1 }
     /(^| \.\.\. )ok$/ && cur != "" { print cur; cur = "" }' "$out" > "$passed"
ok=$(wc -l < "$passed")
echo "pyverbs: $(grep -E '^Ran [0-9]+ tests' "$out"); $ok passed;" \
    "$(grep -E '^(OK|FAILED)( |$)' "$out" | tail -1)"
grep -oE "skipped '.*'" "$out" | sort | uniq -c | sort -rn | sed 's/^/   /'

fails=0
while read -r name; do
    reason=
    for k in "${known[@]}"; do
        [ "${k%%: *}" = "$name" ] && reason=${k#*: }
    done
    if [ -n "$reason" ]; then
        echo "known: $name ($reason)"
    else
        echo "FAIL: $name"
        fails=$((fails + 1))
    fi
done < <(grep -E '^(ERROR|FAIL): ' "$out" | sed -E 's/^(ERROR|FAIL): ([a-zA-Z0-9_]+) .*/\2/')
for k in "${known[@]}"; do
    if grep -qx "${k%%: *}" "$passed"; then
        echo "now passes, take it off the list: ${k%%: *}"
    fi
done
if ! grep -qE '^Ran [0-9]+ tests' "$out"; then
    echo "FAIL: the suite did not run (exit status $st)"
    tail -20 "$out"
    exit 1
fi
if [ $fails -eq 0 ]; then
    echo "PASS: rdma-core's test suite: every test passes or skips, but the known"
else
    grep -A20 -E '^(ERROR|FAIL): ' "$out" | head -80
fi
[ $fails -eq 0 ]
