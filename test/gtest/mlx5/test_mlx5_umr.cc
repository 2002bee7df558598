/*
 * Unit tests of the mlx5 backend's strided-key (UMR) computation:
 * rdma-core-semantics.md 5.1-5.3 (entry rounding, WQE sizing, the entry
 * limits of one request, access flags, layout encoding and its refusals).
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
        EXPECT_EQ(n, dcx_mlx5_umr_entries_fit(
                         dcx_mlx5_umr_inline_needed(n, 1), 0xfffc, 1)) << n;
        EXPECT_EQ(n, dcx_mlx5_umr_entries_fit(
                         dcx_mlx5_umr_inline_needed(n, 0), 0xfffc, 0)) << n;
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
    EXPECT_EQ(0u, sz.wqe_bbs & (sz.wqe_bbs - 1));   /* power of 2 */
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
    std::vector<dcx_sge_t>              list;
    dcx_mkey_layout_t                   lay;
    dcx_send_wr_t                       wr;

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

    int run(uint32_t mkey_entries = 8, uint32_t max_inline = 16 * 64)
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
                                      DCX_MLX5_MKEY_MAX_STRIDE, oi.data(),
                                      os.data(), &why);
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
    c = umr_case(DCX_WR_MKEY_INTERLEAVED, 2);
    c.lay.repeat_count = 0;
    EXPECT_EQ(EINVAL, c.run());
    c = umr_case(DCX_WR_MKEY_INTERLEAVED, 2);
    c.il[1].bytes_count = 0x10000;            /* would be truncated */
    c.il[1].bytes_skip  = 0;
    EXPECT_EQ(EINVAL, c.run());
    c = umr_case(DCX_WR_MKEY_INTERLEAVED, 2);
    c.il[1].bytes_count = 0x8000;
    c.il[1].bytes_skip  = 0x8000;             /* stride 64 KiB */
    EXPECT_EQ(EINVAL, c.run());
    c.il[1].bytes_skip  = 0x7fff;             /* stride 0xffff: fits */
    EXPECT_EQ(0, c.run());
    c = umr_case(DCX_WR_MKEY_INTERLEAVED, 2);
    c.il[0].bytes_count = c.il[1].bytes_count = 0;
    EXPECT_EQ(EINVAL, c.run());
    c = umr_case(DCX_WR_MKEY_LIST, 2);
    c.lay.num_entries = 0;
    EXPECT_EQ(EINVAL, c.run());
    c = umr_case(DCX_WR_MKEY_LIST, 2);
    c.wr.mkey_layout = nullptr;
    EXPECT_EQ(EINVAL, c.run());
    c = umr_case(DCX_WR_MKEY_INVALIDATE, 2);
    EXPECT_EQ(EINVAL, c.run());               /* not a configure */
}
