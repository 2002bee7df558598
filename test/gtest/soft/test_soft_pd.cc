/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Protection domains: a local key is good only for the queues of its PD
 * (a sender's gather list, a receive buffer of the SRQ's PD), as on an
 * HCA; and dcx_soft_mr_rereg, which changes a registration in place.
 */
#include "soft_fixture.h"

#include <string.h>

using namespace soft_test;

namespace {

/* A signalled SEND from sge to n's own DCT (open_loopback) */
dcx_send_wr_t loop_send(const node &n, uint64_t key, const dcx_sge_t *sge)
{
    return n.loop_wr(DCX_WR_SEND, key, sge, 0, 0);
}

int post_send(node &n, uint64_t key, const dcx_sge_t *sge)
{
    dcx_send_wr_t w = loop_send(n, key, sge);

    return dcx_qp_post_send(n.dci, &w);
}

int post_one_recv(node &n, uint64_t wr_id, void *buf, uint32_t len,
                  uint32_t lkey)
{
    dcx_sge_t sge = {(uintptr_t)buf, len, lkey};

    return dcx_srq_post_recv(n.srq, wr_id, &sge, 1);
}

} // namespace

TEST_F(soft, lkey_of_another_pd_bad_flow)
{
    const uint64_t key = 0x9d9d0001ull;
    std::vector<uint8_t> buf(8192, 0), other(4096, 7);
    dcx_mr_t *mr, *mr2;
    dcx_pd_t *pd2;
    dcx_wc_t wc[2];
    node n;

    ASSERT_EQ(0, open_loopback(n, fabric, key, buf, &mr));
    ASSERT_EQ(0, dcx_pd_alloc(n.dev, &pd2));
    ASSERT_EQ(0, dcx_mr_reg(pd2, other.data(), other.size(),
                            DCX_ACCESS_LOCAL_WRITE, &mr2));

    /* good: both keys of the queues' PD */
    dcx_sge_t s = {(uintptr_t)buf.data(), 64, mr->lkey};
    ASSERT_EQ(0, post_one_recv(n, 1, buf.data() + 4096, 64, mr->lkey));
    ASSERT_EQ(0, post_send(n, key, &s));
    ASSERT_EQ(2, n.poll(wc, 2, 20.0));
    EXPECT_EQ(DCX_WC_SUCCESS, wc[0].status);
    EXPECT_EQ(DCX_WC_SUCCESS, wc[1].status);

    /* a gather list with a key of another PD: the sender's local
     * protection error */
    dcx_sge_t bad = {(uintptr_t)other.data(), 64, mr2->lkey};
    EXPECT_EQ(DCX_WC_LOC_PROT_ERR, n.run(loop_send(n, key, &bad)));

    /* a receive buffer of another PD than the SRQ's: the receiver's local
     * protection error, the sender's remote operation error */
    ASSERT_EQ(0, post_one_recv(n, 2, other.data(), 64, mr2->lkey));
    ASSERT_EQ(0, post_send(n, key, &s));
    ASSERT_EQ(2, n.poll(wc, 2, 20.0));
    for (const dcx_wc_t &w : wc) {
        if (w.opcode == DCX_WC_RECV) {
            EXPECT_EQ(DCX_WC_LOC_PROT_ERR, w.status);
            EXPECT_EQ(2u, w.wr_id);
        } else {
            EXPECT_EQ(DCX_WC_REM_OP_ERR, w.status);
        }
    }
    EXPECT_EQ(0, dcx_mr_dereg(mr2));
    EXPECT_EQ(0, dcx_pd_free(pd2));
}

/* dcx_soft_mr_rereg: the same keys, the new PD, range and access */
TEST_F(soft, mr_rereg)
{
    const uint64_t key = 0x9d9d0002ull;
    std::vector<uint8_t> buf(8192, 0), other(4096, 5);
    dcx_mr_t *mr, *mr2;
    dcx_pd_t *pd2;
    dcx_wc_t wc[2];
    node n;

    ASSERT_EQ(0, open_loopback(n, fabric, key, buf, &mr));
    ASSERT_EQ(0, dcx_pd_alloc(n.dev, &pd2));
    ASSERT_EQ(0, dcx_mr_reg(n.pd, other.data(), other.size(),
                            DCX_ACCESS_LOCAL_WRITE, &mr2));
    const uint32_t lkey = mr2->lkey, rkey = mr2->rkey;
    dcx_sge_t s = {(uintptr_t)other.data(), 64, lkey};

    /* to another PD and back */
    ASSERT_EQ(0, dcx_soft_mr_rereg(mr2, pd2, other.data(), other.size(),
                                   DCX_ACCESS_LOCAL_WRITE));
    EXPECT_EQ(lkey, mr2->lkey);
    EXPECT_EQ(rkey, mr2->rkey);
    EXPECT_EQ(pd2, mr2->pd);
    EXPECT_EQ(DCX_WC_LOC_PROT_ERR, n.run(loop_send(n, key, &s)));
    ASSERT_EQ(0, dcx_soft_mr_rereg(mr2, n.pd, other.data(), other.size(),
                                   DCX_ACCESS_LOCAL_WRITE));
    ASSERT_EQ(0, post_one_recv(n, 1, buf.data(), 64, mr->lkey));
    EXPECT_EQ(DCX_WC_SUCCESS, n.run(loop_send(n, key, &s)));
    ASSERT_EQ(1, n.poll(wc, 1, 20.0));
    EXPECT_EQ(DCX_WC_SUCCESS, wc[0].status);
    EXPECT_EQ(0, memcmp(buf.data(), other.data(), 64));

    /* a new range: the old one is not the key's any more */
    ASSERT_EQ(0, dcx_soft_mr_rereg(mr2, n.pd, other.data() + 2048, 2048,
                                   DCX_ACCESS_LOCAL_WRITE));
    EXPECT_EQ(other.data() + 2048, mr2->addr);
    EXPECT_EQ(2048u, mr2->length);
    EXPECT_EQ(DCX_WC_LOC_PROT_ERR, n.run(loop_send(n, key, &s)));
    s.addr = (uintptr_t)other.data() + 2048;
    ASSERT_EQ(0, post_one_recv(n, 2, buf.data() + 64, 64, mr->lkey));
    EXPECT_EQ(DCX_WC_SUCCESS, n.run(loop_send(n, key, &s)));
    ASSERT_EQ(1, n.poll(wc, 1, 20.0));
    EXPECT_EQ(DCX_WC_SUCCESS, wc[0].status);

    /* access: a receive buffer without local write is refused */
    ASSERT_EQ(0, dcx_soft_mr_rereg(mr, n.pd, buf.data(), buf.size(), 0));
    ASSERT_EQ(0, post_one_recv(n, 3, buf.data(), 64, mr->lkey));
    ASSERT_EQ(0, post_send(n, key, &s));
    ASSERT_EQ(2, n.poll(wc, 2, 20.0));
    EXPECT_NE(DCX_WC_SUCCESS, wc[0].status);
    EXPECT_NE(DCX_WC_SUCCESS, wc[1].status);
    EXPECT_EQ(0, dcx_mr_dereg(mr2));
    EXPECT_EQ(0, dcx_pd_free(pd2));
}

TEST_F(soft, mr_rereg_bad_flow)
{
    const uint64_t key = 0x9d9d0003ull;
    std::vector<uint8_t> buf(8192, 0);
    dcx_mr_t *mr;
    node n, m;

    ASSERT_EQ(0, open_loopback(n, fabric, key, buf, &mr));
    ASSERT_EQ(0, m.open(fabric.c_str()));
    auto refused = [&](int err, dcx_pd_t *pd, void *addr, size_t len,
                       uint32_t access, const char *why) {
        log_counter log;

        EXPECT_EQ(err, dcx_soft_mr_rereg(mr, pd, addr, len, access)) << why;
        EXPECT_EQ(1, log.lines()) << why;
        EXPECT_EQ(n.pd, mr->pd) << why;
        EXPECT_EQ(buf.data(), mr->addr) << why;
        EXPECT_EQ(DCX_ACCESS_LOCAL_WRITE, mr->access) << why;
    };

    refused(EINVAL, m.pd, buf.data(), buf.size(), DCX_ACCESS_LOCAL_WRITE,
            "a PD of another device");
    refused(EINVAL, nullptr, buf.data(), buf.size(), DCX_ACCESS_LOCAL_WRITE,
            "no PD");
    refused(EINVAL, n.pd, buf.data(), buf.size(), DCX_ACCESS_REMOTE_WRITE,
            "remote write without local write");
    refused(EINVAL, n.pd, buf.data(), buf.size(), 1u << 12,
            "unknown access bits");
    refused(EFAULT, n.pd, (void *)8, 4096, DCX_ACCESS_LOCAL_WRITE,
            "memory not mapped");
}
