/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device post side: what a post reads of the target's segment (not
 * its ring head, a line the target writes at every packet it consumes),
 * the prod watch that still finds a target that stopped consuming, and
 * the counter-based clock of a post.
 */
#include "soft_fixture.h"

extern "C" {
#include "soft/soft.h"
}

#include <unistd.h>
#include <vector>

using namespace soft_test;

namespace {

const uint64_t KEY   = 0x9057;
const uint64_t RECVS = 64; /* receives posted, 64-byte buffers */

/* Two devices of this process: a sends inline SENDs to b's DCT. */
struct post_pair {
    node a, b;
    std::vector<uint8_t> rbuf = std::vector<uint8_t>(RECVS * 64);
    dcx_mr_t *rmr             = nullptr;

    int open(const std::string &fabric)
    {
        int ret = open_sender_target(a, b, fabric, KEY, 0, 256, rbuf, &rmr);

        if (ret != 0) {
            return ret;
        }
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
        return post_inline_value(a, a.dci, b.dct->qp_num, KEY, DCX_WR_SEND,
                                 value);
    }

    /* b's port as a's peer */
    soft_peer_t *peer_b()
    {
        soft_dev_t *db = soft_dev(b.dev);

        for (soft_peer_t *p = soft_dev(a.dev)->peers; p != nullptr;
             p              = p->next) {
            if ((p->pid == db->pid) && (p->inst == db->inst)) {
                return p;
            }
        }
        return nullptr;
    }

    /* b polls for the next message, checks it holds value and reposts
     * its receive */
    bool received(uint64_t value)
    {
        dcx_wc_t wc;

        if ((b.poll(&wc, 1) != 1) || (wc.status != DCX_WC_SUCCESS) ||
            (memcmp(&value, rbuf.data() + (wc.wr_id % RECVS) * 64,
                    sizeof(value)) != 0)) {
            return false;
        }
        return post_recv(wc.wr_id + RECVS) == 0;
    }

    uint64_t prods() { return dev_stats(a).prods; }
};

} // namespace

/* Item 2 of the post side: a post never reads the target's request ring
 * head (before, soft_req_watch read it on every post, moving the line the
 * target writes at every pop to the sender's core and back per message).
 * Every message here is a light post (idle DCI) and a general one (the
 * second of two back to back, queued behind the first). */
TEST_F(soft, post_reads_no_target_head)
{
    post_pair p;
    dcx_wc_t wc[2];
    const uint64_t n = 500;

    ASSERT_EQ(0, p.open(fabric));
    /* a's engine runs only in a's calls (its helper's passes make prod
     * checks, which read the head) */
    soft_helper_stop(soft_dev(p.a.dev));
    soft_peer_t *peer = p.peer_b();
    ASSERT_NE(nullptr, peer);
    for (uint64_t i = 0; i < n; i += 2) {
        uint64_t reads = peer->head_reads;
        uint64_t tx    = dev_stats(p.a).tx_packets;

        ASSERT_EQ(0, p.send(i));
        ASSERT_EQ(0, p.send(i + 1));
        EXPECT_EQ(tx + 2, dev_stats(p.a).tx_packets);
        ASSERT_EQ(reads, peer->head_reads) << "message " << i;
        ASSERT_TRUE(p.received(i)) << "message " << i;
        ASSERT_TRUE(p.received(i + 1)) << "message " << i + 1;
        ASSERT_EQ(2, p.a.poll(wc, 2)) << "message " << i;
    }
}

/* The watch still finds a target that stopped consuming, both when it
 * starts with the post (everything before completed) and when it runs
 * from an earlier request that was consumed but not yet completed: the
 * requester's prod rings the target (whose helper is stopped here, so
 * that only its application serves), and everything arrives once the
 * target polls again. */
TEST_F(soft, stopped_target_prodded_bad_flow)
{
    post_pair p;
    dcx_wc_t wc;

    ASSERT_EQ(0, p.open(fabric));
    /* only the applications' polls run the engines */
    soft_helper_stop(soft_dev(p.a.dev));
    soft_helper_stop(soft_dev(p.b.dev));
    soft_peer_t *peer = p.peer_b();
    ASSERT_NE(nullptr, peer);

    for (int round = 0; round < 2; ++round) {
        uint64_t id = 10 * round;
        int got     = 0;

        if (round == 1) {
            /* a request consumed by the target and not completed by us:
             * the watch runs on from it */
            ASSERT_EQ(0, p.send(id));
            ASSERT_TRUE(p.received(id));
            ASSERT_NE(0u, peer->watch_since);
            id++;
        } else {
            EXPECT_EQ(0u, peer->watch_since);
        }
        uint64_t prods = p.prods();
        ASSERT_EQ(0, p.send(id)); /* b does not poll from here */
        double end = now_s() + 20.0;
        while ((p.prods() == prods) && (now_s() < end)) {
            got += dcx_cq_poll(p.a.cq, 1, &wc);
        }
        EXPECT_GT(p.prods(), prods)
            << "round " << round << ": the stopped target was not prodded";
        EXPECT_EQ(round, got) << "only the consumed request completed";
        ASSERT_TRUE(p.received(id));
        end = now_s() + 20.0;
        while ((got < round + 1) && (now_s() < end)) {
            got += dcx_cq_poll(p.a.cq, 1, &wc);
        }
        ASSERT_EQ(round + 1, got);
        EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
        EXPECT_EQ(id, wc.wr_id);
        EXPECT_EQ(0u, peer->watch_since) << "the completion of our newest "
                                            "request ends the watch";
    }
}

/* The clock of a post (soft_dev_now: the time-stamp counter converted to
 * CLOCK_MONOTONIC nanoseconds) reads what soft_now_ns() reads, to well
 * under the prod and ack timers, right after its base pair was taken and
 * long after it (a new pair then). */
TEST_F(soft, post_clock_follows_monotonic)
{
    const uint64_t tolerance = 20000; /* ns; timers are >= 25 us */
    node a;

    ASSERT_EQ(0, a.open(fabric.c_str()));
    soft_dev_t *dev = soft_dev(a.dev);
    for (int k = 0; k < 8; ++k) {
        soft_lock(&dev->lock);
        uint64_t t0 = soft_now_ns();
        uint64_t x  = soft_dev_now(dev);
        uint64_t t1 = soft_now_ns();
        soft_unlock(&dev->lock);
        EXPECT_LE(t0, x + tolerance) << "look " << k;
        EXPECT_LE(x, t1 + tolerance) << "look " << k;
        usleep((k % 2) ? 20000 : 500); /* past a rebase, or within */
    }
}

/* A DCI that goes to two targets in turn (a DCI serves one target at a
 * time, so each message finds the one before it completed): each target
 * sees the DCI's message numbers jump by the other's messages, which the
 * requester tells it through the message's ack base.  The responder takes
 * such a message on its fast path once it knows the DCI (the first from
 * it goes the general way); it sent every one the general way before,
 * some 400 instructions a message more. */
TEST_F(soft, dci_between_two_targets_takes_fast_path)
{
    const uint64_t n = 20;
    post_pair p;
    node c;
    std::vector<uint8_t> cbuf(RECVS * 64);
    uint8_t addr[DCX_DEV_ADDR_MAX];
    size_t len = sizeof(addr);
    dcx_mr_t *cmr;
    dcx_ah_t *ah_c;
    dcx_wc_t wc;

    ASSERT_EQ(0, p.open(fabric));
    ASSERT_EQ(0, c.open(fabric.c_str()));
    ASSERT_EQ(0, c.make_target(KEY, 0, 256));
    ASSERT_EQ(0, c.reg(cbuf.data(), cbuf.size(), DCX_ACCESS_LOCAL_WRITE, &cmr));
    for (uint64_t i = 0; i < n; ++i) {
        dcx_sge_t s = {(uintptr_t)cbuf.data() + i * 64, 64, cmr->lkey};
        ASSERT_EQ(0, dcx_srq_post_recv(c.srq, i, &s, 1));
    }
    ASSERT_EQ(0, dcx_dev_port_addr(c.dev, addr, &len));
    ASSERT_EQ(0, dcx_ah_create(p.a.pd, addr, len, &ah_c));

    uint64_t fast_b = dev_stats(p.b).resp_fast;
    uint64_t fast_c = dev_stats(c).resp_fast;
    for (uint64_t i = 0; i < n; ++i) {
        uint64_t value = 1000 + i;

        ASSERT_EQ(0, p.send(i));
        ASSERT_TRUE(p.received(i)) << "message " << i << " to b";
        ASSERT_EQ(1, p.a.poll(&wc, 1));
        ASSERT_EQ(DCX_WC_SUCCESS, wc.status);

        ASSERT_EQ(0, post_inline_value_ah(ah_c, p.a.dci, c.dct->qp_num, KEY,
                                          DCX_WR_SEND, value));
        ASSERT_EQ(1, c.poll(&wc, 1)) << "message " << i << " to c";
        ASSERT_EQ(DCX_WC_SUCCESS, wc.status);
        ASSERT_EQ(0, memcmp(&value, cbuf.data() + wc.wr_id * 64, 8));
        ASSERT_EQ(1, p.a.poll(&wc, 1));
        ASSERT_EQ(DCX_WC_SUCCESS, wc.status);
        ASSERT_EQ(value, wc.wr_id);
    }
    EXPECT_EQ(n - 1, dev_stats(p.b).resp_fast - fast_b);
    EXPECT_EQ(n - 1, dev_stats(c).resp_fast - fast_c);
    EXPECT_EQ(0, dcx_ah_destroy(ah_c));
}
