/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * QP numbers from a base the owner sets (dcx_soft_dev_set_qpn_base): the
 * device's QPs are numbered from it, every path that turns a number into
 * a QP (packets, the compact form with its ack table, initiator-side
 * WRITEs) works with it at both ends, and a number below the base or past
 * the device's last names no DCT: the request is dropped and counted.
 * The base is refused once the device has made a QP, and where its
 * numbers would not fit 24 bits.
 */
#include "soft_fixture.h"

#include <vector>

using namespace soft_test;

namespace {

const uint64_t KEY    = 0x9b17;
const uint32_t BASE_A = 0x10000;
const uint32_t BASE_B = 0x20300;

class soft_qpn : public soft {
protected:
    void open()
    {
        dcx_soft_limits_t l = default_limits();
        uint8_t addr[DCX_DEV_ADDR_MAX];
        size_t len = sizeof(addr);

        l.retry_cnt = 1; /* a request nobody answers fails in 200 ms */
        l.direct    = 1;
        ASSERT_EQ(0, m_a.open(fabric.c_str(), &l));
        ASSERT_EQ(0, m_b.open(fabric.c_str(), &l));
        ASSERT_EQ(0, dcx_soft_dev_set_qpn_base(m_a.dev, BASE_A));
        ASSERT_EQ(0, dcx_soft_dev_set_qpn_base(m_b.dev, BASE_B));
        ASSERT_EQ(0, m_a.make_dci());
        ASSERT_EQ(0, m_b.make_target(KEY, DCX_ACCESS_REMOTE_WRITE));
        ASSERT_EQ(0, m_b.reg(m_buf.data(), m_buf.size(),
                             DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE,
                             &m_mr));
        ASSERT_EQ(0, dcx_dev_port_addr(m_b.dev, addr, &len));
        ASSERT_EQ(0, m_a.connect(addr, len));
        std::vector<dcx_recv_t> r = recv_list(m_buf, m_mr, 0, 8, 256);
        unsigned posted           = 0;
        ASSERT_EQ(0,
                  dcx_srq_post_recv_list(m_b.srq, r.data(), 8, 256, &posted));
        ASSERT_EQ(8u, posted);
    }

    /* an RDMA WRITE of 64 bytes to offset 4096 of the buffer, on dci */
    int write(dcx_qp_t *dci, uint32_t dctn, uint64_t wr_id)
    {
        dcx_send_wr_t wr;
        dcx_sge_t sge;

        sge.addr   = (uintptr_t)m_src.data();
        sge.length = 64;
        sge.lkey   = m_src_mr->lkey;
        memset(&wr, 0, sizeof(wr));
        wr.wr_id       = wr_id;
        wr.opcode      = DCX_WR_RDMA_WRITE;
        wr.flags       = DCX_SEND_SIGNALED;
        wr.num_sge     = 1;
        wr.sg_list     = &sge;
        wr.dest.ah     = m_a.ah;
        wr.dest.dctn   = dctn;
        wr.dest.dc_key = KEY;
        wr.rkey        = m_mr->rkey;
        wr.remote_addr = (uintptr_t)m_buf.data() + 4096;
        return dcx_qp_post_send(dci, &wr);
    }

    node m_a, m_b;
    std::vector<uint8_t> m_buf = std::vector<uint8_t>(16384);
    std::vector<uint8_t> m_src = std::vector<uint8_t>(64, 0x3c);
    dcx_mr_t *m_mr = nullptr, *m_src_mr = nullptr;
};

} // namespace

TEST_F(soft_qpn, numbers_start_at_the_base)
{
    dcx_soft_stats_t sa, sb;
    dcx_wc_t wc;

    open();
    EXPECT_EQ(BASE_A, m_a.dci->qp_num); /* each device's first QP */
    EXPECT_EQ(BASE_B, m_b.dct->qp_num);
    ASSERT_EQ(0, m_a.reg(m_src.data(), m_src.size(), DCX_ACCESS_LOCAL_WRITE,
                         &m_src_mr));

    /* a small inline SEND: the compact form, acknowledged in the ack table
     * at the requester's number minus its base */
    ASSERT_EQ(0, post_inline_value(m_a, m_a.dci, m_b.dct->qp_num, KEY,
                                   DCX_WR_SEND, 42));
    ASSERT_EQ(1, m_b.poll(&wc, 1));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(m_b.dct->qp_num, wc.qp_num);
    ASSERT_EQ(1, m_a.poll(&wc, 1));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(42u, wc.wr_id);
    EXPECT_EQ(m_a.dci->qp_num, wc.qp_num);

    /* an RDMA WRITE: executed by the initiator, which finds the target's
     * DCT entry by the number alone */
    ASSERT_EQ(0, write(m_a.dci, m_b.dct->qp_num, 7));
    ASSERT_EQ(1, m_a.poll(&wc, 1));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(0x3c, m_buf[4096 + 63]);

    sa = dev_stats(m_a);
    sb = dev_stats(m_b);
    EXPECT_EQ(1u, sa.direct_writes);
    EXPECT_EQ(1u, sb.acks_in_table);
    EXPECT_EQ(0u, sb.bad_dctn_drops);
}

TEST_F(soft_qpn, numbers_outside_the_range_bad_flow)
{
    /* below the base, past the device's QPs, the largest number */
    const uint32_t nums[] = {BASE_B - 1, BASE_B + 0x10000, DCX_SOFT_QPN_MAX};
    dcx_qp_attr_t qattr;
    dcx_qp_t *dgram = nullptr;
    dcx_wc_t wc;
    unsigned i;

    open();
    ASSERT_EQ(0, m_a.reg(m_src.data(), m_src.size(), DCX_ACCESS_LOCAL_WRITE,
                         &m_src_mr));
    memset(&qattr, 0, sizeof(qattr));
    qattr.type         = DCX_QPT_DCI;
    qattr.send_cq      = m_a.cq;
    qattr.max_send_wr  = 16;
    qattr.max_send_sge = 1;
    qattr.max_inline   = 64;
    ASSERT_EQ(0, dcx_qp_create(m_a.pd, &qattr, &dgram));
    EXPECT_EQ(BASE_A + 1, dgram->qp_num);
    ASSERT_EQ(0, dcx_soft_qp_set_datagram(dgram, dgram->qp_num, dgram->qp_num));

    /* datagrams: each dropped at the target and counted there */
    for (i = 0; i < 3; ++i) {
        ASSERT_EQ(0, post_inline_value(m_a, dgram, nums[i], KEY, DCX_WR_SEND,
                                       100 + i));
        ASSERT_EQ(1, m_a.poll(&wc, 1));
        EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    }
    EXPECT_EQ(0, m_b.poll(&wc, 1, 0.2));
    EXPECT_EQ(3u, dev_stats(m_b).bad_dctn_drops);

    /* a reliable WRITE below the base: no direct copy, dropped, and the
     * requester's retries run out */
    ASSERT_EQ(0, write(m_a.dci, BASE_B - 1, 9));
    ASSERT_EQ(1, m_a.poll(&wc, 1));
    EXPECT_EQ(DCX_WC_RETRY_EXC_ERR, wc.status);
    EXPECT_EQ(0u, dev_stats(m_a).direct_writes);
    EXPECT_LT(3u, dev_stats(m_b).bad_dctn_drops);

    /* the DCT is still there for its own number */
    ASSERT_EQ(0, post_inline_value(m_a, dgram, m_b.dct->qp_num, KEY,
                                   DCX_WR_SEND, 5));
    ASSERT_EQ(1, m_b.poll(&wc, 1));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(dgram->qp_num, wc.src_qp);
    ASSERT_EQ(1, m_a.poll(&wc, 1));
    EXPECT_EQ(0, dcx_qp_destroy(dgram));
}

TEST_F(soft_qpn, refused_bad_flow)
{
    dcx_soft_limits_t l = default_limits();
    uint32_t num;

    ASSERT_EQ(0, m_a.open(fabric.c_str(), &l));
    {
        log_counter log;

        EXPECT_EQ(EINVAL, dcx_soft_dev_set_qpn_base(m_a.dev, 0));
        EXPECT_EQ(1, log.lines());
    }
    {
        log_counter log;

        /* the first number fits, the device's last would not */
        EXPECT_EQ(EINVAL,
                  dcx_soft_dev_set_qpn_base(m_a.dev, DCX_SOFT_QPN_MAX - 16));
        EXPECT_EQ(1, log.lines());
    }
    ASSERT_EQ(0, m_a.make_dci());
    EXPECT_EQ(0x100u, m_a.dci->qp_num); /* the default base */
    num = m_a.dci->qp_num;
    {
        log_counter log;

        EXPECT_EQ(EBUSY, dcx_soft_dev_set_qpn_base(m_a.dev, BASE_A));
        EXPECT_EQ(1, log.lines());
    }
    EXPECT_EQ(num, m_a.dci->qp_num);
    /* also once its QPs are gone: peers may still know their numbers */
    ASSERT_EQ(0, dcx_qp_destroy(m_a.dci));
    m_a.dci = nullptr;
    {
        log_counter log;

        EXPECT_EQ(EBUSY, dcx_soft_dev_set_qpn_base(m_a.dev, BASE_A));
        EXPECT_EQ(1, log.lines());
    }
}
