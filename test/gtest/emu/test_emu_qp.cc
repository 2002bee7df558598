/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulation's DC queue pairs: creation rules, the modify state machine
 * with the kernel's exact masks, and traffic from DCIs to a DCT of the
 * same port with the completions rdma-core reports.
 */
#include "emu_qp_fixture.h"

#include <errno.h>
#include <string.h>

namespace {

/* attr for a QP of type with 4 WRs of one sge each way on cq, the PD its
 * only creation attribute but for those comp_mask adds (SEND_OPS_FLAGS:
 * SEND) */
void small_qp_attr(struct ibv_qp_init_attr_ex *attr, enum ibv_qp_type type,
                   uint32_t comp_mask, struct ibv_pd *pd, struct ibv_cq *cq)
{
    memset(attr, 0, sizeof(*attr));
    attr->qp_type   = type;
    attr->comp_mask = IBV_QP_INIT_ATTR_PD | comp_mask;
    if (comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
        attr->send_ops_flags = IBV_QP_EX_WITH_SEND;
    }
    attr->pd               = pd;
    attr->send_cq          = cq;
    attr->recv_cq          = cq;
    attr->cap.max_send_wr  = 4;
    attr->cap.max_recv_wr  = 4;
    attr->cap.max_send_sge = 1;
    attr->cap.max_recv_sge = 1;
}

} // namespace

TEST_F(emu_qp_test, traffic)
{
    struct ibv_qp *dci = make_dci();
    char *buf          = m_buf.data();
    uint64_t *word     = (uint64_t *)(buf + 8192);
    uint64_t *fetched  = (uint64_t *)(buf + 8200);
    emu_wc wc;

    ASSERT_NE(nullptr, dci);
    ASSERT_NE(0u, m_dct->qp_num);
    post_recvs(3);

    /* SEND from a registered buffer */
    memcpy(buf, "hello", 6);
    ASSERT_EQ(0, post(dci, 1, IBV_WR_SEND, buf, 6, m_mr->lkey, 0, 0));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_SEND, wc.opcode);
    EXPECT_EQ(dci->qp_num, wc.qp_num);
    ASSERT_TRUE(poll_one(m_rx_cq, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_RECV, wc.opcode);
    EXPECT_EQ(1000u, wc.wr_id);
    EXPECT_EQ(6u, wc.byte_len);
    EXPECT_EQ(m_dct->qp_num, wc.qp_num);
    EXPECT_STREQ("hello", buf + 32768);

    /* SEND inline, the buffer reused at once */
    char tmp[8] = "inline";
    ASSERT_EQ(0, post(dci, 2, IBV_WR_SEND, tmp, 7, 0, 0, 0, EMU_DCT_KEY, true));
    memset(tmp, 'x', sizeof(tmp));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_EQ(2u, wc.wr_id);
    ASSERT_TRUE(poll_one(m_rx_cq, &wc));
    EXPECT_EQ(7u, wc.byte_len);
    EXPECT_STREQ("inline", buf + 32768 + 256);

    /* SEND with immediate: flagged on the responder */
    ASSERT_EQ(0, post(dci, 3, IBV_WR_SEND_WITH_IMM, buf, 1, m_mr->lkey, 0, 0));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    ASSERT_TRUE(poll_one(m_rx_cq, &wc));
    EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
    EXPECT_EQ(0xfeedu, wc.imm);

    /* RDMA WRITE and READ: no responder completion */
    memcpy(buf + 100, "written", 8);
    ASSERT_EQ(0, post(dci, 4, IBV_WR_RDMA_WRITE, buf + 100, 8, m_mr->lkey,
                      (uintptr_t)buf + 4096, m_mr->rkey));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_EQ(IBV_WC_RDMA_WRITE, wc.opcode);
    EXPECT_STREQ("written", buf + 4096);
    ASSERT_EQ(0, post(dci, 5, IBV_WR_RDMA_READ, buf + 200, 8, m_mr->lkey,
                      (uintptr_t)buf + 4096, m_mr->rkey));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_EQ(IBV_WC_RDMA_READ, wc.opcode);
    EXPECT_EQ(8u, wc.byte_len);
    EXPECT_STREQ("written", buf + 200);

    /* atomics: host-order target and result */
    *word = 100;
    ASSERT_EQ(0, post(dci, 6, IBV_WR_ATOMIC_FETCH_AND_ADD, fetched, 8,
                      m_mr->lkey, (uintptr_t)word, m_mr->rkey));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_FETCH_ADD, wc.opcode);
    EXPECT_EQ(100u, *fetched);
    EXPECT_EQ(105u, *word);
    ASSERT_EQ(0, post(dci, 7, IBV_WR_ATOMIC_CMP_AND_SWP, fetched, 8, m_mr->lkey,
                      (uintptr_t)word, m_mr->rkey));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_EQ(IBV_WC_COMP_SWAP, wc.opcode);
    EXPECT_EQ(105u, *fetched);
    EXPECT_EQ(7u, *word);
}

TEST_F(emu_qp_test, caps_as_libmlx5)
{
    struct ibv_qp_cap cap = {};
    struct ibv_qp_attr qa;
    struct ibv_qp_init_attr qi;
    struct ibv_qp *dci;

    /* every op: 48 bytes of atomic segments + 48 of DC address; 256
     * inline bytes make a 384-byte WQE, 16 of them a 8 KiB queue */
    cap.max_send_wr     = 16;
    cap.max_send_sge    = 1;
    cap.max_inline_data = 256;
    dci                 = create_dci(&cap);
    ASSERT_NE(nullptr, dci) << strerror(errno);
    EXPECT_EQ(284u, cap.max_inline_data);
    EXPECT_EQ(21u, cap.max_send_wr);
    EXPECT_EQ(1u, cap.max_send_sge);
    ASSERT_EQ(0, ibv_query_qp(dci, &qa, IBV_QP_CAP, &qi));
    EXPECT_EQ(284u, qi.cap.max_inline_data);
    EXPECT_EQ(IBV_QPS_RESET, qa.qp_state);

    /* sends only: no atomic segments, so more inline room */
    cap.max_send_wr     = 16;
    cap.max_inline_data = 256;
    dci                 = create_dci(&cap, IBV_QP_EX_WITH_SEND);
    ASSERT_NE(nullptr, dci) << strerror(errno);
    EXPECT_EQ(316u, cap.max_inline_data); /* 384 - 64 - 4 */
}

/* A WQE may take the device's 1024-byte descriptor (max_wqe_sz_sq of a
 * ConnectX-4 and later), though max_sge is derived from 512 bytes: an RC
 * QP with 512 bytes of inline data, as rdma-core's mkey tests make. */
TEST_F(emu_qp_test, wqe_of_1024_bytes)
{
    struct ibv_qp_init_attr_ex attr;
    struct ibv_device_attr dattr;
    struct ibv_qp_cap cap = {};
    struct ibv_qp *qp;

    ASSERT_EQ(0, ibv_query_device(m_ctx, &dattr));
    EXPECT_EQ(30, dattr.max_sge);
    small_qp_attr(&attr, IBV_QPT_RC, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, m_pd,
                  ibv_cq_ex_to_cq(m_tx_cq));
    attr.cap.max_inline_data = 512;
    qp                       = ibv_create_qp_ex(m_ctx, &attr);
    ASSERT_NE(nullptr, qp) << strerror(errno);
    /* 16 control + 4 + 512 inline: 576 bytes, 556 of them inline */
    EXPECT_EQ(556u, attr.cap.max_inline_data);
    EXPECT_EQ(0, ibv_destroy_qp(qp));
    /* 30 sge, as max_sge says, in a DCI's WQE with every operation: 96
     * bytes of overhead and 480 of data segments */
    cap.max_send_wr  = 4;
    cap.max_send_sge = (uint32_t)dattr.max_sge;
    EXPECT_NE(nullptr, create_dci(&cap)) << strerror(errno);
}

TEST_F(emu_qp_test, rc_inline_bad_flow)
{
    struct ibv_qp_init_attr_ex attr;

    small_qp_attr(&attr, IBV_QPT_RC, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, m_pd,
                  ibv_cq_ex_to_cq(m_tx_cq));
    for (uint32_t inl : {1008u, 900u}) {
        /* 1008: a WQE above the 1024-byte descriptor; 900: within it, but
         * more than the device carries inline.  Refused quietly, as
         * libmlx5 does: programs find the largest WQE by trying. */
        log_capture log;

        attr.cap.max_inline_data = inl;
        errno                    = 0;
        EXPECT_EQ(nullptr, ibv_create_qp_ex(m_ctx, &attr)) << inl;
        EXPECT_EQ(EINVAL, errno) << inl;
        EXPECT_EQ(0u, log.count()) << inl;
    }
}

TEST_F(emu_qp_test, create_bad_flow)
{
    struct mlx5dv_qp_init_attr dv;
    struct ibv_qp_init_attr_ex attr;
    struct ibv_qp_cap cap = {};

    auto dci_attr = [&]() {
        memset(&attr, 0, sizeof(attr));
        memset(&dv, 0, sizeof(dv));
        attr.qp_type   = IBV_QPT_DRIVER;
        attr.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
        attr.send_ops_flags     = IBV_QP_EX_WITH_SEND;
        attr.pd                 = m_pd;
        attr.send_cq            = ibv_cq_ex_to_cq(m_tx_cq);
        attr.recv_cq            = ibv_cq_ex_to_cq(m_tx_cq);
        attr.cap.max_send_wr    = 4;
        attr.cap.max_send_sge   = 1;
        dv.comp_mask            = MLX5DV_QP_INIT_ATTR_MASK_DC;
        dv.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCI;
    };
    auto refused = [&](int err, const char *why) {
        log_capture log;

        errno = 12345;
        EXPECT_EQ(nullptr, mlx5dv_create_qp(m_ctx, &attr, &dv)) << why;
        EXPECT_EQ(err, errno) << why;
        EXPECT_EQ(1u, log.count()) << why;
    };

    dci_attr();
    attr.comp_mask |= 1u << 20;
    refused(12345, "unknown comp_mask: NULL without errno, as libmlx5");
    dci_attr();
    attr.comp_mask = IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    refused(EINVAL, "no PD");
    dci_attr();
    attr.recv_cq = nullptr;
    refused(EINVAL, "no recv_cq");
    dci_attr();
    attr.send_ops_flags |= IBV_QP_EX_WITH_TSO;
    refused(EOPNOTSUPP, "TSO on a DCI");
    dci_attr();
    dv.comp_mask |= MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS;
    dv.send_ops_flags = MLX5DV_QP_EX_WITH_MR_LIST;
    refused(EOPNOTSUPP, "UMR ops on a DCI");
    dci_attr();
    dv.dc_init_attr.dc_type = (enum mlx5dv_dc_type)7;
    refused(EINVAL, "no such DC type");
    dci_attr();
    attr.qp_type = IBV_QPT_RC;
    refused(EINVAL, "DC attributes on RC");
    dci_attr();
    dv.comp_mask = 0;
    refused(EINVAL, "IBV_QPT_DRIVER without DC attributes");
    dci_attr();
    dv.comp_mask |= 1u << 9;
    refused(EINVAL, "unknown mlx5 comp_mask");
    dci_attr();
    attr.cap.max_inline_data = 4096;
    {
        /* refused quietly: libmlx5 says it at debug verbosity only, and a
         * program finds the device's largest WQE by trying */
        log_capture log;

        errno = 0;
        EXPECT_EQ(nullptr, mlx5dv_create_qp(m_ctx, &attr, &dv));
        EXPECT_EQ(EINVAL, errno);
        EXPECT_EQ(0u, log.count());
    }
    dci_attr();
    attr.qp_type = IBV_QPT_RAW_PACKET;
    dv.comp_mask = 0;
    refused(EOPNOTSUPP, "raw packet QPs are not modelled");

    /* DCT */
    dci_attr();
    dv.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCT;
    attr.srq                = m_srq;
    refused(EINVAL, "send ops on a DCT");
    attr.comp_mask = IBV_QP_INIT_ATTR_PD;
    attr.srq       = nullptr;
    refused(EINVAL, "a DCT without SRQ");

    (void)cap;
}

/* rdma-core's tests ask a UD QP, at random, to block the loopback of its
 * own multicast, as mlx5 allows: with no multicast modelled the flag
 * holds trivially and the QP is made; flags the emulation does not model,
 * or that one on another QP type, are refused with EOPNOTSUPP and a line */
TEST_F(emu_qp_test, create_flags)
{
    struct ibv_qp_init_attr_ex attr;
    struct ibv_qp *qp;

    small_qp_attr(&attr, IBV_QPT_UD, IBV_QP_INIT_ATTR_CREATE_FLAGS, m_pd,
                  ibv_cq_ex_to_cq(m_tx_cq));
    for (uint32_t flags : {0u, (uint32_t)IBV_QP_CREATE_BLOCK_SELF_MCAST_LB}) {
        attr.create_flags = flags;
        qp                = ibv_create_qp_ex(m_ctx, &attr);
        ASSERT_NE(nullptr, qp) << flags << ": " << strerror(errno);
        EXPECT_EQ(0, ibv_destroy_qp(qp));
    }

    for (int bad = 0; bad < 2; ++bad) {
        log_capture log;

        if (bad == 0) {
            attr.create_flags = IBV_QP_CREATE_SCATTER_FCS;
        } else {
            attr.qp_type      = IBV_QPT_RC;
            attr.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
        }
        errno = 0;
        EXPECT_EQ(nullptr, ibv_create_qp_ex(m_ctx, &attr)) << bad;
        EXPECT_EQ(EOPNOTSUPP, errno) << bad;
        EXPECT_EQ(1u, log.count()) << bad;
    }
}

TEST_F(emu_qp_test, qp_ex_only_with_send_ops)
{
    struct mlx5dv_qp_init_attr dv;
    struct ibv_qp_init_attr_ex attr;
    struct ibv_qp *dci = make_dci();
    struct ibv_qp *qp;

    ASSERT_NE(nullptr, dci);
    EXPECT_NE(nullptr, ibv_qp_to_qp_ex(dci));
    EXPECT_EQ(nullptr, ibv_qp_to_qp_ex(m_dct));

    memset(&attr, 0, sizeof(attr));
    memset(&dv, 0, sizeof(dv));
    attr.qp_type            = IBV_QPT_DRIVER;
    attr.comp_mask          = IBV_QP_INIT_ATTR_PD;
    attr.pd                 = m_pd;
    attr.send_cq            = ibv_cq_ex_to_cq(m_tx_cq);
    attr.recv_cq            = ibv_cq_ex_to_cq(m_tx_cq);
    attr.cap.max_send_wr    = 4;
    attr.cap.max_send_sge   = 1;
    dv.comp_mask            = MLX5DV_QP_INIT_ATTR_MASK_DC;
    dv.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCI;
    qp                      = mlx5dv_create_qp(m_ctx, &attr, &dv);
    ASSERT_NE(nullptr, qp);
    m_qps.push_back(qp);
    EXPECT_EQ(nullptr, ibv_qp_to_qp_ex(qp));
}

TEST_F(emu_qp_test, dct_number_from_rtr)
{
    struct ibv_qp_attr qa;
    struct ibv_qp *dct;

    dct = create_dct(0);
    ASSERT_NE(nullptr, dct);
    EXPECT_EQ(0u, dct->qp_num);
    memset(&qa, 0, sizeof(qa));
    qa.qp_state = IBV_QPS_INIT;
    qa.port_num = 1;
    ASSERT_EQ(0, ibv_modify_qp(dct, &qa,
                               IBV_QP_STATE | IBV_QP_ACCESS_FLAGS |
                                   IBV_QP_PKEY_INDEX | IBV_QP_PORT));
    EXPECT_EQ(IBV_QPS_INIT, dct->state);
    EXPECT_EQ(0u, dct->qp_num);
    qa.qp_state = IBV_QPS_RTR;
    qa.path_mtu = IBV_MTU_1024;
    ASSERT_EQ(0, ibv_modify_qp(dct, &qa,
                               IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER | IBV_QP_AV |
                                   IBV_QP_PATH_MTU));
    EXPECT_EQ(IBV_QPS_RTR, dct->state);
    EXPECT_NE(0u, dct->qp_num);
    EXPECT_NE(m_dct->qp_num, dct->qp_num);
}

/* Each bad modify: EINVAL, one line, state unchanged */
static void expect_modify_refused(struct ibv_qp *qp, struct ibv_qp_attr *qa,
                                  int mask, const char *why)
{
    enum ibv_qp_state before = qp->state;
    log_capture log;

    EXPECT_EQ(EINVAL, ibv_modify_qp(qp, qa, mask)) << why;
    EXPECT_EQ(1u, log.count()) << why;
    EXPECT_EQ(before, qp->state) << why;
}

TEST_F(emu_qp_test, dci_modify_masks_bad_flow)
{
    struct ibv_qp_cap cap = {4, 0, 1, 0, 0};
    struct ibv_qp *dci    = create_dci(&cap);
    struct ibv_qp_attr qa;
    const int rts_mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                         IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC |
                         IBV_QP_SQ_PSN;

    ASSERT_NE(nullptr, dci);
    memset(&qa, 0, sizeof(qa));
    qa.port_num = 1;
    qa.qp_state = IBV_QPS_INIT;
    expect_modify_refused(dci, &qa,
                          IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                              IBV_QP_ACCESS_FLAGS,
                          "ACCESS_FLAGS on a DCI's RESET->INIT");
    expect_modify_refused(dci, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX,
                          "RESET->INIT without PORT");
    qa.port_num = 2;
    expect_modify_refused(dci, &qa,
                          IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT,
                          "port 2");
    qa.qp_state = IBV_QPS_RTR;
    qa.port_num = 1;
    expect_modify_refused(dci, &qa, IBV_QP_STATE | IBV_QP_PATH_MTU,
                          "RESET->RTR");
    ASSERT_EQ(0, connect_dci(dci, IBV_QPS_INIT));
    qa.path_mtu = IBV_MTU_4096;
    expect_modify_refused(dci, &qa,
                          IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN,
                          "DEST_QPN on a DCI");
    ASSERT_EQ(0, ibv_modify_qp(dci, &qa, IBV_QP_STATE | IBV_QP_PATH_MTU));
    qa.qp_state = IBV_QPS_RTS;
    qa.timeout  = 14;
    expect_modify_refused(dci, &qa, rts_mask & ~IBV_QP_SQ_PSN,
                          "RTR->RTS without SQ_PSN");
    expect_modify_refused(dci, &qa, rts_mask | IBV_QP_MAX_DEST_RD_ATOMIC,
                          "MAX_DEST_RD_ATOMIC on a DCI");
    qa.retry_cnt = 8;
    expect_modify_refused(dci, &qa, rts_mask, "retry_cnt 8");
    qa.retry_cnt = 7;
    ASSERT_EQ(0, ibv_modify_qp(dci, &qa, rts_mask));
    qa.qp_state = IBV_QPS_ERR;
    expect_modify_refused(dci, &qa, IBV_QP_STATE | IBV_QP_TIMEOUT,
                          "to ERR with more than the state");
    qa.qp_state = IBV_QPS_RESET;
    expect_modify_refused(dci, &qa, IBV_QP_STATE | IBV_QP_PORT,
                          "to RESET with more than the state");
    EXPECT_EQ(0, ibv_modify_qp(dci, &qa, IBV_QP_STATE));
    EXPECT_EQ(IBV_QPS_RESET, dci->state);
}

TEST_F(emu_qp_test, dct_modify_masks_bad_flow)
{
    struct ibv_qp_attr qa;

    /* m_dct is in RTR: nothing goes from there */
    memset(&qa, 0, sizeof(qa));
    qa.qp_state = IBV_QPS_RTS;
    expect_modify_refused(m_dct, &qa, IBV_QP_STATE, "DCT to RTS");
    qa.qp_state = IBV_QPS_ERR;
    expect_modify_refused(m_dct, &qa, IBV_QP_STATE, "DCT to ERR");
    qa.qp_state = IBV_QPS_RESET;
    expect_modify_refused(m_dct, &qa, IBV_QP_STATE, "DCT to RESET");

    /* a fresh DCT: INIT needs exactly its four bits, RTR its four */
    struct ibv_qp *dct;

    dct = create_dct(0);
    ASSERT_NE(nullptr, dct);
    qa.qp_state = IBV_QPS_INIT;
    qa.port_num = 1;
    expect_modify_refused(dct, &qa,
                          IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT,
                          "DCT INIT without ACCESS_FLAGS");
    ASSERT_EQ(0, ibv_modify_qp(dct, &qa,
                               IBV_QP_STATE | IBV_QP_ACCESS_FLAGS |
                                   IBV_QP_PKEY_INDEX | IBV_QP_PORT));
    qa.qp_state = IBV_QPS_RTR;
    qa.path_mtu = IBV_MTU_4096;
    expect_modify_refused(dct, &qa,
                          IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER | IBV_QP_AV |
                              IBV_QP_PATH_MTU | IBV_QP_TIMEOUT,
                          "DCT RTR with TIMEOUT");
    expect_modify_refused(dct, &qa, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU,
                          "DCT RTR without MIN_RNR_TIMER");
    EXPECT_EQ(0u, dct->qp_num);
}

TEST_F(emu_qp_test, post_outside_rts_bad_flow)
{
    struct ibv_qp_cap cap = {4, 0, 1, 0, 0};
    struct ibv_qp *dci    = create_dci(&cap);
    emu_wc wc;

    ASSERT_NE(nullptr, dci);
    post_recvs(1);
    ASSERT_EQ(0, connect_dci(dci, IBV_QPS_RTR));
    {
        log_capture log;
        EXPECT_EQ(EINVAL,
                  post(dci, 1, IBV_WR_SEND, m_buf.data(), 4, m_mr->lkey, 0, 0));
        EXPECT_EQ(1u, log.count());
    }
    /* the refused batch left nothing behind: the next WR is the first */
    struct ibv_qp_attr qa;
    memset(&qa, 0, sizeof(qa));
    qa.qp_state      = IBV_QPS_RTS;
    qa.timeout       = 14;
    qa.retry_cnt     = 7;
    qa.rnr_retry     = 7;
    qa.max_rd_atomic = 1;
    ASSERT_EQ(0, ibv_modify_qp(dci, &qa,
                               IBV_QP_STATE | IBV_QP_TIMEOUT |
                                   IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                   IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_SQ_PSN));
    EXPECT_EQ(0, post(dci, 2, IBV_WR_SEND, m_buf.data(), 4, m_mr->lkey, 0, 0));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_EQ(2u, wc.wr_id);
    ASSERT_TRUE(poll_one(m_rx_cq, &wc));
    EXPECT_EQ(1000u, wc.wr_id);
}
