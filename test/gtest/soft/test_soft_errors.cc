/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: remote and local errors, DCI error state and recovery, RNR,
 * send queue accounting, limits, ordering.
 */
#include "soft_fixture.h"

#include <sys/mman.h>

using namespace soft_test;

namespace {

void fill(uint8_t *p, size_t n, uint8_t seed)
{
    for (size_t i = 0; i < n; ++i) {
        p[i] = (uint8_t)(i * 31 + seed);
    }
}

bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        if (p[i] != 0) {
            return false;
        }
    }
    return true;
}

} // namespace

TEST_F(soft_xproc, write_bad_rkey_bad_flow)
{
    start();
    fill(lbuf.data(), 4096, 1);
    dcx_sge_t s      = lsge(0, 4096);
    dcx_send_wr_t wr = make_wr(DCX_WR_RDMA_WRITE, 1, &s, 1, ini, sh);
    wr.rkey ^= 0x5500;
    dcx_wc_t wc = run(wr);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, wc.status);
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(DCX_QPS_ERR, ini.dci->state);
    EXPECT_TRUE(all_zero(sh->buf, 4096));

    /* later posts are flushed, signalled or not */
    wr       = make_wr(DCX_WR_RDMA_WRITE, 2, &s, 1, ini, sh);
    wr.flags = 0;
    wc       = run(wr);
    EXPECT_EQ(DCX_WC_WR_FLUSH_ERR, wc.status);
    EXPECT_EQ(2u, wc.wr_id);

    /* recover and reuse */
    ASSERT_EQ(0, dcx_qp_recover(ini.dci));
    EXPECT_EQ(DCX_QPS_RTS, ini.dci->state);
    wr = make_wr(DCX_WR_RDMA_WRITE, 3, &s, 1, ini, sh);
    wc = run(wr);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(0, memcmp(sh->buf, lbuf.data(), 4096));
    EXPECT_TRUE(stop_children());
    EXPECT_GE(sh->stats.remote_access_errors, 1u);
}

TEST_F(soft_xproc, write_bounds_bad_flow)
{
    start();
    dcx_sge_t s = lsge(0, 128);
    fill(lbuf.data(), 128, 2);
    /* last 64 bytes inside the MR, then past its end */
    dcx_send_wr_t wr = make_wr(DCX_WR_RDMA_WRITE, 1, &s, 1, ini, sh);
    wr.remote_addr += BUF_SIZE - 64;
    dcx_wc_t wc = run(wr);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, wc.status);
    EXPECT_TRUE(all_zero(sh->buf + BUF_SIZE - 64, 64));

    ASSERT_EQ(0, dcx_qp_recover(ini.dci));
    wr = make_wr(DCX_WR_RDMA_WRITE, 2, &s, 1, ini, sh);
    wr.remote_addr += BUF_SIZE - 128;
    wc = run(wr);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(0, memcmp(sh->buf + BUF_SIZE - 128, lbuf.data(), 128));
    EXPECT_TRUE(stop_children());
}

TEST_F(soft_xproc, access_flags_bad_flow)
{
    start();
    dcx_sge_t s = lsge(0, 64);
    fill(lbuf.data(), 64, 3);
    /* MR registered for remote read only: write and atomic refused */
    dcx_send_wr_t wr = make_wr(DCX_WR_RDMA_WRITE, 1, &s, 1, ini, sh);
    wr.rkey          = sh->rkey_ro;
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, run(wr).status);
    EXPECT_TRUE(all_zero(sh->buf, 64));
    ASSERT_EQ(0, dcx_qp_recover(ini.dci));

    dcx_sge_t s8   = lsge(0, 8);
    wr             = make_wr(DCX_WR_ATOMIC_FADD, 2, &s8, 1, ini, sh);
    wr.rkey        = sh->rkey_ro;
    wr.compare_add = 1;
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, run(wr).status);
    EXPECT_TRUE(all_zero(sh->buf, 8));
    ASSERT_EQ(0, dcx_qp_recover(ini.dci));

    /* but reads through it work */
    memcpy(sh->buf + 256, "read-only", 9);
    s       = lsge(1024, 9);
    wr      = make_wr(DCX_WR_RDMA_READ, 3, &s, 1, ini, sh);
    wr.rkey = sh->rkey_ro;
    wr.remote_addr += 256;
    EXPECT_EQ(DCX_WC_SUCCESS, run(wr).status);
    EXPECT_EQ(0, memcmp(lbuf.data() + 1024, "read-only", 9));
    EXPECT_TRUE(stop_children());
}

TEST_F(soft_xproc, dct_access_bad_flow)
{
    sh->tp.dct_access = DCX_ACCESS_REMOTE_READ; /* no remote write */
    start();
    dcx_sge_t s      = lsge(0, 64);
    dcx_send_wr_t wr = make_wr(DCX_WR_RDMA_WRITE, 1, &s, 1, ini, sh);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, run(wr).status);
    ASSERT_EQ(0, dcx_qp_recover(ini.dci));
    wr = make_wr(DCX_WR_RDMA_READ, 2, &s, 1, ini, sh);
    EXPECT_EQ(DCX_WC_SUCCESS, run(wr).status);
    EXPECT_TRUE(stop_children());
}

TEST_F(soft_xproc, read_bad_rkey_bad_flow)
{
    start();
    dcx_sge_t s = lsge(0, 64);
    memset(lbuf.data(), 0xab, 64);
    dcx_send_wr_t wr = make_wr(DCX_WR_RDMA_READ, 1, &s, 1, ini, sh);
    wr.rkey += 0x100;
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, run(wr).status);
    /* nothing was written into the local buffer */
    for (int i = 0; i < 64; ++i) {
        ASSERT_EQ(0xab, lbuf[i]);
    }
    ASSERT_EQ(0, dcx_qp_recover(ini.dci));
    wr = make_wr(DCX_WR_RDMA_READ, 2, &s, 1, ini, sh);
    wr.remote_addr += BUF_SIZE - 32; /* crosses the end */
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, run(wr).status);
    EXPECT_TRUE(stop_children());
}

TEST_F(soft_xproc, atomic_misaligned_bad_flow)
{
    start();
    dcx_sge_t s                 = lsge(0, 8);
    const dcx_wr_opcode_t ops[] = {DCX_WR_ATOMIC_FADD, DCX_WR_ATOMIC_CSWAP,
                                   DCX_WR_ATOMIC_MASKED_FADD,
                                   DCX_WR_ATOMIC_MASKED_CSWAP};
    for (dcx_wr_opcode_t op : ops) {
        dcx_send_wr_t wr = make_wr(op, op, &s, 1, ini, sh);
        wr.remote_addr += 4; /* 4-aligned, not 8-aligned */
        wr.atomic_size  = 8;
        wr.compare_add  = 1;
        wr.compare_mask = ~0ull;
        wr.swap_mask    = ~0ull;
        EXPECT_EQ(DCX_WC_REM_INV_REQ_ERR, run(wr).status) << op;
        ASSERT_EQ(0, dcx_qp_recover(ini.dci));
    }
    /* masked 32-bit at a 2-byte offset */
    dcx_send_wr_t wr = make_wr(DCX_WR_ATOMIC_MASKED_FADD, 9, &s, 1, ini, sh);
    wr.remote_addr += 2;
    wr.atomic_size = 4;
    EXPECT_EQ(DCX_WC_REM_INV_REQ_ERR, run(wr).status);
    EXPECT_TRUE(all_zero(sh->buf, 16));
    EXPECT_TRUE(stop_children());
}

TEST_F(soft_xproc, masked_atomics)
{
    start();
    dcx_sge_t s   = lsge(0, 8);
    uint64_t *t64 = (uint64_t *)(sh->buf + 128);
    uint32_t *t32 = (uint32_t *)(sh->buf + 256);

    /* masked FADD 64: two 32-bit fields, carry stops at bit 31 */
    *t64             = 0x00000001ffffffffull;
    dcx_send_wr_t wr = make_wr(DCX_WR_ATOMIC_MASKED_FADD, 1, &s, 1, ini, sh);
    wr.remote_addr += 128;
    wr.atomic_size  = 8;
    wr.compare_add  = 0x0000000100000001ull;
    wr.compare_mask = 0x8000000080000000ull;
    dcx_wc_t wc     = run(wr);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_MASKED_FETCH_ADD, wc.opcode);
    EXPECT_EQ(0x00000001ffffffffull, *(uint64_t *)lbuf.data());
    EXPECT_EQ(0x0000000200000000ull, *t64);

    /* masked CSWAP 64: compare low byte only, swap high half only */
    *t64 = 0x11223344556677aaull;
    wr   = make_wr(DCX_WR_ATOMIC_MASKED_CSWAP, 2, &s, 1, ini, sh);
    wr.remote_addr += 128;
    wr.atomic_size  = 8;
    wr.compare_add  = 0xaa;
    wr.compare_mask = 0xff;
    wr.swap         = 0xdeadbeef00000000ull;
    wr.swap_mask    = 0xffffffff00000000ull;
    wc              = run(wr);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_MASKED_COMP_SWAP, wc.opcode);
    EXPECT_EQ(0x11223344556677aaull, *(uint64_t *)lbuf.data());
    EXPECT_EQ(0xdeadbeef556677aaull, *t64);

    /* compare mismatch: unchanged */
    wr.compare_add = 0xbb;
    wc             = run(wr);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(0xdeadbeef556677aaull, *t64);

    /* 32-bit: masked FADD on 4 byte fields, result is 4 bytes */
    *t32 = 0x01ff02ff;
    memset(lbuf.data(), 0xee, 8);
    wr = make_wr(DCX_WR_ATOMIC_MASKED_FADD, 3, &s, 1, ini, sh);
    wr.remote_addr += 256;
    wr.atomic_size  = 4;
    wr.compare_add  = 0x01010101;
    wr.compare_mask = 0x80808080;
    wc              = run(wr);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(4u, wc.byte_len);
    EXPECT_EQ(0x01ff02ffu, *(uint32_t *)lbuf.data());
    EXPECT_EQ(0xeeu, lbuf[4]); /* only 4 bytes written */
    EXPECT_EQ(0x02000300u, *t32);

    /* 32-bit masked CSWAP */
    *t32 = 0xcafe0001;
    wr   = make_wr(DCX_WR_ATOMIC_MASKED_CSWAP, 4, &s, 1, ini, sh);
    wr.remote_addr += 256;
    wr.atomic_size  = 4;
    wr.compare_add  = 0x0001;
    wr.compare_mask = 0xffff;
    wr.swap         = 0x0000beef;
    wr.swap_mask    = 0x0000ffff;
    wc              = run(wr);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(0xcafe0001u, *(uint32_t *)lbuf.data());
    EXPECT_EQ(0xcafebeefu, *t32);
    EXPECT_TRUE(stop_children());
}

TEST_F(soft_xproc, atomic_size_bad_flow)
{
    start();
    log_counter logs;
    dcx_sge_t s      = lsge(0, 8);
    dcx_send_wr_t wr = make_wr(DCX_WR_ATOMIC_MASKED_FADD, 1, &s, 1, ini, sh);
    wr.atomic_size   = 2;
    EXPECT_EQ(EINVAL, dcx_qp_post_send(ini.dci, &wr));
    s.length = 4;
    wr       = make_wr(DCX_WR_ATOMIC_FADD, 1, &s, 1, ini, sh);
    EXPECT_EQ(EINVAL, dcx_qp_post_send(ini.dci, &wr));
    EXPECT_EQ(2, logs.lines());
    EXPECT_TRUE(stop_children());
}

TEST_F(soft_xproc, send_too_long_bad_flow)
{
    sh->tp.recv_size = 1000;
    start();
    dcx_sge_t s      = lsge(0, 1001);
    dcx_send_wr_t wr = make_wr(DCX_WR_SEND, 1, &s, 1, ini, sh);
    EXPECT_EQ(DCX_WC_REM_INV_REQ_ERR, run(wr).status);
    ASSERT_TRUE(wait_recv(1));
    EXPECT_EQ(DCX_WC_LOC_LEN_ERR, sh->wc[0].status);
    EXPECT_EQ(0u, sh->wc[0].wr_id);

    ASSERT_EQ(0, dcx_qp_recover(ini.dci));
    s  = lsge(0, 1000);
    wr = make_wr(DCX_WR_SEND, 2, &s, 1, ini, sh);
    EXPECT_EQ(DCX_WC_SUCCESS, run(wr).status);
    ASSERT_TRUE(wait_recv(2));
    EXPECT_EQ(DCX_WC_SUCCESS, sh->wc[1].status);
    EXPECT_EQ(1000u, sh->wc[1].byte_len);
    EXPECT_TRUE(stop_children());
}

TEST_F(soft_xproc, bad_lkey_bad_flow)
{
    start();
    dcx_sge_t s = lsge(0, 64);
    s.lkey += 0x300;
    dcx_send_wr_t wr = make_wr(DCX_WR_RDMA_WRITE, 1, &s, 1, ini, sh);
    EXPECT_EQ(DCX_WC_LOC_PROT_ERR, run(wr).status);
    ASSERT_EQ(0, dcx_qp_recover(ini.dci));
    /* local range past the MR */
    s  = lsge(lbuf.size() - 8, 64);
    wr = make_wr(DCX_WR_RDMA_READ, 2, &s, 1, ini, sh);
    EXPECT_EQ(DCX_WC_LOC_PROT_ERR, run(wr).status);
    EXPECT_TRUE(stop_children());
}

TEST_F(soft_xproc, dc_key_mismatch_bad_flow)
{
    start();
    dcx_sge_t s      = lsge(0, 64);
    dcx_send_wr_t wr = make_wr(DCX_WR_RDMA_WRITE, 1, &s, 1, ini, sh);
    wr.dest.dc_key ^= 1;
    double t0 = now_s();
    EXPECT_EQ(DCX_WC_RETRY_EXC_ERR, run(wr).status);
    EXPECT_LT(now_s() - t0, 5.0);
    EXPECT_TRUE(all_zero(sh->buf, 64));
    ASSERT_EQ(0, dcx_qp_recover(ini.dci));
    wr = make_wr(DCX_WR_RDMA_WRITE, 2, &s, 1, ini, sh);
    EXPECT_EQ(DCX_WC_SUCCESS, run(wr).status);
    EXPECT_TRUE(stop_children());
    EXPECT_GE(sh->stats.dc_key_violations, sh->tp.limits.retry_cnt + 1);
}

TEST_F(soft_xproc, bad_dctn_bad_flow)
{
    start();
    dcx_sge_t s      = lsge(0, 64);
    dcx_send_wr_t wr = make_wr(DCX_WR_SEND, 1, &s, 1, ini, sh);
    wr.dest.dctn += 77;
    double t0 = now_s();
    EXPECT_EQ(DCX_WC_RETRY_EXC_ERR, run(wr).status);
    EXPECT_LT(now_s() - t0, 5.0);
    dcx_soft_stats_t st;
    ASSERT_EQ(0, dcx_soft_stats(ini.dev, &st));
    EXPECT_EQ(sh->tp.limits.retry_cnt, st.retransmits);
    EXPECT_TRUE(stop_children());
    EXPECT_GE(sh->stats.bad_dctn_drops, 1u);
    EXPECT_EQ(0u, sh->n_wc);
}

TEST_F(soft_xproc, rnr_then_success)
{
    sh->tp.nrecv = 0;
    start();
    dcx_sge_t s = lsge(0, 100);
    fill(lbuf.data(), 100, 9);
    dcx_send_wr_t wr = make_wr(DCX_WR_SEND, 1, &s, 1, ini, sh);
    ASSERT_EQ(0, dcx_qp_post_send(ini.dci, &wr));
    dcx_wc_t wc;
    EXPECT_EQ(0, ini.poll(&wc, 1, 0.1)); /* RNR: retried, not done */
    __atomic_store_n(&sh->post_more, 1, __ATOMIC_RELEASE);
    ASSERT_EQ(1, ini.poll(&wc, 1, 20.0));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    ASSERT_TRUE(wait_recv(1));
    EXPECT_EQ(0, memcmp(recv_buf(sh, sh->wc[0].wr_id), lbuf.data(), 100));
    dcx_soft_stats_t st;
    ASSERT_EQ(0, dcx_soft_stats(ini.dev, &st));
    EXPECT_GE(st.rnr_retries, 1u);
    EXPECT_TRUE(stop_children());
    EXPECT_GE(sh->stats.rnr_naks_sent, 1u);
}

/* A target with no receive for a stream of SENDs: each RNR retry sends the
 * SEND the NAK named, alone, not the whole stream behind it (which the
 * target would refuse as well, a burst per retry); once receives come, all
 * arrive in order. */
TEST_F(soft_xproc, rnr_retries_the_named_send_alone)
{
    const unsigned n = 16;
    sh->tp.nrecv     = 0;
    start();
    for (unsigned i = 0; i < n; ++i) {
        fill(lbuf.data() + i * 64, 64, (int)(i + 1));
        dcx_sge_t s      = lsge(i * 64, 64);
        dcx_send_wr_t wr = make_wr(DCX_WR_SEND, i, &s, 1, ini, sh);
        ASSERT_EQ(0, dcx_qp_post_send(ini.dci, &wr));
    }
    dcx_wc_t wc[n];
    EXPECT_EQ(0, ini.poll(wc, 1, 0.05)); /* RNR: retried, not done */
    dcx_soft_stats_t st0 = dev_stats(ini);
    EXPECT_EQ(0, ini.poll(wc, 1, 0.1));
    dcx_soft_stats_t st1 = dev_stats(ini);
    uint64_t retries     = st1.rnr_retries - st0.rnr_retries;
    uint64_t packets     = st1.tx_packets - st0.tx_packets;
    EXPECT_GE(retries, 3u) << "the target's RNR timer is 1 ms";
    EXPECT_LE(packets, retries + 1) << "over " << retries << " RNR retries";

    __atomic_store_n(&sh->post_more, n, __ATOMIC_RELEASE);
    ASSERT_EQ((int)n, ini.poll(wc, n, 20.0));
    for (unsigned i = 0; i < n; ++i) {
        EXPECT_EQ(DCX_WC_SUCCESS, wc[i].status) << i;
        EXPECT_EQ(i, wc[i].wr_id);
    }
    ASSERT_TRUE(wait_recv(n));
    for (unsigned i = 0; i < n; ++i) {
        EXPECT_EQ(0, memcmp(recv_buf(sh, sh->wc[i].wr_id), lbuf.data() + i * 64,
                            64))
            << "receive " << i << " (" << sh->wc[i].wr_id << ")";
    }
    EXPECT_TRUE(stop_children());
}

TEST_F(soft_xproc, rnr_exceeded_bad_flow)
{
    sh->tp.nrecv = 0;
    start();
    ini.close();
    ASSERT_EQ(0, ini.open(fabric.c_str(), &sh->tp.limits));
    ASSERT_EQ(0, ini.make_dci(16, 64, 0, 2 /* rnr_retry */));
    ASSERT_EQ(0, ini.connect(sh->addr, sh->addr_len));
    ASSERT_EQ(0, ini.reg(lbuf.data(), 4096, DCX_ACCESS_LOCAL_WRITE, &lmr));
    dcx_sge_t s      = lsge(0, 10);
    dcx_send_wr_t wr = make_wr(DCX_WR_SEND, 1, &s, 1, ini, sh);
    EXPECT_EQ(DCX_WC_RNR_RETRY_EXC_ERR, run(wr).status);
    dcx_soft_stats_t st;
    ASSERT_EQ(0, dcx_soft_stats(ini.dev, &st));
    EXPECT_EQ(2u, st.rnr_retries);
    EXPECT_TRUE(stop_children());
    EXPECT_GE(sh->stats.rnr_naks_sent, 3u);
}

TEST_F(soft_xproc, write_imm)
{
    start();
    fill(lbuf.data(), 3000, 4);
    dcx_sge_t s      = lsge(0, 3000);
    dcx_send_wr_t wr = make_wr(DCX_WR_RDMA_WRITE_IMM, 1, &s, 1, ini, sh);
    wr.remote_addr += 8192;
    wr.imm      = 0x12345678;
    dcx_wc_t wc = run(wr);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_RDMA_WRITE, wc.opcode);
    ASSERT_TRUE(wait_recv(1));
    EXPECT_EQ(DCX_WC_SUCCESS, sh->wc[0].status);
    EXPECT_EQ(DCX_WC_RECV_RDMA_WITH_IMM, sh->wc[0].opcode);
    EXPECT_TRUE(sh->wc[0].flags & DCX_WC_FLAG_WITH_IMM);
    EXPECT_EQ(0x12345678u, sh->wc[0].imm);
    EXPECT_EQ(ini.dci->qp_num, sh->wc[0].src_qp);
    EXPECT_EQ(0, memcmp(sh->buf + 8192, lbuf.data(), 3000));
    EXPECT_TRUE(stop_children());
}

TEST_F(soft_xproc, sq_full_enomem)
{
    start();
    ini.close();
    ASSERT_EQ(0, ini.open(fabric.c_str(), &sh->tp.limits));
    ASSERT_EQ(0, ini.make_dci(4));
    ASSERT_EQ(0, ini.connect(sh->addr, sh->addr_len));
    ASSERT_EQ(0, ini.reg(lbuf.data(), 4096, DCX_ACCESS_LOCAL_WRITE, &lmr));
    dcx_sge_t s      = lsge(0, 8);
    dcx_send_wr_t wr = make_wr(DCX_WR_RDMA_WRITE, 0, &s, 1, ini, sh);
    wr.flags         = 0;
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(0, dcx_qp_post_send(ini.dci, &wr));
    }
    wr.flags = DCX_SEND_SIGNALED;
    wr.wr_id = 3;
    ASSERT_EQ(0, dcx_qp_post_send(ini.dci, &wr));
    EXPECT_EQ(ENOMEM, dcx_qp_post_send(ini.dci, &wr));
    /* completed on the wire but not retired until the CQE is polled */
    usleep(20000);
    dcx_dev_progress(ini.dev);
    EXPECT_EQ(ENOMEM, dcx_qp_post_send(ini.dci, &wr));
    dcx_wc_t wc;
    ASSERT_EQ(1, ini.poll(&wc, 1));
    EXPECT_EQ(3u, wc.wr_id);
    /* one signalled CQE retired the three unsignalled WRs too */
    for (int i = 0; i < 4; ++i) {
        wr.wr_id = 10 + i;
        wr.flags = (i == 3) ? DCX_SEND_SIGNALED : 0;
        EXPECT_EQ(0, dcx_qp_post_send(ini.dci, &wr)) << i;
    }
    ASSERT_EQ(1, ini.poll(&wc, 1));
    EXPECT_EQ(13u, wc.wr_id);
    EXPECT_TRUE(stop_children());
}

TEST_F(soft_xproc, set_error_flush_recover)
{
    sh->tp.nrecv = 0; /* sends wait for receives (RNR) */
    start();
    dcx_sge_t s      = lsge(0, 8);
    dcx_send_wr_t wr = make_wr(DCX_WR_SEND, 0, &s, 1, ini, sh);
    for (int i = 0; i < 4; ++i) {
        wr.wr_id = i;
        wr.flags = (i == 1) ? 0 : DCX_SEND_SIGNALED;
        ASSERT_EQ(0, dcx_qp_post_send(ini.dci, &wr));
    }
    ASSERT_EQ(0, dcx_qp_set_error(ini.dci));
    EXPECT_EQ(DCX_QPS_ERR, ini.dci->state);
    dcx_wc_t wc[8];
    ASSERT_EQ(4, ini.poll(wc, 4));
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ((uint64_t)i, wc[i].wr_id); /* in post order, all of them */
        EXPECT_EQ(DCX_WC_WR_FLUSH_ERR, wc[i].status);
    }
    /* unpolled completions are discarded by the recovery */
    wr.wr_id = 9;
    ASSERT_EQ(0, dcx_qp_post_send(ini.dci, &wr));
    ASSERT_EQ(0, dcx_qp_recover(ini.dci));
    EXPECT_EQ(0, ini.poll(wc, 1, 0.05));

    /* a flushed send may still have landed (as on hardware): spare receives */
    __atomic_store_n(&sh->post_more, 8, __ATOMIC_RELEASE);
    wr.wr_id    = 10;
    dcx_wc_t w1 = run(wr);
    EXPECT_EQ(DCX_WC_SUCCESS, w1.status);
    EXPECT_EQ(10u, w1.wr_id);
    EXPECT_TRUE(stop_children());
}

TEST_F(soft_xproc, limits_inline_sge_bad_flow)
{
    sh->tp.limits.max_inline = 64;
    start_target();
    ASSERT_EQ(0, ini.open(fabric.c_str(), &sh->tp.limits));
    ASSERT_EQ(0, ini.make_cq());
    EXPECT_EQ(64u, dcx_dev_caps(ini.dev)->max_inline);
    dcx_qp_t *qp;
    dcx_qp_attr_t qattr;
    memset(&qattr, 0, sizeof(qattr));
    qattr.type        = DCX_QPT_DCI;
    qattr.send_cq     = ini.cq;
    qattr.max_send_wr = 8;
    qattr.max_inline  = 65;
    {
        log_counter logs;
        EXPECT_EQ(EINVAL, dcx_qp_create(ini.pd, &qattr, &qp));
        EXPECT_EQ(1, logs.lines());
    }
    ASSERT_EQ(0, ini.make_dci(16, 64, 0, 0, 2));
    ASSERT_EQ(0, ini.connect(sh->addr, sh->addr_len));
    ASSERT_EQ(0, ini.reg(lbuf.data(), 4096, DCX_ACCESS_LOCAL_WRITE, &lmr));
    dcx_sge_t s[3]   = {lsge(0, 40), lsge(100, 25), lsge(200, 1)};
    dcx_send_wr_t wr = make_wr(DCX_WR_RDMA_WRITE, 1, s, 2, ini, sh);
    wr.flags |= DCX_SEND_INLINE;
    {
        log_counter logs;
        EXPECT_EQ(EINVAL, dcx_qp_post_send(ini.dci, &wr)); /* 65 > 64 */
        wr.num_sge = 3;                                    /* > 2 sge */
        EXPECT_EQ(EINVAL, dcx_qp_post_send(ini.dci, &wr));
        wr.opcode = DCX_WR_OPCODE_LAST;
        EXPECT_EQ(EINVAL, dcx_qp_post_send(ini.dci, &wr));
        EXPECT_EQ(3, logs.lines());
    }
    /* inline data is copied at post: the buffer may change right after */
    fill(lbuf.data(), 300, 5);
    std::vector<uint8_t> expect(lbuf.begin(), lbuf.begin() + 40);
    expect.insert(expect.end(), lbuf.begin() + 100, lbuf.begin() + 124);
    s[1].length = 24;
    wr          = make_wr(DCX_WR_RDMA_WRITE, 2, s, 2, ini, sh);
    wr.flags |= DCX_SEND_INLINE;
    ASSERT_EQ(0, dcx_qp_post_send(ini.dci, &wr));
    memset(lbuf.data(), 0, 300);
    dcx_wc_t wc;
    ASSERT_EQ(1, ini.poll(&wc, 1));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(0, memcmp(sh->buf, expect.data(), 64));
    EXPECT_TRUE(stop_children());
}

TEST_F(soft_xproc, small_mtu_multi_sge)
{
    sh->tp.limits.mtu = 1024;
    start();
    EXPECT_EQ(1024u, dcx_dev_caps(ini.dev)->mtu);
    fill(lbuf.data(), 20000, 6);
    dcx_sge_t s[3]   = {lsge(0, 5000), lsge(5000, 1), lsge(5001, 4000)};
    dcx_send_wr_t wr = make_wr(DCX_WR_SEND, 1, s, 3, ini, sh);
    EXPECT_EQ(DCX_WC_SUCCESS, run(wr).status);
    ASSERT_TRUE(wait_recv(1));
    EXPECT_EQ(9001u, sh->wc[0].byte_len);
    EXPECT_EQ(0, memcmp(recv_buf(sh, sh->wc[0].wr_id), lbuf.data(), 9001));
    /* read into 3 sges */
    s[0]           = lsge(100000, 3000);
    s[1]           = lsge(200000, 3000);
    s[2]           = lsge(300000, 3001);
    wr             = make_wr(DCX_WR_RDMA_READ, 2, s, 3, ini, sh);
    wr.remote_addr = (uint64_t)(uintptr_t)recv_buf(sh, sh->wc[0].wr_id);
    EXPECT_EQ(DCX_WC_SUCCESS, run(wr).status);
    EXPECT_EQ(0, memcmp(lbuf.data() + 100000, lbuf.data(), 3000));
    EXPECT_EQ(0, memcmp(lbuf.data() + 200000, lbuf.data() + 3000, 3000));
    EXPECT_EQ(0, memcmp(lbuf.data() + 300000, lbuf.data() + 6000, 3001));
    EXPECT_TRUE(stop_children());
}

TEST_F(soft_xproc, fence_and_rd_atomic)
{
    start();
    ini.close();
    ASSERT_EQ(0, ini.open(fabric.c_str(), &sh->tp.limits));
    dcx_qp_attr_t qattr;
    memset(&qattr, 0, sizeof(qattr));
    ASSERT_EQ(0, ini.make_cq());
    qattr.type          = DCX_QPT_DCI;
    qattr.send_cq       = ini.cq;
    qattr.max_send_wr   = 64;
    qattr.max_send_sge  = 1;
    qattr.max_rd_atomic = 1;
    ASSERT_EQ(0, dcx_qp_create(ini.pd, &qattr, &ini.dci));
    EXPECT_EQ(1u, ini.dci->max_rd_atomic);
    ASSERT_EQ(0, ini.connect(sh->addr, sh->addr_len));
    ASSERT_EQ(0,
              ini.reg(lbuf.data(), lbuf.size(), DCX_ACCESS_LOCAL_WRITE, &lmr));
    /* READ of the old value, then a FENCEd WRITE over it */
    memset(sh->buf, 0x11, 50000);
    memset(lbuf.data(), 0x22, 50000);
    dcx_sge_t rs = lsge(1u << 20, 50000), ws = lsge(0, 50000);
    dcx_send_wr_t rd = make_wr(DCX_WR_RDMA_READ, 1, &rs, 1, ini, sh);
    dcx_send_wr_t wr = make_wr(DCX_WR_RDMA_WRITE, 2, &ws, 1, ini, sh);
    wr.flags |= DCX_SEND_FENCE;
    ASSERT_EQ(0, dcx_qp_post_send(ini.dci, &rd));
    ASSERT_EQ(0, dcx_qp_post_send(ini.dci, &wr));
    /* several atomics beyond max_rd_atomic=1 all complete, in order */
    dcx_sge_t as[8];
    for (int i = 0; i < 8; ++i) {
        as[i]           = lsge(2u << 20 | (i * 8), 8);
        dcx_send_wr_t a = make_wr(DCX_WR_ATOMIC_FADD, 10 + i, &as[i], 1, ini,
                                  sh);
        a.remote_addr += 100000;
        a.compare_add = 1;
        ASSERT_EQ(0, dcx_qp_post_send(ini.dci, &a));
    }
    dcx_wc_t wc[10];
    ASSERT_EQ(10, ini.poll(wc, 10));
    EXPECT_EQ(1u, wc[0].wr_id);
    EXPECT_EQ(2u, wc[1].wr_id);
    for (int i = 0; i < 10; ++i) {
        EXPECT_EQ(DCX_WC_SUCCESS, wc[i].status);
        if (i >= 2) {
            EXPECT_EQ((uint64_t)(8 + i), wc[i].wr_id);
            EXPECT_EQ((uint64_t)(i - 2),
                      *(uint64_t *)(lbuf.data() + (2u << 20) + (i - 2) * 8));
        }
    }
    for (int i = 0; i < 50000; ++i) {
        ASSERT_EQ(0x11, lbuf[(1u << 20) + i]);
        ASSERT_EQ(0x22, sh->buf[i]);
    }
    EXPECT_TRUE(stop_children());
}

TEST_F(soft_xproc, two_destinations_in_order)
{
    start();
    /* the initiator also serves a DCT: loopback is a second destination */
    ASSERT_EQ(0, ini.make_target(0x77, DCX_ACCESS_REMOTE_WRITE));
    uint8_t myaddr[DCX_DEV_ADDR_MAX];
    size_t len = sizeof(myaddr);
    ASSERT_EQ(0, dcx_dev_port_addr(ini.dev, myaddr, &len));
    dcx_ah_t *self_ah;
    ASSERT_EQ(0, dcx_ah_create(ini.pd, myaddr, len, &self_ah));
    std::vector<uint8_t> mine(1 << 16);
    dcx_mr_t *mymr;
    ASSERT_EQ(0,
              ini.reg(mine.data(), mine.size(),
                      DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE, &mymr));
    fill(lbuf.data(), 1 << 16, 8);
    dcx_sge_t s = lsge(0, 1000);
    for (int i = 0; i < 20; ++i) {
        dcx_send_wr_t wr = make_wr(DCX_WR_RDMA_WRITE, i, &s, 1, ini, sh);
        wr.remote_addr += i * 1000;
        if (i % 2) {
            wr.dest.ah     = self_ah;
            wr.dest.dctn   = ini.dct->qp_num;
            wr.dest.dc_key = 0x77;
            wr.rkey        = mymr->rkey;
            wr.remote_addr = (uint64_t)(uintptr_t)mine.data() + i * 1000;
        }
        ASSERT_EQ(0, dcx_qp_post_send(ini.dci, &wr));
    }
    dcx_wc_t wc[20];
    ASSERT_EQ(20, ini.poll(wc, 20));
    for (int i = 0; i < 20; ++i) {
        EXPECT_EQ((uint64_t)i, wc[i].wr_id);
        EXPECT_EQ(DCX_WC_SUCCESS, wc[i].status);
        const uint8_t *dst = (i % 2) ? mine.data() + i * 1000 :
                                       sh->buf + i * 1000;
        EXPECT_EQ(0, memcmp(dst, lbuf.data(), 1000)) << i;
    }
    EXPECT_EQ(0, dcx_ah_destroy(self_ah));
    EXPECT_TRUE(stop_children());
}

/* More signaled completions than the CQ holds: the DCI goes to error with
 * one log line.  light_inline: inline writes that the light post copies
 * itself and completes at once (soft_req_post_direct). */
class soft_xproc_overrun :
    public soft_xproc,
    public ::testing::WithParamInterface<bool> {};

TEST_P(soft_xproc_overrun, cq_overrun_bad_flow)
{
    sh->tp.limits.direct = GetParam(); /* the initiator's copy */
    start();
    ini.close();
    ASSERT_EQ(0, ini.open(fabric.c_str(), &sh->tp.limits));
    ASSERT_EQ(0, ini.make_cq(2));
    ASSERT_EQ(0, ini.make_dci(16));
    ASSERT_EQ(0, ini.connect(sh->addr, sh->addr_len));
    ASSERT_EQ(0, ini.reg(lbuf.data(), 4096, DCX_ACCESS_LOCAL_WRITE, &lmr));
    dcx_sge_t s = lsge(0, 8);
    log_counter logs;
    for (int i = 0; i < 4; ++i) {
        dcx_send_wr_t wr = make_wr(DCX_WR_RDMA_WRITE, i, &s, 1, ini, sh);
        if (GetParam()) {
            wr.flags |= DCX_SEND_INLINE;
        }
        ASSERT_EQ(0, dcx_qp_post_send(ini.dci, &wr));
    }
    double end = now_s() + 10;
    while ((__atomic_load_n(&ini.dci->state, __ATOMIC_RELAXED) !=
            DCX_QPS_ERR) &&
           (now_s() < end)) {
        usleep(1000); /* the helper progresses while we do not poll */
    }
    EXPECT_EQ(DCX_QPS_ERR, ini.dci->state);
    EXPECT_EQ(1, logs.lines());
    EXPECT_TRUE(stop_children());
}

INSTANTIATE_TEST_SUITE_P(, soft_xproc_overrun, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &p) {
                             return p.param ? "light_inline" : "sge";
                         });

TEST_F(soft_xproc, large_write_read)
{
    start();
    const uint32_t size = 4u << 20;
    for (uint32_t i = 0; i < size; ++i) {
        lbuf[i] = (uint8_t)((i >> 12) ^ i);
    }
    dcx_sge_t s      = lsge(0, size);
    dcx_send_wr_t wr = make_wr(DCX_WR_RDMA_WRITE, 1, &s, 1, ini, sh);
    EXPECT_EQ(DCX_WC_SUCCESS, run(wr).status);
    EXPECT_EQ(0, memcmp(sh->buf, lbuf.data(), size));
    s           = lsge(size, size);
    wr          = make_wr(DCX_WR_RDMA_READ, 2, &s, 1, ini, sh);
    dcx_wc_t wc = run(wr);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(size, wc.byte_len);
    EXPECT_EQ(0, memcmp(lbuf.data() + size, lbuf.data(), size));

    /* refused at its first packet while the rest is still being sent */
    s  = lsge(0, size);
    wr = make_wr(DCX_WR_RDMA_WRITE, 3, &s, 1, ini, sh);
    wr.remote_addr += size;
    wr.rkey = sh->rkey_ro;
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, run(wr).status);
    EXPECT_TRUE(all_zero(sh->buf + size, size));
    wr      = make_wr(DCX_WR_RDMA_READ, 4, &s, 1, ini, sh);
    wr.rkey = 0;
    ASSERT_EQ(0, dcx_qp_recover(ini.dci));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, run(wr).status);
    /* the target resynchronises with the recovered DCI */
    ASSERT_EQ(0, dcx_qp_recover(ini.dci));
    wr = make_wr(DCX_WR_RDMA_WRITE, 5, &s, 1, ini, sh);
    wr.remote_addr += size;
    EXPECT_EQ(DCX_WC_SUCCESS, run(wr).status);
    EXPECT_EQ(0, memcmp(sh->buf + size, lbuf.data(), size));
    EXPECT_TRUE(stop_children());
}

TEST_F(soft_xproc, max_msg_size_bad_flow)
{
    sh->tp.limits.max_msg_size = 4096;
    start();
    EXPECT_EQ(4096u, dcx_dev_caps(ini.dev)->max_msg_size);
    dcx_sge_t s      = lsge(0, 4097);
    dcx_send_wr_t wr = make_wr(DCX_WR_RDMA_WRITE, 1, &s, 1, ini, sh);
    EXPECT_EQ(DCX_WC_LOC_LEN_ERR, run(wr).status);
    ASSERT_EQ(0, dcx_qp_recover(ini.dci));
    s  = lsge(0, 4096);
    wr = make_wr(DCX_WR_RDMA_WRITE, 2, &s, 1, ini, sh);
    EXPECT_EQ(DCX_WC_SUCCESS, run(wr).status);
    EXPECT_TRUE(stop_children());
}

TEST_F(soft, srq_post_bad_flow)
{
    node n;
    char buf[64];
    dcx_mr_t *mr;
    ASSERT_EQ(0, n.open(fabric.c_str()));
    ASSERT_EQ(0, n.reg(buf, sizeof(buf), DCX_ACCESS_LOCAL_WRITE, &mr));
    ASSERT_EQ(0, n.make_target(1, 0, 2));
    dcx_sge_t s[3];
    for (auto &x : s) {
        x = {(uint64_t)(uintptr_t)buf, 8, mr->lkey};
    }
    {
        log_counter logs;
        EXPECT_EQ(EINVAL, dcx_srq_post_recv(n.srq, 1, s, 3)); /* max_sge 2 */
        EXPECT_EQ(1, logs.lines());
    }
    EXPECT_EQ(0, dcx_srq_post_recv(n.srq, 1, s, 2));
    EXPECT_EQ(0, dcx_srq_post_recv(n.srq, 2, s, 1));
    EXPECT_EQ(ENOMEM, dcx_srq_post_recv(n.srq, 3, s, 1)); /* full */
    {
        log_counter logs;
        EXPECT_EQ(EBUSY, dcx_srq_destroy(n.srq)); /* DCT uses it */
        EXPECT_EQ(1, logs.lines());
    }
}

TEST_F(soft, many_sources_loopback)
{
    /* more (port, DCI) sources than the responder tracks at once */
    node n;
    std::vector<uint64_t> mem(2048);
    dcx_mr_t *mr;
    ASSERT_EQ(0, n.open(fabric.c_str()));
    ASSERT_EQ(0, n.make_cq(4096));
    ASSERT_EQ(0, n.reg(mem.data(), mem.size() * 8,
                       DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE |
                           DCX_ACCESS_REMOTE_ATOMIC,
                       &mr));
    ASSERT_EQ(0, n.make_target(5, DCX_ACCESS_REMOTE_WRITE |
                                      DCX_ACCESS_REMOTE_ATOMIC));
    uint8_t addr[DCX_DEV_ADDR_MAX];
    size_t len = sizeof(addr);
    ASSERT_EQ(0, dcx_dev_port_addr(n.dev, addr, &len));
    ASSERT_EQ(0, n.connect(addr, len));
    std::vector<dcx_qp_t *> dcis(1100);
    dcx_qp_attr_t qattr;
    memset(&qattr, 0, sizeof(qattr));
    qattr.type        = DCX_QPT_DCI;
    qattr.send_cq     = n.cq;
    qattr.max_send_wr = 2;
    for (size_t i = 0; i < dcis.size(); ++i) {
        ASSERT_EQ(0, dcx_qp_create(n.pd, &qattr, &dcis[i]));
    }
    for (int round = 0; round < 2; ++round) {
        for (size_t i = 0; i < dcis.size(); ++i) {
            dcx_sge_t s = {(uint64_t)(uintptr_t)&mem[1100 + (i % 900)], 8,
                           mr->lkey};
            dcx_send_wr_t wr;
            memset(&wr, 0, sizeof(wr));
            wr.wr_id       = i;
            wr.opcode      = DCX_WR_ATOMIC_FADD;
            wr.flags       = DCX_SEND_SIGNALED;
            wr.num_sge     = 1;
            wr.sg_list     = &s;
            wr.dest.ah     = n.ah;
            wr.dest.dctn   = n.dct->qp_num;
            wr.dest.dc_key = 5;
            wr.rkey        = mr->rkey;
            wr.remote_addr = (uint64_t)(uintptr_t)&mem[i % 64];
            wr.compare_add = 1;
            ASSERT_EQ(0, dcx_qp_post_send(dcis[i], &wr));
            dcx_wc_t wc;
            ASSERT_EQ(1, n.poll(&wc, 1));
            ASSERT_EQ(DCX_WC_SUCCESS, wc.status) << i;
        }
    }
    uint64_t sum = 0;
    for (int i = 0; i < 64; ++i) {
        sum += mem[i];
    }
    EXPECT_EQ(2 * dcis.size(), sum);
    for (dcx_qp_t *qp : dcis) {
        EXPECT_EQ(0, dcx_qp_destroy(qp));
    }
}

TEST_F(soft_xproc, verbs_transport_params)
{
    start();
    ini.close();
    ASSERT_EQ(0, ini.open(fabric.c_str(), &sh->tp.limits));
    ASSERT_EQ(0, ini.make_cq());
    dcx_qp_attr_t qattr;
    memset(&qattr, 0, sizeof(qattr));
    qattr.type        = DCX_QPT_DCI;
    qattr.send_cq     = ini.cq;
    qattr.max_send_wr = 8;
    qattr.timeout     = 14; /* 67 ms */
    qattr.retry_cnt   = 1;
    ASSERT_EQ(0, dcx_qp_create(ini.pd, &qattr, &ini.dci));
    ASSERT_EQ(0, ini.connect(sh->addr, sh->addr_len));
    ASSERT_EQ(0, ini.reg(lbuf.data(), 4096, DCX_ACCESS_LOCAL_WRITE, &lmr));
    dcx_sge_t s      = lsge(0, 8);
    dcx_send_wr_t wr = make_wr(DCX_WR_RDMA_WRITE, 1, &s, 1, ini, sh);
    wr.dest.dctn ^= 0x40;
    double t0 = now_s();
    EXPECT_EQ(DCX_WC_RETRY_EXC_ERR, run(wr).status);
    EXPECT_LT(now_s() - t0, 5.0);
    dcx_soft_stats_t st;
    ASSERT_EQ(0, dcx_soft_stats(ini.dev, &st));
    EXPECT_EQ(1u, st.retransmits); /* retry_cnt from the QP, not limits */
    EXPECT_TRUE(stop_children());
}

TEST_F(soft_xproc, write_imm_rnr)
{
    sh->tp.nrecv = 0;
    start();
    fill(lbuf.data(), 500, 11);
    dcx_sge_t s      = lsge(0, 500);
    dcx_send_wr_t wr = make_wr(DCX_WR_RDMA_WRITE_IMM, 1, &s, 1, ini, sh);
    wr.imm           = 77;
    ASSERT_EQ(0, dcx_qp_post_send(ini.dci, &wr));
    dcx_wc_t wc;
    EXPECT_EQ(0, ini.poll(&wc, 1, 0.1));
    EXPECT_TRUE(all_zero(sh->buf, 500)); /* nothing written before RNR */
    __atomic_store_n(&sh->post_more, 1, __ATOMIC_RELEASE);
    ASSERT_EQ(1, ini.poll(&wc, 1, 20.0));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    ASSERT_TRUE(wait_recv(1));
    EXPECT_EQ(DCX_WC_RECV_RDMA_WITH_IMM, sh->wc[0].opcode);
    EXPECT_EQ(77u, sh->wc[0].imm);
    EXPECT_EQ(0, memcmp(sh->buf, lbuf.data(), 500));
    EXPECT_TRUE(stop_children());
}

TEST_F(soft_xproc, recv_bad_lkey_bad_flow)
{
    sh->tp.nrecv         = 1;
    sh->tp.recv_lkey_xor = 0x4400;
    start();
    dcx_sge_t s      = lsge(0, 16);
    dcx_send_wr_t wr = make_wr(DCX_WR_SEND, 1, &s, 1, ini, sh);
    EXPECT_EQ(DCX_WC_REM_OP_ERR, run(wr).status);
    ASSERT_TRUE(wait_recv(1));
    EXPECT_EQ(DCX_WC_LOC_PROT_ERR, sh->wc[0].status);
    EXPECT_EQ(0u, sh->wc[0].wr_id);
    EXPECT_TRUE(stop_children());
}

/* Registration pins memory the way the kernel does: unmapped and PROT_NONE
 * memory fail with EFAULT, read-only memory fails when any write or atomic
 * access is asked for; each failure logs one line. */
TEST_F(soft, mr_reg_checks_the_mapping_bad_flow)
{
    node n;
    ASSERT_EQ(0, n.open(fabric.c_str()));
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *m      = (uint8_t *)mmap(nullptr, 4 * pg, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, (void *)m);
    /* page 0 rw, page 1 read-only, page 2 PROT_NONE, page 3 unmapped */
    ASSERT_EQ(0, mprotect(m + pg, pg, PROT_READ));
    ASSERT_EQ(0, mprotect(m + 2 * pg, pg, PROT_NONE));
    ASSERT_EQ(0, munmap(m + 3 * pg, pg));
    const uint32_t lw = DCX_ACCESS_LOCAL_WRITE;
    struct {
        size_t off, len;
        uint32_t access;
    } bad[] = {
        {3 * pg, pg, DCX_ACCESS_REMOTE_READ}, /* unmapped */
        {3 * pg + 8, 8, 0},                   /* unmapped */
        {2 * pg, pg, DCX_ACCESS_REMOTE_READ}, /* PROT_NONE */
        {pg, pg, lw},                         /* read-only */
        {pg, 64, lw | DCX_ACCESS_REMOTE_WRITE},
        {pg + 8, 8, lw | DCX_ACCESS_REMOTE_ATOMIC},
        {0, 2 * pg, lw},                      /* rw then ro */
        {0, 3 * pg, DCX_ACCESS_REMOTE_READ},  /* reaches none */
        {pg, 3 * pg, DCX_ACCESS_REMOTE_READ}, /* reaches a hole */
    };
    for (const auto &b : bad) {
        log_counter logs;
        dcx_mr_t *mr = nullptr;
        EXPECT_EQ(EFAULT, dcx_mr_reg(n.pd, m + b.off, b.len, b.access, &mr))
            << b.off << "/" << b.len << " access 0x" << std::hex << b.access;
        EXPECT_EQ(1, logs.lines());
    }
    /* good flows: read-only memory for remote reads, and rw memory made of
     * several mappings */
    dcx_mr_t *ro, *rw, *both;
    EXPECT_EQ(0, n.reg(m + pg, pg, DCX_ACCESS_REMOTE_READ, &ro));
    EXPECT_EQ(0, n.reg(m, pg,
                       lw | DCX_ACCESS_REMOTE_WRITE | DCX_ACCESS_REMOTE_ATOMIC,
                       &rw));
    EXPECT_EQ(0, n.reg(m, 2 * pg, DCX_ACCESS_REMOTE_READ, &both));
    n.close();
    munmap(m, 3 * pg);

    uint8_t *two = (uint8_t *)mmap(nullptr, 2 * pg, PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, (void *)two);
    /* split into two mappings with the same rights */
    ASSERT_EQ(0, mprotect(two + pg, pg, PROT_READ | PROT_WRITE | PROT_EXEC));
    node k;
    ASSERT_EQ(0, k.open(fabric.c_str()));
    EXPECT_EQ(0, k.reg(two, 2 * pg, lw | DCX_ACCESS_REMOTE_WRITE, nullptr));
    k.close();
    munmap(two, 2 * pg);
}

/* Read-only memory registered for remote reads serves RDMA READs. */
TEST_F(soft, mr_read_only_memory_serves_reads)
{
    node n;
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *m      = (uint8_t *)mmap(nullptr, pg, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, (void *)m);
    for (size_t i = 0; i < pg; ++i) {
        m[i] = (uint8_t)(i * 7 + 1);
    }
    ASSERT_EQ(0, mprotect(m, pg, PROT_READ));
    std::vector<uint8_t> dst(pg);
    dcx_mr_t *ro, *lmr;
    ASSERT_EQ(0, n.open(fabric.c_str()));
    ASSERT_EQ(0, n.make_cq(64));
    ASSERT_EQ(0, n.reg(m, pg, DCX_ACCESS_REMOTE_READ, &ro));
    ASSERT_EQ(0, n.reg(dst.data(), pg, DCX_ACCESS_LOCAL_WRITE, &lmr));
    ASSERT_EQ(0, n.make_target(9, DCX_ACCESS_REMOTE_READ));
    ASSERT_EQ(0, n.make_dci());
    uint8_t addr[DCX_DEV_ADDR_MAX];
    size_t len = sizeof(addr);
    ASSERT_EQ(0, dcx_dev_port_addr(n.dev, addr, &len));
    ASSERT_EQ(0, n.connect(addr, len));
    dcx_sge_t s = {(uint64_t)(uintptr_t)dst.data(), (uint32_t)pg, lmr->lkey};
    dcx_send_wr_t wr;
    memset(&wr, 0, sizeof(wr));
    wr.opcode      = DCX_WR_RDMA_READ;
    wr.flags       = DCX_SEND_SIGNALED;
    wr.num_sge     = 1;
    wr.sg_list     = &s;
    wr.dest.ah     = n.ah;
    wr.dest.dctn   = n.dct->qp_num;
    wr.dest.dc_key = 9;
    wr.rkey        = ro->rkey;
    wr.remote_addr = (uint64_t)(uintptr_t)m;
    ASSERT_EQ(0, dcx_qp_post_send(n.dci, &wr));
    dcx_wc_t wc;
    ASSERT_EQ(1, n.poll(&wc, 1));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(0, memcmp(dst.data(), m, pg));
    n.close();
    munmap(m, pg);
}
