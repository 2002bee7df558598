/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Responder scatter-to-CQE on a DCT, as rdma-core 44 and mlx5_ib set it
 * up: libmlx5 asks for it on every QP unless MLX5_SCATTER_TO_CQE is "0" or
 * the DCT is created with MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE, and the
 * kernel gives a DCT the mode "up to 64 bytes" only when its CQ has
 * 128-byte CQEs.  A SEND (with or without immediate) of 1 to 64 bytes
 * then completes with MLX5_INLINE_SCATTER_64 and its bytes in the first
 * half of the 128-byte CQE, and its receive buffer is left as it was; a
 * longer one, an RDMA WRITE's immediate, or any message on 64-byte CQEs
 * goes to the buffer.  The DCT's CQ and SRQ are taken with
 * mlx5dv_init_obj and used as UCX's dc_mlx5 uses them; the DCI posts
 * through the extended verbs.
 */
#include "emu_qp_fixture.h"
#include "emu_raw_cq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

namespace {

const uint8_t kOld = 0xee; /* what a receive buffer holds before */

} // namespace

class emu_scatter_test : public emu_qp_test {
protected:
    void TearDown() override
    {
        destroy_target();
        emu_qp_test::TearDown();
    }

    /* The target: a CQ of cqe_size-byte CQEs, an SRQ, both taken raw, and
     * a DCT on them in RTR created with create_flags (0: none) */
    void make_target(uint32_t cqe_size, uint64_t create_flags = 0)
    {
        struct ibv_cq_init_attr_ex a;
        struct mlx5dv_cq_init_attr dv;
        struct ibv_srq_init_attr sa;
        struct mlx5dv_obj obj;

        memset(&a, 0, sizeof(a));
        memset(&dv, 0, sizeof(dv));
        a.cqe                 = 63;
        dv.comp_mask          = MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE;
        dv.cqe_size           = cqe_size;
        struct ibv_cq_ex *cqx = mlx5dv_create_cq(m_ctx, &a, &dv);
        ASSERT_NE(nullptr, cqx);
        m_cq.cq = ibv_cq_ex_to_cq(cqx);

        memset(&sa, 0, sizeof(sa));
        sa.attr.max_wr  = 16;
        sa.attr.max_sge = 1;
        m_tsrq          = ibv_create_srq(m_pd, &sa);
        ASSERT_NE(nullptr, m_tsrq);

        memset(&obj, 0, sizeof(obj));
        obj.cq.in   = m_cq.cq;
        obj.cq.out  = &m_cq.dv;
        obj.srq.in  = m_tsrq;
        obj.srq.out = &m_srq_dv;
        ASSERT_EQ(0, mlx5dv_init_obj(&obj, MLX5DV_OBJ_CQ | MLX5DV_OBJ_SRQ));
        ASSERT_EQ(cqe_size, m_cq.dv.cqe_size);
        m_head = (uint16_t)m_srq_dv.head;

        m_tdct = emu_dct_create(m_ctx, m_pd, m_cq.cq, m_tsrq, EMU_DCT_KEY,
                                create_flags);
        ASSERT_NE(nullptr, m_tdct) << strerror(errno);
        ASSERT_EQ(0, emu_dct_connect(m_tdct, IBV_ACCESS_REMOTE_WRITE));
        m_dci = make_dci();
        ASSERT_NE(nullptr, m_dci);
    }

    void destroy_target()
    {
        if (m_tdct != nullptr) {
            EXPECT_EQ(0, ibv_destroy_qp(m_tdct));
            m_tdct = nullptr;
        }
        if (m_tsrq != nullptr) {
            EXPECT_EQ(0, ibv_destroy_srq(m_tsrq));
            m_tsrq = nullptr;
        }
        if (m_cq.cq != nullptr) {
            EXPECT_EQ(0, ibv_destroy_cq(m_cq.cq));
            m_cq.cq = nullptr;
        }
    }

    /* A receive WQE of the target's SRQ over 128 bytes of m_buf at
     * 'off', which first holds kOld; its WQE index */
    uint16_t post_recv(size_t off)
    {
        uint16_t idx = m_head;
        auto *wqe    = (uint8_t *)m_srq_dv.buf + (size_t)idx * m_srq_dv.stride;
        auto *next   = (struct mlx5_wqe_srq_next_seg *)wqe;
        auto *ds     = (struct mlx5_wqe_data_seg *)(wqe + sizeof(*next));

        memset(&m_buf[off], kOld, 128);
        ds->byte_count = htobe32(128);
        ds->lkey       = htobe32(m_mr->lkey);
        ds->addr       = htobe64((uintptr_t)&m_buf[off]);
        m_head         = be16toh(next->next_wqe_index);
        ++m_counter;
        __atomic_thread_fence(__ATOMIC_RELEASE);
        m_srq_dv.dbrec[0] = htobe32(m_counter);
        return idx;
    }

    /* A SEND (opcode) of len bytes 0x40 + i from m_buf[0], completed */
    void send(int opcode, uint32_t len)
    {
        emu_wc wc;

        for (uint32_t i = 0; i < len; ++i) {
            m_buf[i] = (char)(0x40 + i);
        }
        ASSERT_EQ(0, post(m_dci, 7, opcode, m_buf.data(), len, m_mr->lkey, 0, 0,
                          EMU_DCT_KEY, false, nullptr, m_tdct->qp_num));
        ASSERT_TRUE(poll_one(m_tx_cq, &wc));
        ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
    }

    /* The target's next CQE (its slot stays software's until the next) */
    struct mlx5_cqe64 *next_cqe()
    {
        int64_t end = emu_now_ms() + 20000;
        struct mlx5_cqe64 *cqe;

        while ((cqe = cqe_at(m_cq)) == nullptr) {
            if (emu_now_ms() > end) {
                return nullptr;
            }
        }
        ++m_cq.ci;
        m_cq.dv.dbrec[0] = htobe32(m_cq.ci & 0xffffff);
        return cqe;
    }

    /* A message of len bytes sent by opcode, its CQE checked: scattered
     * into the CQE (the buffer left as it was), or into the buffer */
    void check(int opcode, uint32_t len, bool scattered)
    {
        const size_t off = 4096;
        struct mlx5_cqe64 *cqe;
        uint16_t idx;

        idx = post_recv(off);
        send(opcode, len);
        cqe = next_cqe();
        ASSERT_NE(nullptr, cqe);
        EXPECT_EQ(idx, be16toh(cqe->wqe_counter));
        EXPECT_EQ(len, be32toh(cqe->byte_cnt));
        EXPECT_EQ(0, cqe->op_own & MLX5_INLINE_SCATTER_32) << len;
        if (scattered) {
            ASSERT_TRUE(cqe->op_own & MLX5_INLINE_SCATTER_64) << len;
            EXPECT_EQ(0, memcmp(cqe - 1, m_buf.data(), len)) << len;
            for (uint32_t i = 0; i < len; ++i) {
                ASSERT_EQ(kOld, (uint8_t)m_buf[off + i]) << len << " " << i;
            }
        } else {
            EXPECT_EQ(0, cqe->op_own & MLX5_INLINE_SCATTER_64) << len;
            EXPECT_EQ(0, memcmp(&m_buf[off], m_buf.data(), len)) << len;
        }
    }

    raw_cq m_cq;
    struct mlx5dv_srq m_srq_dv;
    struct ibv_srq *m_tsrq = nullptr;
    struct ibv_qp *m_tdct  = nullptr;
    struct ibv_qp *m_dci   = nullptr; /* in m_qps */
    uint16_t m_head        = 0;
    uint16_t m_counter     = 0;
};

TEST_F(emu_scatter_test, short_sends_go_into_128_byte_cqes)
{
    make_target(128);
    for (uint32_t len : {1u, 8u, 31u, 32u, 33u, 63u, 64u}) {
        check(IBV_WR_SEND, len, true);
    }
    check(IBV_WR_SEND_WITH_IMM, 16, true);
}

TEST_F(emu_scatter_test, longer_send_goes_to_the_buffer_bad_flow)
{
    make_target(128);
    check(IBV_WR_SEND, 65, false);
    check(IBV_WR_SEND, 128, false);
    check(IBV_WR_SEND, 8, true); /* and the next short one is scattered */
}

TEST_F(emu_scatter_test, no_scatter_with_64_byte_cqes_bad_flow)
{
    make_target(64);
    check(IBV_WR_SEND, 8, false);
    check(IBV_WR_SEND, 32, false);
}

TEST_F(emu_scatter_test, disabled_at_creation_bad_flow)
{
    make_target(128, MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE);
    check(IBV_WR_SEND, 8, false);
}

TEST_F(emu_scatter_test, disabled_by_the_environment_bad_flow)
{
    ASSERT_EQ(0, setenv("MLX5_SCATTER_TO_CQE", "0", 1));
    make_target(128);
    unsetenv("MLX5_SCATTER_TO_CQE");
    check(IBV_WR_SEND, 8, false);
}

/* libmlx5 passes the requester's ALLOW flag to the kernel, which a DCT
 * refuses */
TEST_F(emu_scatter_test, allow_flag_on_a_dct_bad_flow)
{
    make_target(128);
    errno = 0;
    EXPECT_EQ(nullptr, emu_dct_create(m_ctx, m_pd, m_cq.cq, m_tsrq, EMU_DCT_KEY,
                                      MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE));
    EXPECT_EQ(EINVAL, errno);
}

/* Through libmlx5's own poll (a CQ not taken raw) the message is in the
 * receive's buffer, as libmlx5 copies a scattered one there */
TEST_F(emu_scatter_test, verbs_poll_finds_the_bytes_in_the_buffer)
{
    struct ibv_cq_init_attr_ex a;
    struct mlx5dv_cq_init_attr dv;
    struct ibv_recv_wr wr, *bad;
    struct ibv_cq_ex *cqx;
    struct ibv_sge sge;
    struct ibv_qp *dct, *dci;
    struct ibv_wc wc;
    struct ibv_srq *srq;
    emu_wc swc;
    int n = 0;

    memset(&a, 0, sizeof(a));
    memset(&dv, 0, sizeof(dv));
    a.cqe        = 63;
    dv.comp_mask = MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE;
    dv.cqe_size  = 128;
    cqx          = mlx5dv_create_cq(m_ctx, &a, &dv);
    ASSERT_NE(nullptr, cqx);
    m_cq.cq = ibv_cq_ex_to_cq(cqx); /* destroyed by destroy_target */
    struct ibv_srq_init_attr sa;
    memset(&sa, 0, sizeof(sa));
    sa.attr.max_wr  = 4;
    sa.attr.max_sge = 1;
    srq             = ibv_create_srq(m_pd, &sa);
    ASSERT_NE(nullptr, srq);
    m_tsrq = srq;
    dct    = emu_dct_create(m_ctx, m_pd, m_cq.cq, srq, EMU_DCT_KEY);
    ASSERT_NE(nullptr, dct);
    m_tdct = dct;
    ASSERT_EQ(0, emu_dct_connect(dct, IBV_ACCESS_REMOTE_WRITE));
    dci = make_dci();
    ASSERT_NE(nullptr, dci);

    memset(&m_buf[4096], kOld, 64);
    sge.addr   = (uintptr_t)&m_buf[4096];
    sge.length = 64;
    sge.lkey   = m_mr->lkey;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id   = 5;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ASSERT_EQ(0, ibv_post_srq_recv(srq, &wr, &bad));
    memcpy(m_buf.data(), "scattered?", 10);
    ASSERT_EQ(0, post(dci, 7, IBV_WR_SEND, m_buf.data(), 10, m_mr->lkey, 0, 0,
                      EMU_DCT_KEY, false, nullptr, dct->qp_num));
    ASSERT_TRUE(poll_one(m_tx_cq, &swc));
    for (int64_t end = emu_now_ms() + 20000;
         (n == 0) && (emu_now_ms() < end);) {
        n = ibv_poll_cq(m_cq.cq, 1, &wc);
    }
    ASSERT_EQ(1, n);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(5u, wc.wr_id);
    EXPECT_EQ(10u, wc.byte_len);
    EXPECT_EQ(0, memcmp(&m_buf[4096], "scattered?", 10));
}
