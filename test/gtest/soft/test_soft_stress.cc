/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: a mixed stream of operations with injected losses,
 * corruption and late packets; data and counters must come out exact.
 */
#include "soft_fixture.h"

#include <stdlib.h>

#include <thread>

using namespace soft_test;

TEST_F(soft_xproc, stress_mixed_with_faults)
{
    sh->tp.limits.ack_timeout_us = 20000; /* 20 ms: many retransmits */
    sh->tp.limits.retry_cnt      = 7;
    sh->tp.limits.mtu            = getenv("SOFT_STRESS_MTU") ?
                                       atoi(getenv("SOFT_STRESS_MTU")) :
                                       4096;
    sh->tp.nrecv                 = 200;
    sh->tp.recv_size             = 8192;
    start();
    /* SOFT_STRESS_SEED / SOFT_STRESS_ROUNDS make longer or other runs */
    const char *env_seed   = getenv("SOFT_STRESS_SEED");
    const char *env_rounds = getenv("SOFT_STRESS_ROUNDS");
    unsigned seed          = env_seed ? (unsigned)atoi(env_seed) : 12345;
    const int rounds       = env_rounds ? atoi(env_rounds) : 60;
    const int batch        = 8;
    printf("stress: seed %u, %d rounds\n", seed, rounds);
    uint64_t fadds                       = 0;
    uint32_t sends                       = 0;
    const size_t counter_off             = 1u << 20;
    *(uint64_t *)(sh->buf + counter_off) = 0;

    for (int r = 0; r < rounds; ++r) {
        if (r % 3 == 0) {
            static const dcx_soft_fault_type_t types[] = {
                DCX_SOFT_FAULT_DROP, DCX_SOFT_FAULT_CORRUPT,
                DCX_SOFT_FAULT_DELAY};
            dcx_soft_fault_t f;
            memset(&f, 0, sizeof(f));
            f.type     = types[rand_r(&seed) % 3];
            f.opcode   = -1;
            f.skip     = rand_r(&seed) % 6;
            f.count    = 1 + rand_r(&seed) % 2;
            f.delay_us = 5000 + rand_r(&seed) % 30000;
            ASSERT_EQ(0, dcx_soft_fault_inject(ini.dev, &f));
        }
        dcx_sge_t sges[batch];
        dcx_send_wr_t wrs[batch];
        size_t rd_off[batch];
        size_t wr_off[batch], wr_len[batch];
        for (int b = 0; b < batch; ++b) {
            const int kind    = rand_r(&seed) % 4;
            const size_t slot = (size_t)(r * batch + b) % 64;
            wr_off[b]         = slot * 16384;
            wr_len[b]         = 1 + rand_r(&seed) % 12000;
            rd_off[b]         = (size_t)-1;
            switch (kind) {
            case 0: /* write, then read back below */
                for (size_t i = 0; i < wr_len[b]; ++i) {
                    lbuf[wr_off[b] + i] = (uint8_t)(i + r * 7 + b);
                }
                sges[b] = lsge(wr_off[b], (uint32_t)wr_len[b]);
                wrs[b]  = make_wr(DCX_WR_RDMA_WRITE, b, &sges[b], 1, ini, sh);
                wrs[b].remote_addr += wr_off[b];
                break;
            case 1: /* read what a previous round wrote there */
                rd_off[b] = (2u << 20) + slot * 16384;
                sges[b]   = lsge(rd_off[b], 16384);
                wrs[b]    = make_wr(DCX_WR_RDMA_READ, b, &sges[b], 1, ini, sh);
                wrs[b].remote_addr += slot * 16384;
                break;
            case 2:
                sges[b] = lsge((4u << 20) + b * 8, 8);
                wrs[b]  = make_wr(DCX_WR_ATOMIC_FADD, b, &sges[b], 1, ini, sh);
                wrs[b].remote_addr += counter_off;
                wrs[b].compare_add = 1;
                ++fadds;
                break;
            default: {
                const uint32_t len = 1 + rand_r(&seed) % 8000;
                for (uint32_t i = 0; i < len; ++i) {
                    lbuf[(5u << 20) + b * 8192 + i] = (uint8_t)(sends + i);
                }
                sges[b]       = lsge((5u << 20) + b * 8192, len);
                wrs[b]        = make_wr(DCX_WR_SEND, b, &sges[b], 1, ini, sh);
                wrs[b].imm    = sends++;
                wrs[b].opcode = DCX_WR_SEND_IMM;
                break;
            }
            }
            wrs[b].flags = (rand_r(&seed) % 2) ? DCX_SEND_SIGNALED : 0;
            if (b == batch - 1) {
                wrs[b].flags = DCX_SEND_SIGNALED;
            }
            ASSERT_EQ(0, dcx_qp_post_send(ini.dci, &wrs[b]));
        }
        dcx_wc_t wc[batch];
        int want = 0;
        for (int b = 0; b < batch; ++b) {
            want += !!(wrs[b].flags & DCX_SEND_SIGNALED);
        }
        ASSERT_EQ(want, ini.poll(wc, want, 30.0)) << "round " << r;
        for (int i = 0; i < want; ++i) {
            ASSERT_EQ(DCX_WC_SUCCESS, wc[i].status) << "round " << r;
        }
        /* reads return what the target holds */
        for (int b = 0; b < batch; ++b) {
            if (rd_off[b] != (size_t)-1) {
                const size_t slot = (rd_off[b] - (2u << 20)) / 16384;
                ASSERT_EQ(0, memcmp(lbuf.data() + rd_off[b],
                                    sh->buf + slot * 16384, 16384))
                    << "round " << r;
            }
        }
        if (sh->n_wc + 64 > sh->tp.nrecv + sh->post_more) {
            __atomic_store_n(&sh->post_more, sh->post_more + 100,
                             __ATOMIC_RELEASE);
        }
    }
    dcx_soft_fault_clear(ini.dev);
    ASSERT_TRUE(wait_recv(sends, 30.0));
    usleep(100000); /* late copies of delayed packets must change nothing */
    EXPECT_EQ(fadds, *(uint64_t *)(sh->buf + counter_off));
    EXPECT_EQ(sends, sh->n_wc);
    for (uint32_t i = 0; i < sh->n_wc && i < MAX_WC; ++i) {
        const dcx_wc_t &w = sh->wc[i];
        ASSERT_EQ(DCX_WC_SUCCESS, w.status);
        EXPECT_EQ(i, w.imm); /* in order, exactly once */
        const uint8_t *p = recv_buf(sh, w.wr_id);
        for (uint32_t k = 0; k < w.byte_len; ++k) {
            ASSERT_EQ((uint8_t)(w.imm + k), p[k]) << "send " << i;
        }
    }
    dcx_soft_stats_t st;
    ASSERT_EQ(0, dcx_soft_stats(ini.dev, &st));
    EXPECT_GT(st.retransmits, 0u);
    EXPECT_TRUE(stop_children());
}

TEST_F(soft_xproc, stress_dcis_destinations_with_faults)
{
    sh->tp.limits.ack_timeout_us = 20000;
    sh->tp.limits.retry_cnt      = 7;
    sh->tp.limits.mtu            = 2048;
    start();
    /* a second destination: a DCT of the initiator itself (loopback) */
    ASSERT_EQ(0, ini.make_target(0x99, DCX_ACCESS_REMOTE_WRITE |
                                           DCX_ACCESS_REMOTE_READ |
                                           DCX_ACCESS_REMOTE_ATOMIC));
    static std::vector<uint8_t> mine(1u << 20); /* outlives ini */
    dcx_mr_t *mymr;
    ASSERT_EQ(0, ini.reg(mine.data(), mine.size(),
                         DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE |
                             DCX_ACCESS_REMOTE_READ | DCX_ACCESS_REMOTE_ATOMIC,
                         &mymr));
    uint8_t myaddr[DCX_DEV_ADDR_MAX];
    size_t len = sizeof(myaddr);
    ASSERT_EQ(0, dcx_dev_port_addr(ini.dev, myaddr, &len));
    dcx_ah_t *self_ah;
    ASSERT_EQ(0, dcx_ah_create(ini.pd, myaddr, len, &self_ah));

    const int ndci       = 3;
    dcx_qp_t *dcis[ndci] = {ini.dci, nullptr, nullptr};
    dcx_qp_attr_t qattr;
    memset(&qattr, 0, sizeof(qattr));
    qattr.type          = DCX_QPT_DCI;
    qattr.send_cq       = ini.cq;
    qattr.max_send_wr   = 64;
    qattr.max_rd_atomic = 2;
    for (int i = 1; i < ndci; ++i) {
        ASSERT_EQ(0, dcx_qp_create(ini.pd, &qattr, &dcis[i]));
    }

    unsigned seed                            = 777;
    uint64_t fadds[2]                        = {0, 0};
    const size_t counter_off                 = 512u << 10;
    *(uint64_t *)(sh->buf + counter_off)     = 0;
    *(uint64_t *)(mine.data() + counter_off) = 0;

    for (int r = 0; r < 80; ++r) {
        if (r % 4 == 0) {
            dcx_soft_fault_t f;
            memset(&f, 0, sizeof(f));
            f.type     = (r % 8) ? DCX_SOFT_FAULT_DROP : DCX_SOFT_FAULT_DELAY;
            f.opcode   = -1;
            f.skip     = rand_r(&seed) % 10;
            f.count    = 1;
            f.delay_us = 30000;
            ASSERT_EQ(0, dcx_soft_fault_inject(ini.dev, &f));
        }
        struct op {
            dcx_send_wr_t wr;
            dcx_sge_t sge;
            size_t check_off; /* read-back area, or -1 */
            int dest;
            size_t slot;
        } ops[ndci][4];
        int signalled = 0;
        for (int d = 0; d < ndci; ++d) {
            for (int k = 0; k < 4; ++k) {
                op &o             = ops[d][k];
                o.dest            = rand_r(&seed) % 2;
                o.slot            = (size_t)((r * ndci + d) % 16) * 4 + (k / 2);
                o.check_off       = (size_t)-1;
                const size_t roff = o.slot * 8192;
                const uint32_t n  = 1 + rand_r(&seed) % 8000;
                if (k % 2 == 0) {
                    /* write a pattern; the read right after checks it */
                    uint8_t *src = lbuf.data() + (d * 4 + k) * 8192;
                    for (uint32_t i = 0; i < n; ++i) {
                        src[i] = (uint8_t)(r + d + k + i * 3);
                    }
                    o.sge = lsge((d * 4 + k) * 8192, n);
                    o.wr  = make_wr(DCX_WR_RDMA_WRITE, 0, &o.sge, 1, ini, sh);
                    o.wr.remote_addr += roff;
                } else if (rand_r(&seed) % 2) {
                    op &w       = ops[d][k - 1];
                    o.dest      = w.dest;
                    o.check_off = (1u << 20) + (d * 4 + k) * 8192;
                    o.sge       = lsge(o.check_off, w.sge.length);
                    o.wr = make_wr(DCX_WR_RDMA_READ, 0, &o.sge, 1, ini, sh);
                    o.wr.remote_addr += w.slot * 8192;
                } else {
                    o.sge = lsge((2u << 20) + (d * 4 + k) * 8, 8);
                    o.wr  = make_wr(DCX_WR_ATOMIC_FADD, 0, &o.sge, 1, ini, sh);
                    o.wr.remote_addr += counter_off;
                    o.wr.compare_add = 1;
                    fadds[o.dest]++;
                }
                if (o.dest == 1) {
                    o.wr.dest.ah     = self_ah;
                    o.wr.dest.dctn   = ini.dct->qp_num;
                    o.wr.dest.dc_key = 0x99;
                    o.wr.rkey        = mymr->rkey;
                    o.wr.remote_addr = o.wr.remote_addr - sh->raddr +
                                       (uint64_t)(uintptr_t)mine.data();
                }
                o.wr.wr_id = d * 4 + k;
                o.wr.flags = (k == 3) ? DCX_SEND_SIGNALED : 0;
                signalled += (k == 3);
            }
        }
        /* interleave the DCIs' posts */
        for (int k = 0; k < 4; ++k) {
            for (int d = 0; d < ndci; ++d) {
                ASSERT_EQ(0, dcx_qp_post_send(dcis[d], &ops[d][k].wr));
            }
        }
        dcx_wc_t wc[ndci];
        ASSERT_EQ(signalled, ini.poll(wc, signalled, 30.0)) << "round " << r;
        for (int i = 0; i < signalled; ++i) {
            ASSERT_EQ(DCX_WC_SUCCESS, wc[i].status) << "round " << r;
        }
        for (int d = 0; d < ndci; ++d) {
            for (int k = 1; k < 4; k += 2) {
                const op &o = ops[d][k];
                if (o.check_off != (size_t)-1) {
                    ASSERT_EQ(0, memcmp(lbuf.data() + o.check_off,
                                        lbuf.data() + (d * 4 + k - 1) * 8192,
                                        o.sge.length))
                        << "round " << r << " dci " << d;
                }
            }
        }
    }
    dcx_soft_fault_clear(ini.dev);
    usleep(100000);
    dcx_dev_progress(ini.dev);
    EXPECT_EQ(fadds[0], *(uint64_t *)(sh->buf + counter_off));
    EXPECT_EQ(fadds[1], *(uint64_t *)(mine.data() + counter_off));
    for (int i = 1; i < ndci; ++i) {
        EXPECT_EQ(0, dcx_qp_destroy(dcis[i]));
    }
    EXPECT_EQ(0, dcx_ah_destroy(self_ah));
    EXPECT_TRUE(stop_children());
}

TEST_F(soft_xproc, threads_share_a_device)
{
    start();
    *(uint64_t *)(sh->buf + 256) = 0;
    const int nthreads = 3, iters = 300;
    std::vector<std::thread> threads;
    std::vector<int> failures(nthreads, 0);
    for (int t = 0; t < nthreads; ++t) {
        threads.emplace_back([this, t, &failures]() {
            dcx_cq_t *cq;
            dcx_qp_t *dci;
            if (dcx_cq_create(ini.dev, 64, &cq) != 0) {
                failures[t] = 1;
                return;
            }
            dcx_qp_attr_t qattr;
            memset(&qattr, 0, sizeof(qattr));
            qattr.type        = DCX_QPT_DCI;
            qattr.send_cq     = cq;
            qattr.max_send_wr = 16;
            if (dcx_qp_create(ini.pd, &qattr, &dci) != 0) {
                failures[t] = 2;
                return;
            }
            dcx_sge_t s = lsge(t * 64, 8);
            for (int i = 0; i < iters; ++i) {
                dcx_send_wr_t wr = make_wr(DCX_WR_ATOMIC_FADD, i, &s, 1, ini,
                                           sh);
                wr.remote_addr += 256;
                wr.compare_add = 1;
                if (dcx_qp_post_send(dci, &wr) != 0) {
                    failures[t] = 3;
                    break;
                }
                dcx_wc_t wc;
                double end = now_s() + 20;
                int n;
                while (((n = dcx_cq_poll(cq, 1, &wc)) == 0) &&
                       (now_s() < end)) {
                }
                if ((n != 1) || (wc.status != DCX_WC_SUCCESS)) {
                    failures[t] = 4;
                    break;
                }
            }
            dcx_qp_destroy(dci);
            dcx_cq_destroy(cq);
        });
    }
    for (std::thread &th : threads) {
        th.join();
    }
    for (int t = 0; t < nthreads; ++t) {
        EXPECT_EQ(0, failures[t]) << "thread " << t;
    }
    EXPECT_EQ((uint64_t)nthreads * iters, *(uint64_t *)(sh->buf + 256));
    EXPECT_TRUE(stop_children());
}
