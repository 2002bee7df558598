/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the mlx5 backend's strided-key (UMR) computation:
 * docs/device-semantics.md sections 10.1-10.5 (entry rounding, WQE sizing,
 * the entry limits of one request, access flags, layout encoding and its
 * refusals), 10.7 (invalidation completions), the loopback RC QP's masks and
 * completion routing, and the capabilities read from the HCA (fed with
 * synthetic QUERY_HCA_CAP answers).
 */
#include <gtest/gtest.h>

extern "C" {
#include "mlx5/mlx5_umr.h"
}

#include <errno.h>
#include <string.h>

#include <vector>

TEST(mlx5_umr, mkey_entries_round_to_4)
{
    EXPECT_EQ(0u, dcx_mlx5_mkey_round_entries(0));
    EXPECT_EQ(4u, dcx_mlx5_mkey_round_entries(1));
    EXPECT_EQ(4u, dcx_mlx5_mkey_round_entries(4));
    EXPECT_EQ(8u, dcx_mlx5_mkey_round_entries(5));
    EXPECT_EQ(0xfffcu, dcx_mlx5_mkey_round_entries(0xfffc));
    /* 0xfffd would round past the 16-bit max_entries */
    EXPECT_EQ(0u, dcx_mlx5_mkey_round_entries(0xfffd));
}

TEST(mlx5_umr, inline_needed_per_layout)
{
    /* 16 (n + 1) - 4 interleaved, 16 n - 4 list */
    EXPECT_EQ(60u, dcx_mlx5_umr_inline_needed(3, 1));
    EXPECT_EQ(60u, dcx_mlx5_umr_inline_needed(4, 0));
    EXPECT_EQ(16u * 101 - 4, dcx_mlx5_umr_inline_needed(100, 1));
    EXPECT_EQ(16u * 100 - 4, dcx_mlx5_umr_inline_needed(100, 0));
    EXPECT_EQ(0u, dcx_mlx5_umr_inline_needed(0, 0));
}

TEST(mlx5_umr, entries_fit_default_inline)
{
    /* the default ~60 inline bytes: 3 interleaved or 4 list entries */
    EXPECT_EQ(3u, dcx_mlx5_umr_entries_fit(60, 256, 1));
    EXPECT_EQ(4u, dcx_mlx5_umr_entries_fit(60, 256, 0));
    /* the key is the limit: the repetition header takes one of its slots */
    EXPECT_EQ(7u, dcx_mlx5_umr_entries_fit(16 * 64 - 4, 8, 1));
    EXPECT_EQ(8u, dcx_mlx5_umr_entries_fit(16 * 64 - 4, 8, 0));
    EXPECT_EQ(0u, dcx_mlx5_umr_entries_fit(0, 8, 1));
    /* inline_needed and entries_fit agree for every size */
    for (uint32_t n = 1; n < 300; ++n) {
        EXPECT_EQ(n, dcx_mlx5_umr_entries_fit(dcx_mlx5_umr_inline_needed(n, 1),
                                              0xfffc, 1))
            << n;
        EXPECT_EQ(n, dcx_mlx5_umr_entries_fit(dcx_mlx5_umr_inline_needed(n, 0),
                                              0xfffc, 0))
            << n;
    }
}

TEST(mlx5_umr, sq_size)
{
    dcx_mlx5_sq_size_t sz;

    /* 16 entries: 192 + 256 = 448 -> 448-byte WQEs */
    ASSERT_EQ(0, dcx_mlx5_umr_sq_size(16, 8, 1024, 32768, &sz));
    EXPECT_EQ(448u, sz.wqe_size);
    EXPECT_EQ(448u - 192 - 4, sz.max_inline);
    EXPECT_GE(sz.max_inline, dcx_mlx5_umr_inline_needed(16, 0));
    EXPECT_GE(sz.max_inline, dcx_mlx5_umr_inline_needed(15, 1));
    EXPECT_GE(sz.max_post, 8u);
    EXPECT_EQ(0u, sz.wqe_bbs & (sz.wqe_bbs - 1)); /* power of 2 */
    /* 17 entries round the WQE up to 512 bytes */
    ASSERT_EQ(0, dcx_mlx5_umr_sq_size(17, 1, 1024, 32768, &sz));
    EXPECT_EQ(512u, sz.wqe_size);
    /* over the device's WQE size, or queue, or nonsense */
    EXPECT_EQ(EINVAL, dcx_mlx5_umr_sq_size(53, 1, 1024, 32768, &sz));
    EXPECT_EQ(0, dcx_mlx5_umr_sq_size(52, 1, 1024, 32768, &sz));
    EXPECT_EQ(EINVAL, dcx_mlx5_umr_sq_size(16, 1024, 1024, 64, &sz));
    EXPECT_EQ(EINVAL, dcx_mlx5_umr_sq_size(0, 1, 1024, 32768, &sz));
    EXPECT_EQ(EINVAL, dcx_mlx5_umr_sq_size(16, 0, 1024, 32768, &sz));
}

TEST(mlx5_umr, max_entries_from_wqe_size)
{
    EXPECT_EQ(52u, dcx_mlx5_mkey_max_entries(1024));
    EXPECT_EQ(20u, dcx_mlx5_mkey_max_entries(512));
    EXPECT_EQ(0u, dcx_mlx5_mkey_max_entries(192));
    /* whatever it says fits the sizing */
    for (uint32_t d = 256; d <= 8192; d += 64) {
        uint32_t n = dcx_mlx5_mkey_max_entries(d);
        dcx_mlx5_sq_size_t sz;
        ASSERT_EQ(0u, n % 4) << d;
        ASSERT_EQ(0, dcx_mlx5_umr_sq_size(n, 1, d, 1u << 20, &sz)) << d;
        EXPECT_NE(0, dcx_mlx5_umr_sq_size(n + 4, 1, d, 1u << 20, &sz)) << d;
    }
}

TEST(mlx5_umr, access_flags)
{
    EXPECT_EQ((uint32_t)IBV_ACCESS_LOCAL_WRITE,
              dcx_mlx5_mkey_access(DCX_ACCESS_LOCAL_WRITE));
    EXPECT_EQ((uint32_t)(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                         IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC),
              dcx_mlx5_mkey_access(DCX_ACCESS_LOCAL_WRITE |
                                   DCX_ACCESS_REMOTE_WRITE |
                                   DCX_ACCESS_REMOTE_READ |
                                   DCX_ACCESS_REMOTE_ATOMIC));
    EXPECT_EQ(0u, dcx_mlx5_mkey_access(0));
}

namespace {

struct umr_case {
    std::vector<dcx_mkey_interleaved_t> il;
    std::vector<dcx_sge_t> list;
    dcx_mkey_layout_t lay;
    dcx_send_wr_t wr;

    umr_case(dcx_wr_opcode_t op, unsigned n)
    {
        for (unsigned i = 0; i < n; ++i) {
            dcx_mkey_interleaved_t e;
            memset(&e, 0, sizeof(e));
            e.addr        = 0x10000 + i * 0x1000;
            e.bytes_count = 8 + i;
            e.bytes_skip  = 100;
            e.lkey        = 0x500 + i;
            il.push_back(e);
            list.push_back({0x90000ull + i * 64, 32 + i, 0x700 + i});
        }
        memset(&lay, 0, sizeof(lay));
        lay.access       = DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_READ;
        lay.repeat_count = 10;
        lay.num_entries  = n;
        lay.interleaved  = il.data();
        lay.list         = list.data();
        memset(&wr, 0, sizeof(wr));
        wr.opcode      = op;
        wr.mkey_layout = &lay;
    }

    int run(uint32_t mkey_entries = 8, uint32_t max_inline = 16 * 64,
            uint32_t access_ok = DCX_ACCESS_LOCAL_WRITE |
                                 DCX_ACCESS_REMOTE_WRITE |
                                 DCX_ACCESS_REMOTE_READ |
                                 DCX_ACCESS_REMOTE_ATOMIC)
    {
        std::vector<struct mlx5dv_mr_interleaved> oi(il.size() + 1);
        std::vector<struct ibv_sge> os(list.size() + 1);
        const char *why = nullptr;
        /* a copied case points at its own arrays */
        lay.interleaved = il.data();
        lay.list        = list.data();
        if (wr.mkey_layout != nullptr) {
            wr.mkey_layout = &lay;
        }
        int ret = dcx_mlx5_umr_layout(&wr, mkey_entries, max_inline,
                                      DCX_MLX5_MKEY_MAX_STRIDE, access_ok,
                                      oi.data(), os.data(), &why);
        if (ret != 0) {
            EXPECT_NE(nullptr, why);
            return ret;
        }
        for (size_t i = 0; i < lay.num_entries; ++i) {
            if (wr.opcode == DCX_WR_MKEY_INTERLEAVED) {
                EXPECT_EQ(il[i].addr, oi[i].addr);
                EXPECT_EQ(il[i].bytes_count, oi[i].bytes_count);
                EXPECT_EQ(il[i].bytes_skip, oi[i].bytes_skip);
                EXPECT_EQ(il[i].lkey, oi[i].lkey);
            } else {
                EXPECT_EQ(list[i].addr, os[i].addr);
                EXPECT_EQ(list[i].length, os[i].length);
                EXPECT_EQ(list[i].lkey, os[i].lkey);
            }
        }
        return 0;
    }
};

} // namespace

TEST(mlx5_umr, layout_entry_limits)
{
    /* interleaved: 7 + 1 header fit a key of 8, 8 do not */
    EXPECT_EQ(0, umr_case(DCX_WR_MKEY_INTERLEAVED, 7).run());
    EXPECT_EQ(ENOMEM, umr_case(DCX_WR_MKEY_INTERLEAVED, 8).run());
    /* list: 8 fit, 9 do not */
    EXPECT_EQ(0, umr_case(DCX_WR_MKEY_LIST, 8).run());
    EXPECT_EQ(ENOMEM, umr_case(DCX_WR_MKEY_LIST, 9).run());
    /* the WQE's inline room is a limit too: 60 bytes = 3 / 4 entries */
    EXPECT_EQ(0, umr_case(DCX_WR_MKEY_INTERLEAVED, 3).run(256, 60));
    EXPECT_EQ(ENOMEM, umr_case(DCX_WR_MKEY_INTERLEAVED, 4).run(256, 60));
    EXPECT_EQ(0, umr_case(DCX_WR_MKEY_LIST, 4).run(256, 60));
    EXPECT_EQ(ENOMEM, umr_case(DCX_WR_MKEY_LIST, 5).run(256, 60));
}

TEST(mlx5_umr, layout_bad_flow)
{
    umr_case c(DCX_WR_MKEY_INTERLEAVED, 2);
    c.lay.access |= 0x40;
    EXPECT_EQ(EINVAL, c.run());
    c                  = umr_case(DCX_WR_MKEY_INTERLEAVED, 2);
    c.lay.repeat_count = 0;
    EXPECT_EQ(EINVAL, c.run());
    c                   = umr_case(DCX_WR_MKEY_INTERLEAVED, 2);
    c.il[1].bytes_count = 0x10000; /* would be truncated */
    c.il[1].bytes_skip  = 0;
    EXPECT_EQ(EINVAL, c.run());
    c                   = umr_case(DCX_WR_MKEY_INTERLEAVED, 2);
    c.il[1].bytes_count = 0x8000;
    c.il[1].bytes_skip  = 0x8000; /* stride 64 KiB */
    EXPECT_EQ(EINVAL, c.run());
    c.il[1].bytes_skip = 0x7fff; /* stride 0xffff: fits */
    EXPECT_EQ(0, c.run());
    c                   = umr_case(DCX_WR_MKEY_INTERLEAVED, 2);
    c.il[0].bytes_count = c.il[1].bytes_count = 0;
    EXPECT_EQ(EINVAL, c.run());
    c                 = umr_case(DCX_WR_MKEY_LIST, 2);
    c.lay.num_entries = 0;
    EXPECT_EQ(EINVAL, c.run());
    c                = umr_case(DCX_WR_MKEY_LIST, 2);
    c.wr.mkey_layout = nullptr;
    EXPECT_EQ(EINVAL, c.run());
    c = umr_case(DCX_WR_MKEY_INVALIDATE, 2);
    EXPECT_EQ(EINVAL, c.run()); /* not a configure */
}

TEST(mlx5_umr, layout_access_the_device_refuses_bad_flow)
{
    const uint32_t no_atomic = DCX_ACCESS_LOCAL_WRITE |
                               DCX_ACCESS_REMOTE_WRITE | DCX_ACCESS_REMOTE_READ;
    umr_case c(DCX_WR_MKEY_LIST, 2);

    /* umr_modify_atomic_disabled: a key may not grant REMOTE_ATOMIC */
    c.lay.access = DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_ATOMIC;
    EXPECT_EQ(EINVAL, c.run(8, 16 * 64, no_atomic));
    EXPECT_EQ(0, c.run());
    c.lay.access = DCX_ACCESS_REMOTE_READ;
    EXPECT_EQ(0, c.run(8, 16 * 64, no_atomic));
}

TEST(mlx5_umr, completion_opcodes)
{
    EXPECT_EQ(DCX_WC_UMR, dcx_mlx5_wr_wc_opcode(DCX_WR_MKEY_INTERLEAVED));
    EXPECT_EQ(DCX_WC_UMR, dcx_mlx5_wr_wc_opcode(DCX_WR_MKEY_LIST));
    EXPECT_EQ(DCX_WC_LOCAL_INV, dcx_mlx5_wr_wc_opcode(DCX_WR_MKEY_INVALIDATE));

    /* through the ring, as the CQ reports them: success, error, flush */
    dcx_mlx5_ring_t ring;
    dcx_wc_t wc;
    ASSERT_EQ(0, dcx_mlx5_ring_init(&ring, 4, 100));
    uint64_t s1 = dcx_mlx5_ring_push(&ring, 11, DCX_WR_MKEY_INTERLEAVED, 1);
    uint64_t s2 = dcx_mlx5_ring_push(&ring, 12, DCX_WR_MKEY_INVALIDATE, 1);
    dcx_mlx5_ring_push(&ring, 13, DCX_WR_MKEY_LIST, 1);
    ASSERT_EQ(DCX_MLX5_CQE_REPORT,
              dcx_mlx5_ring_cqe(&ring, s1, IBV_WC_SUCCESS, 7, &wc));
    EXPECT_EQ(11u, wc.wr_id);
    EXPECT_EQ(DCX_WC_UMR, wc.opcode);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(7u, wc.qp_num);
    /* a bad lkey inside a layout: an error CQE on the UMR QP
     * (docs/device-semantics.md section 10.8) */
    ASSERT_EQ(DCX_MLX5_CQE_FAILED,
              dcx_mlx5_ring_cqe(&ring, s2, IBV_WC_LOC_PROT_ERR, 7, &wc));
    EXPECT_EQ(12u, wc.wr_id);
    EXPECT_EQ(DCX_WC_LOCAL_INV, wc.opcode);
    EXPECT_EQ(DCX_WC_LOC_PROT_ERR, wc.status);
    ASSERT_EQ(1, dcx_mlx5_ring_flush_one(&ring, 7, &wc));
    EXPECT_EQ(13u, wc.wr_id);
    EXPECT_EQ(DCX_WC_UMR, wc.opcode);
    EXPECT_EQ(DCX_WC_WR_FLUSH_ERR, wc.status);
    EXPECT_EQ(0, dcx_mlx5_ring_flush_one(&ring, 7, &wc));
    dcx_mlx5_ring_cleanup(&ring);
}

TEST(mlx5_umr, completions_route_to_the_umr_qp)
{
    /* a UMR QP completes as a requester, also on a CQ that DCTs share */
    EXPECT_EQ(DCX_MLX5_ROUTE_DCI, dcx_mlx5_cq_route(true, DCX_QPT_UMR, 0));
    EXPECT_EQ(DCX_MLX5_ROUTE_DCI, dcx_mlx5_cq_route(true, DCX_QPT_UMR, 2));
    EXPECT_EQ(DCX_MLX5_ROUTE_RECV, dcx_mlx5_cq_route(true, DCX_QPT_DCT, 0));
}

TEST(mlx5_umr, loopback_rc_masks)
{
    const uint32_t init = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                          IBV_QP_ACCESS_FLAGS;
    const uint32_t rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                         IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                         IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    const uint32_t rts = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                         IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                         IBV_QP_MAX_QP_RD_ATOMIC;

    /* RC, unlike a DCI: ACCESS_FLAGS at INIT, the destination at RTR */
    EXPECT_EQ(0, dcx_mlx5_qp_mask_check(DCX_QPT_UMR, DCX_QPS_RESET,
                                        DCX_QPS_INIT, init));
    EXPECT_EQ(EINVAL,
              dcx_mlx5_qp_mask_check(DCX_QPT_UMR, DCX_QPS_RESET, DCX_QPS_INIT,
                                     init & ~IBV_QP_ACCESS_FLAGS));
    EXPECT_EQ(0, dcx_mlx5_qp_mask_check(DCX_QPT_UMR, DCX_QPS_INIT, DCX_QPS_RTR,
                                        rtr));
    EXPECT_EQ(EINVAL,
              dcx_mlx5_qp_mask_check(DCX_QPT_UMR, DCX_QPS_INIT, DCX_QPS_RTR,
                                     rtr & ~IBV_QP_DEST_QPN));
    EXPECT_EQ(EINVAL, dcx_mlx5_qp_mask_check(DCX_QPT_UMR, DCX_QPS_INIT,
                                             DCX_QPS_RTR, rtr & ~IBV_QP_AV));
    EXPECT_EQ(0, dcx_mlx5_qp_mask_check(DCX_QPT_UMR, DCX_QPS_RTR, DCX_QPS_RTS,
                                        rts));
    EXPECT_EQ(EINVAL,
              dcx_mlx5_qp_mask_check(DCX_QPT_UMR, DCX_QPS_RTR, DCX_QPS_RTS,
                                     rts | IBV_QP_DEST_QPN));
    /* error and recovery: to ERR, then RESET -> INIT -> RTR -> RTS */
    EXPECT_NE(nullptr, dcx_mlx5_qp_transition_find(DCX_QPT_UMR, DCX_QPS_RTS,
                                                   DCX_QPS_ERR));
    EXPECT_NE(nullptr, dcx_mlx5_qp_transition_find(DCX_QPT_UMR, DCX_QPS_ERR,
                                                   DCX_QPS_RESET));
}

namespace {

/* Writes a field the way the PRM numbers bits: bit 0 is the most
 * significant bit of the first big-endian dword. */
void prm_set(std::vector<uint8_t> &buf, size_t base, unsigned bit,
             unsigned width, uint32_t value)
{
    for (unsigned i = 0; i < width; ++i) {
        unsigned b    = bit + i;
        bool one      = (value >> (width - 1 - i)) & 1;
        uint8_t &byte = buf[base + b / 8];
        uint8_t mask  = (uint8_t)(0x80u >> (b % 8));
        byte          = one ? (byte | mask) : (byte & ~mask);
    }
}

struct hca_answer {
    std::vector<uint8_t> out;

    hca_answer() : out(DCX_MLX5_HCA_CAP_OUT_LEN, 0) {}

    void set(unsigned bit, unsigned width, uint32_t value)
    {
        prm_set(out, 16, bit, width, value); /* capability at byte 16 */
    }
};

dcx_mlx5_umr_probe_t good_probe()
{
    dcx_mlx5_umr_probe_t p;

    memset(&p, 0, sizeof(p));
    p.devx            = true;
    p.mem_mgt_ext     = true;
    p.hca_ok          = true;
    p.hca.log_max_klm = 16;
    p.mkey_ok         = true;
    p.qp_entries      = 52; /* 1024-byte WQEs */
    p.qp_wqe_size     = 1024;
    p.max_qp_wr       = 32768;
    return p;
}

} // namespace

TEST(mlx5_umr, hca_cap_query_command)
{
    uint8_t in[DCX_MLX5_HCA_CAP_IN_LEN];

    memset(in, 0xff, sizeof(in));
    dcx_mlx5_hca_cap_query_in(in, DCX_MLX5_CAP_GENERAL);
    /* opcode 0x100 big-endian in bits 0..15; op_mod 1 (general caps,
     * current values) in bits 48..63; everything else 0 */
    EXPECT_EQ(0x01, in[0]);
    EXPECT_EQ(0x00, in[1]);
    EXPECT_EQ(0x00, in[6]);
    EXPECT_EQ(0x01, in[7]);
    for (unsigned i = 2; i < sizeof(in); ++i) {
        if (i != 7) {
            EXPECT_EQ(0, in[i]) << "byte " << i;
        }
    }
}

TEST(mlx5_umr, hca_cap_parse)
{
    dcx_mlx5_umr_hca_t hca;
    const char *why = nullptr;
    hca_answer a;

    /* neighbours set, fields clear: nothing leaks into the fields */
    a.set(DCX_MLX5_CAP_LOG_MAX_KLM_BIT - 2, 2, 3); /* umr_ext, null_mkey */
    a.set(DCX_MLX5_CAP_LOG_MAX_KLM_BIT + 6, 10, 0x3ff);
    a.set(DCX_MLX5_CAP_REPEATED_BLOCK_DIS - 1, 1, 1);
    a.set(DCX_MLX5_CAP_UMR_INDIRECT_DIS + 1, 2, 3); /* umr_fence */
    ASSERT_EQ(0,
              dcx_mlx5_umr_hca_parse(a.out.data(), a.out.size(), &hca, &why));
    EXPECT_EQ(0u, hca.log_max_klm);
    EXPECT_FALSE(hca.repeated_block_disabled);
    EXPECT_FALSE(hca.atomic_disabled);
    EXPECT_FALSE(hca.indirect_disabled);

    a.set(DCX_MLX5_CAP_LOG_MAX_KLM_BIT, 6, 21);
    a.set(DCX_MLX5_CAP_UMR_ATOMIC_DIS, 1, 1);
    ASSERT_EQ(0,
              dcx_mlx5_umr_hca_parse(a.out.data(), a.out.size(), &hca, &why));
    EXPECT_EQ(21u, hca.log_max_klm);
    EXPECT_TRUE(hca.atomic_disabled);
    EXPECT_FALSE(hca.indirect_disabled);
    EXPECT_FALSE(hca.repeated_block_disabled);

    a.set(DCX_MLX5_CAP_UMR_INDIRECT_DIS, 1, 1);
    a.set(DCX_MLX5_CAP_REPEATED_BLOCK_DIS, 1, 1);
    ASSERT_EQ(0,
              dcx_mlx5_umr_hca_parse(a.out.data(), a.out.size(), &hca, &why));
    EXPECT_TRUE(hca.indirect_disabled);
    EXPECT_TRUE(hca.repeated_block_disabled);

    /* the PRM offsets: byte 0x23 of the capability holds the KLM log size
     * in its low 6 bits; repeated_block_disabled is bit 1 of byte 0x40;
     * umr_modify_atomic_disabled and umr_indirect_mkey_disabled are the
     * top two bits of byte 0x41 */
    EXPECT_EQ(21, a.out[16 + 0x23] & 0x3f);
    EXPECT_EQ(0x02, a.out[16 + 0x40] & 0x02);
    EXPECT_EQ(0xc0, a.out[16 + 0x41] & 0xc0);
}

TEST(mlx5_umr, hca_cap_parse_bad_flow)
{
    dcx_mlx5_umr_hca_t hca;
    const char *why = nullptr;
    hca_answer a;

    EXPECT_EQ(EPROTO, dcx_mlx5_umr_hca_parse(a.out.data(), a.out.size() - 1,
                                             &hca, &why));
    EXPECT_NE(nullptr, why);
    why      = nullptr;
    a.out[0] = 0x05; /* firmware status: bad parameter */
    EXPECT_EQ(EPROTO,
              dcx_mlx5_umr_hca_parse(a.out.data(), a.out.size(), &hca, &why));
    EXPECT_NE(nullptr, why);
}

TEST(mlx5_umr, caps_from_probe)
{
    dcx_mlx5_umr_probe_t p = good_probe();
    uint32_t max_wr = 0, access = 0;
    const char *why = "unset";
    dcx_dev_caps_t caps;

    memset(&caps, 0, sizeof(caps));
    caps.flags = DCX_CAP_DC;
    ASSERT_EQ(0,
              dcx_mlx5_umr_caps_translate(&p, &caps, &max_wr, &access, &why));
    EXPECT_EQ(nullptr, why);
    EXPECT_EQ((uint32_t)(DCX_CAP_DC | DCX_CAP_MKEY_STRIDE), caps.flags);
    EXPECT_EQ(52u, caps.mkey_max_entries);
    EXPECT_EQ(0xffffu, caps.mkey_max_stride);
    EXPECT_EQ((uint32_t)DCX_QPT_UMR, caps.mkey_qp_type);
    /* 32768 basic blocks of 64 bytes, 1024-byte WQEs */
    EXPECT_EQ(2048u, max_wr);
    EXPECT_EQ((uint32_t)(DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE |
                         DCX_ACCESS_REMOTE_READ | DCX_ACCESS_REMOTE_ATOMIC),
              access);

    /* the key size the HCA allows bounds it too, rounded down to 4 */
    p.hca.log_max_klm = 5;
    ASSERT_EQ(0,
              dcx_mlx5_umr_caps_translate(&p, &caps, &max_wr, &access, &why));
    EXPECT_EQ(32u, caps.mkey_max_entries);
    p.qp_entries = 30;
    ASSERT_EQ(0,
              dcx_mlx5_umr_caps_translate(&p, &caps, &max_wr, &access, &why));
    EXPECT_EQ(28u, caps.mkey_max_entries);

    /* umr_modify_atomic_disabled: keys, but no REMOTE_ATOMIC through them */
    p                     = good_probe();
    p.hca.atomic_disabled = true;
    ASSERT_EQ(0,
              dcx_mlx5_umr_caps_translate(&p, &caps, &max_wr, &access, &why));
    EXPECT_EQ(0u, access & DCX_ACCESS_REMOTE_ATOMIC);
    EXPECT_NE(0u, access & DCX_ACCESS_REMOTE_READ);

    /* a UMR QP sized for the advertised entries carries a whole key:
     * n list entries, or n - 1 interleaved ones plus the header */
    uint32_t n = caps.mkey_max_entries;
    EXPECT_EQ(n,
              dcx_mlx5_umr_entries_fit(dcx_mlx5_umr_inline_needed(n, 0), n, 0));
    EXPECT_EQ(n - 1,
              dcx_mlx5_umr_entries_fit(dcx_mlx5_umr_inline_needed(n, 0), n, 1));
}

TEST(mlx5_umr, caps_from_probe_bad_flow)
{
    struct missing {
        const char *what;
        void (*apply)(dcx_mlx5_umr_probe_t *);
    };
    static const missing cases[] = {
        {"DEVX", [](dcx_mlx5_umr_probe_t *p) { p->devx = false; }},
        {"MEM_MGT_EXTENSIONS",
         [](dcx_mlx5_umr_probe_t *p) { p->mem_mgt_ext = false; }},
        {"QUERY_HCA_CAP", [](dcx_mlx5_umr_probe_t *p) { p->hca_ok = false; }},
        {"umr_indirect_mkey_disabled",
         [](dcx_mlx5_umr_probe_t *p) { p->hca.indirect_disabled = true; }},
        {"repeated_block_disabled",
         [](dcx_mlx5_umr_probe_t *p) {
             p->hca.repeated_block_disabled = true;
         }},
        {"log_max_klm_list_size",
         [](dcx_mlx5_umr_probe_t *p) { p->hca.log_max_klm = 1; }},
        {"mlx5dv_create_mkey",
         [](dcx_mlx5_umr_probe_t *p) { p->mkey_ok = false; }},
        {"RC QP", [](dcx_mlx5_umr_probe_t *p) { p->qp_entries = 0; }},
        {"send queue", [](dcx_mlx5_umr_probe_t *p) { p->max_qp_wr = 8; }},
    };

    for (const missing &m : cases) {
        dcx_mlx5_umr_probe_t p = good_probe();
        uint32_t max_wr = 7, access = 7;
        const char *why = nullptr;
        dcx_dev_caps_t caps;

        m.apply(&p);
        memset(&caps, 0, sizeof(caps));
        caps.flags = DCX_CAP_DC;
        EXPECT_EQ(EOPNOTSUPP, dcx_mlx5_umr_caps_translate(&p, &caps, &max_wr,
                                                          &access, &why))
            << m.what;
        ASSERT_NE(nullptr, why) << m.what;
        EXPECT_NE(nullptr, strstr(why, m.what)) << m.what << ": " << why;
        /* nothing advertised, nothing changed */
        EXPECT_EQ((uint32_t)DCX_CAP_DC, caps.flags) << m.what;
        EXPECT_EQ(0u, caps.mkey_max_entries) << m.what;
        EXPECT_EQ(0u, caps.mkey_qp_type) << m.what;
        EXPECT_EQ(7u, max_wr) << m.what;
        EXPECT_EQ(7u, access) << m.what;
    }
}
