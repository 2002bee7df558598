/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx's mlx5 backend's atomics (src/mlx5/mlx5_atomic_probe.c,
 * mlx5_raw_sq.c) through the device layer, on the emulated ConnectX: the
 * masked atomics the firmware reports are offered at 4 and 8 bytes, their
 * operands written in the WQE as the HCA reads them and their fetched
 * values in host order once the completion is polled (the emulation, as a
 * ConnectX, writes a 4-byte result in network order); an operand size or
 * result buffer the device does not take is refused at post, with nothing
 * written.
 */
#include "emu_mlx5_fixture.h"

class emu_mlx5_atomics : public emu_mlx5_fixture {
protected:
    /* Posts wr (signalled, its result into m_buf[512..]) on target;
     * the post's return */
    int post(dcx_send_wr_t *wr, void *target, uint32_t result_len)
    {
        m_sge     = {(uint64_t)(uintptr_t)&m_buf[512], result_len, m_mr->lkey};
        wr->wr_id = 7;
        wr->flags = DCX_SEND_SIGNALED;
        wr->num_sge     = 1;
        wr->sg_list     = &m_sge;
        wr->dest.ah     = m_ah;
        wr->dest.dctn   = m_dct->qp_num;
        wr->dest.dc_key = emu_mlx5::KEY;
        wr->remote_addr = (uintptr_t)target;
        wr->rkey        = m_mr->rkey;
        return dcx_qp_post_send(m_dci, wr);
    }

    /* Runs wr to its completion; the fetched value's first 'size' bytes */
    uint64_t run(dcx_send_wr_t *wr, void *target, uint32_t size)
    {
        dcx_wc_t wc;
        uint64_t v = 0;

        memset(&m_buf[512], 0x5a, 8);
        EXPECT_EQ(0, post(wr, target, size));
        EXPECT_TRUE(poll_one(m_tx_cq, &wc));
        EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
        EXPECT_EQ(7u, wc.wr_id);
        memcpy(&v, &m_buf[512], size);
        return v;
    }

    static dcx_send_wr_t masked(dcx_wr_opcode_t opcode, uint8_t size)
    {
        dcx_send_wr_t wr;

        memset(&wr, 0, sizeof(wr));
        wr.opcode      = opcode;
        wr.atomic_size = size;
        return wr;
    }

    dcx_sge_t m_sge;
};

TEST_F(emu_mlx5_atomics, offered_at_both_sizes)
{
    uint32_t f = dcx_dev_caps(m_dev)->atomic_flags;

    EXPECT_EQ((uint32_t)(DCX_ATOMIC_FADD64 | DCX_ATOMIC_CSWAP64 |
                         DCX_ATOMIC_MASKED_FADD32 | DCX_ATOMIC_MASKED_FADD64 |
                         DCX_ATOMIC_MASKED_CSWAP32 | DCX_ATOMIC_MASKED_CSWAP64),
              f);
}

TEST_F(emu_mlx5_atomics, masked_32_results_in_host_order)
{
    uint32_t *t = (uint32_t *)&m_buf[1024];
    dcx_send_wr_t wr;

    /* add across a field boundary at bit 7: no carry out of the low byte */
    t[0]            = 0x120000ff;
    t[1]            = 0xcafef00d;
    wr              = masked(DCX_WR_ATOMIC_MASKED_FADD, 4);
    wr.compare_add  = 0x00000101;
    wr.compare_mask = 0x00000080;
    EXPECT_EQ(0x120000ffu, run(&wr, &t[0], 4));
    EXPECT_EQ(0x12000100u, t[0]);
    EXPECT_EQ(0xcafef00du, t[1]); /* the word beside */

    /* compare the top byte, swap the low half */
    wr              = masked(DCX_WR_ATOMIC_MASKED_CSWAP, 4);
    wr.compare_add  = 0xca000000;
    wr.compare_mask = 0xff000000;
    wr.swap         = 0x00001234;
    wr.swap_mask    = 0x0000ffff;
    EXPECT_EQ(0xcafef00du, run(&wr, &t[1], 4));
    EXPECT_EQ(0xcafe1234u, t[1]);
    /* a compare that fails swaps nothing, and fetches all the same */
    wr.compare_add = 0x11000000;
    EXPECT_EQ(0xcafe1234u, run(&wr, &t[1], 4));
    EXPECT_EQ(0xcafe1234u, t[1]);
}

TEST_F(emu_mlx5_atomics, masked_64_results_in_host_order)
{
    uint64_t *t = (uint64_t *)&m_buf[1024];
    dcx_send_wr_t wr;

    t[0]            = 0x1111222233334444ull;
    wr              = masked(DCX_WR_ATOMIC_MASKED_CSWAP, 8);
    wr.compare_add  = 0x0000000000004444ull;
    wr.compare_mask = 0x000000000000ffffull;
    wr.swap         = 0x5555000000000000ull;
    wr.swap_mask    = 0xffff000000000000ull;
    EXPECT_EQ(0x1111222233334444ull, run(&wr, &t[0], 8));
    EXPECT_EQ(0x5555222233334444ull, t[0]);

    /* xor: every bit a field of its own */
    wr              = masked(DCX_WR_ATOMIC_MASKED_FADD, 8);
    wr.compare_add  = 0xffffffffffffffffull;
    wr.compare_mask = 0xffffffffffffffffull;
    EXPECT_EQ(0x5555222233334444ull, run(&wr, &t[0], 8));
    EXPECT_EQ(~0x5555222233334444ull, t[0]);
}

TEST_F(emu_mlx5_atomics, sizes_and_buffers_bad_flow)
{
    uint64_t *t = (uint64_t *)&m_buf[1024];
    dcx_send_wr_t wr;
    dcx_wc_t wc;

    t[0] = 0x0102030405060708ull;
    memset(&m_buf[512], 0x5a, 8);
    wr             = masked(DCX_WR_ATOMIC_MASKED_FADD, 2); /* no such size */
    wr.compare_add = 1;
    EXPECT_EQ(EINVAL, post(&wr, t, 2));
    wr             = masked(DCX_WR_ATOMIC_MASKED_FADD, 4); /* a buffer of 8 */
    wr.compare_add = 1;
    EXPECT_EQ(EINVAL, post(&wr, t, 8));
    wr             = masked(DCX_WR_ATOMIC_FADD, 0); /* a buffer of 4 */
    wr.compare_add = 1;
    EXPECT_EQ(EINVAL, post(&wr, t, 4));
    EXPECT_EQ(0x0102030405060708ull, t[0]);
    EXPECT_EQ(0, dcx_cq_poll(m_tx_cq, 1, &wc));
    for (int i = 0; i < 8; ++i) {
        EXPECT_EQ(0x5a, (uint8_t)m_buf[512 + i]);
    }
    /* the DCI still works */
    wr             = masked(DCX_WR_ATOMIC_FADD, 0);
    wr.compare_add = 1;
    EXPECT_EQ(0x0102030405060708ull, run(&wr, t, 8));
}
