/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the light post of a SEND of one registered sge
 * (soft_req_post_sge).  Copied from the sge straight into the target's
 * ring slot within the post, where the device copies its own sg lists
 * plainly (the consumer reports unmaps); otherwise, and for every WR it
 * does not take, the general path, with the same results: every byte at
 * every size up to the MTU, a retransmission after RNR from the sge, a bad
 * or deregistered key failing the WR, and no light post at all while
 * unmaps are not reported or a strided key exists.
 */
#include "soft_pair_fixture.h"

#include <algorithm>

using namespace soft_pair_test;

/* Every size around the slot's lines and up to the MTU goes through the
 * light post, byte for byte; one byte more than the MTU is split by the
 * general path and arrives intact after them. */
TEST_F(soft, light_sge_sends_every_size)
{
    sge_pair p;
    uint32_t mtu;

    ASSERT_EQ(0, p.open(fabric));
    mtu = dcx_dev_caps(p.a.dev)->mtu;
    ASSERT_LT(mtu, SLOT);
    std::vector<uint32_t> sizes = {1,    8,    57,      64,   65,
                                   255,  256,  1000,    4095, 4096,
                                   4097, 9000, mtu - 1, mtu,  mtu + 1};
    ASSERT_EQ(0, p.post(0, sizes.size()));
    dcx_soft_stats_t before = dev_stats(p.a);
    for (unsigned m = 0; m < sizes.size(); ++m) {
        std::vector<dcx_wc_t> wa, wb;

        ASSERT_EQ(0, p.send(m, sizes[m])) << "message " << m;
        ASSERT_TRUE(p.take(wa, 1, wb, 1)) << "message " << m;
        EXPECT_EQ(DCX_WC_SUCCESS, wa[0].status) << "message " << m;
        EXPECT_EQ(m, wa[0].wr_id);
        ASSERT_EQ(DCX_WC_SUCCESS, wb[0].status) << "message " << m;
        EXPECT_EQ(sizes[m], wb[0].byte_len) << "message " << m;
        EXPECT_TRUE(p.holds(wb[0].wr_id, m, sizes[m])) << "message " << m;
    }
    dcx_soft_stats_t after = dev_stats(p.a);
    /* the first message maps the port and may take the light post too;
     * only the one above the MTU cannot */
    EXPECT_EQ(sizes.size() - 1, after.light_posts - before.light_posts);
}

/* A light SEND of one sge is a light packet as an inline one is: the
 * header and up to 41 bytes (SOFT_LIGHT_LINE2) in the slot's first two
 * cache lines, the payload 7 bytes past imm, nothing written past them
 * (up to SOFT_LINE_WIDE_MAX bytes take the first line only:
 * test_soft_line.cc).
 * A longer one is flagged SOFT_PKT_FAR and ends at the slot's end
 * (soft_light_far_off): nothing is written between the header's lines
 * and it.  (A full header put its payload's first byte on the fourth
 * line, and the lines after the header's.) */
TEST_F(soft, light_sge_send_layout)
{
    sge_pair p;
    const uint32_t lens[] = {SOFT_LINE_WIDE_MAX + 1, SOFT_LIGHT_LINE2,
                             SOFT_LIGHT_LINE2 + 1, 4096};

    ASSERT_EQ(0, p.open(fabric));
    p.introduce(1 + sizeof(lens) / sizeof(lens[0]));
    soft_port_hdr_t *hdr = ((soft_dev_t *)p.b.dev)->hdr;
    for (unsigned k = 0; k < sizeof(lens) / sizeof(lens[0]); ++k) {
        const uint64_t m   = 1 + k;
        const uint32_t len = lens[k];
        const bool far     = len > SOFT_LIGHT_LINE2;
        std::vector<dcx_wc_t> wa, wb;

        {
            /* nobody serves the slot while we look */
            engine_held held(p.b.dev);
            dcx_soft_stats_t before = dev_stats(p.a);
            ASSERT_EQ(0, p.send(m, len));
            ASSERT_EQ(1u, dev_stats(p.a).light_posts - before.light_posts);
            uint64_t pos = __atomic_load_n(&hdr->req.tail, __ATOMIC_ACQUIRE) -
                           1;
            ASSERT_LT(pos, (uint64_t)SOFT_RING_SLOTS)
                << "a slot written before";
            const uint32_t size   = hdr->req.slot_size;
            const soft_slot_t *ss = p.newest_slot();
            const uint8_t *slot   = (const uint8_t *)ss;
            const size_t off      = far ? soft_light_far_off(size, len) :
                                          SOFT_LIGHT_OFF;
            EXPECT_EQ(pos + 1, __atomic_load_n(&ss->seq, __ATOMIC_ACQUIRE));
            EXPECT_TRUE(ss->pkt.flags & SOFT_PKT_LIGHT) << len << " B";
            EXPECT_EQ(far, !!(ss->pkt.flags & SOFT_PKT_FAR)) << len << " B";
            EXPECT_EQ(len, ss->pkt.len);
            EXPECT_EQ(7u, off % 8) << len << " B";
            EXPECT_LE(off + len, size) << len << " B";
            size_t stray = 0;
            for (size_t b = far ? 128 : SOFT_LIGHT_OFF + len; b < size; ++b) {
                stray += ((b < off) || (b >= off + len)) && (slot[b] != 0);
            }
            EXPECT_TRUE(matches(slot + off, m, len))
                << len << " B: payload not at " << off;
            EXPECT_EQ(0u, stray)
                << len << " B: bytes outside header and payload";
        }

        ASSERT_TRUE(p.take(wa, 1, wb, 1)) << "message " << m;
        EXPECT_EQ(DCX_WC_SUCCESS, wa[0].status);
        ASSERT_EQ(DCX_WC_SUCCESS, wb[0].status);
        EXPECT_EQ(len, wb[0].byte_len);
        EXPECT_TRUE(p.holds(wb[0].wr_id, m, len)) << "message " << m;
    }
}

/* A far packet whose length was changed in the slot to one no slot holds
 * (a corrupted or forged packet) is read after the light header, where
 * the responder drops it as malformed, reading nothing past the slot; the
 * requester's retransmission, gathered from the sge again, delivers the
 * message intact. */
TEST_F(soft, light_sge_far_length_forged_bad_flow)
{
    sge_pair p;
    std::vector<dcx_wc_t> wa, wb;

    ASSERT_EQ(0, p.open(fabric));
    p.introduce(2);
    soft_port_hdr_t *hdr = ((soft_dev_t *)p.b.dev)->hdr;

    {
        engine_held held(p.b.dev);
        ASSERT_EQ(0, p.send(1, 4096));
        soft_slot_t *ss = p.newest_slot();
        ASSERT_TRUE(ss->pkt.flags & SOFT_PKT_FAR);
        ss->pkt.len   = hdr->req.slot_size; /* no slot holds that far */
        void *payload = soft_slot_payload(ss, hdr->req.slot_size);
        EXPECT_EQ((uint8_t *)ss + SOFT_LIGHT_OFF, payload);
    }

    ASSERT_TRUE(p.take(wa, 1, wb, 1));
    EXPECT_EQ(DCX_WC_SUCCESS, wa[0].status);
    ASSERT_EQ(DCX_WC_SUCCESS, wb[0].status);
    EXPECT_EQ(4096u, wb[0].byte_len);
    EXPECT_TRUE(p.holds(wb[0].wr_id, 1, 4096));
}

/* A SEND of an sg list (an am_zcopy's header and iov) takes the light
 * post too, gathered into the slot in order, a zero-length piece
 * included; after an RNR it is gathered again from the same list. */
TEST_F(soft, light_sge_gathers_an_sg_list)
{
    sge_pair p;
    const std::vector<std::pair<size_t, uint32_t>> pieces = {{0, 8},
                                                             {64, 0},
                                                             {1000, 100},
                                                             {5000, 4000}};
    const uint32_t len                                    = 8 + 100 + 4000;

    ASSERT_EQ(0, p.open(fabric));
    p.introduce(3);
    for (uint64_t m = 1; m <= 2; ++m) {
        std::vector<dcx_wc_t> wa, wb;
        dcx_soft_stats_t before = dev_stats(p.a);

        ASSERT_EQ(0, p.send_list(m, pieces));
        EXPECT_EQ(1u, dev_stats(p.a).light_posts - before.light_posts);
        ASSERT_TRUE(p.take(wa, 1, wb, 1)) << "message " << m;
        EXPECT_EQ(DCX_WC_SUCCESS, wa[0].status);
        ASSERT_EQ(DCX_WC_SUCCESS, wb[0].status);
        EXPECT_EQ(len, wb[0].byte_len);
        EXPECT_TRUE(p.holds(wb[0].wr_id, m, len)) << "message " << m;
    }

    /* no receive posted: refused, then sent again from the list */
    std::vector<dcx_wc_t> wa, wb;
    dcx_soft_stats_t before = dev_stats(p.a);
    ASSERT_EQ(0, p.send_list(3, pieces));
    EXPECT_EQ(1u, dev_stats(p.a).light_posts - before.light_posts);
    p.wait_rnr(before);
    ASSERT_EQ(0, p.post(3, 1));
    ASSERT_TRUE(p.take(wa, 1, wb, 1));
    EXPECT_EQ(DCX_WC_SUCCESS, wa[0].status);
    ASSERT_EQ(DCX_WC_SUCCESS, wb[0].status);
    EXPECT_TRUE(p.holds(wb[0].wr_id, 3, len));
}

/* One piece of the list under a key that is not ours: the light post
 * does not take the SEND, whose WR fails with a local protection error
 * on the general path, nothing of it delivered. */
TEST_F(soft, light_sge_list_bad_key_bad_flow)
{
    sge_pair p;
    std::vector<dcx_wc_t> wa, wb;
    dcx_wc_t wc;

    ASSERT_EQ(0, p.open(fabric));
    p.introduce(2);
    dcx_soft_stats_t before = dev_stats(p.a);
    ASSERT_EQ(0, p.send_list(1, {{0, 8}, {1000, 100}, {5000, 4000}},
                             {0, p.amr->lkey ^ 0x5500, 0}));
    ASSERT_TRUE(p.take(wa, 1, wb, 0));
    EXPECT_EQ(DCX_WC_LOC_PROT_ERR, wa[0].status);
    EXPECT_EQ(1u, wa[0].wr_id);
    EXPECT_EQ(before.light_posts, dev_stats(p.a).light_posts);
    EXPECT_EQ(0, dcx_cq_poll(p.b.cq, 1, &wc));
}

/* To a peer of a smaller MTU, whose slots are smaller: a far payload ends
 * by the end of the peer's slot, as the peer computes it from its own
 * geometry; every size up to that MTU goes light and arrives intact, one
 * byte more takes the general path. */
TEST_F(soft, light_sge_far_in_a_smaller_peer_slot)
{
    sge_pair p;
    dcx_soft_limits_t bl;

    memset(&bl, 0, sizeof(bl));
    bl.mtu = 1024;
    ASSERT_EQ(0, p.open(fabric, true, &bl));
    ASSERT_EQ(1024u, dcx_dev_caps(p.b.dev)->mtu);
    const std::vector<uint32_t> sizes = {41, 42, 500, 1023, 1024, 1025};
    p.introduce((unsigned)sizes.size() + 1);
    const uint32_t size = ((soft_dev_t *)p.b.dev)->hdr->req.slot_size;
    ASSERT_EQ(SOFT_SLOT_SIZE(1024), size);
    for (unsigned k = 0; k < sizes.size(); ++k) {
        const uint64_t m   = 1 + k;
        const uint32_t len = sizes[k];
        std::vector<dcx_wc_t> wa, wb;

        {
            engine_held held(p.b.dev);
            dcx_soft_stats_t before = dev_stats(p.a);
            ASSERT_EQ(0, p.send(m, len));
            const bool light = dev_stats(p.a).light_posts != before.light_posts;
            EXPECT_EQ(len <= 1024, light) << len << " B";
            if (light && (len > SOFT_LIGHT_LINE2)) {
                const soft_slot_t *ss = p.newest_slot();
                EXPECT_TRUE(ss->pkt.flags & SOFT_PKT_FAR) << len << " B";
                EXPECT_TRUE(matches((const uint8_t *)ss +
                                        soft_light_far_off(size, len),
                                    m, len))
                    << len << " B";
            }
        }

        ASSERT_TRUE(p.take(wa, 1, wb, 1)) << "message " << m;
        EXPECT_EQ(DCX_WC_SUCCESS, wa[0].status);
        ASSERT_EQ(DCX_WC_SUCCESS, wb[0].status) << len << " B";
        EXPECT_EQ(len, wb[0].byte_len);
        EXPECT_TRUE(p.holds(wb[0].wr_id, m, len)) << "message " << m;
    }
}

/* Without the consumer's unmap reports our sg lists are copied by the
 * kernel (fault-safe): the general path takes every such SEND. */
TEST_F(soft, light_sge_needs_reported_unmaps)
{
    sge_pair p;
    std::vector<dcx_wc_t> wa, wb;

    ASSERT_EQ(0, p.open(fabric, false));
    ASSERT_EQ(0, p.post(0, 4));
    for (unsigned m = 0; m < 4; ++m) {
        ASSERT_EQ(0, p.send(m, 4096));
    }
    ASSERT_TRUE(p.take(wa, 4, wb, 4));
    for (unsigned m = 0; m < 4; ++m) {
        EXPECT_EQ(DCX_WC_SUCCESS, wa[m].status);
        ASSERT_EQ(DCX_WC_SUCCESS, wb[m].status);
        EXPECT_TRUE(p.holds(wb[m].wr_id, wb[m].wr_id, 4096));
    }
    EXPECT_EQ(0u, dev_stats(p.a).light_posts);
}

/* A light SEND refused for want of a receive (RNR) is sent again after
 * the RNR timer, its bytes gathered from the sge again: they arrive
 * intact once a receive is posted, and the WR completes successfully. */
TEST_F(soft, light_sge_rnr_resends_from_the_sge_bad_flow)
{
    sge_pair p;
    std::vector<dcx_wc_t> wa, wb;

    ASSERT_EQ(0, p.open(fabric));
    p.introduce(1);

    dcx_soft_stats_t before;
    /* b serves it with no receive: RNR, a waits for its timer */
    p.send_into_rnr(1, before);
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_EQ(0, p.post(1, 1));
    ASSERT_TRUE(p.take(wa, 1, wb, 1));
    EXPECT_EQ(DCX_WC_SUCCESS, wa[0].status);
    EXPECT_EQ(1u, wa[0].wr_id);
    ASSERT_EQ(DCX_WC_SUCCESS, wb[0].status);
    EXPECT_EQ(4096u, wb[0].byte_len);
    EXPECT_TRUE(p.holds(1, 1, 4096));
}

/* A key that names nothing, or an sge past its region's end: the light
 * post leaves the WR to the general path, which fails it with a local
 * protection error; nothing reaches the target. */
TEST_F(soft, light_sge_bad_key_bad_flow)
{
    sge_pair p;
    dcx_wc_t wc;

    ASSERT_EQ(0, p.open(fabric));
    p.introduce(4);
    for (int past_end = 0; past_end <= 1; ++past_end) {
        std::vector<dcx_wc_t> wa, wb;
        dcx_soft_stats_t before = dev_stats(p.a);

        /* message 7 sits in abuf's last slot: 4096 bytes from 16 bytes
         * before its end reach past the region */
        ASSERT_EQ(0, past_end ? p.send(7, 4096, 0, SLOT - 16) :
                                p.send(1, 4096, p.amr->lkey ^ 0x5500));
        ASSERT_TRUE(p.take(wa, 1, wb, 0));
        EXPECT_EQ(DCX_WC_LOC_PROT_ERR, wa[0].status) << past_end;
        EXPECT_EQ(past_end ? 7u : 1u, wa[0].wr_id);
        EXPECT_EQ(before.light_posts, dev_stats(p.a).light_posts);
        EXPECT_EQ(0, dcx_cq_poll(p.b.cq, 1, &wc));
        /* the DCI went to ERR: back to RTS for the next one */
        ASSERT_EQ(0, dcx_qp_recover(p.a.dci));
    }
}

/* The region under a light SEND's sge is deregistered while the SEND
 * waits out an RNR: it completes with a local protection error and
 * sends nothing more, as a WQE of the general path does. */
TEST_F(soft, light_sge_key_deregistered_outstanding_bad_flow)
{
    sge_pair p;
    std::vector<dcx_wc_t> wa, wb;
    dcx_wc_t wc;

    ASSERT_EQ(0, p.open(fabric));
    p.introduce(1);

    dcx_soft_stats_t before;
    p.send_into_rnr(1, before);
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_EQ(0, dcx_mr_dereg(p.amr));
    p.a.mrs.erase(std::remove(p.a.mrs.begin(), p.a.mrs.end(), p.amr),
                  p.a.mrs.end());
    p.amr = nullptr;
    ASSERT_EQ(0, p.post(1, 1));
    ASSERT_TRUE(p.take(wa, 1, wb, 0));
    EXPECT_EQ(DCX_WC_LOC_PROT_ERR, wa[0].status);
    EXPECT_EQ(1u, wa[0].wr_id);
    /* nothing arrives for the receive posted after */
    double end = now_s() + 0.2;
    while (now_s() < end) {
        ASSERT_EQ(0, dcx_cq_poll(p.b.cq, 1, &wc));
    }
}
