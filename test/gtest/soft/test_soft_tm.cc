/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device tag matching (docs/device-semantics.md section 9): the TM
 * SRQ, list operations, matching, phase synchronisation and eager flows, and
 * how each error ends.  Rendezvous is in test_soft_tm_rndv.cc, the fixture
 * in soft_tm_fixture.h.
 *
 * The tests run a receiver and a sender in the test process (two devices on
 * one fabric), polling both.
 */
#include "soft_tm_fixture.h"

extern "C" {
#include "soft/soft.h"
}

/* ------------------------------------------------------------------------
 * Capabilities, creation, wire headers
 * ------------------------------------------------------------------------ */
TEST_F(soft_tm, caps)
{
    node n;
    ASSERT_EQ(0, n.open(fabric.c_str()));
    const dcx_dev_caps_t *caps = dcx_dev_caps(n.dev);
    EXPECT_TRUE(caps->flags & DCX_CAP_TM);
    EXPECT_EQ(1023u, caps->tm_max_tags);
    EXPECT_EQ(0u, caps->tm_max_tags & (caps->tm_max_tags + 1)); /* 2^n-1 */
    EXPECT_EQ(caps->max_qp_wr, caps->tm_max_ops);
    EXPECT_EQ(64u, caps->tm_max_rndv_hdr);
    EXPECT_EQ(1u, caps->tm_max_sge);

    dcx_soft_limits_t l = default_limits();
    l.tm_max_tags       = 31;
    node m;
    ASSERT_EQ(0, m.open((fabric + "b").c_str(), &l));
    EXPECT_EQ(31u, dcx_dev_caps(m.dev)->tm_max_tags);

    tm_node t;
    open_node(t, true, 31, 8);
    EXPECT_EQ(31u, t.n.srq->tm_max_tags);
    EXPECT_EQ(8u, t.n.srq->tm_max_ops);
    EXPECT_EQ(SRQ_SLOTS, t.n.srq->max_wr);
}

TEST_F(soft_tm, create_bad_flow)
{
    tm_node t;
    open_node(t, false);
    dcx_srq_attr_t sa;
    dcx_srq_t *srq;
    memset(&sa, 0, sizeof(sa));
    sa.type                 = DCX_SRQ_TM;
    sa.max_wr               = 16;
    sa.cq                   = t.n.cq;
    const uint32_t bad[][2] = {{0, 16}, {1024, 16}, {63, 0}, {63, 32769}};
    for (const auto &b : bad) {
        log_counter logs;
        sa.tm_max_tags = b[0];
        sa.tm_max_ops  = b[1];
        EXPECT_EQ(EINVAL, dcx_srq_create(t.n.pd, &sa, &srq))
            << b[0] << "/" << b[1];
        EXPECT_EQ(1, logs.lines());
    }
    {
        log_counter logs;
        sa.type = (dcx_srq_type_t)7;
        EXPECT_EQ(EINVAL, dcx_srq_create(t.n.pd, &sa, &srq));
        EXPECT_EQ(1, logs.lines());
    }
    /* list operations on a basic SRQ */
    {
        log_counter logs;
        EXPECT_EQ(EINVAL, op(t, DCX_TM_OP_SYNC, DCX_TM_OPF_SIGNALED, 0, 1));
        EXPECT_EQ(1, logs.lines());
    }
    /* a list size that is not 2^n - 1 */
    {
        log_counter logs;
        dcx_soft_params_t params;
        dcx_dev_info_t *list;
        unsigned count;
        memset(&params, 0, sizeof(params));
        params.count              = 1;
        params.fabric             = fabric.c_str();
        params.limits.tm_max_tags = 100;
        EXPECT_EQ(EINVAL, dcx_soft_list(&params, &list, &count));
        EXPECT_EQ(1, logs.lines());
    }
}

TEST_F(soft_tm, op_bad_flow)
{
    open_pair();
    {
        log_counter logs;
        EXPECT_EQ(EINVAL, op(rx, DCX_TM_OP_LAST, 0, 0, 1));
        EXPECT_EQ(EINVAL, op(rx, DCX_TM_OP_SYNC, 0x80, 0, 1));
        EXPECT_EQ(EINVAL, add(rx, 1, ~0ull, 1, 0, 64, DCX_TM_OPF_SIGNALED, 0,
                              nullptr, 2));
        EXPECT_EQ(3, logs.lines());
    }
    /* DEL of a handle the device does not own */
    {
        log_counter logs;
        EXPECT_EQ(EINVAL, op(rx, DCX_TM_OP_DEL, DCX_TM_OPF_SIGNALED, 5, 1));
        EXPECT_EQ(EINVAL,
                  op(rx, DCX_TM_OP_DEL, DCX_TM_OPF_SIGNALED, 1u << 20, 1));
        EXPECT_EQ(2, logs.lines());
    }
    expect_quiet(rx);
}

TEST_F(soft_tm, wire_headers)
{
    uint8_t b[48];
    dcx_tmh_pack(b, DCX_TMH_RNDV, 0x01020304, 0x1112131415161718ull);
    dcx_rvh_pack(b + 16, 0x2122232425262728ull, 0x31323334, 0x41424344);
    dcx_ravh_pack(b + 32, 0x00abcdef, 0x5152535455565758ull);
    const uint8_t want[48] = {1,    0,    0,    0,    1,    2,    3,    4,
                              0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,
                              0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28,
                              0x31, 0x32, 0x33, 0x34, 0x41, 0x42, 0x43, 0x44,
                              0x00, 0xab, 0xcd, 0xef, 0,    0,    0,    0,
                              0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58};
    EXPECT_EQ(0, memcmp(b, want, sizeof(want)));

    uint8_t opc;
    uint32_t ctx, rkey, len, dctn;
    uint64_t tag, va, key;
    dcx_tmh_unpack(b, &opc, &ctx, &tag);
    dcx_rvh_unpack(b + 16, &va, &rkey, &len);
    dcx_ravh_unpack(b + 32, &dctn, &key);
    EXPECT_EQ(DCX_TMH_RNDV, opc);
    EXPECT_EQ(0x01020304u, ctx);
    EXPECT_EQ(0x1112131415161718ull, tag);
    EXPECT_EQ(0x2122232425262728ull, va);
    EXPECT_EQ(0x31323334u, rkey);
    EXPECT_EQ(0x41424344u, len);
    EXPECT_EQ(0x00abcdefu, dctn);
    EXPECT_EQ(0x5152535455565758ull, key);
    EXPECT_EQ(16u, sizeof(dcx_tmh_t));
    EXPECT_EQ(16u, sizeof(dcx_rvh_t));
    EXPECT_EQ(16u, sizeof(dcx_ravh_t));
}

/* ------------------------------------------------------------------------
 * Eager
 * ------------------------------------------------------------------------ */
TEST_F(soft_tm, eager_expected)
{
    open_pair();
    add_ok(rx, 0x77, ~0ull, 5, 4096, 1000);
    EXPECT_EQ(DCX_WC_SUCCESS,
              send_msg(DCX_TMH_EAGER, 0x77, 0xc0ffee, 600, 3).status);
    dcx_wc_t wc = pop(rx);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_TM_RECV, wc.opcode);
    EXPECT_EQ(DCX_WC_FLAG_TM_MATCH | DCX_WC_FLAG_TM_DATA_VALID, wc.flags);
    EXPECT_EQ(5u, wc.wr_id);
    EXPECT_EQ(600u, wc.byte_len);
    EXPECT_EQ(0x77u, wc.tm_tag);
    EXPECT_EQ(0xc0ffeeu, wc.tm_priv);
    EXPECT_EQ(rx.n.dct->qp_num, wc.qp_num);
    EXPECT_EQ(tx.n.dci->qp_num, wc.src_qp);
    expect_payload(4096, 600, 3); /* without the TMH */
    EXPECT_EQ(0, rx.at(4096 + 600)[0]);

    /* with immediate data */
    add_ok(rx, 0x78, ~0ull, 6, 8192, 100);
    send_msg(DCX_TMH_EAGER, 0x78, 9, 8, 4, true);
    wc = pop(rx);
    EXPECT_EQ(DCX_WC_FLAG_TM_MATCH | DCX_WC_FLAG_TM_DATA_VALID |
                  DCX_WC_FLAG_WITH_IMM,
              wc.flags);
    EXPECT_EQ(0x1234beefu, wc.imm);
    EXPECT_EQ(6u, wc.wr_id);
    dcx_soft_tm_stats_t s = tm_stats(rx);
    EXPECT_EQ(2u, s.adds);
    EXPECT_EQ(2u, s.matched);
    EXPECT_EQ(0u, s.unexp_eager);
}

TEST_F(soft_tm, eager_zero_byte)
{
    open_pair();
    add_ok(rx, 1, ~0ull, 7, 0, 0, nullptr);
    /* an empty receive (no buffer) */
    uint32_t h;
    ASSERT_EQ(0, add(rx, 2, ~0ull, 8, 0, 0, DCX_TM_OPF_SIGNALED, 0, &h, 0));
    EXPECT_EQ(DCX_WC_TM_ADD, pop(rx).opcode);
    send_msg(DCX_TMH_EAGER, 1, 11, 0, 0);
    send_msg(DCX_TMH_EAGER, 2, 12, 0, 0);
    for (uint64_t id = 7; id <= 8; ++id) {
        dcx_wc_t wc = pop(rx);
        EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
        EXPECT_EQ(id, wc.wr_id);
        EXPECT_EQ(0u, wc.byte_len);
        EXPECT_EQ(DCX_WC_FLAG_TM_MATCH | DCX_WC_FLAG_TM_DATA_VALID, wc.flags);
        EXPECT_EQ(id + 4, (uint64_t)wc.tm_priv);
    }
}

TEST_F(soft_tm, eager_multi_packet)
{
    open_pair();
    const uint32_t mtu = dcx_dev_caps(rx.n.dev)->mtu;
    const uint32_t len = 2 * mtu + 100; /* three packets */
    add_ok(rx, 0x55, ~0ull, 9, 0, len);
    EXPECT_EQ(DCX_WC_SUCCESS,
              send_msg(DCX_TMH_EAGER, 0x55, 0xaa, len, 6).status);
    /* match first, with the tag; then the data */
    dcx_wc_t wc = pop(rx);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_TM_RECV, wc.opcode);
    EXPECT_EQ(DCX_WC_FLAG_TM_MATCH, wc.flags);
    EXPECT_EQ(9u, wc.wr_id);
    EXPECT_EQ(0x55u, wc.tm_tag);
    EXPECT_EQ(0xaau, wc.tm_priv);
    wc = pop(rx);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_FLAG_TM_DATA_VALID, wc.flags);
    EXPECT_EQ(9u, wc.wr_id);
    EXPECT_EQ(len, wc.byte_len);
    EXPECT_EQ(0u, wc.tm_tag); /* tag info only in the first */
    expect_payload(0, len, 6);
}

TEST_F(soft_tm, eager_unexpected)
{
    open_pair();
    send_msg(DCX_TMH_EAGER, 0x99, 0x42, 300, 8, true);
    dcx_wc_t wc = pop(rx);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_TM_RECV, wc.opcode);
    EXPECT_EQ(DCX_WC_FLAG_WITH_IMM, wc.flags); /* no MATCH, DATA_VALID */
    EXPECT_EQ(SRQ_WRID, wc.wr_id);
    EXPECT_EQ(DCX_TM_TMH_LEN + 300, wc.byte_len);
    EXPECT_EQ(0u, wc.tm_tag);
    EXPECT_EQ(0u, wc.tm_priv);
    /* whole message, TMH included */
    uint8_t opc;
    uint32_t ctx;
    uint64_t tag;
    dcx_tmh_unpack(rx.srq_buf(wc.wr_id), &opc, &ctx, &tag);
    EXPECT_EQ(DCX_TMH_EAGER, opc);
    EXPECT_EQ(0x42u, ctx);
    EXPECT_EQ(0x99u, tag);
    std::vector<uint8_t> want(300);
    fill(want.data(), 300, 8);
    EXPECT_EQ(0, memcmp(rx.srq_buf(wc.wr_id) + 16, want.data(), 300));
    EXPECT_EQ(1u, tm_stats(rx).unexp_eager);
}

TEST_F(soft_tm, no_tag)
{
    open_pair();
    add_ok(rx, 0, 0, 1, 0, 4096); /* a wildcard: NO_TAG never matches */
    send_msg(DCX_TMH_NO_TAG, 0x5, 0x6, 100, 9);
    dcx_wc_t wc = pop(rx);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_TM_NO_TAG, wc.opcode);
    EXPECT_EQ(0, wc.flags);
    EXPECT_EQ(SRQ_WRID, wc.wr_id);
    EXPECT_EQ(116u, wc.byte_len);
    EXPECT_EQ(DCX_TMH_NO_TAG, rx.srq_buf(wc.wr_id)[0]);
    /* the wildcard entry is still there for a tagged message */
    send_msg(DCX_TMH_EAGER, 0x5, 0x6, 10, 9);
    wc = pop(rx);
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(DCX_WC_FLAG_TM_MATCH | DCX_WC_FLAG_TM_DATA_VALID, wc.flags);
}

TEST_F(soft_tm, wildcard_masks)
{
    open_pair();
    /* source in the high half, user tag in the low half */
    add_ok(rx, 0x0000000500000000ull, 0xffffffff00000000ull, 1, 0, 256);
    add_ok(rx, 0x0000000000000007ull, 0x00000000ffffffffull, 2, 4096, 256);
    add_ok(rx, 0, 0, 3, 8192, 256); /* any tag */
    send_msg(DCX_TMH_EAGER, 0x0000000900000007ull, 1, 16, 1);
    send_msg(DCX_TMH_EAGER, 0x0000000500000003ull, 2, 16, 2);
    send_msg(DCX_TMH_EAGER, 0xfeedull, 3, 16, 3);
    const uint64_t want_id[]  = {2, 1, 3};
    const uint64_t want_tag[] = {0x0000000900000007ull, 0x0000000500000003ull,
                                 0xfeedull};
    for (int i = 0; i < 3; ++i) {
        dcx_wc_t wc = pop(rx);
        EXPECT_EQ(want_id[i], wc.wr_id);
        EXPECT_EQ(want_tag[i], wc.tm_tag);
        EXPECT_EQ((uint32_t)(i + 1), wc.tm_priv);
    }
    /* nothing left: the next goes to an SRQ buffer */
    send_msg(DCX_TMH_EAGER, 0x0000000500000000ull, 4, 16, 4);
    EXPECT_EQ(SRQ_WRID, pop(rx).wr_id);
}

TEST_F(soft_tm, oldest_first)
{
    open_pair();
    add_ok(rx, 8, ~0ull, 1, 0, 256); /* does not match tag 7 */
    add_ok(rx, 7, ~0ull, 2, 4096, 256);
    add_ok(rx, 0, 0, 3, 8192, 256); /* matches too, but younger */
    add_ok(rx, 7, ~0ull, 4, 12288, 256);
    for (uint64_t want : {2, 3, 4}) {
        send_msg(DCX_TMH_EAGER, 7, (uint32_t)want, 32, (uint8_t)want);
        dcx_wc_t wc = pop(rx);
        EXPECT_EQ(want, wc.wr_id);
    }
    send_msg(DCX_TMH_EAGER, 8, 0, 32, 0);
    EXPECT_EQ(1u, pop(rx).wr_id);
}

TEST_F(soft_tm, truncation_bad_flow)
{
    open_pair();
    add_ok(rx, 3, ~0ull, 1, 0, 100);
    /* hardware: LOC_LEN_ERR for the receive, nothing written; the sender's
     * SEND succeeds (a receive-side error, as libmlx5 reports it) */
    EXPECT_EQ(DCX_WC_SUCCESS, send_msg(DCX_TMH_EAGER, 3, 0, 101, 1).status);
    dcx_wc_t wc = pop(rx);
    EXPECT_EQ(DCX_WC_LOC_LEN_ERR, wc.status);
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(0, rx.at(0)[0] | rx.at(50)[0]);
    EXPECT_EQ(DCX_QPS_RTS, tx.n.dci->state);
    /* the same for a message of several packets */
    const uint32_t mtu = dcx_dev_caps(rx.n.dev)->mtu;
    add_ok(rx, 3, ~0ull, 2, 0, mtu);
    EXPECT_EQ(DCX_WC_SUCCESS, send_msg(DCX_TMH_EAGER, 3, 0, 2 * mtu, 1).status);
    wc = pop(rx);
    EXPECT_EQ(DCX_WC_LOC_LEN_ERR, wc.status);
    EXPECT_EQ(2u, wc.wr_id);
    /* the next one fits */
    add_ok(rx, 3, ~0ull, 3, 0, 100);
    send_msg(DCX_TMH_EAGER, 3, 0, 100, 5);
    wc = pop(rx);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    expect_payload(0, 100, 5);
}

TEST_F(soft_tm, bad_message_bad_flow)
{
    open_pair();
    add_ok(rx, 0, 0, 1, 0, 4096);
    /* a tagged message shorter than a TMH: an invalid request, nothing
     * consumed */
    *tx.at(SEND_OFF) = DCX_TMH_EAGER;
    dcx_wc_t wc      = post_send(8);
    EXPECT_EQ(DCX_WC_REM_INV_REQ_ERR, wc.status);
    ASSERT_EQ(0, dcx_qp_recover(tx.n.dci));
    expect_quiet(rx);
    /* an untagged one may be: it goes to an SRQ buffer whole */
    memset(tx.at(SEND_OFF), 0, 10);
    tx.at(SEND_OFF)[9] = 0x77;
    wc                 = post_send(10);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    wc = pop(rx);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_TM_NO_TAG, wc.opcode);
    EXPECT_EQ(10u, wc.byte_len);
    EXPECT_EQ(0x77, rx.srq_buf(wc.wr_id)[9]);
    rx.repost(wc);
    /* unknown TMH opcode */
    wc = send_msg(9, 1, 1, 10, 1);
    EXPECT_EQ(DCX_WC_REM_INV_REQ_ERR, wc.status);
    ASSERT_EQ(0, dcx_qp_recover(tx.n.dci));
    /* a rendezvous request without the DC address header */
    wc = send_msg(DCX_TMH_RNDV, 1, 1, 16, 1);
    EXPECT_EQ(DCX_WC_REM_INV_REQ_ERR, wc.status);
    ASSERT_EQ(0, dcx_qp_recover(tx.n.dci));
    /* longer than caps.tm_max_rndv_hdr */
    wc = send_rndv(1, 1, 10, 1, 0, 0, 0, 17);
    EXPECT_EQ(DCX_WC_REM_INV_REQ_ERR, wc.status);
    ASSERT_EQ(0, dcx_qp_recover(tx.n.dci));
    expect_quiet(rx);
    /* the entry is still listed */
    send_msg(DCX_TMH_EAGER, 1, 1, 10, 1);
    EXPECT_EQ(1u, pop(rx).wr_id);
}

TEST_F(soft_tm, unexpected_truncation_bad_flow)
{
    open_pair();
    /* no entry, and the message does not fit an SRQ buffer */
    dcx_wc_t wc = send_msg(DCX_TMH_EAGER, 1, 1, SRQ_SLOT, 1);
    EXPECT_EQ(DCX_WC_REM_INV_REQ_ERR, wc.status);
    wc = pop(rx);
    EXPECT_EQ(DCX_WC_LOC_LEN_ERR, wc.status);
    EXPECT_EQ(SRQ_WRID, wc.wr_id);
}

/* No SRQ buffer for an unexpected message: RNR, nothing consumed; it
 * lands once software posts a buffer. */
TEST_F(soft_tm, unexpected_rnr)
{
    open_pair();
    for (uint32_t i = 0; i < SRQ_SLOTS; ++i) {
        send_msg(DCX_TMH_EAGER, 1, i, 8, 0);
    }
    EXPECT_TRUE(wait(rx, SRQ_SLOTS));
    dcx_tmh_pack(tx.at(SEND_OFF), DCX_TMH_EAGER, 0xbeef, 1);
    ASSERT_EQ(0, post_to_rx(99, SEND_OFF, 16));
    double end = now_s() + 0.05;
    while (now_s() < end) {
        poll_both();
    }
    EXPECT_TRUE(tx.sent.empty());
    EXPECT_EQ(SRQ_SLOTS, rx.got.size());
    dcx_soft_stats_t st;
    ASSERT_EQ(0, dcx_soft_stats(rx.n.dev, &st));
    EXPECT_GE(st.rnr_naks_sent, 1u);
    rx.got.clear();
    ASSERT_EQ(0, rx.post_srq(5));
    dcx_wc_t wc = pop(rx);
    EXPECT_EQ(SRQ_WRID + 5, wc.wr_id);
    EXPECT_EQ(DCX_WC_TM_RECV, wc.opcode);
    end = now_s() + 20.0;
    while (tx.sent.empty() && (now_s() < end)) {
        poll_both();
    }
    ASSERT_FALSE(tx.sent.empty());
    EXPECT_EQ(DCX_WC_SUCCESS, tx.sent.front().status);
}

/* The sender gives up half way through a message matched to an entry (its
 * DCI fails and is recovered): the entry's receive is flushed. */
TEST_F(soft_tm, eager_abandoned_bad_flow)
{
    dcx_soft_limits_t l = fast_limits();
    open_pair(63, 256, &l);
    const uint32_t mtu = dcx_dev_caps(rx.n.dev)->mtu;
    uint32_t h         = add_ok(rx, 2, ~0ull, 1, 0, 4 * mtu);
    dcx_soft_fault_t f;
    memset(&f, 0, sizeof(f));
    f.type   = DCX_SOFT_FAULT_DROP;
    f.opcode = DCX_WR_SEND;
    f.skip   = 1; /* the first packet arrives, no other */
    ASSERT_EQ(0, dcx_soft_fault_inject(tx.n.dev, &f));
    EXPECT_EQ(DCX_WC_RETRY_EXC_ERR,
              send_msg(DCX_TMH_EAGER, 2, 0x21, 3 * mtu, 1).status);
    dcx_wc_t wc = pop(rx);
    EXPECT_EQ(DCX_WC_FLAG_TM_MATCH, wc.flags);
    EXPECT_EQ(1u, wc.wr_id);
    dcx_soft_fault_clear(tx.n.dev);
    ASSERT_EQ(0, dcx_qp_recover(tx.n.dci));
    /* the sender's next message shows the responder it moved on */
    EXPECT_EQ(DCX_WC_SUCCESS, send_msg(DCX_TMH_EAGER, 3, 0, 8, 1).status);
    wc = pop(rx);
    EXPECT_EQ(DCX_WC_WR_FLUSH_ERR, wc.status);
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(SRQ_WRID, pop(rx).wr_id); /* the next one: unexpected */
    {
        log_counter logs; /* the flushed entry is software's again */
        EXPECT_EQ(EINVAL, op(rx, DCX_TM_OP_DEL, DCX_TM_OPF_SIGNALED, h, 1));
        EXPECT_EQ(1, logs.lines());
    }
}

/* ------------------------------------------------------------------------
 * List operations
 * ------------------------------------------------------------------------ */
TEST_F(soft_tm, list_full_bad_flow)
{
    open_pair(7);
    uint32_t h[7];
    for (int i = 0; i < 7; ++i) {
        h[i] = add_ok(rx, 100 + i, ~0ull, i, 0, 64);
        EXPECT_LT(h[i], 7u);
    }
    {
        log_counter logs;
        EXPECT_EQ(ENOMEM, add(rx, 1, ~0ull, 9, 0, 64));
        EXPECT_EQ(0, logs.lines()); /* flow control, logged at debug */
    }
    /* a handle is software's again only once its completions are polled */
    ASSERT_EQ(0, op(rx, DCX_TM_OP_DEL, DCX_TM_OPF_SIGNALED, h[3], 77));
    EXPECT_EQ(ENOMEM, add(rx, 1, ~0ull, 9, 0, 64));
    dcx_wc_t wc = pop(rx);
    EXPECT_EQ(DCX_WC_TM_DEL, wc.opcode);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(77u, wc.wr_id);
    uint32_t nh;
    EXPECT_EQ(0, add(rx, 1, ~0ull, 9, 0, 64, 0, 0, &nh));
    EXPECT_EQ(h[3], nh);
    /* a consumed entry comes back when its completion is polled */
    send_msg(DCX_TMH_EAGER, 100, 0, 8, 0);
    EXPECT_TRUE(wait(rx, 1));
    EXPECT_EQ(0, add(rx, 2, ~0ull, 10, 0, 64, 0));
}

TEST_F(soft_tm, op_queue_full_bad_flow)
{
    open_pair(63, 4);
    ASSERT_EQ(0, op(rx, DCX_TM_OP_SYNC, 0, 0, 1));
    ASSERT_EQ(0, add(rx, 1, ~0ull, 1, 0, 64, 0));
    ASSERT_EQ(0, op(rx, DCX_TM_OP_SYNC, 0, 0, 2));
    ASSERT_EQ(0, op(rx, DCX_TM_OP_SYNC, DCX_TM_OPF_SIGNALED, 0, 3));
    {
        log_counter logs;
        EXPECT_EQ(ENOMEM, op(rx, DCX_TM_OP_SYNC, DCX_TM_OPF_SIGNALED, 0, 4));
        EXPECT_EQ(ENOMEM, add(rx, 2, ~0ull, 2, 0, 64));
        EXPECT_EQ(0, logs.lines());
    }
    /* polling the signalled one retires it and every one before it */
    dcx_wc_t wc = pop(rx);
    EXPECT_EQ(DCX_WC_TM_SYNC, wc.opcode);
    EXPECT_EQ(3u, wc.wr_id);
    for (uint64_t i = 0; i < 3; ++i) {
        EXPECT_EQ(0, op(rx, DCX_TM_OP_SYNC, 0, 0, 10 + i));
    }
    EXPECT_EQ(0, op(rx, DCX_TM_OP_SYNC, DCX_TM_OPF_SIGNALED, 0, 20));
    EXPECT_EQ(ENOMEM, op(rx, DCX_TM_OP_SYNC, 0, 0, 21));
    EXPECT_EQ(20u, pop(rx).wr_id);
    EXPECT_EQ(0, op(rx, DCX_TM_OP_SYNC, 0, 0, 22));
}

TEST_F(soft_tm, cancel)
{
    open_pair();
    uint32_t h = add_ok(rx, 4, ~0ull, 1, 0, 64);
    ASSERT_EQ(0, op(rx, DCX_TM_OP_DEL, DCX_TM_OPF_SIGNALED, h, 50));
    dcx_wc_t wc = pop(rx);
    EXPECT_EQ(DCX_WC_TM_DEL, wc.opcode);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(50u, wc.wr_id);
    send_msg(DCX_TMH_EAGER, 4, 0, 8, 0);
    EXPECT_EQ(SRQ_WRID, pop(rx).wr_id); /* unexpected now */
    /* an unsignalled DEL frees the handle at once (software reports the
     * unexpected message it has handled) */
    ASSERT_EQ(0, add(rx, 5, ~0ull, 2, 0, 64,
                     DCX_TM_OPF_SIGNALED | DCX_TM_OPF_SYNC, 1, &h));
    EXPECT_EQ(DCX_WC_TM_ADD, pop(rx).opcode);
    ASSERT_EQ(0, op(rx, DCX_TM_OP_DEL, 0, h, 51));
    {
        log_counter logs;
        EXPECT_EQ(EINVAL, op(rx, DCX_TM_OP_DEL, DCX_TM_OPF_SIGNALED, h, 52));
        EXPECT_EQ(1, logs.lines());
    }
    EXPECT_EQ(2u, tm_stats(rx).dels);
    expect_quiet(rx);
}

TEST_F(soft_tm, del_after_consume_bad_flow)
{
    open_pair();
    uint32_t h  = add_ok(rx, 6, ~0ull, 1, 0, 64);
    /* the message is matched before software's DEL reaches the device,
     * and software has not polled the receive's completion yet */
    rx_unpolled = true;
    send_msg(DCX_TMH_EAGER, 6, 0x66, 8, 1);
    rx_unpolled = false;
    ASSERT_EQ(0, op(rx, DCX_TM_OP_DEL, DCX_TM_OPF_SIGNALED, h, 60));
    dcx_wc_t wc = pop(rx);
    EXPECT_EQ(DCX_WC_TM_RECV, wc.opcode); /* the consumption arrives */
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(0x66u, wc.tm_priv);
    wc = pop(rx);
    EXPECT_EQ(DCX_WC_TM_DEL, wc.opcode);
    EXPECT_EQ(DCX_WC_TM_ERR, wc.status); /* and the DEL lost */
    EXPECT_EQ(60u, wc.wr_id);
    EXPECT_EQ(1u, tm_stats(rx).del_races);
    /* both polled: the handle is free and nothing is left in the list */
    {
        log_counter logs;
        EXPECT_EQ(EINVAL, op(rx, DCX_TM_OP_DEL, DCX_TM_OPF_SIGNALED, h, 61));
        EXPECT_EQ(1, logs.lines());
    }
    send_msg(DCX_TMH_EAGER, 6, 0, 8, 1);
    EXPECT_EQ(SRQ_WRID, pop(rx).wr_id);
}

/* ------------------------------------------------------------------------
 * Phase synchronisation (docs/device-semantics.md section 9.5)
 * ------------------------------------------------------------------------ */
/* Software posts a receive for tag T after m1 (tag T) arrived unexpected
 * but before it saw m1.  Posted with its true count (0), the entry is held:
 * m2 (tag T) goes unexpected too, so software can match m1 then m2 in
 * order.  After a SYNC with count 2 the entry takes m3. */
TEST_F(soft_tm, sync_required)
{
    open_pair();
    send_msg(DCX_TMH_EAGER, 0x10, 1, 8, 1); /* m1 */
    uint32_t h;
    ASSERT_EQ(0, add(rx, 0x10, ~0ull, 1, 0, 64,
                     DCX_TM_OPF_SIGNALED | DCX_TM_OPF_SYNC, 0, &h));
    send_msg(DCX_TMH_EAGER, 0x10, 2, 8, 2); /* m2 */
    dcx_wc_t wc = pop(rx);
    EXPECT_EQ(DCX_WC_TM_RECV, wc.opcode); /* m1 */
    EXPECT_EQ(0, wc.flags & DCX_WC_FLAG_TM_MATCH);
    EXPECT_EQ(SRQ_WRID, wc.wr_id);
    wc = pop(rx);
    EXPECT_EQ(DCX_WC_TM_ADD, wc.opcode);
    EXPECT_TRUE(wc.flags & DCX_WC_FLAG_TM_SYNC_REQ); /* held */
    wc = pop(rx);
    EXPECT_EQ(DCX_WC_TM_RECV, wc.opcode);          /* m2: not */
    EXPECT_EQ(0, wc.flags & DCX_WC_FLAG_TM_MATCH); /* matched */
    EXPECT_EQ(SRQ_WRID + 1, wc.wr_id);
    EXPECT_EQ(2u, rx.srq_buf(wc.wr_id)[7]); /* app_ctx 2 */
    EXPECT_EQ(2u, tm_stats(rx).unexp_eager);

    ASSERT_EQ(0, op(rx, DCX_TM_OP_SYNC, DCX_TM_OPF_SIGNALED | DCX_TM_OPF_SYNC,
                    0, 90, 2));
    wc = pop(rx);
    EXPECT_EQ(DCX_WC_TM_SYNC, wc.opcode);
    EXPECT_EQ(0, wc.flags & DCX_WC_FLAG_TM_SYNC_REQ);
    send_msg(DCX_TMH_EAGER, 0x10, 3, 8, 3); /* m3 */
    wc = pop(rx);
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(3u, wc.tm_priv);
}

/* The same sequence when software claims a count it has not reached: the
 * entry is eligible at once and m2 matches it before software has seen m1,
 * an out-of-order match; the device cannot know better. */
TEST_F(soft_tm, sync_skipped_matches_out_of_order)
{
    open_pair();
    send_msg(DCX_TMH_EAGER, 0x10, 1, 8, 1); /* m1 */
    ASSERT_EQ(0, add(rx, 0x10, ~0ull, 1, 0, 64,
                     DCX_TM_OPF_SIGNALED | DCX_TM_OPF_SYNC, 1));
    send_msg(DCX_TMH_EAGER, 0x10, 2, 8, 2); /* m2 */
    dcx_wc_t wc = pop(rx);
    EXPECT_EQ(SRQ_WRID, wc.wr_id); /* m1 */
    wc = pop(rx);
    EXPECT_EQ(DCX_WC_TM_ADD, wc.opcode);
    EXPECT_EQ(0, wc.flags & DCX_WC_FLAG_TM_SYNC_REQ);
    wc = pop(rx);
    EXPECT_EQ(1u, wc.wr_id); /* m2 took it */
    EXPECT_EQ(2u, wc.tm_priv);
}

/* ADD and DEL completions flag SYNC_REQ when the device's count differs
 * from the count given with the entry's ADD; SYNC completions never do. */
TEST_F(soft_tm, sync_req_on_list_ops)
{
    open_pair();
    uint32_t h = add_ok(rx, 0x20, ~0ull, 1, 0, 64); /* U = 0 */
    send_msg(DCX_TMH_EAGER, 0x21, 0, 8, 0);         /* U = 1 */
    rx.repost(pop(rx));
    ASSERT_EQ(0, op(rx, DCX_TM_OP_DEL, DCX_TM_OPF_SIGNALED, h, 5));
    dcx_wc_t wc = pop(rx);
    EXPECT_EQ(DCX_WC_TM_DEL, wc.opcode);
    EXPECT_TRUE(wc.flags & DCX_WC_FLAG_TM_SYNC_REQ);
    /* an ADD carrying the count: no flag, eligible at once */
    ASSERT_EQ(0, add(rx, 0x22, ~0ull, 2, 0, 64,
                     DCX_TM_OPF_SIGNALED | DCX_TM_OPF_SYNC, 1));
    wc = pop(rx);
    EXPECT_EQ(DCX_WC_TM_ADD, wc.opcode);
    EXPECT_EQ(0, wc.flags & DCX_WC_FLAG_TM_SYNC_REQ);
    ASSERT_EQ(0, op(rx, DCX_TM_OP_SYNC, DCX_TM_OPF_SIGNALED, 0, 6));
    wc = pop(rx);
    EXPECT_EQ(DCX_WC_TM_SYNC, wc.opcode);
    EXPECT_EQ(0, wc.flags & DCX_WC_FLAG_TM_SYNC_REQ);
    send_msg(DCX_TMH_EAGER, 0x22, 0, 8, 0);
    EXPECT_EQ(2u, pop(rx).wr_id);
}

/* An unexpected completion carries SYNC_REQ once more than 0x3fff
 * unexpected messages were polled since the count given with an ADD. */
TEST_F(soft_tm, sync_req_on_unexpected)
{
    open_pair();
    const uint32_t n = 0x4001;
    uint32_t flagged = 0, first_flagged = 0;
    for (uint32_t i = 1; i <= n; ++i) {
        send_msg(DCX_TMH_EAGER, 0x30, i, 0, 0);
        dcx_wc_t wc = pop(rx);
        ASSERT_EQ(DCX_WC_TM_RECV, wc.opcode);
        if (wc.flags & DCX_WC_FLAG_TM_SYNC_REQ) {
            flagged++;
            first_flagged = first_flagged ? first_flagged : i;
        }
        rx.repost(wc);
    }
    EXPECT_EQ(0x4000u, first_flagged);
    EXPECT_EQ(2u, flagged);
    /* software reports its count with an ADD: no more flags */
    ASSERT_EQ(0, add(rx, 0x31, ~0ull, 1, 0, 64, DCX_TM_OPF_SYNC, (uint16_t)n));
    send_msg(DCX_TMH_EAGER, 0x30, 0, 0, 0);
    dcx_wc_t wc = pop(rx);
    EXPECT_EQ(0, wc.flags & DCX_WC_FLAG_TM_SYNC_REQ);
}

/* The responder's one-pass path takes a single-packet message on a TM SRQ
 * only where no matching is needed: NO_TAG (never matched), and EAGER while
 * no entry is listed.  Its completions are those of the general path; an
 * eager that could match an entry, listed or held, still goes the general
 * way.  (The first message from a source always takes the general path: it
 * makes the responder state the one-pass path needs.) */
TEST_F(soft_tm, unmatched_single_packet_one_pass)
{
    open_pair();
    send_msg(DCX_TMH_NO_TAG, 0, 0, 8, 1); /* source known */
    rx.repost(pop(rx));
    uint64_t fast0 = tm_stats(rx).fast;

    send_msg(DCX_TMH_EAGER, 0x41, 0x7, 8, 2, true); /* empty list */
    dcx_wc_t wc = pop(rx);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_TM_RECV, wc.opcode);
    EXPECT_EQ(DCX_WC_FLAG_WITH_IMM, wc.flags);
    EXPECT_EQ(0x1234beefu, wc.imm);
    EXPECT_EQ(DCX_TM_TMH_LEN + 8, wc.byte_len);
    EXPECT_EQ(0u, wc.tm_tag);
    EXPECT_EQ(0u, wc.tm_priv);
    uint8_t opc;
    uint32_t ctx;
    uint64_t tag;
    dcx_tmh_unpack(rx.srq_buf(wc.wr_id), &opc, &ctx, &tag);
    EXPECT_EQ(DCX_TMH_EAGER, opc);
    EXPECT_EQ(0x7u, ctx);
    EXPECT_EQ(0x41u, tag);
    uint8_t want[8];
    fill(want, 8, 2);
    EXPECT_EQ(0, memcmp(rx.srq_buf(wc.wr_id) + DCX_TM_TMH_LEN, want, 8));
    rx.repost(wc);
    EXPECT_EQ(fast0 + 1, tm_stats(rx).fast);
    EXPECT_EQ(1u, tm_stats(rx).unexp_eager);

    /* a listed entry (software's count given: eligible at once): NO_TAG
     * and an EAGER it does not take still one pass, an EAGER it takes the
     * general path */
    ASSERT_EQ(0, add(rx, 0x42, ~0ull, 1, 0, 64,
                     DCX_TM_OPF_SIGNALED | DCX_TM_OPF_SYNC, 1));
    wc = pop(rx);
    EXPECT_EQ(DCX_WC_TM_ADD, wc.opcode);
    EXPECT_EQ(0, wc.flags & DCX_WC_FLAG_TM_SYNC_REQ);
    send_msg(DCX_TMH_NO_TAG, 0x42, 0, 8, 3);
    wc = pop(rx);
    EXPECT_EQ(DCX_WC_TM_NO_TAG, wc.opcode);
    EXPECT_EQ(0, wc.flags);
    rx.repost(wc);
    EXPECT_EQ(fast0 + 2, tm_stats(rx).fast);
    send_msg(DCX_TMH_EAGER, 0x43, 0, 8, 4);
    wc = pop(rx);
    EXPECT_EQ(DCX_WC_TM_RECV, wc.opcode);
    EXPECT_EQ(0, wc.flags & DCX_WC_FLAG_TM_MATCH);
    fill(want, 8, 4);
    EXPECT_EQ(0, memcmp(rx.srq_buf(wc.wr_id) + DCX_TM_TMH_LEN, want, 8));
    rx.repost(wc);
    EXPECT_EQ(fast0 + 3, tm_stats(rx).fast);
    send_msg(DCX_TMH_EAGER, 0x42, 0, 8, 5);
    wc = pop(rx);
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(DCX_WC_FLAG_TM_MATCH | DCX_WC_FLAG_TM_DATA_VALID, wc.flags);
    EXPECT_EQ(fast0 + 3, tm_stats(rx).fast);
    EXPECT_EQ(2u, tm_stats(rx).unexp_eager);
    EXPECT_EQ(1u, tm_stats(rx).matched);

    /* the list is empty again: an entry added while software is behind
     * the device's count is held (listed, not eligible), so an eager with
     * its tag does not match it, and goes to an SRQ buffer in one pass as
     * when nothing is listed (a stream that outruns its receiver meets a
     * list of held entries); the U it counts is what the next ADD's count
     * is compared with */
    ASSERT_EQ(0, add(rx, 0x44, ~0ull, 2, 0, 64,
                     DCX_TM_OPF_SIGNALED | DCX_TM_OPF_SYNC, 0));
    wc = pop(rx);
    EXPECT_EQ(DCX_WC_TM_ADD, wc.opcode);
    EXPECT_TRUE(wc.flags & DCX_WC_FLAG_TM_SYNC_REQ);
    send_msg(DCX_TMH_EAGER, 0x44, 0, 8, 6);
    wc = pop(rx);
    EXPECT_EQ(DCX_WC_TM_RECV, wc.opcode);
    EXPECT_EQ(0, wc.flags & DCX_WC_FLAG_TM_MATCH);
    EXPECT_EQ(fast0 + 4, tm_stats(rx).fast);
    EXPECT_EQ(3u, tm_stats(rx).unexp_eager);
    rx.repost(wc);

    /* software gives the device's count (3 unexpected): the held entry
     * becomes eligible and takes the next eager with its tag, on the
     * general path */
    dcx_tm_op_t op;
    memset(&op, 0, sizeof(op));
    op.opcode         = DCX_TM_OP_SYNC;
    op.flags          = DCX_TM_OPF_SYNC;
    op.unexpected_cnt = 3;
    ASSERT_EQ(0, dcx_srq_tm_post(rx.n.srq, &op));
    send_msg(DCX_TMH_EAGER, 0x44, 0, 8, 7);
    wc = pop(rx);
    EXPECT_EQ(2u, wc.wr_id);
    EXPECT_EQ(DCX_WC_FLAG_TM_MATCH | DCX_WC_FLAG_TM_DATA_VALID, wc.flags);
    EXPECT_EQ(fast0 + 4, tm_stats(rx).fast);
    EXPECT_EQ(3u, tm_stats(rx).unexp_eager);
    EXPECT_EQ(2u, tm_stats(rx).matched);
    fill(want, 8, 7);
    EXPECT_EQ(0, memcmp(rx.at(0), want, 8));
}

/* A TM SRQ with no device rendezvous under way does not keep its device
 * from serving a poll with a ring pass: an unexpected eager waiting in rx's
 * request ring is served by one locked poll of rx's CQ, in a ring pass, and
 * completes in that poll.  A rendezvous request that starts a device
 * rendezvous gets its whole passes (rndv_* tests).  Both helper threads
 * stopped: rx's helper serves the ring itself when this process is
 * descheduled between the post and the poll (tx prods it after
 * SOFT_PROD_NS), which a loaded machine does now and then. */
TEST_F(soft_tm, ring_pass_without_rendezvous)
{
    open_pair();
    soft_helper_stop(soft_dev(rx.n.dev));
    soft_helper_stop(soft_dev(tx.n.dev));
    send_msg(DCX_TMH_NO_TAG, 0, 0, 8, 1); /* source known */
    rx.repost(pop(rx));
    dcx_wc_t wc[4];
    while (dcx_cq_poll(rx.n.cq, 4, wc) != 0) { /* settled */
        ADD_FAILURE() << "a completion left at rx";
    }

    uint8_t *m = tx.at(SEND_OFF);
    dcx_tmh_pack(m, DCX_TMH_EAGER, 0, 0x51);
    fill(m + DCX_TM_TMH_LEN, 8, 7);
    dcx_sge_t s = {tx.va(SEND_OFF), DCX_TM_TMH_LEN + 8, tx.mr->lkey};
    dcx_send_wr_t wr;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id       = ++send_id;
    wr.opcode      = DCX_WR_SEND;
    wr.flags       = DCX_SEND_SIGNALED | DCX_SEND_INLINE;
    wr.num_sge     = 1;
    wr.sg_list     = &s;
    wr.dest.ah     = tx.n.ah;
    wr.dest.dctn   = rx.n.dct->qp_num;
    wr.dest.dc_key = KEY;
    ASSERT_EQ(0, dcx_qp_post_send(tx.n.dci, &wr));

    dcx_soft_stats_t b0 = dev_stats(rx.n);
    ASSERT_EQ(1, dcx_cq_poll(rx.n.cq, 4, wc));
    dcx_soft_stats_t b1 = dev_stats(rx.n);
    EXPECT_EQ(b0.ring_passes + 1, b1.ring_passes);
    EXPECT_EQ(b0.locked_polls + 1, b1.locked_polls);
    EXPECT_EQ(DCX_WC_SUCCESS, wc[0].status);
    EXPECT_EQ(DCX_WC_TM_RECV, wc[0].opcode);
    EXPECT_EQ(DCX_TM_TMH_LEN + 8, wc[0].byte_len);
    rx.repost(wc[0]);
    double end = now_s() + 20.0;
    while (tx.sent.empty() && (now_s() < end)) {
        poll_both();
    }
    ASSERT_EQ(1u, tx.sent.size());
    EXPECT_EQ(DCX_WC_SUCCESS, tx.sent.front().status);
}
