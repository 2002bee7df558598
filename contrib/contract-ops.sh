#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The device contract check: every operation of the device layer's
# contract (a function pointer of a struct in src/common/dcx_dev.h: the
# device's ops, a CQ's, QP's or SRQ's, a backend's) is set by every
# backend, so that no operation exists for one backend alone.  A backend
# is a folder of src/ with a file that registers it (DCX_BACKEND_REGISTER);
# it sets an operation where one of its files assigns it, in a designated
# initializer (".name = fn") or a store ("x->super.name = fn").  A backend
# may still leave an operation NULL for some of its objects (a CQ that
# cannot be looked at) as the contract allows; what the check asks is that
# each backend implements it somewhere.
#
#   contrib/contract-ops.sh [-v]
#
#   -v    a line per operation with the backends that set it
#
# The operations that one backend alone sets today, each with its reason,
# are listed in contrib/contract-ops.allow: listed, they are reported, not
# failed; an operation listed that every backend sets fails the check, so
# that the list only shrinks.  Exit status 0 when the check passes.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
contract="$top/src/common/dcx_dev.h"
allow="$top/contrib/contract-ops.allow"
verbose=0
[ "${1:-}" = "-v" ] && verbose=1

[ -r "$contract" ] || { echo "contract-ops: $contract missing"; exit 1; }

# the backends: folders with a registration (the macro's definition in
# src/common is not one)
mapfile -t backends < <(grep -rl --include='*.c' 'DCX_BACKEND_REGISTER(' \
                            "$top/src" | grep -v '/src/common/' |
                            xargs -r -n1 dirname | sort -u)
[ "${#backends[@]}" -ge 2 ] || {
    echo "contract-ops: fewer than two backends found under src/"
    exit 1
}

# the operations: "(*name)(" members of the contract's structs (a
# parameter's value check, dcx_param_t, describes a knob: no operation)
mapfile -t ops < <(awk '
    /^(typedef )?struct [a-z_0-9]+ \{/ { in_struct = ($0 !~ /struct dcx_param /); next }
    /^\}/                               { in_struct = 0; next }
    in_struct && match($0, /\(\*[a-z_0-9]+\)\(/) {
        print substr($0, RSTART + 2, RLENGTH - 4)
    }' "$contract" | sort -u)
[ "${#ops[@]}" -gt 0 ] || { echo "contract-ops: no operation found"; exit 1; }

# allowed: "name  reason" lines (comments and blank lines skipped)
declare -A allowed=()
if [ -r "$allow" ]; then
    while read -r name reason; do
        case "$name" in '' | '#'*) continue ;; esac
        allowed[$name]=$reason
    done < "$allow"
fi

fail=0
alone=0
for op in "${ops[@]}"; do
    setters=()
    for b in "${backends[@]}"; do
        if grep -rqE --include='*.c' --include='*.h' "\.${op}[[:space:]]*=[^=]" "$b"; then
            setters+=("${b#"$top"/}")
        fi
    done
    [ $verbose = 1 ] && echo "$op: ${setters[*]:-none}"
    if [ "${#setters[@]}" -eq "${#backends[@]}" ]; then
        if [ -n "${allowed[$op]+x}" ]; then
            echo "FAIL $op: every backend sets it now; take it out of contrib/contract-ops.allow"
            fail=1
        fi
        continue
    fi
    if [ -n "${allowed[$op]+x}" ]; then
        echo "allowed $op: only ${setters[*]:-no backend} (${allowed[$op]})"
        alone=$((alone + 1))
        continue
    fi
    echo "FAIL $op: set by ${setters[*]:-no backend} of ${#backends[@]} backends"
    fail=1
done
echo "contract-ops: ${#ops[@]} operations, ${#backends[@]} backends, $alone allowed with one backend$([ $fail = 1 ] && echo ', FAILED')"
exit $fail
