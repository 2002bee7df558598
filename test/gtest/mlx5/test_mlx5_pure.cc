/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the mlx5 backend's pure rules of QPs and their work
 * (mlx5_pure.c): modify-QP masks, WQE sizing, completion and work request
 * translation, completion routing, the outstanding-WR ring and the
 * QP-number map; fed with synthetic values, no device needed.
 */
#include <gtest/gtest.h>

extern "C" {
#include "mlx5/mlx5_pure.h"
}

#include <errno.h>

#include <set>
#include <tuple>
#include <vector>

/* ------------------------------------------------------------------------
 * Modify-QP mask table
 * ------------------------------------------------------------------------ */
TEST(mlx5_masks, every_row_requires_state_and_is_unique)
{
    std::set<std::tuple<int, int, int>> seen;

    ASSERT_GT(dcx_mlx5_qp_transitions_count, 0u);
    for (size_t i = 0; i < dcx_mlx5_qp_transitions_count; ++i) {
        const dcx_mlx5_qp_transition_t &t = dcx_mlx5_qp_transitions[i];
        EXPECT_TRUE(t.required & IBV_QP_STATE) << "row " << i;
        EXPECT_EQ(0u, t.required & t.optional) << "row " << i;
        EXPECT_TRUE(seen.insert(std::make_tuple(t.type, t.from, t.to)).second)
            << "duplicate row " << i;
    }
}

TEST(mlx5_masks, dci_reset_to_init_refuses_access_flags)
{
    const uint32_t base = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

    EXPECT_EQ(0, dcx_mlx5_qp_mask_check(DCX_QPT_DCI, DCX_QPS_RESET,
                                        DCX_QPS_INIT, base));
    EXPECT_EQ(EINVAL,
              dcx_mlx5_qp_mask_check(DCX_QPT_DCI, DCX_QPS_RESET, DCX_QPS_INIT,
                                     base | IBV_QP_ACCESS_FLAGS));
    EXPECT_EQ(EINVAL,
              dcx_mlx5_qp_mask_check(DCX_QPT_DCI, DCX_QPS_RESET, DCX_QPS_INIT,
                                     IBV_QP_STATE | IBV_QP_PORT));
}

TEST(mlx5_masks, dci_rtr_and_rts)
{
    const uint32_t rts = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                         IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC |
                         IBV_QP_SQ_PSN;

    EXPECT_EQ(0, dcx_mlx5_qp_mask_check(DCX_QPT_DCI, DCX_QPS_INIT, DCX_QPS_RTR,
                                        IBV_QP_STATE | IBV_QP_PATH_MTU));
    EXPECT_EQ(0, dcx_mlx5_qp_mask_check(DCX_QPT_DCI, DCX_QPS_INIT, DCX_QPS_RTR,
                                        IBV_QP_STATE | IBV_QP_PATH_MTU |
                                            IBV_QP_AV));
    EXPECT_EQ(EINVAL, dcx_mlx5_qp_mask_check(DCX_QPT_DCI, DCX_QPS_INIT,
                                             DCX_QPS_RTR, IBV_QP_STATE));
    /* RC-only bits have no place on a DCI */
    EXPECT_EQ(EINVAL,
              dcx_mlx5_qp_mask_check(DCX_QPT_DCI, DCX_QPS_INIT, DCX_QPS_RTR,
                                     IBV_QP_STATE | IBV_QP_PATH_MTU |
                                         IBV_QP_DEST_QPN));
    EXPECT_EQ(0, dcx_mlx5_qp_mask_check(DCX_QPT_DCI, DCX_QPS_RTR, DCX_QPS_RTS,
                                        rts));
    EXPECT_EQ(0, dcx_mlx5_qp_mask_check(DCX_QPT_DCI, DCX_QPS_RTR, DCX_QPS_RTS,
                                        rts | IBV_QP_MIN_RNR_TIMER));
    EXPECT_EQ(EINVAL,
              dcx_mlx5_qp_mask_check(DCX_QPT_DCI, DCX_QPS_RTR, DCX_QPS_RTS,
                                     rts & ~IBV_QP_SQ_PSN));
    EXPECT_EQ(EINVAL,
              dcx_mlx5_qp_mask_check(DCX_QPT_DCI, DCX_QPS_RTR, DCX_QPS_RTS,
                                     rts | IBV_QP_MAX_DEST_RD_ATOMIC));
}

TEST(mlx5_masks, dci_reset_and_error_are_state_only)
{
    const dcx_qp_state_t states[] = {DCX_QPS_RESET, DCX_QPS_INIT, DCX_QPS_RTR,
                                     DCX_QPS_RTS, DCX_QPS_ERR};

    for (dcx_qp_state_t from : states) {
        EXPECT_EQ(0, dcx_mlx5_qp_mask_check(DCX_QPT_DCI, from, DCX_QPS_RESET,
                                            IBV_QP_STATE))
            << from;
        EXPECT_EQ(EINVAL,
                  dcx_mlx5_qp_mask_check(DCX_QPT_DCI, from, DCX_QPS_RESET,
                                         IBV_QP_STATE | IBV_QP_PORT))
            << from;
        if (from == DCX_QPS_RESET) {
            EXPECT_EQ(nullptr, dcx_mlx5_qp_transition_find(DCX_QPT_DCI, from,
                                                           DCX_QPS_ERR));
        } else {
            EXPECT_EQ(0, dcx_mlx5_qp_mask_check(DCX_QPT_DCI, from, DCX_QPS_ERR,
                                                IBV_QP_STATE))
                << from;
        }
    }
    /* no shortcut from RESET to RTS */
    EXPECT_EQ(nullptr, dcx_mlx5_qp_transition_find(DCX_QPT_DCI, DCX_QPS_RESET,
                                                   DCX_QPS_RTS));
}

TEST(mlx5_masks, dct_exact_masks_and_only_two_transitions)
{
    const uint32_t init = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS |
                          IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    const uint32_t rtr = IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER | IBV_QP_AV |
                         IBV_QP_PATH_MTU;
    size_t n = 0;

    EXPECT_EQ(0, dcx_mlx5_qp_mask_check(DCX_QPT_DCT, DCX_QPS_RESET,
                                        DCX_QPS_INIT, init));
    EXPECT_EQ(EINVAL,
              dcx_mlx5_qp_mask_check(DCX_QPT_DCT, DCX_QPS_RESET, DCX_QPS_INIT,
                                     init & ~IBV_QP_ACCESS_FLAGS));
    EXPECT_EQ(0, dcx_mlx5_qp_mask_check(DCX_QPT_DCT, DCX_QPS_INIT, DCX_QPS_RTR,
                                        rtr));
    EXPECT_EQ(EINVAL, dcx_mlx5_qp_mask_check(DCX_QPT_DCT, DCX_QPS_INIT,
                                             DCX_QPS_RTR, rtr & ~IBV_QP_AV));
    EXPECT_EQ(EINVAL,
              dcx_mlx5_qp_mask_check(DCX_QPT_DCT, DCX_QPS_INIT, DCX_QPS_RTR,
                                     rtr | IBV_QP_PKEY_INDEX));
    EXPECT_EQ(EINVAL, dcx_mlx5_qp_mask_check(DCX_QPT_DCT, DCX_QPS_RTR,
                                             DCX_QPS_RTS, IBV_QP_STATE));
    EXPECT_EQ(EINVAL, dcx_mlx5_qp_mask_check(DCX_QPT_DCT, DCX_QPS_RTR,
                                             DCX_QPS_ERR, IBV_QP_STATE));
    EXPECT_EQ(EINVAL, dcx_mlx5_qp_mask_check(DCX_QPT_DCT, DCX_QPS_RTR,
                                             DCX_QPS_RESET, IBV_QP_STATE));
    for (size_t i = 0; i < dcx_mlx5_qp_transitions_count; ++i) {
        n += (dcx_mlx5_qp_transitions[i].type == DCX_QPT_DCT);
    }
    EXPECT_EQ(2u, n);
}

TEST(mlx5_masks, state_names_and_verbs_states)
{
    EXPECT_EQ(IBV_QPS_RESET, dcx_mlx5_qp_state_to_ibv(DCX_QPS_RESET));
    EXPECT_EQ(IBV_QPS_INIT, dcx_mlx5_qp_state_to_ibv(DCX_QPS_INIT));
    EXPECT_EQ(IBV_QPS_RTR, dcx_mlx5_qp_state_to_ibv(DCX_QPS_RTR));
    EXPECT_EQ(IBV_QPS_RTS, dcx_mlx5_qp_state_to_ibv(DCX_QPS_RTS));
    EXPECT_EQ(IBV_QPS_ERR, dcx_mlx5_qp_state_to_ibv(DCX_QPS_ERR));
    EXPECT_STREQ("RTS", dcx_mlx5_qp_state_str(DCX_QPS_RTS));
}

/* ------------------------------------------------------------------------
 * WQE and inline sizing
 * ------------------------------------------------------------------------ */
static const uint64_t kDciOps = IBV_QP_EX_WITH_SEND |
                                IBV_QP_EX_WITH_SEND_WITH_IMM |
                                IBV_QP_EX_WITH_RDMA_WRITE |
                                IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                                IBV_QP_EX_WITH_RDMA_READ |
                                IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                                IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;

TEST(mlx5_sizing, dci_overhead_by_operations)
{
    EXPECT_EQ(16u + 48u, dcx_mlx5_dci_overhead(IBV_QP_EX_WITH_SEND));
    EXPECT_EQ(32u + 48u, dcx_mlx5_dci_overhead(IBV_QP_EX_WITH_SEND |
                                               IBV_QP_EX_WITH_RDMA_READ));
    EXPECT_EQ(48u + 48u, dcx_mlx5_dci_overhead(kDciOps));
    /* LOCAL_INV makes every WQE UMR sized */
    EXPECT_EQ(192u + 48u,
              dcx_mlx5_dci_overhead(kDciOps | IBV_QP_EX_WITH_LOCAL_INV));
}

TEST(mlx5_sizing, dci_sq_size_matches_libmlx5_rules)
{
    dcx_mlx5_sq_size_t sz;

    /* one sge, no inline: 96 + 16 -> one 128-byte WQE, 28 bytes inline */
    ASSERT_EQ(0, dcx_mlx5_dci_sq_size(kDciOps, 64, 1, 0, 512, 32768, &sz));
    EXPECT_EQ(128u, sz.wqe_size);
    EXPECT_EQ(28u, sz.max_inline);
    EXPECT_EQ(64u, sz.max_post);
    EXPECT_EQ(128u, sz.wqe_bbs);

    /* 256 inline: 96 + align16(4 + 256) = 368 -> 384 */
    ASSERT_EQ(0, dcx_mlx5_dci_sq_size(kDciOps, 64, 1, 256, 512, 32768, &sz));
    EXPECT_EQ(384u, sz.wqe_size);
    EXPECT_EQ(284u, sz.max_inline);
    EXPECT_EQ(32768u / 384u, sz.max_post); /* 64*384 rounds up to 32 KiB */
    EXPECT_EQ(512u, sz.wqe_bbs);

    /* gather entries beyond the descriptor */
    EXPECT_EQ(0, dcx_mlx5_dci_sq_size(kDciOps, 8, 26, 0, 512, 32768, &sz));
    EXPECT_EQ(EINVAL, dcx_mlx5_dci_sq_size(kDciOps, 8, 27, 0, 512, 32768, &sz));
    /* inline beyond the descriptor */
    EXPECT_EQ(EINVAL,
              dcx_mlx5_dci_sq_size(kDciOps, 8, 1, 500, 512, 32768, &sz));
    /* queue beyond max_wqebb; empty queue */
    EXPECT_EQ(EINVAL,
              dcx_mlx5_dci_sq_size(kDciOps, 1024, 1, 0, 512, 1024, &sz));
    EXPECT_EQ(EINVAL, dcx_mlx5_dci_sq_size(kDciOps, 0, 1, 0, 512, 1024, &sz));
}

TEST(mlx5_sizing, dci_max_wr_is_the_deepest_creatable_queue)
{
    const uint32_t wqe[]   = {128, 192, 384, 512}; /* DCI overhead is 96 */
    const uint32_t wqebb[] = {1000, 4096, 32768, 65535};
    dcx_mlx5_sq_size_t sz;

    EXPECT_EQ(5461u, dcx_mlx5_dci_max_wr(384, 32768));
    EXPECT_EQ(256u, dcx_mlx5_dci_max_wr(128, 1000));
    EXPECT_EQ(0u, dcx_mlx5_dci_max_wr(0, 1000));
    for (uint32_t bb : wqebb) {
        for (uint32_t w : wqe) {
            uint32_t n   = dcx_mlx5_dci_max_wr(w, bb);
            /* inline chosen so that the WQE is exactly w bytes */
            uint32_t inl = w - 96 - 4;

            ASSERT_GT(n, 0u);
            ASSERT_EQ(0, dcx_mlx5_dci_sq_size(kDciOps, n, 1, inl, 512, bb, &sz))
                << w << " " << bb;
            EXPECT_EQ(w, sz.wqe_size);
            EXPECT_EQ(EINVAL, dcx_mlx5_dci_sq_size(kDciOps, n + 1, 1, inl, 512,
                                                   bb, &sz))
                << w << " " << bb;
        }
    }
}

TEST(mlx5_sizing, sge_total_saturates)
{
    dcx_sge_t sge[3] = {{0, 100, 1}, {0, 0xffffffffu, 1}, {0, 5, 1}};

    EXPECT_EQ(0u, dcx_mlx5_sge_total(sge, 0));
    EXPECT_EQ(100u, dcx_mlx5_sge_total(sge, 1));
    EXPECT_EQ(UINT32_MAX, dcx_mlx5_sge_total(sge, 3));
}

/* ------------------------------------------------------------------------
 * Completion statuses and opcodes
 * ------------------------------------------------------------------------ */
TEST(mlx5_wc, status_mapping)
{
    const std::pair<ibv_wc_status, dcx_wc_status_t> map[] = {
        {IBV_WC_SUCCESS, DCX_WC_SUCCESS},
        {IBV_WC_LOC_LEN_ERR, DCX_WC_LOC_LEN_ERR},
        {IBV_WC_LOC_QP_OP_ERR, DCX_WC_LOC_QP_OP_ERR},
        {IBV_WC_LOC_EEC_OP_ERR, DCX_WC_GENERAL_ERR},
        {IBV_WC_LOC_PROT_ERR, DCX_WC_LOC_PROT_ERR},
        {IBV_WC_WR_FLUSH_ERR, DCX_WC_WR_FLUSH_ERR},
        {IBV_WC_MW_BIND_ERR, DCX_WC_GENERAL_ERR},
        {IBV_WC_BAD_RESP_ERR, DCX_WC_GENERAL_ERR},
        {IBV_WC_LOC_ACCESS_ERR, DCX_WC_LOC_PROT_ERR},
        {IBV_WC_REM_INV_REQ_ERR, DCX_WC_REM_INV_REQ_ERR},
        {IBV_WC_REM_ACCESS_ERR, DCX_WC_REM_ACCESS_ERR},
        {IBV_WC_REM_OP_ERR, DCX_WC_REM_OP_ERR},
        {IBV_WC_RETRY_EXC_ERR, DCX_WC_RETRY_EXC_ERR},
        {IBV_WC_RNR_RETRY_EXC_ERR, DCX_WC_RNR_RETRY_EXC_ERR},
        {IBV_WC_LOC_RDD_VIOL_ERR, DCX_WC_GENERAL_ERR},
        {IBV_WC_REM_INV_RD_REQ_ERR, DCX_WC_REM_INV_REQ_ERR},
        {IBV_WC_REM_ABORT_ERR, DCX_WC_REM_OP_ERR},
        {IBV_WC_INV_EECN_ERR, DCX_WC_GENERAL_ERR},
        {IBV_WC_INV_EEC_STATE_ERR, DCX_WC_GENERAL_ERR},
        {IBV_WC_FATAL_ERR, DCX_WC_GENERAL_ERR},
        {IBV_WC_RESP_TIMEOUT_ERR, DCX_WC_RETRY_EXC_ERR},
        {IBV_WC_GENERAL_ERR, DCX_WC_GENERAL_ERR},
        {IBV_WC_TM_ERR, DCX_WC_TM_ERR},
        {IBV_WC_TM_RNDV_INCOMPLETE, DCX_WC_TM_RNDV_INCOMPLETE},
    };

    for (const auto &m : map) {
        EXPECT_EQ(m.second, dcx_mlx5_wc_status(m.first)) << m.first;
    }
    EXPECT_EQ(DCX_WC_GENERAL_ERR, dcx_mlx5_wc_status((ibv_wc_status)200));
}

TEST(mlx5_wc, opcode_mapping)
{
    const std::pair<ibv_wc_opcode, dcx_wc_opcode_t> map[] = {
        {IBV_WC_SEND, DCX_WC_SEND},
        {IBV_WC_RDMA_WRITE, DCX_WC_RDMA_WRITE},
        {IBV_WC_RDMA_READ, DCX_WC_RDMA_READ},
        {IBV_WC_COMP_SWAP, DCX_WC_COMP_SWAP},
        {IBV_WC_FETCH_ADD, DCX_WC_FETCH_ADD},
        {IBV_WC_LOCAL_INV, DCX_WC_LOCAL_INV},
        {IBV_WC_DRIVER1, DCX_WC_UMR},
        {IBV_WC_RECV, DCX_WC_RECV},
        {IBV_WC_RECV_RDMA_WITH_IMM, DCX_WC_RECV_RDMA_WITH_IMM},
        {IBV_WC_TM_ADD, DCX_WC_TM_ADD},
        {IBV_WC_TM_DEL, DCX_WC_TM_DEL},
        {IBV_WC_TM_SYNC, DCX_WC_TM_SYNC},
        {IBV_WC_TM_RECV, DCX_WC_TM_RECV},
        {IBV_WC_TM_NO_TAG, DCX_WC_TM_NO_TAG},
    };
    dcx_wc_opcode_t out;

    for (const auto &m : map) {
        ASSERT_EQ(0, dcx_mlx5_wc_opcode(m.first, &out)) << m.first;
        EXPECT_EQ(m.second, out) << m.first;
        /* receive-side opcodes keep their receive bit; DRIVER1 (UMR) has
         * bit 7 set in verbs but is a requester completion */
        if (m.first != IBV_WC_DRIVER1) {
            EXPECT_EQ(!!(m.first & IBV_WC_RECV), !!(out & DCX_WC_RECV_BIT))
                << m.first;
        } else {
            EXPECT_EQ(0, out & DCX_WC_RECV_BIT);
        }
    }
    EXPECT_EQ(EINVAL, dcx_mlx5_wc_opcode(IBV_WC_BIND_MW, &out));
    EXPECT_EQ(EINVAL, dcx_mlx5_wc_opcode(IBV_WC_TSO, &out));
    EXPECT_EQ(EINVAL, dcx_mlx5_wc_opcode(IBV_WC_DRIVER2, &out));
    EXPECT_EQ(EINVAL, dcx_mlx5_wc_opcode(IBV_WC_DRIVER3, &out));
}

TEST(mlx5_wr, opcodes_flags_and_access)
{
    EXPECT_EQ(DCX_WC_SEND, dcx_mlx5_wr_wc_opcode(DCX_WR_SEND_IMM));
    EXPECT_EQ(DCX_WC_RDMA_WRITE, dcx_mlx5_wr_wc_opcode(DCX_WR_RDMA_WRITE_IMM));
    EXPECT_EQ(DCX_WC_RDMA_READ, dcx_mlx5_wr_wc_opcode(DCX_WR_RDMA_READ));
    EXPECT_EQ(DCX_WC_FETCH_ADD, dcx_mlx5_wr_wc_opcode(DCX_WR_ATOMIC_FADD));
    EXPECT_EQ(DCX_WC_COMP_SWAP, dcx_mlx5_wr_wc_opcode(DCX_WR_ATOMIC_CSWAP));
    EXPECT_EQ(DCX_WC_SEND, dcx_mlx5_wr_wc_opcode(DCX_WR_SEND));
    EXPECT_EQ(DCX_WC_RDMA_WRITE, dcx_mlx5_wr_wc_opcode(DCX_WR_RDMA_WRITE));
    EXPECT_EQ(DCX_WC_MASKED_FETCH_ADD,
              dcx_mlx5_wr_wc_opcode(DCX_WR_ATOMIC_MASKED_FADD));
    EXPECT_EQ(DCX_WC_MASKED_COMP_SWAP,
              dcx_mlx5_wr_wc_opcode(DCX_WR_ATOMIC_MASKED_CSWAP));
    EXPECT_EQ(DCX_WC_UMR, dcx_mlx5_wr_wc_opcode(DCX_WR_MKEY_INTERLEAVED));
    EXPECT_EQ(DCX_WC_UMR, dcx_mlx5_wr_wc_opcode(DCX_WR_MKEY_LIST));
    EXPECT_EQ(DCX_WC_LOCAL_INV, dcx_mlx5_wr_wc_opcode(DCX_WR_MKEY_INVALIDATE));
    /* past the table, and between it and the key opcodes: a send's */
    EXPECT_EQ(DCX_WC_SEND, dcx_mlx5_wr_wc_opcode(DCX_WR_OPCODE_LAST));
    EXPECT_EQ(DCX_WC_SEND, dcx_mlx5_wr_wc_opcode((dcx_wr_opcode_t)0x3f));
    EXPECT_EQ(DCX_WC_SEND, dcx_mlx5_wr_wc_opcode(DCX_WR_MKEY_LAST));

    EXPECT_EQ((uint64_t)IBV_QP_EX_WITH_SEND, dcx_mlx5_wr_send_op(DCX_WR_SEND));
    EXPECT_EQ((uint64_t)IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
              dcx_mlx5_wr_send_op(DCX_WR_RDMA_WRITE_IMM));
    EXPECT_EQ((uint64_t)IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
              dcx_mlx5_wr_send_op(DCX_WR_ATOMIC_FADD));
    EXPECT_EQ((uint64_t)IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
              dcx_mlx5_wr_send_op(DCX_WR_ATOMIC_CSWAP));
    /* masked atomics need raw WQEs: a bit no verbs flag uses */
    EXPECT_EQ(DCX_MLX5_SEND_OP_MASKED,
              dcx_mlx5_wr_send_op(DCX_WR_ATOMIC_MASKED_FADD));
    EXPECT_EQ(DCX_MLX5_SEND_OP_MASKED,
              dcx_mlx5_wr_send_op(DCX_WR_ATOMIC_MASKED_CSWAP));
    EXPECT_EQ(0u, DCX_MLX5_SEND_OP_MASKED &
                      (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
                       IBV_QP_EX_WITH_RDMA_WRITE |
                       IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                       IBV_QP_EX_WITH_RDMA_READ |
                       IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD));
    EXPECT_EQ(0u, dcx_mlx5_wr_send_op(DCX_WR_OPCODE_LAST));

    EXPECT_EQ((unsigned)(IBV_SEND_SIGNALED | IBV_SEND_FENCE |
                         IBV_SEND_SOLICITED),
              dcx_mlx5_send_flags(DCX_SEND_SIGNALED | DCX_SEND_FENCE |
                                  DCX_SEND_SOLICITED | DCX_SEND_INLINE));
    EXPECT_EQ(0u, dcx_mlx5_send_flags(DCX_SEND_INLINE));

    EXPECT_EQ((unsigned)(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                         IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC),
              dcx_mlx5_access_flags(DCX_ACCESS_LOCAL_WRITE |
                                    DCX_ACCESS_REMOTE_WRITE |
                                    DCX_ACCESS_REMOTE_READ |
                                    DCX_ACCESS_REMOTE_ATOMIC));
    EXPECT_EQ((unsigned)IBV_ACCESS_REMOTE_READ,
              dcx_mlx5_access_flags(DCX_ACCESS_REMOTE_READ));
}

/* ------------------------------------------------------------------------
 * QP-number map
 * ------------------------------------------------------------------------ */
TEST(mlx5_qpmap, insert_find_remove)
{
    dcx_mlx5_qpmap_t map;
    int a, b;

    dcx_mlx5_qpmap_init(&map);
    EXPECT_EQ(nullptr, dcx_mlx5_qpmap_find(&map, 5));
    EXPECT_EQ(ENOENT, dcx_mlx5_qpmap_remove(&map, 5));
    EXPECT_EQ(0, dcx_mlx5_qpmap_insert(&map, 5, &a));
    EXPECT_EQ(EEXIST, dcx_mlx5_qpmap_insert(&map, 5, &b));
    EXPECT_EQ(EINVAL, dcx_mlx5_qpmap_insert(&map, 6, NULL));
    EXPECT_EQ(&a, dcx_mlx5_qpmap_find(&map, 5));
    EXPECT_EQ(0, dcx_mlx5_qpmap_remove(&map, 5));
    EXPECT_EQ(nullptr, dcx_mlx5_qpmap_find(&map, 5));
    EXPECT_EQ(0u, map.count);
    dcx_mlx5_qpmap_cleanup(&map);
}

TEST(mlx5_qpmap, many_entries_survive_growth_and_removal)
{
    dcx_mlx5_qpmap_t map;
    std::vector<int> objs(2000);
    uint32_t i;

    dcx_mlx5_qpmap_init(&map);
    /* QP numbers as a NIC hands them out: dense, 24-bit */
    for (i = 0; i < objs.size(); ++i) {
        ASSERT_EQ(0, dcx_mlx5_qpmap_insert(&map, 0x1000 + i * 3, &objs[i]));
    }
    for (i = 0; i < objs.size(); i += 2) {
        ASSERT_EQ(0, dcx_mlx5_qpmap_remove(&map, 0x1000 + i * 3));
    }
    for (i = 0; i < objs.size(); ++i) {
        void *expect = (i % 2) ? &objs[i] : NULL;
        ASSERT_EQ(expect, dcx_mlx5_qpmap_find(&map, 0x1000 + i * 3)) << i;
    }
    EXPECT_EQ(objs.size() / 2, map.count);
    EXPECT_LE(map.count * 2, map.mask + 1);
    dcx_mlx5_qpmap_cleanup(&map);
}

/* ------------------------------------------------------------------------
 * Completion routing on a CQ that serves DCIs
 * ------------------------------------------------------------------------ */
TEST(mlx5_route, dci_dct_and_unknown_qp_numbers)
{
    EXPECT_EQ(DCX_MLX5_ROUTE_DCI, dcx_mlx5_cq_route(true, DCX_QPT_DCI, 0));
    EXPECT_EQ(DCX_MLX5_ROUTE_DCI, dcx_mlx5_cq_route(true, DCX_QPT_DCI, 3));
    EXPECT_EQ(DCX_MLX5_ROUTE_RECV, dcx_mlx5_cq_route(true, DCX_QPT_DCT, 1));
    /* a receive whose CQE QP number is not the recorded DCT number, or
     * whose DCT is gone: still the SRQ's buffer, hand it back */
    EXPECT_EQ(DCX_MLX5_ROUTE_RECV, dcx_mlx5_cq_route(false, DCX_QPT_DCI, 1));
    /* a CQ with DCIs only: a destroyed DCI's CQEs were purged by libmlx5 */
    EXPECT_EQ(DCX_MLX5_ROUTE_DROP, dcx_mlx5_cq_route(false, DCX_QPT_DCI, 0));
}

/* ------------------------------------------------------------------------
 * Outstanding-WR ring: SQ accounting and error/flush reconciliation
 * ------------------------------------------------------------------------ */
class mlx5_ring : public ::testing::Test {
protected:
    static constexpr uint64_t kBase = 5ull << 40;

    void SetUp() override { ASSERT_EQ(0, dcx_mlx5_ring_init(&ring, 4, kBase)); }

    void TearDown() override { dcx_mlx5_ring_cleanup(&ring); }

    uint64_t push(uint64_t wr_id, dcx_wr_opcode_t op, bool signaled)
    {
        EXPECT_FALSE(dcx_mlx5_ring_full(&ring));
        return dcx_mlx5_ring_push(&ring, wr_id, op, signaled);
    }

    dcx_mlx5_ring_t ring;
    dcx_wc_t wc;
};

TEST_F(mlx5_ring, init_rejects_empty_ring)
{
    dcx_mlx5_ring_t r;

    EXPECT_EQ(EINVAL, dcx_mlx5_ring_init(&r, 0, 0));
}

TEST_F(mlx5_ring, full_at_depth_until_a_completion_retires)
{
    uint64_t s0 = push(10, DCX_WR_SEND, false);

    EXPECT_EQ(kBase, s0);
    push(11, DCX_WR_RDMA_WRITE, false);
    uint64_t s2 = push(12, DCX_WR_RDMA_READ, true);
    push(13, DCX_WR_SEND, false);
    EXPECT_TRUE(dcx_mlx5_ring_full(&ring));
    EXPECT_EQ(4u, dcx_mlx5_ring_outstanding(&ring));

    /* the signalled READ retires itself and the two WRs before it */
    ASSERT_EQ(DCX_MLX5_CQE_REPORT,
              dcx_mlx5_ring_cqe(&ring, s2, IBV_WC_SUCCESS, 0x77, &wc));
    EXPECT_EQ(12u, wc.wr_id);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_RDMA_READ, wc.opcode);
    EXPECT_EQ(0x77u, wc.qp_num);
    EXPECT_EQ(1u, dcx_mlx5_ring_outstanding(&ring));
    EXPECT_FALSE(dcx_mlx5_ring_full(&ring));

    /* a second CQE for the same WR (or an older one) is stale */
    EXPECT_EQ(DCX_MLX5_CQE_DROP,
              dcx_mlx5_ring_cqe(&ring, s2, IBV_WC_SUCCESS, 0x77, &wc));
    EXPECT_EQ(DCX_MLX5_CQE_DROP,
              dcx_mlx5_ring_cqe(&ring, s0, IBV_WC_SUCCESS, 0x77, &wc));
    /* and so is one not yet posted */
    EXPECT_EQ(DCX_MLX5_CQE_DROP,
              dcx_mlx5_ring_cqe(&ring, ring.head, IBV_WC_SUCCESS, 0x77, &wc));
}

TEST_F(mlx5_ring, slots_wrap_around)
{
    for (uint64_t i = 0; i < 20; ++i) {
        uint64_t s = push(100 + i, DCX_WR_SEND, true);
        ASSERT_EQ(DCX_MLX5_CQE_REPORT,
                  dcx_mlx5_ring_cqe(&ring, s, IBV_WC_SUCCESS, 1, &wc));
        EXPECT_EQ(100 + i, wc.wr_id);
    }
    EXPECT_EQ(0u, dcx_mlx5_ring_outstanding(&ring));
}

/* A depth that is not a power of two: full at the depth, and the records of
 * the outstanding WRs stay distinct while sequences wrap the slots */
TEST_F(mlx5_ring, depth_not_power_of_two_wraps)
{
    dcx_mlx5_ring_t r;
    uint64_t seq[3];

    ASSERT_EQ(0, dcx_mlx5_ring_init(&r, 3, (1ull << 32) - 5));
    for (uint64_t i = 0; i < 30; ++i) {
        seq[i % 3] = dcx_mlx5_ring_push(&r, 200 + i, DCX_WR_SEND, true);
        if (i < 2) {
            continue;
        }
        EXPECT_TRUE(dcx_mlx5_ring_full(&r));
        /* the oldest of the three outstanding completes */
        ASSERT_EQ(DCX_MLX5_CQE_REPORT,
                  dcx_mlx5_ring_cqe(&r, seq[(i - 2) % 3], IBV_WC_SUCCESS, 1,
                                    &wc));
        EXPECT_EQ(200 + i - 2, wc.wr_id);
        EXPECT_FALSE(dcx_mlx5_ring_full(&r));
    }
    /* the last two are flushed in order */
    ASSERT_EQ(1, dcx_mlx5_ring_flush_one(&r, 1, &wc));
    EXPECT_EQ(228u, wc.wr_id);
    ASSERT_EQ(1, dcx_mlx5_ring_flush_one(&r, 1, &wc));
    EXPECT_EQ(229u, wc.wr_id);
    EXPECT_EQ(0, dcx_mlx5_ring_flush_one(&r, 1, &wc));
    dcx_mlx5_ring_cleanup(&r);
}

TEST_F(mlx5_ring, error_then_remaining_wrs_flush_in_order)
{
    push(1, DCX_WR_SEND, false);
    uint64_t bad = push(2, DCX_WR_ATOMIC_FADD, false);
    push(3, DCX_WR_RDMA_WRITE, true);
    push(4, DCX_WR_SEND_IMM, false);

    /* an unsignalled WR can fail: its error CQE names it */
    ASSERT_EQ(DCX_MLX5_CQE_FAILED,
              dcx_mlx5_ring_cqe(&ring, bad, IBV_WC_REM_ACCESS_ERR, 9, &wc));
    EXPECT_EQ(2u, wc.wr_id);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, wc.status);
    EXPECT_EQ(9u, wc.qp_num);

    /* the hardware's flush CQE for WR 3 is not reported by itself */
    EXPECT_EQ(DCX_MLX5_CQE_FLUSHED,
              dcx_mlx5_ring_cqe(&ring, bad + 1, IBV_WC_WR_FLUSH_ERR, 9, &wc));

    /* every remaining WR, signalled or not, is flushed in posting order */
    ASSERT_EQ(1, dcx_mlx5_ring_flush_one(&ring, 9, &wc));
    EXPECT_EQ(3u, wc.wr_id);
    EXPECT_EQ(DCX_WC_WR_FLUSH_ERR, wc.status);
    ASSERT_EQ(1, dcx_mlx5_ring_flush_one(&ring, 9, &wc));
    EXPECT_EQ(4u, wc.wr_id);
    EXPECT_EQ(0, dcx_mlx5_ring_flush_one(&ring, 9, &wc));

    /* late hardware flush CQEs are now stale */
    EXPECT_EQ(DCX_MLX5_CQE_DROP,
              dcx_mlx5_ring_cqe(&ring, bad + 2, IBV_WC_WR_FLUSH_ERR, 9, &wc));
}

TEST_F(mlx5_ring, posts_in_error_count_against_the_depth)
{
    push(1, DCX_WR_SEND, true);
    push(2, DCX_WR_SEND, true);
    push(3, DCX_WR_SEND, true);
    push(4, DCX_WR_SEND, true);
    EXPECT_TRUE(dcx_mlx5_ring_full(&ring));
    ASSERT_EQ(1, dcx_mlx5_ring_flush_one(&ring, 9, &wc));
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_FALSE(dcx_mlx5_ring_full(&ring));
}

TEST_F(mlx5_ring, reset_forgets_everything_and_old_cqes_are_stale)
{
    uint64_t s = push(1, DCX_WR_SEND, true);

    push(2, DCX_WR_SEND, true);
    dcx_mlx5_ring_reset(&ring);
    EXPECT_EQ(0u, dcx_mlx5_ring_outstanding(&ring));
    EXPECT_EQ(0, dcx_mlx5_ring_flush_one(&ring, 9, &wc));
    EXPECT_EQ(DCX_MLX5_CQE_DROP,
              dcx_mlx5_ring_cqe(&ring, s, IBV_WC_SUCCESS, 9, &wc));
    /* new WRs keep counting up */
    EXPECT_EQ(s + 2, push(3, DCX_WR_SEND, true));
}

TEST_F(mlx5_ring, completions_of_another_dci_range_are_stale)
{
    dcx_mlx5_ring_t other;

    /* a destroyed DCI's QP number may be reused: its sequence range is not */
    ASSERT_EQ(0, dcx_mlx5_ring_init(&other, 4, kBase + (1ull << 40)));
    push(1, DCX_WR_SEND, true);
    uint64_t s = dcx_mlx5_ring_push(&other, 50, DCX_WR_SEND, true);
    EXPECT_EQ(DCX_MLX5_CQE_DROP,
              dcx_mlx5_ring_cqe(&ring, s, IBV_WC_SUCCESS, 9, &wc));
    EXPECT_EQ(DCX_MLX5_CQE_DROP,
              dcx_mlx5_ring_cqe(&other, kBase, IBV_WC_SUCCESS, 9, &wc));
    dcx_mlx5_ring_cleanup(&other);
}

/* A stream's ring (a DCI with streams): every completion, a flushed one
 * too, is reported by itself and retires the WRs before it */
TEST_F(mlx5_ring, take_reports_any_status_and_retires_earlier_wrs)
{
    push(1, DCX_WR_RDMA_WRITE, false);
    uint64_t s1 = push(2, DCX_WR_RDMA_WRITE, true);
    uint64_t s2 = push(3, DCX_WR_SEND, false);

    ASSERT_EQ(1, dcx_mlx5_ring_take(&ring, s1, IBV_WC_SUCCESS, 7, &wc));
    EXPECT_EQ(2u, wc.wr_id);
    EXPECT_EQ(1u, dcx_mlx5_ring_outstanding(&ring));
    ASSERT_EQ(1, dcx_mlx5_ring_take(&ring, s2, IBV_WC_WR_FLUSH_ERR, 7, &wc));
    EXPECT_EQ(3u, wc.wr_id);
    EXPECT_EQ(DCX_WC_WR_FLUSH_ERR, wc.status);
    EXPECT_EQ(0u, dcx_mlx5_ring_outstanding(&ring));
    /* stale: already retired */
    EXPECT_EQ(0, dcx_mlx5_ring_take(&ring, s1, IBV_WC_SUCCESS, 7, &wc));
}
