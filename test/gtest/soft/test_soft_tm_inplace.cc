/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: receives in place on a tag-matching SRQ (DCX_SRQ_F_IN_PLACE
 * on a DCX_SRQ_TM).  The messages that go to an SRQ buffer, an unexpected
 * eager and a NO_TAG message, of at least SOFT_IP_MIN bytes, complete
 * where they arrived: the SRQ buffer is taken and left as it was, 'data'
 * holds the whole message with its TMH, readable until dcx_cq_release or
 * the next poll of the CQ.  A message a listed receive takes is placed in
 * that receive's buffer as always; smaller messages are copied.
 */
#include "soft_tm_fixture.h"

extern "C" {
#include "soft/soft.h"
}

namespace {

const uint32_t BIG   = 1000; /* payload past the TMH: placed in place */
const uint32_t SMALL = 20;   /* TMH + 20 bytes: below SOFT_IP_MIN */
const uint8_t MARK   = 0xc3; /* what the SRQ buffers hold before */

} // namespace

class soft_tm_inplace : public soft_tm {
protected:
    void SetUp() override
    {
        soft_tm::SetUp();
        srq_flags = DCX_SRQ_F_IN_PLACE;
        open_pair();
        /* only the polls below run the engines: a pass of a helper
         * thread copies */
        soft_helper_stop(soft_dev(rx.n.dev));
        soft_helper_stop(soft_dev(tx.n.dev));
        /* the first message of a source takes the general path, which
         * copies: one small one introduces tx's DCI */
        post_msg(DCX_TMH_NO_TAG, 0, SMALL, 1);
        dcx_wc_t wc = take_rx();
        ASSERT_EQ(DCX_WC_SUCCESS, wc.status);
        rx.repost(wc);
        expect_sent();
        memset(rx.at(SRQ_OFF), MARK, (size_t)SRQ_SLOTS * SRQ_SLOT);
    }

    /* TMH | payload from tx to rx, posted and left to the polls */
    void post_msg(uint8_t tmh_op, uint64_t tag, uint32_t payload, uint8_t seed)
    {
        uint8_t *m = tx.at(SEND_OFF);

        dcx_tmh_pack(m, tmh_op, 7, tag);
        fill(m + DCX_TM_TMH_LEN, payload, seed);
        ASSERT_EQ(0, post_to_rx(++send_id, SEND_OFF, DCX_TM_TMH_LEN + payload));
    }

    /* Polls rx's CQ itself (not through tm_node::poll, whose next poll
     * would release what it returned) until a receive completes; the
     * sender's completions meanwhile are kept in tx.sent */
    dcx_wc_t take_rx()
    {
        double end = now_s() + 20.0;
        dcx_wc_t wc;

        memset(&wc, 0xee, sizeof(wc));
        while (now_s() < end) {
            if (dcx_cq_poll(rx.n.cq, 1, &wc) == 1) {
                return wc;
            }
            tx.poll();
        }
        ADD_FAILURE() << "no receive completion";
        return wc;
    }

    /* true if the n bytes at p are the payload fill() makes with seed */
    static bool payload_is(const uint8_t *p, uint32_t n, uint8_t seed)
    {
        std::vector<uint8_t> want(n);

        fill(want.data(), n, seed);
        return memcmp(p, want.data(), n) == 0;
    }

    /* true if rx's SRQ buffer of wr_id still holds MARK only */
    bool srq_buf_untouched(uint64_t wr_id)
    {
        const uint8_t *b = rx.srq_buf(wr_id);

        for (uint32_t i = 0; i < SRQ_SLOT; ++i) {
            if (b[i] != MARK) {
                return false;
            }
        }
        return true;
    }

    /* waits for the sender's completion of its last send */
    void expect_sent()
    {
        EXPECT_TRUE(wait_sent());
        if (!tx.sent.empty()) {
            EXPECT_EQ(DCX_WC_SUCCESS, tx.sent.front().status);
            tx.sent.pop_front();
        }
    }

    bool wait_sent()
    {
        double end = now_s() + 20.0;

        while (tx.sent.empty() && (now_s() < end)) {
            poll_both();
        }
        return !tx.sent.empty();
    }
};

/* An unexpected eager message is handed over where it arrived: TMH and
 * payload at 'data', the SRQ buffer taken unwritten, counted as an
 * unexpected message and as a receive in place */
TEST_F(soft_tm_inplace, unexpected_eager_completes_in_place)
{
    uint64_t placed = dev_stats(rx.n).recv_in_place;
    uint64_t unexp  = tm_stats(rx).unexp_eager;
    uint8_t opcode;
    uint32_t app_ctx;
    uint64_t tag;

    post_msg(DCX_TMH_EAGER, 0xfeed, BIG, 3);
    dcx_wc_t wc = take_rx();
    ASSERT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_TM_RECV, wc.opcode);
    ASSERT_TRUE(wc.flags & DCX_WC_FLAG_IN_PLACE);
    EXPECT_FALSE(wc.flags & (DCX_WC_FLAG_TM_MATCH | DCX_WC_FLAG_TM_DATA_VALID));
    EXPECT_EQ(DCX_TM_TMH_LEN + BIG, wc.byte_len);
    dcx_tmh_unpack(wc.data, &opcode, &app_ctx, &tag);
    EXPECT_EQ(DCX_TMH_EAGER, opcode);
    EXPECT_EQ(7u, app_ctx);
    EXPECT_EQ(0xfeedu, tag);
    EXPECT_TRUE(payload_is((const uint8_t *)wc.data + DCX_TM_TMH_LEN, BIG, 3));
    EXPECT_EQ(0u, (uintptr_t)((const uint8_t *)wc.data + DCX_TM_TMH_LEN + 1) % 8)
        << "an AM's data past its id is aligned as on a plain SRQ";
    EXPECT_TRUE(srq_buf_untouched(wc.wr_id));
    dcx_cq_release(rx.n.cq);
    EXPECT_EQ(placed + 1, dev_stats(rx.n).recv_in_place);
    EXPECT_EQ(unexp + 1, tm_stats(rx).unexp_eager);
    expect_sent();
    rx.repost(wc);
}

/* A NO_TAG message (an AM behind its TMH) the same way */
TEST_F(soft_tm_inplace, no_tag_completes_in_place)
{
    post_msg(DCX_TMH_NO_TAG, 0, BIG, 5);
    dcx_wc_t wc = take_rx();
    ASSERT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_TM_NO_TAG, wc.opcode);
    ASSERT_TRUE(wc.flags & DCX_WC_FLAG_IN_PLACE);
    EXPECT_EQ(DCX_TMH_NO_TAG, ((const uint8_t *)wc.data)[0]);
    EXPECT_TRUE(payload_is((const uint8_t *)wc.data + DCX_TM_TMH_LEN, BIG, 5));
    EXPECT_TRUE(srq_buf_untouched(wc.wr_id));
    dcx_cq_release(rx.n.cq);
    expect_sent();
    rx.repost(wc);
}

/* A message a listed receive takes goes to that receive's buffer, never in
 * place; a message below SOFT_IP_MIN is copied into its SRQ buffer */
TEST_F(soft_tm_inplace, expected_and_small_messages_are_copied)
{
    add_ok(rx, 0x77, ~0ull, 1, ENTRY_OFF, 4096);
    post_msg(DCX_TMH_EAGER, 0x77, BIG, 9);
    dcx_wc_t wc = take_rx();
    ASSERT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_TM_RECV, wc.opcode);
    EXPECT_FALSE(wc.flags & DCX_WC_FLAG_IN_PLACE);
    EXPECT_TRUE(wc.flags & DCX_WC_FLAG_TM_MATCH);
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(0x77u, wc.tm_tag);
    expect_payload(ENTRY_OFF, BIG, 9);
    expect_sent();

    post_msg(DCX_TMH_EAGER, 0x78, SMALL, 11);
    wc = take_rx();
    ASSERT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_TM_RECV, wc.opcode);
    EXPECT_FALSE(wc.flags & DCX_WC_FLAG_IN_PLACE);
    EXPECT_EQ(DCX_TM_TMH_LEN + SMALL, wc.byte_len);
    EXPECT_TRUE(payload_is(rx.srq_buf(wc.wr_id) + DCX_TM_TMH_LEN, SMALL, 11));
    expect_sent();
    rx.repost(wc);
}

/* Messages completed in place stay intact until released: several in a
 * row, each read after the later ones arrived, then all released by the
 * next poll; the slots are reused and every message arrives whole */
TEST_F(soft_tm_inplace, held_messages_stay_until_released)
{
    const int n = 4;
    dcx_wc_t wc[n];
    int got = 0;

    for (int i = 0; i < n; ++i) {
        post_msg(DCX_TMH_EAGER, 0x100 + i, BIG, (uint8_t)(20 + i));
    }
    /* polls of rx alone: none releases what an earlier one returned
     * before all are in hand (a poll returns at most its max, which bounds
     * what a pass places) */
    double end = now_s() + 20.0;
    while ((got < n) && (now_s() < end)) {
        got += dcx_cq_poll(rx.n.cq, n - got, wc + got);
        tx.poll();
    }
    ASSERT_EQ(n, got);
    EXPECT_TRUE(wc[0].flags & DCX_WC_FLAG_IN_PLACE);
    for (int i = 0; i < n; ++i) {
        ASSERT_EQ(DCX_WC_SUCCESS, wc[i].status);
        if (wc[i].flags & DCX_WC_FLAG_IN_PLACE) {
            EXPECT_TRUE(payload_is((const uint8_t *)wc[i].data + DCX_TM_TMH_LEN,
                                   BIG, (uint8_t)(20 + i)))
                << "message " << i;
        } else {
            EXPECT_TRUE(payload_is(rx.srq_buf(wc[i].wr_id) + DCX_TM_TMH_LEN,
                                   BIG, (uint8_t)(20 + i)))
                << "message " << i;
        }
        rx.repost(wc[i]);
    }
    for (int i = 0; i < n; ++i) {
        expect_sent();
    }
    /* the ring goes round with the slots released by the polls */
    for (int i = 0; i < 300; ++i) {
        post_msg(DCX_TMH_EAGER, 0x200 + i, BIG, (uint8_t)i);
        dcx_wc_t one = take_rx();
        ASSERT_EQ(DCX_WC_SUCCESS, one.status);
        const uint8_t *p = (one.flags & DCX_WC_FLAG_IN_PLACE) ?
                               (const uint8_t *)one.data :
                               rx.srq_buf(one.wr_id);
        ASSERT_TRUE(payload_is(p + DCX_TM_TMH_LEN, BIG, (uint8_t)i)) << i;
        dcx_cq_release(rx.n.cq);
        rx.repost(one);
        expect_sent();
    }
}
