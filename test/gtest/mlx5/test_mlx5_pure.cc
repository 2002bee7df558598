/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the mlx5 backend's pure translation rules: fed with
 * synthetic rdma-core structs, no device needed.
 */
#include <gtest/gtest.h>

extern "C" {
#include "mlx5/mlx5_pure.h"
}

#include <errno.h>
#include <string.h>

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
 * Port address format
 * ------------------------------------------------------------------------ */
static dcx_mlx5_addr_t ib_addr()
{
    dcx_mlx5_addr_t a;

    memset(&a, 0, sizeof(a));
    a.lid = 0x1234;
    a.mtu = IBV_MTU_4096;
    return a;
}

static dcx_mlx5_addr_t roce_addr()
{
    dcx_mlx5_addr_t a;

    memset(&a, 0, sizeof(a));
    a.flags = DCX_MLX5_ADDR_F_ETH | DCX_MLX5_ADDR_F_GID |
              DCX_MLX5_ADDR_F_ROCEV2;
    a.mtu     = IBV_MTU_1024;
    /* ::ffff:192.168.1.7 */
    a.gid[10] = 0xff;
    a.gid[11] = 0xff;
    a.gid[12] = 192;
    a.gid[13] = 168;
    a.gid[14] = 1;
    a.gid[15] = 7;
    return a;
}

TEST(mlx5_addr, ib_wire_layout_is_fixed_little_endian)
{
    dcx_mlx5_addr_t a = ib_addr(), b;
    uint8_t buf[DCX_DEV_ADDR_MAX];
    size_t len = sizeof(buf);

    ASSERT_LE(DCX_MLX5_ADDR_LEN, (unsigned)DCX_DEV_ADDR_MAX);
    ASSERT_EQ(0, dcx_mlx5_addr_pack(&a, buf, &len));
    ASSERT_EQ((size_t)DCX_MLX5_ADDR_LEN, len);
    EXPECT_EQ(0x55, buf[0]);
    EXPECT_EQ(0xdc, buf[1]);
    EXPECT_EQ(DCX_MLX5_ADDR_VERSION, buf[2]);
    EXPECT_EQ(0, buf[3]);
    EXPECT_EQ(0x34, buf[4]);
    EXPECT_EQ(0x12, buf[5]);
    EXPECT_EQ(IBV_MTU_4096, buf[6]);
    EXPECT_EQ(0, buf[7]);

    ASSERT_EQ(0, dcx_mlx5_addr_unpack(buf, len, &b, NULL));
    EXPECT_EQ(0, memcmp(&a, &b, sizeof(a)));
}

TEST(mlx5_addr, roce_roundtrip)
{
    dcx_mlx5_addr_t a = roce_addr(), b;
    uint8_t buf[DCX_MLX5_ADDR_LEN];
    size_t len = sizeof(buf);

    ASSERT_EQ(0, dcx_mlx5_addr_pack(&a, buf, &len));
    ASSERT_EQ(0, dcx_mlx5_addr_unpack(buf, len, &b, NULL));
    EXPECT_EQ(a.flags, b.flags);
    EXPECT_EQ(0, memcmp(a.gid, b.gid, 16));
    EXPECT_EQ(0, memcmp(buf + 8, a.gid, 16));
}

TEST(mlx5_addr, pack_refuses_small_buffer_and_bad_address)
{
    dcx_mlx5_addr_t a = ib_addr();
    uint8_t buf[DCX_MLX5_ADDR_LEN];
    size_t len = DCX_MLX5_ADDR_LEN - 1;

    EXPECT_EQ(EINVAL, dcx_mlx5_addr_pack(&a, buf, &len));
    a.lid = 0;
    len   = sizeof(buf);
    EXPECT_EQ(EINVAL, dcx_mlx5_addr_pack(&a, buf, &len));
}

/* Each case corrupts a valid packed address in one way. */
struct bad_addr_case {
    const char *what;
    bool roce;
    size_t len;
    int offset; /* -1: no byte change */
    uint8_t value;
};

TEST(mlx5_addr, malformed_addresses_are_rejected_with_a_reason)
{
    // clang-format off
    const bad_addr_case cases[] = {
        {"short",              false, DCX_MLX5_ADDR_LEN - 1, -1, 0},
        {"long",               false, DCX_MLX5_ADDR_LEN + 1, -1, 0},
        {"empty",              false, 0, -1, 0},
        {"magic lo",           false, DCX_MLX5_ADDR_LEN, 0, 0x00},
        {"magic hi",           false, DCX_MLX5_ADDR_LEN, 1, 0xcd},
        {"version 0",          false, DCX_MLX5_ADDR_LEN, 2, 0},
        {"version 2",          false, DCX_MLX5_ADDR_LEN, 2, 2},
        {"unknown flag",       false, DCX_MLX5_ADDR_LEN, 3, 0x80},
        {"reserved",           false, DCX_MLX5_ADDR_LEN, 7, 1},
        {"mtu 0",              false, DCX_MLX5_ADDR_LEN, 6, 0},
        {"mtu 6",              false, DCX_MLX5_ADDR_LEN, 6, 6},
        {"lid 0",              false, DCX_MLX5_ADDR_LEN, 4, 0x00},
        {"multicast lid",      false, DCX_MLX5_ADDR_LEN, 5, 0xc0},
        {"rocev2 flag on ib",  false, DCX_MLX5_ADDR_LEN, 3,
         DCX_MLX5_ADDR_F_ROCEV2},
        {"gid flag, zero gid", false, DCX_MLX5_ADDR_LEN, 3,
         DCX_MLX5_ADDR_F_GID},
        {"roce without gid",   true,  DCX_MLX5_ADDR_LEN, 3,
         DCX_MLX5_ADDR_F_ETH},
    };
    // clang-format on
    uint8_t buf[DCX_MLX5_ADDR_LEN + 8];

    for (const bad_addr_case &c : cases) {
        dcx_mlx5_addr_t a = c.roce ? roce_addr() : ib_addr(), out;
        size_t len        = sizeof(buf);
        const char *why   = NULL;

        memset(buf, 0, sizeof(buf));
        ASSERT_EQ(0, dcx_mlx5_addr_pack(&a, buf, &len)) << c.what;
        if (c.what[0] == 'l' && c.what[1] == 'i') {
            buf[5] = 0; /* lid 0: clear both bytes */
        }
        if (c.offset >= 0) {
            buf[c.offset] = c.value;
        }
        EXPECT_EQ(EINVAL, dcx_mlx5_addr_unpack(buf, c.len, &out, &why))
            << c.what;
        EXPECT_NE(nullptr, why) << c.what;
    }
    EXPECT_EQ(EINVAL,
              dcx_mlx5_addr_unpack(NULL, DCX_MLX5_ADDR_LEN, NULL, NULL));
}

TEST(mlx5_addr, gid_selection_prefers_rocev2)
{
    struct ibv_gid_entry e[4];

    memset(e, 0, sizeof(e));
    e[0].gid_type    = IBV_GID_TYPE_ROCE_V2; /* empty */
    e[1].gid_type    = IBV_GID_TYPE_ROCE_V1;
    e[1].gid.raw[15] = 1;
    e[2].gid_type    = IBV_GID_TYPE_IB;
    e[2].gid.raw[15] = 2;
    e[3].gid_type    = IBV_GID_TYPE_ROCE_V2;
    e[3].gid.raw[15] = 3;
    EXPECT_EQ(3, dcx_mlx5_gid_select(e, 4));
    EXPECT_EQ(1, dcx_mlx5_gid_select(e, 3));
    EXPECT_EQ(-1, dcx_mlx5_gid_select(e, 1));
    EXPECT_EQ(-1, dcx_mlx5_gid_select(&e[2], 1));
    EXPECT_EQ(-1, dcx_mlx5_gid_select(e, 0));
}

static void set_gid(struct ibv_gid_entry *e, ibv_gid_type type,
                    const uint8_t (&raw)[16], uint32_t index)
{
    memset(e, 0, sizeof(*e));
    memcpy(e->gid.raw, raw, 16);
    e->gid_type  = type;
    e->gid_index = index;
}

/* The table a ConnectX RoCE port shows with an IPv4 and a global IPv6
 * address on its netdev: the link-local pair comes first. */
TEST(mlx5_addr, gid_selection_skips_link_local_and_prefers_ipv4)
{
    const uint8_t ll[16]   = {0xfe, 0x80, 0,    0,    0,    0,    0,    0,
                              0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55};
    const uint8_t v4[16]   = {0, 0, 0,    0,    0,  0, 0, 0,
                              0, 0, 0xff, 0xff, 10, 0, 0, 7};
    const uint8_t glob[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1,
                              0,    0,    0,    0,    0, 0, 0, 7};
    struct ibv_gid_entry e[6];

    set_gid(&e[0], IBV_GID_TYPE_ROCE_V1, ll, 0);
    set_gid(&e[1], IBV_GID_TYPE_ROCE_V2, ll, 1);
    set_gid(&e[2], IBV_GID_TYPE_ROCE_V1, glob, 2);
    set_gid(&e[3], IBV_GID_TYPE_ROCE_V2, glob, 3);
    set_gid(&e[4], IBV_GID_TYPE_ROCE_V1, v4, 4);
    set_gid(&e[5], IBV_GID_TYPE_ROCE_V2, v4, 5);

    EXPECT_EQ(5, dcx_mlx5_gid_select(e, 6)); /* v2 IPv4 */
    EXPECT_EQ(3, dcx_mlx5_gid_select(e, 5)); /* v2 global IPv6 */
    EXPECT_EQ(1, dcx_mlx5_gid_select(e, 3)); /* v2 link-local beats v1 */
    EXPECT_EQ(0, dcx_mlx5_gid_select(e, 1)); /* v1 link-local, last resort */

    /* without v2, v1 follows the same order */
    struct ibv_gid_entry v1[3] = {e[0], e[2], e[4]};
    EXPECT_EQ(2, dcx_mlx5_gid_select(v1, 3));
    EXPECT_EQ(1, dcx_mlx5_gid_select(v1, 2));

    /* ties go to the lower entry; fe80::/10 covers fe80..febf */
    struct ibv_gid_entry two[2] = {e[5], e[5]};
    EXPECT_EQ(0, dcx_mlx5_gid_select(two, 2));
    uint8_t febf[16];
    memcpy(febf, ll, 16);
    febf[1] = 0xbf;
    set_gid(&two[0], IBV_GID_TYPE_ROCE_V2, febf, 0);
    set_gid(&two[1], IBV_GID_TYPE_ROCE_V2, glob, 1);
    EXPECT_EQ(1, dcx_mlx5_gid_select(two, 2));
    febf[1] = 0xc0; /* fec0::, site-local: not link-local */
    set_gid(&two[0], IBV_GID_TYPE_ROCE_V2, febf, 0);
    EXPECT_EQ(0, dcx_mlx5_gid_select(two, 2));
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
 * Timeouts, MTU, bandwidth
 * ------------------------------------------------------------------------ */
TEST(mlx5_encoding, ack_timeout)
{
    EXPECT_EQ(0u, dcx_mlx5_timeout_to_ns(0)); /* infinite */
    EXPECT_EQ(8192u, dcx_mlx5_timeout_to_ns(1));
    EXPECT_EQ(67108864u, dcx_mlx5_timeout_to_ns(14)); /* ~67 ms */
    EXPECT_EQ(4096ull << 31, dcx_mlx5_timeout_to_ns(31));
    EXPECT_EQ(0u, dcx_mlx5_timeout_to_ns(32));
    for (uint8_t t = 1; t <= 31; ++t) {
        EXPECT_EQ(t, dcx_mlx5_timeout_from_ns(dcx_mlx5_timeout_to_ns(t)));
        if (t > 1) {
            EXPECT_EQ(t,
                      dcx_mlx5_timeout_from_ns(dcx_mlx5_timeout_to_ns(t - 1) +
                                               1));
        }
    }
    EXPECT_EQ(1, dcx_mlx5_timeout_from_ns(0));
    EXPECT_EQ(31, dcx_mlx5_timeout_from_ns(UINT64_MAX));
}

TEST(mlx5_encoding, rnr_timer_table)
{
    EXPECT_EQ(655360000u, dcx_mlx5_rnr_timer_to_ns(0));
    EXPECT_EQ(10000u, dcx_mlx5_rnr_timer_to_ns(1));
    EXPECT_EQ(640000u, dcx_mlx5_rnr_timer_to_ns(12));
    EXPECT_EQ(491520000u, dcx_mlx5_rnr_timer_to_ns(31));
    EXPECT_EQ(0u, dcx_mlx5_rnr_timer_to_ns(32));
    for (uint8_t c = 2; c <= 31; ++c) {
        EXPECT_GT(dcx_mlx5_rnr_timer_to_ns(c), dcx_mlx5_rnr_timer_to_ns(c - 1));
    }
}

TEST(mlx5_encoding, transport_params_check)
{
    dcx_qp_attr_t a;
    const char *why = NULL;

    memset(&a, 0, sizeof(a));
    a.timeout       = 31;
    a.retry_cnt     = 7;
    a.rnr_retry     = 7;
    a.min_rnr_timer = 31;
    EXPECT_EQ(0, dcx_mlx5_transport_params_check(&a, &why));
    a.timeout = 32;
    EXPECT_EQ(EINVAL, dcx_mlx5_transport_params_check(&a, &why));
    EXPECT_STREQ("timeout above 31", why);
    a.timeout   = 14;
    a.retry_cnt = 8;
    EXPECT_EQ(EINVAL, dcx_mlx5_transport_params_check(&a, &why));
    a.retry_cnt = 7;
    a.rnr_retry = 8;
    EXPECT_EQ(EINVAL, dcx_mlx5_transport_params_check(&a, &why));
    a.rnr_retry     = 7;
    a.min_rnr_timer = 32;
    EXPECT_EQ(EINVAL, dcx_mlx5_transport_params_check(&a, &why));
}

TEST(mlx5_encoding, mtu)
{
    EXPECT_EQ(256u, dcx_mlx5_mtu_bytes(IBV_MTU_256));
    EXPECT_EQ(4096u, dcx_mlx5_mtu_bytes(IBV_MTU_4096));
    EXPECT_EQ(0u, dcx_mlx5_mtu_bytes((ibv_mtu)0));
    EXPECT_EQ(0u, dcx_mlx5_mtu_bytes((ibv_mtu)6));
    for (int m = IBV_MTU_256; m <= IBV_MTU_4096; ++m) {
        EXPECT_EQ(m, dcx_mlx5_mtu_enum(dcx_mlx5_mtu_bytes((ibv_mtu)m)));
    }
    EXPECT_EQ(0, dcx_mlx5_mtu_enum(1500));
}

TEST(mlx5_encoding, link_bandwidth)
{
    /* 4x EDR = 100 Gb/s of data */
    EXPECT_NEAR(12.5e9, dcx_mlx5_link_bandwidth(2, 32), 1e3);
    /* 4x HDR ~ 206 Gb/s of data after 64/66 */
    EXPECT_NEAR(4 * 53.125e9 * 64 / 66 / 8, dcx_mlx5_link_bandwidth(2, 64),
                1e3);
    /* 1x SDR: 2 Gb/s after 8b/10b */
    EXPECT_NEAR(0.25e9, dcx_mlx5_link_bandwidth(1, 1), 1e3);
    EXPECT_EQ(0.0, dcx_mlx5_link_bandwidth(3, 32));
    EXPECT_EQ(0.0, dcx_mlx5_link_bandwidth(2, 3));
}

/* ------------------------------------------------------------------------
 * Capability translation
 * ------------------------------------------------------------------------ */
class mlx5_caps : public ::testing::Test {
protected:
    void SetUp() override
    {
        memset(&dattr, 0, sizeof(dattr));
        memset(&pattr, 0, sizeof(pattr));
        memset(&probe, 0, sizeof(probe));
        /* a ConnectX-5 as rdma-core reports it */
        strcpy(dattr.orig_attr.fw_ver, "16.35.2000");
        dattr.orig_attr.vendor_id           = 0x02c9;
        dattr.orig_attr.vendor_part_id      = 4119;
        dattr.orig_attr.max_qp              = 262144;
        dattr.orig_attr.max_qp_wr           = 32768;
        dattr.orig_attr.max_sge             = 30;
        dattr.orig_attr.max_cqe             = 4194303;
        dattr.orig_attr.max_mr              = 16777216;
        dattr.orig_attr.max_mr_size         = ~0ull;
        dattr.orig_attr.max_qp_init_rd_atom = 16;
        dattr.orig_attr.atomic_cap          = IBV_ATOMIC_HCA;
        dattr.orig_attr.max_srq_wr          = 32767;
        dattr.orig_attr.max_srq_sge         = 31;
        dattr.orig_attr.phys_port_cnt       = 1;
        /* TM is present on the device; the backend must not offer it */
        dattr.tm_caps.max_num_tags          = 127;
        dattr.tm_caps.flags                 = IBV_TM_CAP_RC;
        dattr.tm_caps.max_rndv_hdr_size     = 64;

        pattr.state        = IBV_PORT_ACTIVE;
        pattr.link_layer   = IBV_LINK_LAYER_INFINIBAND;
        pattr.lid          = 7;
        pattr.active_mtu   = IBV_MTU_4096;
        pattr.max_msg_sz   = 1u << 30;
        pattr.active_width = 2;
        pattr.active_speed = 32;

        probe.dc_ok          = true;
        probe.dct_atomic_ok  = true;
        probe.dci_max_inline = 284;
        probe.dci_max_sge    = 16;
        probe.dci_wqe_size   = 384;
    }

    ibv_device_attr_ex dattr;
    ibv_port_attr pattr;
    dcx_mlx5_probe_t probe;
    dcx_dev_caps_t caps;
};

TEST_F(mlx5_caps, connectx5_infiniband)
{
    dcx_mlx5_caps_translate("mlx5_0", &dattr, &pattr, &probe, &caps);
    EXPECT_STREQ("mlx5_0", caps.name);
    EXPECT_STREQ("16.35.2000", caps.fw_ver);
    EXPECT_EQ((uint32_t)(DCX_CAP_DC | DCX_CAP_HELPER), caps.flags);
    EXPECT_EQ((uint32_t)(DCX_ATOMIC_FADD64 | DCX_ATOMIC_CSWAP64),
              caps.atomic_flags);
    EXPECT_EQ(0x02c9u, caps.vendor_id);
    EXPECT_EQ(4119u, caps.vendor_part_id);
    EXPECT_EQ(5461u, caps.max_qp_wr);
    EXPECT_EQ(32767u, caps.max_srq_wr);
    EXPECT_EQ(4194303u, caps.max_cqe);
    EXPECT_EQ(16u, caps.max_sge);
    /* the device takes 31, the SRQ post path at most DCX_MLX5_MAX_SGE */
    EXPECT_EQ((uint32_t)DCX_MLX5_MAX_SGE, caps.max_recv_sge);
    EXPECT_EQ(284u, caps.max_inline);
    EXPECT_EQ(16u, caps.max_rd_atomic);
    EXPECT_EQ(262144u, caps.max_dci);
    EXPECT_EQ(16777216u, caps.max_mr);
    EXPECT_EQ(~0ull, caps.max_mr_size);
    EXPECT_EQ(1ull << 30, caps.max_msg_size);
    EXPECT_EQ(4096u, caps.mtu);
    EXPECT_EQ((uint32_t)DCX_MLX5_ADDR_LEN, caps.addr_len);
    EXPECT_EQ(0u, caps.tm_max_tags);
    EXPECT_EQ(0u, caps.tm_max_rndv_hdr);
    EXPECT_EQ(0u, caps.mkey_max_entries);
    EXPECT_NEAR(12.5e9, caps.bandwidth_Bps, 1e3);
    EXPECT_GT(caps.latency_ns, 0.0);
    EXPECT_GT(caps.overhead_ns, 0.0);
}

TEST_F(mlx5_caps, never_advertises_what_is_not_implemented)
{
    dcx_mlx5_caps_translate("mlx5_0", &dattr, &pattr, &probe, &caps);
    EXPECT_EQ(0u, caps.flags & (DCX_CAP_TM | DCX_CAP_MKEY_STRIDE));
    EXPECT_EQ(0u, caps.atomic_flags &
                      (DCX_ATOMIC_MASKED_FADD32 | DCX_ATOMIC_MASKED_FADD64 |
                       DCX_ATOMIC_MASKED_CSWAP32 | DCX_ATOMIC_MASKED_CSWAP64));
}

/* QUERY_HCA_CAP answers as the firmware gives them: the capability from
 * byte 16, fields at PRM bit offsets */
class mlx5_atomic_hca : public ::testing::Test {
protected:
    void SetUp() override
    {
        general.assign(DCX_MLX5_HCA_CAP_OUT_LEN, 0);
        atomic.assign(DCX_MLX5_HCA_CAP_OUT_LEN, 0);
        set(general, 542, 1, 1);   /* atomic */
        set(atomic, 144, 16, 0xf); /* CS, FA, masked CS, masked FA */
        set(atomic, 176, 16, 0xc); /* RC: 4 and 8 bytes */
        set(atomic, 208, 16, 0xc); /* DC: 4 and 8 bytes */
    }

    static void set(std::vector<uint8_t> &out, uint32_t bit, uint32_t width,
                    uint32_t v)
    {
        uint8_t *d     = out.data() + 16 + (bit / 32) * 4;
        uint32_t shift = 32 - (bit % 32) - width;
        uint32_t dw    = ((uint32_t)d[0] << 24) | ((uint32_t)d[1] << 16) |
                      ((uint32_t)d[2] << 8) | d[3];

        dw   = (dw & ~(((1u << width) - 1) << shift)) | (v << shift);
        d[0] = (uint8_t)(dw >> 24);
        d[1] = (uint8_t)(dw >> 16);
        d[2] = (uint8_t)(dw >> 8);
        d[3] = (uint8_t)dw;
    }

    uint32_t parse(int expect_ret = 0)
    {
        const char *why = nullptr;
        uint32_t masked = 0xdead;

        EXPECT_EQ(expect_ret,
                  dcx_mlx5_atomic_hca_parse(general.data(), atomic.data(),
                                            general.size(), &masked, &why));
        EXPECT_EQ(expect_ret == 0, why == nullptr);
        return masked;
    }

    std::vector<uint8_t> general, atomic;
};

TEST_F(mlx5_atomic_hca, masked_sizes_of_both_rc_and_dc)
{
    const uint32_t m32 = DCX_ATOMIC_MASKED_FADD32 | DCX_ATOMIC_MASKED_CSWAP32;
    const uint32_t m64 = DCX_ATOMIC_MASKED_FADD64 | DCX_ATOMIC_MASKED_CSWAP64;

    EXPECT_EQ(m32 | m64, parse());
    set(atomic, 208, 16, 0x8); /* DC: 8 bytes only */
    EXPECT_EQ(m64, parse());
    set(atomic, 176, 16, 0x4); /* RC: 4 bytes only: none on both */
    EXPECT_EQ(0u, parse());
}

TEST_F(mlx5_atomic_hca, none_without_every_operation_or_atomics)
{
    set(atomic, 144, 16, 0x7); /* no masked fetch-add */
    EXPECT_EQ(0u, parse());
    set(atomic, 144, 16, 0xf);
    set(general, 542, 1, 0); /* no atomics at all: the atomic answer unread */
    atomic[0] = 1;
    EXPECT_EQ(0u, parse());
}

TEST_F(mlx5_atomic_hca, failed_answers_bad_flow)
{
    atomic[0] = 0x2; /* status BAD_OP */
    EXPECT_EQ(0u, parse(EPROTO));
    atomic[0]  = 0;
    general[0] = 0x3;
    EXPECT_EQ(0u, parse(EPROTO));
}

/* Tag matching on DC: tag_matching (bit 1520) and rndv_offload_dc (1522)
 * of the general capabilities, the list of 2^log_tag_matching_list_sz
 * slots (bits 1523, 5 wide), one always free */
class mlx5_tm_hca : public mlx5_atomic_hca {
protected:
    void SetUp() override
    {
        mlx5_atomic_hca::SetUp();
        set(general, 1520, 1, 1);
        set(general, 1521, 1, 0); /* no RC rendezvous offload: not needed */
        set(general, 1522, 1, 1);
        set(general, 1523, 5, 10);
    }

    uint32_t tm_parse(int expect_ret, const char **why_p)
    {
        uint32_t max_tags = 0xdead;

        *why_p = nullptr;
        EXPECT_EQ(expect_ret,
                  dcx_mlx5_tm_hca_parse(general.data(), general.size(),
                                        &max_tags, why_p));
        return max_tags;
    }
};

TEST_F(mlx5_tm_hca, list_size_from_log)
{
    const char *why;

    EXPECT_EQ(1023u, tm_parse(0, &why));
    EXPECT_EQ(nullptr, why);
    set(general, 1523, 5, 1);
    EXPECT_EQ(1u, tm_parse(0, &why));
    set(general, 1523, 5, 16); /* an XRQ's list takes 2^15 slots */
    EXPECT_EQ(32767u, tm_parse(0, &why));
}

TEST_F(mlx5_tm_hca, none_without_dc_offload_bad_flow)
{
    const char *why;

    set(general, 1522, 1, 0); /* RC only */
    EXPECT_EQ(0u, tm_parse(0, &why));
    EXPECT_NE(nullptr, why);
    set(general, 1522, 1, 1);
    set(general, 1520, 1, 0);
    EXPECT_EQ(0u, tm_parse(0, &why));
    EXPECT_NE(nullptr, why);
    set(general, 1520, 1, 1);
    set(general, 1523, 5, 0); /* a list of one slot holds no entry */
    EXPECT_EQ(0u, tm_parse(0, &why));
    EXPECT_NE(nullptr, why);
}

TEST_F(mlx5_tm_hca, failed_answer_bad_flow)
{
    const char *why;

    general[0] = 0x3;
    EXPECT_EQ(0u, tm_parse(EPROTO, &why));
    EXPECT_NE(nullptr, why);
    general[0] = 0;
    general.resize(100);
    EXPECT_EQ(0u, tm_parse(EPROTO, &why));
}

TEST(mlx5_prm, set_writes_only_its_field)
{
    uint8_t b[16];

    memset(b, 0xff, sizeof(b));
    dcx_mlx5_prm_set(b, 13, 7, 0);
    EXPECT_EQ(0u, dcx_mlx5_prm_get(b, 13, 7));
    EXPECT_EQ(1u, dcx_mlx5_prm_get(b, 12, 1));
    EXPECT_EQ(1u, dcx_mlx5_prm_get(b, 20, 1));
    dcx_mlx5_prm_set(b, 13, 7, 0x55);
    EXPECT_EQ(0x55u, dcx_mlx5_prm_get(b, 13, 7));
    memset(b, 0, sizeof(b));
    dcx_mlx5_prm_set(b, 32, 32, 0x12345678u);
    EXPECT_EQ(0x12, b[4]);
    EXPECT_EQ(0x78, b[7]);
    dcx_mlx5_prm_set64(b, 64, 0x0102030405060708ull);
    EXPECT_EQ(0x01, b[8]);
    EXPECT_EQ(0x08, b[15]);
    EXPECT_EQ(0, b[3]);
}

TEST(mlx5_hca, query_command_names_its_type)
{
    uint8_t in[DCX_MLX5_HCA_CAP_IN_LEN];

    dcx_mlx5_hca_cap_query_in(in, DCX_MLX5_CAP_ATOMIC);
    EXPECT_EQ(0x01, in[0]);
    EXPECT_EQ(0x00, in[1]);
    EXPECT_EQ(0x00, in[6]);
    EXPECT_EQ(0x07, in[7]); /* atomic (3) << 1 | current */
}

TEST_F(mlx5_caps, atomics_need_device_and_dct_support)
{
    dattr.orig_attr.atomic_cap = IBV_ATOMIC_NONE;
    dcx_mlx5_caps_translate("mlx5_0", &dattr, &pattr, &probe, &caps);
    EXPECT_EQ(0u, caps.atomic_flags);

    dattr.orig_attr.atomic_cap = IBV_ATOMIC_GLOB;
    probe.dct_atomic_ok        = false;
    dcx_mlx5_caps_translate("mlx5_0", &dattr, &pattr, &probe, &caps);
    EXPECT_EQ(0u, caps.atomic_flags);
}

TEST_F(mlx5_caps, receive_sge_is_what_srq_create_accepts)
{
    dattr.orig_attr.max_srq_sge = 4;
    dcx_mlx5_caps_translate("mlx5_0", &dattr, &pattr, &probe, &caps);
    EXPECT_EQ(4u, caps.max_recv_sge);
    dattr.orig_attr.max_srq_sge = DCX_MLX5_MAX_SGE + 1;
    dcx_mlx5_caps_translate("mlx5_0", &dattr, &pattr, &probe, &caps);
    EXPECT_EQ((uint32_t)DCX_MLX5_MAX_SGE, caps.max_recv_sge);
    EXPECT_LE(caps.max_sge, (uint32_t)DCX_MLX5_MAX_SGE);
}

TEST_F(mlx5_caps, rd_atomic_is_what_a_dci_reached_rts_with)
{
    /* not probed: the RC limit verbs reports */
    dcx_mlx5_caps_translate("mlx5_0", &dattr, &pattr, &probe, &caps);
    EXPECT_EQ(16u, caps.max_rd_atomic);
    /* the DC limit is lower on this device */
    probe.dci_max_rd_atomic = 4;
    dcx_mlx5_caps_translate("mlx5_0", &dattr, &pattr, &probe, &caps);
    EXPECT_EQ(4u, caps.max_rd_atomic);
    /* never above what verbs reports */
    probe.dci_max_rd_atomic = 64;
    dcx_mlx5_caps_translate("mlx5_0", &dattr, &pattr, &probe, &caps);
    EXPECT_EQ(16u, caps.max_rd_atomic);
}

TEST(mlx5_rd_atomic, probe_sequence_is_powers_of_two_down_to_one)
{
    std::vector<uint32_t> seq;

    for (uint32_t rd = dcx_mlx5_rd_atomic_first(16); rd != 0;
         rd          = dcx_mlx5_rd_atomic_next(rd)) {
        seq.push_back(rd);
    }
    EXPECT_EQ((std::vector<uint32_t>{16, 8, 4, 2, 1}), seq);
    /* the kernel rounds up to a power of two: never start above the limit */
    EXPECT_EQ(16u, dcx_mlx5_rd_atomic_first(24));
    EXPECT_EQ(1u, dcx_mlx5_rd_atomic_first(1));
    EXPECT_EQ(0u, dcx_mlx5_rd_atomic_first(0));
    EXPECT_EQ(0u, dcx_mlx5_rd_atomic_first(-1));
    /* the verbs field is 8 bits */
    EXPECT_EQ(128u, dcx_mlx5_rd_atomic_first(1 << 20));
    EXPECT_EQ(0u, dcx_mlx5_rd_atomic_next(1));
}

TEST_F(mlx5_caps, no_dc_without_a_dci)
{
    probe.dc_ok = false;
    dcx_mlx5_caps_translate("mlx5_0", &dattr, &pattr, &probe, &caps);
    EXPECT_EQ(0u, caps.flags & DCX_CAP_DC);
}

TEST_F(mlx5_caps, roce_port_and_long_names)
{
    std::string name(100, 'x');

    pattr.link_layer = IBV_LINK_LAYER_ETHERNET;
    pattr.lid        = 0;
    pattr.active_mtu = IBV_MTU_1024;
    dcx_mlx5_caps_translate(name.c_str(), &dattr, &pattr, &probe, &caps);
    EXPECT_EQ(1024u, caps.mtu);
    EXPECT_EQ(DCX_DEV_NAME_MAX - 1, (int)strlen(caps.name));

    ibv_port_attr ib = pattr;
    ib.link_layer    = IBV_LINK_LAYER_INFINIBAND;
    dcx_dev_caps_t ib_caps;
    dcx_mlx5_caps_translate("mlx5_0", &dattr, &ib, &probe, &ib_caps);
    EXPECT_GT(caps.latency_ns, ib_caps.latency_ns);
}

TEST_F(mlx5_caps, port_check)
{
    const char *why = NULL;

    EXPECT_EQ(0, dcx_mlx5_port_check(&pattr, &why));
    pattr.state = IBV_PORT_DOWN;
    EXPECT_EQ(ENODEV, dcx_mlx5_port_check(&pattr, &why));
    pattr.state = IBV_PORT_ACTIVE;
    pattr.lid   = 0;
    EXPECT_EQ(ENODEV, dcx_mlx5_port_check(&pattr, &why));
    pattr.link_layer = IBV_LINK_LAYER_ETHERNET; /* RoCE: no LID needed */
    EXPECT_EQ(0, dcx_mlx5_port_check(&pattr, &why));
    pattr.link_layer = 7;
    EXPECT_EQ(ENODEV, dcx_mlx5_port_check(&pattr, &why));
    pattr.link_layer = IBV_LINK_LAYER_ETHERNET;
    pattr.active_mtu = (ibv_mtu)0;
    EXPECT_EQ(ENODEV, dcx_mlx5_port_check(&pattr, &why));
    EXPECT_NE(nullptr, why);
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
