/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device strided keys of one entry (vectors) where the consumer
 * reports unmaps (dcx_dev_unmaps_reported), as the dcx memory domain does
 * once UCX's memory hooks are in: an access is checked once, by its first
 * and last bytes, and copied element after element with memcpy
 * (soft_mkey.c, soft_mkey_vector).  Each case is checked on the bytes
 * (exactly the layout's bytes of the range change, a read returns them),
 * the completion status and the device's piece counter, and the refusals:
 * a last or first element outside the MR, access rights, a layout past
 * the end of the address space, a region unmapped under the key.
 */
#include "soft_mkey_fixture.h"

namespace {

uint8_t vpat(size_t i)
{
    return (uint8_t)(0xc3 ^ (i * 29));
}

} // namespace

class soft_mkey_vector : public soft_mkey {
protected:
    void SetUp() override
    {
        soft_mkey::SetUp();
        dcx_dev_unmaps_reported(n.dev);
    }

    /* writes [off, off + len) of key k (layout e x reps) from a pattern,
     * checks that exactly those bytes changed and that a read returns
     * them, and that every element touched counted one piece */
    void write_read(dcx_mkey_t *k, const std::vector<dcx_mkey_interleaved_t> &e,
                    uint32_t reps, uint64_t off, uint32_t len)
    {
        SCOPED_TRACE(::testing::Message() << "off " << off << " len " << len);
        std::vector<uint8_t *> bytes = layout_bytes(e, reps);
        std::vector<uint8_t> before(mem);
        const uint32_t count = e[0].bytes_count;
        const uint32_t mtu   = dcx_dev_caps(n.dev)->mtu;

        for (size_t i = 0; i < len; ++i) {
            loc[i] = vpat(off + i);
        }
        dcx_soft_stats_t s0 = dev_stats(n);
        ASSERT_EQ(DCX_WC_SUCCESS,
                  rdma(DCX_WR_RDMA_WRITE, k->rkey, off, 0, len));
        dcx_soft_stats_t s1    = dev_stats(n);
        /* an element split between two packets is two pieces */
        const uint64_t elems   = (off + len - 1) / count - off / count + 1;
        const uint64_t packets = (len + mtu - 1) / mtu;
        EXPECT_LE(elems, s1.mkey_pieces - s0.mkey_pieces);
        EXPECT_GE(elems + packets - 1, s1.mkey_pieces - s0.mkey_pieces);
        std::vector<uint8_t> want(before);
        for (size_t i = 0; i < len; ++i) {
            want[bytes[off + i] - mem.data()] = vpat(off + i);
        }
        ASSERT_EQ(want, mem);

        memset(loc.data(), 0, len);
        ASSERT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_READ, k->rkey, off, 0, len));
        for (size_t i = 0; i < len; ++i) {
            ASSERT_EQ(vpat(off + i), loc[i]) << "byte " << i;
        }
    }
};

/* A column of doubles (8-byte elements), whole and in parts starting and
 * ending inside elements, over one and several packets */
TEST_F(soft_mkey_vector, column_of_doubles)
{
    const uint32_t reps                   = 4000;
    std::vector<dcx_mkey_interleaved_t> e = {
        ient(mem.data() + 16, 8, 40, mr->lkey)};
    dcx_mkey_t *k = create(1);
    interleaved(k, e, reps);
    const uint32_t mtu = dcx_dev_caps(n.dev)->mtu;

    write_read(k, e, reps, 0, reps * 8);
    write_read(k, e, reps, 0, 8);
    write_read(k, e, reps, 8 * 17, 8 * 100);
    write_read(k, e, reps, 3, 5);
    write_read(k, e, reps, 5, 8 * 50);
    write_read(k, e, reps, 8 * 9 + 2, 8 * 30 + 3);
    write_read(k, e, reps, reps * 8 - 1, 1);
    write_read(k, e, reps, 8, mtu + 13);
}

/* Elements of other sizes (1, 3 and 64 bytes), contiguous (no skip), and
 * a list key of one buffer */
TEST_F(soft_mkey_vector, element_sizes_and_one_buffer_list)
{
    const struct {
        uint32_t count, skip, reps;
    } shapes[] = {{1, 6, 3000}, {3, 1, 2000}, {64, 64, 500}, {24, 0, 300}};

    for (const auto &sh : shapes) {
        SCOPED_TRACE(::testing::Message()
                     << "count " << sh.count << " skip " << sh.skip);
        std::vector<dcx_mkey_interleaved_t> e = {
            ient(mem.data() + 100, sh.count, sh.skip, mr->lkey)};
        dcx_mkey_t *k = create(1);
        interleaved(k, e, sh.reps);
        const uint32_t total = sh.count * sh.reps;
        write_read(k, e, sh.reps, 0, total);
        write_read(k, e, sh.reps, 1, total - 2);
        write_read(k, e, sh.reps, sh.count + 1, sh.count * 7);
    }

    dcx_mkey_t *k = create(1);
    list(k, {{(uint64_t)(uintptr_t)(mem.data() + 4096), 5000, mr->lkey}});
    write_read(k, {ient(mem.data() + 4096, 5000, 0, mr->lkey)}, 1, 0, 5000);
    write_read(k, {ient(mem.data() + 4096, 5000, 0, mr->lkey)}, 1, 777, 1234);
}

/* A list of LIMIT entries of one length at one distance in one MR is
 * the vector it spells, whole and in parts; with one entry further away
 * it is walked, with the bytes of its own layout */
TEST_F(soft_mkey_vector, list_of_equal_entries)
{
    std::vector<dcx_sge_t> s;
    for (uint32_t i = 0; i < LIMIT; ++i) {
        s.push_back({(uint64_t)(uintptr_t)(mem.data() + 40 + i * 48), 8,
                     mr->lkey});
    }
    dcx_mkey_t *k = create(LIMIT);
    list(k, s);
    std::vector<dcx_mkey_interleaved_t> e = {
        ient(mem.data() + 40, 8, 40, mr->lkey)};
    write_read(k, e, LIMIT, 0, LIMIT * 8);
    write_read(k, e, LIMIT, 3, 8 * 3 + 2);
    write_read(k, e, LIMIT, LIMIT * 8 - 1, 1);

    s.back().addr += 16;
    list(k, s);
    for (size_t i = 0; i < LIMIT * 8; ++i) {
        loc[i] = vpat(i);
    }
    ASSERT_EQ(DCX_WC_SUCCESS,
              rdma(DCX_WR_RDMA_WRITE, k->rkey, 0, 0, LIMIT * 8));
    for (uint32_t i = 0; i < LIMIT; ++i) {
        uint8_t *p = mem.data() + 40 + i * 48 + ((i == LIMIT - 1) ? 16 : 0);
        for (uint32_t b = 0; b < 8; ++b) {
            ASSERT_EQ(vpat(i * 8 + b), p[b]) << "element " << i;
        }
    }
}

/* The MR ends inside the last element (and starts after the first): an
 * access that reaches past it is refused whole, with nothing written or
 * read; one that stops before it is served */
TEST_F(soft_mkey_vector, element_outside_mr_bad_flow)
{
    const uint32_t reps = 1000, bad = 700;
    dcx_mr_t *part, *late;
    ASSERT_EQ(0, n.reg(mem.data(), (size_t)bad * 32 + 4, RACC, &part));
    dcx_mkey_t *k                         = create(1);
    std::vector<dcx_mkey_interleaved_t> e = {
        ient(mem.data(), 8, 24, part->lkey)};
    interleaved(k, e, reps);
    std::vector<uint8_t> before(mem);
    memset(loc.data(), 0xab, reps * 8);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_WRITE, k->rkey, 0, 0, reps * 8));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_WRITE, k->rkey, (bad - 3) * 8, 0, 4 * 8));
    EXPECT_EQ(before, mem);
    memset(loc.data(), 0x5a, 64);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_READ, k->rkey, bad * 8 + 3, 0, 2));
    EXPECT_EQ(std::vector<uint8_t>(64, 0x5a),
              std::vector<uint8_t>(loc.begin(), loc.begin() + 64));
    /* up to the half element inside the MR */
    write_read(k, e, reps, 0, bad * 8 + 4);

    /* an MR that starts after the layout's first element */
    ASSERT_EQ(0, n.reg(mem.data() + 64, 65536, RACC, &late));
    dcx_mkey_t *k2 = create(1);
    interleaved(k2, {ient(mem.data() + 32, 8, 24, late->lkey)}, 100);
    before = mem;
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_WRITE, k2->rkey, 0, 0, 100 * 8));
    EXPECT_EQ(before, mem);
    write_read(k2, {ient(mem.data() + 32, 8, 24, late->lkey)}, 100, 8, 99 * 8);
}

/* Rights: a key configured for remote read refuses a write, a key over an
 * MR without remote write refuses it too; a layout whose last element
 * lies past the end of the address space is refused, not wrapped */
TEST_F(soft_mkey_vector, rights_and_wrapping_layout_bad_flow)
{
    std::vector<dcx_mkey_interleaved_t> e = {ient(mem.data(), 8, 8, mr->lkey)};
    dcx_mkey_t *ro                        = create(1);
    interleaved(ro, e, 100, DCX_ACCESS_REMOTE_READ);
    std::vector<uint8_t> before(mem);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_WRITE, ro->rkey, 0, 0, 800));
    EXPECT_EQ(before, mem);
    EXPECT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_READ, ro->rkey, 0, 0, 800));

    dcx_mr_t *rmr;
    ASSERT_EQ(0, n.reg(mem.data() + 200000, 8192,
                       DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_READ, &rmr));
    dcx_mkey_t *k = create(1);
    interleaved(k, {ient(mem.data() + 200000, 8, 8, rmr->lkey)}, 100);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, rdma(DCX_WR_RDMA_WRITE, k->rkey, 0, 0, 8));
    EXPECT_EQ(before, mem);

    /* element 0 at 2^64 - 16, element 1 past the end of the address
     * space: neither in the MR, nor wrapped to address 0 */
    dcx_mkey_t *wrap = create(1);
    interleaved(wrap,
                {ient((const void *)(uintptr_t)(UINT64_MAX - 15), 8, 8,
                      mr->lkey)},
                4);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_WRITE, wrap->rkey, 0, 0, 32));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_READ, wrap->rkey, 8, 0, 8));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_WRITE, wrap->rkey, 0, 0, 8));
    EXPECT_EQ(before, mem);
}

/* The region under a vector key is unmapped (reported first, as the
 * memory domain's hook does): the access is refused and nothing of the
 * region is touched; a key over memory still mapped is served */
TEST_F(soft_mkey_vector, region_unmapped_bad_flow)
{
    size_t len = 64 * 4096;
    dcx_mr_t *pmr;
    uint8_t *p = mapped(len, 0x44, &pmr);
    ASSERT_NE(nullptr, p);
    dcx_mkey_t *k = create(1);
    interleaved(k, {ient(p, 8, 4088, pmr->lkey)}, 64);
    ASSERT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_READ, k->rkey, 0, 0, 512));
    dcx_dev_mem_unmapped(n.dev, p, len);
    memset(loc.data(), 0x99, 512);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_WRITE, k->rkey, 0, 0, 512));
    for (size_t i = 0; i < len; ++i) {
        ASSERT_EQ(0x44, p[i]) << i;
    }
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_READ, k->rkey, 0, 0, 512));
    EXPECT_EQ(0, dcx_mr_dereg(pmr));
    munmap(p, len);

    std::vector<dcx_mkey_interleaved_t> e = {
        ient(mem.data() + 8, 8, 56, mr->lkey)};
    dcx_mkey_t *k2 = create(1);
    interleaved(k2, e, 64);
    write_read(k2, e, 64, 0, 512);
}
