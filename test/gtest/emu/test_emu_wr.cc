/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulation's work-request rules (ibv_wr_* on a DCI) and the errors
 * the fabric reports: DC key mismatch, remote access, RNR, an absent LID,
 * flush after an error, RESET discarding unpolled completions, recovery.
 */
#include "emu_qp_fixture.h"

#include <errno.h>
#include <string.h>

/* A batch refused at ibv_wr_complete: errno, one line, nothing posted */
static void expect_batch_refused(struct ibv_qp *dci, int err, const char *why,
                                 void (*build)(struct ibv_qp_ex *,
                                               struct mlx5dv_qp_ex *, void *),
                                 void *arg)
{
    struct ibv_qp_ex *qpx   = ibv_qp_to_qp_ex(dci);
    struct mlx5dv_qp_ex *dv = mlx5dv_qp_ex_from_ibv_qp_ex(qpx);
    log_capture log;

    ibv_wr_start(qpx);
    qpx->wr_id    = 99;
    qpx->wr_flags = IBV_SEND_SIGNALED;
    build(qpx, dv, arg);
    EXPECT_EQ(err, ibv_wr_complete(qpx)) << why;
    EXPECT_EQ(1u, log.count()) << why;
}

struct wr_args {
    struct ibv_ah *ah;
    uint32_t dctn;
    uint32_t lkey;
    char *buf;
    uint32_t rkey;
};

TEST_F(emu_qp_test, wr_rules_bad_flow)
{
    struct ibv_qp *dci = make_dci();
    wr_args a;
    emu_wc wc;

    ASSERT_NE(nullptr, dci);
    post_recvs(2);
    a = {m_ah, m_dct->qp_num, m_mr->lkey, m_buf.data(), m_mr->rkey};

    expect_batch_refused(
        dci, EINVAL, "no dc address",
        [](struct ibv_qp_ex *q, struct mlx5dv_qp_ex *dv, void *p) {
            wr_args *a = (wr_args *)p;
            ibv_wr_send(q);
            ibv_wr_set_sge(q, a->lkey, (uintptr_t)a->buf, 4);
        },
        &a);
    expect_batch_refused(
        dci, EINVAL, "no data setter",
        [](struct ibv_qp_ex *q, struct mlx5dv_qp_ex *dv, void *p) {
            wr_args *a = (wr_args *)p;
            ibv_wr_send(q);
            mlx5dv_wr_set_dc_addr(dv, a->ah, a->dctn, EMU_DCT_KEY);
        },
        &a);
    expect_batch_refused(
        dci, EINVAL, "two data setters",
        [](struct ibv_qp_ex *q, struct mlx5dv_qp_ex *dv, void *p) {
            wr_args *a = (wr_args *)p;
            ibv_wr_send(q);
            ibv_wr_set_sge(q, a->lkey, (uintptr_t)a->buf, 4);
            ibv_wr_set_sge(q, a->lkey, (uintptr_t)a->buf, 4);
            mlx5dv_wr_set_dc_addr(dv, a->ah, a->dctn, EMU_DCT_KEY);
        },
        &a);
    expect_batch_refused(
        dci, EINVAL, "setter without builder",
        [](struct ibv_qp_ex *q, struct mlx5dv_qp_ex *dv, void *p) {
            wr_args *a = (wr_args *)p;
            ibv_wr_set_sge(q, a->lkey, (uintptr_t)a->buf, 4);
        },
        &a);
    expect_batch_refused(
        dci, ENOMEM, "inline beyond max_inline_data",
        [](struct ibv_qp_ex *q, struct mlx5dv_qp_ex *dv, void *p) {
            wr_args *a = (wr_args *)p;
            ibv_wr_send(q);
            mlx5dv_wr_set_dc_addr(dv, a->ah, a->dctn, EMU_DCT_KEY);
            ibv_wr_set_inline_data(q, a->buf, 4096);
        },
        &a);
    expect_batch_refused(
        dci, ENOMEM, "more sge than max_send_sge",
        [](struct ibv_qp_ex *q, struct mlx5dv_qp_ex *dv, void *p) {
            wr_args *a = (wr_args *)p;
            struct ibv_sge sg[3];
            for (auto &s : sg) {
                s = {(uintptr_t)a->buf, 4, a->lkey};
            }
            ibv_wr_send(q);
            mlx5dv_wr_set_dc_addr(dv, a->ah, a->dctn, EMU_DCT_KEY);
            ibv_wr_set_sge_list(q, 3, sg);
        },
        &a);
    expect_batch_refused(
        dci, EINVAL, "inline data on a READ",
        [](struct ibv_qp_ex *q, struct mlx5dv_qp_ex *dv, void *p) {
            wr_args *a = (wr_args *)p;
            ibv_wr_rdma_read(q, a->rkey, (uintptr_t)a->buf);
            mlx5dv_wr_set_dc_addr(dv, a->ah, a->dctn, EMU_DCT_KEY);
            ibv_wr_set_inline_data(q, a->buf, 8);
        },
        &a);
    expect_batch_refused(
        dci, EINVAL, "atomic with a 4-byte result",
        [](struct ibv_qp_ex *q, struct mlx5dv_qp_ex *dv, void *p) {
            wr_args *a = (wr_args *)p;
            ibv_wr_atomic_fetch_add(q, a->rkey, (uintptr_t)a->buf, 1);
            mlx5dv_wr_set_dc_addr(dv, a->ah, a->dctn, EMU_DCT_KEY);
            ibv_wr_set_sge(q, a->lkey, (uintptr_t)a->buf + 64, 4);
        },
        &a);
    expect_batch_refused(
        dci, EOPNOTSUPP, "memory windows",
        [](struct ibv_qp_ex *q, struct mlx5dv_qp_ex *dv, void *p) {
            ibv_wr_bind_mw(q, nullptr, 0, nullptr);
        },
        &a);
    /* a good WR then a bad one: the whole batch is discarded */
    expect_batch_refused(
        dci, EINVAL, "good WR, then one without address",
        [](struct ibv_qp_ex *q, struct mlx5dv_qp_ex *dv, void *p) {
            wr_args *a = (wr_args *)p;
            ibv_wr_send(q);
            mlx5dv_wr_set_dc_addr(dv, a->ah, a->dctn, EMU_DCT_KEY);
            ibv_wr_set_sge(q, a->lkey, (uintptr_t)a->buf, 4);
            ibv_wr_send(q);
            ibv_wr_set_sge(q, a->lkey, (uintptr_t)a->buf, 4);
            ibv_wr_send(q);
        },
        &a);

    /* nothing of the above reached the wire: the next send is the first
     * completion on both sides */
    ASSERT_EQ(0, post(dci, 7, IBV_WR_SEND, m_buf.data(), 4, m_mr->lkey, 0, 0));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_EQ(7u, wc.wr_id);
    ASSERT_TRUE(poll_one(m_rx_cq, &wc));
    EXPECT_EQ(1000u, wc.wr_id);
}

TEST_F(emu_qp_test, wr_undeclared_op_bad_flow)
{
    struct ibv_qp_cap cap = {4, 0, 1, 0, 0};
    struct ibv_qp *dci    = create_dci(&cap, IBV_QP_EX_WITH_SEND);
    wr_args a;

    ASSERT_NE(nullptr, dci);
    ASSERT_EQ(0, connect_dci(dci));
    a = {m_ah, m_dct->qp_num, m_mr->lkey, m_buf.data(), m_mr->rkey};
    expect_batch_refused(
        dci, EINVAL, "RDMA write not in send_ops_flags",
        [](struct ibv_qp_ex *q, struct mlx5dv_qp_ex *dv, void *p) {
            wr_args *a = (wr_args *)p;
            ibv_wr_rdma_write(q, a->rkey, (uintptr_t)a->buf);
            mlx5dv_wr_set_dc_addr(dv, a->ah, a->dctn, EMU_DCT_KEY);
            ibv_wr_set_sge(q, a->lkey, (uintptr_t)a->buf, 4);
        },
        &a);
}

TEST_F(emu_qp_test, send_queue_full)
{
    struct ibv_qp_cap cap = {4, 0, 1, 0, 0};
    struct ibv_qp *dci    = create_dci(&cap);
    struct ibv_qp_ex *qpx;
    unsigned i;
    emu_wc wc;

    ASSERT_NE(nullptr, dci);
    ASSERT_EQ(0, connect_dci(dci));
    post_recvs(32);
    qpx = ibv_qp_to_qp_ex(dci);
    /* unsignalled WRs retire only with a later polled completion */
    for (i = 0; i < cap.max_send_wr; ++i) {
        ibv_wr_start(qpx);
        qpx->wr_id    = i;
        qpx->wr_flags = 0;
        ibv_wr_send(qpx);
        mlx5dv_wr_set_dc_addr(mlx5dv_qp_ex_from_ibv_qp_ex(qpx), m_ah,
                              m_dct->qp_num, EMU_DCT_KEY);
        ibv_wr_set_sge(qpx, m_mr->lkey, (uintptr_t)m_buf.data(), 4);
        ASSERT_EQ(0, ibv_wr_complete(qpx)) << i;
    }
    EXPECT_EQ(ENOMEM,
              post(dci, 100, IBV_WR_SEND, m_buf.data(), 4, m_mr->lkey, 0, 0));
    for (i = 0; i < cap.max_send_wr; ++i) {
        ASSERT_TRUE(poll_one(m_rx_cq, &wc)) << i;
    }
    /* still full: nothing was signalled, so nothing retired */
    EXPECT_EQ(ENOMEM,
              post(dci, 101, IBV_WR_SEND, m_buf.data(), 4, m_mr->lkey, 0, 0));
}

TEST_F(emu_qp_test, dc_key_mismatch_bad_flow)
{
    struct ibv_qp *dci = make_dci(8, 1, 7); /* ~1 ms timeout, 1 retry */
    struct ibv_qp_attr qa;
    struct ibv_qp_init_attr qi;
    emu_wc wc;

    ASSERT_NE(nullptr, dci);
    post_recvs(2);
    ASSERT_EQ(0, post(dci, 1, IBV_WR_SEND, m_buf.data(), 4, m_mr->lkey, 0, 0,
                      EMU_DCT_KEY + 1));
    /* the DCT drops it silently; the initiator times out */
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status);
    ASSERT_EQ(0, ibv_query_qp(dci, &qa, IBV_QP_STATE, &qi));
    EXPECT_EQ(IBV_QPS_ERR, qa.qp_state);
    /* posted in ERR: accepted, flushed */
    ASSERT_EQ(0, post(dci, 2, IBV_WR_SEND, m_buf.data(), 4, m_mr->lkey, 0, 0));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_EQ(2u, wc.wr_id);
    EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);

    /* recovery: ERR -> RESET -> INIT -> RTR -> RTS, same number */
    uint32_t qpn = dci->qp_num;
    memset(&qa, 0, sizeof(qa));
    qa.qp_state = IBV_QPS_RESET;
    ASSERT_EQ(0, ibv_modify_qp(dci, &qa, IBV_QP_STATE));
    ASSERT_EQ(0, connect_dci(dci));
    EXPECT_EQ(qpn, dci->qp_num);
    ASSERT_EQ(0, post(dci, 3, IBV_WR_SEND, m_buf.data(), 4, m_mr->lkey, 0, 0));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_EQ(3u, wc.wr_id);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    ASSERT_TRUE(poll_one(m_rx_cq, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(1000u, wc.wr_id); /* the mismatched send consumed nothing */
}

TEST_F(emu_qp_test, remote_access_bad_flow)
{
    struct ibv_qp *dci = make_dci();
    std::vector<char> other(4096);
    struct ibv_mr *ro;
    emu_wc wc;

    ASSERT_NE(nullptr, dci);
    ro = ibv_reg_mr(m_pd, other.data(), other.size(),
                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
    ASSERT_NE(nullptr, ro);
    /* the region allows no remote write */
    ASSERT_EQ(0, post(dci, 1, IBV_WR_RDMA_WRITE, m_buf.data(), 8, m_mr->lkey,
                      (uintptr_t)other.data(), ro->rkey));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
    EXPECT_EQ(0, ibv_dereg_mr(ro));

    /* a DCT that allows no remote write, a region that does */
    struct ibv_qp *dct  = make_dct(EMU_DCT_KEY, IBV_ACCESS_REMOTE_READ);
    struct ibv_qp *dci2 = make_dci();

    ASSERT_NE(nullptr, dct);
    ASSERT_NE(nullptr, dci2);
    ASSERT_EQ(0, post(dci2, 2, IBV_WR_RDMA_WRITE, m_buf.data(), 8, m_mr->lkey,
                      (uintptr_t)m_buf.data() + 4096, m_mr->rkey, EMU_DCT_KEY,
                      false, m_ah, dct->qp_num));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_EQ(2u, wc.wr_id);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
}

TEST_F(emu_qp_test, rnr_bad_flow)
{
    struct ibv_qp *dci = make_dci(14, 7, 0); /* no RNR retry */
    emu_wc wc;

    ASSERT_NE(nullptr, dci);
    /* no receive posted on the DCT's SRQ */
    ASSERT_EQ(0, post(dci, 1, IBV_WR_SEND, m_buf.data(), 4, m_mr->lkey, 0, 0));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_EQ(IBV_WC_RNR_RETRY_EXC_ERR, wc.status);
}

TEST_F(emu_qp_test, absent_lid_bad_flow)
{
    struct ibv_qp *dci = make_dci(8, 1, 7);
    struct ibv_ah *ah  = make_ah(0xbffe);
    emu_wc wc;

    ASSERT_NE(nullptr, dci);
    ASSERT_NE(nullptr, ah);
    ASSERT_EQ(0, post(dci, 1, IBV_WR_SEND, m_buf.data(), 4, m_mr->lkey, 0, 0,
                      EMU_DCT_KEY, false, ah));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status);
    EXPECT_EQ(0, ibv_destroy_ah(ah));
}

TEST_F(emu_qp_test, reset_discards_unpolled)
{
    struct ibv_qp *dci = make_dci();
    struct ibv_qp_attr qa;
    struct ibv_wc wc;
    emu_wc ewc;
    int n = 0;

    ASSERT_NE(nullptr, dci);
    post_recvs(8);
    for (uint64_t id = 1; id <= 3; ++id) {
        ASSERT_EQ(0, post(dci, id, IBV_WR_SEND, m_buf.data(), 4, m_mr->lkey, 0,
                          0));
    }
    /* take one, leave the others unpolled */
    ASSERT_TRUE(poll_one(m_tx_cq, &ewc));
    EXPECT_EQ(1u, ewc.wr_id);
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(poll_one(m_rx_cq, &ewc)) << i;
    }
    memset(&qa, 0, sizeof(qa));
    qa.qp_state = IBV_QPS_RESET;
    ASSERT_EQ(0, ibv_modify_qp(dci, &qa, IBV_QP_STATE));
    ASSERT_EQ(0, connect_dci(dci));
    ASSERT_EQ(0, post(dci, 4, IBV_WR_SEND, m_buf.data(), 4, m_mr->lkey, 0, 0));
    /* 2 and 3 are gone; 4 is the next one */
    ASSERT_TRUE(poll_one(m_tx_cq, &ewc));
    EXPECT_EQ(4u, ewc.wr_id);
    n = ibv_poll_cq(ibv_cq_ex_to_cq(m_tx_cq), 1, &wc);
    EXPECT_EQ(0, n);
}
