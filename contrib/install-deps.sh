#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs the Debian 12 packages dcx needs to build, test and run its demo.
# Idempotent: installs nothing when everything is present.  Needs root (or
# sudo) only when something is missing.
set -euo pipefail

pkgs=(
    build-essential autoconf automake libtool pkg-config
    libucx-dev ucx-utils                 # UCX 1.13.1: libs, ucx_info, ucx_perftest
    openmpi-bin libopenmpi-dev           # Open MPI 4.1.4 with pml/spml/osc ucx
    libibverbs-dev rdma-core             # rdma-core 44 headers for the mlx5 backend
    ibverbs-utils perftest python3-pyverbs # rdma-core's tools, perftest and test suite, run on the emulation
    googletest libgtest-dev              # test suites
    dpkg-dev xz-utils                    # apt-get source for the UCX headers
    procps psmisc                        # pgrep/pkill/killall used by test scripts
    clang-format codespell               # contrib/lint.sh: formatting, spelling
)

missing=()
for p in "${pkgs[@]}"; do
    [[ "$p" == \#* ]] && continue
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all packages present"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
