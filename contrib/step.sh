# SPDX-License-Identifier: BSD-3-Clause
# Sourced by contrib/test.sh and test/ucx-versions.sh.
#
# step NAME COMMAND...: runs one step with its output in $logdir/NAME.log
# (blanks and slashes of NAME made '_'), prints one line, "ok (N s)" or
# "FAILED (N s)" followed by the last 40 lines of the log, and counts it in
# passed, failed and failures.  The caller sets logdir, passed=0, failed=0,
# failures=(), and optionally step_width, the width of the name column
# (default 44).

step() {
    local name=$1; shift
    local log="$logdir/${name//[ \/]/_}.log"
    local t0=$SECONDS
    printf "== %-${step_width:-44}s " "$name"
    if "$@" >"$log" 2>&1; then
        passed=$((passed + 1))
        echo "ok ($((SECONDS - t0)) s)"
    else
        failed=$((failed + 1))
        failures+=("$name")
        echo "FAILED ($((SECONDS - t0)) s) — last lines of $log:"
        tail -n 40 "$log" | sed 's/^/   | /'
    fi
}
