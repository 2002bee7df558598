# SPDX-License-Identifier: BSD-3-Clause
# Sourced by contrib/test.sh and test/ucx-versions.sh.
#
# step NAME COMMAND...: runs one step with its output in $logdir/NAME.log
# (blanks and slashes of NAME made '_'), prints one line, "ok (N s)" or
# "FAILED (N s)" followed by the last 40 lines of the log, and counts it in
# passed, failed and failures.  The caller sets logdir, passed=0, failed=0,
# failures=(), and optionally step_width, the width of the name column
# (default 44).  A failed step also shows the kernel's reports of CPUs
# or threads it starved while the step ran (workqueue lockups, RCU stalls,
# soft lockups, hung tasks), where the kernel log can be read: a virtual
# machine that starves its own threads for a minute fails a step that
# waits on a thread, and the report tells such a failure from a defect.

# The kernel's starvation reports, one a line (nothing where dmesg cannot
# be read)
step_kernel_stalls() {
    dmesg 2>/dev/null | grep -E 'workqueue lockup|rcu.*(stall|starved)|soft lockup|blocked for more than'
}

step() {
    local name=$1; shift
    local log="$logdir/${name//[ \/]/_}.log"
    local t0=$SECONDS
    local stalls0
    stalls0=$(step_kernel_stalls | wc -l)
    printf "== %-${step_width:-44}s " "$name"
    if "$@" >"$log" 2>&1; then
        passed=$((passed + 1))
        echo "ok ($((SECONDS - t0)) s)"
    else
        failed=$((failed + 1))
        failures+=("$name")
        echo "FAILED ($((SECONDS - t0)) s) — last lines of $log:"
        tail -n 40 "$log" | sed 's/^/   | /'
        step_kernel_stalls | tail -n "+$((stalls0 + 1))" | head -n 10 |
            sed 's/^/   | kernel, during the step: /'
    fi
}
