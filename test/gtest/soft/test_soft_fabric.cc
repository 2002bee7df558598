/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device fabric: segment naming, permissions, cleanup, stale segment
 * sweep (dead owner, recycled pid).
 */
#include "soft_fixture.h"

extern "C" {
#include "soft/soft.h"
}

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

using namespace soft_test;

namespace {

/* the fabric's segments as paths under /dev/shm */
std::vector<std::string> segments(const std::string &fabric)
{
    std::vector<std::string> out;

    for (const std::string &n : seg_names(fabric)) {
        out.push_back("/dev/shm" + n);
    }
    return out;
}

/* Creates a segment that looks like one of owner pid's. */
std::string fake_segment(const std::string &fabric, pid_t pid, uint64_t start)
{
    std::string name = "/dcx-soft." + std::to_string(getuid()) + "." + fabric +
                       "." + std::to_string(pid) + ".7";
    int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    EXPECT_GE(fd, 0);
    if (fd < 0) {
        return name;
    }
    EXPECT_EQ(0, ftruncate(fd, SOFT_SEG_HDR_SIZE));
    soft_port_hdr_t *hdr = (soft_port_hdr_t *)mmap(nullptr, SOFT_SEG_HDR_SIZE,
                                                   PROT_READ | PROT_WRITE,
                                                   MAP_SHARED, fd, 0);
    EXPECT_NE(MAP_FAILED, (void *)hdr);
    hdr->magic       = SOFT_MAGIC;
    hdr->owner_pid   = pid;
    hdr->owner_start = start;
    hdr->seg_size    = SOFT_SEG_HDR_SIZE;
    munmap(hdr, SOFT_SEG_HDR_SIZE);
    close(fd);
    return name;
}

bool shm_exists(const std::string &name)
{
    struct stat st;
    return stat(("/dev/shm" + name).c_str(), &st) == 0;
}

} // namespace

TEST_F(soft, segment_mode_and_cleanup)
{
    {
        node a, b;
        ASSERT_EQ(0, a.open(fabric.c_str()));
        ASSERT_EQ(0, b.open(fabric.c_str()));
        std::vector<std::string> segs = segments(fabric);
        ASSERT_EQ(2u, segs.size());
        for (const std::string &s : segs) {
            struct stat st;
            ASSERT_EQ(0, stat(s.c_str(), &st));
            EXPECT_EQ(0600u, st.st_mode & 0777) << s;
            EXPECT_EQ(getuid(), st.st_uid);
            EXPECT_NE(std::string::npos,
                      s.find("." + std::to_string(getpid()) + "."));
        }
        a.close();
        EXPECT_EQ(1u, segments(fabric).size());
    }
    EXPECT_TRUE(segments(fabric).empty());
}

TEST_F(soft, cleanup_after_two_processes)
{
    start_target();
    {
        node n;
        ASSERT_EQ(0, open_initiator(n));
        EXPECT_EQ(2u, segments(fabric).size());
    }
    EXPECT_TRUE(stop_children());
    EXPECT_TRUE(segments(fabric).empty());
}

TEST_F(soft, stale_segment_sweep)
{
    /* a pid that is certainly dead: a reaped child */
    pid_t dead = fork();
    if (dead == 0) {
        _exit(0);
    }
    ASSERT_GT(dead, 0);
    int status;
    ASSERT_EQ(dead, waitpid(dead, &status, 0));

    std::string stale  = fake_segment(fabric, dead, 12345);
    /* our own pid but another start time: a recycled pid */
    std::string reused = fake_segment(fabric, getpid(), 1);
    /* a live owner with the right start time stays */
    std::string live   = fake_segment(fabric + "l", getpid(),
                                      soft_proc_start_time(getpid()));
    /* (fake_segment checked that it made them: whether they still exist
     * here is not asserted, as any process of ours opening a device
     * meanwhile, a concurrent test suite's, sweeps them too) */
    {
        node n;
        ASSERT_EQ(0, n.open(fabric.c_str()));
        EXPECT_FALSE(shm_exists(stale));
        EXPECT_FALSE(shm_exists(reused));
        EXPECT_TRUE(shm_exists(live));
    }
    shm_unlink(live.c_str());
}

TEST_F(soft, dead_peer_segment_swept)
{
    pid_t target = start_target();
    ASSERT_EQ(1u, segments(fabric).size());
    kill_child(target);
    int status;
    ASSERT_EQ(target, waitpid(target, &status, 0));
    children.clear();
    /* left behind by the crash, unless another process of ours (a
     * concurrent test suite) opened a device meanwhile and swept it */
    EXPECT_LE(segments(fabric).size(), 1u);
    node n;
    ASSERT_EQ(0, n.open(fabric.c_str()));
    EXPECT_EQ(1u, segments(fabric).size()); /* only ours */
    n.close();
    EXPECT_TRUE(segments(fabric).empty());
}

TEST_F(soft_xproc, dead_producer_slot_skipped)
{
    start();
    std::vector<std::string> segs = segments(fabric);
    ASSERT_EQ(2u, segs.size());
    std::string target_seg;
    for (const std::string &s : segs) {
        if (s.find("." + std::to_string(getpid()) + ".") == std::string::npos) {
            target_seg = s.substr(strlen("/dev/shm"));
        }
    }
    /* a process claims a slot in the target's request ring and dies */
    pid_t vandal = fork();
    if (vandal == 0) {
        int fd = shm_open(target_seg.c_str(), O_RDWR, 0);
        struct stat st;
        if ((fd < 0) || (fstat(fd, &st) != 0)) {
            _exit(1);
        }
        soft_port_hdr_t *hdr = (soft_port_hdr_t *)mmap(nullptr, st.st_size,
                                                       PROT_READ | PROT_WRITE,
                                                       MAP_SHARED, fd, 0);
        void *payload;
        uint64_t pos, freed_seen = 0;
        if ((hdr == MAP_FAILED) ||
            (soft_ring_reserve_c(hdr, &hdr->req, getpid(), &freed_seen,
                                 &payload, &pos) == nullptr)) {
            _exit(2);
        }
        _exit(0); /* never publishes */
    }
    int status;
    ASSERT_EQ(vandal, waitpid(vandal, &status, 0));
    ASSERT_TRUE(WIFEXITED(status) && (WEXITSTATUS(status) == 0));

    memcpy(lbuf.data(), "after the dead claimer", 22);
    dcx_sge_t s      = lsge(0, 22);
    dcx_send_wr_t wr = make_wr(DCX_WR_RDMA_WRITE, 1, &s, 1, ini, sh);
    log_counter logs; /* the target logs the skip, in its own process */
    EXPECT_EQ(DCX_WC_SUCCESS, run(wr).status);
    EXPECT_EQ(0, memcmp(sh->buf, "after the dead claimer", 22));
    EXPECT_TRUE(stop_children());
}

TEST_F(soft, exit_without_close_unlinks)
{
    std::string fab = fabric;
    pid_t pid       = spawn([fab]() {
        static node *n = new node; /* never closed (still reachable) */
        if (n->open(fab.c_str()) != 0) {
            return 1;
        }
        exit(0); /* normal exit runs the destructors */
    });
    ASSERT_GT(pid, 0);
    EXPECT_TRUE(stop_children());
    EXPECT_TRUE(segments(fabric).empty());
}

namespace {

/* Pages of the two rings described by hdr (mapped here at hdr) that are
 * not in our page tables (/proc/self/pagemap, bit 63: present); -1 if the
 * map cannot be read. */
long ring_pages_absent(const soft_port_hdr_t *hdr)
{
    const uint64_t page = 4096;
    uint64_t start      = hdr->req.offset & ~(page - 1);
    uint64_t end        = hdr->resp.offset +
                   (uint64_t)hdr->resp.nslots * hdr->resp.slot_size;
    long absent = 0;
    int fd      = open("/proc/self/pagemap", O_RDONLY);

    if (fd < 0) {
        return -1;
    }
    for (uint64_t off = start; off < end; off += page) {
        uint64_t entry, va = (uint64_t)(uintptr_t)hdr + off;
        if (pread(fd, &entry, sizeof(entry), (off_t)(va / page * 8)) !=
            (ssize_t)sizeof(entry)) {
            close(fd);
            return -1;
        }
        absent += !(entry >> 63);
    }
    close(fd);
    return absent;
}

bool populate_supported()
{
#ifdef MADV_POPULATE_WRITE
    void *p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    bool ok = (p != MAP_FAILED) && (madvise(p, 4096, MADV_POPULATE_WRITE) == 0);
    if (p != MAP_FAILED) {
        munmap(p, 4096);
    }
    return ok;
#else
    return false;
#endif
}

} // namespace

/* The first packets through a ring take no page fault: a port's rings are
 * in its page tables from its creation, a peer's from the first message
 * there, with SOFT_WARM_RINGS (read at once) and, where the kernel can
 * populate ahead, without it (soft_rings_warm) */
TEST_F(soft, ring_pages_mapped_ahead)
{
    const uint64_t KEY = 0x3a2f;

    for (uint32_t cold = 0; cold < 2; ++cold) {
        if (cold && !populate_supported()) {
            continue; /* cold rings fill as packets use them */
        }
        SCOPED_TRACE(cold ? "cold rings" : "warm rings");
        dcx_soft_limits_t l = default_limits();
        uint8_t addr[DCX_DEV_ADDR_MAX];
        size_t len = sizeof(addr);
        std::vector<uint8_t> buf(64 * 64);
        dcx_wc_t wc;
        dcx_mr_t *mr;
        node a, b;

        l.cold_rings = cold;
        ASSERT_EQ(0, a.open(fabric.c_str(), &l));
        ASSERT_EQ(0, b.open(fabric.c_str(), &l));
        EXPECT_EQ(0, ring_pages_absent(soft_dev(a.dev)->hdr));
        EXPECT_EQ(0, ring_pages_absent(soft_dev(b.dev)->hdr));

        ASSERT_EQ(0, a.make_dci());
        ASSERT_EQ(0, b.make_target(KEY, 0, 64));
        ASSERT_EQ(0,
                  b.reg(buf.data(), buf.size(), DCX_ACCESS_LOCAL_WRITE, &mr));
        std::vector<dcx_recv_t> recvs = recv_list(buf, mr, 0, 4);
        unsigned posted;
        ASSERT_EQ(0, dcx_srq_post_recv_list(b.srq, recvs.data(), recvs.size(),
                                            RECV_SLOT, &posted));
        ASSERT_EQ(0, dcx_dev_port_addr(b.dev, addr, &len));
        ASSERT_EQ(0, a.connect(addr, len));
        ASSERT_EQ(0, post_inline_value(a, a.dci, b.dct->qp_num, KEY,
                                       DCX_WR_SEND, 7));
        ASSERT_EQ(1, b.poll(&wc, 1));
        ASSERT_EQ(1, a.poll(&wc, 1));

        /* a's mapping of b's port: not b's own (b's is at its dev->hdr) */
        const soft_port_hdr_t *peer_hdr = nullptr;
        for (soft_peer_t *p = soft_dev(a.dev)->peers; p != nullptr;
             p              = p->next) {
            if (!p->own && (p->hdr != nullptr)) {
                peer_hdr = p->hdr;
            }
        }
        ASSERT_NE(nullptr, peer_hdr);
        EXPECT_NE(soft_dev(b.dev)->hdr, peer_hdr);
        EXPECT_EQ(0, ring_pages_absent(peer_hdr));
    }
}
