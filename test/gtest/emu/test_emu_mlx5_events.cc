/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx's mlx5 backend's wake-up events (src/mlx5/mlx5_channel.c) through
 * the device layer, on the emulated ConnectX: the device offers
 * DCX_CAP_CQ_EVENT, a CQ on a channel armed fires once for the next
 * completion, at once when armed over completions not yet polled, and at
 * once when armed while the backend itself still holds reports for it (a
 * failed DCI's WRs, reported as flushed from its ring after the hardware's
 * own flush completions were polled and dropped).  Linked with
 * libuct_dcx.so and the emulated libraries (gtest_emu_uct; the environment
 * is set in test_emu_uct_strided.cc).
 */
#include <gtest/gtest.h>

extern "C" {
#include "dcx_dev.h"
}

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>

namespace {

const uint64_t KEY = 0x7e57c0de;
/* The bound of a wait: a safety net, not a timing assertion */
const int WAIT_MS  = 20000;

bool fd_readable(int fd, int timeout_ms)
{
    struct pollfd pfd = {fd, POLLIN, 0};

    return (poll(&pfd, 1, timeout_ms) == 1) && (pfd.revents & POLLIN);
}

double now_sec()
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

} /* namespace */

class emu_mlx5_events : public ::testing::Test {
protected:
    void SetUp() override
    {
        dcx_dev_config_t *config;
        dcx_dev_info_t *list;
        unsigned count, i;
        int ret = ENODEV;

        ASSERT_EQ(0, dcx_dev_config_create(NULL, &config));
        ASSERT_EQ(0, dcx_dev_config_set_num(config, "MLX5", 1));
        ASSERT_EQ(0, dcx_dev_config_set_num(config, "SOFT_DEVICES", 0));
        ASSERT_EQ(0, dcx_dev_list(config, &list, &count));
        dcx_dev_config_destroy(config);
        for (i = 0; i < count; ++i) {
            if (!strcmp(list[i].name, "mlx5_0")) {
                ret = dcx_dev_open(&list[i], &m_dev);
                break;
            }
        }
        dcx_dev_list_free(list);
        ASSERT_EQ(0, ret) << "mlx5_0 of the emulation";
        ASSERT_TRUE(dcx_dev_caps(m_dev)->flags & DCX_CAP_CQ_EVENT);

        ASSERT_EQ(0, dcx_pd_alloc(m_dev, &m_pd));
        ASSERT_EQ(0,
                  dcx_mr_reg(m_pd, m_buf, sizeof(m_buf),
                             DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE,
                             &m_mr));
        ASSERT_EQ(0, dcx_comp_channel_create(m_dev, &m_ch));
        ASSERT_EQ(0, dcx_cq_create_ch(m_dev, 256, m_ch, &m_tx_cq));
        ASSERT_EQ(0, dcx_cq_create_ch(m_dev, 256, m_ch, &m_rx_cq));

        dcx_srq_attr_t sattr;
        memset(&sattr, 0, sizeof(sattr));
        sattr.type    = DCX_SRQ_BASIC;
        sattr.max_wr  = 64;
        sattr.max_sge = 1;
        sattr.cq      = m_rx_cq;
        ASSERT_EQ(0, dcx_srq_create(m_pd, &sattr, &m_srq));
        for (uint64_t i = 0; i < 16; ++i) {
            dcx_sge_t s = {(uint64_t)(uintptr_t)(m_buf + 4096 + 64 * i), 64,
                           m_mr->lkey};
            ASSERT_EQ(0, dcx_srq_post_recv(m_srq, i, &s, 1));
        }

        dcx_qp_attr_t qattr;
        memset(&qattr, 0, sizeof(qattr));
        qattr.type          = DCX_QPT_DCT;
        qattr.recv_cq       = m_rx_cq;
        qattr.srq           = m_srq;
        qattr.dc_key        = KEY;
        qattr.access        = DCX_ACCESS_REMOTE_WRITE;
        qattr.min_rnr_timer = 1;
        ASSERT_EQ(0, dcx_qp_create(m_pd, &qattr, &m_dct));

        memset(&qattr, 0, sizeof(qattr));
        qattr.type         = DCX_QPT_DCI;
        qattr.send_cq      = m_tx_cq;
        qattr.max_send_wr  = 16;
        qattr.max_send_sge = 1;
        qattr.timeout      = 8; /* ~1 ms, one retry: the failure test */
        qattr.retry_cnt    = 1;
        qattr.rnr_retry    = 7;
        ASSERT_EQ(0, dcx_qp_create(m_pd, &qattr, &m_dci));

        uint8_t addr[DCX_DEV_ADDR_MAX];
        size_t len = sizeof(addr);
        ASSERT_EQ(0, dcx_dev_port_addr(m_dev, addr, &len));
        ASSERT_EQ(0, dcx_ah_create(m_pd, addr, len, &m_ah));
    }

    void TearDown() override
    {
        if (m_ah != nullptr) {
            EXPECT_EQ(0, dcx_ah_destroy(m_ah));
        }
        for (dcx_qp_t *qp : {m_dci, m_dct}) {
            if (qp != nullptr) {
                EXPECT_EQ(0, dcx_qp_destroy(qp));
            }
        }
        if (m_srq != nullptr) {
            EXPECT_EQ(0, dcx_srq_destroy(m_srq));
        }
        for (dcx_cq_t *cq : {m_tx_cq, m_rx_cq}) {
            if (cq != nullptr) {
                EXPECT_EQ(0, dcx_cq_destroy(cq));
            }
        }
        if (m_ch != nullptr) {
            EXPECT_EQ(0, dcx_comp_channel_destroy(m_ch));
        }
        if (m_mr != nullptr) {
            EXPECT_EQ(0, dcx_mr_dereg(m_mr));
        }
        if (m_pd != nullptr) {
            EXPECT_EQ(0, dcx_pd_free(m_pd));
        }
        if (m_dev != nullptr) {
            dcx_dev_close(m_dev);
        }
    }

    int send(uint64_t wr_id, uint64_t key = KEY)
    {
        dcx_sge_t s = {(uint64_t)(uintptr_t)m_buf, 8, m_mr->lkey};
        dcx_send_wr_t wr;

        memset(&wr, 0, sizeof(wr));
        wr.wr_id       = wr_id;
        wr.opcode      = DCX_WR_SEND;
        wr.flags       = DCX_SEND_SIGNALED;
        wr.num_sge     = 1;
        wr.sg_list     = &s;
        wr.dest.ah     = m_ah;
        wr.dest.dctn   = m_dct->qp_num;
        wr.dest.dc_key = key;
        return dcx_qp_post_send(m_dci, &wr);
    }

    /* Polls cq, max completions a call, until one comes (bounded) */
    bool poll_one(dcx_cq_t *cq, dcx_wc_t *wc, int max = 1)
    {
        double deadline = now_sec() + WAIT_MS / 1000.0;

        while (dcx_cq_poll(cq, max, wc) == 0) {
            if (now_sec() > deadline) {
                return false;
            }
        }
        return true;
    }

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

    bool no_event()
    {
        dcx_cq_t *cq;

        return dcx_comp_channel_get_event(m_ch, &cq) == EAGAIN;
    }

    dcx_dev_t *m_dev         = nullptr;
    dcx_pd_t *m_pd           = nullptr;
    dcx_mr_t *m_mr           = nullptr;
    dcx_comp_channel_t *m_ch = nullptr;
    dcx_cq_t *m_tx_cq        = nullptr;
    dcx_cq_t *m_rx_cq        = nullptr;
    dcx_srq_t *m_srq         = nullptr;
    dcx_qp_t *m_dct          = nullptr;
    dcx_qp_t *m_dci          = nullptr;
    dcx_ah_t *m_ah           = nullptr;
    char m_buf[8192];
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

    for (uint64_t i = 0; i < 4; ++i) {
        ASSERT_EQ(0, send(10 + i, KEY + 1)); /* key mismatch: dropped */
    }
    ASSERT_TRUE(poll_one(m_tx_cq, wc));
    EXPECT_EQ(DCX_WC_RETRY_EXC_ERR, wc[0].status);
    EXPECT_EQ(10u, wc[0].wr_id);
    /* the next report; this poll also drops the hardware's flush CQEs */
    ASSERT_TRUE(poll_one(m_tx_cq, wc));
    EXPECT_EQ(DCX_WC_WR_FLUSH_ERR, wc[0].status);
    EXPECT_EQ(11u, wc[0].wr_id);

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
