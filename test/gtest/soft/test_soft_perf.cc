/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rough performance of the soft device (disabled by default; run with
 * --gtest_also_run_disabled_tests).  Used to fill caps.latency_ns and
 * caps.bandwidth_Bps.
 */
#include "soft_fixture.h"

using namespace soft_test;

TEST_F(soft, DISABLED_perf_estimate)
{
    const int iters = 20000;
    shared_area *s  = sh;
    std::string fab = fabric;

    /* echo child: answers every 8-byte send with one */
    spawn([s, fab, iters]() {
        node n;
        uint64_t buf[64];
        dcx_mr_t *mr;
        size_t len = sizeof(s->addr);
        if ((n.open(fab.c_str(), &s->tp.limits) != 0) ||
            (n.reg(buf, sizeof(buf), DCX_ACCESS_LOCAL_WRITE, &mr) != 0) ||
            (n.make_target(1, 0) != 0) || (n.make_dci(256, 64) != 0) ||
            (dcx_dev_port_addr(n.dev, s->addr, &len) != 0)) {
            return 1;
        }
        s->addr_len = len;
        s->dctn     = n.dct->qp_num;
        for (int i = 0; i < 64; ++i) {
            dcx_sge_t sge = {(uint64_t)(uintptr_t)&buf[i], 8, mr->lkey};
            dcx_srq_post_recv(n.srq, i, &sge, 1);
        }
        __atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
        if (!wait_flag(&s->ready2, 1, 20.0) ||
            (n.connect(s->addr2, len) != 0)) {
            return 2;
        }
        dcx_sge_t sge = {(uint64_t)(uintptr_t)&buf[0], 8, mr->lkey};
        for (int i = 0; i < iters; ++i) {
            dcx_wc_t wc;
            while (dcx_cq_poll(n.cq, 1, &wc) == 0) {
            }
            if (wc.opcode != DCX_WC_RECV) {
                --i;
                continue;
            }
            dcx_sge_t r = {(uint64_t)(uintptr_t)&buf[wc.wr_id], 8, mr->lkey};
            dcx_srq_post_recv(n.srq, wc.wr_id, &r, 1);
            dcx_send_wr_t wr;
            memset(&wr, 0, sizeof(wr));
            wr.opcode = DCX_WR_SEND;
            wr.flags  = DCX_SEND_INLINE |
                       ((i % 64 == 63) ? DCX_SEND_SIGNALED : 0);
            wr.num_sge     = 1;
            wr.sg_list     = &sge;
            wr.dest.ah     = n.ah;
            wr.dest.dctn   = s->dctn2;
            wr.dest.dc_key = 1;
            if (dcx_qp_post_send(n.dci, &wr) != 0) {
                return 3;
            }
        }
        wait_flag(&s->stop, 1, 30.0);
        return 0;
    });
    ASSERT_TRUE(wait_flag(&sh->ready, 1, 20.0));
    node n;
    uint64_t buf[64];
    std::vector<uint8_t> big(1 << 20);
    dcx_mr_t *mr, *bmr;
    size_t len = sizeof(sh->addr2);
    ASSERT_EQ(0, n.open(fabric.c_str(), &sh->tp.limits));
    ASSERT_EQ(0, n.reg(buf, sizeof(buf), DCX_ACCESS_LOCAL_WRITE, &mr));
    ASSERT_EQ(0, n.reg(big.data(), big.size(),
                       DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE, &bmr));
    ASSERT_EQ(0, n.make_target(1, DCX_ACCESS_REMOTE_WRITE));
    ASSERT_EQ(0, n.make_dci(256, 64));
    ASSERT_EQ(0, n.connect(sh->addr, sh->addr_len));
    for (int i = 0; i < 64; ++i) {
        dcx_sge_t sge = {(uint64_t)(uintptr_t)&buf[i], 8, mr->lkey};
        ASSERT_EQ(0, dcx_srq_post_recv(n.srq, i, &sge, 1));
    }
    ASSERT_EQ(0, dcx_dev_port_addr(n.dev, sh->addr2, &len));
    sh->dctn2 = n.dct->qp_num;
    __atomic_store_n(&sh->ready2, 1, __ATOMIC_RELEASE);

    dcx_sge_t sge = {(uint64_t)(uintptr_t)&buf[0], 8, mr->lkey};
    double t0     = now_s();
    for (int i = 0; i < iters; ++i) {
        dcx_send_wr_t wr;
        memset(&wr, 0, sizeof(wr));
        wr.opcode  = DCX_WR_SEND;
        wr.flags   = DCX_SEND_INLINE | ((i % 64 == 63) ? DCX_SEND_SIGNALED : 0);
        wr.num_sge = 1;
        wr.sg_list = &sge;
        wr.dest.ah = n.ah;
        wr.dest.dctn   = sh->dctn;
        wr.dest.dc_key = 1;
        ASSERT_EQ(0, dcx_qp_post_send(n.dci, &wr));
        for (;;) {
            dcx_wc_t wc;
            if ((dcx_cq_poll(n.cq, 1, &wc) == 1) &&
                (wc.opcode == DCX_WC_RECV)) {
                dcx_sge_t r = {(uint64_t)(uintptr_t)&buf[wc.wr_id], 8,
                               mr->lkey};
                ASSERT_EQ(0, dcx_srq_post_recv(n.srq, wc.wr_id, &r, 1));
                break;
            }
        }
    }
    double lat = (now_s() - t0) / iters / 2;
    printf("soft perf: one-way latency %.2f us\n", lat * 1e6);

    /* bandwidth: 512 KiB RDMA writes, loopback (same copies as remote) */
    uint8_t myaddr[DCX_DEV_ADDR_MAX];
    size_t mylen = sizeof(myaddr);
    dcx_ah_t *self;
    ASSERT_EQ(0, dcx_dev_port_addr(n.dev, myaddr, &mylen));
    ASSERT_EQ(0, dcx_ah_create(n.pd, myaddr, mylen, &self));
    const int bw_iters = 400;
    dcx_sge_t bs = {(uint64_t)(uintptr_t)big.data(), 512 * 1024, bmr->lkey};
    t0           = now_s();
    int done     = 0;
    for (int i = 0; i < bw_iters; ++i) {
        dcx_send_wr_t wr;
        memset(&wr, 0, sizeof(wr));
        wr.opcode      = DCX_WR_RDMA_WRITE;
        wr.flags       = DCX_SEND_SIGNALED;
        wr.num_sge     = 1;
        wr.sg_list     = &bs;
        wr.dest.ah     = self;
        wr.dest.dctn   = n.dct->qp_num;
        wr.dest.dc_key = 1;
        wr.rkey        = bmr->rkey;
        wr.remote_addr = (uint64_t)(uintptr_t)big.data() + 512 * 1024;
        while (dcx_qp_post_send(n.dci, &wr) == ENOMEM) {
            dcx_wc_t wc[16];
            done += dcx_cq_poll(n.cq, 16, wc);
        }
    }
    while (done < bw_iters) {
        dcx_wc_t wc[16];
        done += dcx_cq_poll(n.cq, 16, wc);
    }
    double bw = bw_iters * 512.0 * 1024 / (now_s() - t0);
    printf("soft perf: loopback write bandwidth %.2f GB/s\n", bw / 1e9);
    dcx_ah_destroy(self);
    EXPECT_TRUE(stop_children());
}
