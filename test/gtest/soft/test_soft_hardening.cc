/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device hardening: memory that went away under a
 * registration, what is left in shared segments, names someone else
 * occupies, addresses of other fabrics, and live but busy targets.
 */
#include "soft_fixture.h"

extern "C" {
#include "soft/soft.h"
}

#include <algorithm>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

using namespace soft_test;

namespace {

const uint64_t KEY  = 0x5eC7e7D00dF00D11ull;
const uint32_t RACC = DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE |
                      DCX_ACCESS_REMOTE_READ | DCX_ACCESS_REMOTE_ATOMIC;

/* A node that targets itself (loopback): one device, memory in this
 * process, so that the test can unmap or remap the target's memory. */
struct loop {
    node n;
    dcx_mr_t *lmr             = nullptr;
    std::vector<uint8_t> lbuf = std::vector<uint8_t>(1u << 20);

    void open(const std::string &fabric, const dcx_soft_limits_t *l = nullptr)
    {
        ASSERT_EQ(0, n.open(fabric.c_str(), l));
        ASSERT_EQ(0, n.make_loopback(KEY, DCX_ACCESS_REMOTE_WRITE |
                                              DCX_ACCESS_REMOTE_READ |
                                              DCX_ACCESS_REMOTE_ATOMIC));
        ASSERT_EQ(0, n.reg(lbuf.data(), lbuf.size(), DCX_ACCESS_LOCAL_WRITE,
                           &lmr));
    }

    dcx_send_wr_t wr(dcx_wr_opcode_t op, uint64_t raddr, uint32_t rkey,
                     dcx_sge_t *s, uint32_t len)
    {
        s->addr   = (uint64_t)(uintptr_t)lbuf.data();
        s->length = len;
        s->lkey   = lmr->lkey;
        return n.loop_wr(op, KEY, s, rkey, raddr);
    }

    uint8_t run(const dcx_send_wr_t &w) { return n.run(w); }
};

uint8_t *map_pages(size_t len, void *at = nullptr)
{
    void *p = mmap(at, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0), -1, 0);
    return (p == MAP_FAILED) ? nullptr : (uint8_t *)p;
}

} // namespace

/* ------------------------------------------------------------------------
 * Item 2: stale and deregistered memory
 * ------------------------------------------------------------------------ */

/* The owner took registered memory away behind the device's back (no
 * memory hook told it): every access becomes a remote access error, the
 * target does not crash, and the same region keeps failing.  The pages are
 * replaced by an inaccessible reservation rather than left a bare hole:
 * under ASan, its allocator's next mapping took the hole's address while
 * the test ran (after the first error's log line) and the later accesses
 * landed in it. */
TEST_F(soft, unmapped_registered_memory_bad_flow)
{
    const size_t len = 64 * 1024;
    loop l;
    l.open(fabric);
    uint8_t *m = map_pages(len);
    ASSERT_NE(nullptr, m);
    dcx_mr_t *mr;
    ASSERT_EQ(0, l.n.reg(m, len, RACC, &mr));
    ASSERT_EQ((void *)m,
              mmap(m, len, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1,
                   0));

    dcx_sge_t s;
    uint64_t ra = (uint64_t)(uintptr_t)m;
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              l.run(l.wr(DCX_WR_RDMA_WRITE, ra, mr->rkey, &s, 64)));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              l.run(l.wr(DCX_WR_RDMA_WRITE, ra + 4096, mr->rkey, &s, 40000)));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              l.run(l.wr(DCX_WR_RDMA_READ, ra, mr->rkey, &s, 64)));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              l.run(l.wr(DCX_WR_RDMA_READ, ra, mr->rkey, &s, 60000)));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              l.run(l.wr(DCX_WR_ATOMIC_FADD, ra + 64, mr->rkey, &s, 8)));
    dcx_soft_stats_t st;
    ASSERT_EQ(0, dcx_soft_stats(l.n.dev, &st));
    EXPECT_GE(st.remote_access_errors, 5u);

    /* the device still works for memory that is there */
    uint8_t *good = map_pages(4096);
    ASSERT_NE(nullptr, good);
    dcx_mr_t *gmr;
    ASSERT_EQ(0, l.n.reg(good, 4096, RACC, &gmr));
    memset(l.lbuf.data(), 0xab, 64);
    EXPECT_EQ(DCX_WC_SUCCESS,
              l.run(l.wr(DCX_WR_RDMA_WRITE, (uint64_t)(uintptr_t)good,
                         gmr->rkey, &s, 64)));
    EXPECT_EQ(0xab, good[63]);
    l.n.close();
    munmap(good, 4096);
    munmap(m, len);
}

/* The same with limits.pinned (the emulated ConnectX's registrations): the
 * registration keeps its pages as a NIC's does, so every access succeeds;
 * writes into the page that went land nowhere, those into pages still
 * mapped land, reads of the page that went give zeros, an atomic on it
 * fetches zero and changes nothing, and each case logs at debug level
 * only. */
TEST_F(soft, pinned_registration_outlives_its_mapping)
{
    const size_t pg = 4096;
    dcx_soft_limits_t lim;
    memset(&lim, 0, sizeof(lim));
    lim.pinned = 1;
    loop l;
    l.open(fabric, &lim);
    uint8_t *m = map_pages(3 * pg);
    ASSERT_NE(nullptr, m);
    dcx_mr_t *mr;
    ASSERT_EQ(0, l.n.reg(m, 3 * pg, RACC, &mr));
    memset(m + 2 * pg, 0x11, pg);
    ASSERT_EQ((void *)(m + pg),
              mmap(m + pg, pg, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1,
                   0));
    const uint64_t ra = (uint64_t)(uintptr_t)m;
    dcx_sge_t s;
    log_counter logs;

    memset(l.lbuf.data(), 0xab, 2 * pg);
    EXPECT_EQ(DCX_WC_SUCCESS,
              l.run(l.wr(DCX_WR_RDMA_WRITE, ra + pg + 8, mr->rkey, &s, 64)));
    /* from page 0 across page 1 into page 2 */
    EXPECT_EQ(DCX_WC_SUCCESS, l.run(l.wr(DCX_WR_RDMA_WRITE, ra + pg - 16,
                                         mr->rkey, &s, pg + 32)));
    EXPECT_EQ(0xab, m[pg - 16]);
    EXPECT_EQ(0xab, m[2 * pg + 15]);
    EXPECT_EQ(0x11, m[2 * pg + 16]);

    memset(l.lbuf.data(), 0xee, 2 * pg);
    EXPECT_EQ(DCX_WC_SUCCESS, l.run(l.wr(DCX_WR_RDMA_READ, ra + pg - 16,
                                         mr->rkey, &s, pg + 32)));
    std::vector<uint8_t> want(pg + 32, 0);
    memset(want.data(), 0xab, 16);
    memset(want.data() + 16 + pg, 0xab, 16);
    EXPECT_EQ(0, memcmp(want.data(), l.lbuf.data(), want.size()));
    EXPECT_EQ(0xee, l.lbuf[pg + 32]);

    memset(l.lbuf.data(), 0xee, 8);
    EXPECT_EQ(DCX_WC_SUCCESS,
              l.run(l.wr(DCX_WR_ATOMIC_FADD, ra + pg + 64, mr->rkey, &s, 8)));
    EXPECT_EQ(0u, *(uint64_t *)l.lbuf.data());
    dcx_soft_stats_t st;
    ASSERT_EQ(0, dcx_soft_stats(l.n.dev, &st));
    EXPECT_EQ(0u, st.remote_access_errors);
    EXPECT_EQ(0, logs.lines()); /* debug level only */
    l.n.close();
    munmap(m, 3 * pg);
}

/* Memory unmapped and mapped again at the same address, as UCX's memory
 * hooks report it (dcx_dev_mem_unmapped before the unmap): the region
 * refuses access at once and nothing lands in the new mapping. */
TEST_F(soft, remapped_memory_not_written_bad_flow)
{
    const size_t len = 64 * 1024;
    loop l;
    l.open(fabric);
    uint8_t *m = map_pages(len);
    ASSERT_NE(nullptr, m);
    dcx_mr_t *mr;
    ASSERT_EQ(0, l.n.reg(m, len, RACC, &mr));
    dcx_sge_t s;
    uint64_t ra = (uint64_t)(uintptr_t)m;
    memset(l.lbuf.data(), 0x5c, 40000);
    ASSERT_EQ(DCX_WC_SUCCESS,
              l.run(l.wr(DCX_WR_RDMA_WRITE, ra, mr->rkey, &s, 64)));

    dcx_dev_mem_unmapped(l.n.dev, m, len);
    ASSERT_EQ(0, munmap(m, len));
    ASSERT_EQ(m, map_pages(len, m));

    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              l.run(l.wr(DCX_WR_RDMA_WRITE, ra, mr->rkey, &s, 64)));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              l.run(l.wr(DCX_WR_RDMA_WRITE, ra, mr->rkey, &s, 40000)));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              l.run(l.wr(DCX_WR_ATOMIC_FADD, ra + 64, mr->rkey, &s, 8)));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              l.run(l.wr(DCX_WR_RDMA_READ, ra, mr->rkey, &s, 64)));
    for (size_t i = 0; i < len; ++i) {
        ASSERT_EQ(0, m[i]) << "byte " << i << " of the new mapping written";
    }
    /* an lkey of the invalidated region is refused locally too */
    dcx_send_wr_t w = l.wr(DCX_WR_RDMA_WRITE, ra, mr->rkey, &s, 64);
    s.addr          = ra;
    s.lkey          = mr->lkey;
    EXPECT_EQ(DCX_WC_LOC_PROT_ERR, l.run(w));
    l.n.close();
    munmap(m, len);
}

/* Deregistered (and unmapped) while a long write into it is half done:
 * the rest of the message is refused (remote access error) and the target
 * survives.  The second half of the packets is held back on the wire so
 * that the deregistration falls between them. */
TEST_F(soft, dereg_mid_long_write_bad_flow)
{
    const size_t len = 4u << 20;
    loop l;
    l.lbuf.resize(len);
    l.open(fabric);
    uint8_t *m = map_pages(len);
    ASSERT_NE(nullptr, m);
    dcx_mr_t *mr;
    ASSERT_EQ(0, l.n.reg(m, len, RACC, &mr));

    const uint32_t mtu  = dcx_dev_caps(l.n.dev)->mtu;
    const uint32_t half = (uint32_t)(len / mtu / 2);
    dcx_soft_fault_t f;
    memset(&f, 0, sizeof(f));
    f.type     = DCX_SOFT_FAULT_DELAY;
    f.opcode   = DCX_WR_RDMA_WRITE;
    f.skip     = half;
    f.count    = 1;
    f.delay_us = 100000; /* shorter than the ack timeout */
    ASSERT_EQ(0, dcx_soft_fault_inject(l.n.dev, &f));

    for (size_t i = 0; i < len; ++i) {
        l.lbuf[i] = (uint8_t)(i | 1);
    }
    dcx_sge_t s;
    dcx_send_wr_t w = l.wr(DCX_WR_RDMA_WRITE, (uint64_t)(uintptr_t)m, mr->rkey,
                           &s, (uint32_t)len);
    ASSERT_EQ(0, dcx_qp_post_send(l.n.dci, &w));
    /* wait until the first half landed */
    double end = now_s() + 20.0;
    while (__atomic_load_n(&m[(size_t)half * mtu - 1], __ATOMIC_RELAXED) == 0) {
        dcx_dev_progress(l.n.dev);
        ASSERT_LT(now_s(), end);
    }
    ASSERT_EQ(0, dcx_mr_dereg(mr));
    l.n.mrs.erase(std::find(l.n.mrs.begin(), l.n.mrs.end(), mr));
    ASSERT_EQ(0, munmap(m, len));

    dcx_wc_t wc;
    ASSERT_EQ(1, l.n.poll(&wc, 1, 20.0));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, wc.status);
    dcx_soft_fault_clear(l.n.dev);
}

/* A long SEND whose receive buffer is invalidated half-way: the rest is
 * not written, the receive completes in error, the sender gets an error. */
TEST_F(soft, send_into_invalidated_receive_bad_flow)
{
    const size_t len = 1u << 20;
    loop l;
    l.lbuf.resize(len);
    l.open(fabric);
    uint8_t *m = map_pages(len);
    ASSERT_NE(nullptr, m);
    dcx_mr_t *mr;
    ASSERT_EQ(0, l.n.reg(m, len, DCX_ACCESS_LOCAL_WRITE, &mr));
    dcx_sge_t rs = {(uint64_t)(uintptr_t)m, (uint32_t)len, mr->lkey};
    ASSERT_EQ(0, dcx_srq_post_recv(l.n.srq, 77, &rs, 1));

    const uint32_t mtu  = dcx_dev_caps(l.n.dev)->mtu;
    const uint32_t half = (uint32_t)(len / mtu / 2);
    dcx_soft_fault_t f;
    memset(&f, 0, sizeof(f));
    f.type     = DCX_SOFT_FAULT_DELAY;
    f.opcode   = DCX_WR_SEND;
    f.skip     = half;
    f.count    = 1;
    f.delay_us = 100000;
    ASSERT_EQ(0, dcx_soft_fault_inject(l.n.dev, &f));
    memset(l.lbuf.data(), 0x42, len);
    dcx_sge_t s;
    dcx_send_wr_t w = l.wr(DCX_WR_SEND, 0, 0, &s, (uint32_t)len);
    w.wr_id         = 1;
    ASSERT_EQ(0, dcx_qp_post_send(l.n.dci, &w));
    double end = now_s() + 20.0;
    while (__atomic_load_n(&m[(size_t)half * mtu - 1], __ATOMIC_RELAXED) == 0) {
        dcx_dev_progress(l.n.dev);
        ASSERT_LT(now_s(), end);
    }
    dcx_dev_mem_unmapped(l.n.dev, m, len);
    ASSERT_EQ(0, munmap(m, len));
    dcx_wc_t wc[2];
    ASSERT_EQ(2, l.n.poll(wc, 2, 20.0));
    for (int i = 0; i < 2; ++i) {
        if (wc[i].wr_id == 77) {
            EXPECT_EQ(DCX_WC_LOC_PROT_ERR, wc[i].status);
        } else {
            EXPECT_EQ(DCX_WC_REM_OP_ERR, wc[i].status);
        }
    }
    dcx_soft_fault_clear(l.n.dev);
}

/* A READ of a region invalidated while the request was on the wire is
 * refused (and the unmapped memory is not read). */
TEST_F(soft, read_of_invalidated_region_bad_flow)
{
    const size_t len = 256 * 1024;
    loop l;
    l.open(fabric);
    uint8_t *m = map_pages(len);
    ASSERT_NE(nullptr, m);
    dcx_mr_t *mr;
    ASSERT_EQ(0, l.n.reg(m, len, RACC, &mr));
    /* the first READ request goes out, its answer is held back; the
     * region goes away meanwhile */
    dcx_soft_fault_t f;
    memset(&f, 0, sizeof(f));
    f.type     = DCX_SOFT_FAULT_DELAY;
    f.opcode   = DCX_WR_RDMA_READ;
    f.count    = 1;
    f.delay_us = 100000;
    ASSERT_EQ(0, dcx_soft_fault_inject(l.n.dev, &f));
    dcx_sge_t s;
    dcx_send_wr_t w = l.wr(DCX_WR_RDMA_READ, (uint64_t)(uintptr_t)m, mr->rkey,
                           &s, (uint32_t)len);
    ASSERT_EQ(0, dcx_qp_post_send(l.n.dci, &w));
    dcx_dev_mem_unmapped(l.n.dev, m, len);
    ASSERT_EQ(0, munmap(m, len));
    dcx_wc_t wc;
    ASSERT_EQ(1, l.n.poll(&wc, 1, 20.0));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, wc.status);
    dcx_soft_fault_clear(l.n.dev);
}

/* ------------------------------------------------------------------------
 * Item 3: nothing of a request stays in shared memory
 * ------------------------------------------------------------------------ */
TEST_F(soft, consumed_slots_hold_no_dc_key)
{
    loop l;
    l.open(fabric);
    std::vector<uint8_t> mem(1u << 20);
    dcx_mr_t *mr;
    ASSERT_EQ(0, l.n.reg(mem.data(), mem.size(), RACC, &mr));
    uint64_t ra = (uint64_t)(uintptr_t)mem.data();
    dcx_sge_t s;
    for (int i = 0; i < 300; ++i) {
        dcx_wr_opcode_t op = (i % 3 == 0) ? DCX_WR_RDMA_WRITE :
                             (i % 3 == 1) ? DCX_WR_RDMA_READ :
                                            DCX_WR_ATOMIC_FADD;
        uint32_t len       = (op == DCX_WR_ATOMIC_FADD) ? 8 : 100 + i * 97;
        ASSERT_EQ(DCX_WC_SUCCESS, l.run(l.wr(op, ra, mr->rkey, &s, len)));
    }

    std::vector<std::string> names = seg_names(fabric);
    ASSERT_EQ(1u, names.size());
    int fd = shm_open(names[0].c_str(), O_RDONLY, 0);
    ASSERT_GE(fd, 0);
    struct stat st;
    ASSERT_EQ(0, fstat(fd, &st));
    const uint8_t *seg = (const uint8_t *)mmap(nullptr, st.st_size, PROT_READ,
                                               MAP_SHARED, fd, 0);
    close(fd);
    ASSERT_NE(MAP_FAILED, (const void *)seg);
    size_t found = 0;
    for (size_t off = 0; off + 8 <= (size_t)st.st_size; off += 8) {
        uint64_t v;
        memcpy(&v, seg + off, 8);
        found += (v == KEY);
    }
    munmap((void *)seg, st.st_size);
    EXPECT_EQ(0u, found) << "DC key left in " << found << " places";
}

/* ------------------------------------------------------------------------
 * Item 4: names someone else occupies
 * ------------------------------------------------------------------------ */

/* The names the device would have used with a predictable scheme (process
 * id and a counter) are all taken: the device opens anyway. */
TEST_F(soft, predictable_names_taken_still_opens)
{
    std::string last;
    {
        node probe;
        ASSERT_EQ(0, probe.open(fabric.c_str()));
        std::vector<std::string> names = seg_names(fabric);
        ASSERT_EQ(1u, names.size());
        last = names[0].substr(names[0].rfind('.') + 1);
    }
    std::string base = "/dcx-soft." + std::to_string(getuid()) + "." + fabric +
                       "." + std::to_string(getpid()) + ".";
    unsigned long long n = strtoull(last.c_str(), nullptr, 10);
    std::vector<std::string> taken;
    for (unsigned long long i = n + 1; i < n + 64; ++i) {
        std::string name = base + std::to_string(i);
        int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd >= 0) {
            close(fd);
            taken.push_back(name);
        }
    }
    node a;
    EXPECT_EQ(0, a.open(fabric.c_str()));
    a.close();
    for (const std::string &name : taken) {
        shm_unlink(name.c_str());
    }
}

/* Names that exist already are skipped for new tokens; the address and
 * the segment name carry the token that worked. */
TEST_F(soft, taken_names_are_skipped)
{
    const uint64_t tokens[3] = {0x1111, 0x2222, 0x3333};
    std::vector<std::string> taken;
    for (int i = 0; i < 2; ++i) {
        char name[256];
        snprintf(name, sizeof(name), "/dcx-soft.%u.%s.%u.%016llx", getuid(),
                 fabric.c_str(), getpid(), (unsigned long long)tokens[i]);
        int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0644);
        ASSERT_GE(fd, 0);
        close(fd);
        taken.push_back(name);
    }
    dcx_soft_test_set_tokens(tokens, 3);
    node a, b;
    ASSERT_EQ(0, a.open(fabric.c_str()));
    soft_addr_t addr;
    size_t len = sizeof(addr);
    ASSERT_EQ(0, dcx_dev_port_addr(a.dev, &addr, &len));
    EXPECT_EQ(tokens[2], addr.token);
    /* and it is reachable */
    ASSERT_EQ(0, b.open(fabric.c_str()));
    ASSERT_EQ(0, b.make_cq());
    ASSERT_EQ(0, b.make_dci());
    ASSERT_EQ(0, a.make_cq());
    ASSERT_EQ(0, a.make_target(3, DCX_ACCESS_REMOTE_WRITE));
    std::vector<uint8_t> mem(64);
    dcx_mr_t *mr, *lmr;
    ASSERT_EQ(0, a.reg(mem.data(), 64, RACC, &mr));
    ASSERT_EQ(0, b.reg(mem.data(), 64, DCX_ACCESS_LOCAL_WRITE, &lmr));
    ASSERT_EQ(0, b.connect(&addr, len));
    dcx_sge_t s = {(uint64_t)(uintptr_t)mem.data(), 8, lmr->lkey};
    dcx_send_wr_t w;
    memset(&w, 0, sizeof(w));
    w.opcode      = DCX_WR_RDMA_WRITE;
    w.flags       = DCX_SEND_SIGNALED;
    w.num_sge     = 1;
    w.sg_list     = &s;
    w.dest.ah     = b.ah;
    w.dest.dctn   = a.dct->qp_num;
    w.dest.dc_key = 3;
    w.rkey        = mr->rkey;
    w.remote_addr = (uint64_t)(uintptr_t)(mem.data() + 32);
    ASSERT_EQ(0, dcx_qp_post_send(b.dci, &w));
    dcx_wc_t wc;
    ASSERT_EQ(1, b.poll(&wc, 1));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    for (const std::string &name : taken) {
        shm_unlink(name.c_str());
    }
}

/* Every name tried is taken: one error line that says so. */
TEST_F(soft, all_names_taken_bad_flow)
{
    uint64_t tokens[SOFT_NAME_TRIES];
    std::vector<std::string> taken;
    for (unsigned i = 0; i < SOFT_NAME_TRIES; ++i) {
        tokens[i] = 0xabc00 + i;
        char name[256];
        snprintf(name, sizeof(name), "/dcx-soft.%u.%s.%u.%016llx", getuid(),
                 fabric.c_str(), getpid(), (unsigned long long)tokens[i]);
        int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        ASSERT_GE(fd, 0);
        close(fd);
        taken.push_back(name);
    }
    dcx_soft_test_set_tokens(tokens, SOFT_NAME_TRIES);
    {
        log_counter logs;
        node a;
        EXPECT_EQ(EEXIST, a.open(fabric.c_str()));
        EXPECT_EQ(1, logs.lines());
    }
    for (const std::string &name : taken) {
        shm_unlink(name.c_str());
    }
    node b;
    EXPECT_EQ(0, b.open(fabric.c_str()));
}

/* ------------------------------------------------------------------------
 * Item 5: addresses this device cannot reach
 * ------------------------------------------------------------------------ */
/* Registrations check their range against /proc/self/maps, read a line
 * at a time: a mapping whose path is longer than the reader's buffer
 * comes in pieces, of which only the first holds the range and rights.
 * Memory in such a mapping registers; a read-only one refuses write
 * access; and the mappings after it are read as before. */
TEST_F(soft, registration_in_a_long_path_mapping_bad_flow)
{
    const size_t len = 2 * 4096;
    std::string dir  = "/tmp/dcx-maps-" + std::to_string(getpid());
    std::vector<std::string> dirs;
    node a;
    ASSERT_EQ(0, a.open(fabric.c_str()));

    ASSERT_EQ(0, mkdir(dir.c_str(), 0700)) << dir;
    dirs.push_back(dir);
    while (dir.size() < 600) {
        dir += "/" + std::string(60, 'd');
        ASSERT_EQ(0, mkdir(dir.c_str(), 0700)) << dir;
        dirs.push_back(dir);
    }
    std::string path = dir + "/file";
    int fd           = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(0, ftruncate(fd, (off_t)len));
    void *rw = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    void *ro = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    unlink(path.c_str());
    for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
        rmdir(it->c_str());
    }
    ASSERT_NE(MAP_FAILED, rw);
    ASSERT_NE(MAP_FAILED, ro);
    uint8_t *anon = (uint8_t *)mmap(nullptr, len, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, (void *)anon);

    dcx_mr_t *mr; /* (the node deregisters its MRs at close) */
    EXPECT_EQ(0, a.reg(rw, len, RACC, &mr));
    EXPECT_EQ(0, a.reg(ro, len, DCX_ACCESS_REMOTE_READ, &mr));
    EXPECT_EQ(0, a.reg(anon, len, RACC, &mr));
    {
        log_counter logs;
        EXPECT_EQ(EFAULT, a.reg(ro, len, RACC, &mr));
        EXPECT_EQ(1, logs.lines());
    }
    a.close();
    munmap(anon, len);
    munmap(ro, len);
    munmap(rw, len);
}

TEST_F(soft, addr_check_bad_flow)
{
    node a, other;
    ASSERT_EQ(0, a.open(fabric.c_str()));
    ASSERT_EQ(0, other.open((fabric + "x").c_str()));
    soft_addr_t good, bad;
    size_t len = sizeof(good);
    ASSERT_EQ(0, dcx_dev_port_addr(a.dev, &good, &len));
    char why[160];
    EXPECT_EQ(0, dcx_dev_addr_check(a.dev, &good, len, why, sizeof(why)));

    log_counter logs; /* a check logs nothing */
    /* another fabric */
    EXPECT_EQ(EINVAL,
              dcx_dev_addr_check(other.dev, &good, len, why, sizeof(why)));
    EXPECT_NE(nullptr, strstr(why, "fabric")) << why;
    /* another user */
    bad = good;
    bad.uid ^= 1;
    EXPECT_EQ(EINVAL, dcx_dev_addr_check(a.dev, &bad, len, why, sizeof(why)));
    EXPECT_NE(nullptr, strstr(why, "user")) << why;
    /* another host */
    bad = good;
    bad.host ^= 0x100;
    EXPECT_EQ(EINVAL, dcx_dev_addr_check(a.dev, &bad, len, why, sizeof(why)));
    EXPECT_NE(nullptr, strstr(why, "host")) << why;
    /* no token */
    bad       = good;
    bad.token = 0;
    EXPECT_EQ(EINVAL, dcx_dev_addr_check(a.dev, &bad, len, why, sizeof(why)));
    /* garbage, short, NULL */
    uint8_t junk[SOFT_ADDR_LEN];
    for (unsigned i = 0; i < sizeof(junk); ++i) {
        junk[i] = (uint8_t)(i * 37 + 11);
    }
    EXPECT_EQ(EINVAL,
              dcx_dev_addr_check(a.dev, junk, sizeof(junk), why, sizeof(why)));
    EXPECT_EQ(EINVAL,
              dcx_dev_addr_check(a.dev, &good, len - 1, why, sizeof(why)));
    EXPECT_EQ(EINVAL,
              dcx_dev_addr_check(a.dev, nullptr, len, why, sizeof(why)));
    EXPECT_EQ(0, logs.lines());
}

/* ------------------------------------------------------------------------
 * Item 6: a live target that does not get the CPU is not dead
 * ------------------------------------------------------------------------ */

/* The target process is stopped (neither its application nor its helper
 * thread can serve) for many times timeout * (retry_cnt + 1): the
 * requests wait in its ring and complete once it runs again. */
TEST_F(soft_xproc, stopped_target_is_not_dead)
{
    sh->tp.limits.ack_timeout_us = 2000;
    sh->tp.limits.retry_cnt      = 1;
    pid_t target                 = start_target();
    ASSERT_EQ(0, open_initiator(ini));
    ASSERT_EQ(0,
              ini.reg(lbuf.data(), lbuf.size(), DCX_ACCESS_LOCAL_WRITE, &lmr));
    stop_child(target);
    memset(lbuf.data(), 0x3d, 4096);
    dcx_sge_t s      = lsge(0, 4096);
    dcx_send_wr_t wr = make_wr(DCX_WR_RDMA_WRITE, 1, &s, 1, ini, sh);
    ASSERT_EQ(0, dcx_qp_post_send(ini.dci, &wr));
    dcx_sge_t r      = lsge(8192, 64);
    dcx_send_wr_t rd = make_wr(DCX_WR_RDMA_READ, 2, &r, 1, ini, sh);
    ASSERT_EQ(0, dcx_qp_post_send(ini.dci, &rd));
    /* 2 ms x 2 attempts would declare it dead; keep it stopped far longer,
     * progressing the initiator all along */
    dcx_wc_t wc[2];
    EXPECT_EQ(0, ini.poll(wc, 1, 0.3)) << "status " << (int)wc[0].status;
    continue_child(target);
    ASSERT_EQ(2, ini.poll(wc, 2, 20.0));
    EXPECT_EQ(DCX_WC_SUCCESS, wc[0].status);
    EXPECT_EQ(DCX_WC_SUCCESS, wc[1].status);
    EXPECT_EQ(0x3d, sh->buf[4095]);
    EXPECT_EQ(0x3d, lbuf[8192]);
    EXPECT_TRUE(stop_children());
}

/* A stopped target that dies while stopped is still detected as dead. */
TEST_F(soft_xproc, stopped_then_killed_target_is_dead_bad_flow)
{
    sh->tp.limits.ack_timeout_us = 2000;
    sh->tp.limits.retry_cnt      = 1;
    pid_t target                 = start_target();
    ASSERT_EQ(0, open_initiator(ini));
    ASSERT_EQ(0,
              ini.reg(lbuf.data(), lbuf.size(), DCX_ACCESS_LOCAL_WRITE, &lmr));
    stop_child(target);
    dcx_sge_t s      = lsge(0, 64);
    dcx_send_wr_t wr = make_wr(DCX_WR_RDMA_WRITE, 1, &s, 1, ini, sh);
    ASSERT_EQ(0, dcx_qp_post_send(ini.dci, &wr));
    dcx_wc_t wc;
    EXPECT_EQ(0, ini.poll(&wc, 1, 0.1));
    kill_child(target);
    ASSERT_EQ(1, ini.poll(&wc, 1, 20.0));
    EXPECT_EQ(DCX_WC_RETRY_EXC_ERR, wc.status);
    stop_children();
}
