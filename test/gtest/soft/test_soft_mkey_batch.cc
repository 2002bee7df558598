/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device strided keys executed in batches (soft_mkey.c, soft_mem.c:
 * soft_mem_vec_write): remote accesses whose layouts hold more pieces than
 * one batch, adjacent pieces merged, entries in a SysV segment mixed
 * with heap entries in one batch, and the refusals: an element crossing
 * its MR's end in the middle of a batch, a region unmapped under a
 * batch.  Every check is on the bytes and the
 * completion status, and the device's batch counters.
 */
#include "soft_mkey_fixture.h"

namespace {

uint8_t wpat(size_t i)
{
    return (uint8_t)(0x5b ^ (i * 13));
}

} // namespace

/* Single-byte elements at stride 2: a message of len bytes is len pieces.
 * Lengths and offsets around the batch size (SOFT_MEM_VEC_MAX, 1024). */
TEST_F(soft_mkey, batch_boundaries_write_read)
{
    const uint32_t reps                   = 5000;
    std::vector<dcx_mkey_interleaved_t> e = {
        ient(mem.data() + 1, 1, 1, mr->lkey)};
    std::vector<uint8_t *> bytes = layout_bytes(e, reps);
    dcx_mkey_t *k                = create(4);
    interleaved(k, e, reps);
    const uint32_t mtu = dcx_dev_caps(n.dev)->mtu;
    const struct {
        uint64_t off;
        uint32_t len;
    } cases[] = {{0, 1023},    {0, 1024}, {0, 1025},          {3, 2049},
                 {1000, 3000}, {0, reps}, {reps - 1025, 1025}};

    for (const auto &c : cases) {
        SCOPED_TRACE(::testing::Message()
                     << "off " << c.off << " len " << c.len);
        std::vector<uint8_t> before(mem);
        for (size_t i = 0; i < c.len; ++i) {
            loc[i] = wpat(i + c.off);
        }
        dcx_soft_stats_t s0 = dev_stats(n);
        ASSERT_EQ(DCX_WC_SUCCESS,
                  rdma(DCX_WR_RDMA_WRITE, k->rkey, c.off, 0, c.len));
        dcx_soft_stats_t s1 = dev_stats(n);
        /* every piece copied, in batches of at most 1024 per packet */
        EXPECT_EQ(c.len, s1.mkey_pieces - s0.mkey_pieces);
        uint64_t packets = (c.len + mtu - 1) / mtu;
        EXPECT_LE(s1.mkey_batches - s0.mkey_batches,
                  packets + (c.len + 1023) / 1024);
        EXPECT_GE(s1.mkey_batches - s0.mkey_batches, (c.len + 1023) / 1024);
        /* exactly the mapped bytes of [off, off + len) changed */
        for (size_t i = 0; i < bytes.size(); ++i) {
            size_t at = bytes[i] - mem.data();
            if ((i >= c.off) && (i < c.off + c.len)) {
                ASSERT_EQ(wpat(i), mem[at]) << "element " << i;
                before[at] = mem[at];
            }
        }
        ASSERT_EQ(before, mem);
        /* read back through the key */
        memset(&loc[65536], 0, c.len);
        ASSERT_EQ(DCX_WC_SUCCESS,
                  rdma(DCX_WR_RDMA_READ, k->rkey, c.off, 65536, c.len));
        for (size_t i = 0; i < c.len; ++i) {
            ASSERT_EQ(wpat(i + c.off), loc[65536 + i]) << "element " << i;
        }
    }
}

/* Elements that touch (skip 0) and list entries that continue each other
 * are one piece: the walk merges them. */
TEST_F(soft_mkey, batch_adjacent_pieces_merged)
{
    dcx_mkey_t *k = create(4);
    interleaved(k, {ient(mem.data() + 8, 8, 0, mr->lkey)}, 1000);
    for (size_t i = 0; i < 8000; ++i) {
        loc[i] = wpat(i);
    }
    dcx_soft_stats_t s0 = dev_stats(n);
    ASSERT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_WRITE, k->rkey, 0, 0, 8000));
    dcx_soft_stats_t s1 = dev_stats(n);
    EXPECT_EQ(0, memcmp(&mem[8], loc.data(), 8000));
    uint64_t packets = (8000 + dcx_dev_caps(n.dev)->mtu - 1) /
                       dcx_dev_caps(n.dev)->mtu;
    EXPECT_EQ(packets, s1.mkey_pieces - s0.mkey_pieces);

    std::vector<dcx_sge_t> s = {
        {(uint64_t)(uintptr_t)(mem.data() + 20000), 100, mr->lkey},
        {(uint64_t)(uintptr_t)(mem.data() + 20100), 50, mr->lkey},
        {(uint64_t)(uintptr_t)(mem.data() + 30000), 10, mr->lkey}};
    dcx_mkey_t *kl = create(4);
    list(kl, s);
    s0 = dev_stats(n);
    ASSERT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_WRITE, kl->rkey, 0, 0, 160));
    s1 = dev_stats(n);
    EXPECT_EQ(2u, s1.mkey_pieces - s0.mkey_pieces);
    EXPECT_EQ(0, memcmp(&mem[20000], loc.data(), 150));
    EXPECT_EQ(0, memcmp(&mem[30000], &loc[150], 10));
}

/* One entry in a SysV segment (shm_alloc, as the md allocates), one on the
 * heap, alternating: both kinds of memory share batches (how a batch is
 * copied does not depend on where its pieces lie); the data is right both
 * ways.  Then the segment is freed: a write through the key is refused,
 * and no heap element after the refused piece is written. */
TEST_F(soft_mkey, batch_device_memory_and_heap_mixed)
{
    const uint32_t reps = 1500;
    size_t alen         = 65536;
    void *a             = nullptr;
    if (shm_alloc(&alen, &a) != 0) {
        GTEST_SKIP() << "no SysV segment";
    }
    memset(a, 0x6d, alen);
    dcx_mr_t *amr;
    ASSERT_EQ(0, dcx_mr_reg(n.pd, a, alen, RACC, &amr));
    std::vector<dcx_mkey_interleaved_t> e = {ient(a, 4, 12, amr->lkey),
                                             ient(mem.data(), 4, 4, mr->lkey)};
    std::vector<uint8_t *> bytes          = layout_bytes(e, reps);
    dcx_mkey_t *k                         = create(4);
    interleaved(k, e, reps);
    for (size_t i = 0; i < bytes.size(); ++i) {
        loc[i] = wpat(i);
    }
    dcx_soft_stats_t s0 = dev_stats(n);
    ASSERT_EQ(DCX_WC_SUCCESS,
              rdma(DCX_WR_RDMA_WRITE, k->rkey, 0, 0, (uint32_t)bytes.size()));
    dcx_soft_stats_t s1 = dev_stats(n);
    uint64_t packets    = (bytes.size() + dcx_dev_caps(n.dev)->mtu - 1) /
                       dcx_dev_caps(n.dev)->mtu;
    EXPECT_GE(s1.mkey_pieces - s0.mkey_pieces, 2u * reps);
    EXPECT_LE(s1.mkey_pieces - s0.mkey_pieces, 2u * reps + packets - 1);
    /* a batch ends at SOFT_MEM_VEC_MAX (1024) pieces or a packet's end */
    EXPECT_LE(s1.mkey_batches - s0.mkey_batches,
              (s1.mkey_pieces - s0.mkey_pieces + 1023) / 1024 + packets);
    for (size_t i = 0; i < bytes.size(); ++i) {
        ASSERT_EQ(wpat(i), *bytes[i]) << "element byte " << i;
    }
    memset(&loc[100000], 0, bytes.size());
    ASSERT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_READ, k->rkey, 0, 100000,
                                   (uint32_t)bytes.size()));
    EXPECT_EQ(0, memcmp(&loc[100000], loc.data(), bytes.size()));

    /* the segment goes: its registration refuses from then on */
    ASSERT_EQ(0, shm_free(n.dev, a, alen));
    std::vector<uint8_t> before(mem);
    memset(loc.data(), 0xee, bytes.size());
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_WRITE, k->rkey, 0, 0, (uint32_t)bytes.size()));
    /* the first piece (entry 0, in the freed segment) is refused:
     * nothing of the heap entry is written */
    EXPECT_EQ(before, mem);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, rdma(DCX_WR_RDMA_READ, k->rkey, 4, 0, 8));
    EXPECT_EQ(0, dcx_mr_dereg(amr));
}

/* An element in the middle of the second batch crosses the end of its MR:
 * the whole message is refused before anything is written (as for any
 * access the key does not cover); the elements before it work. */
TEST_F(soft_mkey, batch_element_crossing_mr_end_bad_flow)
{
    const uint32_t reps = 3000, bad = 1500;
    dcx_mr_t *part;
    /* covers elements 0 .. bad - 1 and half of element bad */
    ASSERT_EQ(0, n.reg(mem.data(), (size_t)bad * 16 + 4, RACC, &part));
    dcx_mkey_t *k = create(4);
    interleaved(k, {ient(mem.data(), 8, 8, part->lkey)}, reps);
    std::vector<uint8_t> before(mem);
    memset(loc.data(), 0xab, reps * 8);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_WRITE, k->rkey, 0, 0, reps * 8));
    EXPECT_EQ(before, mem);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_WRITE, k->rkey, (bad - 10) * 8, 0, 20 * 8));
    EXPECT_EQ(before, mem);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_READ, k->rkey, (bad - 1) * 8, 500000, 16));
    /* the part inside the MR, up to the half element */
    ASSERT_EQ(DCX_WC_SUCCESS,
              rdma(DCX_WR_RDMA_WRITE, k->rkey, 0, 0, bad * 8 + 4));
    for (size_t i = 0; i < mem.size(); ++i) {
        size_t el = i / 8;
        if ((el % 2 == 0) && (i < (size_t)bad * 16 + 4)) {
            ASSERT_EQ(0xab, mem[i]) << i;
        } else {
            ASSERT_EQ(before[i], mem[i]) << i;
        }
    }
}

/* A region of a two-entry layout is unmapped: the batches holding its
 * pieces are refused whole, so neither region is written. */
TEST_F(soft_mkey, batch_region_unmapped_bad_flow)
{
    const uint32_t reps = 2000;
    size_t len          = 16 * reps;
    dcx_mr_t *pmr;
    uint8_t *p = mapped(len, 0x44, &pmr);
    ASSERT_NE(nullptr, p);
    dcx_mkey_t *k = create(4);
    interleaved(k, {ient(mem.data(), 8, 8, mr->lkey), ient(p, 8, 8, pmr->lkey)},
                reps);
    ASSERT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_READ, k->rkey, 0, 0, 16 * reps));
    dcx_dev_mem_unmapped(n.dev, p, len);
    std::vector<uint8_t> before(mem);
    memset(loc.data(), 0x99, 16 * reps);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_WRITE, k->rkey, 0, 0, 16 * reps));
    EXPECT_EQ(before, mem);
    for (size_t i = 0; i < len; ++i) {
        ASSERT_EQ(0x44, p[i]) << i;
    }
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_READ, k->rkey, 0, 0, 16 * reps));
    EXPECT_EQ(0, dcx_mr_dereg(pmr));
    munmap(p, len);
}

/* Time of one column of an N x N matrix of doubles written through a key
 * against packing it and writing it contiguously, in one process and one
 * thread (no scheduling between initiator and target, unlike
 * bench/strided.sh), with the matrix on the heap and in a SysV segment.
 * Prints medians; asserts only the data.  Run with
 * --gtest_also_run_disabled_tests --gtest_filter='*column_time*'. */
TEST_F(soft_mkey, DISABLED_column_time)
{
    const int rounds = 31;
    for (size_t nn : {256, 1024, 4096}) {
        for (int dev_mem = 0; dev_mem < 2; ++dev_mem) {
            size_t len = nn * nn * 8;
            void *a    = nullptr;
            std::vector<double> heap;
            if (dev_mem) {
                ASSERT_EQ(0, shm_alloc(&len, &a));
            } else {
                heap.resize(nn * nn);
                a = heap.data();
            }
            double *mat = (double *)a;
            memset(mat, 0, nn * nn * 8);
            dcx_mr_t *mmr;
            ASSERT_EQ(0, dcx_mr_reg(n.pd, mat, nn * nn * 8, RACC, &mmr));
            dcx_mkey_t *k = create(4);
            interleaved(k,
                        {ient(mat + nn / 2, 8, (uint32_t)(nn - 1) * 8,
                              mmr->lkey)},
                        (uint32_t)nn);
            std::vector<double> tk, tp;
            for (int r = 0; r < rounds; ++r) {
                for (size_t i = 0; i < nn; ++i) {
                    double v = r + i;
                    memcpy(&loc[i * 8], &v, 8);
                }
                double t0 = now_s();
                ASSERT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_WRITE, k->rkey, 0, 0,
                                               (uint32_t)nn * 8));
                double t1 = now_s();
                /* pack the column (from the matrix) and write it whole */
                for (size_t i = 0; i < nn; ++i) {
                    memcpy(&loc[i * 8], &mat[i * nn + nn / 2], 8);
                }
                ASSERT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_WRITE, mr->rkey,
                                               (uint64_t)(uintptr_t)mem.data(),
                                               0, (uint32_t)nn * 8));
                double t2 = now_s();
                tk.push_back((t1 - t0) * 1e6);
                tp.push_back((t2 - t1) * 1e6);
                for (size_t i = 0; i < nn; ++i) {
                    ASSERT_EQ(r + (double)i, mat[i * nn + nn / 2]);
                }
            }
            std::sort(tk.begin(), tk.end());
            std::sort(tp.begin(), tp.end());
            printf("N=%zu %s key_us=%.1f pack_us=%.1f key/pack=%.2f "
                   "key_ns_per_element=%.1f\n",
                   nn, dev_mem ? "sysv-segment" : "heap", tk[rounds / 2],
                   tp[rounds / 2], tk[rounds / 2] / tp[rounds / 2],
                   tk[rounds / 2] * 1e3 / nn);
            EXPECT_EQ(0, dcx_mkey_destroy(k));
            keys.pop_back();
            EXPECT_EQ(0, dcx_mr_dereg(mmr));
            if (dev_mem) {
                EXPECT_EQ(0, shm_free(n.dev, a, len));
            }
        }
    }
}
