/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RDMA WRITE and READ executed by the initiator (soft_direct.c): a child
 * process is the initiator, the test process is the target, and the
 * target's memory is a shared mapping both can check byte by byte.
 */
#include "soft_xfer.h"

extern "C" {
#include "soft/soft.h"
#include "soft/soft_direct.h"
}

#include <algorithm>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace soft_test;

namespace {

const size_t MAX_XFER  = 16u << 20;
const size_t PAGE      = 4096;
const size_t TMEM_SIZE = MAX_XFER + 4 * PAGE; /* guard pages around */

/* what the target publishes to the initiator child (in the shared area) */
struct direct_info {
    uint8_t addr[DCX_DEV_ADDR_MAX];
    uint32_t addr_len;
    uint32_t dctn;
    uint64_t dc_key;
    uint64_t raddr; /* target MR base (tmem + PAGE) */
    uint64_t rlen;
    uint32_t rkey;      /* read/write/atomic */
    uint32_t rkey_ro;   /* remote read only */
    uint32_t rkey_gone; /* deregistered before the child starts */
    volatile uint32_t ready;
    volatile uint32_t progress; /* child: operations done */
    volatile uint32_t done;     /* child: finished */
    volatile uint32_t status;   /* child: last completion status */
    uint32_t max_inline;        /* child: its DCI's */
    dcx_soft_stats_t stats;     /* child's counters at the end */
};

/* the fixture's limits (short ack timeout), direct access on or off */
dcx_soft_limits_t limits(bool direct)
{
    return xfer_limits(direct);
}

} // namespace

class soft_direct : public soft {
protected:
    void SetUp() override
    {
        soft::SetUp();
        tmem = (uint8_t *)mmap(nullptr, TMEM_SIZE, PROT_READ | PROT_WRITE,
                               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        ASSERT_NE(MAP_FAILED, (void *)tmem);
        info = (direct_info *)mmap(nullptr, sizeof(direct_info),
                                   PROT_READ | PROT_WRITE,
                                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        ASSERT_NE(MAP_FAILED, (void *)info);
        ASSERT_EQ(0, pipe(wake));
    }

    void TearDown() override
    {
        t.close();
        soft::TearDown();
        munmap(tmem, TMEM_SIZE);
        munmap(info, sizeof(*info));
        ::close(wake[0]);
        ::close(wake[1]);
    }

    /* the test process as target: device with direct access, an MR over
     * [tmem + PAGE, + rlen), a read-only one, a deregistered one */
    void start_target(size_t rlen         = MAX_XFER,
                      uint32_t dct_access = DCX_ACCESS_REMOTE_WRITE |
                                            DCX_ACCESS_REMOTE_READ |
                                            DCX_ACCESS_REMOTE_ATOMIC)
    {
        dcx_soft_limits_t l = limits(true);
        dcx_mr_t *ro, *gone;
        size_t len = sizeof(info->addr);

        ASSERT_EQ(0, t.open(fabric.c_str(), &l));
        ASSERT_EQ(0,
                  t.reg(tmem + PAGE, rlen,
                        DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE |
                            DCX_ACCESS_REMOTE_READ | DCX_ACCESS_REMOTE_ATOMIC,
                        &tmr));
        ASSERT_EQ(0, t.reg(tmem + PAGE, rlen, DCX_ACCESS_REMOTE_READ, &ro));
        ASSERT_EQ(0,
                  dcx_mr_reg(t.pd, tmem + PAGE, rlen,
                             DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE,
                             &gone));
        info->rkey_gone = gone->rkey;
        ASSERT_EQ(0, dcx_mr_dereg(gone));
        ASSERT_EQ(0, t.make_target(0x5eedull, dct_access, 64));
        for (uint32_t i = 0; i < 16; ++i) {
            dcx_sge_t sge = {(uint64_t)(uintptr_t)(tmem + PAGE + i * 64), 64,
                             tmr->lkey};
            ASSERT_EQ(0, dcx_srq_post_recv(t.srq, i, &sge, 1));
        }
        ASSERT_EQ(0, dcx_dev_port_addr(t.dev, info->addr, &len));
        info->addr_len = (uint32_t)len;
        info->dctn     = t.dct->qp_num;
        info->dc_key   = 0x5eedull;
        info->raddr    = (uint64_t)(uintptr_t)(tmem + PAGE);
        info->rlen     = rlen;
        info->rkey     = tmr->rkey;
        info->rkey_ro  = ro->rkey;
        __atomic_store_n(&info->ready, 1, __ATOMIC_RELEASE);
    }

    /* runs fn as the initiator child once the target is up */
    pid_t start_initiator(std::function<int(node &)> fn, bool direct = true)
    {
        direct_info *in = info;
        std::string fab = fabric;

        return spawn([in, fab, fn, direct]() {
            return xfer_initiator(in, fab, limits(direct), fn);
        });
    }

    bool wait_done(double timeout = 60.0)
    {
        return wait_flag(&info->done, 1, timeout);
    }

    /* Starts the target, waits for the initiator, stops both */
    void run_target()
    {
        start_target();
        ASSERT_TRUE(wait_done());
        EXPECT_TRUE(stop_children());
    }

    /* The initiator moved its data by packets, after 'direct' direct
     * writes, reads and fallbacks each */
    void expect_by_packets(uint64_t direct)
    {
        EXPECT_EQ(direct, info->stats.direct_writes);
        EXPECT_EQ(direct, info->stats.direct_reads);
        EXPECT_EQ(direct, info->stats.direct_fallbacks);
        EXPECT_GT(info->stats.tx_packets, 0u);
    }

    /* Once the initiator says so (progress 1), deregisters the target's
     * read/write MR and lets the initiator go on (progress 2). */
    void dereg_when_asked()
    {
        ASSERT_TRUE(wait_flag(&info->progress, 1, 60.0));
        ASSERT_EQ(0, dcx_mr_dereg(tmr));
        t.mrs.erase(t.mrs.begin());
        __atomic_store_n(&info->progress, 2, __ATOMIC_RELEASE);
    }

    /* The target's memory holds 0x11 in the first 8 bytes of each of the
     * first 'count' 64-byte pieces of the MR, 0x5a everywhere else */
    void expect_eight_every_64(size_t count)
    {
        for (size_t i = 0; i < TMEM_SIZE; ++i) {
            size_t off   = i - PAGE;
            bool written = (i >= PAGE) && (off < count * 64) && (off % 64 < 8);
            ASSERT_EQ(written ? 0x11 : 0x5a, tmem[i]) << "byte " << i;
        }
    }

    /* Makes 'count' changes the initiator asks for, one at a time: on
     * progress 2k - 1 (ask_target), change k, then progress 2k. */
    void act_when_asked(uint32_t count, std::function<void(uint32_t)> act)
    {
        for (uint32_t k = 1; k <= count; ++k) {
            ASSERT_TRUE(wait_flag(&info->progress, 2 * k - 1, 60.0));
            ASSERT_NO_FATAL_FAILURE(act(k));
            __atomic_store_n(&info->progress, 2 * k, __ATOMIC_RELEASE);
        }
    }

    uint8_t *tmem     = nullptr;
    direct_info *info = nullptr;
    int wake[2];
    node t;
    dcx_mr_t *tmr = nullptr;
};

namespace {

dcx_send_wr_t wr_to(const direct_info *in, const node &n, dcx_wr_opcode_t op,
                    const dcx_sge_t *sge, uint64_t off, uint32_t rkey)
{
    dcx_send_wr_t wr = rdma_wr(n, in->dctn, in->dc_key, op, sge,
                               in->raddr + off, rkey);

    wr.wr_id = off;
    return wr;
}

/* The initiator's side of soft_direct::dereg_when_asked: asks the target
 * to deregister its MR and waits until it has. */
bool ask_dereg(direct_info *in)
{
    __atomic_store_n(&in->progress, 1, __ATOMIC_RELEASE);
    return wait_flag(&in->progress, 2, 30.0);
}

/* The initiator's side of soft_direct::act_when_asked: asks for change k
 * and waits until the target made it. */
bool ask_target(direct_info *in, uint32_t k)
{
    __atomic_store_n(&in->progress, 2 * k - 1, __ATOMIC_RELEASE);
    return wait_flag(&in->progress, 2 * k, 30.0);
}

} // namespace

/* Writes and reads of 1 B .. 16 MiB while the target process sleeps in a
 * blocking read: every byte lands, nothing around it changes, and the
 * target's device never saw a packet. */
TEST_F(soft_direct, write_read_target_asleep)
{
    const size_t sizes[] = {1,
                            7,
                            64,
                            4095,
                            4096,
                            65537,
                            (1u << 20) + 3,
                            4u << 20,
                            (8u << 20) - 1,
                            MAX_XFER};
    const size_t nsizes  = sizeof(sizes) / sizeof(sizes[0]);
    uint8_t *tm          = tmem;
    direct_info *in      = info;
    int wfd              = wake[1];

    memset(tmem, 0x5a, TMEM_SIZE);
    start_initiator([&sizes, nsizes, tm, in, wfd](node &n) -> int {
        local_buf lb;
        int rc = 0;

        if (lb.reg(n, MAX_XFER) != 0) {
            return 11;
        }
        for (size_t k = 0; (k < nsizes) && (rc == 0); ++k) {
            size_t sz    = sizes[k];
            size_t off   = (sz == MAX_XFER) ? 0 : (k * 3) % 64;
            uint8_t *dst = tm + PAGE + off;

            for (size_t i = 0; i < sz; ++i) {
                lb.v[i] = pattern(i, (unsigned)k);
            }
            dcx_sge_t s = lb.sge(0, (uint32_t)sz);
            if (run_one(n, wr_to(in, n, DCX_WR_RDMA_WRITE, &s, off,
                                 in->rkey)) != DCX_WC_SUCCESS) {
                fprintf(stderr, "write of %zu failed\n", sz);
                rc = 12;
                break;
            }
            for (size_t i = 0; i < sz; ++i) {
                if (dst[i] != pattern(i, (unsigned)k)) {
                    fprintf(stderr, "size %zu: byte %zu wrong\n", sz, i);
                    rc = 13;
                    break;
                }
            }
            for (size_t i = 0; (rc == 0) && (i < PAGE + off); ++i) {
                if (tm[i] != 0x5a) {
                    fprintf(stderr, "size %zu: byte before changed\n", sz);
                    rc = 14;
                }
            }
            for (size_t i = PAGE + off + sz; (rc == 0) && (i < TMEM_SIZE);
                 ++i) {
                if (tm[i] != 0x5a) {
                    fprintf(stderr, "size %zu: byte after changed\n", sz);
                    rc = 14;
                }
            }
            /* read back into a cleared buffer */
            memset(lb.v.data(), 0, sz);
            if ((rc == 0) && (run_one(n, wr_to(in, n, DCX_WR_RDMA_READ, &s, off,
                                               in->rkey)) != DCX_WC_SUCCESS)) {
                fprintf(stderr, "read of %zu failed\n", sz);
                rc = 15;
            }
            for (size_t i = 0; (rc == 0) && (i < sz); ++i) {
                if (lb.v[i] != pattern(i, (unsigned)k)) {
                    fprintf(stderr, "read %zu: byte %zu wrong\n", sz, i);
                    rc = 16;
                }
            }
            memset(dst, 0x5a, sz); /* restore for the next size */
        }
        if (write(wfd, "x", 1) != 1) {
            rc = 17;
        }
        return rc;
    });
    start_target();

    /* the target does nothing but wait here */
    char c;
    ASSERT_EQ(1, read(wake[0], &c, 1));
    ASSERT_TRUE(wait_done());
    dcx_soft_stats_t ts;
    ASSERT_EQ(0, dcx_soft_stats(t.dev, &ts));
    EXPECT_TRUE(stop_children());
    EXPECT_EQ(nsizes, info->stats.direct_writes);
    EXPECT_EQ(nsizes, info->stats.direct_reads);
    EXPECT_EQ(0u, info->stats.direct_fallbacks);
    EXPECT_EQ(0u, info->stats.tx_packets);
    EXPECT_EQ(0u, ts.rx_packets) << "the target's CPU served packets";
    EXPECT_EQ(0u, ts.helper_packets);
}

/* Every refused access takes the target's responder, which answers as it
 * always did: REM_ACCESS_ERR for a bad rkey, out of bounds, wrong access or
 * a deregistered key, a timeout for a wrong DC key; nothing is written. */
TEST_F(soft_direct, refused_accesses_bad_flow)
{
    uint8_t *tm       = tmem;
    direct_info *in   = info;
    const size_t rlen = 1u << 20;

    memset(tmem, 0x5a, TMEM_SIZE);
    start_initiator([tm, in, rlen](node &n) -> int {
        local_buf lb;
        struct {
            const char *what;
            dcx_wr_opcode_t op;
            uint32_t rkey;
            uint64_t off;
            uint32_t len;
            uint64_t dc_key;
            int status;
        } cases[] = {
            {"bad rkey", DCX_WR_RDMA_WRITE, in->rkey ^ 0x100u, 0, 4096,
             in->dc_key, DCX_WC_REM_ACCESS_ERR},
            {"bad rkey read", DCX_WR_RDMA_READ, in->rkey ^ 0x100u, 0, 4096,
             in->dc_key, DCX_WC_REM_ACCESS_ERR},
            {"out of bounds", DCX_WR_RDMA_WRITE, in->rkey, rlen - 8, 16,
             in->dc_key, DCX_WC_REM_ACCESS_ERR},
            {"out of bounds read", DCX_WR_RDMA_READ, in->rkey, rlen - 8, 16,
             in->dc_key, DCX_WC_REM_ACCESS_ERR},
            {"read-only key", DCX_WR_RDMA_WRITE, in->rkey_ro, 0, 4096,
             in->dc_key, DCX_WC_REM_ACCESS_ERR},
            {"deregistered key", DCX_WR_RDMA_WRITE, in->rkey_gone, 0, 4096,
             in->dc_key, DCX_WC_REM_ACCESS_ERR},
            {"wrong dc key", DCX_WR_RDMA_WRITE, in->rkey, 0, 4096,
             in->dc_key + 1, DCX_WC_RETRY_EXC_ERR},
        };
        int rc = 0;

        if (lb.reg(n, 8192) != 0) {
            return 11;
        }
        for (auto &c : cases) {
            memset(lb.v.data(), 0xc3, lb.v.size());
            dcx_sge_t s      = lb.sge(0, c.len);
            dcx_send_wr_t wr = wr_to(in, n, c.op, &s, c.off, c.rkey);
            wr.dest.dc_key   = c.dc_key;
            int st           = run_one(n, wr);
            if (st != c.status) {
                fprintf(stderr, "%s: status %d, expected %d\n", c.what, st,
                        c.status);
                rc = 12;
            }
            for (size_t i = 0; i < TMEM_SIZE; ++i) {
                if (tm[i] != 0x5a) {
                    fprintf(stderr, "%s: target byte %zu written\n", c.what, i);
                    rc = 13;
                    break;
                }
            }
            if ((c.op == DCX_WR_RDMA_READ) && (lb.v[0] != 0xc3)) {
                fprintf(stderr, "%s: local buffer written\n", c.what);
                rc = 14;
            }
            if (renew_dci(n) != 0) {
                return 15;
            }
        }
        return rc;
    });
    start_target(rlen);
    ASSERT_TRUE(wait_done(120.0));
    EXPECT_TRUE(stop_children());
    EXPECT_EQ(0u, info->stats.direct_writes);
    EXPECT_EQ(0u, info->stats.direct_reads);
    /* one refused copy per case that got as far as its marker (all but the
     * wrong DC key): a copy the post tried is not tried again by the
     * engine */
    EXPECT_EQ(6u, info->stats.direct_fallbacks);
}

/* Small copies after a granted one (soft_dgrant_t) check only what could
 * have changed: each change below -- a range past the MR, another DC key,
 * a key without the access, the MR deregistered -- is refused as without
 * the grant, nothing is written, and a grant is made again only after a
 * copy that passed every check. */
TEST_F(soft_direct, grant_rechecks_target_changes_bad_flow)
{
    direct_info *in = info;

    memset(tmem, 0x5a, TMEM_SIZE);
    start_initiator([in](node &n) -> int {
        local_buf lb;
        struct {
            const char *what;
            dcx_wr_opcode_t op;
            uint32_t rkey;
            uint64_t off;
            uint32_t len;
            uint64_t dc_key;
            int status;
            bool wait_dereg; /* the target deregisters its MR first */
        } steps[] = {
            {"first write", DCX_WR_RDMA_WRITE, in->rkey, 0, 8, in->dc_key,
             DCX_WC_SUCCESS, false},
            {"granted write", DCX_WR_RDMA_WRITE, in->rkey, 64, 8, in->dc_key,
             DCX_WC_SUCCESS, false},
            {"granted read", DCX_WR_RDMA_READ, in->rkey, 0, 8, in->dc_key,
             DCX_WC_SUCCESS, false},
            {"past the MR", DCX_WR_RDMA_WRITE, in->rkey, in->rlen - 4, 8,
             in->dc_key, DCX_WC_REM_ACCESS_ERR, false},
            {"write granted again", DCX_WR_RDMA_WRITE, in->rkey, 128, 8,
             in->dc_key, DCX_WC_SUCCESS, false},
            {"other dc key", DCX_WR_RDMA_WRITE, in->rkey, 4096, 8,
             in->dc_key + 1, DCX_WC_RETRY_EXC_ERR, false},
            {"write after the dc key", DCX_WR_RDMA_WRITE, in->rkey, 192, 8,
             in->dc_key, DCX_WC_SUCCESS, false},
            {"read-only key read", DCX_WR_RDMA_READ, in->rkey_ro, 64, 8,
             in->dc_key, DCX_WC_SUCCESS, false},
            {"read-only key write", DCX_WR_RDMA_WRITE, in->rkey_ro, 4096, 8,
             in->dc_key, DCX_WC_REM_ACCESS_ERR, false},
            {"last granted write", DCX_WR_RDMA_WRITE, in->rkey, 256, 8,
             in->dc_key, DCX_WC_SUCCESS, false},
            {"deregistered", DCX_WR_RDMA_WRITE, in->rkey, 4096, 8, in->dc_key,
             DCX_WC_REM_ACCESS_ERR, true},
        };
        int rc = 0;

        if (lb.reg(n, 64) != 0) {
            return 11;
        }
        for (auto &c : steps) {
            if (c.wait_dereg) {
                if (!ask_dereg(in)) {
                    return 12;
                }
            }
            memset(lb.v.data(), (c.op == DCX_WR_RDMA_READ) ? 0 : 0x11, 64);
            dcx_sge_t s      = lb.sge(0, c.len);
            dcx_send_wr_t wr = wr_to(in, n, c.op, &s, c.off, c.rkey);
            wr.dest.dc_key   = c.dc_key;
            int st           = run_one(n, wr);
            if (st != c.status) {
                fprintf(stderr, "%s: status %d, expected %d\n", c.what, st,
                        c.status);
                rc = 13;
            }
            if ((c.op == DCX_WR_RDMA_READ) && (c.status == DCX_WC_SUCCESS) &&
                (lb.v[0] != 0x11)) {
                fprintf(stderr, "%s: read 0x%x\n", c.what, lb.v[0]);
                rc = 14;
            }
            if ((st != DCX_WC_SUCCESS) && (renew_dci(n) != 0)) {
                return 15;
            }
        }
        return rc;
    });
    start_target();
    ASSERT_NO_FATAL_FAILURE(dereg_when_asked());
    ASSERT_TRUE(wait_done(120.0));
    EXPECT_TRUE(stop_children());
    ASSERT_NO_FATAL_FAILURE(expect_eight_every_64(5));
    /* made at the first write and again after each refusal; the copies
     * between took it */
    EXPECT_EQ(5u, info->stats.direct_grants);
    EXPECT_EQ(5u, info->stats.direct_writes);
    EXPECT_EQ(2u, info->stats.direct_reads);
}

/* A grant follows what its target changes in one word, the target's gen:
 * a fault rule there (its responder must see the packets), the rule
 * cleared, its DCT destroyed.  Each change is made while the initiator
 * holds a grant, and the next write must not take it: by packets while the
 * rule stands, direct again after it is cleared, and no write at all once
 * the DCT is gone (the write times out, the target's memory unchanged). */
TEST_F(soft_direct, grant_follows_target_gen_bad_flow)
{
    direct_info *in = info;

    memset(tmem, 0x5a, TMEM_SIZE);
    start_initiator([in](node &n) -> int {
        local_buf lb;
        struct {
            const char *what;
            uint32_t action; /* the target's change first (0: none) */
            int status;
            uint64_t direct; /* the write went direct */
        } steps[] = {
            {"first write", 0, DCX_WC_SUCCESS, 1},
            {"granted write", 0, DCX_WC_SUCCESS, 1},
            {"under a fault rule", 1, DCX_WC_SUCCESS, 0},
            {"rule cleared", 2, DCX_WC_SUCCESS, 1},
            {"granted again", 0, DCX_WC_SUCCESS, 1},
            {"DCT destroyed", 3, DCX_WC_RETRY_EXC_ERR, 0},
        };
        dcx_soft_stats_t before, after;
        uint64_t off = 0;
        int rc       = 0;

        if (lb.reg(n, 64) != 0) {
            return 11;
        }
        memset(lb.v.data(), 0x11, 64);
        for (auto &c : steps) {
            if ((c.action != 0) && !ask_target(in, c.action)) {
                return 12;
            }
            dcx_sge_t s      = lb.sge(0, 8);
            dcx_send_wr_t wr = wr_to(in, n, DCX_WR_RDMA_WRITE, &s, off,
                                     in->rkey);
            dcx_soft_stats(n.dev, &before);
            int st = run_one(n, wr);
            dcx_soft_stats(n.dev, &after);
            if ((st != c.status) ||
                (after.direct_writes - before.direct_writes != c.direct)) {
                fprintf(stderr,
                        "%s: status %d, expected %d; direct %llu, "
                        "expected %llu\n",
                        c.what, st, c.status,
                        (unsigned long long)(after.direct_writes -
                                             before.direct_writes),
                        (unsigned long long)c.direct);
                rc = 13;
            }
            if ((st != DCX_WC_SUCCESS) && (renew_dci(n) != 0)) {
                return 15;
            }
            off += 64;
        }
        return rc;
    });
    start_target();
    ASSERT_NO_FATAL_FAILURE(act_when_asked(3, [this](uint32_t action) {
        dcx_soft_fault_t f = {};

        switch (action) {
        case 1: /* a rule for packets this test never sends */
            f.type     = DCX_SOFT_FAULT_DELAY;
            f.opcode   = DCX_WR_SEND;
            f.delay_us = 1;
            ASSERT_EQ(0, dcx_soft_fault_inject(t.dev, &f));
            break;
        case 2:
            dcx_soft_fault_clear(t.dev);
            break;
        default:
            ASSERT_EQ(0, dcx_qp_destroy(t.dct));
            t.dct = nullptr;
            break;
        }
    }));
    ASSERT_TRUE(wait_done(120.0));
    EXPECT_TRUE(stop_children());
    ASSERT_NO_FATAL_FAILURE(expect_eight_every_64(5));
}

/* The initiator's side of the tests of work within the call: wr, which
 * the post with DCX_SEND_NOW answered 'now' (0: done within the call; else
 * declined), is posted without the flag when it was declined and must end
 * in status (the DCI renewed after an error).  0, 1 if an answer was not
 * the one expected (said on stderr), -1 if the DCI could not be renewed. */
int post_now_then_posted(node &n, const dcx_send_wr_t &wr, const char *what,
                         int now, int now_expected, int status)
{
    int rc = 0, st;

    if (now != now_expected) {
        fprintf(stderr, "%s: within the call %d, expected %d\n", what, now,
                now_expected);
        rc = 1;
    }
    if (now == 0) {
        return rc;
    }
    st = run_one(n, wr);
    if (st != status) {
        fprintf(stderr, "%s: status %d, expected %d\n", what, st, status);
        rc = 1;
    }
    if ((st != DCX_WC_SUCCESS) && (renew_dci(n) != 0)) {
        return -1;
    }
    return rc;
}

/* A READ flagged DCX_SEND_NOW lands its bytes in the caller's buffer
 * within the call only where the grant covers it (a READ to the same DCT
 * and key that passed every check before, within the MR, a key with read
 * access): anything else declines with EAGAIN, the buffer untouched, and
 * the posted READ says why -- a range past the MR, another DC key, another
 * key, the MR deregistered.  A WRITE with a read-only key is declined
 * too. */
TEST_F(soft_direct, read_now_only_under_grant_bad_flow)
{
    direct_info *in = info;

    memset(tmem, 0x5a, TMEM_SIZE);
    start_initiator([in](node &n) -> int {
        local_buf lb;
        struct {
            const char *what;
            dcx_wr_opcode_t op;
            uint32_t rkey;
            uint64_t off;
            uint32_t len;
            uint64_t dc_key;
            bool wait_dereg; /* the target deregisters its MR first */
            int now;         /* the post's return with DCX_SEND_NOW */
            int status;      /* then the posted WR's, when it declined */
        } steps[] = {
            {"before any check", DCX_WR_RDMA_READ, in->rkey, 0, 8, in->dc_key,
             false, EAGAIN, DCX_WC_SUCCESS},
            {"granted", DCX_WR_RDMA_READ, in->rkey, 64, 16, in->dc_key, false,
             0, 0},
            {"granted, another", DCX_WR_RDMA_READ, in->rkey, 32, 8, in->dc_key,
             false, 0, 0},
            {"past the MR", DCX_WR_RDMA_READ, in->rkey, in->rlen - 4, 8,
             in->dc_key, false, EAGAIN, DCX_WC_REM_ACCESS_ERR},
            {"granted again", DCX_WR_RDMA_READ, in->rkey, 128, 8, in->dc_key,
             false, EAGAIN, DCX_WC_SUCCESS},
            {"after the refusal", DCX_WR_RDMA_READ, in->rkey, 0, 4096,
             in->dc_key, false, 0, 0},
            {"other dc key", DCX_WR_RDMA_READ, in->rkey, 0, 8, in->dc_key + 1,
             false, EAGAIN, DCX_WC_RETRY_EXC_ERR},
            {"read-only key", DCX_WR_RDMA_READ, in->rkey_ro, 0, 8, in->dc_key,
             false, EAGAIN, DCX_WC_SUCCESS},
            {"read-only key granted", DCX_WR_RDMA_READ, in->rkey_ro, 8, 8,
             in->dc_key, false, 0, 0},
            {"a write", DCX_WR_RDMA_WRITE, in->rkey_ro, 0, 8, in->dc_key, false,
             EAGAIN, DCX_WC_REM_ACCESS_ERR},
            {"write refused, read again", DCX_WR_RDMA_READ, in->rkey_ro, 8, 8,
             in->dc_key, false, EAGAIN, DCX_WC_SUCCESS},
            {"the first key again", DCX_WR_RDMA_READ, in->rkey, 8, 8,
             in->dc_key, false, EAGAIN, DCX_WC_SUCCESS},
            {"the first key granted", DCX_WR_RDMA_READ, in->rkey, 16, 8,
             in->dc_key, false, 0, 0},
            {"deregistered", DCX_WR_RDMA_READ, in->rkey, 16, 8, in->dc_key,
             true, EAGAIN, DCX_WC_REM_ACCESS_ERR},
        };
        int rc = 0;

        if (lb.reg(n, 4096) != 0) {
            return 11;
        }
        for (auto &c : steps) {
            if (c.wait_dereg && !ask_dereg(in)) {
                return 12;
            }
            memset(lb.v.data(), 0x11, 4096);
            dcx_sge_t s      = lb.sge(0, c.len);
            dcx_send_wr_t wr = wr_to(in, n, c.op, &s, c.off, c.rkey);
            wr.dest.dc_key   = c.dc_key;
            int now          = post_now(n, wr);
            bool read_now    = (now == 0) && (c.op == DCX_WR_RDMA_READ);
            if (std::count(lb.v.begin(), lb.v.end(), 0x5a) !=
                (std::ptrdiff_t)(read_now ? c.len : 0)) {
                fprintf(stderr, "%s: wrong bytes\n", c.what);
                rc = 14;
            }
            int r = post_now_then_posted(n, wr, c.what, now, c.now, c.status);
            if (r < 0) {
                return 16;
            }
            rc = (r > 0) ? 15 : rc;
        }
        return rc;
    });
    start_target();
    ASSERT_NO_FATAL_FAILURE(dereg_when_asked());
    ASSERT_TRUE(wait_done(120.0));
    EXPECT_TRUE(stop_children());
    for (size_t i = 0; i < TMEM_SIZE; ++i) {
        ASSERT_EQ(0x5a, tmem[i]) << "byte " << i; /* nothing written */
    }
    /* five posted READs and five within the call */
    EXPECT_EQ(10u, info->stats.direct_reads);
}

/* A WRITE flagged DCX_SEND_NOW, not inline, copies its one registered sge
 * to the target within the call only where the grant covers it and the
 * sge passes a posted WRITE's checks: a range past the MR, a key without
 * write access, a bad local key, a local range past its MR, the MR
 * deregistered -- each declined with nothing written, and the posted
 * WRITE says why. */
TEST_F(soft_direct, write_now_only_under_grant_bad_flow)
{
    uint8_t *tm     = tmem;
    direct_info *in = info;

    memset(tmem, 0x5a, TMEM_SIZE);
    start_initiator([in](node &n) -> int {
        local_buf lb;
        struct {
            const char *what;
            uint32_t rkey;
            uint64_t off;
            uint32_t len;
            int bad_lkey;    /* 1: no such key; 2: the range past its MR */
            bool wait_dereg; /* the target deregisters its MR first */
            int now;         /* the post's return with DCX_SEND_NOW */
            int status;      /* then the posted WR's, when it declined */
        } steps[] = {
            {"before any check", in->rkey, 0, 8, 0, false, EAGAIN,
             DCX_WC_SUCCESS},
            {"granted", in->rkey, 64, 16, 0, false, 0, 0},
            {"granted, 4 KiB", in->rkey, 4096, 4096, 0, false, 0, 0},
            {"past the MR", in->rkey, in->rlen - 4, 8, 0, false, EAGAIN,
             DCX_WC_REM_ACCESS_ERR},
            {"granted again", in->rkey, 128, 8, 0, false, EAGAIN,
             DCX_WC_SUCCESS},
            {"read-only key", in->rkey_ro, 192, 8, 0, false, EAGAIN,
             DCX_WC_REM_ACCESS_ERR},
            {"after the refusal", in->rkey, 256, 8, 0, false, EAGAIN,
             DCX_WC_SUCCESS},
            {"bad local key", in->rkey, 320, 8, 1, false, EAGAIN,
             DCX_WC_LOC_PROT_ERR},
            {"local range past its MR", in->rkey, 384, 8, 2, false, EAGAIN,
             DCX_WC_LOC_PROT_ERR},
            /* the grant is the peer's: the renewed DCI's first WR */
            {"granted, renewed DCI", in->rkey, 448, 8, 0, false, 0, 0},
            {"granted last", in->rkey, 512, 8, 0, false, 0, 0},
            {"deregistered", in->rkey, 576, 8, 0, true, EAGAIN,
             DCX_WC_REM_ACCESS_ERR},
        };
        int rc = 0;

        if (lb.reg(n, 8192) != 0) {
            return 11;
        }
        memset(lb.v.data(), 0x11, lb.v.size());
        for (auto &c : steps) {
            if (c.wait_dereg && !ask_dereg(in)) {
                return 12;
            }
            dcx_sge_t sg = lb.sge(0, c.len);
            if (c.bad_lkey == 1) {
                sg.lkey ^= 0x5a5a00;
            } else if (c.bad_lkey == 2) {
                sg = lb.sge(8192 - 4, c.len);
            }
            dcx_send_wr_t wr = wr_to(in, n, DCX_WR_RDMA_WRITE, &sg, c.off,
                                     c.rkey);
            int now          = post_now(n, wr);
            int r = post_now_then_posted(n, wr, c.what, now, c.now, c.status);
            if (r < 0) {
                return 15;
            }
            rc = (r > 0) ? 14 : rc;
        }
        return rc;
    });
    start_target();
    ASSERT_NO_FATAL_FAILURE(dereg_when_asked());
    ASSERT_TRUE(wait_done(120.0));
    EXPECT_TRUE(stop_children());
    /* written: the granted and the posted successes, nothing else */
    const struct {
        uint64_t off, len;
    } written[] = {{0, 8},   {64, 16}, {4096, 4096}, {128, 8},
                   {256, 8}, {448, 8}, {512, 8}};
    for (size_t i = 0; i < TMEM_SIZE; ++i) {
        bool w = false;

        for (auto &r : written) {
            w |= (i >= PAGE + r.off) && (i < PAGE + r.off + r.len);
        }
        ASSERT_EQ(w ? 0x11 : 0x5a, tm[i]) << "byte " << i;
    }
    /* three posted and four copied within the call */
    EXPECT_EQ(7u, info->stats.direct_writes);
}

/* An inline WRITE flagged DCX_SEND_NOW takes its bytes from any memory,
 * registered or not, and not only up to max_inline (within the call it is
 * no post); done only under the grant, like any WRITE there.  One past the
 * MR is declined and, posted, fails.  A WR with no destination is
 * declined, a WRITE and a READ alike, the READ's buffer untouched. */
TEST_F(soft_direct, inline_write_now_bad_flow)
{
    uint8_t *tm     = tmem;
    direct_info *in = info;

    memset(tmem, 0x5a, TMEM_SIZE);
    start_initiator([in](node &n) -> int {
        std::vector<uint8_t> plain(n.dci->max_inline + 1, 0x22);
        local_buf reg; /* registered bytes: as good as any */
        if (reg.reg(n, 64) != 0) {
            return 17;
        }
        memset(reg.v.data(), 0x22, 64);
        in->max_inline = n.dci->max_inline;
        struct {
            const char *what;
            uint64_t off;
            uint32_t len;
            bool registered; /* from reg, not plain */
            int now;         /* the post's return with DCX_SEND_NOW */
            int status;      /* then the posted WR's */
        } steps[] = {
            {"before any check", 0, 8, false, EAGAIN, DCX_WC_SUCCESS},
            {"granted", 64, 16, false, 0, 0},
            {"granted, max_inline", 4096, n.dci->max_inline, false, 0, 0},
            {"granted, registered bytes", 128, 16, true, 0, 0},
            {"longer than max_inline", 8192, n.dci->max_inline + 1, false, 0,
             0},
            {"past the MR", in->rlen - 4, 8, false, EAGAIN,
             DCX_WC_REM_ACCESS_ERR},
            {"after the refusal", 192, 8, false, EAGAIN, DCX_WC_SUCCESS},
            {"granted last", 256, 8, false, 0, 0},
        };
        int rc = 0;

        for (auto &c : steps) {
            dcx_sge_t sg     = c.registered ?
                                   reg.sge(0, c.len) :
                                   dcx_sge_t{(uint64_t)(uintptr_t)plain.data(),
                                         c.len, 0};
            dcx_send_wr_t wr = wr_to(in, n, DCX_WR_RDMA_WRITE, &sg, c.off,
                                     in->rkey);
            wr.flags |= DCX_SEND_INLINE;
            int now = post_now(n, wr);
            int r   = post_now_then_posted(n, wr, c.what, now, c.now, c.status);
            if (r < 0) {
                return 15;
            }
            if (r > 0) {
                fprintf(stderr, "%s: now %d, expected %d\n", c.what, now,
                        c.now);
                rc = 14;
            }
        }
        /* no destination: declined, for a WRITE and a READ alike, with the
         * grant in place (it was dereferenced) */
        dcx_sge_t sg     = {(uint64_t)(uintptr_t)plain.data(), 8, 0};
        dcx_send_wr_t wr = wr_to(in, n, DCX_WR_RDMA_READ, &sg, 320, in->rkey);
        wr.dest.ah       = nullptr;
        if ((post_now(n, wr) != EAGAIN) ||
            (std::count(plain.begin(), plain.end(), 0x22) !=
             (std::ptrdiff_t)plain.size())) {
            fprintf(stderr, "no destination: READ not declined\n");
            rc = 16;
        }
        wr.opcode = DCX_WR_RDMA_WRITE;
        wr.flags |= DCX_SEND_INLINE;
        if (post_now(n, wr) != EAGAIN) {
            fprintf(stderr, "no destination: WRITE not declined\n");
            rc = 16;
        }
        return rc;
    });
    run_target();
    const struct {
        uint64_t off, len;
    } written[] = {{0, 8}, {64, 16}, {128, 16}, {192, 8}, {256, 8}};
    for (size_t i = 0; i < TMEM_SIZE; ++i) {
        bool w = ((i >= PAGE + 4096) && (i < PAGE + 4096 + info->max_inline)) ||
                 ((i >= PAGE + 8192) &&
                  (i < PAGE + 8192 + info->max_inline + 1));
        for (auto &r : written) {
            w |= (i >= PAGE + r.off) && (i < PAGE + r.off + r.len);
        }
        ASSERT_EQ(w ? 0x22 : 0x5a, tm[i]) << "byte " << i;
    }
}

/* A WRITE or READ the initiator copies while posting (the general path:
 * data in an sge) completes in the post and leaves the engine as it found
 * it: idle, the DCI not active, so the poll that takes the completion
 * runs no engine pass for it. */
TEST_F(soft_direct, copy_in_post_leaves_engine_idle)
{
    direct_info *in = info;

    memset(tmem, 0, TMEM_SIZE);
    start_initiator([in](node &n) -> int {
        soft_dev_t *sdev            = soft_dev(n.dev);
        soft_qp_t *dci              = (soft_qp_t *)n.dci;
        const dcx_wr_opcode_t ops[] = {DCX_WR_RDMA_WRITE, DCX_WR_RDMA_READ,
                                       DCX_WR_RDMA_WRITE, DCX_WR_RDMA_READ};
        local_buf lb;
        dcx_wc_t wc;

        if (lb.reg(n, 4096) != 0) {
            return 11;
        }
        for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); ++i) {
            dcx_sge_t s      = lb.sge(0, 64);
            dcx_send_wr_t wr = wr_to(in, n, ops[i], &s, 64 * i, in->rkey);

            /* the engine settled first (the helper may hold a pass) */
            if (n.poll(&wc, 1, 0.05) != 0) {
                return 12;
            }
            if (dcx_qp_post_send(n.dci, &wr) != 0) {
                return 13;
            }
            if ((__atomic_load_n(&sdev->engine_idle, __ATOMIC_RELAXED) !=
                 SOFT_ENGINE_IDLE) ||
                dci->active) {
                fprintf(stderr, "op %zu: engine %d, dci active %d\n", i,
                        sdev->engine_idle, dci->active);
                return 14;
            }
            if ((n.poll(&wc, 1, 30.0) != 1) || (wc.status != DCX_WC_SUCCESS)) {
                return 15;
            }
        }
        return 0;
    });
    ASSERT_NO_FATAL_FAILURE(run_target());
    EXPECT_EQ(2u, info->stats.direct_writes);
    EXPECT_EQ(2u, info->stats.direct_reads);
}

/* Unsignaled inline WRITEs to a granted target, on a DCI with nothing
 * outstanding, are copied from the caller's buffer while posting, with no
 * WQE written: each lands before its post returns and completes at once,
 * but still takes its send-queue slot until a signaled completion is
 * polled, so the queue overflows (ENOMEM) after as many as it holds, as
 * on the hardware.  Once the target deregisters its MR, the next one is
 * refused as any: an error completion, unsignaled or not, and nothing
 * written. */
TEST_F(soft_direct, unsignaled_inline_write_bad_flow)
{
    uint8_t *tm     = tmem;
    direct_info *in = info;

    memset(tmem, 0, TMEM_SIZE);
    start_initiator([in, tm](node &n) -> int {
        soft_qp_t *dci = (soft_qp_t *)n.dci;
        uint32_t size  = dci->sq_size;
        local_buf lb;
        dcx_wc_t wc;
        uint64_t v;

        if (lb.reg(n, 64) != 0) {
            return 11;
        }
        memset(lb.v.data(), 0x11, 64);
        dcx_sge_t s = lb.sge(0, 8);
        if (run_one(n, wr_to(in, n, DCX_WR_RDMA_WRITE, &s, 0, in->rkey)) !=
            DCX_WC_SUCCESS) {
            return 12;
        }
        for (v = 1; v <= size + 1; ++v) {
            dcx_sge_t vs     = {(uint64_t)(uintptr_t)&v, sizeof(v), 0};
            dcx_send_wr_t wr = wr_to(in, n, DCX_WR_RDMA_WRITE, &vs,
                                     64 + 8 * (v % 8), in->rkey);
            uint64_t got;
            int ret;

            wr.flags = DCX_SEND_INLINE;
            ret      = dcx_qp_post_send(n.dci, &wr);
            if (v == size + 1) {
                /* every slot taken, none retired by a polled completion */
                if (ret != ENOMEM) {
                    fprintf(stderr, "post %llu past %u slots: %d\n",
                            (unsigned long long)v, size, ret);
                    return 13;
                }
                break;
            }
            memcpy(&got, tm + PAGE + 64 + 8 * (v % 8), sizeof(got));
            if ((ret != 0) || (got != v) || (dci->sq_comp != dci->sq_head)) {
                fprintf(stderr, "write %llu: %d, read %llu, sq %u/%u\n",
                        (unsigned long long)v, ret, (unsigned long long)got,
                        dci->sq_comp, dci->sq_head);
                return 14;
            }
        }
        if (n.poll(&wc, 1, 0.05) != 0) {
            return 15; /* nothing to complete */
        }
        if (renew_dci(n) != 0) {
            return 16;
        }
        if (!ask_dereg(in)) {
            return 17;
        }
        dcx_sge_t vs     = {(uint64_t)(uintptr_t)&v, sizeof(v), 0};
        dcx_send_wr_t wr = wr_to(in, n, DCX_WR_RDMA_WRITE, &vs, 4096, in->rkey);
        wr.flags         = DCX_SEND_INLINE;
        if ((dcx_qp_post_send(n.dci, &wr) != 0) ||
            (n.poll(&wc, 1, 30.0) != 1)) {
            return 18;
        }
        in->status = wc.status;
        in->rlen   = size; /* reported back */
        return 0;
    });
    start_target();
    ASSERT_NO_FATAL_FAILURE(dereg_when_asked());
    ASSERT_TRUE(wait_done());
    EXPECT_TRUE(stop_children());
    EXPECT_EQ((uint32_t)DCX_WC_REM_ACCESS_ERR, info->status);
    for (size_t i = PAGE + 4096; i < PAGE + 4104; ++i) {
        ASSERT_EQ(0, tmem[i]) << "byte " << i;
    }
    EXPECT_EQ(1u + info->rlen, info->stats.direct_writes);
    EXPECT_EQ(1u, info->stats.direct_grants);
}

/* A region deregistered while initiators write into it: once mr_dereg
 * returns nothing more is written (the target fills it and checks), and
 * the writer gets REM_ACCESS_ERR. */
TEST_F(soft_direct, dereg_races_write)
{
    const size_t rlen = MAX_XFER;

    memset(tmem, 0, TMEM_SIZE);
    for (int round = 0; round < 5; ++round) {
        direct_info *in = info;

        memset(info, 0, sizeof(*info));
        start_initiator([in, rlen](node &n) -> int {
            return write_until_error(n, rlen,
                                     wr_to(in, n, DCX_WR_RDMA_WRITE, nullptr, 0,
                                           in->rkey),
                                     &in->progress, &in->status);
        });
        start_target(rlen);
        /* let it write a few times, then pull the region away */
        ASSERT_TRUE(wait_at_least(&info->progress, 2, 60.0));
        ASSERT_EQ(0, dcx_mr_dereg(tmr));
        t.mrs.erase(t.mrs.begin());
        memset(tmem, 0, TMEM_SIZE);
        ASSERT_TRUE(wait_done());
        for (size_t i = 0; i < TMEM_SIZE; ++i) {
            ASSERT_EQ(0, tmem[i]) << "round " << round << ": byte " << i
                                  << " written after mr_dereg returned";
        }
        EXPECT_EQ((uint32_t)DCX_WC_REM_ACCESS_ERR, info->status);
        EXPECT_GT(info->stats.direct_writes, 1u);
        EXPECT_TRUE(stop_children());
        children.clear();
        t.close();
        __atomic_store_n(&sh->stop, 0, __ATOMIC_RELEASE);
    }
}

/* The unmap hook (dcx_dev_mem_unmapped) invalidates a region the same way:
 * a direct write into it afterwards is refused and writes nothing. */
TEST_F(soft_direct, unmapped_region_bad_flow)
{
    direct_info *in = info;
    uint8_t *tm     = tmem;

    memset(tmem, 0x5a, TMEM_SIZE);
    start_initiator([in, tm](node &n) -> int {
        local_buf lb;

        if (lb.reg(n, 4096) != 0) {
            return 11;
        }
        memset(lb.v.data(), 0x11, 4096);
        dcx_sge_t s = lb.sge(0, 4096);
        /* the target invalidates once this first write is done */
        if (run_one(n, wr_to(in, n, DCX_WR_RDMA_WRITE, &s, 0, in->rkey)) !=
            DCX_WC_SUCCESS) {
            return 12;
        }
        __atomic_store_n(&in->progress, 1, __ATOMIC_RELEASE);
        if (!wait_flag(&in->progress, 2, 30.0)) {
            return 13;
        }
        memset(lb.v.data(), 0x22, 4096);
        int st     = run_one(n,
                             wr_to(in, n, DCX_WR_RDMA_WRITE, &s, 8192, in->rkey));
        in->status = (uint32_t)st;
        return (tm[PAGE + 8192] == 0x5a) ? 0 : 14;
    });
    start_target(1u << 20);
    ASSERT_TRUE(wait_flag(&info->progress, 1, 30.0));
    dcx_dev_mem_unmapped(t.dev, tmem + PAGE, 1u << 20);
    __atomic_store_n(&info->progress, 2, __ATOMIC_RELEASE);
    ASSERT_TRUE(wait_done());
    EXPECT_TRUE(stop_children());
    EXPECT_EQ((uint32_t)DCX_WC_REM_ACCESS_ERR, info->status);
    EXPECT_EQ(0x11, tmem[PAGE]);
    for (size_t i = PAGE + 4096; i < TMEM_SIZE; ++i) {
        ASSERT_EQ(0x5a, tmem[i]) << "byte " << i;
    }
}

/* A writer killed in the middle of a copy leaves its in-flight marker
 * behind: the target's mr_dereg notices the writer is dead and returns
 * without waiting for it (no "holds a copy" warning). */
TEST_F(soft_direct, dead_writer_does_not_block_dereg)
{
    direct_info *in   = info;
    const size_t rlen = MAX_XFER;

    pid_t pid = start_initiator([in, rlen](node &n) -> int {
        local_buf lb;

        if (lb.reg(n, rlen) != 0) {
            return 11;
        }
        memset(lb.v.data(), 0x77, rlen);
        dcx_sge_t s = lb.sge(0, (uint32_t)rlen);
        for (;;) {
            if (run_one(n, wr_to(in, n, DCX_WR_RDMA_WRITE, &s, 0, in->rkey)) !=
                DCX_WC_SUCCESS) {
                return 12;
            }
            __atomic_add_fetch(&in->progress, 1, __ATOMIC_RELEASE);
        }
    });
    start_target(rlen);
    ASSERT_TRUE(wait_at_least(&info->progress, 1, 60.0));

    /* stop the writer until it is caught inside a copy */
    bool caught = false;
    for (int i = 0; (i < 2000) && !caught; ++i) {
        int wst;
        ASSERT_EQ(0, kill(pid, SIGSTOP));
        ASSERT_EQ(pid, waitpid(pid, &wst, WUNTRACED));
        caught = (dcx_soft_direct_inflight(t.dev) > 0);
        if (!caught) {
            ASSERT_EQ(0, kill(pid, SIGCONT));
            usleep(100 + (i % 7) * 50);
        }
    }
    ASSERT_TRUE(caught) << "the writer was never stopped inside a copy";
    kill_child(pid);

    log_counter lc;
    ASSERT_EQ(0, dcx_mr_dereg(tmr));
    t.mrs.erase(t.mrs.begin());
    EXPECT_EQ(0, lc.lines()) << "dereg waited for a dead writer";
    EXPECT_EQ(0u, dcx_soft_direct_inflight(t.dev));
    stop_children();
}

namespace {

/* makes process_vm_readv/writev fail with EPERM in this process, as a
 * container's or a sandbox's policy does */
bool refuse_cross_memory_attach()
{
    return refuse_syscalls({__NR_process_vm_readv, __NR_process_vm_writev},
                           EPERM);
}

int write_read_check(node &n, const direct_info *in, uint8_t *tm, unsigned seed)
{
    local_buf lb;
    const size_t sz = 100000;

    if (lb.reg(n, sz) != 0) {
        return 21;
    }
    for (size_t i = 0; i < sz; ++i) {
        lb.v[i] = pattern(i, seed);
    }
    dcx_sge_t s = lb.sge(0, (uint32_t)sz);
    if (run_one(n, wr_to(in, n, DCX_WR_RDMA_WRITE, &s, 0, in->rkey)) !=
        DCX_WC_SUCCESS) {
        return 22;
    }
    for (size_t i = 0; i < sz; ++i) {
        if (tm[PAGE + i] != pattern(i, seed)) {
            return 23;
        }
    }
    memset(lb.v.data(), 0, sz);
    if (run_one(n, wr_to(in, n, DCX_WR_RDMA_READ, &s, 0, in->rkey)) !=
        DCX_WC_SUCCESS) {
        return 24;
    }
    for (size_t i = 0; i < sz; ++i) {
        if (lb.v[i] != pattern(i, seed)) {
            return 25;
        }
    }
    return 0;
}

} // namespace

/* Cross-memory attach refused from the start (the probe at open fails):
 * writes and reads go through the target's responder and still work. */
TEST_F(soft_direct, refused_at_open_falls_back)
{
    direct_info *in = info;
    uint8_t *tm     = tmem;
    std::string fab = fabric;

    spawn([in, tm, fab]() -> int {
        dcx_soft_limits_t l = limits(true);
        node n;
        int rc;

        if (!refuse_cross_memory_attach()) {
            fprintf(stderr, "seccomp filter refused\n");
            return 30;
        }
        if (!wait_flag(&in->ready, 1, 20.0) || (n.open(fab.c_str(), &l) != 0) ||
            (n.make_dci() != 0) || (n.connect(in->addr, in->addr_len) != 0)) {
            return 10;
        }
        rc = write_read_check(n, in, tm, 1);
        dcx_soft_stats(n.dev, &in->stats);
        n.close();
        __atomic_store_n(&in->done, 1, __ATOMIC_RELEASE);
        return rc;
    });
    ASSERT_NO_FATAL_FAILURE(run_target());
    expect_by_packets(0);
}

/* Refused towards this target after the device opened (EPERM at the first
 * copy): that operation and the later ones go by packets, once noticed. */
TEST_F(soft_direct, refused_later_falls_back)
{
    direct_info *in = info;
    uint8_t *tm     = tmem;

    start_initiator([in, tm](node &n) -> int {
        int rc = write_read_check(n, in, tm, 2);

        if (rc != 0) {
            return rc;
        }
        if (!refuse_cross_memory_attach()) {
            return 30;
        }
        rc = write_read_check(n, in, tm, 3);
        return rc ? rc : write_read_check(n, in, tm, 4);
    });
    ASSERT_NO_FATAL_FAILURE(run_target());
    expect_by_packets(1);
}

/* An atomic followed by a write to the same address on one DCI, both
 * posted at once: the write's value wins, as on hardware. */
TEST_F(soft_direct, atomic_then_write_same_address)
{
    direct_info *in = info;
    uint8_t *tm     = tmem;

    memset(tmem, 0, TMEM_SIZE);
    start_initiator([in, tm](node &n) -> int {
        local_buf lb;
        int rc = 0;

        if (lb.reg(n, 64) != 0) {
            return 11;
        }
        for (int i = 0; (i < 50) && (rc == 0); ++i) {
            uint64_t v      = 0x1000 + i;
            dcx_sge_t res   = lb.sge(0, 8);
            dcx_send_wr_t a = wr_to(in, n, DCX_WR_ATOMIC_FADD, &res, 64,
                                    in->rkey);
            a.compare_add   = 1;
            memcpy(lb.v.data() + 8, &v, 8);
            dcx_sge_t val   = lb.sge(8, 8);
            dcx_send_wr_t w = wr_to(in, n, DCX_WR_RDMA_WRITE, &val, 64,
                                    in->rkey);
            dcx_wc_t wc[2];

            if ((dcx_qp_post_send(n.dci, &a) != 0) ||
                (dcx_qp_post_send(n.dci, &w) != 0) ||
                (n.poll(wc, 2, 30.0) != 2) ||
                (wc[0].status != DCX_WC_SUCCESS) ||
                (wc[1].status != DCX_WC_SUCCESS)) {
                return 12;
            }
            uint64_t got;
            memcpy(&got, tm + PAGE + 64, 8);
            if (got != v) {
                fprintf(stderr, "round %d: 0x%llx, expected 0x%llx\n", i,
                        (unsigned long long)got, (unsigned long long)v);
                rc = 13;
            }
        }
        return rc;
    });
    ASSERT_NO_FATAL_FAILURE(run_target());
}

/* A write followed by a send on one DCI: when the target sees the receive
 * completion, the written data is there. */
TEST_F(soft_direct, write_then_send_visible_at_arrival)
{
    direct_info *in  = info;
    const int rounds = 16;

    memset(tmem, 0, TMEM_SIZE);
    start_initiator([in](node &n) -> int {
        local_buf lb;

        if (lb.reg(n, 1u << 20) != 0) {
            return 11;
        }
        for (int i = 0; i < rounds; ++i) {
            memset(lb.v.data(), 0x30 + i, 1u << 20);
            dcx_sge_t data  = lb.sge(0, 1u << 20);
            dcx_sge_t msg   = lb.sge(0, 16);
            dcx_send_wr_t w = wr_to(in, n, DCX_WR_RDMA_WRITE, &data, 4096,
                                    in->rkey);
            dcx_send_wr_t s = wr_to(in, n, DCX_WR_SEND, &msg, 0, 0);
            dcx_wc_t wc[2];

            w.flags = 0; /* unsignaled: only the send completes */
            if ((dcx_qp_post_send(n.dci, &w) != 0) ||
                (dcx_qp_post_send(n.dci, &s) != 0) ||
                (n.poll(wc, 1, 30.0) != 1) ||
                (wc[0].status != DCX_WC_SUCCESS)) {
                return 12;
            }
            /* the target checked this round */
            if (!wait_at_least(&in->progress, (uint32_t)i + 1, 30.0)) {
                return 13;
            }
        }
        return 0;
    });
    start_target();
    for (int i = 0; i < rounds; ++i) {
        dcx_wc_t wc;
        ASSERT_EQ(1, t.poll(&wc, 1, 30.0));
        ASSERT_EQ(DCX_WC_SUCCESS, wc.status);
        /* the whole 1 MiB at 4096 carries this round's byte */
        for (size_t k = 0; k < (1u << 20); k += 997) {
            ASSERT_EQ(0x30 + i, tmem[PAGE + 4096 + k])
                << "round " << i << " offset " << k;
        }
        ASSERT_EQ(0x30 + i, tmem[PAGE + 4096 + (1u << 20) - 1]);
        __atomic_store_n(&info->progress, (uint32_t)i + 1, __ATOMIC_RELEASE);
    }
    ASSERT_TRUE(wait_done());
    EXPECT_TRUE(stop_children());
    EXPECT_EQ((uint64_t)rounds, info->stats.direct_writes);
}

/* A send and then a READ of at least a packet's data, posted at once on one
 * DCI: the READ waits for the send's acknowledgement and then copies
 * directly, rather than going in packets whose data the target's CPU must
 * copy into the ring one MTU at a time and ours out of it (what UCP's
 * software rendezvous does: the ATS of one message and the READ of the
 * next on one endpoint). */
class soft_direct_behind : public soft_direct {
protected:
    /* len: bytes of each READ, or 0 for exactly the device's MTU */
    void read_behind_send(size_t len)
    {
        direct_info *in  = info;
        const int rounds = 16;
        const size_t max = 1u << 20;

        for (size_t k = 0; k < max; ++k) {
            tmem[PAGE + 4096 + k] = pattern(k, 7);
        }
        start_initiator([in, len, max](node &n) -> int {
            const size_t l = (len != 0) ? len : dcx_dev_caps(n.dev)->mtu;
            local_buf lb;

            if ((l > max) || (lb.reg(n, l + 64) != 0)) {
                return 11;
            }
            for (int i = 0; i < rounds; ++i) {
                memset(lb.v.data(), 0, l + 64);
                dcx_sge_t msg   = lb.sge(l, 16);
                dcx_sge_t data  = lb.sge(0, (uint32_t)l);
                dcx_send_wr_t s = wr_to(in, n, DCX_WR_SEND, &msg, 0, 0);
                dcx_send_wr_t r = wr_to(in, n, DCX_WR_RDMA_READ, &data, 4096,
                                        in->rkey);
                dcx_wc_t wc[2];

                if ((dcx_qp_post_send(n.dci, &s) != 0) ||
                    (dcx_qp_post_send(n.dci, &r) != 0) ||
                    (n.poll(wc, 2, 30.0) != 2) ||
                    (wc[0].status != DCX_WC_SUCCESS) ||
                    (wc[1].status != DCX_WC_SUCCESS) || (wc[1].wr_id != 4096)) {
                    return 12;
                }
                for (size_t k = 0; k < l; ++k) {
                    if (lb.v[k] != pattern(k, 7)) {
                        fprintf(stderr, "round %d: byte %zu wrong\n", i, k);
                        return 13;
                    }
                }
            }
            return 0;
        });
        start_target();
        for (int i = 0; i < rounds; ++i) {
            dcx_wc_t wc;
            ASSERT_EQ(1, t.poll(&wc, 1, 30.0));
            ASSERT_EQ(DCX_WC_SUCCESS, wc.status);
        }
        ASSERT_TRUE(wait_done());
        dcx_soft_stats_t ts;
        ASSERT_EQ(0, dcx_soft_stats(t.dev, &ts));
        EXPECT_TRUE(stop_children());
        EXPECT_EQ((uint64_t)rounds, info->stats.direct_reads);
        EXPECT_EQ(0u, info->stats.direct_fallbacks);
        /* the target answered the sends (acknowledgements, well under one
         * packet of data in all), no READ packet */
        EXPECT_LT(ts.tx_bytes, (uint64_t)rounds * 16 * 64)
            << "READ responses by packets";
    }
};

TEST_F(soft_direct_behind, long_read_behind_send_goes_direct)
{
    read_behind_send(1u << 20);
}

/* exactly one packet's data: its packet would carry as much as the copy
 * saves */
TEST_F(soft_direct_behind, packet_sized_read_behind_send_goes_direct)
{
    read_behind_send(0);
}

/* A device busy with a long direct copy (the copy runs in the post, under
 * the engine lock, where no poll can run) is not taken for absent by a
 * requester whose packet waits in its ring: no prod of its helper while
 * the copy lasts, however long that is; the copy ends with a fresh poll
 * stamp.  Three devices of this process: a sends to b's DCT while b
 * WRITEs 64 MiB into c by cross-memory attach; no helper runs. */
TEST_F(soft, long_direct_copy_not_prodded)
{
    const size_t len   = 64u << 20;
    const uint64_t key = 0x10c0;
    std::vector<uint8_t> src(len, 0x3c), dst(len, 0), rbuf(64 * 16);
    uint8_t addr[DCX_DEV_ADDR_MAX];
    size_t alen;
    node a, b, c;
    dcx_mr_t *smr, *dmr, *rmr;

    dcx_soft_limits_t l = xfer_limits(true);
    ASSERT_EQ(0, a.open(fabric.c_str(), &l));
    ASSERT_EQ(0, b.open(fabric.c_str(), &l));
    ASSERT_EQ(0, c.open(fabric.c_str(), &l));
    ASSERT_EQ(0, b.make_target(key, 0));
    ASSERT_EQ(0, b.reg(rbuf.data(), rbuf.size(), DCX_ACCESS_LOCAL_WRITE, &rmr));
    for (uint64_t i = 0; i < 16; ++i) {
        dcx_sge_t s = {(uintptr_t)rbuf.data() + i * 64, 64, rmr->lkey};
        ASSERT_EQ(0, dcx_srq_post_recv(b.srq, i, &s, 1));
    }
    ASSERT_EQ(0, c.make_target(key, DCX_ACCESS_REMOTE_WRITE));
    ASSERT_EQ(0, c.reg(dst.data(), len,
                       DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE, &dmr));
    ASSERT_EQ(0, b.make_dci());
    ASSERT_EQ(0, b.reg(src.data(), len, 0, &smr));
    alen = sizeof(addr);
    ASSERT_EQ(0, dcx_dev_port_addr(c.dev, addr, &alen));
    ASSERT_EQ(0, b.connect(addr, alen));
    ASSERT_EQ(0, a.make_dci());
    alen = sizeof(addr);
    ASSERT_EQ(0, dcx_dev_port_addr(b.dev, addr, &alen));
    ASSERT_EQ(0, a.connect(addr, alen));
    soft_helper_stop(soft_dev(a.dev));
    soft_helper_stop(soft_dev(b.dev));
    soft_helper_stop(soft_dev(c.dev));
    soft_direct_area_t *area = soft_dev(c.dev)->direct;
    ASSERT_NE(nullptr, area);

    auto copying = [area]() {
        for (unsigned i = 0; i < SOFT_DIRECT_SLOTS; ++i) {
            if (__atomic_load_n(&area->slots[i].owner, __ATOMIC_ACQUIRE)) {
                return true;
            }
        }
        return false;
    };

    uint64_t during = 0; /* prods made by polls run while b copied */
    int meaningful  = 0; /* rounds where a's watch grew old meanwhile */
    for (int round = 0; (round < 8) && (meaningful < 2); ++round) {
        dcx_sge_t s     = {(uintptr_t)src.data(), (uint32_t)len, smr->lkey};
        dcx_send_wr_t w = rdma_wr(b, c.dct->qp_num, key, DCX_WR_RDMA_WRITE, &s,
                                  (uintptr_t)dst.data(), dmr->rkey);
        volatile uint32_t posted = 0;
        int post_ret             = -1;
        std::thread t([&]() {
            post_ret = dcx_qp_post_send(b.dci, &w);
            __atomic_store_n(&posted, 1, __ATOMIC_RELEASE);
        });
        while (!copying() && !__atomic_load_n(&posted, __ATOMIC_ACQUIRE)) {
        }
        ASSERT_EQ(0, post_inline_value(a, a.dci, b.dct->qp_num, key,
                                       DCX_WR_SEND, 100 + round));
        uint64_t sent     = soft_now_ns();
        soft_peer_t *peer = nullptr;
        for (soft_peer_t *p = soft_dev(a.dev)->peers; p != nullptr;
             p              = p->next) {
            if (p->pid == soft_dev(b.dev)->pid &&
                p->inst == soft_dev(b.dev)->inst) {
                peer = p;
            }
        }
        ASSERT_NE(nullptr, peer);
        bool old = false;
        while (copying()) {
            uint64_t before = dev_stats(a).prods;
            dcx_wc_t wc;
            dcx_cq_poll(a.cq, 1, &wc);
            uint64_t after = soft_now_ns();
            if (!copying()) {
                break; /* the copy may have ended during the poll */
            }
            during += dev_stats(a).prods - before;
            old |= (peer->watch_since != 0) &&
                   (after - sent > 4 * SOFT_PROD_NS);
        }
        t.join();
        ASSERT_EQ(0, post_ret);
        meaningful += old;
        dcx_wc_t wc;
        ASSERT_EQ(1, b.poll(&wc, 1)); /* the write, completed in its post */
        EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
        ASSERT_EQ(1, b.poll(&wc, 1)); /* a's send */
        EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
        ASSERT_EQ(1, a.poll(&wc, 1));
        EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    }
    EXPECT_EQ(0x3c, dst[len - 1]);
    EXPECT_EQ(0u, during) << "a prodded b while b copied";
    EXPECT_GT(meaningful, 0) << "no copy outlasted the prod delay";
}
