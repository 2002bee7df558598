/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Direct RDMA WRITE and READ into a System V segment the target registered
 * (shm_alloc), on the initiator's side: its cache of mappings (eviction of
 * the least recently used, one attachment per segment in a process, one
 * mapping per allocation) and its fallbacks to packets (a fault rule) and
 * to cross-memory attach (mapping refused).  The fixture is
 * soft_dmap_fixture.h.
 */
#include "soft_dmap_fixture.h"

#include <algorithm>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <vector>

namespace {

/* makes pidfd_open fail with ENOSYS in this process (an older kernel or a
 * sandbox): allocations cannot be mapped */
bool refuse_pidfd()
{
#ifdef __NR_pidfd_open
    return refuse_syscalls({__NR_pidfd_open}, ENOSYS);
#else
    return refuse_syscalls({434}, ENOSYS);
#endif
}

/* how many mappings of SysV segments ("/SYSV...") this process has */
unsigned alloc_mappings()
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    unsigned n = 0;

    if (f == nullptr) {
        return 0;
    }
    while (fgets(line, sizeof(line), f) != nullptr) {
        n += (strstr(line, " /SYSV") != nullptr);
    }
    fclose(f);
    return n;
}

} // namespace

/* The eviction cases: a write to the first target (granted, through the
 * cache's entry for its allocation), then one to each of sixteen
 * allocations of a second target, the last of which takes the least
 * recently used entry, then a write to the first target again under the
 * same key.  With 'touch', the first target is written once more before
 * the last allocation (its entry the most recently used then, the second
 * target's first allocation the one evicted). */
class soft_dmap_evict : public soft_dmap {
protected:
    void run(bool touch);
};

void soft_dmap_evict::run(bool touch)
{
    const unsigned nalloc = 16; /* the initiator's cache holds as many */
    const size_t alen     = 64u * 1024u;
    struct second {
        uint8_t addr[DCX_DEV_ADDR_MAX];
        uint32_t addr_len;
        uint32_t dctn;
        uint64_t raddr[16];
        uint32_t rkey[16];
    } *t2i = (second *)mmap(nullptr, sizeof(second), PROT_READ | PROT_WRITE,
                            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, (void *)t2i);
    dmap_info *in = info;
    std::vector<uint8_t *> a2(nalloc);
    node t2;

    start_initiator([in, t2i, nalloc, touch](node &n) -> int {
        local_buf lb;
        dcx_ah_t *ah2 = nullptr;
        int rc        = 0;

        if ((lb.reg(n, 64) != 0) ||
            (dcx_ah_create(n.pd, t2i->addr, t2i->addr_len, &ah2) != 0)) {
            return 11;
        }
        memset(lb.v.data(), 0x11, 64);
        dcx_sge_t s = lb.sge(0, 8);
        for (uint64_t off : {0, 64}) { /* the grant made, then taken */
            if (run_one(n, wr_to(in, n, DCX_WR_RDMA_WRITE, &s, in->raddr + off,
                                 in->rkey)) != DCX_WC_SUCCESS) {
                rc = 12;
            }
        }
        for (unsigned k = 0; k < nalloc; ++k) {
            if (touch && (k == nalloc - 1) &&
                (run_one(n, wr_to(in, n, DCX_WR_RDMA_WRITE, &s, in->raddr + 192,
                                  in->rkey)) != DCX_WC_SUCCESS)) {
                rc = 15;
            }
            dcx_send_wr_t wr = rdma_wr(n, t2i->dctn, 0x5eedull,
                                       DCX_WR_RDMA_WRITE, &s, t2i->raddr[k],
                                       t2i->rkey[k]);
            wr.dest.ah       = ah2;
            if (run_one(n, wr) != DCX_WC_SUCCESS) {
                rc = 13;
            }
        }
        if (run_one(n, wr_to(in, n, DCX_WR_RDMA_WRITE, &s, in->raddr + 128,
                             in->rkey)) != DCX_WC_SUCCESS) {
            rc = 14;
        }
        dcx_ah_destroy(ah2);
        return rc;
    });
    dcx_soft_limits_t l = limits();
    size_t len          = sizeof(t2i->addr);
    ASSERT_EQ(0, t2.open(fabric.c_str(), &l));
    for (unsigned k = 0; k < nalloc; ++k) {
        size_t sz = alen;
        dcx_mr_t *mr;
        ASSERT_EQ(0, shm_alloc(&sz, (void **)&a2[k]));
        memset(a2[k], 0x5a, alen);
        ASSERT_EQ(0, t2.reg(a2[k], alen,
                            DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE,
                            &mr));
        t2i->raddr[k] = (uint64_t)(uintptr_t)a2[k];
        t2i->rkey[k]  = mr->rkey;
    }
    ASSERT_EQ(0, t2.make_target(0x5eedull, DCX_ACCESS_REMOTE_WRITE, 64));
    ASSERT_EQ(0, dcx_dev_port_addr(t2.dev, t2i->addr, &len));
    t2i->addr_len = (uint32_t)len;
    t2i->dctn     = t2.dct->qp_num;
    ASSERT_TRUE(wait_alive_lock(t2.dev));
    start_target();
    ASSERT_TRUE(wait_flag(&info->done, 1, 60.0));
    ASSERT_TRUE(stop_children());
    for (size_t i = 0; i < mem_len; ++i) {
        size_t off   = i - PAGE;
        bool written = (i >= PAGE) && (off < (touch ? 4 : 3) * 64) &&
                       (off % 64 < 8);
        ASSERT_EQ(written ? 0x11 : 0x5a, mem[i]) << "first target byte " << i;
    }
    for (unsigned k = 0; k < nalloc; ++k) {
        for (size_t i = 0; i < alen; ++i) {
            ASSERT_EQ((i < 8) ? 0x11 : 0x5a, a2[k][i])
                << "second target allocation " << k << " byte " << i;
        }
    }
    /* the first target's allocation mapped twice, before and after its
     * eviction; with 'touch', once: its entry was not the one evicted */
    EXPECT_EQ(nalloc + (touch ? 1 : 2), info->stats.direct_maps);
    for (dcx_mr_t *mr : t2.mrs) {
        dcx_mr_dereg(mr);
    }
    t2.mrs.clear();
    for (unsigned k = 0; k < nalloc; ++k) {
        EXPECT_EQ(0, shm_free(t2.dev, a2[k], alen));
    }
    t2.close();
    munmap(t2i, sizeof(*t2i));
}

/* A mapping the initiator's cache evicts is not copied through again by
 * the grant that used it: the last write lands in the first target's
 * allocation, mapped anew, and not in the second target's allocation that
 * now holds the entry. */
TEST_F(soft_dmap_evict, evicted_mapping_drops_its_grant_bad_flow)
{
    run(false);
}

/* The cache evicts the least recently used mapping: the first target's,
 * written again just before the last allocation, stays mapped (a run of
 * copies to the entry used last stores no new stamp, and the first stamps
 * must still order the entries). */
TEST_F(soft_dmap_evict, recently_used_mapping_stays)
{
    run(true);
}

/* Two devices of one process (two interfaces, two workers): an RDMA WRITE
 * and READ between them copy through one attachment of the segment that
 * the initiator makes (the application may detach its own at any time),
 * and through no other. */
TEST_F(soft_dmap, same_process_copies_through_one_attachment)
{
    dcx_soft_limits_t l = limits();
    node ini;
    local_buf lb;

    ASSERT_NO_FATAL_FAILURE(start_target());
    unsigned before = alloc_mappings();
    EXPECT_GE(before, 1u);
    ASSERT_EQ(0, ini.open(fabric.c_str(), &l));
    ASSERT_EQ(0, ini.make_dci());
    ASSERT_EQ(0, ini.connect(info->addr, info->addr_len));
    ASSERT_EQ(0, lb.reg(ini, 4096));
    for (unsigned k = 0; k < 4; ++k) {
        for (size_t i = 0; i < 4096; ++i) {
            lb.v[i] = pattern(i, k);
        }
        dcx_sge_t s = lb.sge(0, 4096);
        ASSERT_EQ(DCX_WC_SUCCESS,
                  run_one(ini, wr_to(info, ini, DCX_WR_RDMA_WRITE, &s,
                                     info->raddr + 4096 * k, info->rkey)));
        memset(lb.v.data(), 0, 4096);
        ASSERT_EQ(DCX_WC_SUCCESS,
                  run_one(ini, wr_to(info, ini, DCX_WR_RDMA_READ, &s,
                                     info->raddr + 4096 * k, info->rkey)));
        for (size_t i = 0; i < 4096; ++i) {
            ASSERT_EQ(pattern(i, k), lb.v[i]) << "read " << k;
            ASSERT_EQ(pattern(i, k), mem[PAGE + 4096 * k + i]) << "write " << k;
        }
    }
    expect_untouched(0, PAGE);
    expect_untouched(PAGE + 4 * 4096, mem_len);
    EXPECT_EQ(1u, dcx_soft_direct_mappings(ini.dev));
    EXPECT_EQ(before + 1, alloc_mappings())
        << "not one attachment of the segment for the copies";
    dcx_soft_stats_t st;
    ASSERT_EQ(0, dcx_soft_stats(ini.dev, &st));
    EXPECT_EQ(8u, st.direct_mapped);
    EXPECT_EQ(0u, st.tx_packets);
    ini.close();
}

/* Writes alternating between two allocations of the target, each under
 * its own key, then a third key over the first one: every write lands in
 * its own allocation through its own mapping (the mapping used last is
 * only taken again for the key it was found for). */
TEST_F(soft_dmap, alternating_allocations_each_their_mapping)
{
    dmap_info *in = info;
    uint8_t *mem2 = nullptr;
    size_t len2   = 1u << 20;
    dcx_mr_t *mr2, *mr3;

    start_initiator([in](node &n) -> int {
        local_buf lb;

        if (!wait_flag(&in->phase, 1, 30.0) || (lb.reg(n, 256) != 0)) {
            return 11;
        }
        for (unsigned k = 0; k < 64; ++k) {
            for (unsigned i = 0; i < 256; ++i) {
                lb.v[i] = pattern(i, k);
            }
            dcx_sge_t s    = lb.sge(0, 256);
            uint32_t rkey  = (k % 3 == 0) ? in->rkey :
                             (k % 3 == 1) ? in->rkey2 :
                                            in->rkey_ro;
            uint64_t raddr = ((k % 3 == 1) ? in->raddr2 : in->raddr) + 256 * k;
            if (run_one(n, wr_to(in, n, DCX_WR_RDMA_WRITE, &s, raddr, rkey)) !=
                DCX_WC_SUCCESS) {
                return 12;
            }
        }
        return 0;
    });
    start_target();
    ASSERT_EQ(0, shm_alloc(&len2, (void **)&mem2));
    memset(mem2, 0x5a, len2);
    ASSERT_EQ(0, t.reg(mem2, len2,
                       DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE, &mr2));
    /* a second writable key over the first allocation (in rkey_ro's
     * place: the initiator takes it from there) */
    ASSERT_EQ(0, t.reg(mem + PAGE, RLEN,
                       DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE, &mr3));
    info->rkey2   = mr2->rkey;
    info->raddr2  = (uint64_t)(uintptr_t)mem2;
    info->rkey_ro = mr3->rkey;
    __atomic_store_n(&info->phase, 1, __ATOMIC_RELEASE);
    ASSERT_TRUE(wait_flag(&info->done, 1, 60.0));
    ASSERT_TRUE(stop_children());
    for (unsigned k = 0; k < 64; ++k) {
        const uint8_t *p = ((k % 3 == 1) ? mem2 : mem + PAGE) + 256 * k;
        const uint8_t *q = ((k % 3 == 1) ? mem + PAGE : mem2) + 256 * k;
        for (unsigned i = 0; i < 256; ++i) {
            ASSERT_EQ(pattern(i, k), p[i]) << "write " << k << " byte " << i;
            ASSERT_EQ(0x5a, q[i]) << "write " << k << " in the wrong place";
        }
    }
    EXPECT_EQ(64u, info->stats.direct_mapped);
    EXPECT_EQ(2u, info->stats.direct_maps);
    for (dcx_mr_t *mr : {mr2, mr3}) {
        EXPECT_EQ(0, dcx_mr_dereg(mr));
        t.mrs.erase(std::find(t.mrs.begin(), t.mrs.end(), mr));
    }
    EXPECT_EQ(0, shm_free(t.dev, mem2, len2));
}

/* With a fault rule set on the initiator every operation goes by packets
 * (the rule must see them), into the allocation all the same. */
TEST_F(soft_dmap, fault_rule_falls_back)
{
    dmap_info *in = info;

    start_initiator([in](node &n) -> int {
        dcx_soft_fault_t f;
        local_buf lb;

        memset(&f, 0, sizeof(f));
        f.type     = DCX_SOFT_FAULT_DELAY;
        f.opcode   = -1;
        f.delay_us = 1;
        if ((dcx_soft_fault_inject(n.dev, &f) != 0) ||
            (lb.reg(n, 100000) != 0)) {
            return 11;
        }
        for (size_t i = 0; i < 100000; ++i) {
            lb.v[i] = pattern(i, 5);
        }
        dcx_sge_t s = lb.sge(0, 100000);
        if (run_one(n, wr_to(in, n, DCX_WR_RDMA_WRITE, &s, in->raddr + 5,
                             in->rkey)) != DCX_WC_SUCCESS) {
            return 12;
        }
        memset(lb.v.data(), 0, 100000);
        if (run_one(n, wr_to(in, n, DCX_WR_RDMA_READ, &s, in->raddr + 5,
                             in->rkey)) != DCX_WC_SUCCESS) {
            return 13;
        }
        for (size_t i = 0; i < 100000; ++i) {
            if (lb.v[i] != pattern(i, 5)) {
                return 14;
            }
        }
        return 0;
    });
    start_target();
    /* the target must serve the packets */
    double end = now_s() + 60.0;
    while (!__atomic_load_n(&info->done, __ATOMIC_ACQUIRE) && (now_s() < end)) {
        dcx_dev_progress(t.dev);
    }
    ASSERT_TRUE(stop_children());
    for (size_t i = 0; i < 100000; ++i) {
        ASSERT_EQ(pattern(i, 5), mem[PAGE + 5 + i]) << "byte " << i;
    }
    expect_untouched(0, PAGE + 5);
    expect_untouched(PAGE + 5 + 100000, mem_len);
    EXPECT_EQ(0u, info->stats.direct_writes);
    EXPECT_EQ(0u, info->stats.direct_mapped);
    EXPECT_EQ(0u, info->stats.direct_maps);
    EXPECT_GT(info->stats.tx_packets, 0u);
}

/* The initiator cannot map (pidfd_open refused): it says so once and
 * copies by cross-memory attach, still without the target's CPU. */
TEST_F(soft_dmap, mapping_refused_falls_back)
{
    dmap_info *in = info;

    start_initiator(
        [in](node &n) -> int {
            local_buf lb;

            if (lb.reg(n, 100000) != 0) {
                return 11;
            }
            for (int k = 0; k < 3; ++k) {
                for (size_t i = 0; i < 100000; ++i) {
                    lb.v[i] = pattern(i, 9 + k);
                }
                dcx_sge_t s = lb.sge(0, 100000);
                if (run_one(n, wr_to(in, n, DCX_WR_RDMA_WRITE, &s,
                                     in->raddr + k * 100000, in->rkey)) !=
                    DCX_WC_SUCCESS) {
                    return 12;
                }
            }
            return 0;
        },
        refuse_pidfd);
    start_target();
    ASSERT_TRUE(wait_flag(&info->done, 1, 60.0));
    ASSERT_TRUE(stop_children());
    for (int k = 0; k < 3; ++k) {
        for (size_t i = 0; i < 100000; ++i) {
            ASSERT_EQ(pattern(i, 9 + k), mem[PAGE + k * 100000 + i]);
        }
    }
    expect_untouched(PAGE + 300000, mem_len);
    EXPECT_EQ(3u, info->stats.direct_writes);
    EXPECT_EQ(0u, info->stats.direct_mapped);
    EXPECT_EQ(0u, info->stats.direct_fallbacks);
    EXPECT_EQ(0u, info->stats.tx_packets);
}
