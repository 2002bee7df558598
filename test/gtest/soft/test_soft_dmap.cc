/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Direct RDMA WRITE and READ into a System V segment the target registered
 * (shm_alloc, as the dcx md allocates): the initiator attaches the segment
 * once (soft_dmap.c) and copies with memcpy, under the same checks and
 * in-flight markers as cross-memory attach.  This file holds the copies
 * through the mapping and what the target does under them: the accesses
 * its MRs refuse, deregistration, free and reallocation, death and exec.
 * The test process is the target unless said otherwise; a forked child is
 * the initiator, which reaches the target's segment (made after the fork)
 * only through the device.  The fixture is soft_dmap_fixture.h.
 */
#include "soft_dmap_fixture.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

/* The initiator's side of a free test up to the free: len bytes of 0x11
 * from lb written to the target's MR (in->raddr, in->rkey), phase 1
 * announced, phase 2 (the target freed) awaited; lb then holds 0x22 for
 * the write that follows.  0, or the step that failed (11 to 13). */
int write_then_await_free(node &n, dmap_info *in, local_buf &lb, size_t len)
{
    if (lb.reg(n, len) != 0) {
        return 11;
    }
    memset(lb.v.data(), 0x11, len);
    dcx_sge_t s = lb.sge(0, len);
    if (run_one(n, wr_to(in, n, DCX_WR_RDMA_WRITE, &s, in->raddr, in->rkey)) !=
        DCX_WC_SUCCESS) {
        return 12;
    }
    __atomic_store_n(&in->phase, 1, __ATOMIC_RELEASE);
    if (!wait_flag(&in->phase, 2, 30.0)) {
        return 13;
    }
    memset(lb.v.data(), 0x22, len);
    return 0;
}

/* makes poll fail with err in this process, or, err 0, report "no event"
 * without asking the kernel: the initiator's pidfd look then says the
 * target lives (err 0) or is gone (an error) whatever it is */
bool fake_poll(int err)
{
#ifdef __NR_poll
    return refuse_syscalls({__NR_poll, __NR_ppoll}, err);
#else
    return refuse_syscalls({__NR_ppoll}, err);
#endif
}

} // namespace

/* Writes and reads of 1 B .. 4 MiB into the allocation while the target
 * only waits: every byte lands where it should and nowhere else, every
 * one was a copy through one mapping, and the target saw no packet. */
TEST_F(soft_dmap, write_read_mapped)
{
    static const size_t sizes[] = {
        1, 7, 64, 4095, 4096, 65537, (1u << 20) + 3, 4u << 20};
    const unsigned nsizes = sizeof(sizes) / sizeof(sizes[0]);
    dmap_info *in         = info;

    start_initiator([in, nsizes](node &n) -> int {
        local_buf lb;
        uint64_t off = 0;

        if (lb.reg(n, 4u << 20) != 0) {
            return 11;
        }
        for (unsigned k = 0; k < nsizes; ++k) {
            size_t sz = sizes[k];

            for (size_t i = 0; i < sz; ++i) {
                lb.v[i] = pattern(i, k);
            }
            dcx_sge_t s = lb.sge(0, sz);
            if (run_one(n, wr_to(in, n, DCX_WR_RDMA_WRITE, &s, in->raddr + off,
                                 in->rkey)) != DCX_WC_SUCCESS) {
                return 12;
            }
            memset(lb.v.data(), 0, sz);
            if (run_one(n, wr_to(in, n, DCX_WR_RDMA_READ, &s, in->raddr + off,
                                 in->rkey)) != DCX_WC_SUCCESS) {
                return 13;
            }
            for (size_t i = 0; i < sz; ++i) {
                if (lb.v[i] != pattern(i, k)) {
                    fprintf(stderr, "size %zu: byte %zu read back wrong\n", sz,
                            i);
                    return 14;
                }
            }
            off += sz + 3;
        }
        return 0;
    });
    start_target();
    ASSERT_TRUE(wait_flag(&info->done, 1, 60.0));
    ASSERT_TRUE(stop_children());

    size_t off = PAGE;
    expect_untouched(0, PAGE);
    for (unsigned k = 0; k < nsizes; ++k) {
        for (size_t i = 0; i < sizes[k]; ++i) {
            ASSERT_EQ(pattern(i, k), mem[off + i])
                << "size " << sizes[k] << " byte " << i;
        }
        expect_untouched(off + sizes[k], off + sizes[k] + 3);
        off += sizes[k] + 3;
    }
    expect_untouched(off, mem_len);

    dcx_soft_stats_t ts;
    ASSERT_EQ(0, dcx_soft_stats(t.dev, &ts));
    EXPECT_EQ(nsizes, info->stats.direct_writes);
    EXPECT_EQ(nsizes, info->stats.direct_reads);
    EXPECT_EQ(2u * nsizes, info->stats.direct_mapped);
    EXPECT_EQ(1u, info->stats.direct_maps);
    EXPECT_EQ(0u, info->stats.tx_packets);
    EXPECT_EQ(0u, ts.rx_packets);
}

/* Accesses the target's MR entry refuses, although the mapping covers the
 * whole allocation: a bad rkey, beyond the MR (into the allocation's guard
 * page), a read-only key, a deregistered key.  Each one gets
 * REM_ACCESS_ERR from the target's responder and writes nothing. */
TEST_F(soft_dmap, refused_accesses_bad_flow)
{
    dmap_info *in = info;

    start_initiator([in](node &n) -> int {
        local_buf lb;
        struct {
            const char *what;
            dcx_wr_opcode_t op;
            uint32_t rkey;
            uint64_t off;
            uint32_t len;
        } cases[] = {
            {"bad rkey", DCX_WR_RDMA_WRITE, in->rkey ^ 0x100u, 4096, 4096},
            {"bad rkey read", DCX_WR_RDMA_READ, in->rkey ^ 0x100u, 4096, 4096},
            {"beyond the MR", DCX_WR_RDMA_WRITE, in->rkey, RLEN - 8, 16},
            {"after the MR", DCX_WR_RDMA_WRITE, in->rkey, RLEN, 8},
            {"before the MR", DCX_WR_RDMA_WRITE, in->rkey, (uint64_t)-8, 16},
            {"beyond the MR read", DCX_WR_RDMA_READ, in->rkey, RLEN - 8, 16},
            {"read-only key", DCX_WR_RDMA_WRITE, in->rkey_ro, 4096, 4096},
            {"deregistered key", DCX_WR_RDMA_WRITE, in->rkey_gone, 4096, 4096},
        };
        int rc = 0;

        if (lb.reg(n, 8192) != 0) {
            return 11;
        }
        /* a good write first: the allocation is mapped from here on */
        memset(lb.v.data(), 0xc3, lb.v.size());
        dcx_sge_t s0 = lb.sge(0, 64);
        if (run_one(n, wr_to(in, n, DCX_WR_RDMA_WRITE, &s0, in->raddr,
                             in->rkey)) != DCX_WC_SUCCESS) {
            return 12;
        }
        for (auto &c : cases) {
            dcx_sge_t s = lb.sge(0, c.len);
            int st      = run_one(n,
                                  wr_to(in, n, c.op, &s, in->raddr + c.off, c.rkey));
            if (st != DCX_WC_REM_ACCESS_ERR) {
                fprintf(stderr, "%s: status %d\n", c.what, st);
                rc = 13;
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
    start_target();
    ASSERT_TRUE(wait_flag(&info->done, 1, 120.0));
    ASSERT_TRUE(stop_children());
    expect_untouched(0, PAGE);
    for (size_t i = PAGE; i < PAGE + 64; ++i) {
        ASSERT_EQ(0xc3, mem[i]);
    }
    expect_untouched(PAGE + 64, mem_len);
    EXPECT_EQ(1u, info->stats.direct_mapped);
    EXPECT_EQ(1u, info->stats.direct_maps);
}

/* The MR is deregistered while the initiator writes into it through its
 * mapping: once mr_dereg returns nothing more is written, and the writer
 * gets REM_ACCESS_ERR. */
TEST_F(soft_dmap, dereg_races_mapped_write)
{
    for (int round = 0; round < 5; ++round) {
        dmap_info *in = info;

        memset(info, 0, sizeof(*info));
        start_initiator([in](node &n) -> int {
            return write_until_error(n, RLEN,
                                     wr_to(in, n, DCX_WR_RDMA_WRITE, nullptr,
                                           in->raddr, in->rkey),
                                     &in->progress, &in->status);
        });
        start_target(false);
        ASSERT_TRUE(wait_at_least(&info->progress, 2, 60.0));
        ASSERT_EQ(0, dcx_mr_dereg(tmr));
        t.mrs.erase(t.mrs.begin());
        memset(mem, 0, mem_len);
        ASSERT_TRUE(wait_flag(&info->done, 1, 60.0));
        expect_untouched(0, mem_len, 0);
        EXPECT_EQ((uint32_t)DCX_WC_REM_ACCESS_ERR, info->status);
        EXPECT_GT(info->stats.direct_mapped, 1u) << "round " << round;
        EXPECT_TRUE(stop_children());
        children.clear();
        for (dcx_mr_t *mr : t.mrs) {
            dcx_mr_dereg(mr);
        }
        t.mrs.clear();
        ASSERT_EQ(0, shm_free(t.dev, mem, mem_len));
        mem = nullptr;
        t.close();
        __atomic_store_n(&sh->stop, 0, __ATOMIC_RELEASE);
    }
}

/* The target frees its allocation and allocates again (typically at the
 * same address, with the same fd number): a write with the old rkey is
 * refused, and one with the new rkey lands in the new memory through a new
 * mapping, never through the stale one. */
TEST_F(soft_dmap, free_then_realloc_bad_flow)
{
    dmap_info *in = info;

    start_initiator([in](node &n) -> int {
        local_buf lb;
        int ret = write_then_await_free(n, in, lb, 65536);

        if (ret != 0) {
            return ret;
        }
        /* old key, old address: refused */
        dcx_sge_t s = lb.sge(0, 65536);
        if (run_one(n, wr_to(in, n, DCX_WR_RDMA_WRITE, &s, in->raddr,
                             in->rkey)) != DCX_WC_REM_ACCESS_ERR) {
            return 14;
        }
        if (renew_dci(n) != 0) {
            return 15;
        }
        /* the new key */
        memset(lb.v.data(), 0x33, 65536);
        if (run_one(n, wr_to(in, n, DCX_WR_RDMA_WRITE, &s, in->raddr2,
                             in->rkey2)) != DCX_WC_SUCCESS) {
            return 16;
        }
        return 0;
    });
    start_target();
    ASSERT_TRUE(wait_flag(&info->phase, 1, 30.0));
    for (size_t i = PAGE; i < PAGE + 65536; ++i) {
        ASSERT_EQ(0x11, mem[i]);
    }

    /* free it all and allocate the same size again */
    uint8_t *old = mem;
    for (dcx_mr_t *mr : t.mrs) {
        ASSERT_EQ(0, dcx_mr_dereg(mr));
    }
    t.mrs.clear();
    ASSERT_EQ(0, shm_free(t.dev, mem, mem_len));
    mem = nullptr;
    ASSERT_EQ(0, shm_alloc(&mem_len, (void **)&mem));
    memset(mem, 0x5a, mem_len);
    ASSERT_EQ(0, t.reg(mem + PAGE, RLEN,
                       DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE, &tmr));
    if (mem != old) {
        printf("[   NOTE   ] the new allocation is at another address\n");
    }
    info->raddr2 = (uint64_t)(uintptr_t)(mem + PAGE);
    info->rkey2  = tmr->rkey;
    __atomic_store_n(&info->phase, 2, __ATOMIC_RELEASE);

    ASSERT_TRUE(wait_flag(&info->done, 1, 60.0));
    ASSERT_TRUE(stop_children());
    expect_untouched(0, PAGE);
    for (size_t i = PAGE; i < PAGE + 65536; ++i) {
        ASSERT_EQ(0x33, mem[i]) << "byte " << i;
    }
    expect_untouched(PAGE + 65536, mem_len);
    EXPECT_EQ(2u, info->stats.direct_mapped);
    EXPECT_EQ(2u, info->stats.direct_maps);
}

/* Roles reversed: a child allocates and is the target, the test process
 * writes into its allocation through a mapping; once the child is dead,
 * a write fails as to any dead peer (RETRY_EXC_ERR) instead of landing in
 * the orphaned pages, and the mapping is gone. */
TEST_F(soft_dmap, dead_target_mapping_dropped)
{
    dmap_info *in   = info;
    std::string fab = fabric;

    pid_t pid = spawn([in, fab]() -> int {
        node n;

        if (child_alloc_target(in, fab, n, false) != 0) {
            return 10;
        }
        for (;;) {
            pause(); /* killed by the test */
        }
    });
    ASSERT_TRUE(wait_flag(&info->ready, 1, 20.0));

    dcx_soft_limits_t l = limits();
    node n;
    local_buf lb;
    ASSERT_EQ(0, n.open(fabric.c_str(), &l));
    ASSERT_EQ(0, n.make_dci());
    ASSERT_EQ(0, n.connect(info->addr, info->addr_len));
    ASSERT_EQ(0, lb.reg(n, 65536));
    dcx_sge_t s = lb.sge(0, 65536);
    ASSERT_EQ(DCX_WC_SUCCESS, run_one(n, wr_to(info, n, DCX_WR_RDMA_WRITE, &s,
                                               info->raddr, info->rkey)));
    EXPECT_EQ(1u, dcx_soft_direct_mappings(n.dev));

    kill_child(pid);
    int wst;
    ASSERT_EQ(pid, waitpid(pid, &wst, 0)); /* dead, not dying */
    EXPECT_EQ(DCX_WC_RETRY_EXC_ERR,
              run_one(n, wr_to(info, n, DCX_WR_RDMA_WRITE, &s, info->raddr,
                               info->rkey)));
    EXPECT_EQ(0u, dcx_soft_direct_mappings(n.dev));
    dcx_soft_stats_t st;
    ASSERT_EQ(0, dcx_soft_stats(n.dev, &st));
    EXPECT_EQ(1u, st.direct_mapped);
    n.close();
    stop_children();
}

/* Copies into a live target's allocation ask the kernel nothing about its
 * liveness: with poll() failing in the initiator (which made every one of
 * them look dead before, so they went by cross-memory attach), 8-byte
 * writes and reads are each a plain copy through the one mapping. */
TEST_F(soft_dmap, mapped_copies_ask_kernel_nothing)
{
    const unsigned n = 200;
    dmap_info *in    = info;

    start_initiator(
        [in, n](node &nd) -> int {
            local_buf lb;

            if (lb.reg(nd, 16) != 0) {
                return 11;
            }
            for (unsigned k = 0; k < n; ++k) {
                for (unsigned i = 0; i < 8; ++i) {
                    lb.v[i] = pattern(i, k);
                }
                dcx_sge_t s = lb.sge(0, 8);
                if (run_one(nd, wr_to(in, nd, DCX_WR_RDMA_WRITE, &s,
                                      in->raddr + 8 * k, in->rkey)) !=
                    DCX_WC_SUCCESS) {
                    return 12;
                }
                memset(lb.v.data(), 0, 8);
                if ((run_one(nd, wr_to(in, nd, DCX_WR_RDMA_READ, &s,
                                       in->raddr + 8 * k, in->rkey)) !=
                     DCX_WC_SUCCESS) ||
                    (lb.v[7] != pattern(7, k))) {
                    return 13;
                }
            }
            return 0;
        },
        []() { return fake_poll(EPERM); });
    start_target();
    ASSERT_TRUE(wait_flag(&info->done, 1, 60.0));
    ASSERT_TRUE(stop_children());
    expect_untouched(0, PAGE);
    for (unsigned k = 0; k < n; ++k) {
        for (unsigned i = 0; i < 8; ++i) {
            ASSERT_EQ(pattern(i, k), mem[PAGE + 8 * k + i]) << "write " << k;
        }
    }
    expect_untouched(PAGE + 8 * n, mem_len);
    EXPECT_EQ(n, info->stats.direct_writes);
    EXPECT_EQ(n, info->stats.direct_reads);
    EXPECT_EQ(2u * n, info->stats.direct_mapped);
    EXPECT_EQ(1u, info->stats.direct_maps);
    EXPECT_EQ(0u, info->stats.tx_packets);
}

/* The target dies while the initiator holds a mapping of its allocation,
 * and the initiator's kernel look at it says "alive" (poll() faked): the
 * liveness lock the kernel marked as the target died is enough, and the
 * next write fails as to any dead peer (RETRY_EXC_ERR) instead of landing
 * in the orphaned pages. */
TEST_F(soft_dmap, dead_target_known_by_its_lock_bad_flow)
{
    dmap_info *in   = info;
    std::string fab = fabric;

    pid_t tpid = spawn([in, fab]() -> int {
        node n;

        if (child_alloc_target(in, fab, n, true) != 0) {
            return 10;
        }
        for (;;) {
            pause(); /* killed by the test */
        }
    });
    start_initiator(
        [in](node &n) -> int {
            local_buf lb;

            if (lb.reg(n, 4096) != 0) {
                return 11;
            }
            dcx_sge_t s = lb.sge(0, 4096);
            if (run_one(n, wr_to(in, n, DCX_WR_RDMA_WRITE, &s, in->raddr,
                                 in->rkey)) != DCX_WC_SUCCESS) {
                return 12;
            }
            if (dcx_soft_direct_mappings(n.dev) != 1) {
                return 13;
            }
            __atomic_store_n(&in->phase, 1, __ATOMIC_RELEASE);
            if (!wait_flag(&in->phase, 2, 30.0)) {
                return 14;
            }
            int st = run_one(n, wr_to(in, n, DCX_WR_RDMA_WRITE, &s, in->raddr,
                                      in->rkey));
            in->status = (uint32_t)st;
            return (dcx_soft_direct_mappings(n.dev) == 0) ? 0 : 15;
        },
        []() { return fake_poll(0); });
    ASSERT_TRUE(wait_flag(&info->phase, 1, 30.0));
    kill_child(tpid);
    int wst;
    ASSERT_EQ(tpid, waitpid(tpid, &wst, 0)); /* dead, not dying */
    __atomic_store_n(&info->phase, 2, __ATOMIC_RELEASE);
    ASSERT_TRUE(wait_flag(&info->done, 1, 60.0));
    EXPECT_EQ((uint32_t)DCX_WC_RETRY_EXC_ERR, info->status);
    EXPECT_EQ(1u, info->stats.direct_mapped);
    EXPECT_TRUE(stop_children());
}

/* The target execs another program: its pid lives on, with other memory
 * at the addresses it registered.  The kernel marked its liveness lock as
 * its helper thread went, so nothing more is copied into it by any means
 * (not through the old mapping, not by cross-memory attach); the write
 * goes on the wire and fails (exec_target_fails_requests_bad_flow). */
TEST_F(soft_dmap, exec_target_gets_no_copy_bad_flow)
{
    pid_t tpid = spawn_exec_target();
    ASSERT_FALSE(HasFailure());

    dcx_soft_limits_t l = limits();
    node n;
    local_buf lb;
    ASSERT_NO_FATAL_FAILURE(open_writer(n, lb, l));
    dcx_sge_t s = lb.sge(0, 4096);
    EXPECT_EQ(1u, dcx_soft_direct_mappings(n.dev));

    ASSERT_NO_FATAL_FAILURE(exec_target(tpid));

    dcx_send_wr_t w = wr_to(info, n, DCX_WR_RDMA_WRITE, &s, info->raddr,
                            info->rkey);
    ASSERT_EQ(0, dcx_qp_post_send(n.dci, &w));
    EXPECT_EQ(0u, dcx_soft_direct_mappings(n.dev));
    dcx_soft_stats_t st;
    ASSERT_EQ(0, dcx_soft_stats(n.dev, &st));
    EXPECT_EQ(1u, st.direct_writes) << "copied into the exec'd process";
    EXPECT_EQ(1u, st.direct_mapped);

    kill_child(tpid);
    int wst;
    ASSERT_EQ(tpid, waitpid(tpid, &wst, 0));
    dcx_wc_t wc;
    ASSERT_EQ(1, n.poll(&wc, 1, 30.0));
    EXPECT_EQ(DCX_WC_RETRY_EXC_ERR, wc.status);
    n.close();
}

/* A requester whose target exec'd: the pid lives on in a program that
 * never serves the port again, and the target's liveness lock (marked by
 * the kernel as its helper thread went) says so.  A send and a write to
 * it fail at their ack timeouts, while that program still runs, instead
 * of waiting as for a live target that is busy until the program exits. */
TEST_F(soft_dmap, exec_target_fails_requests_bad_flow)
{
    pid_t tpid = spawn_exec_target();
    ASSERT_FALSE(HasFailure());

    dcx_soft_limits_t l = limits();
    node n;
    local_buf lb;
    ASSERT_NO_FATAL_FAILURE(open_writer(n, lb, l));
    dcx_sge_t s = lb.sge(0, 4096);
    ASSERT_NO_FATAL_FAILURE(exec_target(tpid));

    const dcx_wr_opcode_t ops[] = {DCX_WR_SEND, DCX_WR_RDMA_WRITE};
    for (dcx_wr_opcode_t op : ops) {
        dcx_send_wr_t w = wr_to(info, n, op, &s, info->raddr,
                                (op == DCX_WR_SEND) ? 0 : info->rkey);
        dcx_wc_t wc;
        ASSERT_EQ(0, dcx_qp_post_send(n.dci, &w));
        ASSERT_EQ(1, n.poll(&wc, 1, 20.0))
            << "op " << op << ": no completion while the exec'd program runs";
        EXPECT_EQ(DCX_WC_RETRY_EXC_ERR, wc.status);
        ASSERT_EQ(0, kill(tpid, 0)) << "the exec'd program is still there";
        ASSERT_EQ(0, dcx_qp_recover(n.dci));
    }
    kill_child(tpid);
    int wst;
    ASSERT_EQ(tpid, waitpid(tpid, &wst, 0));
    n.close();
}

/* The id of the SysV segment mapped at p in this process (the inode of its
 * /proc/self/maps line), or -1 */
static int shmid_at(const void *p)
{
    unsigned long lo, hi, off, ino, a = (unsigned long)(uintptr_t)p;
    unsigned maj, mnr;
    char line[512], perms[8];
    int id = -1, n = 0;
    FILE *f = fopen("/proc/self/maps", "r");

    if (f == nullptr) {
        return -1;
    }
    while ((id < 0) && (fgets(line, sizeof(line), f) != nullptr)) {
        if ((sscanf(line, "%lx-%lx %7s %lx %x:%x %lu%n", &lo, &hi, perms, &off,
                    &maj, &mnr, &ino, &n) == 7) &&
            (lo <= a) && (a < hi) && (strstr(line + n, "/SYSV") != nullptr)) {
            id = (int)ino;
        }
    }
    fclose(f);
    return id;
}

/* The target frees its segment while MRs inside are still registered
 * (dcx_dev_mem_unmapped, then shmdt, as the md's mem_free): a write
 * through the attachment the initiator made before is refused with
 * REM_ACCESS_ERR, and nothing is written into the segment (which the
 * target's device keeps while the MRs are registered). */
TEST_F(soft_dmap, freed_segment_refuses_bad_flow)
{
    dmap_info *in = info;

    start_initiator([in](node &n) -> int {
        local_buf lb;
        int ret = write_then_await_free(n, in, lb, 4096);

        if (ret != 0) {
            return ret;
        }
        dcx_sge_t s = lb.sge(0, 4096);
        in->status  = run_one(n, wr_to(in, n, DCX_WR_RDMA_WRITE, &s,
                                       in->raddr + 4096, in->rkey));
        return 0;
    });
    start_target();
    ASSERT_TRUE(wait_flag(&info->phase, 1, 30.0));
    int id = shmid_at(mem);
    ASSERT_GE(id, 0) << "the allocation is no SysV attachment";

    ASSERT_EQ(0, shm_free(t.dev, mem, mem_len));
    mem = nullptr; /* the MRs stay registered until TearDown */
    __atomic_store_n(&info->phase, 2, __ATOMIC_RELEASE);
    ASSERT_TRUE(wait_flag(&info->done, 1, 60.0));
    ASSERT_TRUE(stop_children());
    EXPECT_EQ((uint32_t)DCX_WC_REM_ACCESS_ERR, info->status);
    EXPECT_EQ(1u, info->stats.direct_mapped);

    /* the segment, attached again by its id: only the first write is in */
    const uint8_t *seg = (const uint8_t *)shmat(id, nullptr, SHM_RDONLY);
    ASSERT_NE((const uint8_t *)-1, seg) << strerror(errno);
    for (size_t i = 0; i < RLEN + 2 * PAGE; ++i) {
        bool first = (i >= PAGE) && (i < 2 * PAGE);
        ASSERT_EQ(first ? 0x11 : 0x5a, seg[i]) << "segment byte " << i;
    }
    shmdt(seg);
}
