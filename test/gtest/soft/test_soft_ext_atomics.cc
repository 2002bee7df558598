/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The masked (extended) atomics a DCT executes
 * (dcx_soft_dct_set_ext_atomics): a DCT takes operands up to 8 bytes as
 * made; limited to 4 bytes it refuses an 8-byte masked atomic, and with
 * none it takes the standard 8-byte atomics only.  A refused atomic is an
 * invalid request at the requester and leaves the target untouched.
 */
#include "soft_fixture.h"

#include <vector>

using namespace soft_test;

namespace {

const uint64_t KEY = 0xa70e;

class soft_ext_atomics : public soft {
protected:
    void SetUp() override
    {
        soft::SetUp();
        ASSERT_EQ(0, m_n.open(fabric.c_str()));
        ASSERT_EQ(0, m_n.make_loopback(KEY, DCX_ACCESS_REMOTE_ATOMIC));
        ASSERT_EQ(0, m_n.reg(m_buf.data(), m_buf.size(),
                             DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_ATOMIC,
                             &m_mr));
    }

    /* an atomic of size bytes adding 1 (masked: one field) at offset 64 */
    uint8_t add(dcx_wr_opcode_t op, uint8_t size)
    {
        dcx_sge_t s     = {(uintptr_t)m_buf.data(), size, m_mr->lkey};
        dcx_send_wr_t w = m_n.loop_wr(op, KEY, &s, m_mr->rkey,
                                      (uintptr_t)m_buf.data() + 64);

        w.atomic_size  = size;
        w.compare_mask = 0; /* one field: carries run through */
        return m_n.run(w);
    }

    uint64_t target() const
    {
        uint64_t v;

        memcpy(&v, m_buf.data() + 64, sizeof(v));
        return v;
    }

    node m_n;
    std::vector<uint8_t> m_buf = std::vector<uint8_t>(4096);
    dcx_mr_t *m_mr             = nullptr;
};

} // namespace

TEST_F(soft_ext_atomics, as_made_every_size)
{
    EXPECT_EQ(DCX_WC_SUCCESS, add(DCX_WR_ATOMIC_MASKED_FADD, 8));
    EXPECT_EQ(DCX_WC_SUCCESS, add(DCX_WR_ATOMIC_MASKED_FADD, 4));
    EXPECT_EQ(DCX_WC_SUCCESS, add(DCX_WR_ATOMIC_FADD, 8));
    EXPECT_EQ(3u, target());
}

TEST_F(soft_ext_atomics, limited_to_4_bytes_bad_flow)
{
    ASSERT_EQ(0, dcx_soft_dct_set_ext_atomics(m_n.dct, 4));
    EXPECT_EQ(DCX_WC_REM_INV_REQ_ERR, add(DCX_WR_ATOMIC_MASKED_FADD, 8));
    EXPECT_EQ(DCX_WC_REM_INV_REQ_ERR, add(DCX_WR_ATOMIC_MASKED_CSWAP, 8));
    EXPECT_EQ(0u, target());
    EXPECT_EQ(DCX_WC_SUCCESS, add(DCX_WR_ATOMIC_MASKED_FADD, 4));
    EXPECT_EQ(DCX_WC_SUCCESS, add(DCX_WR_ATOMIC_FADD, 8));
    EXPECT_EQ(2u, target());
}

TEST_F(soft_ext_atomics, none_takes_standard_atomics_only_bad_flow)
{
    ASSERT_EQ(0, dcx_soft_dct_set_ext_atomics(m_n.dct, 0));
    EXPECT_EQ(DCX_WC_REM_INV_REQ_ERR, add(DCX_WR_ATOMIC_MASKED_FADD, 4));
    EXPECT_EQ(DCX_WC_REM_INV_REQ_ERR, add(DCX_WR_ATOMIC_MASKED_FADD, 8));
    EXPECT_EQ(0u, target());
    EXPECT_EQ(DCX_WC_SUCCESS, add(DCX_WR_ATOMIC_FADD, 8));
    EXPECT_EQ(1u, target());
    /* and back */
    ASSERT_EQ(0, dcx_soft_dct_set_ext_atomics(m_n.dct, 8));
    EXPECT_EQ(DCX_WC_SUCCESS, add(DCX_WR_ATOMIC_MASKED_FADD, 8));
    EXPECT_EQ(2u, target());
}

TEST_F(soft_ext_atomics, bad_size_or_not_a_dct_bad_flow)
{
    {
        log_counter lc;

        EXPECT_EQ(EINVAL, dcx_soft_dct_set_ext_atomics(m_n.dct, 2));
        EXPECT_EQ(EINVAL, dcx_soft_dct_set_ext_atomics(m_n.dct, 16));
        EXPECT_EQ(EINVAL, dcx_soft_dct_set_ext_atomics(m_n.dci, 8));
        EXPECT_EQ(3, lc.lines()); /* one line each */
    }
    EXPECT_EQ(DCX_WC_SUCCESS, add(DCX_WR_ATOMIC_MASKED_FADD, 8));
}
