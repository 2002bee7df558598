/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RDMA WRITE and READ through a strided key of one entry (a vector) whose
 * memory is a SysV segment of the target's (shm_alloc, as the dcx md
 * allocates): the target publishes the layout (soft_direct_vector_set)
 * and the initiator, which attaches the segment,
 * walks it and copies each element itself, with no packet and no target
 * CPU (soft_direct.c, soft_direct_vector_exec).  Every case is checked on
 * the bytes (exactly the layout's bytes of the range change; reads return
 * them), the completion status and who executed it (the initiator's
 * direct and packet counters); the refusals and the changes of the key or
 * its MR are checked to leave the memory untouched.  Target and initiator
 * are two devices of the test process.
 */
#include "soft_mkey_fixture.h"
#include "soft_xfer.h"

using namespace soft_test;

namespace {

const uint64_t DCK   = 0x7ec7;
const size_t ALLOC   = 1u << 20;
const uint32_t COUNT = 8, STRIDE = 40; /* a column of doubles, 5 wide */

uint8_t vpat(size_t i, unsigned seed)
{
    return (uint8_t)((i * 37u + seed * 11u) | 0x80u);
}

} // namespace

class soft_dmap_vector : public soft {
protected:
    void SetUp() override
    {
        soft::SetUp();
        dcx_soft_limits_t l = xfer_limits(true);
        uint8_t addr[DCX_DEV_ADDR_MAX];
        size_t alen = sizeof(addr), len = ALLOC;

        ASSERT_EQ(0, t.open(fabric.c_str(), &l));
        ASSERT_TRUE(dcx_dev_caps(t.dev)->flags & DCX_CAP_SHM_PEERS);
        ASSERT_EQ(0, shm_alloc(&len, (void **)&mem));
        memset(mem, 0x5a, ALLOC);
        ASSERT_EQ(0, t.reg(mem, ALLOC, RACC, &tmr));
        ASSERT_EQ(0, t.make_target(DCK,
                                   DCX_ACCESS_REMOTE_WRITE |
                                       DCX_ACCESS_REMOTE_READ,
                                   64));
        ASSERT_EQ(0, t.make_dci()); /* posts the keys' configurations */
        ASSERT_EQ(0, dcx_dev_port_addr(t.dev, addr, &alen));

        ASSERT_EQ(0, ini.open(fabric.c_str(), &l));
        ASSERT_EQ(0, ini.make_dci());
        ASSERT_EQ(0, ini.connect(addr, alen));
        ASSERT_EQ(0, lb.reg(ini, ALLOC));
    }

    void TearDown() override
    {
        ini.close();
        for (dcx_mkey_t *k : keys) {
            EXPECT_EQ(0, dcx_mkey_destroy(k));
        }
        for (dcx_mr_t *mr : t.mrs) {
            dcx_mr_dereg(mr);
        }
        t.mrs.clear();
        if (mem != nullptr) {
            EXPECT_EQ(0, shm_free(t.dev, mem, ALLOC));
        }
        t.close();
        soft::TearDown();
    }

    /* a key of t configured with the entries, repeated reps times */
    dcx_mkey_t *key(const std::vector<dcx_mkey_interleaved_t> &e, uint32_t reps,
                    uint32_t access = RACC)
    {
        dcx_mkey_t *k = nullptr;
        EXPECT_EQ(0, dcx_mkey_create(t.pd, 4, &k));
        if (k == nullptr) {
            return nullptr;
        }
        keys.push_back(k);
        configure(k, e, reps, access);
        return k;
    }

    /* a key of t configured as the list s, and the bytes it maps */
    dcx_mkey_t *list_key(const std::vector<dcx_sge_t> &s,
                         std::vector<uint8_t *> *bytes)
    {
        dcx_mkey_t *k = nullptr;
        EXPECT_EQ(0, dcx_mkey_create(t.pd, (uint32_t)s.size(), &k));
        if (k == nullptr) {
            return nullptr;
        }
        keys.push_back(k);
        dcx_mkey_layout_t lay;
        memset(&lay, 0, sizeof(lay));
        lay.access      = RACC;
        lay.num_entries = (uint32_t)s.size();
        lay.list        = s.data();
        umr(k, DCX_WR_MKEY_LIST, &lay);
        bytes->clear();
        for (const dcx_sge_t &x : s) {
            for (uint32_t b = 0; b < x.length; ++b) {
                bytes->push_back((uint8_t *)(uintptr_t)x.addr + b);
            }
        }
        return k;
    }

    /* n list entries of len bytes, the first at mem + first, each dist
     * bytes past the one before, in MR lkey */
    std::vector<dcx_sge_t> equal_entries(size_t first, uint32_t len,
                                         size_t dist, uint32_t n, uint32_t lkey)
    {
        std::vector<dcx_sge_t> s(n);
        for (uint32_t i = 0; i < n; ++i) {
            s[i] = {(uint64_t)(uintptr_t)(mem + first + i * dist), len, lkey};
        }
        return s;
    }

    void configure(dcx_mkey_t *k, const std::vector<dcx_mkey_interleaved_t> &e,
                   uint32_t reps, uint32_t access = RACC)
    {
        dcx_mkey_layout_t lay = interleaved_layout(e, reps, access);
        umr(k, DCX_WR_MKEY_INTERLEAVED, &lay);
    }

    void umr(dcx_mkey_t *k, dcx_wr_opcode_t op, const dcx_mkey_layout_t *lay)
    {
        dcx_send_wr_t w = umr_wr(op, k, lay, 0x33);
        dcx_wc_t wc;
        ASSERT_EQ(0, dcx_qp_post_send(t.dci, &w));
        ASSERT_EQ(1, t.poll(&wc, 1, 20.0));
        ASSERT_EQ(DCX_WC_SUCCESS, wc.status);
    }

    /* one WRITE or READ of lb[0, len) at offset off of key rkey; its status */
    int op(dcx_wr_opcode_t o, uint32_t rkey, uint64_t off, size_t len)
    {
        dcx_sge_t s = lb.sge(0, len);
        return run_one(ini, rdma_wr(ini, t.dct->qp_num, DCK, o, &s, off, rkey));
    }

    dcx_soft_stats_t stats()
    {
        dcx_soft_stats_t s;
        EXPECT_EQ(0, dcx_soft_stats(ini.dev, &s));
        return s;
    }

    /* writes [off, off + len) of vector key k (layout e x reps) from a
     * pattern and reads it back: exactly the layout's bytes of the range
     * changed, each operation executed by the initiator through the
     * mapping (direct = true) or by the target's responder */
    void write_read(dcx_mkey_t *k, const std::vector<dcx_mkey_interleaved_t> &e,
                    uint32_t reps, uint64_t off, size_t len, unsigned seed,
                    bool direct = true)
    {
        write_read_bytes(k, layout_bytes(e, reps), off, len, seed, direct);
    }

    /* the same, the key's bytes in key order given */
    void write_read_bytes(dcx_mkey_t *k, const std::vector<uint8_t *> &bytes,
                          uint64_t off, size_t len, unsigned seed,
                          bool direct = true)
    {
        SCOPED_TRACE(::testing::Message() << "off " << off << " len " << len);
        std::vector<uint8_t> want(mem, mem + ALLOC);

        for (size_t i = 0; i < len; ++i) {
            lb.v[i]                    = vpat(off + i, seed);
            want[bytes[off + i] - mem] = vpat(off + i, seed);
        }
        dcx_soft_stats_t s0 = stats();
        ASSERT_EQ(DCX_WC_SUCCESS, op(DCX_WR_RDMA_WRITE, k->rkey, off, len));
        ASSERT_EQ(want, std::vector<uint8_t>(mem, mem + ALLOC));
        memset(lb.v.data(), 0, len);
        ASSERT_EQ(DCX_WC_SUCCESS, op(DCX_WR_RDMA_READ, k->rkey, off, len));
        for (size_t i = 0; i < len; ++i) {
            ASSERT_EQ(vpat(off + i, seed), lb.v[i]) << "byte " << i;
        }
        dcx_soft_stats_t s1 = stats();
        if (direct) {
            EXPECT_EQ(2u, s1.direct_mapped - s0.direct_mapped);
            EXPECT_EQ(0u, s1.tx_packets - s0.tx_packets);
        } else {
            EXPECT_EQ(0u, s1.direct_mapped - s0.direct_mapped);
            EXPECT_LT(0u, s1.tx_packets - s0.tx_packets);
        }
    }

    /* key rkey over an MR that covers its elements 0..49 and half of 50:
     * a write of the first 100 elements, and one of elements 49 and 50,
     * are refused with nothing written */
    void expect_refused_past_mr(uint32_t rkey)
    {
        std::vector<uint8_t> before = snap();
        memset(lb.v.data(), 0xee, 800);
        EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, op(DCX_WR_RDMA_WRITE, rkey, 0, 800));
        EXPECT_EQ(0, renew_dci(ini));
        EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
                  op(DCX_WR_RDMA_WRITE, rkey, 49 * 8, 16));
        EXPECT_EQ(0, renew_dci(ini));
        expect_same(before);
    }

    /* the allocation as it is now, and a check that it did not change */
    std::vector<uint8_t> snap()
    {
        return std::vector<uint8_t>(mem, mem + ALLOC);
    }
    void expect_same(const std::vector<uint8_t> &before)
    {
        EXPECT_TRUE(before == snap()) << "the allocation was written";
    }

    std::vector<dcx_mkey_interleaved_t> column(size_t first, uint32_t lkey)
    {
        return {ient(mem + first, COUNT, STRIDE - COUNT, lkey)};
    }

    node t, ini;
    local_buf lb;
    std::vector<uint8_t> heap; /* memory of t's that it did not allocate */
    uint8_t *mem  = nullptr;
    dcx_mr_t *tmr = nullptr;
    std::vector<dcx_mkey_t *> keys;
};

/* Whole columns and parts of them starting and ending inside elements,
 * over one chunk and several (SOFT_DIRECT_CHUNK is 512 KiB), elements of
 * other sizes: every one copied by the initiator */
TEST_F(soft_dmap_vector, write_read_by_initiator)
{
    const uint32_t reps = 20000;
    auto e              = column(24, tmr->lkey);
    dcx_mkey_t *k       = key(e, reps);

    write_read(k, e, reps, 0, reps * COUNT, 1);
    write_read(k, e, reps, 0, 8, 2);
    write_read(k, e, reps, 3, 5, 3);
    write_read(k, e, reps, 8 * 11 + 5, 8 * 300 + 2, 4);
    write_read(k, e, reps, reps * COUNT - 1, 1, 5);

    /* the first element starts 4 bytes before the allocation (and its
     * MR): an access from its fifth byte on is the allocation's */
    std::vector<dcx_mkey_interleaved_t> before_start = {
        ient(mem - 4, COUNT, STRIDE - COUNT, tmr->lkey)};
    dcx_mkey_t *ks = key(before_start, 100);
    write_read(ks, before_start, 100, 4, 8 * 99 + 4, 8);
    write_read(ks, before_start, 100, 6, 3, 9);

    /* 1-byte and 100-byte elements, contiguous elements */
    const struct {
        uint32_t count, skip, reps;
    } shapes[] = {{1, 2, 5000}, {100, 28, 2000}, {64, 0, 1000}};
    for (const auto &sh : shapes) {
        std::vector<dcx_mkey_interleaved_t> f = {
            ient(mem + 7, sh.count, sh.skip, tmr->lkey)};
        dcx_mkey_t *k2 = key(f, sh.reps);
        write_read(k2, f, sh.reps, 0, sh.count * sh.reps, 6);
        write_read(k2, f, sh.reps, 1, sh.count * 3 + 1, 7);
    }
}

/* A list of entries of one length, in one MR, each a fixed distance past
 * the one before (a column registered as a list when its stride is past
 * the interleaved layout's 16-bit field) is the same vector: the
 * initiator executes it, whole or in parts, and refuses what an MR that
 * ends inside it does not cover, with nothing written; lists that are not
 * one (lengths, MRs or distances differ, entries that touch or go
 * backwards) take the target's responder with the same bytes */
TEST_F(soft_dmap_vector, list_of_equal_entries_by_initiator)
{
    std::vector<uint8_t *> bytes;
    dcx_mkey_t *k = list_key(equal_entries(24, COUNT, STRIDE, 200, tmr->lkey),
                             &bytes);
    write_read_bytes(k, bytes, 0, 200 * COUNT, 1);
    write_read_bytes(k, bytes, 3, 5, 2);
    write_read_bytes(k, bytes, 8 * 11 + 5, 8 * 100 + 2, 3);
    dcx_mkey_t *far = list_key(equal_entries(0, 100, 4096, 255, tmr->lkey),
                               &bytes);
    write_read_bytes(far, bytes, 0, 100 * 255, 4);
    write_read_bytes(far, bytes, 150, 1000, 5);

    std::vector<dcx_sge_t> s = equal_entries(24, COUNT, STRIDE, 100, tmr->lkey);
    std::vector<std::vector<dcx_sge_t>> not_vectors(5, s);
    not_vectors[0][37].length = 4; /* one shorter */
    not_vectors[1][99].addr += 8;  /* the last one further */
    not_vectors[3] = equal_entries(24, COUNT, COUNT, 100, tmr->lkey);
    std::reverse(not_vectors[4].begin(), not_vectors[4].end());
    dcx_mr_t *other;
    ASSERT_EQ(0, t.reg(mem, ALLOC, RACC, &other));
    not_vectors[2][50].lkey = other->lkey; /* one in another MR */
    unsigned seed           = 6;
    for (const auto &nv : not_vectors) {
        dcx_mkey_t *nk = list_key(nv, &bytes);
        write_read_bytes(nk, bytes, 0, bytes.size(), seed++, false);
        write_read_bytes(nk, bytes, 5, 300, seed++, false);
    }

    /* the MR covers entries 0..49 and half of entry 50 */
    dcx_mr_t *part;
    ASSERT_EQ(0, t.reg(mem, 50 * STRIDE + 4, RACC, &part));
    dcx_mkey_t *pk = list_key(equal_entries(0, COUNT, STRIDE, 100, part->lkey),
                              &bytes);
    expect_refused_past_mr(pk->rkey);
    write_read_bytes(pk, bytes, 0, 50 * 8 + 4, seed);
}

/* Layouts the initiator does not execute take the target's responder,
 * with the same result: two entries, and one entry over heap memory (no
 * mapping) */
TEST_F(soft_dmap_vector, other_layouts_by_responder)
{
    std::vector<dcx_mkey_interleaved_t> two = {
        ient(mem, 8, 8, tmr->lkey), ient(mem + 200000, 4, 12, tmr->lkey)};
    dcx_mkey_t *k = key(two, 500);
    write_read(k, two, 500, 0, 12 * 500, 1, false);
    write_read(k, two, 500, 5, 100, 2, false);

    heap.assign(65536, 0x11);
    dcx_mr_t *hmr;
    ASSERT_EQ(0, t.reg(heap.data(), heap.size(), RACC, &hmr));
    std::vector<dcx_mkey_interleaved_t> h = {
        ient(heap.data(), 8, 8, hmr->lkey)};
    dcx_mkey_t *hk = key(h, 1000);
    for (size_t i = 0; i < 8000; ++i) {
        lb.v[i] = vpat(i, 9);
    }
    dcx_soft_stats_t s0 = stats();
    ASSERT_EQ(DCX_WC_SUCCESS, op(DCX_WR_RDMA_WRITE, hk->rkey, 0, 8000));
    EXPECT_LT(0u, stats().tx_packets - s0.tx_packets);
    for (size_t i = 0; i < 8000; ++i) {
        ASSERT_EQ(vpat(i, 9), heap[(i / 8) * 16 + i % 8]) << i;
    }
}

/* Accesses the key or its MR does not allow are refused as the responder
 * refuses them, with nothing written: past the key's end, a read-only
 * key, an MR without remote write, an MR that ends inside the layout */
TEST_F(soft_dmap_vector, refused_accesses_bad_flow)
{
    auto e                      = column(0, tmr->lkey);
    dcx_mkey_t *k               = key(e, 100);
    std::vector<uint8_t> before = snap();
    memset(lb.v.data(), 0xee, 4096);

    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, op(DCX_WR_RDMA_WRITE, k->rkey, 0, 801));
    EXPECT_EQ(0, renew_dci(ini));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, op(DCX_WR_RDMA_WRITE, k->rkey, 800, 1));
    EXPECT_EQ(0, renew_dci(ini));

    dcx_mkey_t *ro = key(e, 100, DCX_ACCESS_REMOTE_READ);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, op(DCX_WR_RDMA_WRITE, ro->rkey, 0, 64));
    EXPECT_EQ(0, renew_dci(ini));
    EXPECT_EQ(DCX_WC_SUCCESS, op(DCX_WR_RDMA_READ, ro->rkey, 0, 64));

    dcx_mr_t *rmr, *part;
    ASSERT_EQ(0, t.reg(mem, ALLOC, DCX_ACCESS_REMOTE_READ, &rmr));
    dcx_mkey_t *rk = key(column(0, rmr->lkey), 100);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, op(DCX_WR_RDMA_WRITE, rk->rkey, 0, 64));
    EXPECT_EQ(0, renew_dci(ini));
    expect_same(before);

    /* the MR covers elements 0..49 and half of element 50 */
    ASSERT_EQ(0, t.reg(mem, 50 * STRIDE + 4, RACC, &part));
    dcx_mkey_t *pk = key(column(0, part->lkey), 100);
    expect_refused_past_mr(pk->rkey);
    write_read(pk, column(0, part->lkey), 100, 0, 50 * 8 + 4, 3);
}

/* The key changes under the initiator: invalidated, it refuses; laid out
 * again, the accesses follow the new layout; destroyed, it refuses; and
 * its MR deregistered, it refuses -- each with nothing written */
TEST_F(soft_dmap_vector, key_and_mr_changes_bad_flow)
{
    auto e        = column(0, tmr->lkey);
    dcx_mkey_t *k = key(e, 200);
    write_read(k, e, 200, 0, 1600, 1);

    umr(k, DCX_WR_MKEY_INVALIDATE, nullptr);
    std::vector<uint8_t> before = snap();
    memset(lb.v.data(), 0xee, 1600);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, op(DCX_WR_RDMA_WRITE, k->rkey, 0, 1600));
    EXPECT_EQ(0, renew_dci(ini));
    expect_same(before);

    auto e2 = column(4096 + 16, tmr->lkey);
    configure(k, e2, 300);
    write_read(k, e2, 300, 0, 2400, 2);
    write_read(k, e2, 300, 13, 700, 3);

    /* the MR under the key deregistered */
    dcx_mr_t *mr2;
    ASSERT_EQ(0, dcx_mr_reg(t.pd, mem, ALLOC, RACC, &mr2));
    dcx_mkey_t *k2 = key(column(8, mr2->lkey), 100);
    write_read(k2, column(8, mr2->lkey), 100, 0, 800, 4);
    ASSERT_EQ(0, dcx_mr_dereg(mr2));
    before = snap();
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, op(DCX_WR_RDMA_WRITE, k2->rkey, 0, 800));
    EXPECT_EQ(0, renew_dci(ini));
    expect_same(before);

    /* the key destroyed */
    uint32_t rkey = k->rkey;
    ASSERT_EQ(0, dcx_mkey_destroy(k));
    keys.erase(keys.begin());
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, op(DCX_WR_RDMA_WRITE, rkey, 0, 64));
    EXPECT_EQ(0, renew_dci(ini));
    expect_same(before);
}

namespace {

/* shared with the initiator child of vector_changes_race_writes */
struct vrace_info {
    uint8_t addr[DCX_DEV_ADDR_MAX];
    uint32_t addr_len;
    uint32_t dctn;
    uint32_t rkey;
    volatile uint32_t ready;
    volatile uint32_t progress;
    volatile uint32_t done;
    volatile uint32_t status;
    dcx_soft_stats_t stats;
};

} // namespace

/* Another process writes through a vector key in a loop, each write
 * executed by it through its mapping; the target invalidates the key (or
 * deregisters the MR under it) meanwhile.  Once that returns, no write
 * lands any more: the memory zeroed right after stays zero, and the
 * initiator's next write fails with a remote access error. */
TEST_F(soft, vector_changes_race_writes)
{
    const uint32_t reps = 2000;

    for (int mode = 0; mode < 4; ++mode) {
        SCOPED_TRACE((mode % 2) ? "MR deregistered" : "key invalidated");
        vrace_info *in = (vrace_info *)mmap(nullptr, sizeof(vrace_info),
                                            PROT_READ | PROT_WRITE,
                                            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        ASSERT_NE(MAP_FAILED, (void *)in);
        memset(in, 0, sizeof(*in));
        std::string fab = fabric;
        spawn([in, fab, reps]() {
            return xfer_initiator(
                in, fab, xfer_limits(true), [in, reps](node &n) {
                    return write_until_error(n, reps * COUNT,
                                             rdma_wr(n, in->dctn, DCK,
                                                     DCX_WR_RDMA_WRITE, nullptr,
                                                     0, in->rkey),
                                             &in->progress, &in->status);
                });
        });

        dcx_soft_limits_t l = xfer_limits(true);
        size_t len = ALLOC, alen = sizeof(in->addr);
        uint8_t *mem;
        dcx_mr_t *mr;
        dcx_mkey_t *k;
        dcx_wc_t wc;
        node t;
        ASSERT_EQ(0, t.open(fabric.c_str(), &l));
        ASSERT_EQ(0, shm_alloc(&len, (void **)&mem));
        memset(mem, 0x5a, ALLOC);
        ASSERT_EQ(0, dcx_mr_reg(t.pd, mem, ALLOC, RACC, &mr));
        ASSERT_EQ(0, t.make_target(DCK, DCX_ACCESS_REMOTE_WRITE, 64));
        ASSERT_EQ(0, t.make_dci());
        ASSERT_EQ(0, dcx_mkey_create(t.pd, 4, &k));
        std::vector<dcx_mkey_interleaved_t> e = {
            ient(mem + 64, COUNT, STRIDE - COUNT, mr->lkey)};
        dcx_mkey_layout_t lay = interleaved_layout(e, reps, RACC);
        dcx_send_wr_t w       = umr_wr(DCX_WR_MKEY_INTERLEAVED, k, &lay, 1);
        ASSERT_EQ(0, dcx_qp_post_send(t.dci, &w));
        ASSERT_EQ(1, t.poll(&wc, 1, 20.0));
        ASSERT_EQ(DCX_WC_SUCCESS, wc.status);
        ASSERT_EQ(0, dcx_dev_port_addr(t.dev, in->addr, &alen));
        in->addr_len = (uint32_t)alen;
        in->dctn     = t.dct->qp_num;
        in->rkey     = k->rkey;
        __atomic_store_n(&in->ready, 1, __ATOMIC_RELEASE);

        ASSERT_TRUE(wait_at_least(&in->progress, 2 + mode * 50, 60.0));
        if (mode % 2) {
            ASSERT_EQ(0, dcx_mr_dereg(mr));
        } else {
            w = umr_wr(DCX_WR_MKEY_INVALIDATE, k, nullptr, 2);
            ASSERT_EQ(0, dcx_qp_post_send(t.dci, &w));
            ASSERT_EQ(1, t.poll(&wc, 1, 20.0));
            ASSERT_EQ(DCX_WC_SUCCESS, wc.status);
        }
        memset(mem, 0, ALLOC);
        ASSERT_TRUE(wait_flag(&in->done, 1, 60.0));
        for (size_t i = 0; i < ALLOC; ++i) {
            ASSERT_EQ(0, mem[i]) << "byte " << i << " written after";
        }
        EXPECT_EQ((uint32_t)DCX_WC_REM_ACCESS_ERR, in->status);
        EXPECT_GT(in->stats.direct_mapped, 1u) << "not by the initiator";
        EXPECT_TRUE(stop_children());
        children.clear();
        __atomic_store_n(&sh->stop, 0, __ATOMIC_RELEASE);
        EXPECT_EQ(0, dcx_mkey_destroy(k));
        if (!(mode % 2)) {
            EXPECT_EQ(0, dcx_mr_dereg(mr));
        }
        EXPECT_EQ(0, shm_free(t.dev, mem, ALLOC));
        t.close();
        munmap(in, sizeof(*in));
    }
}
