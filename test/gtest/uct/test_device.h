/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device the dcx tests of a binary run on, chosen by the test command
 * in one place: the memory domain named by DCX_TEST_DEVICE, "soft0" when
 * unset.  Another name (e.g. "mlx5_0": dcx's mlx5 backend on the emulated
 * ConnectX) needs the environment that "dcx-run --mlx5-emu" gives (the
 * emulated libraries in LD_LIBRARY_PATH, UCX_DCX_SOFT_DEVICES=0, the
 * emulated devices' fabric); test/gtest/emu/test_uct_emu.sh and
 * test_ucp_emu.sh run the UCT and UCP suites so.
 */
#ifndef DCX_GTEST_TEST_DEVICE_H_
#define DCX_GTEST_TEST_DEVICE_H_

#include <string>

namespace dcx_test {

const std::string &test_md_name();
/* test_md_name() is a soft device (its fault injection, counters and
 * UCX_DCX_SOFT_* settings apply) */
bool test_on_soft();

} /* namespace dcx_test */

#endif
