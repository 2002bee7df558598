/*
 * Soft device engine: polls that find nothing to do (the lock-free look of
 * soft_engine_poll_idle) must never hide work that arrives afterwards, and
 * the futex wakes a device makes are counted (stats.futex_wakes).
 */
#include "soft_fixture.h"

#include <vector>

using namespace soft_test;

namespace {

const uint64_t KEY = 0x5eed;
const uint64_t RECVS = 256;   /* receives posted, 64-byte buffers */

/* Two devices of this process: a sends to b's DCT. */
struct pair {
    node a, b;
    std::vector<uint8_t> rbuf = std::vector<uint8_t>(RECVS * 64);
    dcx_mr_t *rmr = nullptr;
    uint32_t dctn = 0;

    int open(const std::string &fabric)
    {
        uint8_t addr[DCX_DEV_ADDR_MAX];
        size_t len = sizeof(addr);
        int ret;

        if (((ret = a.open(fabric.c_str())) != 0) ||
            ((ret = b.open(fabric.c_str())) != 0) ||
            ((ret = a.make_dci()) != 0) ||
            ((ret = b.make_target(KEY, DCX_ACCESS_REMOTE_WRITE)) != 0) ||
            ((ret = b.reg(rbuf.data(), rbuf.size(), DCX_ACCESS_LOCAL_WRITE,
                          &rmr)) != 0) ||
            ((ret = dcx_dev_port_addr(b.dev, addr, &len)) != 0) ||
            ((ret = a.connect(addr, len)) != 0)) {
            return ret;
        }
        dctn = b.dct->qp_num;
        for (uint64_t i = 0; i < RECVS; ++i) {
            if ((ret = post_recv(i)) != 0) {
                return ret;
            }
        }
        return 0;
    }

    int post_recv(uint64_t i)
    {
        dcx_sge_t s;

        s.addr   = (uintptr_t)rbuf.data() + (i % RECVS) * 64;
        s.length = 64;
        s.lkey   = rmr->lkey;
        return dcx_srq_post_recv(b.srq, i, &s, 1);
    }

    int send(uint64_t value)
    {
        dcx_send_wr_t wr;
        dcx_sge_t s;

        s.addr   = (uintptr_t)&value;
        s.length = sizeof(value);
        s.lkey   = 0;
        memset(&wr, 0, sizeof(wr));
        wr.wr_id       = value;
        wr.opcode      = DCX_WR_SEND;
        wr.flags       = DCX_SEND_SIGNALED | DCX_SEND_INLINE;
        wr.num_sge     = 1;
        wr.sg_list     = &s;
        wr.dest.ah     = a.ah;
        wr.dest.dctn   = dctn;
        wr.dest.dc_key = KEY;
        return dcx_qp_post_send(a.dci, &wr);
    }

    uint64_t futex_wakes()
    {
        dcx_soft_stats_t sa, sb;

        EXPECT_EQ(0, dcx_soft_stats(a.dev, &sa));
        EXPECT_EQ(0, dcx_soft_stats(b.dev, &sb));
        return sa.futex_wakes + sb.futex_wakes;
    }
};

} // namespace

/* One thread polls both devices: every poll between the messages finds
 * nothing to do, and every message still arrives, in order, and completes. */
TEST_F(soft, engine_idle_polls_see_new_work)
{
    pair p;
    dcx_wc_t wc;
    const uint64_t n = 500;

    ASSERT_EQ(0, p.open(fabric));
    for (uint64_t i = 0; i < n; ++i) {
        /* idle polls: nothing outstanding anywhere */
        for (int k = 0; k < 3; ++k) {
            ASSERT_EQ(0, dcx_cq_poll(p.a.cq, 1, &wc));
            ASSERT_EQ(0, dcx_cq_poll(p.b.cq, 1, &wc));
            dcx_dev_progress(p.a.dev);
            dcx_dev_progress(p.b.dev);
        }
        ASSERT_EQ(0, p.send(i));
        ASSERT_EQ(1, p.b.poll(&wc, 1)) << "message " << i;
        EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
        EXPECT_EQ(DCX_WC_RECV, wc.opcode);
        EXPECT_EQ(i, wc.wr_id);
        EXPECT_EQ(8u, wc.byte_len);
        EXPECT_EQ(0, memcmp(&i, p.rbuf.data() + (i % RECVS) * 64, sizeof(i)));
        ASSERT_EQ(0, p.post_recv(i + RECVS));
        ASSERT_EQ(1, p.a.poll(&wc, 1)) << "message " << i;
        EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
        EXPECT_EQ(DCX_WC_SEND, wc.opcode);
        EXPECT_EQ(i, wc.wr_id);
    }
}

/* A device whose application does not poll has its helper woken by a
 * sender (counted), and serves the message without polling. */
TEST_F(soft, futex_wake_counted_for_idle_target)
{
    pair p;
    dcx_wc_t wc;

    ASSERT_EQ(0, p.open(fabric));
    uint64_t before = p.futex_wakes();
    /* b's application never polls from here on: its poll stamp ages past
     * SOFT_APP_IDLE_NS and its helper goes to deep sleep */
    usleep(20000);
    ASSERT_EQ(0, p.send(7));
    ASSERT_EQ(1, p.a.poll(&wc, 1));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_GE(p.futex_wakes(), before + 1);
    ASSERT_EQ(1, p.b.poll(&wc, 1));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    uint64_t v = 7;
    EXPECT_EQ(0, memcmp(&v, p.rbuf.data() + (wc.wr_id % RECVS) * 64,
                        sizeof(v)));
}

/* While both applications poll, senders leave the helpers alone: a wake
 * is made only when this thread lost its core for longer than the idle
 * threshold between two polls, which a loaded machine allows now and then
 * but never for most messages. */
TEST_F(soft, no_futex_wakes_while_polling)
{
    pair p;
    dcx_wc_t wc;
    const uint64_t n = 400;

    ASSERT_EQ(0, p.open(fabric));
    ASSERT_EQ(0, dcx_cq_poll(p.b.cq, 1, &wc));
    uint64_t before = p.futex_wakes();
    for (uint64_t i = 0; i < n; ++i) {
        ASSERT_EQ(0, p.send(i));
        ASSERT_EQ(1, p.b.poll(&wc, 1));
        ASSERT_EQ(0, p.post_recv(i + RECVS));
        ASSERT_EQ(1, p.a.poll(&wc, 1));
    }
    EXPECT_LT(p.futex_wakes() - before, n / 4);
}

/* A burst larger than one engine pass (64 packets) to a device whose
 * application does not poll: its helper serves all of it. */
TEST_F(soft, helper_serves_burst)
{
    pair p;
    dcx_wc_t wc[1];
    const int n = 120;   /* more than a pass serves; < the DCI's 128 WRs */

    ASSERT_EQ(0, p.open(fabric));
    dcx_soft_stats_t st0;
    ASSERT_EQ(0, dcx_soft_stats(p.b.dev, &st0));
    for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < n; ++i) {
            ASSERT_EQ(0, p.send(round * n + i));
        }
        int got = 0;
        while (got < n) {
            int k = p.a.poll(wc, 1);
            ASSERT_EQ(1, k) << "send " << got << " of round " << round;
            EXPECT_EQ(DCX_WC_SUCCESS, wc[0].status);
            got++;
        }
        /* b's application takes its receives only now */
        for (got = 0; got < n; ++got) {
            ASSERT_EQ(1, p.b.poll(wc, 1));
            EXPECT_EQ(DCX_WC_SUCCESS, wc[0].status);
            ASSERT_EQ(0, p.post_recv(wc[0].wr_id + RECVS));
        }
        usleep(1000);   /* b's application is idle again */
    }
    dcx_soft_stats_t st;
    ASSERT_EQ(0, dcx_soft_stats(p.b.dev, &st));
    /* every request arrived while b's application was not polling */
    EXPECT_GE(st.helper_packets - st0.helper_packets, 3u * n);
}
