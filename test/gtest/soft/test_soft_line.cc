/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the one-line form of a light SEND (soft_pkt_is_line): a
 * SEND of at most SOFT_LINE_MAX bytes (an 8-byte am_short) to the port its
 * DCI's previous packet went to lies in its slot's first cache line, the
 * payload over the token's top byte and deliver_ns, and nothing of the
 * second line is written or read; one of at most SOFT_LINE_WIDE_MAX bytes
 * (an 8-byte tagged message: its TMH and the data) to the DCT that packet
 * went to, with the same DC key, lies there too, over the DC key, the
 * token and deliver_ns (the keyless form).  Every other light SEND keeps
 * the two- or more-line form.  The responder, which then has only the
 * token's low 56 bits, finds the port among those it knows: after it lost
 * the DCI's state too, and drops the packet as lost for one it does not
 * know, whose retransmission (whole) delivers it.  A keyless packet it
 * takes only from a DCI whose last whole packet passed that DCT's key
 * check; it drops one it cannot vouch for (source state lost, a wrong key
 * since, the DCT number reused), and the retransmission, whole, has its
 * key checked.
 */
#include "soft_pair_fixture.h"

#include <string>
#include <unistd.h>

using namespace soft_pair_test;

namespace {

/* a byte no slot line holds after a clear */
const uint8_t PLANT = 0xa5;

/* How message m (len bytes) lies in the slot ss of slot_size bytes; 'line'
 * says which form it must have */
void expect_layout(const soft_slot_t *ss, uint32_t slot_size, uint64_t m,
                   uint32_t len, bool line, uint64_t token)
{
    const uint8_t *slot = (const uint8_t *)ss;

    EXPECT_TRUE(ss->pkt.flags & SOFT_PKT_LIGHT) << len << " B";
    EXPECT_EQ(line, soft_pkt_is_line(ss->pkt.flags, ss->pkt.len))
        << len << " B";
    EXPECT_EQ(len, ss->pkt.len);
    if (line) {
        const size_t off = (len <= SOFT_LINE_MAX) ?
                               SOFT_LINE_OFF :
                               offsetof(soft_slot_t, pkt.dc_key);
        EXPECT_TRUE(matches(slot + off, m, len))
            << len << " B: payload not at " << off;
        if (len <= SOFT_LINE_MAX) {
            /* the token's low 56 bits stay, for the responder's look-up */
            EXPECT_EQ(token & SOFT_LINE_TOKEN,
                      ss->pkt.src_token & SOFT_LINE_TOKEN);
        }
        size_t changed = 0;
        for (size_t b = 64; b < 128; ++b) {
            changed += (slot[b] != PLANT);
        }
        EXPECT_EQ(0u, changed) << len << " B: bytes of the second line written";
    } else {
        EXPECT_TRUE(matches(slot + SOFT_LIGHT_OFF, m, len))
            << len << " B: payload not at " << SOFT_LIGHT_OFF;
        EXPECT_EQ(token, ss->pkt.src_token);
    }
    size_t stray = 0;
    for (size_t b = 128; b < slot_size; ++b) {
        stray += (slot[b] != 0);
    }
    EXPECT_EQ(0u, stray) << len << " B: bytes past the second line";
}

/* Posts a receive for message m, then sends it, len bytes (inline or from
 * its sge, with opcode op), while b's engine is held, with the next slot's
 * second line planted (PLANT); checks its layout; then takes both
 * completions and the data */
void send_and_check(sge_pair &p, uint64_t m, uint32_t len, bool inl, bool line,
                    dcx_wr_opcode_t op = DCX_WR_SEND)
{
    soft_port_hdr_t *hdr = ((soft_dev_t *)p.b.dev)->hdr;
    const uint64_t token = ((soft_dev_t *)p.a.dev)->token;
    std::vector<dcx_wc_t> wa, wb;

    ASSERT_EQ(0, p.post(1 + m % 15, 1)); /* bbuf holds 16 */
    {
        engine_held held(p.b.dev);
        uint8_t *next = (uint8_t *)
            soft_ring_slot(hdr, &hdr->req,
                           __atomic_load_n(&hdr->req.tail, __ATOMIC_ACQUIRE));
        memset(next + 64, PLANT, 64);
        dcx_soft_stats_t before = dev_stats(p.a);
        ASSERT_EQ(0, p.send_as(m, len, inl ? DCX_SEND_INLINE : 0, op));
        dcx_soft_stats_t after = dev_stats(p.a);
        ASSERT_EQ(1u, after.light_posts - before.light_posts);
        EXPECT_EQ(line ? 1u : 0u, after.line_posts - before.line_posts);
        ASSERT_EQ((uint8_t *)p.newest_slot(), next) << "another slot taken";
        expect_layout(p.newest_slot(), hdr->req.slot_size, m, len, line, token);
    }

    ASSERT_TRUE(p.take(wa, 1, wb, 1)) << "message " << m;
    EXPECT_EQ(DCX_WC_SUCCESS, wa[0].status);
    ASSERT_EQ(DCX_WC_SUCCESS, wb[0].status) << "message " << m;
    EXPECT_EQ(len, wb[0].byte_len);
    EXPECT_TRUE(p.holds(wb[0].wr_id, m, len)) << "message " << m;
    /* the planted immediate is not the message's */
    if (op == DCX_WR_SEND_IMM) {
        EXPECT_TRUE(wb[0].flags & DCX_WC_FLAG_WITH_IMM);
        EXPECT_EQ((uint32_t)m, wb[0].imm);
    } else {
        EXPECT_FALSE(wb[0].flags & DCX_WC_FLAG_WITH_IMM);
    }
}

} // namespace

/* Every size up to SOFT_LINE_WIDE_MAX, inline and from an sge, takes the
 * one-line form once the DCI's previous packet went to the DCT with the
 * key: the payload in the first line (the token's low bits kept up to
 * SOFT_LINE_MAX bytes), the second line (planted) neither written nor read
 * as an immediate, and the data received byte for byte. */
TEST_F(soft, line_form_writes_the_first_line_only)
{
    sge_pair p;

    ASSERT_EQ(0, p.open(fabric));
    p.introduce(1);
    uint64_t m = 1;
    for (int inl = 1; inl >= 0; --inl) {
        for (uint32_t len = 0; len <= SOFT_LINE_WIDE_MAX; ++len, ++m) {
            SCOPED_TRACE(std::string(inl ? "inline " : "sge ") +
                         std::to_string(len) + " B");
            ASSERT_NO_FATAL_FAILURE(send_and_check(p, m, len, inl, true));
        }
    }
}

/* The forms beside it: a DCI's first message to a port (the responder may
 * not know the port yet: the whole token), a SEND one byte longer than the
 * line takes, and a SEND with an immediate (on the second line) keep the
 * light form of two lines. */
TEST_F(soft, line_form_only_where_it_applies)
{
    sge_pair p;

    ASSERT_EQ(0, p.open(fabric));
    ASSERT_NO_FATAL_FAILURE(send_and_check(p, 1, 8, true, false));
    ASSERT_NO_FATAL_FAILURE(send_and_check(p, 2, 8, true, true));
    ASSERT_NO_FATAL_FAILURE(send_and_check(p, 3, SOFT_LINE_WIDE_MAX + 1, true,
                                           false));
    ASSERT_NO_FATAL_FAILURE(send_and_check(p, 4, SOFT_LINE_WIDE_MAX + 1, false,
                                           false));
    ASSERT_NO_FATAL_FAILURE(send_and_check(p, 5, 8, true, false,
                                           DCX_WR_SEND_IMM));
    ASSERT_NO_FATAL_FAILURE(send_and_check(p, 6, 8, false, true));
    ASSERT_NO_FATAL_FAILURE(send_and_check(p, 7, SOFT_LINE_WIDE_MAX, false,
                                           true));
}

/* The keyless form only to the DCT of the DCI's previous packet: a SEND
 * to another DCT of the same port is whole first, then keyless; the short
 * form needs only the port, and its key is whole, so that a keyless SEND
 * may follow it to its DCT. */
TEST_F(soft, keyless_line_form_only_to_the_same_dct)
{
    const uint64_t key2 = 0x7d3a11ull;
    const uint32_t len  = SOFT_LINE_MAX + 1;
    sge_pair p;
    dcx_qp_t *dct2 = nullptr;

    ASSERT_EQ(0, p.open(fabric));
    ASSERT_EQ(0, p.make_dct(key2, &dct2));
    p.introduce(1);

    p.dctn = dct2->qp_num;
    p.key  = key2;
    ASSERT_NO_FATAL_FAILURE(send_and_check(p, 1, len, true, false));
    ASSERT_NO_FATAL_FAILURE(send_and_check(p, 2, len, true, true));
    p.dctn = 0; /* back to the first DCT */
    p.key  = KEY;
    ASSERT_NO_FATAL_FAILURE(send_and_check(p, 3, len, false, false));
    ASSERT_NO_FATAL_FAILURE(send_and_check(p, 4, len, false, true));
    /* a short one-line packet carries the key whole: it names the DCT */
    p.dctn = dct2->qp_num;
    p.key  = key2;
    ASSERT_NO_FATAL_FAILURE(send_and_check(p, 5, 8, true, true));
    ASSERT_NO_FATAL_FAILURE(send_and_check(p, 6, len, true, true));
    EXPECT_EQ(0u, dev_stats(p.b).line_drops);
    EXPECT_EQ(0, dcx_qp_destroy(dct2));
}

/* A DCI that names a wrong DC key (here one that differs from the DCT's in
 * its top byte only) never gets a message through: its whole SEND fails
 * the key check, the keyless one after it (same DCT, same key: the
 * sender's rule allows it) is dropped, as the whole one failed since the
 * last that passed, and its retransmissions are whole and fail; after the
 * DCI's recovery its first SEND is whole again, checked, and fails.  With
 * the right key the DCI goes on. */
TEST_F(soft, keyless_line_form_never_carries_a_wrong_key_bad_flow)
{
    const uint32_t len = SOFT_LINE_MAX + 1;
    sge_pair p;
    std::vector<dcx_wc_t> wa, wb;
    dcx_wc_t wc;

    /* 2 ms to each retransmission: the retries run out within a second */
    ASSERT_EQ(0, p.open_retrying(fabric, 2000));
    p.introduce(4);
    p.key = KEY ^ (0x5aull << 56);
    for (int round = 0; round < 2; ++round) {
        SCOPED_TRACE(round ? "after the recovery" : "first");
        {
            engine_held held(p.b.dev);
            ASSERT_EQ(0, p.send_inline(1, len));
            EXPECT_FALSE(soft_pkt_is_line(p.newest_slot()->pkt.flags, len))
                << "another key than the last packet's: whole";
            ASSERT_EQ(0, p.send_inline(2, len));
            EXPECT_TRUE(soft_pkt_is_line(p.newest_slot()->pkt.flags, len))
                << "the same DCT and key as the last packet's: keyless";
        }
        wa.clear();
        ASSERT_TRUE(p.take(wa, 2, wb, 0));
        EXPECT_EQ(DCX_WC_RETRY_EXC_ERR, wa[0].status) << "a wrong key passed";
        EXPECT_EQ(DCX_WC_WR_FLUSH_ERR, wa[1].status);
        EXPECT_EQ(0, dcx_cq_poll(p.b.cq, 1, &wc)) << "received";
        /* the keyless one dropped as such: its retransmissions whole */
        EXPECT_EQ((uint64_t)round + 1, dev_stats(p.b).line_drops);
        ASSERT_EQ(0, dcx_qp_recover(p.a.dci));
    }
    EXPECT_GE(dev_stats(p.b).dc_key_violations, 2u);

    p.key = KEY;
    ASSERT_NO_FATAL_FAILURE(send_and_check(p, 3, len, true, false));
    ASSERT_NO_FATAL_FAILURE(send_and_check(p, 4, len, true, true));
}

/* A responder that lost the DCI's state (as its table's collection forgets
 * idle sources) still knows the port: the one-line packet makes the
 * state anew from the port of the token's low bits and is served. */
TEST_F(soft, line_form_served_after_the_source_state_is_lost)
{
    sge_pair p;
    std::vector<dcx_wc_t> wa, wb;

    ASSERT_EQ(0, p.open(fabric));
    p.introduce(2);
    soft_dev_t *b = (soft_dev_t *)p.b.dev;
    {
        engine_held held(p.b.dev);
        ASSERT_EQ(0, p.send_inline(1, 9));
        ASSERT_TRUE(soft_pkt_is_line(p.newest_slot()->pkt.flags, 9));
        memset(b->rstate, 0, SOFT_RSTATE_SLOTS * sizeof(*b->rstate));
    }
    ASSERT_TRUE(p.take(wa, 1, wb, 1));
    EXPECT_EQ(DCX_WC_SUCCESS, wa[0].status);
    ASSERT_EQ(DCX_WC_SUCCESS, wb[0].status);
    EXPECT_EQ(9u, wb[0].byte_len);
    EXPECT_TRUE(p.holds(wb[0].wr_id, 1, 9));
    EXPECT_EQ(0u, dev_stats(p.b).line_drops);
    /* and the next one takes the one-pass path again */
    ASSERT_NO_FATAL_FAILURE(send_and_check(p, 2, 9, true, true));
}

/* A one-line packet whose token's low bits name no port the responder
 * knows (here: forged in the slot) is dropped as lost, with nothing
 * received; the requester's retransmission, whole, delivers it, once. */
TEST_F(soft, line_form_of_an_unknown_port_dropped_and_resent_bad_flow)
{
    sge_pair p;
    std::vector<dcx_wc_t> wa, wb;
    dcx_wc_t wc;

    ASSERT_EQ(0, p.open_retrying(fabric, 20000)); /* 20 ms to a resend */
    p.introduce(1); /* no receive left: the responder's general path */
    dcx_soft_stats_t before = dev_stats(p.a);
    {
        engine_held held(p.b.dev);
        ASSERT_EQ(0, p.send_inline(1, 8));
        soft_slot_t *ss = p.newest_slot();
        ASSERT_TRUE(soft_pkt_is_line(ss->pkt.flags, ss->pkt.len));
        ss->pkt.src_token ^= 1; /* another port's low bits */
    }
    double end = now_s() + 10.0;
    while ((dev_stats(p.b).line_drops == 0) && (now_s() < end)) {
        ASSERT_EQ(0, dcx_cq_poll(p.b.cq, 1, &wc)) << "received a dropped one";
    }
    ASSERT_EQ(1u, dev_stats(p.b).line_drops);
    EXPECT_EQ(0, dcx_cq_poll(p.b.cq, 1, &wc));
    EXPECT_EQ(0, dcx_cq_poll(p.a.cq, 1, &wc)) << "completed while dropped";

    ASSERT_EQ(0, p.post(1, 2));
    ASSERT_TRUE(p.take(wa, 1, wb, 1));
    EXPECT_EQ(DCX_WC_SUCCESS, wa[0].status);
    ASSERT_EQ(DCX_WC_SUCCESS, wb[0].status);
    EXPECT_EQ(8u, wb[0].byte_len);
    EXPECT_TRUE(p.holds(wb[0].wr_id, 1, 8));
    EXPECT_GT(dev_stats(p.a).retransmits, before.retransmits);
    /* once: nothing more arrives */
    usleep(50000);
    EXPECT_EQ(0, dcx_cq_poll(p.b.cq, 1, &wc));
    EXPECT_EQ(1u, dev_stats(p.b).line_drops);
}

/* A keyless one-line packet whose source state the responder lost (as its
 * table's collection forgets idle sources) cannot be vouched for: it is
 * dropped as lost, nothing received, and the retransmission, whole,
 * delivers it once, making the state anew. */
TEST_F(soft, keyless_line_form_without_source_state_resent_whole_bad_flow)
{
    const uint32_t len = SOFT_LINE_WIDE_MAX;
    sge_pair p;
    std::vector<dcx_wc_t> wa, wb;
    dcx_wc_t wc;

    ASSERT_EQ(0, p.open_retrying(fabric, 20000)); /* 20 ms to a resend */
    p.introduce(2);
    soft_dev_t *b           = (soft_dev_t *)p.b.dev;
    dcx_soft_stats_t before = dev_stats(p.a);
    {
        engine_held held(p.b.dev);
        ASSERT_EQ(0, p.send_inline(1, len));
        ASSERT_TRUE(soft_pkt_is_line(p.newest_slot()->pkt.flags, len));
        memset(b->rstate, 0, SOFT_RSTATE_SLOTS * sizeof(*b->rstate));
    }
    ASSERT_TRUE(p.take(wa, 1, wb, 1));
    EXPECT_EQ(DCX_WC_SUCCESS, wa[0].status);
    ASSERT_EQ(DCX_WC_SUCCESS, wb[0].status);
    EXPECT_EQ(len, wb[0].byte_len);
    EXPECT_TRUE(p.holds(wb[0].wr_id, 1, len));
    EXPECT_EQ(1u, dev_stats(p.b).line_drops);
    EXPECT_GT(dev_stats(p.a).retransmits, before.retransmits);
    usleep(50000);
    EXPECT_EQ(0, dcx_cq_poll(p.b.cq, 1, &wc)) << "delivered twice";
    EXPECT_EQ(1u, dev_stats(p.b).line_drops);
}

/* A DCT destroyed and its number given to a new DCT with another key: a
 * keyless packet of a DCI whose last whole packet passed the old DCT's
 * check is not taken by the new one (the state names the old DCT's
 * generation); its retransmission, whole, fails the new key.  Nothing is
 * received. */
TEST_F(soft, keyless_line_form_not_taken_by_a_new_dct_of_that_number_bad_flow)
{
    const uint32_t len = SOFT_LINE_MAX + 1;
    sge_pair p;
    dcx_qp_t *dct2 = nullptr;
    dcx_wc_t wc;

    ASSERT_EQ(0, p.open_retrying(fabric, 2000));
    p.introduce(2);
    soft_dev_t *b       = (soft_dev_t *)p.b.dev;
    const uint32_t dctn = p.b.dct->qp_num;
    p.dctn              = dctn; /* the number, whoever holds it */
    ASSERT_EQ(0, dcx_qp_destroy(p.b.dct));
    p.b.dct = nullptr;
    {
        engine_held held(p.b.dev);
        b->qp_cursor = dctn - b->qpn_base; /* as after the numbers wrap */
    }
    /* a key whose top byte only differs */
    ASSERT_EQ(0, p.make_dct(KEY ^ (0x5aull << 56), &dct2));
    ASSERT_EQ(dctn, dct2->qp_num);
    {
        engine_held held(p.b.dev);
        ASSERT_EQ(0, p.send_inline(1, len));
        ASSERT_TRUE(soft_pkt_is_line(p.newest_slot()->pkt.flags, len))
            << "the DCT number and key of the last packet: keyless";
    }
    ASSERT_EQ(1, p.a.poll(&wc, 1));
    EXPECT_EQ(DCX_WC_RETRY_EXC_ERR, wc.status) << "a wrong key passed";
    EXPECT_EQ(0, dcx_cq_poll(p.b.cq, 1, &wc)) << "received";
    EXPECT_EQ(1u, dev_stats(p.b).line_drops);
    EXPECT_GE(dev_stats(p.b).dc_key_violations, 1u);
    EXPECT_EQ(0, dcx_qp_destroy(dct2));
}
