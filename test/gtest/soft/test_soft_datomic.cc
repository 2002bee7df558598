/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Atomics executed by the initiator (soft_direct.c, "Atomics"): where the
 * target's MR lies in a SysV segment the initiator attaches (shm_alloc, as
 * the dcx md allocates), an atomic is a CPU atomic on the attachment, with
 * the checks of a WRITE, and no packet.  Memory outside a segment keeps
 * the responder's path.  What the
 * target refuses (a stale or read-only key, an unaligned word, a masked
 * atomic its DCT does not execute) takes the packet path and fails there
 * with nothing written.  An atomic flagged DCX_SEND_NOW is done under the
 * grant, its result stored within the call.
 */
#include "soft_xfer.h"

#include <errno.h>
#include <string.h>
#include <thread>

using namespace soft_test;

namespace {

const uint64_t KEY    = 0xa7011cull;
const uint32_t ACCESS = DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE |
                        DCX_ACCESS_REMOTE_READ | DCX_ACCESS_REMOTE_ATOMIC;
const size_t ALLOC_LEN = 2 * 4096;

class soft_datomic : public soft {
protected:
    void SetUp() override
    {
        dcx_soft_limits_t l = xfer_limits(true);
        size_t len          = ALLOC_LEN;

        soft::SetUp();
        ASSERT_EQ(0, m_n.open(fabric.c_str(), &l));
        ASSERT_EQ(0, m_n.make_loopback(KEY, DCX_ACCESS_REMOTE_WRITE |
                                                DCX_ACCESS_REMOTE_READ |
                                                DCX_ACCESS_REMOTE_ATOMIC));
        ASSERT_EQ(0, shm_alloc(&len, (void **)&m_mem));
        ASSERT_EQ(ALLOC_LEN, len);
        ASSERT_EQ(0, m_n.reg(m_mem, ALLOC_LEN, ACCESS, &m_mr));
        ASSERT_EQ(0, m_n.reg(m_res, sizeof(m_res), DCX_ACCESS_LOCAL_WRITE,
                             &m_res_mr));
    }

    void TearDown() override
    {
        for (dcx_mr_t *mr : m_n.mrs) {
            dcx_mr_dereg(mr);
        }
        m_n.mrs.clear();
        if (m_mem != nullptr) {
            EXPECT_EQ(0, shm_free(m_n.dev, m_mem, ALLOC_LEN));
        }
        m_n.close();
        soft::TearDown();
    }

    /* An atomic op of size bytes at raddr under rkey, its result in
     * m_res[0] */
    dcx_send_wr_t atomic_wr(dcx_wr_opcode_t op, uint8_t size, uint64_t raddr,
                            uint32_t rkey)
    {
        m_sge           = {(uintptr_t)m_res, size, m_res_mr->lkey};
        dcx_send_wr_t w = m_n.loop_wr(op, KEY, &m_sge, rkey, raddr);

        w.atomic_size = size;
        return w;
    }

    uint64_t word(size_t off) const
    {
        uint64_t v;

        memcpy(&v, m_mem + off, sizeof(v));
        return v;
    }

    uint64_t stat_atomics()
    {
        dcx_soft_stats_t st;

        EXPECT_EQ(0, dcx_soft_stats(m_n.dev, &st));
        return st.direct_atomics;
    }

    uint64_t stat_tx()
    {
        dcx_soft_stats_t st;

        EXPECT_EQ(0, dcx_soft_stats(m_n.dev, &st));
        return st.tx_packets;
    }

    uint64_t raddr(size_t off) const { return (uintptr_t)m_mem + off; }

    node m_n;
    uint8_t *m_mem     = nullptr;
    dcx_mr_t *m_mr     = nullptr;
    dcx_mr_t *m_res_mr = nullptr;
    uint64_t m_res[2]  = {0, 0};
    dcx_sge_t m_sge;
};

} // namespace

/* Every atomic on the allocation: the values the operations define, each
 * counted as the initiator's own, and no packet sent */
TEST_F(soft_datomic, allocation_atomics_run_at_initiator)
{
    uint64_t tx0 = stat_tx(), at0 = stat_atomics();
    dcx_send_wr_t w;
    uint32_t v32;

    w             = atomic_wr(DCX_WR_ATOMIC_FADD, 8, raddr(64), m_mr->rkey);
    w.compare_add = 5;
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(w));
    w.compare_add = 7;
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(w));
    EXPECT_EQ(5u, m_res[0]);
    EXPECT_EQ(12u, word(64));

    /* compare-and-swap: a miss leaves the word, a hit swaps */
    w             = atomic_wr(DCX_WR_ATOMIC_CSWAP, 8, raddr(64), m_mr->rkey);
    w.compare_add = 11;
    w.swap        = 99;
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(w));
    EXPECT_EQ(12u, m_res[0]);
    EXPECT_EQ(12u, word(64));
    w.compare_add = 12;
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(w));
    EXPECT_EQ(12u, m_res[0]);
    EXPECT_EQ(99u, word(64));

    /* masked fetch-add of two 16-bit fields in a 32-bit word: the low
     * field's carry stops at its boundary */
    memcpy(m_mem + 128, &(v32 = 0x0001ffffu), sizeof(v32));
    w = atomic_wr(DCX_WR_ATOMIC_MASKED_FADD, 4, raddr(128), m_mr->rkey);
    w.compare_add  = 0x00010001u;
    w.compare_mask = 0x80008000u;
    m_res[0]       = ~0ull;
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(w));
    EXPECT_EQ(0x0001ffffu, (uint32_t)m_res[0]);
    memcpy(&v32, m_mem + 128, sizeof(v32));
    EXPECT_EQ(0x00020000u, v32);
    EXPECT_EQ(0u, word(128 + 4) >> 32) << "bytes past the word written";

    /* masked compare-and-swap of the low byte only */
    w = atomic_wr(DCX_WR_ATOMIC_MASKED_CSWAP, 8, raddr(256), m_mr->rkey);
    w.compare_add  = 0;
    w.compare_mask = 0xff;
    w.swap         = 0x1234;
    w.swap_mask    = 0xff00;
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(w));
    EXPECT_EQ(0x1200u, word(256));

    EXPECT_EQ(at0 + 6, stat_atomics());
    EXPECT_EQ(tx0, stat_tx());
}

/* Memory outside an allocation (the heap, reached only through the
 * target's CPU): the responder executes the atomic */
TEST_F(soft_datomic, heap_atomics_take_the_responder)
{
    uint64_t heap[8] = {0};
    uint64_t at0     = stat_atomics();
    dcx_mr_t *hmr;

    ASSERT_EQ(0, m_n.reg(heap, sizeof(heap), ACCESS, &hmr));
    dcx_send_wr_t w = atomic_wr(DCX_WR_ATOMIC_FADD, 8, (uintptr_t)&heap[2],
                                hmr->rkey);
    w.compare_add   = 3;
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(w));
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(w));
    EXPECT_EQ(3u, m_res[0]);
    EXPECT_EQ(6u, heap[2]);
    EXPECT_EQ(at0, stat_atomics());
}

/* What the target refuses fails as from its responder, with nothing
 * written: a deregistered key (also right after atomics under it made a
 * grant), a key without atomic access, an unaligned word, a masked atomic
 * the DCT does not execute */
TEST_F(soft_datomic, refused_atomics_write_nothing_bad_flow)
{
    dcx_mr_t *ro, *gone;
    dcx_send_wr_t w;

    memset(m_mem, 0x5a, ALLOC_LEN);
    ASSERT_EQ(0, dcx_mr_reg(m_n.pd, m_mem, ALLOC_LEN, DCX_ACCESS_REMOTE_READ,
                            &ro));
    m_n.mrs.push_back(ro);
    ASSERT_EQ(0, dcx_mr_reg(m_n.pd, m_mem, ALLOC_LEN, ACCESS, &gone));

    /* a grant under 'gone', then its key deregistered */
    w             = atomic_wr(DCX_WR_ATOMIC_FADD, 8, raddr(64), gone->rkey);
    w.compare_add = 1;
    ASSERT_EQ(DCX_WC_SUCCESS, m_n.run(w));
    uint64_t before = word(64);
    ASSERT_EQ(0, dcx_mr_dereg(gone));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, m_n.run(w));
    EXPECT_EQ(before, word(64));

    w             = atomic_wr(DCX_WR_ATOMIC_FADD, 8, raddr(64), ro->rkey);
    w.compare_add = 1;
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, m_n.run(w));
    EXPECT_EQ(before, word(64));

    w             = atomic_wr(DCX_WR_ATOMIC_FADD, 8, raddr(68), m_mr->rkey);
    w.compare_add = 1;
    EXPECT_EQ(DCX_WC_REM_INV_REQ_ERR, m_n.run(w));
    EXPECT_EQ(before, word(64));
    EXPECT_EQ(0x5a5a5a5a5a5a5a5aull, word(72));

    /* a grant for the key, then the DCT limited to 4-byte masked atomics */
    w             = atomic_wr(DCX_WR_ATOMIC_FADD, 8, raddr(64), m_mr->rkey);
    w.compare_add = 1;
    ASSERT_EQ(DCX_WC_SUCCESS, m_n.run(w));
    before = word(64);
    ASSERT_EQ(0, dcx_soft_dct_set_ext_atomics(m_n.dct, 4));
    w = atomic_wr(DCX_WR_ATOMIC_MASKED_FADD, 8, raddr(64), m_mr->rkey);
    w.compare_add = 1;
    EXPECT_EQ(DCX_WC_REM_INV_REQ_ERR, m_n.run(w));
    EXPECT_EQ(before, word(64));
    w = atomic_wr(DCX_WR_ATOMIC_MASKED_FADD, 4, raddr(64), m_mr->rkey);
    w.compare_add = 1;
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(w));
    EXPECT_EQ(before + 1, word(64));

    /* a result buffer whose key is gone: a local protection error, and the
     * target's word untouched */
    uint64_t res2[2] = {0, 0};
    dcx_mr_t *rmr;
    ASSERT_EQ(0, dcx_mr_reg(m_n.pd, res2, sizeof(res2), DCX_ACCESS_LOCAL_WRITE,
                            &rmr));
    dcx_sge_t rs = {(uintptr_t)res2, 8, rmr->lkey};
    ASSERT_EQ(0, dcx_mr_dereg(rmr));
    w             = atomic_wr(DCX_WR_ATOMIC_FADD, 8, raddr(64), m_mr->rkey);
    w.compare_add = 1;
    w.sg_list     = &rs;
    EXPECT_EQ(DCX_WC_LOC_PROT_ERR, m_n.run(w));
    EXPECT_EQ(before + 1, word(64));
    EXPECT_EQ(0u, res2[0]);
}

/* An atomic flagged DCX_SEND_NOW: declined with nothing done where no
 * grant covers it; under the grant, the result is stored within the call
 * in memory that is not registered, and nothing is posted */
TEST_F(soft_datomic, atomic_now_under_the_grant)
{
    uint64_t result = 0;
    dcx_sge_t plain = {(uintptr_t)&result, 8, 0};
    dcx_send_wr_t w;
    dcx_wc_t wc;

    ASSERT_TRUE(dcx_dev_caps(m_n.dev)->flags & DCX_CAP_POST_NOW);
    w             = atomic_wr(DCX_WR_ATOMIC_FADD, 8, raddr(64), m_mr->rkey);
    w.compare_add = 10;
    w.sg_list     = &plain;
    EXPECT_EQ(EAGAIN, post_now(m_n, w)) << "no grant yet";
    EXPECT_EQ(0u, word(64));

    w.sg_list = &m_sge; /* posted: makes the grant */
    ASSERT_EQ(DCX_WC_SUCCESS, m_n.run(w));
    EXPECT_EQ(10u, word(64));

    w.sg_list = &plain;
    EXPECT_EQ(0, post_now(m_n, w));
    EXPECT_EQ(10u, result);
    EXPECT_EQ(20u, word(64));
    w.opcode      = DCX_WR_ATOMIC_CSWAP;
    w.compare_add = 20;
    w.swap        = 7;
    EXPECT_EQ(0, post_now(m_n, w));
    EXPECT_EQ(20u, result);
    EXPECT_EQ(7u, word(64));
    EXPECT_EQ(0, dcx_cq_poll(m_n.cq, 1, &wc))
        << "a WR done within the call completed";

    /* outside the granted range, or misaligned: declined, nothing done */
    w.opcode      = DCX_WR_ATOMIC_FADD;
    w.remote_addr = raddr(ALLOC_LEN);
    EXPECT_EQ(EAGAIN, post_now(m_n, w));
    w.remote_addr = raddr(66);
    EXPECT_EQ(EAGAIN, post_now(m_n, w));
    EXPECT_EQ(7u, word(64));
}

/* Atomics of both paths on one word at once, each from its own thread: an
 * initiator executing its own (through the mapping) and one whose device
 * executes none itself (every atomic through the target's responder,
 * which the target's thread progresses).  Both are CPU atomics on the same
 * word, so no add is lost. */
TEST_F(soft_datomic, both_paths_on_one_word_lose_nothing)
{
    const unsigned n         = 2000;
    dcx_soft_limits_t l_dir  = xfer_limits(true);
    dcx_soft_limits_t l_resp = xfer_limits(false);
    uint8_t addr[DCX_DEV_ADDR_MAX];
    size_t addr_len           = sizeof(addr);
    volatile uint32_t running = 2;
    node a, b;
    int rc_a = -1, rc_b = -1;

    ASSERT_EQ(0, dcx_dev_port_addr(m_n.dev, addr, &addr_len));
    ASSERT_EQ(0, a.open(fabric.c_str(), &l_dir));
    ASSERT_EQ(0, b.open(fabric.c_str(), &l_resp));
    for (node *x : {&a, &b}) {
        ASSERT_EQ(0, x->make_dci());
        ASSERT_EQ(0, x->connect(addr, addr_len));
    }

    auto adder = [&](node &x, int *rc) {
        uint64_t res = 0;
        dcx_mr_t *mr;

        *rc             = x.reg(&res, sizeof(res), DCX_ACCESS_LOCAL_WRITE, &mr);
        dcx_sge_t sge   = {(uintptr_t)&res, 8, (*rc == 0) ? mr->lkey : 0};
        dcx_send_wr_t w = rdma_wr(x, m_n.dct->qp_num, KEY, DCX_WR_ATOMIC_FADD,
                                  &sge, raddr(512), m_mr->rkey);
        w.compare_add   = 1;
        for (unsigned i = 0; (i < n) && (*rc == 0); ++i) {
            *rc = run_one(x, w);
        }
        __atomic_fetch_sub(&running, 1, __ATOMIC_RELEASE);
    };
    std::thread ta(adder, std::ref(a), &rc_a);
    std::thread tb(adder, std::ref(b), &rc_b);
    dcx_wc_t wc;
    while (__atomic_load_n(&running, __ATOMIC_ACQUIRE) != 0) {
        (void)dcx_cq_poll(m_n.cq, 1, &wc); /* serves b's packets */
    }
    ta.join();
    tb.join();

    EXPECT_EQ(DCX_WC_SUCCESS, rc_a);
    EXPECT_EQ(DCX_WC_SUCCESS, rc_b);
    EXPECT_EQ(2u * n, word(512));
    dcx_soft_stats_t sa, sb;
    ASSERT_EQ(0, dcx_soft_stats(a.dev, &sa));
    ASSERT_EQ(0, dcx_soft_stats(b.dev, &sb));
    EXPECT_EQ(n, sa.direct_atomics) << "a's atomics took the responder";
    EXPECT_EQ(0u, sb.direct_atomics);
    EXPECT_GE(sb.tx_packets, n);
    a.close();
    b.close();
}
