/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx's mlx5 backend through the device layer on the emulated ConnectX
 * (gtest_emu_uct): mlx5_0 opened with soft devices off, a PD, an MR over
 * m_buf open to remote writes and atomics, a DCT on an SRQ with receives
 * posted, a DCI and an AH to the device's own port; CQs on a completion
 * channel.
 */
#ifndef DCX_TEST_EMU_MLX5_FIXTURE_H_
#define DCX_TEST_EMU_MLX5_FIXTURE_H_

#include <gtest/gtest.h>

extern "C" {
#include "dcx_dev.h"
}

#include <errno.h>
#include <string.h>
#include <time.h>

namespace emu_mlx5 {

const uint64_t KEY = 0x7e57c0de;
/* The bound of a wait: a safety net, not a timing assertion */
const int WAIT_MS  = 20000;

inline double now_sec()
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

} /* namespace emu_mlx5 */

class emu_mlx5_fixture : public ::testing::Test {
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
        ASSERT_NO_FATAL_FAILURE(configure(config));
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
                             DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE |
                                 DCX_ACCESS_REMOTE_ATOMIC,
                             &m_mr));
        ASSERT_EQ(0, dcx_comp_channel_create(m_dev, &m_ch));
        ASSERT_EQ(0, dcx_cq_create_ch(m_dev, 256, m_ch, &m_tx_cq));
        ASSERT_EQ(0, dcx_cq_create_ch(m_dev, 256, m_ch, &m_rx_cq));

        ASSERT_NO_FATAL_FAILURE(srq_create(m_rx_cq, 64, 1, 0, &m_srq));
        for (uint64_t i = 0; i < 16; ++i) {
            dcx_sge_t s = {(uint64_t)(uintptr_t)(m_buf + 4096 + 64 * i), 64,
                           m_mr->lkey};
            ASSERT_EQ(0, dcx_srq_post_recv(m_srq, i, &s, 1));
        }
        ASSERT_NO_FATAL_FAILURE(dct_create(m_rx_cq, m_srq, &m_dct,
                                           DCX_ACCESS_REMOTE_WRITE |
                                               DCX_ACCESS_REMOTE_ATOMIC));

        dcx_qp_attr_t qattr;
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
        if (m_dci != nullptr) {
            EXPECT_EQ(0, dcx_qp_destroy(m_dci));
        }
        recv_side_destroy(m_rx_cq, m_srq, m_dct);
        if (m_tx_cq != nullptr) {
            EXPECT_EQ(0, dcx_cq_destroy(m_tx_cq));
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

    /* The backend's knobs a test sets beyond the fixture's */
    virtual void configure(dcx_dev_config_t *config) { (void)config; }

    /* A signalled SEND of the first len bytes of m_buf to dct (nullptr:
     * the fixture's DCT) with DC key 'key' */
    int send(uint64_t wr_id, uint64_t key = emu_mlx5::KEY, uint32_t len = 8,
             dcx_qp_t *dct = nullptr)
    {
        dcx_sge_t s = {(uint64_t)(uintptr_t)m_buf, len, m_mr->lkey};
        dcx_send_wr_t wr;

        memset(&wr, 0, sizeof(wr));
        wr.wr_id       = wr_id;
        wr.opcode      = DCX_WR_SEND;
        wr.flags       = DCX_SEND_SIGNALED;
        wr.num_sge     = 1;
        wr.sg_list     = &s;
        wr.dest.ah     = m_ah;
        wr.dest.dctn   = ((dct != nullptr) ? dct : m_dct)->qp_num;
        wr.dest.dc_key = key;
        return dcx_qp_post_send(m_dci, &wr);
    }

    /* An SRQ of max_wr receives of max_sge buffers completing on cq, its
     * creation flags 'flags' */
    void srq_create(dcx_cq_t *cq, uint32_t max_wr, uint32_t max_sge,
                    uint32_t flags, dcx_srq_t **srq)
    {
        dcx_srq_attr_t sattr;

        memset(&sattr, 0, sizeof(sattr));
        sattr.type    = DCX_SRQ_BASIC;
        sattr.max_wr  = max_wr;
        sattr.max_sge = max_sge;
        sattr.cq      = cq;
        sattr.flags   = flags;
        ASSERT_EQ(0, dcx_srq_create(m_pd, &sattr, srq));
    }

    /* A DCT of the fixture's DC key on srq, its receives completing on cq,
     * open to the remote access flags 'access' */
    void dct_create(dcx_cq_t *cq, dcx_srq_t *srq, dcx_qp_t **dct,
                    uint32_t access = 0)
    {
        dcx_qp_attr_t qattr;

        memset(&qattr, 0, sizeof(qattr));
        qattr.type          = DCX_QPT_DCT;
        qattr.recv_cq       = cq;
        qattr.srq           = srq;
        qattr.dc_key        = emu_mlx5::KEY;
        qattr.access        = access;
        qattr.min_rnr_timer = 1;
        ASSERT_EQ(0, dcx_qp_create(m_pd, &qattr, dct));
    }

    /* Destroys a test's own receive side (nullptr: none of that object) */
    static void recv_side_destroy(dcx_cq_t *cq, dcx_srq_t *srq, dcx_qp_t *dct)
    {
        if (dct != nullptr) {
            EXPECT_EQ(0, dcx_qp_destroy(dct));
        }
        if (srq != nullptr) {
            EXPECT_EQ(0, dcx_srq_destroy(srq));
        }
        if (cq != nullptr) {
            EXPECT_EQ(0, dcx_cq_destroy(cq));
        }
    }

    /* Polls cq, max completions a call, until one comes (bounded) */
    bool poll_one(dcx_cq_t *cq, dcx_wc_t *wc, int max = 1)
    {
        double deadline = emu_mlx5::now_sec() + emu_mlx5::WAIT_MS / 1000.0;

        while (dcx_cq_poll(cq, max, wc) == 0) {
            if (emu_mlx5::now_sec() > deadline) {
                return false;
            }
        }
        return true;
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

#endif
