/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fixture of the tests of RDMA WRITE and READ executed by the initiator
 * (soft_direct.c; test_soft_direct.cc, test_soft_direct_now.cc,
 * test_soft_direct_race.cc): a child process is the initiator, the test
 * process is the target, and the target's memory is a shared mapping both
 * can check byte by byte.  The area the target publishes to the initiator,
 * the target's MRs and DCT, and the steps by which the two take turns.
 */
#ifndef SOFT_DIRECT_FIXTURE_H_
#define SOFT_DIRECT_FIXTURE_H_

#include "soft_xfer.h"

extern "C" {
#include "soft/soft.h"
#include "soft/soft_direct.h"
}

#include <functional>
#include <string.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

using namespace soft_test;

/* Named, not anonymous: the fixture is the same class in every file that
 * includes it */
namespace soft_direct_test {

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
inline dcx_soft_limits_t limits(bool direct)
{
    return xfer_limits(direct);
}

inline dcx_send_wr_t wr_to(const direct_info *in, const node &n,
                           dcx_wr_opcode_t op, const dcx_sge_t *sge,
                           uint64_t off, uint32_t rkey)
{
    dcx_send_wr_t wr = rdma_wr(n, in->dctn, in->dc_key, op, sge,
                               in->raddr + off, rkey);

    wr.wr_id = off;
    return wr;
}

/* The initiator's side of soft_direct::dereg_when_asked: asks the target
 * to deregister its MR and waits until it has. */
inline bool ask_dereg(direct_info *in)
{
    __atomic_store_n(&in->progress, 1, __ATOMIC_RELEASE);
    return wait_flag(&in->progress, 2, 30.0);
}

/* The initiator's side of soft_direct::act_when_asked: asks for change k
 * and waits until the target made it. */
inline bool ask_target(direct_info *in, uint32_t k)
{
    __atomic_store_n(&in->progress, 2 * k - 1, __ATOMIC_RELEASE);
    return wait_flag(&in->progress, 2 * k, 30.0);
}

} // namespace soft_direct_test

using namespace soft_direct_test;

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

#endif
