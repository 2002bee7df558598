/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-sided operations on SysV shared memory segments registered as
 * ordinary memory (soft_shm.c, soft_dmap.c): the initiator attaches the
 * target's segment and executes atomics, WRITEs and READs itself, under
 * the checks of a device allocation, with no packet.  What is not one
 * SysV attachment (a range that runs past the segment, a /dev/shm file),
 * or a segment the initiator may not attach, keeps the old path.  The
 * segments are made as UCX's sysv allocator makes them: private, attached
 * and removed at once (IPC_RMID) while attached.
 */
#include "soft_xfer.h"

extern "C" {
#include "soft/soft.h"
#include "soft/soft_direct.h"
}

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <unistd.h>

using namespace soft_test;

namespace {

const uint64_t KEY    = 0x5e9a7ull;
const uint32_t ACCESS = DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE |
                        DCX_ACCESS_REMOTE_READ | DCX_ACCESS_REMOTE_ATOMIC;
const uint32_t DCT_ACCESS = DCX_ACCESS_REMOTE_WRITE | DCX_ACCESS_REMOTE_READ |
                            DCX_ACCESS_REMOTE_ATOMIC;
const size_t PAGE    = 4096;
const size_t SEG_LEN = 4 * PAGE;

/* The published slot of a SysV segment of dev, or nullptr */
soft_dalloc_t *published_sysv(dcx_dev_t *dev)
{
    soft_direct_area_t *area = soft_dev(dev)->direct;

    for (unsigned i = 0; (area != nullptr) && (i < SOFT_DIRECT_ALLOCS); ++i) {
        if (area->allocs[i].serial != 0) { /* every slot is a segment's */
            return &area->allocs[i];
        }
    }
    return nullptr;
}

class soft_dsysv : public soft {
protected:
    void SetUp() override
    {
        dcx_soft_limits_t l = xfer_limits(true);

        soft::SetUp();
        ASSERT_EQ(0, m_n.open(fabric.c_str(), &l));
        ASSERT_EQ(0, m_n.make_loopback(KEY, DCT_ACCESS));
        m_seg = shm_attach(SEG_LEN, nullptr, true);
        ASSERT_TRUE(m_seg != nullptr) << strerror(errno);
        ASSERT_EQ(0, m_n.reg(m_res, sizeof(m_res), DCX_ACCESS_LOCAL_WRITE,
                             &m_res_mr));
    }

    void TearDown() override
    {
        for (dcx_mr_t *mr : m_n.mrs) {
            dcx_mr_dereg(mr);
        }
        m_n.mrs.clear();
        m_n.close();
        if (m_seg != nullptr) {
            shmdt(m_seg);
        }
        soft::TearDown();
    }

    /* An atomic op of size bytes at raddr under rkey, its result in
     * m_res[0] */
    dcx_send_wr_t atomic_wr(dcx_wr_opcode_t op, uint8_t size, uint64_t raddr,
                            uint32_t rkey)
    {
        m_sge           = {(uintptr_t)m_res, size, m_res_mr->lkey};
        dcx_send_wr_t w = m_n.loop_wr(op, KEY, &m_sge, rkey, raddr);

        w.atomic_size = size;
        return w;
    }

    /* A fetch-add of 8 bytes of v at p under rkey */
    dcx_send_wr_t fadd_wr(const void *p, uint32_t rkey, uint64_t v)
    {
        dcx_send_wr_t w = atomic_wr(DCX_WR_ATOMIC_FADD, 8, (uintptr_t)p, rkey);

        w.compare_add = v;
        return w;
    }

    static uint64_t word(const void *p)
    {
        uint64_t v;

        memcpy(&v, p, sizeof(v));
        return v;
    }

    dcx_soft_stats_t stats() { return dev_stats(m_n); }

    node m_n;
    uint8_t *m_seg     = nullptr;
    dcx_mr_t *m_res_mr = nullptr;
    uint64_t m_res[2]  = {0, 0};
    dcx_sge_t m_sge;
};

} // namespace

/* Every atomic UCT posts (add and fetch-add, swap, compare-and-swap, of 32
 * and 64 bits) on a registered segment: the values they define, each
 * executed by the initiator through one attachment, no packet sent */
TEST_F(soft_dsysv, sysv_atomics_run_at_initiator)
{
    dcx_soft_stats_t s0 = stats();
    dcx_mr_t *mr;
    dcx_send_wr_t w;
    uint32_t v32;

    ASSERT_EQ(0, m_n.reg(m_seg, SEG_LEN, ACCESS, &mr));
    /* add (a fetch-add whose result is not looked at) and fetch-add */
    w = fadd_wr(m_seg + 64, mr->rkey, 5);
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(w));
    w.compare_add = 7;
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(w));
    EXPECT_EQ(5u, m_res[0]);
    EXPECT_EQ(12u, word(m_seg + 64));

    /* compare-and-swap, 64 bits: a miss, then a hit */
    w = atomic_wr(DCX_WR_ATOMIC_CSWAP, 8, (uintptr_t)(m_seg + 64), mr->rkey);
    w.compare_add = 11;
    w.swap        = 99;
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(w));
    EXPECT_EQ(12u, word(m_seg + 64));
    w.compare_add = 12;
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(w));
    EXPECT_EQ(12u, m_res[0]);
    EXPECT_EQ(99u, word(m_seg + 64));

    /* swap, 64 bits (a masked compare-and-swap comparing nothing) */
    w      = atomic_wr(DCX_WR_ATOMIC_MASKED_CSWAP, 8, (uintptr_t)(m_seg + 64),
                       mr->rkey);
    w.swap = 0x1122334455667788ull;
    w.swap_mask = ~0ull;
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(w));
    EXPECT_EQ(99u, m_res[0]);
    EXPECT_EQ(0x1122334455667788ull, word(m_seg + 64));

    /* 32 bits: fetch-add (one field: a plain add), swap, compare-and-swap */
    memcpy(m_seg + 128, &(v32 = 40), sizeof(v32));
    w = atomic_wr(DCX_WR_ATOMIC_MASKED_FADD, 4, (uintptr_t)(m_seg + 128),
                  mr->rkey);
    w.compare_add = 2;
    m_res[0]      = ~0ull;
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(w));
    EXPECT_EQ(40u, (uint32_t)m_res[0]);
    memcpy(&v32, m_seg + 128, sizeof(v32));
    EXPECT_EQ(42u, v32);
    w      = atomic_wr(DCX_WR_ATOMIC_MASKED_CSWAP, 4, (uintptr_t)(m_seg + 128),
                       mr->rkey);
    w.swap = 7;
    w.swap_mask = 0xffffffffu;
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(w));
    EXPECT_EQ(42u, (uint32_t)m_res[0]);
    w.compare_add  = 7;
    w.compare_mask = 0xffffffffu;
    w.swap         = 9;
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(w));
    memcpy(&v32, m_seg + 128, sizeof(v32));
    EXPECT_EQ(9u, v32);
    EXPECT_EQ(0u, word(m_seg + 132) & 0xffffffffu) << "past the word written";

    dcx_soft_stats_t s1 = stats();
    EXPECT_EQ(s0.direct_atomics + 8, s1.direct_atomics);
    EXPECT_EQ(s0.tx_packets, s1.tx_packets);
    EXPECT_EQ(s0.direct_maps + 1, s1.direct_maps);
    EXPECT_EQ(1u, dcx_soft_direct_mappings(m_n.dev));
}

/* A WRITE and a READ of the segment: copies through the attachment */
TEST_F(soft_dsysv, sysv_put_get_through_the_attachment)
{
    std::vector<uint8_t> lb(2 * PAGE);
    dcx_soft_stats_t s0 = stats();
    dcx_mr_t *mr, *lmr;

    ASSERT_EQ(0, m_n.reg(m_seg, SEG_LEN, ACCESS, &mr));
    ASSERT_EQ(0, m_n.reg(lb.data(), lb.size(), DCX_ACCESS_LOCAL_WRITE, &lmr));
    for (size_t i = 0; i < lb.size(); ++i) {
        lb[i] = pattern(i, 3);
    }
    dcx_sge_t s = {(uintptr_t)lb.data(), (uint32_t)lb.size(), lmr->lkey};
    EXPECT_EQ(DCX_WC_SUCCESS,
              m_n.run(m_n.loop_wr(DCX_WR_RDMA_WRITE, KEY, &s, mr->rkey,
                                  (uintptr_t)(m_seg + 100))));
    for (size_t i = 0; i < lb.size(); ++i) {
        ASSERT_EQ(pattern(i, 3), m_seg[100 + i]) << "byte " << i;
    }
    EXPECT_EQ(0u, m_seg[99]);
    EXPECT_EQ(0u, m_seg[100 + lb.size()]);
    memset(lb.data(), 0, lb.size());
    EXPECT_EQ(DCX_WC_SUCCESS,
              m_n.run(m_n.loop_wr(DCX_WR_RDMA_READ, KEY, &s, mr->rkey,
                                  (uintptr_t)(m_seg + 100))));
    for (size_t i = 0; i < lb.size(); ++i) {
        ASSERT_EQ(pattern(i, 3), lb[i]) << "byte " << i;
    }
    dcx_soft_stats_t s1 = stats();
    EXPECT_EQ(s0.direct_mapped + 2, s1.direct_mapped);
    EXPECT_EQ(s0.tx_packets, s1.tx_packets);
}

/* An MR over part of a segment: the initiator executes within it, and
 * what lies outside it (in the same attachment) is refused by its entry
 * with nothing written */
TEST_F(soft_dsysv, sysv_mr_over_part_of_a_segment)
{
    dcx_soft_stats_t s0 = stats();
    dcx_mr_t *mr;

    memset(m_seg, 0x5a, SEG_LEN);
    ASSERT_EQ(0, m_n.reg(m_seg + PAGE, PAGE, ACCESS, &mr));
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(fadd_wr(m_seg + PAGE, mr->rkey, 1)));
    EXPECT_EQ(0x5a5a5a5a5a5a5a5bull, word(m_seg + PAGE));
    EXPECT_EQ(s0.direct_atomics + 1, stats().direct_atomics);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              m_n.run(fadd_wr(m_seg + PAGE - 8, mr->rkey, 1)));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              m_n.run(fadd_wr(m_seg + 2 * PAGE, mr->rkey, 1)));
    EXPECT_EQ(0x5a5a5a5a5a5a5a5aull, word(m_seg + PAGE - 8));
    EXPECT_EQ(0x5a5a5a5a5a5a5a5aull, word(m_seg + 2 * PAGE));
}

/* Two MRs in one segment share its slot and one attachment; the segment
 * stays published until the last of them goes */
TEST_F(soft_dsysv, sysv_two_mrs_in_one_segment)
{
    dcx_soft_stats_t s0 = stats();
    dcx_mr_t *a, *b;

    ASSERT_EQ(0, dcx_mr_reg(m_n.pd, m_seg, 2 * PAGE, ACCESS, &a));
    ASSERT_EQ(0, m_n.reg(m_seg + 2 * PAGE, 2 * PAGE, ACCESS, &b));
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(fadd_wr(m_seg + 8, a->rkey, 2)));
    EXPECT_EQ(DCX_WC_SUCCESS,
              m_n.run(fadd_wr(m_seg + 2 * PAGE + 8, b->rkey, 3)));
    EXPECT_EQ(s0.direct_maps + 1, stats().direct_maps);
    ASSERT_EQ(0, dcx_mr_dereg(a));
    EXPECT_TRUE(published_sysv(m_n.dev) != nullptr);
    EXPECT_EQ(DCX_WC_SUCCESS,
              m_n.run(fadd_wr(m_seg + 2 * PAGE + 8, b->rkey, 3)));
    EXPECT_EQ(2u, word(m_seg + 8));
    EXPECT_EQ(6u, word(m_seg + 2 * PAGE + 8));
    dcx_soft_stats_t s1 = stats();
    EXPECT_EQ(s0.direct_atomics + 3, s1.direct_atomics);
    EXPECT_EQ(s0.direct_maps + 1, s1.direct_maps);
    EXPECT_EQ(s0.tx_packets, s1.tx_packets);
}

/* A deregistered key fails with nothing written, and with the last MR
 * the segment is unpublished and the attachment dropped */
TEST_F(soft_dsysv, sysv_deregistered_key_bad_flow)
{
    dcx_mr_t *mr, *other;

    ASSERT_EQ(0, dcx_mr_reg(m_n.pd, m_seg, SEG_LEN, ACCESS, &mr));
    uint32_t rkey = mr->rkey;
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(fadd_wr(m_seg + 64, rkey, 1)));
    EXPECT_EQ(1u, dcx_soft_direct_mappings(m_n.dev));
    ASSERT_EQ(0, dcx_mr_dereg(mr));
    EXPECT_TRUE(published_sysv(m_n.dev) == nullptr);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, m_n.run(fadd_wr(m_seg + 64, rkey, 1)));
    std::vector<uint8_t> lb(64, 0xee);
    dcx_mr_t *lmr;
    ASSERT_EQ(0, m_n.reg(lb.data(), lb.size(), DCX_ACCESS_LOCAL_WRITE, &lmr));
    dcx_sge_t s = {(uintptr_t)lb.data(), 64, lmr->lkey};
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              m_n.run(m_n.loop_wr(DCX_WR_RDMA_WRITE, KEY, &s, rkey,
                                  (uintptr_t)m_seg)));
    EXPECT_EQ(1u, word(m_seg + 64));
    EXPECT_EQ(0u, word(m_seg));

    /* the next lookup drops the stale attachment */
    uint8_t *seg2 = shm_attach(SEG_LEN, nullptr, true);
    ASSERT_TRUE(seg2 != nullptr);
    ASSERT_EQ(0, m_n.reg(seg2, SEG_LEN, ACCESS, &other));
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(fadd_wr(seg2, other->rkey, 1)));
    EXPECT_EQ(1u, dcx_soft_direct_mappings(m_n.dev));
    EXPECT_EQ(0, dcx_mr_dereg(other));
    m_n.mrs.pop_back();
    shmdt(seg2);
}

/* A segment removed and replaced by another at the same address: the old
 * key fails, the new one writes the new segment, and nothing reaches the
 * old one through the attachment made of it */
TEST_F(soft_dsysv, sysv_replaced_segment_bad_flow)
{
    int id_a    = -1;
    uint8_t *pa = shm_attach(SEG_LEN, nullptr, false, &id_a);
    dcx_mr_t *ma, *mb;

    ASSERT_TRUE(pa != nullptr);
    uint8_t *view_a = (uint8_t *)shmat(id_a, nullptr, 0); /* to look at A */
    ASSERT_NE((void *)-1, (void *)view_a);
    shmctl(id_a, IPC_RMID, nullptr);

    ASSERT_EQ(0, dcx_mr_reg(m_n.pd, pa, SEG_LEN, ACCESS, &ma));
    uint32_t rkey_a = ma->rkey;
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(fadd_wr(pa + 64, rkey_a, 1)));
    ASSERT_EQ(0, dcx_mr_dereg(ma));
    ASSERT_EQ(0, shmdt(pa));
    uint8_t *pb = shm_attach(SEG_LEN, pa, true); /* B where A was */
    ASSERT_EQ(pa, pb);
    ASSERT_EQ(0, m_n.reg(pb, SEG_LEN, ACCESS, &mb));

    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, m_n.run(fadd_wr(pb + 64, rkey_a, 1)));
    EXPECT_EQ(0u, word(pb + 64));
    uint64_t at0 = stats().direct_atomics;
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(fadd_wr(pb + 64, mb->rkey, 5)));
    EXPECT_EQ(at0 + 1, stats().direct_atomics);
    EXPECT_EQ(5u, word(pb + 64));
    EXPECT_EQ(1u, word(view_a + 64)) << "the old segment written";
    EXPECT_EQ(1u, dcx_soft_direct_mappings(m_n.dev));
    shmdt(view_a);
    ASSERT_EQ(0, dcx_mr_dereg(mb));
    m_n.mrs.pop_back();
    shmdt(pb);
}

/* A published segment whose id names another segment when the initiator
 * looks (another creation time, another size): not attached, the
 * responder executes, on the registered memory */
TEST_F(soft_dsysv, sysv_id_reused_bad_flow)
{
    dcx_mr_t *mr;

    ASSERT_EQ(0, m_n.reg(m_seg, SEG_LEN, ACCESS, &mr));
    soft_dalloc_t *d = published_sysv(m_n.dev);
    ASSERT_TRUE(d != nullptr);
    soft_seq_begin(&d->seq);
    d->ctime -= 1; /* as if the id were another segment's now */
    soft_seq_end(&d->seq);
    dcx_soft_stats_t s0 = stats();
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(fadd_wr(m_seg + 64, mr->rkey, 4)));
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(fadd_wr(m_seg + 64, mr->rkey, 4)));
    EXPECT_EQ(8u, word(m_seg + 64));
    dcx_soft_stats_t s1 = stats();
    EXPECT_EQ(s0.direct_atomics, s1.direct_atomics);
    EXPECT_EQ(s0.direct_maps, s1.direct_maps);
    EXPECT_EQ(0u, dcx_soft_direct_mappings(m_n.dev));
    EXPECT_LT(s0.tx_packets, s1.tx_packets);
}

/* An MR that runs from the end of a segment into anonymous memory is no
 * one segment's: the old path, with the right result */
TEST_F(soft_dsysv, sysv_mr_past_the_segment_bad_flow)
{
    uint8_t *r = (uint8_t *)mmap(nullptr, 3 * PAGE, PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, (void *)r);
    uint8_t *p = shm_attach(2 * PAGE, r, true); /* over r's first 2 pages */
    ASSERT_EQ(r, p);
    dcx_mr_t *mr;

    ASSERT_EQ(0, m_n.reg(r + PAGE, 2 * PAGE, ACCESS, &mr));
    EXPECT_TRUE(published_sysv(m_n.dev) == nullptr);
    dcx_soft_stats_t s0 = stats();
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(fadd_wr(r + 2 * PAGE - 8, mr->rkey, 3)));
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(fadd_wr(r + 2 * PAGE, mr->rkey, 4)));
    EXPECT_EQ(3u, word(r + 2 * PAGE - 8));
    EXPECT_EQ(4u, word(r + 2 * PAGE));
    EXPECT_EQ(s0.direct_atomics, stats().direct_atomics);
    EXPECT_EQ(0, dcx_mr_dereg(mr));
    m_n.mrs.pop_back();
    shmdt(r);
    munmap(r, 3 * PAGE);
}

/* A /dev/shm file can be truncated under a peer's mapping: the old path */
TEST_F(soft_dsysv, dev_shm_file_bad_flow)
{
    std::string name = "/dcx-dsysv-" + std::to_string(getpid());
    int fd           = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    ASSERT_GE(fd, 0) << strerror(errno);
    shm_unlink(name.c_str());
    ASSERT_EQ(0, ftruncate(fd, SEG_LEN));
    uint8_t *p = (uint8_t *)mmap(nullptr, SEG_LEN, PROT_READ | PROT_WRITE,
                                 MAP_SHARED, fd, 0);
    close(fd);
    ASSERT_NE(MAP_FAILED, (void *)p);
    dcx_mr_t *mr;

    ASSERT_EQ(0, m_n.reg(p, SEG_LEN, ACCESS, &mr));
    EXPECT_TRUE(published_sysv(m_n.dev) == nullptr);
    dcx_soft_stats_t s0 = stats();
    EXPECT_EQ(DCX_WC_SUCCESS, m_n.run(fadd_wr(p + 64, mr->rkey, 6)));
    EXPECT_EQ(6u, word(p + 64));
    EXPECT_EQ(s0.direct_atomics, stats().direct_atomics);
    EXPECT_EQ(0u, dcx_soft_direct_mappings(m_n.dev));
    EXPECT_EQ(0, dcx_mr_dereg(mr));
    m_n.mrs.pop_back();
    munmap(p, SEG_LEN);
}

/* ------------------------------------------------------------------------
 * Across processes: the test process is the target, a forked child the
 * initiator, which reaches the segment (made after the fork) only through
 * the device.
 * ------------------------------------------------------------------------ */
namespace {

struct dsysv_info {
    uint8_t addr[DCX_DEV_ADDR_MAX];
    uint32_t addr_len;
    uint32_t dctn;
    uint64_t dc_key;
    uint64_t raddr;
    uint32_t rkey;
    volatile uint32_t ready;
    volatile uint32_t done;
    dcx_soft_stats_t stats;
};

/* The child's atomics and a WRITE and READ on the target's segment; 0 if
 * every one completed with the right values */
int initiator_ops(dsysv_info *in, node &n)
{
    local_buf lb;
    uint64_t res = 0;

    if (lb.reg(n, PAGE) != 0) {
        return 11;
    }
    dcx_sge_t rs    = lb.sge(0, 8);
    dcx_send_wr_t w = rdma_wr(n, in->dctn, in->dc_key, DCX_WR_ATOMIC_FADD, &rs,
                              in->raddr + 64, in->rkey);
    w.atomic_size   = 8;
    w.compare_add   = 1;
    for (unsigned i = 0; i < 10; ++i) {
        if (run_one(n, w) != DCX_WC_SUCCESS) {
            return 12;
        }
    }
    memcpy(&res, lb.v.data(), 8);
    if (res != 9) {
        return 13;
    }
    w = rdma_wr(n, in->dctn, in->dc_key, DCX_WR_ATOMIC_MASKED_CSWAP, &rs,
                in->raddr + 128, in->rkey);
    w.atomic_size = 4;
    w.swap        = 0xabcd;
    w.swap_mask   = 0xffffffffu;
    if (run_one(n, w) != DCX_WC_SUCCESS) {
        return 14;
    }
    for (size_t i = 0; i < PAGE; ++i) {
        lb.v[i] = pattern(i, 9);
    }
    dcx_sge_t s = lb.sge(0, PAGE);
    if (run_one(n, rdma_wr(n, in->dctn, in->dc_key, DCX_WR_RDMA_WRITE, &s,
                           in->raddr + PAGE, in->rkey)) != DCX_WC_SUCCESS) {
        return 15;
    }
    memset(lb.v.data(), 0, PAGE);
    if (run_one(n, rdma_wr(n, in->dctn, in->dc_key, DCX_WR_RDMA_READ, &s,
                           in->raddr + PAGE, in->rkey)) != DCX_WC_SUCCESS) {
        return 16;
    }
    for (size_t i = 0; i < PAGE; ++i) {
        if (lb.v[i] != pattern(i, 9)) {
            return 17;
        }
    }
    return 0;
}

} // namespace

class soft_dsysv_xproc : public soft {
protected:
    void SetUp() override
    {
        soft::SetUp();
        info = (dsysv_info *)mmap(nullptr, sizeof(dsysv_info),
                                  PROT_READ | PROT_WRITE,
                                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        ASSERT_NE(MAP_FAILED, (void *)info);
    }

    void TearDown() override
    {
        for (dcx_mr_t *mr : t.mrs) {
            dcx_mr_dereg(mr);
        }
        t.mrs.clear();
        t.close();
        if (seg != nullptr) {
            shmdt(seg);
        }
        soft::TearDown();
        munmap(info, sizeof(*info));
    }

    /* The child initiator (before: run first in it), then the target:
     * a segment registered, a DCT; serves the responder's packets until
     * the child is done */
    void run(std::function<bool()> before)
    {
        dsysv_info *in      = info;
        std::string fab     = fabric;
        dcx_soft_limits_t l = xfer_limits(true);
        size_t len          = sizeof(info->addr);
        dcx_mr_t *mr;
        dcx_wc_t wc;

        spawn([in, fab, before]() {
            if (before && !before()) {
                return 10;
            }
            return xfer_initiator(in, fab, xfer_limits(true), [in](node &n) {
                return initiator_ops(in, n);
            });
        });
        ASSERT_EQ(0, t.open(fabric.c_str(), &l));
        seg = shm_attach(SEG_LEN, nullptr, true);
        ASSERT_TRUE(seg != nullptr);
        ASSERT_EQ(0, t.reg(seg, SEG_LEN, ACCESS, &mr));
        ASSERT_EQ(0, t.make_target(0x5eedull, DCT_ACCESS, 64));
        ASSERT_EQ(0, dcx_dev_port_addr(t.dev, info->addr, &len));
        info->addr_len = (uint32_t)len;
        info->dctn     = t.dct->qp_num;
        info->dc_key   = 0x5eedull;
        info->raddr    = (uintptr_t)seg;
        info->rkey     = mr->rkey;
        double end     = now_s() + 20.0;
        while (!dcx_soft_direct_alive_lock(t.dev) && (now_s() < end)) {
            usleep(100);
        }
        __atomic_store_n(&info->ready, 1, __ATOMIC_RELEASE);
        end = now_s() + 60.0;
        while (!__atomic_load_n(&info->done, __ATOMIC_ACQUIRE) &&
               (now_s() < end)) {
            (void)dcx_cq_poll(t.cq, 1, &wc);
        }
        ASSERT_TRUE(stop_children());
        EXPECT_EQ(10u, word(seg + 64));
        EXPECT_EQ(0xabcdu, (uint32_t)word(seg + 128));
        for (size_t i = 0; i < PAGE; ++i) {
            ASSERT_EQ(pattern(i, 9), seg[PAGE + i]) << "byte " << i;
        }
    }

    static uint64_t word(const void *p)
    {
        uint64_t v;

        memcpy(&v, p, sizeof(v));
        return v;
    }

    dsysv_info *info = nullptr;
    node t;
    uint8_t *seg = nullptr;
};

/* The initiator attaches the target's segment: atomics, the WRITE and the
 * READ are its own, through one attachment, with no packet */
TEST_F(soft_dsysv_xproc, sysv_peer_attaches)
{
    run(nullptr);
    EXPECT_EQ(11u, info->stats.direct_atomics);
    EXPECT_EQ(2u, info->stats.direct_mapped);
    EXPECT_EQ(1u, info->stats.direct_maps);
    EXPECT_EQ(0u, info->stats.tx_packets);
}

/* An initiator that may not attach the segment (its permissions, a
 * sandbox): atomics go to the target's responder, the WRITE and READ by
 * cross-memory attach, with the right values */
TEST_F(soft_dsysv_xproc, sysv_attach_refused_bad_flow)
{
    run([]() { return refuse_syscalls({__NR_shmat}, EACCES); });
    EXPECT_EQ(0u, info->stats.direct_atomics);
    EXPECT_EQ(0u, info->stats.direct_mapped);
    EXPECT_EQ(0u, info->stats.direct_maps);
    EXPECT_EQ(2u, info->stats.direct_writes + info->stats.direct_reads);
    EXPECT_LE(11u, info->stats.tx_packets);
}
