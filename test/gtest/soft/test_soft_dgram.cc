/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Datagram DCIs (dcx_soft_qp_set_datagram): a SEND goes out as one packet
 * and completes at the sender at once; the target's DCT takes it into a
 * posted receive with the source number the DCI was given, or loses it
 * (no receive, another key, no such DCT), and a lost datagram never moves
 * the DCI to ERR.  A datagram longer than the receive completes it with
 * a local length error.  What a datagram DCI refuses: other operations,
 * more than the MTU, and the mode on a DCT or on a DCI with work.
 */
#include "soft_fixture.h"

#include <vector>

using namespace soft_test;

namespace {

const uint64_t KEY    = 0xd6a3;
const uint32_t SRC    = 0x4321;
const unsigned NRECVS = 8;

class soft_dgram : public soft {
protected:
    void open(bool post_recvs = true)
    {
        ASSERT_EQ(0, open_sender_target(m_a, m_b, fabric, KEY, 0, 64, m_buf,
                                        &m_mr));
        ASSERT_EQ(0, dcx_soft_qp_set_datagram(m_a.dci, SRC, m_a.dci->qp_num));
        if (post_recvs) {
            recv(NRECVS);
        }
        m_src.assign(32768, 0x5a);
        ASSERT_EQ(0, m_a.reg(m_src.data(), m_src.size(), DCX_ACCESS_LOCAL_WRITE,
                             &m_src_mr));
    }

    void recv(unsigned n, uint32_t slot = 256)
    {
        std::vector<dcx_recv_t> l = recv_list(m_buf, m_mr, m_next, n, slot);
        unsigned posted           = 0;

        ASSERT_EQ(0,
                  dcx_srq_post_recv_list(m_b.srq, l.data(), n, slot, &posted));
        ASSERT_EQ(n, posted);
        m_next += n;
    }

    int send(uint64_t wr_id, uint32_t len, uint64_t key = KEY,
             dcx_wr_opcode_t op = DCX_WR_SEND, uint32_t dctn = 0)
    {
        dcx_send_wr_t wr;
        dcx_sge_t sge;

        sge.addr   = (uintptr_t)m_src.data();
        sge.length = len;
        sge.lkey   = m_src_mr->lkey;
        memset(&wr, 0, sizeof(wr));
        wr.wr_id       = wr_id;
        wr.opcode      = op;
        wr.flags       = DCX_SEND_SIGNALED;
        wr.num_sge     = 1;
        wr.sg_list     = &sge;
        wr.imm         = 0xabc;
        wr.dest.ah     = m_a.ah;
        wr.dest.dctn   = dctn ? dctn : m_b.dct->qp_num;
        wr.dest.dc_key = key;
        return dcx_qp_post_send(m_a.dci, &wr);
    }

    node m_a, m_b;
    std::vector<uint8_t> m_buf = std::vector<uint8_t>(NRECVS * 2 * 4096);
    std::vector<uint8_t> m_src;
    dcx_mr_t *m_mr = nullptr, *m_src_mr = nullptr;
    uint64_t m_next = 0;
};

} // namespace

TEST_F(soft_dgram, delivered_with_the_source_number)
{
    dcx_wc_t wc;

    open();
    ASSERT_EQ(0, dcx_soft_dev_set_lid(m_a.dev, 77));
    ASSERT_EQ(0, send(7, 100, KEY, DCX_WR_SEND_IMM));
    ASSERT_EQ(1, m_a.poll(&wc, 1));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(7u, wc.wr_id);
    EXPECT_EQ(m_a.dci->qp_num, wc.qp_num);
    ASSERT_EQ(1, m_b.poll(&wc, 1));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(0u, wc.wr_id);
    EXPECT_EQ(100u, wc.byte_len);
    EXPECT_EQ(SRC, wc.src_qp);
    EXPECT_EQ(77u, wc.slid); /* the source port's LID */
    EXPECT_EQ(m_b.dct->qp_num, wc.qp_num);
    EXPECT_TRUE(wc.flags & DCX_WC_FLAG_WITH_IMM);
    EXPECT_EQ(0xabcu, wc.imm);
    EXPECT_EQ(0x5a, m_buf[99]);
}

/* no receive, another key, no such DCT: lost, the sender's DCI in RTS */
TEST_F(soft_dgram, lost_without_error_bad_flow)
{
    dcx_wc_t wc, two[2];

    open(false);
    ASSERT_EQ(0, send(1, 8)); /* no receive */
    ASSERT_EQ(1, m_a.poll(&wc, 1));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(0, m_b.poll(&wc, 1, 0.1));
    recv(1);
    ASSERT_EQ(0, send(2, 8, KEY + 1));                 /* another key */
    ASSERT_EQ(0, send(3, 8, KEY, DCX_WR_SEND, 0xfff)); /* no such DCT */
    ASSERT_EQ(2, m_a.poll(two, 2));
    EXPECT_EQ(DCX_WC_SUCCESS, two[0].status);
    EXPECT_EQ(DCX_WC_SUCCESS, two[1].status);
    EXPECT_EQ(0, m_b.poll(&wc, 1, 0.1));
    EXPECT_EQ(DCX_QPS_RTS, m_a.dci->state);
    ASSERT_EQ(0, send(4, 8)); /* and the receive is still there */
    ASSERT_EQ(1, m_b.poll(&wc, 1));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(SRC, wc.src_qp);
}

TEST_F(soft_dgram, longer_than_the_receive_bad_flow)
{
    dcx_wc_t wc;

    open(false);
    recv(1, 64);
    ASSERT_EQ(0, send(1, 200));
    ASSERT_EQ(1, m_b.poll(&wc, 1));
    EXPECT_EQ(DCX_WC_LOC_LEN_ERR, wc.status);
    ASSERT_EQ(1, m_a.poll(&wc, 1));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
}

TEST_F(soft_dgram, refused_bad_flow)
{
    open();
    {
        log_counter log;

        EXPECT_EQ(EINVAL, send(1, 8, KEY, DCX_WR_RDMA_WRITE));
        EXPECT_EQ(1, log.lines());
    }
    {
        log_counter log;

        EXPECT_EQ(EINVAL, send(2, 20000)); /* above the MTU (16 KiB) */
        EXPECT_EQ(1, log.lines());
    }
    {
        log_counter log;

        EXPECT_EQ(EINVAL, dcx_soft_qp_set_datagram(m_b.dct, 1, 1));
        EXPECT_EQ(1, log.lines());
    }
}
