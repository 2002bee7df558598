/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device receive side: a poll whose lock-free look finds packets in
 * the request ring only (the engine otherwise idle or only waiting) runs a
 * ring pass, in the same lock round as the CQ drain, with no clock read
 * and no timer walk; the responder holds its table acknowledgement back to
 * the end of the pass, one store per pass and source DCI.  What both must
 * keep: every message in order, a timer due after a ring pass, and the
 * errors of the general path.  With requester and responder on one device,
 * a ring pass that acknowledges the device's own DCI in its table also
 * completes that DCI, as the acknowledgement pass of the next poll did,
 * unless its CQ is armed or a response waits.
 */
#include "soft_fixture.h"

extern "C" {
#include "soft/soft.h"
}

#include <vector>

using namespace soft_test;

namespace {

const uint64_t KEY   = 0x7ec5;
const unsigned RECVS = 64; /* receives posted on each target, 64 B each */

/* Two devices of this process, both helpers stopped (only the polls below
 * run the engines): a sends to b's DCT; with both(), b also sends to a's. */
struct recv_pair {
    node a, b;
    std::vector<uint8_t> abuf = std::vector<uint8_t>(RECVS * 64);
    std::vector<uint8_t> bbuf = std::vector<uint8_t>(RECVS * 64);
    dcx_mr_t *amr = nullptr, *bmr = nullptr;

    int open(const std::string &fabric, const dcx_soft_limits_t *la = nullptr)
    {
        int ret;

        if (((ret = a.open(fabric.c_str(), la)) != 0) ||
            ((ret = b.open(fabric.c_str())) != 0) ||
            ((ret = a.make_dci()) != 0) ||
            ((ret = target(b, bbuf, &bmr)) != 0) || ((ret = link(a, b)) != 0)) {
            return ret;
        }
        soft_helper_stop(soft_dev(a.dev));
        soft_helper_stop(soft_dev(b.dev));
        return 0;
    }

    /* b sends to a too */
    int both()
    {
        int ret;

        if (((ret = b.make_dci()) != 0) ||
            ((ret = target(a, abuf, &amr)) != 0)) {
            return ret;
        }
        return link(b, a);
    }

    static int target(node &n, std::vector<uint8_t> &buf, dcx_mr_t **mr_p)
    {
        int ret;

        if (((ret = n.make_target(KEY, DCX_ACCESS_REMOTE_WRITE)) != 0) ||
            ((ret = n.reg(buf.data(), buf.size(),
                          DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE,
                          mr_p)) != 0)) {
            return ret;
        }
        for (unsigned i = 0; i < RECVS; ++i) {
            dcx_sge_t s;

            s.addr   = (uintptr_t)buf.data() + i * 64;
            s.length = 64;
            s.lkey   = (*mr_p)->lkey;
            if ((ret = dcx_srq_post_recv(n.srq, i, &s, 1)) != 0) {
                return ret;
            }
        }
        return 0;
    }

    static int link(node &from, node &to)
    {
        uint8_t addr[DCX_DEV_ADDR_MAX];
        size_t len = sizeof(addr);
        int ret    = dcx_dev_port_addr(to.dev, addr, &len);

        return (ret != 0) ? ret : from.connect(addr, len);
    }

    /* an inline, signalled SEND (wr_id = value) or RDMA WRITE of 8 bytes
     * from 'from' to the DCT of 'to' */
    static int post(node &from, const node &to, dcx_wr_opcode_t op,
                    uint64_t value, uint32_t rkey = 0, uint64_t raddr = 0)
    {
        return post_inline_value(from, from.dci, to.dct->qp_num, KEY, op, value,
                                 rkey, raddr);
    }

    /* polls n's CQ once more: a device opened has its engine marked busy
     * until its first pass */
    static void settle(node &n)
    {
        dcx_wc_t wc;

        ASSERT_EQ(0, dcx_cq_poll(n.cq, 1, &wc));
    }

    /* one SEND from 'from' to 'to', received and completed: 'to' knows
     * the source afterwards (the first message of a source takes the
     * responder's general path) */
    static void introduce(node &from, node &to, uint64_t value)
    {
        dcx_wc_t wc;

        ASSERT_EQ(0, post(from, to, DCX_WR_SEND, value));
        ASSERT_EQ(1, to.poll(&wc, 1));
        ASSERT_EQ(DCX_WC_SUCCESS, wc.status);
        ASSERT_EQ(1, from.poll(&wc, 1));
        ASSERT_EQ(DCX_WC_SUCCESS, wc.status);
        settle(from);
        settle(to);
    }
};

uint64_t app_passes(node &n)
{
    return soft_dev(n.dev)->app_passes;
}

} // namespace

/* Four inline SENDs wait in b's request ring; b's engine is idle (no DCI).
 * One poll of b serves them all in a ring pass, in one lock round with the
 * CQ drain and without a whole engine pass, and acknowledges them with one
 * store in a's ack table; a then completes all four from its table, in
 * order, with no ACK packet. */
TEST_F(soft, ring_pass_serves_request_ring_only)
{
    recv_pair p;
    const unsigned n = 4;
    dcx_wc_t wc[2 * n];

    ASSERT_EQ(0, p.open(fabric));
    recv_pair::introduce(p.a, p.b, 99);
    for (unsigned i = 0; i < n; ++i) {
        ASSERT_EQ(0, recv_pair::post(p.a, p.b, DCX_WR_SEND, 100 + i));
    }
    dcx_soft_stats_t a0 = dev_stats(p.a), b0 = dev_stats(p.b);
    uint64_t passes = app_passes(p.b);

    ASSERT_EQ((int)n, dcx_cq_poll(p.b.cq, 2 * n, wc));
    dcx_soft_stats_t b1 = dev_stats(p.b);
    EXPECT_EQ(b0.ring_passes + 1, b1.ring_passes);
    EXPECT_EQ(b0.locked_polls + 1, b1.locked_polls);
    EXPECT_EQ(passes, app_passes(p.b)) << "a whole engine pass ran";
    EXPECT_EQ(b0.acks_in_table + n, b1.acks_in_table);
    EXPECT_EQ(b0.table_stores + 1, b1.table_stores)
        << "one store per pass and source DCI";
    for (unsigned i = 0; i < n; ++i) {
        EXPECT_EQ(DCX_WC_SUCCESS, wc[i].status) << i;
        EXPECT_EQ(DCX_WC_RECV, wc[i].opcode) << i;
        EXPECT_EQ((uint64_t)i + 1, wc[i].wr_id) << i;
        EXPECT_EQ(8u, wc[i].byte_len) << i;
        EXPECT_EQ(0u, wc[i].flags) << i;
        EXPECT_EQ(p.b.dct->qp_num, wc[i].qp_num) << i;
        EXPECT_EQ(p.a.dci->qp_num, wc[i].src_qp) << i;
        EXPECT_EQ(0u, wc[i].vendor_err) << i;
        uint64_t v = 0;
        memcpy(&v, p.bbuf.data() + (i + 1) * 64, sizeof(v));
        EXPECT_EQ(100u + i, v) << i;
    }

    ASSERT_EQ((int)n, p.a.poll(wc, n));
    for (unsigned i = 0; i < n; ++i) {
        EXPECT_EQ(DCX_WC_SUCCESS, wc[i].status) << i;
        EXPECT_EQ(DCX_WC_SEND, wc[i].opcode) << i;
        EXPECT_EQ(100u + i, wc[i].wr_id) << i;
    }
    dcx_soft_stats_t a1 = dev_stats(p.a);
    EXPECT_EQ(a0.table_completions + n, a1.table_completions);
    EXPECT_EQ(a0.rx_packets, a1.rx_packets) << "ACK packets came back";
    EXPECT_EQ(a0.retransmits, a1.retransmits);
}

/* a waits for an answer that is lost (its SEND dropped on the wire) with
 * its ack timer armed; b's SEND to a arrives meanwhile.  The poll that
 * finds it runs a ring pass (no timer walk), and the timer still fires
 * from a later poll: the retransmission completes a's SEND. */
TEST_F(soft, ring_pass_then_timer_fires_on_later_poll)
{
    recv_pair p;
    dcx_soft_limits_t l;
    dcx_wc_t wc;

    dcx_soft_limits_default(&l);
    l.ack_timeout_us = 200000; /* far beyond the steps before it */
    l.retry_cnt      = 7;
    ASSERT_EQ(0, p.open(fabric, &l));
    ASSERT_EQ(0, p.both());
    recv_pair::introduce(p.b, p.a, 3);
    dcx_soft_fault_t f;
    memset(&f, 0, sizeof(f));
    f.type   = DCX_SOFT_FAULT_DROP;
    f.opcode = DCX_WR_SEND;
    f.count  = 1;
    ASSERT_EQ(0, dcx_soft_fault_inject(p.a.dev, &f));
    uint64_t rexmit = dev_stats(p.a).retransmits;
    ASSERT_EQ(0, recv_pair::post(p.a, p.b, DCX_WR_SEND, 5));
    /* a's pass after the post leaves its engine waiting for the timer */
    ASSERT_EQ(0, dcx_cq_poll(p.a.cq, 1, &wc));
    ASSERT_EQ(SOFT_ENGINE_WAIT, __atomic_load_n(&soft_dev(p.a.dev)->engine_idle,
                                                __ATOMIC_RELAXED));

    ASSERT_EQ(0, recv_pair::post(p.b, p.a, DCX_WR_SEND, 7));
    dcx_soft_stats_t a0 = dev_stats(p.a);
    ASSERT_EQ(1, dcx_cq_poll(p.a.cq, 1, &wc));
    EXPECT_EQ(DCX_WC_RECV, wc.opcode);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    dcx_soft_stats_t a1 = dev_stats(p.a);
    EXPECT_EQ(a0.ring_passes + 1, a1.ring_passes);
    EXPECT_EQ(rexmit, a1.retransmits) << "the timer fired too early";
    EXPECT_EQ(SOFT_ENGINE_WAIT, __atomic_load_n(&soft_dev(p.a.dev)->engine_idle,
                                                __ATOMIC_RELAXED))
        << "the ring pass lost what the engine waits for";

    /* the SEND to a was acknowledged in b's table: b completes it */
    ASSERT_EQ(1, p.b.poll(&wc, 1));
    EXPECT_EQ(DCX_WC_SEND, wc.opcode);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(7u, wc.wr_id);

    /* a's lost SEND: only its timer, fired by a's polls, recovers it */
    int got_a = 0, got_b = 0;
    dcx_wc_t wcb;
    double end = now_s() + 20.0;
    while (((got_a == 0) || (got_b == 0)) && (now_s() < end)) {
        if (dcx_cq_poll(p.a.cq, 1, &wc) == 1) {
            got_a++;
        }
        if (dcx_cq_poll(p.b.cq, 1, &wcb) == 1) {
            got_b++;
        }
    }
    ASSERT_EQ(1, got_a) << "the ack timer never fired";
    ASSERT_EQ(1, got_b);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_SEND, wc.opcode);
    EXPECT_EQ(5u, wc.wr_id);
    EXPECT_EQ(DCX_WC_RECV, wcb.opcode);
    EXPECT_EQ(DCX_WC_SUCCESS, wcb.status);
    uint64_t v = 0;
    memcpy(&v, p.bbuf.data() + wcb.wr_id * 64, sizeof(v));
    EXPECT_EQ(5u, v);
    EXPECT_EQ(rexmit + 1, dev_stats(p.a).retransmits);
    dcx_soft_fault_clear(p.a.dev);
}

/* An inline SEND, then an inline RDMA WRITE with an unknown rkey, both on
 * the light path and served in one pass: the SEND's table acknowledgement
 * is held back, the WRITE falls to the general path, which publishes the
 * held acknowledgement before its NAK.  The SEND completes successfully,
 * the WRITE with REM_ACCESS_ERR, in order, and nothing is written. */
TEST_F(soft, held_ack_then_refused_light_write_bad_flow)
{
    recv_pair p;
    dcx_wc_t wc[4];

    ASSERT_EQ(0, p.open(fabric));
    recv_pair::introduce(p.a, p.b, 9);
    std::vector<uint8_t> before = p.bbuf;
    ASSERT_EQ(0, recv_pair::post(p.a, p.b, DCX_WR_SEND, 1));
    ASSERT_EQ(0, recv_pair::post(p.a, p.b, DCX_WR_RDMA_WRITE, 2,
                                 p.bmr->rkey ^ 0x5500u,
                                 (uintptr_t)p.bbuf.data() + 32 * 64));
    dcx_soft_stats_t b0 = dev_stats(p.b);
    ASSERT_EQ(1, dcx_cq_poll(p.b.cq, 4, wc));
    EXPECT_EQ(DCX_WC_SUCCESS, wc[0].status);
    EXPECT_EQ(1u, wc[0].wr_id);
    dcx_soft_stats_t b1 = dev_stats(p.b);
    EXPECT_EQ(b0.ring_passes + 1, b1.ring_passes);
    EXPECT_EQ(b0.remote_access_errors + 1, b1.remote_access_errors);
    EXPECT_EQ(b0.acks_in_table + 1, b1.acks_in_table);

    ASSERT_EQ(2, p.a.poll(wc, 2));
    EXPECT_EQ(DCX_WC_SUCCESS, wc[0].status);
    EXPECT_EQ(1u, wc[0].wr_id);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, wc[1].status);
    EXPECT_EQ(2u, wc[1].wr_id);
    /* only the SEND's 8 bytes landed, in receive 1 */
    uint64_t v = 0;
    memcpy(&v, p.bbuf.data() + 64, sizeof(v));
    EXPECT_EQ(1u, v);
    EXPECT_TRUE(std::equal(before.begin() + 128, before.end(),
                           p.bbuf.begin() + 128))
        << "the refused WRITE wrote";
}

namespace {

/* Requester and responder on one device (as two UCP workers of one
 * context): a DCI whose send CQ is not the DCT's receive CQ, sending to
 * the device's own DCT through an address handle of its own port; the
 * helper stopped.  With a channel, the send CQ is created on it. */
struct own_pair {
    node n; /* n.cq: the DCI's send CQ */
    dcx_cq_t *rx_cq          = nullptr;
    dcx_comp_channel_t *ch   = nullptr;
    std::vector<uint8_t> buf = std::vector<uint8_t>(RECVS * 64);
    dcx_mr_t *mr             = nullptr;

    int open(const std::string &fabric, bool with_channel = false)
    {
        uint8_t addr[DCX_DEV_ADDR_MAX];
        size_t len = sizeof(addr);
        dcx_srq_attr_t sattr;
        dcx_qp_attr_t qattr;
        int ret;

        if (((ret = n.open(fabric.c_str())) != 0) ||
            (with_channel &&
             (((ret = dcx_comp_channel_create(n.dev, &ch)) != 0) ||
              ((ret = dcx_cq_create_ch(n.dev, 256, ch, &n.cq)) != 0))) ||
            ((ret = n.make_dci()) != 0) ||
            ((ret = dcx_cq_create(n.dev, 256, &rx_cq)) != 0)) {
            return ret;
        }
        memset(&sattr, 0, sizeof(sattr));
        sattr.type    = DCX_SRQ_BASIC;
        sattr.max_wr  = 256;
        sattr.max_sge = 2;
        sattr.cq      = rx_cq;
        if ((ret = dcx_srq_create(n.pd, &sattr, &n.srq)) != 0) {
            return ret;
        }
        memset(&qattr, 0, sizeof(qattr));
        qattr.type    = DCX_QPT_DCT;
        qattr.recv_cq = rx_cq;
        qattr.srq     = n.srq;
        qattr.dc_key  = KEY;
        qattr.access  = DCX_ACCESS_REMOTE_WRITE;
        if (((ret = dcx_qp_create(n.pd, &qattr, &n.dct)) != 0) ||
            ((ret = n.reg(buf.data(), buf.size(),
                          DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE,
                          &mr)) != 0)) {
            return ret;
        }
        for (unsigned i = 0; i < RECVS; ++i) {
            dcx_sge_t s = {(uint64_t)(uintptr_t)buf.data() + i * 64, 64,
                           mr->lkey};
            if ((ret = dcx_srq_post_recv(n.srq, i, &s, 1)) != 0) {
                return ret;
            }
        }
        if (((ret = dcx_dev_port_addr(n.dev, addr, &len)) != 0) ||
            ((ret = n.connect(addr, len)) != 0)) {
            return ret;
        }
        soft_helper_stop(soft_dev(n.dev));
        return 0;
    }

    /* the DCT, SRQ and receive CQ, then the node, then the channel (its
     * CQ goes with the node) */
    ~own_pair()
    {
        if (n.dct != nullptr) {
            EXPECT_EQ(0, dcx_qp_destroy(n.dct));
            n.dct = nullptr;
        }
        if (n.srq != nullptr) {
            EXPECT_EQ(0, dcx_srq_destroy(n.srq));
            n.srq = nullptr;
        }
        if (rx_cq != nullptr) {
            EXPECT_EQ(0, dcx_cq_destroy(rx_cq));
        }
        if (ch != nullptr) {
            if (n.dci != nullptr) {
                EXPECT_EQ(0, dcx_qp_destroy(n.dci));
                n.dci = nullptr;
            }
            if (n.cq != nullptr) {
                EXPECT_EQ(0, dcx_cq_destroy(n.cq));
                n.cq = nullptr;
            }
            EXPECT_EQ(0, dcx_comp_channel_destroy(ch));
        }
        n.close();
    }

    int post(dcx_wr_opcode_t op, uint64_t value, uint32_t rkey = 0,
             uint64_t raddr = 0)
    {
        return post_inline_value(n, n.dci, n.dct->qp_num, KEY, op, value, rkey,
                                 raddr);
    }

    /* the first SEND (the responder's general path: the source is new),
     * received and completed, then one more poll of each CQ with nothing
     * to take */
    void introduce()
    {
        dcx_wc_t wc;

        ASSERT_EQ(0, post(DCX_WR_SEND, 99));
        ASSERT_EQ(1, poll_until(rx_cq, &wc));
        ASSERT_EQ(1, poll_until(n.cq, &wc));
        ASSERT_EQ(DCX_WC_SUCCESS, wc.status);
        ASSERT_EQ(0, dcx_cq_poll(n.cq, 1, &wc));
        ASSERT_EQ(0, dcx_cq_poll(rx_cq, 1, &wc));
    }

    static int poll_until(dcx_cq_t *cq, dcx_wc_t *wc)
    {
        double end = now_s() + 10.0;
        int r;

        while (((r = dcx_cq_poll(cq, 1, wc)) == 0) && (now_s() < end)) {
        }
        return r;
    }

    int idle() const
    {
        return __atomic_load_n(&soft_dev(n.dev)->engine_idle, __ATOMIC_RELAXED);
    }

    uint64_t passes() const { return soft_dev(n.dev)->app_passes; }
};

} // namespace

/* A ping-pong's half on one device: the poll of the sender's CQ after an
 * inline SEND to its own DCT serves it in a ring pass, whose table
 * acknowledgement is to the poller's own DCI: the SEND completes from the
 * table in that poll (not at the next one, by an acknowledgement pass),
 * the engine is idle and the consumed slot cleared; the poll of the
 * receive CQ then runs no pass at all, only the drain.  Each round: two
 * locked polls, one ring pass, no whole pass. */
TEST_F(soft, ring_pass_completes_own_dci_from_table)
{
    own_pair p;
    dcx_wc_t wc[4];

    ASSERT_EQ(0, p.open(fabric));
    p.introduce();
    for (uint64_t i = 0; i < 8; ++i) {
        SCOPED_TRACE(i);
        ASSERT_EQ(0, p.post(DCX_WR_SEND, 100 + i));
        ASSERT_EQ(SOFT_ENGINE_WAIT, p.idle()) << "not on the light path";
        dcx_soft_stats_t s0 = dev_stats(p.n);
        uint64_t passes     = p.passes();

        ASSERT_EQ(1, dcx_cq_poll(p.n.cq, 4, wc));
        EXPECT_EQ(DCX_WC_SUCCESS, wc[0].status);
        EXPECT_EQ(DCX_WC_SEND, wc[0].opcode);
        EXPECT_EQ(100 + i, wc[0].wr_id);
        dcx_soft_stats_t s1 = dev_stats(p.n);
        EXPECT_EQ(s0.ring_passes + 1, s1.ring_passes);
        EXPECT_EQ(s0.locked_polls + 1, s1.locked_polls);
        EXPECT_EQ(s0.acks_in_table + 1, s1.acks_in_table);
        EXPECT_EQ(s0.table_completions + 1, s1.table_completions);
        EXPECT_EQ(s0.rx_packets + 1, s1.rx_packets) << "an ACK packet came";
        EXPECT_EQ(passes, p.passes()) << "a whole engine pass ran";
        EXPECT_EQ(SOFT_ENGINE_IDLE, p.idle());
        soft_port_hdr_t *hdr = soft_dev(p.n.dev)->hdr;
        EXPECT_EQ(hdr->req.head, hdr->req.freed) << "slot not cleared";

        ASSERT_EQ(1, dcx_cq_poll(p.rx_cq, 4, wc));
        EXPECT_EQ(DCX_WC_SUCCESS, wc[0].status);
        EXPECT_EQ(DCX_WC_RECV, wc[0].opcode);
        EXPECT_EQ(8u, wc[0].byte_len);
        EXPECT_EQ(p.n.dci->qp_num, wc[0].src_qp);
        uint64_t v = 0;
        memcpy(&v, p.buf.data() + wc[0].wr_id * 64, sizeof(v));
        EXPECT_EQ(100 + i, v);
        dcx_soft_stats_t s2 = dev_stats(p.n);
        EXPECT_EQ(s1.ring_passes, s2.ring_passes);
        EXPECT_EQ(s1.locked_polls + 1, s2.locked_polls);
        EXPECT_EQ(passes, p.passes());
        EXPECT_EQ(0, dcx_cq_poll(p.n.cq, 4, wc));
        EXPECT_EQ(0, dcx_cq_poll(p.rx_cq, 4, wc));
    }
}

/* The same with the send CQ armed: the ring pass leaves the SEND to the
 * general walk, which fires the channel (a completion from the table
 * stops before an armed CQ), and the moved ack line sends the next poll
 * to a whole pass that completes it.  The event is not lost. */
TEST_F(soft, ring_pass_own_dci_armed_cq_bad_flow)
{
    own_pair p;
    dcx_cq_t *cq = nullptr;
    dcx_wc_t wc[4];

    ASSERT_EQ(0, p.open(fabric, true));
    p.introduce();
    ASSERT_EQ(0, dcx_cq_req_notify(p.n.cq));
    ASSERT_EQ(0, p.post(DCX_WR_SEND, 7));
    ASSERT_EQ(SOFT_ENGINE_WAIT, p.idle());
    dcx_soft_stats_t s0 = dev_stats(p.n);
    uint64_t passes     = p.passes();

    ASSERT_EQ(0, dcx_cq_poll(p.n.cq, 4, wc));
    dcx_soft_stats_t s1 = dev_stats(p.n);
    EXPECT_EQ(s0.ring_passes + 1, s1.ring_passes);
    EXPECT_EQ(s0.table_completions, s1.table_completions);
    EXPECT_EQ(SOFT_ENGINE_WAIT, p.idle());
    EXPECT_EQ(EAGAIN, dcx_comp_channel_get_event(p.ch, &cq));

    ASSERT_EQ(1, dcx_cq_poll(p.n.cq, 4, wc));
    EXPECT_EQ(DCX_WC_SUCCESS, wc[0].status);
    EXPECT_EQ(7u, wc[0].wr_id);
    EXPECT_EQ(passes + 1, p.passes()) << "no whole pass";
    ASSERT_EQ(0, dcx_comp_channel_get_event(p.ch, &cq));
    EXPECT_EQ(p.n.cq, cq);
    ASSERT_EQ(1, dcx_cq_poll(p.rx_cq, 4, wc));
    EXPECT_EQ(DCX_WC_RECV, wc[0].opcode);
}

/* A SEND and a refused RDMA WRITE to the device's own DCT, served in one
 * ring pass: the SEND's table acknowledgement goes out before the WRITE's
 * NAK, which lands in the device's own response ring; the ring pass then
 * leaves both to a whole pass (the response ring first), and they
 * complete in order: SEND successful, WRITE with REM_ACCESS_ERR. */
TEST_F(soft, ring_pass_own_dci_nak_in_response_ring_bad_flow)
{
    own_pair p;
    dcx_wc_t wc[4];

    ASSERT_EQ(0, p.open(fabric));
    p.introduce();
    std::vector<uint8_t> before = p.buf;
    ASSERT_EQ(0, p.post(DCX_WR_SEND, 1));
    ASSERT_EQ(0, p.post(DCX_WR_RDMA_WRITE, 2, p.mr->rkey ^ 0x5500u,
                        (uintptr_t)p.buf.data() + 32 * 64));
    dcx_soft_stats_t s0 = dev_stats(p.n);

    ASSERT_EQ(0, dcx_cq_poll(p.n.cq, 4, wc));
    dcx_soft_stats_t s1 = dev_stats(p.n);
    EXPECT_EQ(s0.ring_passes + 1, s1.ring_passes);
    EXPECT_EQ(s0.remote_access_errors + 1, s1.remote_access_errors);
    EXPECT_EQ(s0.table_completions, s1.table_completions);
    EXPECT_NE(SOFT_ENGINE_IDLE, p.idle());

    ASSERT_EQ(2, p.n.poll(wc, 2));
    EXPECT_EQ(DCX_WC_SUCCESS, wc[0].status);
    EXPECT_EQ(1u, wc[0].wr_id);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, wc[1].status);
    EXPECT_EQ(2u, wc[1].wr_id);
    ASSERT_EQ(1, dcx_cq_poll(p.rx_cq, 4, wc));
    EXPECT_EQ(DCX_WC_RECV, wc[0].opcode);
    uint64_t v = 0;
    memcpy(&v, p.buf.data() + wc[0].wr_id * 64, sizeof(v));
    EXPECT_EQ(1u, v);
    EXPECT_TRUE(std::equal(before.begin() + 128, before.end(),
                           p.buf.begin() + 128))
        << "the refused WRITE wrote";
}

/* dcx_soft_dct_purge: a DCT's receive completions not yet polled are
 * dropped, the DCI's on the same CQ stay */
TEST_F(soft, dct_purge)
{
    const uint64_t key = 0x9d9d0004ull;
    std::vector<uint8_t> buf(8192, 0);
    dcx_mr_t *mr;
    dcx_wc_t wc[2];
    node n;

    ASSERT_EQ(0, open_loopback(n, fabric, key, buf, &mr));
    memset(buf.data(), 0x5a, 64);
    dcx_sge_t r = {(uintptr_t)buf.data() + 4096, 64, mr->lkey};
    dcx_sge_t s = {(uintptr_t)buf.data(), 64, mr->lkey};
    ASSERT_EQ(0, dcx_srq_post_recv(n.srq, 5, &r, 1));
    dcx_send_wr_t w = n.loop_wr(DCX_WR_SEND, key, &s, 0, 0);
    w.wr_id         = 6;
    ASSERT_EQ(0, dcx_qp_post_send(n.dci, &w));
    /* the receive executes (the device's helper runs it) without a poll:
     * its completion is in the CQ once the bytes landed */
    for (int i = 0; (i < 5000) && (__atomic_load_n(&buf[4096 + 63],
                                                   __ATOMIC_ACQUIRE) != 0x5a);
         ++i) {
        usleep(1000);
    }
    ASSERT_EQ(0x5a, buf[4096 + 63]);
    ASSERT_EQ(0, dcx_soft_dct_purge(n.dct));
    ASSERT_EQ(1, n.poll(wc, 2, 2.0));
    EXPECT_EQ(6u, wc[0].wr_id);
    EXPECT_EQ(DCX_WC_SEND, wc[0].opcode);
}

TEST_F(soft, dct_purge_bad_flow)
{
    std::vector<uint8_t> buf(4096);
    dcx_mr_t *mr;
    node n;

    ASSERT_EQ(0, open_loopback(n, fabric, 1, buf, &mr));
    log_counter log;
    EXPECT_EQ(EINVAL, dcx_soft_dct_purge(n.dci));
    EXPECT_EQ(1, log.lines());
}
