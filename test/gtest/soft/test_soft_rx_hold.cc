/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An owner's rx hold (dcx_soft_dev_set_rx_hold): while it says the owner
 * has work rung and not handed to the device, no inbound packet of the
 * port is served, and nothing of it is lost: the packet waits in the ring
 * and is served, in order, once the hold lets go.  Taken off (NULL), the
 * device serves as before.
 */
#include "soft_fixture.h"

#include <vector>

using namespace soft_test;

namespace {

const uint64_t KEY     = 0x51d0;
const unsigned RECVS   = 8;
const unsigned MSGS    = 3;
const double QUIET_SEC = 0.05;

class soft_rx_hold : public soft {
protected:
    void SetUp() override
    {
        soft::SetUp();
        ASSERT_EQ(0, open_sender_target(m_a, m_b, fabric, KEY, 0, 256, m_rbuf,
                                        &m_rmr));
        for (unsigned i = 0; i < RECVS; ++i) {
            dcx_sge_t s;

            s.addr   = (uintptr_t)m_rbuf.data() + i * 64;
            s.length = 64;
            s.lkey   = m_rmr->lkey;
            ASSERT_EQ(0, dcx_srq_post_recv(m_b.srq, 100 + i, &s, 1));
        }
    }

    static int hold(void *arg)
    {
        soft_rx_hold *t = static_cast<soft_rx_hold *>(arg);

        __atomic_add_fetch(&t->m_asked, 1, __ATOMIC_RELAXED);
        return __atomic_load_n(&t->m_held, __ATOMIC_ACQUIRE);
    }

    /* completions of b (receives) within timeout_s */
    int recvs(dcx_wc_t *wc, int n, double timeout_s)
    {
        return m_b.poll(wc, n, timeout_s);
    }

    node m_a, m_b;
    std::vector<uint8_t> m_rbuf = std::vector<uint8_t>(RECVS * 64);
    dcx_mr_t *m_rmr             = nullptr;
    int m_held                  = 1;
    unsigned m_asked            = 0;
};

} // namespace

TEST_F(soft_rx_hold, messages_wait_while_held_then_arrive_in_order)
{
    dcx_wc_t wc[MSGS];

    ASSERT_EQ(0, dcx_soft_dev_set_rx_hold(m_b.dev, hold, this));
    for (unsigned i = 0; i < MSGS; ++i) {
        ASSERT_EQ(0, post_inline_value(m_a, m_a.dci, m_b.dct->qp_num, KEY,
                                       DCX_WR_SEND, 0x700 + i));
    }
    /* the sender's engine sends them; b's polls find the hold set */
    EXPECT_EQ(0, recvs(wc, MSGS, QUIET_SEC));
    EXPECT_GT(__atomic_load_n(&m_asked, __ATOMIC_RELAXED), 0u)
        << "the device never asked the hold";

    __atomic_store_n(&m_held, 0, __ATOMIC_RELEASE);
    ASSERT_EQ((int)MSGS, recvs(wc, MSGS, 10.0));
    for (unsigned i = 0; i < MSGS; ++i) {
        uint64_t v;

        EXPECT_EQ(DCX_WC_SUCCESS, wc[i].status) << i;
        EXPECT_EQ(100u + i, wc[i].wr_id) << i;
        memcpy(&v, m_rbuf.data() + i * 64, sizeof(v));
        EXPECT_EQ(0x700u + i, v) << i;
    }
    /* and the sends complete at the sender */
    ASSERT_EQ((int)MSGS, m_a.poll(wc, MSGS, 10.0));
    for (unsigned i = 0; i < MSGS; ++i) {
        EXPECT_EQ(DCX_WC_SUCCESS, wc[i].status) << i;
    }
}

TEST_F(soft_rx_hold, hold_taken_off)
{
    dcx_wc_t wc;

    ASSERT_EQ(0, dcx_soft_dev_set_rx_hold(m_b.dev, hold, this));
    ASSERT_EQ(0, dcx_soft_dev_set_rx_hold(m_b.dev, NULL, NULL));
    ASSERT_EQ(0, post_inline_value(m_a, m_a.dci, m_b.dct->qp_num, KEY,
                                   DCX_WR_SEND, 0x42));
    ASSERT_EQ(1, recvs(&wc, 1, 10.0));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(0u, __atomic_load_n(&m_asked, __ATOMIC_RELAXED));
}
