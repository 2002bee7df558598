#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# dcx's UCT suite (gtest_uct) a second time, over dcx's mlx5 backend on the
# emulated ConnectX: "dcx-run --mlx5-emu" gives the environment (the
# emulated libibverbs/libmlx5 first in LD_LIBRARY_PATH, soft devices off)
# and DCX_TEST_DEVICE=mlx5_0 makes the fixture open that device
# (test/gtest/uct/uct_fixture.h).  Tests needing what the backend lacks
# (CPU atomics, memory allocation) skip themselves by capability; the wake-up tests and the strided ones (keys configured by
# UMR) run.  The tests of the soft
# device's own internals are left out here, in SOFT_ONLY, each with its
# reason: this is the one place that chooses them.
#
# Run by "make check" from the top build directory.

set -u

run=./contrib/dcx-run
gtest=test/gtest/uct/gtest_uct

[ -x "$run" ] || { echo "FAIL: $run not built (run from the build directory)"; exit 1; }
[ -x "$gtest" ] || { echo "FAIL: $gtest not built"; exit 1; }

# gtest name pattern, then why it runs on the soft device only
SOFT_ONLY='
uct_dcx_hardening.reachability_bad_flow  makes soft port addresses (another fabric, host, user)
uct_dcx_hardening.remapped_memory_not_written_bad_flow  the emulation does not pin pages: it writes through the new mapping (docs/mlx5-emulation.md)
uct_dcx_hardening.access_to_unmapped_memory_bad_flow  registrations keep their pages on a ConnectX and on the emulation (SOFT_PINNED): the access succeeds there
*uct_dcx_errors.injected_error_completion/*  soft fault injection (error completion)
*uct_dcx_errors.handler_destroys_ep_and_declines/*  soft fault injection (error completion)
*uct_dcx_errors.dropped_and_delayed_packets/*  soft fault injection (drops, delays)
*uct_dcx_remote_flood.slow_receiver/*  soft device counters (RNR)
*uct_dcx_flood.one_dci_tiny_rx_queue/*  soft device counters (RNR)
*uct_dcx_rx_batch.stream_grows_receive_queue_before_rnr/*  soft device counters (RNR)
*uct_dcx_flush.small_puts_late_on_the_wire_then_flush/*  soft fault injection (delays)
*uct_dcx_dci_keep.failure_on_kept_dci/*  soft fault injection (error completion)
*uct_dcx_fc.lost_grant_resent/*  soft fault injection (drops)
*uct_dcx_stats.failures_counted_file_stays/*  soft fault injection (error completion)
*uct_dcx_errors.streams_whole_dci_failure_bad_flow/*  soft fault injection (error completion)
*uct_dcx_strided.own_queue_configure_failure_bad_flow/*  soft fault injection (error completion of a configure)
*uct_dcx_tag_remote_fail.peer_killed_with_rndv_in_flight_bad_flow/*  soft fault injection (delays)
*uct_dcx_tag_remote_fail.rndv_in_flight_to_idle_peer_killed_bad_flow/*  soft fault injection (delays)
'

filter=$(echo "$SOFT_ONLY" | awk 'NF { printf "%s%s", sep, $1; sep = ":" }')
fabric=uctemu-$$
trap 'rm -f "/dev/shm/dcx-emu.$(id -u).$fabric"' EXIT

# DCX_EMU_UMR_LATE=1: the emulated ConnectX runs a UMR after its post, not
# within it, so that an operation that used a strided key before its UMR
# completed would move the wrong bytes, as it could on hardware
"$run" --mlx5-emu --fabric "$fabric" \
    env DCX_TEST_DEVICE=mlx5_0 DCX_EMU_UMR_LATE=1 "$gtest" \
    --gtest_filter="-$filter" "$@" || exit

# The backend writes WQEs and reads CQEs in queue memory by default; the
# operations, contract and error suites run a second time with it posting
# and polling through libmlx5 (UCX_DCX_MLX5_RAW=n), unless tests were chosen
[ $# -eq 0 ] || exit 0
echo "== again through libmlx5's ibv_wr_* and ibv_start_poll (UCX_DCX_MLX5_RAW=n)"
"$run" --mlx5-emu --fabric "$fabric" \
    env DCX_TEST_DEVICE=mlx5_0 UCX_DCX_MLX5_RAW=n "$gtest" \
    --gtest_filter="*uct_dcx_ops.*:*uct_dcx_contract*:*uct_dcx_errors.*:*uct_dcx_flush*-$filter" ||
    exit

# With tag matching on, an interface's DCT is the one the backend makes
# through DEVX on its XRQ: the operations suite again, its atomics (32-bit
# ones are masked on a ConnectX) landing there
echo "== again with tag matching on (UCX_DCX_TM_ENABLE=y: the DCTs of DEVX)"
"$run" --mlx5-emu --fabric "$fabric" \
    env DCX_TEST_DEVICE=mlx5_0 UCX_DCX_TM_ENABLE=y "$gtest" \
    --gtest_filter="*uct_dcx_ops.*-$filter"
[ $? -eq 0 ] || exit 1

# With receives in place (UCX_DCX_MLX5_RECV_IN_PLACE=y: 128-byte CQEs, a
# SEND of up to 64 bytes completed in its CQE and lent to the AM handler
# without a descriptor): the operations, contract and AM suites again
echo "== again with receives in place (UCX_DCX_MLX5_RECV_IN_PLACE=y)"
"$run" --mlx5-emu --fabric "$fabric" \
    env DCX_TEST_DEVICE=mlx5_0 UCX_DCX_MLX5_RECV_IN_PLACE=y "$gtest" \
    --gtest_filter="*uct_dcx_ops.*:*uct_dcx_contract*:*uct_dcx_am*:*uct_dcx_mem*-$filter"
