# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the bench scripts (bash): where the repository, the dcx module
# and the build tree are.
#
#   bench_top                      the repository (set on sourcing)
#   bench_find_lib NAME [LIB]      prints LIB, or else the first built
#                                  libuct_dcx.so that is not a sanitizer build
#                                  (build/, build*/, then the repository);
#                                  fails with "NAME: ... pass -l" when none
#   bench_find_build NAME [DIR]    prints DIR, or else the first build*/ whose
#                                  contrib/dcx-run exists and which is not a
#                                  sanitizer build; fails with a message
#   bench_pin NAME ON              sets the arrays srv_pin and cli_pin: with
#                                  ON = 1 the taskset prefixes that pin a
#                                  pair's server to CPU 0 and its client to
#                                  CPU 1 (fails with a message without
#                                  taskset or two CPUs), empty otherwise
#   bench_cg_split FILE RULES      splits a callgrind output FILE (no name
#                                  compression assumed or needed) by whose
#                                  code ran; RULES has one "SHARE OBJ_RE
#                                  FILE_RE" line per share, the first whose
#                                  object and source file regexes match a
#                                  function wins.  A function's own cost
#                                  goes to its share; a call from a
#                                  function with a share into one with none
#                                  (the C library, the loader) adds the
#                                  call's inclusive cost to the caller's.
#                                  Prints "total=T SHARE=N ... calls:A:B=C"
#                                  (C: calls from share A into share B)
#   bench_kv KEY LINE              the value of KEY=value in LINE (0 if absent)
#   bench_pair NAME WRAPPER [ENV...] -- PERFTEST ARGS
#                                  one ucx_perftest server and client on
#                                  loopback, on a fresh port (bench_port,
#                                  moved on per try; port trouble tries
#                                  another), each under env ENV... and, with
#                                  WRAPPER (a dcx-run) not empty, on a fresh
#                                  soft fabric of its own; logs in
#                                  $logdir/NAME.server and .client; uses the
#                                  caller's logdir, tmo (seconds per run),
#                                  verbose and bench_pin's arrays.  0 if
#                                  both succeeded and the client printed a
#                                  Final: line
#   bench_fail_note NAME           a short reason from the logs of pair NAME
#   bench_note_ref TEXT            sets ref="[k]", TEXT being note k of the
#                                  caller's array notes (added once)
#   bench_dev_env EMU WRAPPER LIB FABRIC
#                                  the device's variables, one NAME=value a
#                                  line: with EMU = 1 the emulated ConnectX
#                                  on an emulated FABRIC (WRAPPER
#                                  --mlx5-emu --print-env for module LIB,
#                                  its LD_PRELOAD left to the caller), else
#                                  one soft device on FABRIC

bench_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

bench_find_lib() {
    local name=$1 lib=${2:-} cand

    if [ -z "$lib" ]; then
        for cand in "$bench_top"/build/.libs/libuct_dcx.so \
                    "$bench_top"/build*/.libs/libuct_dcx.so \
                    "$bench_top"/.libs/libuct_dcx.so; do
            if [ -f "$cand" ] && ! ldd "$cand" 2>/dev/null | grep -q libasan; then
                lib=$cand
                break
            fi
        done
    fi
    if [ -z "$lib" ] || [ ! -f "$lib" ]; then
        echo "$name: libuct_dcx.so not found; build first or pass -l" >&2
        return 2
    fi
    echo "$lib"
}

# bench_emu_sysfs_leave: removes the emulated ConnectX's sysfs view
# (/dev/shm/dcx-emu.<uid>.sys) when no process holds it.  The emulation
# removes it as its last user exits; soft_cpu ends with _exit, which skips
# that, so a script that ran it last does it here, under the view's lock as
# the emulation does (a process using it holds the lock shared).
bench_emu_sysfs_leave() {
    local root
    root=/dev/shm/dcx-emu.$(id -u).sys

    [ -e "$root.lock" ] || return 0
    flock -x -n "$root.lock" rm -rf "$root" "$root.lock" 2>/dev/null || true
}

bench_find_build() {
    local name=$1 build=${2:-} d

    if [ -z "$build" ]; then
        for d in "$bench_top"/build*; do
            if [ -x "$d/contrib/dcx-run" ] &&
               ! grep -qs -- '--enable-asan' "$d/config.log"; then
                build=$d
                break
            fi
        done
    fi
    if [ ! -x "$build/contrib/dcx-run" ]; then
        echo "$name: no dcx-run in '$build'" >&2
        return 2
    fi
    echo "$build"
}

bench_pin() {
    srv_pin=()
    cli_pin=()
    [ "$2" = 1 ] || return 0
    command -v taskset >/dev/null ||
        { echo "$1: -P needs taskset (util-linux)" >&2; return 2; }
    [ "$(nproc)" -ge 2 ] ||
        { echo "$1: -P needs two CPUs, this machine has $(nproc)" >&2; return 2; }
    srv_pin=(taskset -c 0)
    cli_pin=(taskset -c 1)
}

bench_port=$((20000 + ($$ * 13) % 30000))
bench_run_idx=0

bench_pair() {
    local name=$1 wrap=$2
    local envs=() pre srv_pid srv_rc=1 cli_rc=1 try i trouble
    local cli=$logdir/$name.client srv=$logdir/$name.server

    shift 2
    while [ "$1" != -- ]; do
        envs+=("$1")
        shift
    done
    shift
    for try in 1 2 3; do
        bench_run_idx=$((bench_run_idx + 1))
        bench_port=$((bench_port + 1))
        [ $bench_port -ge 60000 ] && bench_port=20001
        pre=(env ${envs[@]+"${envs[@]}"})
        [ -n "$wrap" ] && pre+=("$wrap" --soft --fabric "bp$$-$bench_run_idx")
        : >"$cli"
        [ "$verbose" = 1 ] && echo "  # $name: ${pre[*]} ucx_perftest $* -p $bench_port" >&2
        "${pre[@]}" timeout "$tmo" ${srv_pin[@]+"${srv_pin[@]}"} \
            ucx_perftest -p $bench_port >"$srv" 2>&1 &
        srv_pid=$!
        # the client retries while the server is not listening yet
        for i in $(seq 1 40); do
            sleep 0.1
            kill -0 $srv_pid 2>/dev/null || break
            "${pre[@]}" timeout "$tmo" ${cli_pin[@]+"${cli_pin[@]}"} \
                ucx_perftest 127.0.0.1 -p $bench_port "$@" >"$cli" 2>&1
            cli_rc=$?
            grep -qi "connection refused" "$cli" || break
        done
        trouble=0
        if grep -qi "connection refused" "$cli"; then
            trouble=1
        elif ! kill -0 $srv_pid 2>/dev/null && grep -qi "address already in use" "$srv"; then
            trouble=1
        fi
        if [ $trouble = 1 ] && [ $try -lt 3 ]; then
            kill $srv_pid 2>/dev/null
            wait $srv_pid 2>/dev/null
            continue    # port trouble: try another port
        fi
        wait $srv_pid
        srv_rc=$?
        break
    done
    [ "$verbose" = 1 ] && grep -h '^Final:' "$cli" >&2
    [ $cli_rc = 0 ] && [ $srv_rc = 0 ] && grep -q '^Final:' "$cli"
}

bench_fail_note() {
    local f line
    for f in "$logdir/$1.client" "$logdir/$1.server"; do
        line=$(grep -v '^[+|]' "$f" 2>/dev/null | grep -vE 'UCX +(DIAG|INFO)' |
               grep -iE 'error|fail|unsupported|timed out|invalid|abort' | head -1 |
               sed -E 's/^\[[0-9.]+\] +\[[^]]*\] +//' | cut -c1-90)
        [ -n "$line" ] && { echo "$line"; return; }
    done
    echo "no Final: line (timeout ${tmo}s or crash; see $logdir/$1.*)"
}

bench_note_ref() {
    local i
    for i in "${!notes[@]}"; do
        [ "${notes[$i]}" = "$1" ] && { ref="[$((i + 1))]"; return; }
    done
    notes+=("$1")
    ref="[${#notes[@]}]"
}

bench_cg_split() {
    awk -v rules="$2" '
    BEGIN {
        nr = split(rules, line, "\n")
        for (i = 1; i <= nr; i++) {
            if (split(line[i], w, " ") == 3) {
                n++; rs[n] = w[1]; ro[n] = w[2]; rf[n] = w[3]; seen[w[1]] = 1
            }
        }
    }
    function nm(s, tab,    id) {
        if (match(s, /^\([0-9]+\)/)) {
            id = substr(s, 2, RLENGTH - 2)
            s  = substr(s, RLENGTH + 1)
            sub(/^ /, "", s)
            if (s != "") { tab[id] = s } else { s = tab[id] }
        }
        return s
    }
    function share(o, f,    i) {
        for (i = 1; i <= n; i++) {
            if (o ~ ro[i] && f ~ rf[i]) { return rs[i] }
        }
        return ""
    }
    /^ob=/  { ob = nm(substr($0, 4), obs); cob = ""; next }
    /^fl=/  { fl = nm(substr($0, 4), fls); next }
    /^f[ie]=/ { nm(substr($0, 4), fls); next }
    /^fn=/  { nm(substr($0, 4), fns); cur = share(ob, fl); cob = ""; cfl = ""; next }
    /^cob=/ { cob = nm(substr($0, 5), obs); next }
    /^cf[il]=/ { cfl = nm(substr($0, 5), fls); next }
    /^cfn=/ { nm(substr($0, 5), fns); next }
    /^calls=/ {
        split(substr($1, 7), cnt, " ")
        getline
        callee = share(cob != "" ? cob : ob, cfl != "" ? cfl : fl)
        if (cur != "" && callee == "") { c[cur] += $NF }
        if (cur != "" && callee != "" && callee != cur) {
            x[cur ":" callee] += cnt[1]
        }
        cob = ""; cfl = ""
        next
    }
    /^[0-9+*-]/ { if (cur != "") { c[cur] += $NF }; next }
    /^totals:/  { t = $2 }
    /^summary:/ { if (t == "") { t = $2 } }
    END {
        printf "total=%d", t
        for (s in seen) { printf " %s=%d", s, c[s] }
        for (k in x) { printf " calls:%s=%d", k, x[k] }
        printf "\n"
    }' "$1"
}

bench_kv() {
    local kv
    for kv in $2; do
        if [ "${kv%%=*}" = "$1" ]; then
            echo "${kv#*=}"
            return
        fi
    done
    echo 0
}

bench_dev_env() {
    if [ "$1" = 1 ]; then
        DCX_LIB=$3 "$2" --mlx5-emu --fabric "$4" --print-env |
            grep -v '^LD_PRELOAD='
    else
        echo UCX_DCX_SOFT_DEVICES=1
        echo "UCX_DCX_SOFT_FABRIC=$4"
    fi
}
