/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The mapped-allocation fixture of the soft device tests
 * (test_soft_dmap.cc, test_soft_dmap_cache.cc): the area the test process
 * shares with its children (dmap_info), the test process as the target of
 * a System V segment (shm_alloc) with its MRs and DC target, a child
 * initiator, a child target that allocates (and may exec), and the checks
 * on the segment's bytes.
 */
#ifndef SOFT_DMAP_FIXTURE_H_
#define SOFT_DMAP_FIXTURE_H_

#include "soft_xfer.h"

#include <stdio.h>
#include <string.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

using namespace soft_test;

namespace soft_dmap_test {

const size_t PAGE = 4096;
const size_t RLEN = 8u << 20; /* the target MR; a page of guard each side */

struct dmap_info {
    uint8_t addr[DCX_DEV_ADDR_MAX];
    uint32_t addr_len;
    uint32_t dctn;
    uint64_t dc_key;
    uint64_t raddr;
    uint32_t rkey;
    uint32_t rkey_ro;
    uint32_t rkey_gone;
    uint32_t rkey2; /* free_then_realloc: the new MR */
    uint64_t raddr2;
    volatile uint32_t ready;
    volatile uint32_t phase;
    volatile uint32_t progress;
    volatile uint32_t done;
    volatile uint32_t status;
    dcx_soft_stats_t stats; /* the initiator's counters at the end */
};

inline dcx_soft_limits_t limits()
{
    return xfer_limits(true);
}

inline dcx_send_wr_t wr_to(const dmap_info *in, const node &n,
                           dcx_wr_opcode_t op, const dcx_sge_t *sge,
                           uint64_t raddr, uint32_t rkey)
{
    return rdma_wr(n, in->dctn, in->dc_key, op, sge, raddr, rkey);
}

} // namespace soft_dmap_test

using namespace soft_dmap_test;

class soft_dmap : public soft {
protected:
    void SetUp() override
    {
        soft::SetUp();
        info = (dmap_info *)mmap(nullptr, sizeof(dmap_info),
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
        if (mem != nullptr) {
            EXPECT_EQ(0, shm_free(t.dev, mem, mem_len));
            mem = nullptr;
        }
        t.close();
        soft::TearDown();
        munmap(info, sizeof(*info));
    }

    /* the target: a device, an allocation of RLEN + 2 pages filled with
     * 0x5a, an MR over [mem + PAGE, + RLEN), a read-only one, a
     * deregistered one */
    void start_target(bool fill = true)
    {
        dcx_soft_limits_t l = limits();
        size_t len          = sizeof(info->addr);
        dcx_mr_t *ro, *gone;

        ASSERT_EQ(0, t.open(fabric.c_str(), &l));
        ASSERT_TRUE(dcx_dev_caps(t.dev)->flags & DCX_CAP_SHM_PEERS);
        mem_len = RLEN + 2 * PAGE - 100; /* rounded up by the device */
        ASSERT_EQ(0, shm_alloc(&mem_len, (void **)&mem));
        ASSERT_EQ(RLEN + 2 * PAGE, mem_len);
        if (fill) {
            memset(mem, 0x5a, mem_len);
        }
        ASSERT_EQ(0, t.reg(mem + PAGE, RLEN,
                           DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE |
                               DCX_ACCESS_REMOTE_READ,
                           &tmr));
        ASSERT_EQ(0, t.reg(mem + PAGE, RLEN, DCX_ACCESS_REMOTE_READ, &ro));
        ASSERT_EQ(0,
                  dcx_mr_reg(t.pd, mem + PAGE, RLEN,
                             DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE,
                             &gone));
        info->rkey_gone = gone->rkey;
        ASSERT_EQ(0, dcx_mr_dereg(gone));
        ASSERT_EQ(0, t.make_target(0x5eedull,
                                   DCX_ACCESS_REMOTE_WRITE |
                                       DCX_ACCESS_REMOTE_READ,
                                   64));
        ASSERT_EQ(0, dcx_dev_port_addr(t.dev, info->addr, &len));
        info->addr_len = (uint32_t)len;
        info->dctn     = t.dct->qp_num;
        info->dc_key   = 0x5eedull;
        info->raddr    = (uint64_t)(uintptr_t)(mem + PAGE);
        info->rkey     = tmr->rkey;
        info->rkey_ro  = ro->rkey;
        /* peers see us alive without asking the kernel from here on */
        ASSERT_TRUE(wait_alive_lock(t.dev));
        __atomic_store_n(&info->ready, 1, __ATOMIC_RELEASE);
    }

    static bool wait_alive_lock(dcx_dev_t *dev)
    {
        double end = now_s() + 20.0;

        while (!dcx_soft_direct_alive_lock(dev)) {
            if (now_s() > end) {
                return false;
            }
            usleep(100);
        }
        return true;
    }

    /* In a spawned target child: n opened, a 1 MiB allocation registered
     * for remote writes and reads, a DC target, everything published in
     * 'in' (ready set); with alive_lock, only once peers can see it alive
     * without asking the kernel.  0, or 10 if any step failed. */
    static int child_alloc_target(dmap_info *in, const std::string &fab,
                                  node &n, bool alive_lock)
    {
        dcx_soft_limits_t l = limits();
        size_t len = 1u << 20, alen = sizeof(in->addr);
        dcx_mr_t *mr;
        void *p;

        if ((n.open(fab.c_str(), &l) != 0) || (shm_alloc(&len, &p) != 0) ||
            (n.reg(p, len,
                   DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE |
                       DCX_ACCESS_REMOTE_READ,
                   &mr) != 0) ||
            (n.make_target(0x5eedull,
                           DCX_ACCESS_REMOTE_WRITE | DCX_ACCESS_REMOTE_READ,
                           64) != 0) ||
            (dcx_dev_port_addr(n.dev, in->addr, &alen) != 0) ||
            (alive_lock && !wait_alive_lock(n.dev))) {
            return 10;
        }
        in->addr_len = (uint32_t)alen;
        in->dctn     = n.dct->qp_num;
        in->dc_key   = 0x5eedull;
        in->raddr    = (uint64_t)(uintptr_t)p;
        in->rkey     = mr->rkey;
        __atomic_store_n(&in->ready, 1, __ATOMIC_RELEASE);
        return 0;
    }

    /* fn runs in the initiator child once the target is up */
    pid_t start_initiator(std::function<int(node &)> fn,
                          std::function<bool()> before = nullptr)
    {
        dmap_info *in   = info;
        std::string fab = fabric;

        return spawn([in, fab, fn, before]() {
            if (before && !before()) {
                fprintf(stderr, "initiator setup failed\n");
                return 10;
            }
            return xfer_initiator(in, fab, limits(), fn);
        });
    }

    /* A child target with an allocation that execs /bin/sleep when told
     * (info->phase 1); returns its pid once it is ready */
    pid_t spawn_exec_target()
    {
        dmap_info *in   = info;
        std::string fab = fabric;

        pid_t tpid = spawn([in, fab]() -> int {
            node n;

            if (child_alloc_target(in, fab, n, true) != 0) {
                return 10;
            }
            if (!wait_flag(&in->phase, 1, 30.0)) {
                return 11;
            }
            execl("/bin/sleep", "sleep", "600", (char *)nullptr);
            return 12;
        });
        EXPECT_TRUE(wait_flag(&info->ready, 1, 20.0));
        return tpid;
    }

    /* n opened with a DCI to the target and lb (4 KiB) registered; one
     * RDMA WRITE of lb to the target's allocation done */
    void open_writer(node &n, local_buf &lb, const dcx_soft_limits_t &l)
    {
        ASSERT_EQ(0, n.open(fabric.c_str(), &l));
        ASSERT_EQ(0, n.make_dci());
        ASSERT_EQ(0, n.connect(info->addr, info->addr_len));
        ASSERT_EQ(0, lb.reg(n, 4096));
        dcx_sge_t s = lb.sge(0, 4096);
        ASSERT_EQ(DCX_WC_SUCCESS,
                  run_one(n, wr_to(info, n, DCX_WR_RDMA_WRITE, &s, info->raddr,
                                   info->rkey)));
    }

    /* Tells the child of spawn_exec_target to exec and waits until the new
     * program runs: its name shows (the old threads are gone by then) */
    void exec_target(pid_t tpid)
    {
        __atomic_store_n(&info->phase, 1, __ATOMIC_RELEASE);
        std::string comm_path = "/proc/" + std::to_string(tpid) + "/comm";
        double end            = now_s() + 30.0;
        std::string comm;
        while (comm != "sleep\n") {
            ASSERT_LT(now_s(), end) << "the target did not exec";
            usleep(1000);
            FILE *f      = fopen(comm_path.c_str(), "r");
            char buf[64] = "";
            if (f != nullptr) {
                if (fgets(buf, sizeof(buf), f) == nullptr) {
                    buf[0] = 0;
                }
                fclose(f);
            }
            comm = buf;
        }
    }

    /* bytes [from, to) of the allocation all equal v */
    void expect_untouched(size_t from, size_t to, uint8_t v = 0x5a)
    {
        for (size_t i = from; i < to; ++i) {
            ASSERT_EQ(v, mem[i]) << "allocation byte " << i << " written";
        }
    }

    dmap_info *info = nullptr;
    node t;
    dcx_mr_t *tmr  = nullptr;
    uint8_t *mem   = nullptr;
    size_t mem_len = 0;
};

#endif
