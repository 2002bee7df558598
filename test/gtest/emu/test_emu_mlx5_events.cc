/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx's mlx5 backend's wake-up events (src/mlx5/mlx5_channel.c) through
 * the device layer, on the emulated ConnectX: the device offers
 * DCX_CAP_CQ_EVENT, a CQ on a channel armed fires once for the next
 * completion, at once when armed over completions not yet polled, and at
 * once when armed while the backend itself still holds reports for it (a
 * failed DCI's WRs, reported as flushed from its ring after the hardware's
 * own flush completions were polled and dropped); a CQ read in memory can
 * be looked at without taking its completions (dcx_cq_ready), and without
 * a call (dcx_cq_idle).  Linked with
 * libuct_dcx.so and the emulated libraries (gtest_emu_uct; the environment
 * is set in test_emu_uct_strided.cc).
 */
#include "emu_mlx5_fixture.h"

#include <poll.h>

namespace {

using emu_mlx5::KEY;
using emu_mlx5::now_sec;
using emu_mlx5::WAIT_MS;

bool fd_readable(int fd, int timeout_ms)
{
    struct pollfd pfd = {fd, POLLIN, 0};

    return (poll(&pfd, 1, timeout_ms) == 1) && (pfd.revents & POLLIN);
}

} /* namespace */

class emu_mlx5_events : public emu_mlx5_fixture {
protected:
    /* The next event within the bound, or nullptr */
    dcx_cq_t *wait_event()
    {
        dcx_cq_t *cq;

        for (;;) {
            if (dcx_comp_channel_get_event(m_ch, &cq) == 0) {
                return cq;
            }
            if (!fd_readable(m_ch->fd, WAIT_MS)) {
                return nullptr;
            }
        }
    }

    /* Four WRs of the DCI fail (a wrong DC key): the error and the first
     * flush report polled, one at a time; the second poll also drops the
     * hardware's flush CQEs, so the two reports left wait in the backend's
     * own record, CQ memory empty */
    void fail_dci()
    {
        dcx_wc_t wc;

        for (uint64_t i = 0; i < 4; ++i) {
            ASSERT_EQ(0, send(10 + i, KEY + 1));
        }
        ASSERT_TRUE(poll_one(m_tx_cq, &wc));
        EXPECT_EQ(DCX_WC_RETRY_EXC_ERR, wc.status);
        EXPECT_EQ(10u, wc.wr_id);
        ASSERT_TRUE(poll_one(m_tx_cq, &wc));
        EXPECT_EQ(DCX_WC_WR_FLUSH_ERR, wc.status);
        EXPECT_EQ(11u, wc.wr_id);
    }

    bool no_event()
    {
        dcx_cq_t *cq;

        return dcx_comp_channel_get_event(m_ch, &cq) == EAGAIN;
    }
};

TEST_F(emu_mlx5_events, arm_once)
{
    dcx_wc_t wc;

    EXPECT_GE(m_ch->fd, 0);
    EXPECT_FALSE(fd_readable(m_ch->fd, 0));
    EXPECT_TRUE(no_event());

    ASSERT_EQ(0, dcx_cq_req_notify(m_rx_cq));
    ASSERT_EQ(0, send(1));
    EXPECT_EQ(m_rx_cq, wait_event());
    EXPECT_TRUE(no_event());
    ASSERT_TRUE(poll_one(m_rx_cq, &wc));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));

    /* used up: the next completion makes none */
    ASSERT_EQ(0, send(2));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    ASSERT_TRUE(poll_one(m_rx_cq, &wc));
    EXPECT_TRUE(no_event());
    EXPECT_FALSE(fd_readable(m_ch->fd, 0));
}

/* Armed over completions not polled yet: fires without another one (the
 * device raises the event as soon as it sees the arm; the wait is a safety
 * net, not a timing assertion) */
TEST_F(emu_mlx5_events, arm_over_unpolled)
{
    dcx_cq_t *cq;
    dcx_wc_t wc;

    ASSERT_EQ(0, send(1));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc)); /* acknowledged: received too */
    ASSERT_EQ(0, dcx_cq_req_notify(m_rx_cq));
    ASSERT_TRUE(fd_readable(m_ch->fd, 5000)) << "no event";
    ASSERT_EQ(0, dcx_comp_channel_get_event(m_ch, &cq));
    EXPECT_EQ(m_rx_cq, cq);
    ASSERT_TRUE(poll_one(m_rx_cq, &wc));
}

/* A DCI fails with WRs outstanding: the backend reports them flushed from
 * its own record and drops the hardware's flush completions.  Armed while
 * such reports still wait (the hardware CQ empty), the CQ fires at once */
TEST_F(emu_mlx5_events, arm_over_flush_reports_bad_flow)
{
    dcx_cq_t *cq;
    dcx_wc_t wc[8];
    int n, total;

    ASSERT_NO_FATAL_FAILURE(fail_dci());

    ASSERT_EQ(0, dcx_cq_req_notify(m_tx_cq));
    ASSERT_EQ(0, dcx_comp_channel_get_event(m_ch, &cq)) << "not at once";
    EXPECT_EQ(m_tx_cq, cq);
    EXPECT_TRUE(no_event());
    EXPECT_FALSE(fd_readable(m_ch->fd, 0));
    for (total = 0; total < 2; total += n) {
        n = dcx_cq_poll(m_tx_cq, 8, wc);
        ASSERT_GE(n, 0);
        for (int i = 0; i < n; ++i) {
            EXPECT_EQ(DCX_WC_WR_FLUSH_ERR, wc[i].status);
            EXPECT_EQ(12u + total + i, wc[i].wr_id);
        }
        ASSERT_TRUE((n > 0) || (total == 2));
    }
    EXPECT_EQ(0, dcx_cq_poll(m_tx_cq, 8, wc));
}

TEST_F(emu_mlx5_events, rules_bad_flow)
{
    dcx_cq_t *plain;

    /* a CQ without a channel cannot be armed */
    ASSERT_EQ(0, dcx_cq_create(m_dev, 16, &plain));
    EXPECT_EQ(EINVAL, dcx_cq_req_notify(plain));
    EXPECT_EQ(0, dcx_cq_destroy(plain));
    /* a channel with CQs stays */
    EXPECT_EQ(EBUSY, dcx_comp_channel_destroy(m_ch));
}

/* dcx_cq_ready over CQ memory: a look that takes nothing.  Empty, both CQs
 * say no; once the device has written the receive's CQE the look says yes,
 * and again (the first took nothing); the poll takes the completion and the
 * look says no again */
TEST_F(emu_mlx5_events, ready_looks_without_taking)
{
    double deadline;
    dcx_wc_t wc;

    ASSERT_TRUE(dcx_cq_can_look(m_rx_cq));
    ASSERT_TRUE(dcx_cq_can_look(m_tx_cq));
    EXPECT_EQ(0, dcx_cq_ready(m_rx_cq));
    EXPECT_EQ(0, dcx_cq_ready(m_tx_cq));

    ASSERT_EQ(0, send(1));
    deadline = now_sec() + WAIT_MS / 1000.0;
    while (!dcx_cq_ready(m_rx_cq)) {
        ASSERT_LT(now_sec(), deadline) << "the receive's CQE never came";
    }
    EXPECT_NE(0, dcx_cq_ready(m_rx_cq)) << "the look took the completion";
    ASSERT_TRUE(poll_one(m_rx_cq, &wc));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_RECV, wc.opcode);
    EXPECT_EQ(0, dcx_cq_ready(m_rx_cq));

    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(0, dcx_cq_ready(m_tx_cq));
}

/* A DCI that failed with WRs outstanding: the backend's own flush reports
 * wait in its record, not in CQ memory (emptied by the polls that dropped
 * the hardware's flush CQEs), and both looks see them too: the idle look
 * must not call the CQ idle until they are polled */
TEST_F(emu_mlx5_events, looks_see_flush_reports_bad_flow)
{
    dcx_wc_t wc[8];
    int n, total;

    ASSERT_NO_FATAL_FAILURE(fail_dci());

    EXPECT_NE(0, dcx_cq_ready(m_tx_cq)) << "two reports wait";
    EXPECT_EQ(0, dcx_cq_idle(m_tx_cq)) << "two reports wait";
    for (total = 0; total < 2; total += n) {
        n = dcx_cq_poll(m_tx_cq, 8, wc);
        ASSERT_GT(n, 0);
    }
    EXPECT_EQ(0, dcx_cq_ready(m_tx_cq));
    EXPECT_NE(0, dcx_cq_idle(m_tx_cq));
    EXPECT_EQ(0, dcx_cq_poll(m_tx_cq, 8, wc));
}

/* dcx_cq_idle: the look without a call, over the same CQ memory.  Both
 * CQs are idle while empty; the receive's CQE makes the receive CQ busy
 * until polled, the send's the send CQ; a look takes nothing.  A CQ no
 * queue has used yet is idle (nothing can reach it). */
TEST_F(emu_mlx5_events, idle_look_follows_completions)
{
    double deadline;
    dcx_cq_t *fresh;
    dcx_wc_t wc;

    ASSERT_NE(nullptr, m_rx_cq->look);
    ASSERT_NE(nullptr, m_tx_cq->look);
    EXPECT_NE(0, dcx_cq_idle(m_rx_cq));
    EXPECT_NE(0, dcx_cq_idle(m_tx_cq));

    ASSERT_EQ(0, send(1));
    deadline = now_sec() + WAIT_MS / 1000.0;
    while (dcx_cq_idle(m_rx_cq) || dcx_cq_idle(m_tx_cq)) {
        ASSERT_LT(now_sec(), deadline) << "a CQE never came";
    }
    EXPECT_EQ(0, dcx_cq_idle(m_rx_cq)) << "the look took the completion";
    ASSERT_TRUE(poll_one(m_rx_cq, &wc));
    EXPECT_EQ(DCX_WC_RECV, wc.opcode);
    EXPECT_NE(0, dcx_cq_idle(m_rx_cq));
    EXPECT_EQ(0, dcx_cq_idle(m_tx_cq));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_NE(0, dcx_cq_idle(m_tx_cq));

    ASSERT_EQ(0, dcx_cq_create(m_dev, 16, &fresh));
    ASSERT_NE(nullptr, fresh->look);
    EXPECT_NE(0, dcx_cq_idle(fresh));
    EXPECT_EQ(0, dcx_cq_poll(fresh, 1, &wc));
    EXPECT_EQ(0, dcx_cq_destroy(fresh));
}

/* The look of a CQ past a whole lap: the owner bit's value changes with
 * each pass over the queue, and the look follows it */
TEST_F(emu_mlx5_events, idle_look_over_laps)
{
    unsigned lap, laps = 2 * m_tx_cq->cqe + 3;
    double deadline;
    dcx_wc_t wc;

    for (lap = 0; lap < laps; ++lap) {
        ASSERT_EQ(0, send(100 + lap));
        deadline = now_sec() + WAIT_MS / 1000.0;
        while (dcx_cq_idle(m_tx_cq)) {
            ASSERT_LT(now_sec(), deadline) << "send " << lap;
        }
        ASSERT_TRUE(poll_one(m_tx_cq, &wc));
        ASSERT_EQ(100u + lap, wc.wr_id);
        ASSERT_NE(0, dcx_cq_idle(m_tx_cq)) << "send " << lap;
        /* the receive's buffer posted again (the fixture's layout) */
        ASSERT_TRUE(poll_one(m_rx_cq, &wc));
        dcx_sge_t s = {(uint64_t)(uintptr_t)(m_buf + 4096 + 64 * wc.wr_id), 64,
                       m_mr->lkey};
        ASSERT_EQ(0, dcx_srq_post_recv(m_srq, wc.wr_id, &s, 1));
    }
}

/* With raw queues off libmlx5 polls the CQs: the backend has no word to
 * look at, and says so */
class emu_mlx5_events_verbs : public emu_mlx5_fixture {
protected:
    void configure(dcx_dev_config_t *config) override
    {
        ASSERT_EQ(0, dcx_dev_config_set_num(config, "MLX5_RAW", 0));
    }
};

TEST_F(emu_mlx5_events_verbs, no_idle_look)
{
    EXPECT_EQ(nullptr, m_rx_cq->look);
    EXPECT_EQ(nullptr, m_tx_cq->look);
}
