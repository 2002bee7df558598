#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# dcx's UCP suite (gtest_ucp) a second time, over dcx's mlx5 backend on the
# emulated ConnectX: "dcx-run --mlx5-emu" gives the environment (the
# emulated libibverbs/libmlx5 first in LD_LIBRARY_PATH, soft devices off,
# a fabric of this run's own) and DCX_TEST_DEVICE=mlx5_0 makes the fixture
# put UCP on that device (test/gtest/uct/ucp_fixture.h, use_test_device).
# Tests needing what the backend lacks skip
# themselves by capability (test_device_query); the wake-up test runs.  The tests
# that only make sense on the soft device are left out here, in SOFT_ONLY,
# each with its reason: this is the one place that chooses them.
#
# Run by "make check" from the top build directory.

set -u

run=./contrib/dcx-run
gtest=test/gtest/uct/gtest_ucp

[ -x "$run" ] || { echo "FAIL: $run not built (run from the build directory)"; exit 1; }
[ -x "$gtest" ] || { echo "FAIL: $gtest not built"; exit 1; }

# gtest name pattern, then why it runs on the soft device only
SOFT_ONLY='
*ucp_dcx.other_fabric_falls_back_to_tcp/*  two soft fabrics in one process (the emulated devices have one fabric a process)
*ucp_dcx_tm*.*/mixed_dev  a peer whose device has no tag matching: the soft device knob UCX_DCX_SOFT_TM=n
*ucp_dcx_tm_seg64k.eager_up_to_64k/on  UCP sends 64 KiB by rendezvous over the emulated port (its threshold from the interface performance, not checked)
'

filter=$(echo "$SOFT_ONLY" | awk 'NF { printf "%s%s", sep, $1; sep = ":" }')
fabric=ucpemu-$$
trap 'rm -f "/dev/shm/dcx-emu.$(id -u).$fabric"' EXIT

"$run" --mlx5-emu --fabric "$fabric" \
    env DCX_TEST_DEVICE=mlx5_0 "$gtest" --gtest_filter="-$filter" "$@"
