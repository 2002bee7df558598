/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DC objects for the emulation's QP tests (emu_qp_fixture.h).
 */
#include "emu_qp_fixture.h"

#include <errno.h>
#include <string.h>
#include <time.h>

/* The bound of a wait for a completion: a safety net, not a timing
 * assertion (the slowest expected completion, a transport timeout with
 * retries, takes well under a second). */
#define EMU_WAIT_NS (20ll * 1000 * 1000 * 1000)

static int64_t emu_now_ns()
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

void emu_qp_test::SetUp()
{
    struct ibv_port_attr port;

    emu_test::SetUp();
    if (HasFatalFailure()) {
        return;
    }
    if (m_with_channel) {
        m_channel = ibv_create_comp_channel(m_ctx);
        ASSERT_NE(nullptr, m_channel) << strerror(errno);
    }
    m_buf.assign(1 << 16, 0);
    m_mr = ibv_reg_mr(m_pd, m_buf.data(), m_buf.size(),
                      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                          IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
    ASSERT_NE(nullptr, m_mr);
    m_tx_cq = make_cq();
    m_rx_cq = make_cq();
    ASSERT_NE(nullptr, m_tx_cq);
    ASSERT_NE(nullptr, m_rx_cq);

    struct ibv_srq_init_attr sattr;
    memset(&sattr, 0, sizeof(sattr));
    sattr.attr.max_wr  = 64;
    sattr.attr.max_sge = 1;
    m_srq              = ibv_create_srq(m_pd, &sattr);
    ASSERT_NE(nullptr, m_srq);

    ASSERT_EQ(0, ibv_query_port(m_ctx, 1, &port));
    m_lid = port.lid;
    m_ah  = make_ah(m_lid);
    ASSERT_NE(nullptr, m_ah);
    m_dct = make_dct(EMU_DCT_KEY, IBV_ACCESS_REMOTE_WRITE |
                                      IBV_ACCESS_REMOTE_READ |
                                      IBV_ACCESS_REMOTE_ATOMIC);
    ASSERT_NE(nullptr, m_dct);
}

void emu_qp_test::TearDown()
{
    for (struct ibv_qp *qp : m_qps) {
        EXPECT_EQ(0, ibv_destroy_qp(qp));
    }
    if (m_ah != nullptr) {
        EXPECT_EQ(0, ibv_destroy_ah(m_ah));
    }
    if (m_srq != nullptr) {
        EXPECT_EQ(0, ibv_destroy_srq(m_srq));
    }
    for (struct ibv_cq_ex *cq : {m_tx_cq, m_rx_cq}) {
        if (cq != nullptr) {
            EXPECT_EQ(0, ibv_destroy_cq(ibv_cq_ex_to_cq(cq)));
        }
    }
    if (m_channel != nullptr) {
        EXPECT_EQ(0, ibv_destroy_comp_channel(m_channel));
    }
    if (m_mr != nullptr) {
        EXPECT_EQ(0, ibv_dereg_mr(m_mr));
    }
    emu_test::TearDown();
}

struct ibv_cq_ex *emu_qp_test::make_cq()
{
    struct ibv_cq_init_attr_ex attr;

    memset(&attr, 0, sizeof(attr));
    attr.cqe        = 256;
    attr.wc_flags   = IBV_WC_STANDARD_FLAGS;
    attr.channel    = m_channel;
    attr.cq_context = this;
    return ibv_create_cq_ex(m_ctx, &attr);
}

struct ibv_qp *emu_dct_create(struct ibv_context *ctx, struct ibv_pd *pd,
                              struct ibv_cq *cq, struct ibv_srq *srq,
                              uint64_t key, uint64_t create_flags)
{
    struct mlx5dv_qp_init_attr dv;
    struct ibv_qp_init_attr_ex attr;

    memset(&attr, 0, sizeof(attr));
    memset(&dv, 0, sizeof(dv));
    attr.qp_type                   = IBV_QPT_DRIVER;
    attr.comp_mask                 = IBV_QP_INIT_ATTR_PD;
    attr.pd                        = pd;
    attr.send_cq                   = cq;
    attr.recv_cq                   = cq;
    attr.srq                       = srq;
    dv.comp_mask                   = MLX5DV_QP_INIT_ATTR_MASK_DC;
    dv.dc_init_attr.dc_type        = MLX5DV_DCTYPE_DCT;
    dv.dc_init_attr.dct_access_key = key;
    if (create_flags != 0) {
        dv.comp_mask |= MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS;
        dv.create_flags = create_flags;
    }
    return mlx5dv_create_qp(ctx, &attr, &dv);
}

int emu_dct_connect(struct ibv_qp *qp, unsigned access)
{
    struct ibv_qp_attr qa;
    int ret;

    memset(&qa, 0, sizeof(qa));
    qa.qp_state        = IBV_QPS_INIT;
    qa.port_num        = 1;
    qa.qp_access_flags = access;
    ret                = ibv_modify_qp(qp, &qa,
                                       IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |
                                           IBV_QP_PORT);
    if (ret != 0) {
        return ret;
    }
    memset(&qa, 0, sizeof(qa));
    qa.qp_state         = IBV_QPS_RTR;
    qa.path_mtu         = IBV_MTU_4096;
    qa.min_rnr_timer    = 1;
    qa.ah_attr.port_num = 1;
    return ibv_modify_qp(qp, &qa,
                         IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER | IBV_QP_AV |
                             IBV_QP_PATH_MTU);
}

struct ibv_qp *emu_qp_test::create_dct(uint64_t key)
{
    struct ibv_qp *qp = emu_dct_create(m_ctx, m_pd, ibv_cq_ex_to_cq(m_rx_cq),
                                       m_srq, key);

    if (qp != nullptr) {
        m_qps.push_back(qp);
    }
    return qp;
}

struct ibv_qp *emu_qp_test::make_dct(uint64_t key, unsigned access)
{
    struct ibv_qp *qp = create_dct(key);

    if ((qp == nullptr) || (emu_dct_connect(qp, access) != 0)) {
        return nullptr;
    }
    return qp;
}

struct ibv_qp *emu_qp_test::create_dci(struct ibv_qp_cap *cap, uint64_t ops,
                                       const struct mlx5dv_dci_streams *streams)
{
    struct mlx5dv_qp_init_attr dv;
    struct ibv_qp_init_attr_ex attr;
    struct ibv_qp *qp;

    memset(&attr, 0, sizeof(attr));
    memset(&dv, 0, sizeof(dv));
    attr.qp_type        = IBV_QPT_DRIVER;
    attr.comp_mask      = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    attr.send_ops_flags = ops;
    attr.pd             = m_pd;
    attr.send_cq        = ibv_cq_ex_to_cq(m_tx_cq);
    attr.recv_cq        = ibv_cq_ex_to_cq(m_tx_cq);
    attr.cap            = *cap;
    dv.comp_mask        = MLX5DV_QP_INIT_ATTR_MASK_DC;
    dv.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCI;
    if (streams != nullptr) {
        dv.comp_mask |= MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS;
        dv.dc_init_attr.dci_streams = *streams;
    }
    qp = mlx5dv_create_qp(m_ctx, &attr, &dv);
    if (qp != nullptr) {
        *cap = attr.cap;
        m_qps.push_back(qp);
    }
    return qp;
}

int emu_qp_test::connect_dci(struct ibv_qp *qp, uint8_t to_state,
                             uint8_t timeout, uint8_t retry_cnt,
                             uint8_t rnr_retry)
{
    struct ibv_qp_attr qa;
    int ret;

    memset(&qa, 0, sizeof(qa));
    qa.qp_state = IBV_QPS_INIT;
    qa.port_num = 1;
    ret         = ibv_modify_qp(qp, &qa,
                                IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT);
    if ((ret != 0) || (to_state == IBV_QPS_INIT)) {
        return ret;
    }
    memset(&qa, 0, sizeof(qa));
    qa.qp_state = IBV_QPS_RTR;
    qa.path_mtu = IBV_MTU_4096;
    ret         = ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PATH_MTU);
    if ((ret != 0) || (to_state == IBV_QPS_RTR)) {
        return ret;
    }
    memset(&qa, 0, sizeof(qa));
    qa.qp_state      = IBV_QPS_RTS;
    qa.timeout       = timeout;
    qa.retry_cnt     = retry_cnt;
    qa.rnr_retry     = rnr_retry;
    qa.max_rd_atomic = 4;
    return ibv_modify_qp(qp, &qa,
                         IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                             IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC |
                             IBV_QP_SQ_PSN);
}

struct ibv_qp *emu_qp_test::make_dci(uint8_t timeout, uint8_t retry_cnt,
                                     uint8_t rnr_retry)
{
    struct ibv_qp_cap cap = {};
    struct ibv_qp *qp;

    cap.max_send_wr     = 16;
    cap.max_send_sge    = 2;
    cap.max_inline_data = 64;
    qp                  = create_dci(&cap);
    if ((qp == nullptr) ||
        (connect_dci(qp, IBV_QPS_RTS, timeout, retry_cnt, rnr_retry) != 0)) {
        return nullptr;
    }
    return qp;
}

struct ibv_ah *emu_qp_test::make_ah(uint16_t dlid)
{
    struct ibv_ah_attr attr;

    memset(&attr, 0, sizeof(attr));
    attr.dlid     = dlid;
    attr.port_num = 1;
    return ibv_create_ah(m_pd, &attr);
}

void emu_qp_test::post_recvs(unsigned count, uint32_t len)
{
    struct ibv_recv_wr wr, *bad;
    struct ibv_sge sge;

    for (unsigned i = 0; i < count; ++i) {
        sge.addr   = (uintptr_t)m_buf.data() + 32768 + i * len;
        sge.length = len;
        sge.lkey   = m_mr->lkey;
        memset(&wr, 0, sizeof(wr));
        wr.wr_id   = 1000 + i;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        ASSERT_EQ(0, ibv_post_srq_recv(m_srq, &wr, &bad));
    }
}

bool emu_qp_test::poll_one(struct ibv_cq_ex *cq, emu_wc *wc)
{
    struct ibv_poll_cq_attr attr = {0};
    int64_t deadline             = emu_now_ns() + EMU_WAIT_NS;

    while (ibv_start_poll(cq, &attr) == ENOENT) {
        if (emu_now_ns() > deadline) {
            return false;
        }
    }
    wc->wr_id    = cq->wr_id;
    wc->status   = cq->status;
    wc->opcode   = ibv_wc_read_opcode(cq);
    wc->byte_len = ibv_wc_read_byte_len(cq);
    wc->qp_num   = ibv_wc_read_qp_num(cq);
    wc->wc_flags = ibv_wc_read_wc_flags(cq);
    wc->imm      = (wc->wc_flags & IBV_WC_WITH_IMM) ?
                       be32toh(ibv_wc_read_imm_data(cq)) :
                       0;
    ibv_end_poll(cq);
    return true;
}

int emu_qp_test::post(struct ibv_qp *dci, uint64_t wr_id, int opcode, void *buf,
                      uint32_t len, uint32_t lkey, uint64_t raddr,
                      uint32_t rkey, uint64_t key, bool inl, struct ibv_ah *ah,
                      uint32_t dctn, int stream, bool signaled)
{
    struct ibv_qp_ex *qpx   = ibv_qp_to_qp_ex(dci);
    struct mlx5dv_qp_ex *dv = mlx5dv_qp_ex_from_ibv_qp_ex(qpx);

    ibv_wr_start(qpx);
    qpx->wr_id    = wr_id;
    qpx->wr_flags = signaled ? IBV_SEND_SIGNALED : 0;
    switch (opcode) {
    case IBV_WR_SEND:
        ibv_wr_send(qpx);
        break;
    case IBV_WR_SEND_WITH_IMM:
        ibv_wr_send_imm(qpx, htobe32(0xfeedu));
        break;
    case IBV_WR_RDMA_WRITE:
        ibv_wr_rdma_write(qpx, rkey, raddr);
        break;
    case IBV_WR_RDMA_READ:
        ibv_wr_rdma_read(qpx, rkey, raddr);
        break;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        ibv_wr_atomic_fetch_add(qpx, rkey, raddr, 5);
        break;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        ibv_wr_atomic_cmp_swp(qpx, rkey, raddr, 105, 7);
        break;
    }
    if (stream >= 0) {
        mlx5dv_wr_set_dc_addr_stream(dv, (ah != nullptr) ? ah : m_ah,
                                     (dctn != 0) ? dctn : m_dct->qp_num, key,
                                     (uint16_t)stream);
    } else {
        mlx5dv_wr_set_dc_addr(dv, (ah != nullptr) ? ah : m_ah,
                              (dctn != 0) ? dctn : m_dct->qp_num, key);
    }
    if (inl) {
        ibv_wr_set_inline_data(qpx, buf, len);
    } else {
        ibv_wr_set_sge(qpx, lkey, (uintptr_t)buf, len);
    }
    return ibv_wr_complete(qpx);
}
