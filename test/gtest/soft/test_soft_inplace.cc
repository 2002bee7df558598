/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: receives in place (DCX_SRQ_F_IN_PLACE).  A message of at
 * least SOFT_IP_MIN bytes that a poll of the receive's CQ takes and returns
 * completes with its bytes where they arrived, in the port's request ring
 * (DCX_WC_FLAG_IN_PLACE, wc.data), its receive taken but not written.  The
 * slot is held, through any number of later messages and clears, until
 * its dcx_cq_release or the CQ's next poll.  Everything else is copied as
 * before: small messages, messages a pass of dcx_dev_progress serves,
 * those the poll does not return, SRQs that did not ask.
 */
#include "soft_fixture.h"

extern "C" {
#include "soft/soft.h"
}

#include <vector>

using namespace soft_test;

namespace {

const uint64_t KEY   = 0x1b1a;
const unsigned RECVS = 512; /* receives posted on b, SLOT bytes each */
const unsigned SLOT  = 1024;
const unsigned BIG   = 512; /* in place (>= SOFT_IP_MIN) */
const unsigned SMALL = 32;  /* copied (< SOFT_IP_MIN) */

/* a sends to b's DCT, whose SRQ takes receives in place unless told not
 * to; both helpers stopped (only the calls below run the engines) */
struct ip_pair {
    node a, b;
    std::vector<uint8_t> abuf = std::vector<uint8_t>(600 * SLOT);
    std::vector<uint8_t> bbuf = std::vector<uint8_t>(RECVS * SLOT, 0xee);
    dcx_mr_t *amr = nullptr, *bmr = nullptr;

    int open(const std::string &fabric, uint32_t srq_flags = DCX_SRQ_F_IN_PLACE)
    {
        uint8_t addr[DCX_DEV_ADDR_MAX];
        size_t len = sizeof(addr);
        int ret;

        if (((ret = a.open(fabric.c_str())) != 0) ||
            ((ret = b.open(fabric.c_str())) != 0) ||
            ((ret = a.make_dci(256)) != 0) ||
            ((ret = a.reg(abuf.data(), abuf.size(), DCX_ACCESS_LOCAL_WRITE,
                          &amr)) != 0) ||
            ((ret = b.make_target(KEY, 0, RECVS, 0, srq_flags)) != 0) ||
            ((ret = b.reg(bbuf.data(), bbuf.size(), DCX_ACCESS_LOCAL_WRITE,
                          &bmr)) != 0) ||
            ((ret = dcx_dev_port_addr(b.dev, addr, &len)) != 0) ||
            ((ret = a.connect(addr, len)) != 0)) {
            return ret;
        }
        soft_helper_stop(soft_dev(a.dev));
        soft_helper_stop(soft_dev(b.dev));
        std::vector<dcx_recv_t> l = recv_list(bbuf, bmr, 0, RECVS, SLOT);
        unsigned posted           = 0;
        int r = dcx_srq_post_recv_list(b.srq, l.data(), RECVS, SLOT, &posted);

        return (r != 0) ? r : (posted == RECVS) ? 0 : ENOSPC;
    }

    /* a signalled SEND of len bytes from a's buffer, each byte id's mark
     * (flags: DCX_SEND_INLINE for the compact packet of the light path) */
    int send(uint64_t id, uint32_t len, uint8_t flags = 0)
    {
        uint8_t *p = abuf.data() + (id % 600) * SLOT;
        dcx_sge_t s;
        dcx_send_wr_t wr;

        memset(p, mark(id), len);
        s.addr   = (uintptr_t)p;
        s.length = len;
        s.lkey   = amr->lkey;
        memset(&wr, 0, sizeof(wr));
        wr.wr_id       = id;
        wr.opcode      = DCX_WR_SEND;
        wr.flags       = DCX_SEND_SIGNALED | flags;
        wr.num_sge     = 1;
        wr.sg_list     = &s;
        wr.dest.ah     = a.ah;
        wr.dest.dctn   = b.dct->qp_num;
        wr.dest.dc_key = KEY;
        return dcx_qp_post_send(a.dci, &wr);
    }

    static uint8_t mark(uint64_t id) { return (uint8_t)(0x40 + id % 97); }

    /* the first message of a source takes the general path: one SEND,
     * received and completed (receive 0) */
    void introduce()
    {
        dcx_wc_t wc;

        ASSERT_EQ(0, send(1000, SMALL));
        ASSERT_EQ(1, b.poll(&wc, 1));
        ASSERT_EQ(DCX_WC_SUCCESS, wc.status);
        ASSERT_EQ(1, a.poll(&wc, 1));
        ASSERT_EQ(DCX_WC_SUCCESS, wc.status);
    }

    /* a's device runs until n packets wait in b's request ring (b does
     * not run) */
    void push(unsigned n)
    {
        soft_ring_t *r = &soft_dev(b.dev)->hdr->req;
        double end     = now_s() + 10.0;

        while ((__atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) - r->head < n) &&
               (now_s() < end)) {
            dcx_dev_progress(a.dev);
        }
        ASSERT_GE(__atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) - r->head, n);
    }

    /* polls b's CQ (max per call) until n completions; the count */
    int take(dcx_wc_t *wc, int n, int max)
    {
        double end = now_s() + 10.0;
        int got    = 0;

        while ((got < n) && (now_s() < end)) {
            dcx_dev_progress(a.dev); /* a's sends go out */
            got += dcx_cq_poll(b.cq, std::min(max, n - got), wc + got);
        }
        return got;
    }

    /* the receive's buffer still holds the fill: nothing written */
    bool untouched(uint64_t wr_id, uint32_t len) const
    {
        for (uint32_t i = 0; i < len; ++i) {
            if (bbuf[wr_id * SLOT + i] != 0xee) {
                return false;
            }
        }
        return true;
    }

    static bool all(const void *p, uint8_t v, uint32_t len)
    {
        for (uint32_t i = 0; i < len; ++i) {
            if (((const uint8_t *)p)[i] != v) {
                return false;
            }
        }
        return true;
    }
};

soft_cq_t *scq(const node &n)
{
    return (soft_cq_t *)n.cq;
}

} // namespace

/* A large message completes in place: its bytes at wc.data, its receive
 * taken and not written; a small one is copied into its receive. */
TEST_F(soft, recv_in_place_hands_over_the_message)
{
    ip_pair p;
    dcx_wc_t wc[2];

    ASSERT_EQ(0, p.open(fabric));
    p.introduce();
    uint64_t placed = dev_stats(p.b).recv_in_place;

    ASSERT_EQ(0, p.send(1, BIG));
    ASSERT_EQ(1, p.take(wc, 1, 4));
    EXPECT_EQ(DCX_WC_SUCCESS, wc[0].status);
    EXPECT_EQ(DCX_WC_RECV, wc[0].opcode);
    EXPECT_EQ(1u, wc[0].wr_id);
    EXPECT_EQ(BIG, wc[0].byte_len);
    ASSERT_TRUE(wc[0].flags & DCX_WC_FLAG_IN_PLACE);
    EXPECT_TRUE(ip_pair::all(wc[0].data, ip_pair::mark(1), BIG));
    EXPECT_EQ(0u, ((uintptr_t)wc[0].data + 1) % 8)
        << "the bytes after a one-byte header are not 8-byte aligned";
    EXPECT_TRUE(p.untouched(1, SLOT));
    EXPECT_EQ(placed + 1, dev_stats(p.b).recv_in_place);
    dcx_cq_release(p.b.cq);

    ASSERT_EQ(0, p.send(2, SMALL));
    ASSERT_EQ(1, p.take(wc, 1, 4));
    EXPECT_EQ(2u, wc[0].wr_id);
    EXPECT_FALSE(wc[0].flags & DCX_WC_FLAG_IN_PLACE);
    EXPECT_TRUE(ip_pair::all(p.bbuf.data() + 2 * SLOT, ip_pair::mark(2),
                             SMALL));
    EXPECT_EQ(placed + 1, dev_stats(p.b).recv_in_place);
    ASSERT_EQ(2, p.a.poll(wc, 2));
    EXPECT_EQ(DCX_WC_SUCCESS, wc[0].status);
    EXPECT_EQ(DCX_WC_SUCCESS, wc[1].status);
}

/* A message in the compact packet of the light path (inline, at most
 * max_inline bytes) is placed too, aligned as a whole packet's payload; one
 * below SOFT_IP_MIN, whose bytes share the header's lines, is copied. */
TEST_F(soft, recv_in_place_light_packet_aligned)
{
    ip_pair p;
    dcx_wc_t wc[2];

    ASSERT_EQ(0, p.open(fabric));
    p.introduce();
    dcx_soft_stats_t before = dev_stats(p.a);
    uint64_t placed         = dev_stats(p.b).recv_in_place;

    ASSERT_EQ(0, p.send(1, 200, DCX_SEND_INLINE));
    ASSERT_EQ(1, p.take(wc, 1, 4));
    EXPECT_EQ(DCX_WC_SUCCESS, wc[0].status);
    EXPECT_EQ(200u, wc[0].byte_len);
    ASSERT_TRUE(wc[0].flags & DCX_WC_FLAG_IN_PLACE);
    EXPECT_TRUE(ip_pair::all(wc[0].data, ip_pair::mark(1), 200));
    EXPECT_EQ(0u, ((uintptr_t)wc[0].data + 1) % 8)
        << "the bytes after a one-byte header are not 8-byte aligned";
    EXPECT_TRUE(p.untouched(1, SLOT));
    dcx_cq_release(p.b.cq);

    ASSERT_EQ(0, p.send(2, SMALL, DCX_SEND_INLINE));
    ASSERT_EQ(1, p.take(wc, 1, 4));
    EXPECT_FALSE(wc[0].flags & DCX_WC_FLAG_IN_PLACE);
    EXPECT_TRUE(ip_pair::all(p.bbuf.data() + 2 * SLOT, ip_pair::mark(2),
                             SMALL));
    EXPECT_EQ(placed + 1, dev_stats(p.b).recv_in_place);
    EXPECT_EQ(before.light_posts + 2, dev_stats(p.a).light_posts)
        << "not the light path's compact packets";
    ASSERT_EQ(2, p.a.poll(wc, 2));
    EXPECT_EQ(DCX_WC_SUCCESS, wc[0].status);
    EXPECT_EQ(DCX_WC_SUCCESS, wc[1].status);
}

/* The slot of a message taken in place is not cleared or reused until the
 * release: more than a ring's worth of messages after it, served by passes
 * of dcx_dev_progress (whose clears would free it), leave its bytes as
 * they were and stop at the ring's end; the release lets them all in. */
TEST_F(soft, recv_in_place_slot_held_until_release_bad_flow)
{
    ip_pair p;
    const unsigned more = SOFT_RING_SLOTS + 40;
    std::vector<dcx_wc_t> wc(more + 1);

    ASSERT_EQ(0, p.open(fabric));
    p.introduce();
    ASSERT_EQ(0, p.send(1, BIG));
    ASSERT_EQ(1, p.take(wc.data(), 1, 4));
    ASSERT_TRUE(wc[0].flags & DCX_WC_FLAG_IN_PLACE);
    const void *held = wc[0].data;

    for (unsigned i = 0; i < more; ++i) {
        ASSERT_EQ(0, p.send(2 + i, BIG)) << i;
    }
    double end = now_s() + 0.3;
    while (now_s() < end) {
        dcx_dev_progress(p.a.dev);
        dcx_dev_progress(p.b.dev);
    }
    EXPECT_TRUE(ip_pair::all(held, ip_pair::mark(1), BIG))
        << "the held slot was cleared or written";
    soft_dev_t *bd = soft_dev(p.b.dev);
    uint64_t pos   = scq(p.b)->ip_pos[0];
    EXPECT_LE(bd->hdr->req.freed, pos) << "freed past it";
    EXPECT_LE(bd->hdr->req.head, pos + SOFT_RING_SLOTS)
        << "the ring went past the held slot";
    EXPECT_GT(bd->hdr->req.head, pos + 1) << "later messages stopped early";

    dcx_cq_release(p.b.cq);
    ASSERT_EQ((int)more, p.take(wc.data(), more, 64));
    for (unsigned i = 0; i < more; ++i) {
        ASSERT_EQ(DCX_WC_SUCCESS, wc[i].status) << i;
        EXPECT_EQ(2u + i, wc[i].wr_id) << i;
        const void *data = (wc[i].flags & DCX_WC_FLAG_IN_PLACE) ?
                               wc[i].data :
                               p.bbuf.data() + wc[i].wr_id * SLOT;
        EXPECT_TRUE(ip_pair::all(data, ip_pair::mark(2 + i), BIG)) << i;
        if (wc[i].flags & DCX_WC_FLAG_IN_PLACE) {
            dcx_cq_release(p.b.cq);
        }
    }
    ASSERT_EQ((int)more + 1, p.a.poll(wc.data(), more + 1, 10.0));
    for (unsigned i = 0; i < more + 1; ++i) {
        EXPECT_EQ(DCX_WC_SUCCESS, wc[i].status) << i;
    }
}

/* Only what the poll returns is placed: of four messages served by a poll
 * of at most two, the first two are in place, the other two copied; a
 * pass that no poll of the CQ runs (dcx_dev_progress) copies. */
TEST_F(soft, recv_in_place_only_what_the_poll_returns)
{
    ip_pair p;
    dcx_wc_t wc[4];

    ASSERT_EQ(0, p.open(fabric));
    p.introduce();
    for (unsigned i = 0; i < 4; ++i) {
        ASSERT_EQ(0, p.send(1 + i, BIG));
    }
    p.push(4);
    ASSERT_EQ(2, p.take(wc, 2, 2));
    ASSERT_EQ(2, p.take(wc + 2, 2, 2));
    for (unsigned i = 0; i < 4; ++i) {
        EXPECT_EQ(1u + i, wc[i].wr_id) << i;
        EXPECT_EQ(i < 2, !!(wc[i].flags & DCX_WC_FLAG_IN_PLACE)) << i;
        const void *data = (i < 2) ? wc[i].data :
                                     p.bbuf.data() + wc[i].wr_id * SLOT;
        EXPECT_TRUE(ip_pair::all(data, ip_pair::mark(1 + i), BIG)) << i;
    }

    ASSERT_EQ(0, p.send(5, BIG));
    double end = now_s() + 0.2;
    while (now_s() < end) {
        dcx_dev_progress(p.a.dev);
        dcx_dev_progress(p.b.dev);
    }
    ASSERT_EQ(1, p.take(wc, 1, 4));
    EXPECT_EQ(5u, wc[0].wr_id);
    EXPECT_FALSE(wc[0].flags & DCX_WC_FLAG_IN_PLACE);
    EXPECT_TRUE(ip_pair::all(p.bbuf.data() + 5 * SLOT, ip_pair::mark(5), BIG));
}

/* dcx_cq_release gives back the oldest held message, one per call, never
 * one the caller was not returned: the ring's clears then stop at the next
 * one held. */
TEST_F(soft, recv_in_place_release_one_by_one)
{
    ip_pair p;
    dcx_wc_t wc[2];

    ASSERT_EQ(0, p.open(fabric));
    p.introduce();
    ASSERT_EQ(0, p.send(1, BIG));
    ASSERT_EQ(0, p.send(2, BIG));
    p.push(2);
    ASSERT_EQ(2, p.take(wc, 2, 4));
    ASSERT_TRUE(wc[0].flags & wc[1].flags & DCX_WC_FLAG_IN_PLACE);
    soft_cq_t *cq  = scq(p.b);
    soft_dev_t *bd = soft_dev(p.b.dev);
    EXPECT_EQ(cq->ip_released + 2, cq->ip_made);
    dcx_cq_release(p.b.cq);
    EXPECT_EQ(cq->ip_released + 1, cq->ip_made);
    EXPECT_EQ(cq->ip_pos[cq->ip_released % SOFT_IP_MAX],
              soft_ip_clear_end(bd, bd->hdr->req.head))
        << "clears do not stop at the second message";
    EXPECT_TRUE(ip_pair::all(wc[1].data, ip_pair::mark(2), BIG));
    dcx_cq_release(p.b.cq);
    dcx_cq_release(p.b.cq); /* none left: nothing */
    EXPECT_EQ(cq->ip_released, cq->ip_made);
    EXPECT_EQ(cq->ip_released, cq->ip_polled);
    EXPECT_EQ(bd->hdr->req.head, soft_ip_clear_end(bd, bd->hdr->req.head));
}

/* Without dcx_cq_release, the CQ's next poll releases what the last one
 * returned (and nothing it has not returned). */
TEST_F(soft, recv_in_place_next_poll_releases)
{
    ip_pair p;
    dcx_wc_t wc;

    ASSERT_EQ(0, p.open(fabric));
    p.introduce();
    ASSERT_EQ(0, p.send(1, BIG));
    ASSERT_EQ(1, p.take(&wc, 1, 4));
    ASSERT_TRUE(wc.flags & DCX_WC_FLAG_IN_PLACE);
    soft_cq_t *cq = scq(p.b);
    EXPECT_EQ(cq->ip_made, cq->ip_released + 1);
    EXPECT_EQ(0, dcx_cq_poll(p.b.cq, 4, &wc));
    /* the poll may find nothing without the lock: one that takes it */
    ASSERT_EQ(0, p.send(2, SMALL));
    ASSERT_EQ(1, p.take(&wc, 1, 4));
    EXPECT_EQ(cq->ip_made, cq->ip_released);
}

/* An SRQ that did not ask, and a device told not to (SOFT_RECV_IN_PLACE=n),
 * copy every message; the device then refuses the flag. */
TEST_F(soft, recv_in_place_off_copies)
{
    ip_pair p;
    dcx_wc_t wc;

    ASSERT_EQ(0, p.open(fabric, 0));
    p.introduce();
    ASSERT_EQ(0, p.send(1, BIG));
    ASSERT_EQ(1, p.take(&wc, 1, 4));
    EXPECT_FALSE(wc.flags & DCX_WC_FLAG_IN_PLACE);
    EXPECT_TRUE(ip_pair::all(p.bbuf.data() + SLOT, ip_pair::mark(1), BIG));
    EXPECT_EQ(0u, dev_stats(p.b).recv_in_place);

    dcx_soft_limits_t l;
    node n;
    memset(&l, 0, sizeof(l));
    l.recv_copy = 1;
    ASSERT_EQ(0, n.open(fabric.c_str(), &l));
    EXPECT_FALSE(n.dev->caps.flags & DCX_CAP_RECV_IN_PLACE);
    log_counter errors;
    EXPECT_EQ(EOPNOTSUPP, n.make_target(KEY, 0, 16, 0, DCX_SRQ_F_IN_PLACE));
    EXPECT_EQ(1, errors.lines());
}

/* Bad attributes: an unknown flag (in place on a tag-matching SRQ is
 * allowed: test_soft_tm_inplace.cc). */
TEST_F(soft, recv_in_place_bad_attr_bad_flow)
{
    node n;
    dcx_srq_attr_t attr;
    dcx_srq_t *srq = nullptr;

    ASSERT_EQ(0, n.open(fabric.c_str()));
    ASSERT_EQ(0, n.make_cq());
    EXPECT_TRUE(n.dev->caps.flags & DCX_CAP_RECV_IN_PLACE);
    memset(&attr, 0, sizeof(attr));
    attr.type    = DCX_SRQ_BASIC;
    attr.max_wr  = 16;
    attr.max_sge = 1;
    attr.cq      = n.cq;
    attr.flags   = 1u << 7;
    log_counter errors;
    EXPECT_EQ(EINVAL, dcx_srq_create(n.pd, &attr, &srq));
    attr.type        = DCX_SRQ_TM;
    attr.tm_max_tags = 15;
    attr.tm_max_ops  = 8;
    attr.flags       = DCX_SRQ_F_IN_PLACE | (1u << 7);
    EXPECT_EQ(EINVAL, dcx_srq_create(n.pd, &attr, &srq));
    EXPECT_EQ(2, errors.lines());
    EXPECT_EQ(nullptr, srq);
}

/* A message larger than its receive fails as without in place (nothing
 * placed, the receive's buffer unwritten), and the next one is placed. */
TEST_F(soft, recv_in_place_too_long_bad_flow)
{
    ip_pair p;
    dcx_wc_t wc[2];

    ASSERT_EQ(0, p.open(fabric));
    p.introduce();
    ASSERT_EQ(0, p.send(1, SLOT + 8));
    ASSERT_EQ(1, p.take(wc, 1, 4));
    EXPECT_EQ(DCX_WC_LOC_LEN_ERR, wc[0].status);
    EXPECT_EQ(1u, wc[0].wr_id);
    EXPECT_FALSE(wc[0].flags & DCX_WC_FLAG_IN_PLACE);
    EXPECT_EQ(0u, dev_stats(p.b).recv_in_place);
    EXPECT_TRUE(p.untouched(1, SLOT));
    ASSERT_EQ(1, p.a.poll(wc, 1));
    EXPECT_EQ(DCX_WC_REM_INV_REQ_ERR, wc[0].status);
}
