/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests of the emulated ConnectX (src/emu): this binary is linked against
 * the emulated libibverbs.so.1 and libmlx5.so.1 of the build tree, never
 * against the system's (emu_load checks it), and drives them only through
 * the rdma-core API, as an application does.
 *
 * The emulation logs through its own copy of dcx's logger, to stderr;
 * log_capture counts the lines it writes while a bad call runs.
 */
#ifndef DCX_TEST_EMU_FIXTURE_H_
#define DCX_TEST_EMU_FIXTURE_H_

#include <gtest/gtest.h>

#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>

#include <string>
#include <vector>

/* The fabric every test process uses, "gtest-emu-<pid>" of the process
 * that started the suite (children inherit it), so that two runs of the
 * suite at once never meet; and the device count.  Both are set before
 * the first ibv_get_device_list (emu_fixture.cc). */
const char *emu_test_fabric();
#define EMU_TEST_DEVICES 2

/* Collects what is written to stderr between construction and lines(). */
class log_capture {
public:
    log_capture();
    ~log_capture();
    /* The lines written so far that the emulation wrote (its prefix). */
    std::vector<std::string> lines();
    /* Number of those lines; printed by gtest on a failed expectation. */
    size_t count() { return lines().size(); }

private:
    void restore();
    int m_saved;
    int m_fd;
    bool m_restored;
    std::string m_text;
};

/* Milliseconds of CLOCK_MONOTONIC, for the tests' bounded waits */
int64_t emu_now_ms();

/* One context on mlx5_0 with a PD, opened per test. */
class emu_test : public ::testing::Test {
protected:
    void SetUp() override;
    void TearDown() override;

    struct ibv_device **m_list = nullptr;
    int m_num                  = 0;
    struct ibv_context *m_ctx  = nullptr;
    struct ibv_pd *m_pd        = nullptr;
};

#endif
