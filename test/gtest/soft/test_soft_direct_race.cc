/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RDMA WRITE and READ executed by the initiator, racing the target and
 * ordered with the other work of a DCI: a region deregistered or unmapped
 * while written gets nothing more, a writer dead in a copy does not hold
 * up the deregistration; an atomic then a write to one address, a write
 * then a send, a READ behind a send (done directly) on one DCI; a device
 * busy with a long copy is not taken for absent.
 */
#include "soft_direct_fixture.h"

#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <thread>

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
