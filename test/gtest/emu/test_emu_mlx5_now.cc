/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx's mlx5 backend and work within the call (DCX_SEND_NOW), on the
 * emulated ConnectX: a NIC executes nothing during a post, so the device
 * does not offer it, and a DCI's post_send declines every WR so flagged
 * with EAGAIN -- a WRITE inline or from an sge, a READ, an atomic, on a
 * DCI in RTS or in ERR -- with nothing written, read or completed; the
 * same WR posted without the flag then runs as any other.
 */
#include "emu_mlx5_fixture.h"

class emu_mlx5_now : public emu_mlx5_fixture {
protected:
    /* A signalled WR of opcode on m_buf[offset..+len] at m_buf[4096..] */
    dcx_send_wr_t wr(dcx_wr_opcode_t opcode, uint8_t flags, size_t offset,
                     uint32_t len)
    {
        dcx_send_wr_t w;

        m_sge = {(uint64_t)(uintptr_t)&m_buf[offset], len, m_mr->lkey};
        memset(&w, 0, sizeof(w));
        w.wr_id       = 9;
        w.opcode      = opcode;
        w.flags       = DCX_SEND_SIGNALED | flags;
        w.num_sge     = 1;
        w.sg_list     = &m_sge;
        w.dest.ah     = m_ah;
        w.dest.dctn   = m_dct->qp_num;
        w.dest.dc_key = emu_mlx5::KEY;
        w.remote_addr = (uintptr_t)&m_buf[4096];
        w.rkey        = m_mr->rkey;
        if (opcode == DCX_WR_ATOMIC_FADD) {
            w.compare_add = 1;
        }
        return w;
    }

    /* Each kind of WR flagged DCX_SEND_NOW is declined, nothing touched */
    void expect_all_declined(const char *where)
    {
        const struct {
            dcx_wr_opcode_t opcode;
            uint8_t flags;
            uint32_t len;
        } cases[] = {{DCX_WR_RDMA_WRITE, DCX_SEND_INLINE, 8},
                     {DCX_WR_RDMA_WRITE, 0, 64},
                     {DCX_WR_RDMA_READ, 0, 64},
                     {DCX_WR_ATOMIC_FADD, 0, 8}};
        dcx_wc_t wc;

        memset(m_buf, 0x11, 4096);
        memset(&m_buf[4096], 0x5a, 4096);
        for (auto &c : cases) {
            dcx_send_wr_t w = wr(c.opcode, c.flags | DCX_SEND_NOW, 0, c.len);

            EXPECT_EQ(EAGAIN, dcx_qp_post_send(m_dci, &w))
                << where << ": opcode " << (int)c.opcode;
        }
        for (size_t i = 0; i < 4096; ++i) {
            ASSERT_EQ(0x11, (uint8_t)m_buf[i]) << where << ": byte " << i;
            ASSERT_EQ(0x5a, (uint8_t)m_buf[4096 + i])
                << where << ": byte " << 4096 + i;
        }
        EXPECT_EQ(0, dcx_cq_poll(m_tx_cq, 1, &wc)) << where;
    }

    dcx_sge_t m_sge;
};

TEST_F(emu_mlx5_now, declined_in_rts_and_in_err_bad_flow)
{
    dcx_wc_t wc;

    EXPECT_FALSE(dcx_dev_caps(m_dev)->flags & DCX_CAP_POST_NOW);
    expect_all_declined("RTS");

    /* the WRITE without the flag: posted and done */
    dcx_send_wr_t w = wr(DCX_WR_RDMA_WRITE, 0, 0, 64);
    ASSERT_EQ(0, dcx_qp_post_send(m_dci, &w));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(9u, wc.wr_id);
    EXPECT_EQ(0, memcmp(m_buf, &m_buf[4096], 64));

    /* a key mismatch fails the DCI: in ERR, declined all the same (not
     * flushed), and a WR without the flag is flushed */
    ASSERT_EQ(0, send(10, emu_mlx5::KEY + 1));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_EQ(DCX_WC_RETRY_EXC_ERR, wc.status);
    ASSERT_EQ(DCX_QPS_ERR, m_dci->state);
    expect_all_declined("ERR");
    w = wr(DCX_WR_RDMA_WRITE, 0, 0, 64);
    ASSERT_EQ(0, dcx_qp_post_send(m_dci, &w));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_EQ(DCX_WC_WR_FLUSH_ERR, wc.status);
    EXPECT_EQ(9u, wc.wr_id);
}
