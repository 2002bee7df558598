/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulation's completion queues and shared receive queues (creation
 * and their own rules; completions flowing through them are exercised by
 * the QP tests).
 */
#include "emu_fixture.h"

#include <errno.h>
#include <string.h>

#include <vector>

static struct ibv_cq_ex *create_cq_ex(struct ibv_context *ctx, uint32_t cqe,
                                      uint64_t wc_flags)
{
    struct ibv_cq_init_attr_ex attr;

    memset(&attr, 0, sizeof(attr));
    attr.cqe      = cqe;
    attr.wc_flags = wc_flags;
    return ibv_create_cq_ex(ctx, &attr);
}

TEST_F(emu_test, cq_create)
{
    struct ibv_poll_cq_attr pattr = {0};
    struct ibv_cq_ex *cqx;
    struct ibv_cq *cq;
    struct ibv_wc wc;

    cqx = create_cq_ex(m_ctx, 100,
                       IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM |
                           IBV_WC_EX_WITH_IMM);
    ASSERT_NE(nullptr, cqx) << strerror(errno);
    cq = ibv_cq_ex_to_cq(cqx);
    EXPECT_GE(cq->cqe, 100);
    EXPECT_EQ(m_ctx, cq->context);
    /* readers exist for what was asked, and only for that */
    EXPECT_NE(nullptr, cqx->read_opcode);
    EXPECT_NE(nullptr, cqx->read_vendor_err);
    EXPECT_NE(nullptr, cqx->read_wc_flags);
    EXPECT_NE(nullptr, cqx->read_byte_len);
    EXPECT_NE(nullptr, cqx->read_qp_num);
    EXPECT_NE(nullptr, cqx->read_imm_data);
    EXPECT_EQ(nullptr, cqx->read_src_qp);
    EXPECT_EQ(nullptr, cqx->read_slid);
    EXPECT_EQ(nullptr, cqx->read_completion_ts);
    /* empty: ENOENT and no end_poll; both APIs on one object */
    EXPECT_EQ(ENOENT, ibv_start_poll(cqx, &pattr));
    EXPECT_EQ(0, ibv_poll_cq(cq, 1, &wc));
    EXPECT_EQ(0, ibv_destroy_cq(cq));

    cq = ibv_create_cq(m_ctx, 16, nullptr, nullptr, 0);
    ASSERT_NE(nullptr, cq) << strerror(errno);
    EXPECT_EQ(0, ibv_poll_cq(cq, 1, &wc));
    EXPECT_EQ(0, ibv_destroy_cq(cq));
}

TEST_F(emu_test, cq_create_bad_flow)
{
    struct ibv_cq_init_attr_ex attr;
    struct ibv_poll_cq_attr pattr = {1};
    struct ibv_cq_ex *cqx;
    static const struct {
        uint32_t cqe;
        uint64_t wc_flags;
        uint32_t comp_mask;
        uint32_t flags;
        uint32_t vector;
        int err;
        const char *why;
    } cases[] = {
        {0, 0, 0, 0, 0, EINVAL, "no entries"},
        {1u << 30, 0, 0, 0, 0, EINVAL, "more entries than max_cqe"},
        {16, 0, 1u << 5, 0, 0, EINVAL, "unknown comp_mask"},
        {16, 0, IBV_CQ_INIT_ATTR_MASK_FLAGS, 1u << 4, 0, EINVAL,
         "unknown flags"},
        {16, 0, 0, 0, 1, EINVAL, "completion vector beyond the device's"},
        {16, IBV_WC_EX_WITH_TM_INFO, 0, 0, 0, EOPNOTSUPP, "tag-matching info"},
        {16, IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, 0, 0, 0, EOPNOTSUPP,
         "timestamps"},
    };

    for (const auto &c : cases) {
        log_capture log;

        memset(&attr, 0, sizeof(attr));
        attr.cqe         = c.cqe;
        attr.wc_flags    = c.wc_flags;
        attr.comp_mask   = c.comp_mask;
        attr.flags       = c.flags;
        attr.comp_vector = c.vector;
        errno            = 0;
        EXPECT_EQ(nullptr, ibv_create_cq_ex(m_ctx, &attr)) << c.why;
        EXPECT_EQ(c.err, errno) << c.why;
        EXPECT_EQ(1u, log.count()) << c.why;
    }

    cqx = create_cq_ex(m_ctx, 4, 0);
    ASSERT_NE(nullptr, cqx);
    {
        log_capture log;
        EXPECT_EQ(EINVAL, ibv_start_poll(cqx, &pattr));
        EXPECT_EQ(1u, log.count());
    }
    EXPECT_EQ(0, ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)));
}

TEST_F(emu_test, srq)
{
    struct ibv_srq_init_attr attr;
    struct ibv_recv_wr wr, *bad = nullptr;
    struct ibv_srq_attr q;
    struct ibv_srq *srq;
    struct ibv_sge sge;
    std::vector<char> buf(4096);
    struct ibv_mr *mr;

    memset(&attr, 0, sizeof(attr));
    attr.attr.max_wr  = 8;
    attr.attr.max_sge = 1;
    srq               = ibv_create_srq(m_pd, &attr);
    ASSERT_NE(nullptr, srq) << strerror(errno);
    EXPECT_GE(attr.attr.max_wr, 8u);
    EXPECT_GE(attr.attr.max_sge, 1u);
    ASSERT_EQ(0, ibv_query_srq(srq, &q));
    EXPECT_EQ(attr.attr.max_wr, q.max_wr);

    mr = ibv_reg_mr(m_pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(nullptr, mr);
    sge.addr   = (uintptr_t)buf.data();
    sge.length = 256;
    sge.lkey   = mr->lkey;
    memset(&wr, 0, sizeof(wr));
    wr.sg_list = &sge;
    wr.num_sge = 1;
    for (unsigned i = 0; i < attr.attr.max_wr; ++i) {
        wr.wr_id = i;
        ASSERT_EQ(0, ibv_post_srq_recv(srq, &wr, &bad)) << i;
    }
    /* full: ENOMEM, bad_wr names the refused one */
    EXPECT_EQ(ENOMEM, ibv_post_srq_recv(srq, &wr, &bad));
    EXPECT_EQ(&wr, bad);
    EXPECT_EQ(0, ibv_destroy_srq(srq));
    EXPECT_EQ(0, ibv_dereg_mr(mr));
}

TEST_F(emu_test, srq_bad_flow)
{
    struct ibv_srq_init_attr attr;
    struct ibv_recv_wr wr[2], *bad = nullptr;
    struct ibv_sge sge[2];
    struct ibv_srq *srq;

    memset(&attr, 0, sizeof(attr));
    attr.attr.max_wr  = 4;
    attr.attr.max_sge = 1000;
    {
        log_capture log;
        errno = 0;
        EXPECT_EQ(nullptr, ibv_create_srq(m_pd, &attr));
        EXPECT_EQ(EINVAL, errno);
        EXPECT_EQ(1u, log.count());
    }
    attr.attr.max_sge = 1;
    attr.attr.max_wr  = 0;
    /* no receive asked for: libmlx5 makes the smallest queue (rdma-core's
     * own tests create such SRQs) */
    srq               = ibv_create_srq(m_pd, &attr);
    ASSERT_NE(nullptr, srq);
    EXPECT_LE(1u, attr.attr.max_wr);
    EXPECT_EQ(0, ibv_destroy_srq(srq));
    attr.attr.max_wr = 4;
    srq              = ibv_create_srq(m_pd, &attr);
    ASSERT_NE(nullptr, srq);

    /* the second WR of a chain has too many sge: the first is posted */
    memset(wr, 0, sizeof(wr));
    memset(sge, 0, sizeof(sge));
    wr[0].next    = &wr[1];
    wr[0].num_sge = 0;
    wr[1].sg_list = sge;
    wr[1].num_sge = 2;
    {
        log_capture log;
        EXPECT_EQ(EINVAL, ibv_post_srq_recv(srq, &wr[0], &bad));
        EXPECT_EQ(&wr[1], bad);
        EXPECT_EQ(1u, log.count());
    }
    {
        /* the PD and the SRQ are in use */
        log_capture log;
        EXPECT_EQ(EBUSY, ibv_dealloc_pd(m_pd));
        EXPECT_EQ(1u, log.count());
    }
    EXPECT_EQ(0, ibv_destroy_srq(srq));
}
