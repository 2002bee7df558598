#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# The load-time check of libuct_dcx.so: with the UCX it was built for, the
# dcx component registers and lists its MD; with a UCX whose base class
# sizes or version differ (faked by preloaded shims), it prints one error
# line, stays unregistered and the program runs on.
#
# Run by "make check" from the top build directory.

set -u

lib=./.libs/libuct_dcx.so
prog=./test/gtest/uct/dcx_list_components
shim_dir=./test/gtest/uct
fails=0

export UCX_DCX_SOFT_DEVICES=1
export UCX_DCX_MLX5=n
export UCX_DCX_SOFT_FABRIC="loadcheck-$$"

for f in "$lib" "$prog" "$shim_dir/dcx_shim_class_size.so" \
         "$shim_dir/dcx_shim_version.so"; do
    [ -e "$f" ] || { echo "FAIL: $f not built (run from the build directory)"; exit 1; }
done

check() {   # check NAME EXPECTED-STATUS OUTPUT-FILE
    if [ "$2" = 0 ]; then
        echo "PASS: $1"
    else
        echo "FAIL: $1"
        sed 's/^/    | /' "$3"
        fails=$((fails + 1))
    fi
}

# An ASan build of the module needs the ASan runtime loaded first.
asan=$(ldd "$lib" 2>/dev/null | awk '/libasan/ { print $3; exit }')
pre=${asan:+$asan:}

out=$(mktemp)
trap 'rm -f "$out"' EXIT

# The right UCX: registered, soft0 listed, nothing on stderr.
LD_PRELOAD=$pre$lib $prog > "$out" 2>&1
rc=$?
ok=1
[ $rc -eq 0 ] && grep -qx "component dcx" "$out" && grep -qx "md soft0" "$out" &&
    ! grep -q "dcx error" "$out" && ok=0
check "registers with the UCX it was built for" $ok "$out"

# Another base class size: not registered, one error naming the class.
LD_PRELOAD=$pre$shim_dir/dcx_shim_class_size.so:$lib $prog > "$out" 2>&1
rc=$?
ok=1
[ $rc -eq 0 ] && ! grep -qx "component dcx" "$out" &&
    [ "$(grep -c "dcx error" "$out")" = 1 ] &&
    grep -q "uct_base_iface_t is [0-9]* bytes here but 1234 in UCX" "$out" && ok=0
check "refuses a UCX with another uct_base_iface_t size" $ok "$out"

# Another UCX version: not registered, one error naming both versions.
LD_PRELOAD=$pre$shim_dir/dcx_shim_version.so:$lib $prog > "$out" 2>&1
rc=$?
ok=1
[ $rc -eq 0 ] && ! grep -qx "component dcx" "$out" &&
    [ "$(grep -c "dcx error" "$out")" = 1 ] &&
    grep -q "running UCX is 1.14.0" "$out" && ok=0
check "refuses another UCX version" $ok "$out"

[ $fails -eq 0 ]
