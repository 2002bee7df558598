/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: the UCT tag-matching API over a tag-matching SRQ
 * (UCX_DCX_TM_ENABLE), in one process, under every DCI policy:
 *  - capabilities follow the knob and the interface parameters;
 *  - expected eager short/bcopy/zcopy land in the posted buffer (0 B to the
 *    maximum), with the sender's tag and immediate;
 *  - unexpected eager goes to the eager callback with its tag and immediate;
 *  - software rendezvous requests, expected and unexpected;
 *  - receive cancel, with and without force; a full list;
 *  - AMs between TM and non-TM interfaces, both ways (a mixed job);
 *  - bad flows: tagged send to a non-TM peer, too long, bad iov.
 */
#include "uct_tag_fixture.h"


TEST_P(uct_dcx_tag, caps_follow_the_knob)
{
    entity *on = create_tm("y"), *off = create_tm("n"), *def = create_tm("try");
    uint64_t tag_flags = UCT_IFACE_FLAG_TAG_EAGER_SHORT |
                         UCT_IFACE_FLAG_TAG_EAGER_BCOPY |
                         UCT_IFACE_FLAG_TAG_EAGER_ZCOPY |
                         UCT_IFACE_FLAG_TAG_RNDV_ZCOPY;

    EXPECT_EQ(tag_flags, on->attr.cap.flags & tag_flags);
    EXPECT_EQ(tag_flags, def->attr.cap.flags & tag_flags);
    EXPECT_EQ(0u, off->attr.cap.flags & tag_flags);
    /* 64 bytes of rendezvous request, 48 of them headers, and 2 bytes in
     * the TMH: UCP's offload header (17 bytes) fits */
    EXPECT_EQ(18u, on->attr.cap.tag.rndv.max_hdr);
    EXPECT_EQ(1u, on->attr.cap.tag.rndv.max_iov);
    EXPECT_GT(on->attr.cap.tag.recv.max_outstanding, 0u);
    EXPECT_EQ(1u, on->attr.cap.tag.recv.max_iov);
    EXPECT_GT(on->attr.cap.tag.eager.max_bcopy, 0u);
    EXPECT_EQ(on->attr.cap.am.max_bcopy, off->attr.cap.am.max_bcopy);
}

TEST_P(uct_dcx_tag, no_tag_params_no_tm)
{
    m_tag_params = false;
    entity *e    = create_tm("try");

    EXPECT_EQ(0u, e->attr.cap.flags & UCT_IFACE_FLAG_TAG_EAGER_BCOPY);
}

/* UCX_DCX_TM_ENABLE=y without unexpected-message callbacks (as ucx_info -d
 * opens an interface): the tag capabilities are offered, a posted receive
 * is filled, and an unexpected message is dropped with one warning */
TEST_P(uct_dcx_tag, forced_without_callbacks)
{
    m_tag_params           = false;
    entity *b              = create_tm("y");
    m_tag_params           = true;
    entity *a              = create_tm("y");
    uct_ep_h ep            = connect(a, b);
    std::vector<char> data = pattern(100, 7);
    mem m                  = alloc_mem(164);
    recv_ctx ctx;

    EXPECT_NE(0u, b->attr.cap.flags & UCT_IFACE_FLAG_TAG_EAGER_BCOPY);
    EXPECT_NE(0u, b->attr.cap.flags & UCT_IFACE_FLAG_TAG_RNDV_ZCOPY);

    post_recv(b, ctx, m, 164, 0x42);
    send_eager(ep, 1, 0x42, 0, data);
    ASSERT_TRUE(wait_for([&]() { return ctx.completed > 0; }));
    EXPECT_EQ(UCS_OK, ctx.status);
    EXPECT_EQ(data.size(), ctx.length);
    EXPECT_EQ(0, memcmp(m.ptr, data.data(), data.size()));

    log_counter::reset();
    send_eager(ep, 1, 0x43, 0, data);
    ASSERT_TRUE(wait_for([&]() { return log_counter::warnings() > 0; }))
        << "no warning for an unexpected message without eager_cb";
    EXPECT_TRUE(log_counter::contains("has no eager_cb"))
        << log_counter::joined();
    EXPECT_EQ(1, log_counter::warnings()) << log_counter::joined();
    log_counter::reset();
}

TEST_P(uct_dcx_tag, expected_eager_short)
{
    expected_eager(0);
}

TEST_P(uct_dcx_tag, expected_eager_bcopy)
{
    expected_eager(1);
}

TEST_P(uct_dcx_tag, expected_eager_zcopy)
{
    expected_eager(2);
}

TEST_P(uct_dcx_tag, unexpected_eager_short)
{
    unexpected_eager(0);
}

TEST_P(uct_dcx_tag, unexpected_eager_bcopy)
{
    unexpected_eager(1);
}

TEST_P(uct_dcx_tag, unexpected_eager_zcopy)
{
    unexpected_eager(2);
}

TEST_P(uct_dcx_tag, wildcard_mask_and_order)
{
    entity *a = create_tm(), *b = create_tm();
    uct_ep_h ep = connect(a, b);
    mem m1 = alloc_mem(64), m2 = alloc_mem(64);
    recv_ctx c1, c2;

    /* both match tag 0x5; the older one first */
    post_recv(b, c1, m1, 64, 0x5, 0xf);
    post_recv(b, c2, m2, 64, 0x0, 0x0);
    send_eager(ep, 1, 0xab05, 0, pattern(10, 1));
    send_eager(ep, 1, 0x5, 0, pattern(10, 2));
    ASSERT_TRUE(wait_for([&]() { return c1.completed && c2.completed; }));
    EXPECT_EQ((uct_tag_t)0xab05, c1.stag);
    EXPECT_EQ((uct_tag_t)0x5, c2.stag);
    EXPECT_EQ(0, memcmp(m1.ptr, pattern(10, 1).data(), 10));
    EXPECT_EQ(0, memcmp(m2.ptr, pattern(10, 2).data(), 10));
}

TEST_P(uct_dcx_tag, rndv_request_expected_and_unexpected)
{
    entity *a = create_tm(), *b = create_tm();
    uct_ep_h ep = connect(a, b);
    mem m       = alloc_mem(256);
    recv_ctx ctx;
    std::vector<char> hdr = pattern(40, 9);
    ucs_status_t status;

    post_recv(b, ctx, m, 256, 0x42);
    ASSERT_TRUE(wait_for([&]() {
        status = uct_ep_tag_rndv_request(ep, 0x42, hdr.data(), hdr.size(), 0);
        return status != UCS_ERR_NO_RESOURCE;
    }));
    ASSERT_EQ(UCS_OK, status);
    ASSERT_TRUE(wait_for([&]() { return ctx.rndv > 0; }));
    EXPECT_EQ(0, ctx.completed);
    EXPECT_EQ(UCS_OK, ctx.status);
    EXPECT_EQ((uct_tag_t)0x42, ctx.stag);
    EXPECT_TRUE(ctx.header == hdr);

    ASSERT_EQ(UCS_OK,
              uct_ep_tag_rndv_request(ep, 0x43, hdr.data(), hdr.size(), 0));
    ASSERT_TRUE(wait_for([&]() { return !m_unexp.empty(); }));
    EXPECT_TRUE(m_unexp[0].rndv);
    EXPECT_EQ((uct_tag_t)0x43, m_unexp[0].tag);
    EXPECT_TRUE(m_unexp[0].data == hdr);
}

/* The receiver's device reads the data and sends the FIN: the sender's
 * operation completes, the receive completes with the whole message */
TEST_P(uct_dcx_tag, rndv_zcopy_device_completed)
{
    entity *a = create_tm(), *b = create_tm();
    uct_ep_h ep    = connect(a, b);
    size_t sizes[] = {1, 9000, 256 * 1024, 4 * 1024 * 1024};
    char hdr[18]   = "rndv-header-18-b";

    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        size_t len = sizes[i];
        mem src = alloc_mem(len), dst = alloc_mem(len);
        std::vector<char> data = pattern(len, i + 11);
        recv_ctx ctx;
        test_comp comp;
        void *op;

        memcpy(src.ptr, data.data(), len);
        post_recv(b, ctx, dst, len, 0x500 + i);
        uct_iov_t iov = {src.ptr, len, src.memh, 0, 1};
        ASSERT_TRUE(wait_for([&]() {
            op = uct_ep_tag_rndv_zcopy(ep, 0x500 + i, hdr, sizeof(hdr), &iov, 1,
                                       0, &comp.uct);
            return op != UCS_STATUS_PTR(UCS_ERR_NO_RESOURCE);
        }));
        ASSERT_FALSE(UCS_PTR_IS_ERR(op));
        ASSERT_TRUE(wait_for([&]() {
            return (ctx.completed > 0) && (comp.done > 0);
        })) << "size "
            << len;
        EXPECT_EQ(UCS_OK, comp.status);
        EXPECT_EQ(1, ctx.consumed);
        EXPECT_EQ(UCS_OK, ctx.status);
        EXPECT_EQ(0x500 + i, ctx.stag);
        EXPECT_EQ(len, ctx.length);
        EXPECT_EQ(0, memcmp(dst.ptr, data.data(), len)) << "size " << len;
        EXPECT_TRUE(m_unexp.empty());
    }
}

/* No receive posted: the rndv callback gets the sender's buffer and rkey;
 * software reads it, and the sender cancels its operation */
TEST_P(uct_dcx_tag, rndv_zcopy_unexpected_software_completed)
{
    entity *a = create_tm(), *b = create_tm();
    uct_ep_h ep = connect(a, b), back = connect(b, a);
    size_t len = 300 * 1024;
    mem src = alloc_mem(len), dst = alloc_mem(len);
    std::vector<char> data = pattern(len, 77);
    char hdr[18]           = "sw-rndv-18-bytes";
    test_comp comp, get;
    void *op;

    memcpy(src.ptr, data.data(), len);
    uct_iov_t iov = {src.ptr, len, src.memh, 0, 1};
    op = uct_ep_tag_rndv_zcopy(ep, 0x600, hdr, sizeof(hdr), &iov, 1, 0,
                               &comp.uct);
    ASSERT_FALSE(UCS_PTR_IS_ERR(op));
    ASSERT_TRUE(wait_for([&]() { return !m_unexp.empty(); }));
    ASSERT_TRUE(m_unexp[0].rndv);
    EXPECT_EQ((uct_tag_t)0x600, m_unexp[0].tag);
    ASSERT_EQ(sizeof(hdr), m_unexp[0].data.size());
    EXPECT_EQ(0, memcmp(m_unexp[0].data.data(), hdr, sizeof(hdr)));
    ASSERT_EQ((uint64_t)(uintptr_t)src.ptr, m_rndv_va);
    ASSERT_EQ(len, m_rndv_len);

    uct_rkey_bundle_t rkb;
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, m_rndv_rkey.data(), &rkb));
    uct_iov_t diov      = {dst.ptr, len, dst.memh, 0, 1};
    ucs_status_t status = uct_ep_get_zcopy(back, &diov, 1, m_rndv_va, rkb.rkey,
                                           &get.uct);
    ASSERT_TRUE((status == UCS_OK) || (status == UCS_INPROGRESS));
    if (status == UCS_INPROGRESS) {
        ASSERT_TRUE(wait_for([&]() { return get.done > 0; }));
        EXPECT_EQ(UCS_OK, get.status);
    }
    EXPECT_EQ(0, memcmp(dst.ptr, data.data(), len));
    uct_rkey_release(m_component, &rkb);

    EXPECT_EQ(0, comp.done);
    EXPECT_EQ(UCS_OK, uct_ep_tag_rndv_cancel(ep, op));
    progress();
    EXPECT_EQ(0, comp.done);
}

TEST_P(uct_dcx_tag, rndv_cancel)
{
    entity *a = create_tm(), *b = create_tm();
    uct_ep_h ep = connect(a, b);
    mem src     = alloc_mem(4096);
    test_comp comp;
    void *op;

    uct_iov_t iov = {src.ptr, 4096, src.memh, 0, 1};
    op = uct_ep_tag_rndv_zcopy(ep, 0x700, NULL, 0, &iov, 1, 0, &comp.uct);
    ASSERT_FALSE(UCS_PTR_IS_ERR(op));
    ASSERT_EQ(UCS_OK, uct_ep_tag_rndv_cancel(ep, op));
    /* the FIN of a later match finds nothing: no completion */
    ASSERT_TRUE(wait_for([&]() { return !m_unexp.empty(); }));
    flush_ep(ep);
    progress();
    EXPECT_EQ(0, comp.done);

    log_counter::reset();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_ep_tag_rndv_cancel(ep, op));
    EXPECT_EQ(1, log_counter::errors());
    log_counter::reset();
}

TEST_P(uct_dcx_tag, rndv_zcopy_bad_flow)
{
    entity *a = create_tm(), *b = create_tm();
    uct_ep_h ep  = connect(a, b);
    mem src      = alloc_mem(4096);
    char hdr[19] = {0};
    test_comp comp;

    log_counter::reset();
    uct_iov_t iov = {src.ptr, 4096, src.memh, 0, 1};
    /* header too large: 64 - 48 + 2 = 18 bytes at most */
    EXPECT_EQ(UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM),
              uct_ep_tag_rndv_zcopy(ep, 1, hdr, sizeof(hdr), &iov, 1, 0,
                                    &comp.uct));
    uct_iov_t bad = {src.ptr, 4096, UCT_MEM_HANDLE_NULL, 0, 1};
    EXPECT_EQ(UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM),
              uct_ep_tag_rndv_zcopy(ep, 1, hdr, 8, &bad, 1, 0, &comp.uct));
    EXPECT_EQ(2, log_counter::errors()) << log_counter::joined();
    log_counter::reset();
}

/* The receiver is gone: the rendezvous in flight completes with an error
 * through the endpoint's failure, and the error handler hears of it */
TEST_P(uct_dcx_tag, rndv_to_dead_peer_bad_flow)
{
    std::map<std::string, std::string> cfg;
    cfg["TM_ENABLE"]   = "y";
    cfg["TIMEOUT"]     = "5ms";
    cfg["RETRY_COUNT"] = "1";
    entity *a = create_entity(cfg), *b = create_tm();
    uct_ep_h ep = connect(a, b);
    mem src     = alloc_mem(100000);
    test_comp comp;
    void *op;

    /* b goes away */
    uct_iface_close(b->iface);
    uct_worker_destroy(b->worker);
    m_entities.erase(std::find(m_entities.begin(), m_entities.end(), b));
    delete b;

    uct_iov_t iov = {src.ptr, 100000, src.memh, 0, 1};
    op = uct_ep_tag_rndv_zcopy(ep, 0x800, NULL, 0, &iov, 1, 0, &comp.uct);
    ASSERT_FALSE(UCS_PTR_IS_ERR(op));
    ASSERT_TRUE(wait_for([&]() { return comp.done > 0; }));
    EXPECT_TRUE(UCS_STATUS_IS_ERR(comp.status));
    EXPECT_FALSE(m_errors.empty());
    log_counter::reset();
}

TEST_P(uct_dcx_tag, recv_cancel)
{
    entity *a = create_tm(), *b = create_tm();
    uct_ep_h ep = connect(a, b);
    mem m       = alloc_mem(64);
    recv_ctx c1, c2;

    /* not forced: reported as cancelled */
    post_recv(b, c1, m, 64, 0x1);
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &c1.uct, 0));
    ASSERT_TRUE(wait_for([&]() { return c1.completed > 0; }));
    EXPECT_EQ(UCS_ERR_CANCELED, c1.status);
    EXPECT_EQ(0, c1.consumed);

    /* forced: never reported, and the tag no longer matches */
    post_recv(b, c2, m, 64, 0x2);
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &c2.uct, 1));
    send_eager(ep, 1, 0x2, 0, pattern(8, 1));
    ASSERT_TRUE(wait_for([&]() { return !m_unexp.empty(); }));
    EXPECT_EQ(0, c2.completed);
    EXPECT_EQ(0, c2.consumed);
    EXPECT_EQ((uct_tag_t)0x2, m_unexp[0].tag);
}

/* UCX's test_tag.tag_cancel_noforce and tag_post_same: the completion of
 * an unforced cancel reports the receive as posted (its tag and the length
 * of its buffer, as UCX's rc/dc do), then the context may be posted again
 * and a message completes it with the sender's tag and length */
TEST_P(uct_dcx_tag, unforced_cancel_reports_posted_receive)
{
    entity *a = create_tm(), *b = create_tm();
    uct_ep_h ep = connect(a, b);
    mem m       = alloc_mem(128);
    recv_ctx c;

    post_recv(b, c, m, 128, 0x5a5a);
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &c.uct, 0));
    ASSERT_TRUE(wait_for([&]() { return c.completed > 0; }));
    EXPECT_EQ(UCS_ERR_CANCELED, c.status);
    EXPECT_EQ((uct_tag_t)0x5a5a, c.stag);
    EXPECT_EQ(128u, c.length);
    EXPECT_EQ(0, c.consumed);

    /* a partial mask, a shorter buffer: still the tag as posted */
    c = recv_ctx();
    post_recv(b, c, m, 40, 0x3300, 0xff00);
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &c.uct, 0));
    ASSERT_TRUE(wait_for([&]() { return c.completed > 0; }));
    EXPECT_EQ(UCS_ERR_CANCELED, c.status);
    EXPECT_EQ((uct_tag_t)0x3300, c.stag);
    EXPECT_EQ(40u, c.length);

    /* posted again after that completion: a message reports its own */
    c = recv_ctx();
    post_recv(b, c, m, 128, 0x3300, 0xff00);
    send_eager(ep, 1, 0x33aa, 0, pattern(24, 9));
    ASSERT_TRUE(wait_for([&]() { return c.completed > 0; }));
    EXPECT_EQ(UCS_OK, c.status);
    EXPECT_EQ((uct_tag_t)0x33aa, c.stag);
    EXPECT_EQ(24u, c.length);
    EXPECT_EQ(1, c.consumed);
}

/* A stream of unexpected messages: past 0x3fff since the last ADD the
 * device asks for a SYNC on every one of them, but one SYNC per
 * UCT_DCX_TM_SYNC_GAP (0x1000) messages keeps its count close enough */
TEST_P(uct_dcx_tag, unexpected_stream_syncs_once_per_gap)
{
    entity *a = create_tm(), *b = create_tm_counted();
    uct_ep_h ep            = connect(a, b);
    const unsigned count   = 0x4000 + 0x800;
    std::vector<char> data = pattern(8, 5);

    for (unsigned i = 0; i < count; ++i) {
        send_eager(ep, 0, 0x55, 0, data);
        if ((i % 64) == 63) {
            progress();
        }
    }
    ASSERT_TRUE(wait_for([&]() { return m_unexp.size() == count; }));
    /* the device asked from message 0x4000 on; one SYNC brought it the
     * count, the next is due at 0x5000 (not one SYNC per message) */
    EXPECT_EQ(1u, tm_counter(TM_SYNCS));
}

/* A DEL that carries the count the device asks for needs no SYNC after it:
 * the entry was added before an unexpected message came, so the DEL's
 * completion asks, but the DEL itself gave the device the new count */
TEST_P(uct_dcx_tag, list_op_with_current_count_needs_no_sync)
{
    entity *a = create_tm(), *b = create_tm_counted();
    uct_ep_h ep = connect(a, b);
    mem m       = alloc_mem(64);
    recv_ctx c1, c2;

    post_recv(b, c1, m, 64, 0x10);
    send_eager(ep, 1, 0x20, 0, pattern(8, 2)); /* unexpected */
    ASSERT_TRUE(wait_for([&]() { return m_unexp.size() == 1; }));
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &c1.uct, 0));
    ASSERT_TRUE(wait_for([&]() { return c1.completed > 0; }));
    EXPECT_EQ(UCS_ERR_CANCELED, c1.status);
    EXPECT_EQ(0u, tm_counter(TM_SYNCS));
    EXPECT_EQ(1u, tm_counter(TM_CANCELS));

    /* and a receive posted now still matches */
    post_recv(b, c2, m, 64, 0x30);
    send_eager(ep, 1, 0x30, 0, pattern(8, 3));
    ASSERT_TRUE(wait_for([&]() { return c2.completed > 0; }));
    EXPECT_EQ(UCS_OK, c2.status);
    EXPECT_EQ(1u, m_unexp.size());
}

TEST_P(uct_dcx_tag, recv_cancel_bad_flow)
{
    entity *b = create_tm();
    recv_ctx never_posted;

    log_counter::reset();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_iface_tag_recv_cancel(b->iface, &never_posted.uct, 0));
    EXPECT_EQ(1, log_counter::errors());
    EXPECT_TRUE(log_counter::contains("not a posted receive"));
    log_counter::reset();
}

TEST_P(uct_dcx_tag, list_full_bad_flow)
{
    entity *b    = create_tm();
    unsigned max = b->attr.cap.tag.recv.max_outstanding;
    std::vector<recv_ctx> ctx(max + 1);
    ucs_status_t status;
    unsigned i;

    for (i = 0; i < max; ++i) {
        do {
            status = uct_iface_tag_recv_zcopy(b->iface, i, (uct_tag_t)-1, NULL,
                                              0, &ctx[i].uct);
            if (status == UCS_ERR_NO_RESOURCE) {
                progress();
            }
        } while (status == UCS_ERR_NO_RESOURCE);
        ASSERT_EQ(UCS_OK, status) << i;
    }
    EXPECT_EQ(UCS_ERR_EXCEEDS_LIMIT,
              uct_iface_tag_recv_zcopy(b->iface, max, (uct_tag_t)-1, NULL, 0,
                                       &ctx[max].uct));
    /* a cancelled entry frees a place */
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &ctx[0].uct, 0));
    ASSERT_TRUE(wait_for([&]() { return ctx[0].completed > 0; }));
    ASSERT_TRUE(wait_for([&]() {
        status = uct_iface_tag_recv_zcopy(b->iface, max, (uct_tag_t)-1, NULL, 0,
                                          &ctx[max].uct);
        return status != UCS_ERR_EXCEEDS_LIMIT && status != UCS_ERR_NO_RESOURCE;
    }));
    EXPECT_EQ(UCS_OK, status);
    for (i = 1; i <= max; ++i) {
        uct_iface_tag_recv_cancel(b->iface, &ctx[i].uct, 1);
    }
    progress();
}

/* A receive cancelled with force gives its place back at once, as UCX's
 * rc_mlx5 does and UCX's own test_tag.tag_limit expects: a full list, one
 * cancelled with force, and the next post goes in with no progress
 * between, though the removal has not completed.  Spare entries stand in
 * for the removed ones until their completions are polled: more forced
 * cancels than spares, with no progress, leave the list full until then.
 * A context cancelled with force is not taken again (a bad flow). */
TEST_P(uct_dcx_tag, forced_cancel_frees_place_at_once)
{
    entity *b    = create_tm();
    unsigned max = b->attr.cap.tag.recv.max_outstanding;
    std::vector<recv_ctx> ctx(2 * max + 1);
    ucs_status_t status;
    unsigned i, spare, more;

    for (i = 0; i < max; ++i) {
        ASSERT_TRUE(wait_for([&]() {
            status = uct_iface_tag_recv_zcopy(b->iface, i, (uct_tag_t)-1, NULL,
                                              0, &ctx[i].uct);
            return status != UCS_ERR_NO_RESOURCE;
        }));
        ASSERT_EQ(UCS_OK, status) << i;
    }
    EXPECT_EQ(UCS_ERR_EXCEEDS_LIMIT,
              uct_iface_tag_recv_zcopy(b->iface, max, (uct_tag_t)-1, NULL, 0,
                                       &ctx[max].uct));

    /* one, no progress: it goes in */
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &ctx[0].uct, 1));
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_zcopy(b->iface, max, (uct_tag_t)-1,
                                               NULL, 0, &ctx[max].uct));
    log_counter::reset();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_iface_tag_recv_cancel(b->iface, &ctx[0].uct, 1));
    EXPECT_EQ(1, log_counter::errors()) << log_counter::joined();
    log_counter::reset();

    /* all of them, no progress: the spares go in, then the list is full
     * until the removals complete */
    for (i = 1; i <= max; ++i) {
        ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &ctx[i].uct, 1))
            << i;
    }
    for (spare = 0; spare < max; ++spare) {
        status = uct_iface_tag_recv_zcopy(b->iface, spare, (uct_tag_t)-1, NULL,
                                          0, &ctx[max + 1 + spare].uct);
        if (status != UCS_OK) {
            break;
        }
    }
    EXPECT_EQ(UCS_ERR_EXCEEDS_LIMIT, status);
    EXPECT_LT(spare, max);
    /* the rest go in as the removals complete */
    more = max - spare;
    for (i = 0; i < more; ++i) {
        unsigned k = max + 1 + spare + i;
        ASSERT_TRUE(wait_for([&]() {
            status = uct_iface_tag_recv_zcopy(b->iface, i, (uct_tag_t)-1, NULL,
                                              0, &ctx[k].uct);
            return (status != UCS_ERR_EXCEEDS_LIMIT) &&
                   (status != UCS_ERR_NO_RESOURCE);
        })) << i;
        ASSERT_EQ(UCS_OK, status) << i;
    }
    for (i = max + 1; i < max + 1 + spare + more; ++i) {
        ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &ctx[i].uct, 1));
    }
    progress();
}

TEST_P(uct_dcx_tag, truncated_bad_flow)
{
    entity *a = create_tm(), *b = create_tm();
    uct_ep_h ep = connect(a, b);
    mem m       = alloc_mem(64);
    recv_ctx ctx;

    post_recv(b, ctx, m, 16, 0x9);
    send_eager(ep, 1, 0x9, 0, pattern(100, 1));
    ASSERT_TRUE(wait_for([&]() { return ctx.completed > 0; }));
    EXPECT_EQ(UCS_ERR_MESSAGE_TRUNCATED, ctx.status);
}

/* A rendezvous larger than the posted buffer: the device reports it
 * incomplete (docs/device-semantics.md section 9.7 step 5); the receive
 * completes truncated and the transport sends the FIN itself, so the
 * sender's operation completes too */
TEST_P(uct_dcx_tag, rndv_truncated_bad_flow)
{
    entity *a = create_tm(), *b = create_tm();
    uct_ep_h ep = connect(a, b);
    size_t len  = 5000;
    mem src = alloc_mem(len), dst = alloc_mem(256);
    std::vector<char> data = pattern(len, 3);
    recv_ctx ctx, next;
    test_comp comp;
    void *op;

    memcpy(src.ptr, data.data(), len);
    post_recv(b, ctx, dst, 100, 0xa0);
    uct_iov_t iov = {src.ptr, len, src.memh, 0, 1};
    op = uct_ep_tag_rndv_zcopy(ep, 0xa0, "trunc", 5, &iov, 1, 0, &comp.uct);
    ASSERT_FALSE(UCS_PTR_IS_ERR(op));
    ASSERT_TRUE(wait_for([&]() { return ctx.completed > 0; }));
    EXPECT_EQ(UCS_ERR_MESSAGE_TRUNCATED, ctx.status);
    EXPECT_EQ(1, ctx.consumed);
    EXPECT_EQ((uct_tag_t)0xa0, ctx.stag);
    ASSERT_TRUE(wait_for([&]() { return comp.done > 0; }))
        << "the sender's rendezvous never completed";
    EXPECT_EQ(UCS_OK, comp.status);
    EXPECT_TRUE(m_unexp.empty());

    /* both sides go on: the next rendezvous of the same pair fits */
    test_comp comp2;
    post_recv(b, next, dst, 256, 0xa1);
    uct_iov_t iov2 = {src.ptr, 200, src.memh, 0, 1};
    op = uct_ep_tag_rndv_zcopy(ep, 0xa1, NULL, 0, &iov2, 1, 0, &comp2.uct);
    ASSERT_FALSE(UCS_PTR_IS_ERR(op));
    ASSERT_TRUE(wait_for([&]() {
        return (next.completed > 0) && (comp2.done > 0);
    }));
    EXPECT_EQ(UCS_OK, next.status);
    EXPECT_EQ(200u, next.length);
    EXPECT_EQ(0, memcmp(dst.ptr, data.data(), 200));
    EXPECT_EQ(UCS_OK, comp2.status);
}

TEST_P(uct_dcx_tag, send_bad_flow)
{
    entity *a = create_tm(), *b = create_tm(), *n = create_tm("n");
    uct_ep_h ep   = connect(a, b);
    uct_ep_h ep_n = connect(a, n);
    std::vector<char> big(a->attr.cap.tag.eager.max_short + 1);

    log_counter::reset();
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_ep_tag_eager_short(ep_n, 1, big.data(), 1));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_tag_eager_short(ep, 1, big.data(), big.size()));
    uct_iov_t iov = {big.data(), 1, UCT_MEM_HANDLE_NULL, 0, 1};
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_tag_eager_zcopy(ep, 1, 0, &iov, 1, 0, NULL));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_iface_tag_recv_zcopy(n->iface, 1, 1, NULL, 0, NULL));
    EXPECT_EQ(4, log_counter::errors()) << log_counter::joined();
    log_counter::reset();
}

/* UCX_DCX_TM_SEG_SIZE sizes the receive buffers of a TM SRQ: the largest
 * eager tagged message (the larger of it and SEG_SIZE); the AM limits and a
 * non-TM interface do not change */
TEST_P(uct_dcx_tag, tm_seg_size_sets_the_eager_maximum)
{
    entity *def = create_tm("y");
    entity *off = create_tm("n");
    entity *big = create_entity({{"TM_ENABLE", "y"}, {"TM_SEG_SIZE", "32k"}});
    entity *seg = create_entity({{"TM_ENABLE", "y"},
                                 {"SEG_SIZE", "16k"},
                                 {"TM_SEG_SIZE", "4k"}});

    ASSERT_TRUE(def && off && big && seg);
    /* the default: the device model's break-even (tm_model_thresholds),
     * whole KiB, SEG_SIZE (8 KiB) to 64 KiB (UCP sends by rendezvous from
     * the maximum on) */
    EXPECT_GE(def->attr.cap.tag.eager.max_zcopy, 8192u);
    EXPECT_LE(def->attr.cap.tag.eager.max_zcopy, 65536u);
    EXPECT_EQ(0u, def->attr.cap.tag.eager.max_zcopy % 1024);
    EXPECT_EQ(def->attr.cap.tag.eager.max_zcopy,
              def->attr.cap.tag.eager.max_bcopy);
    EXPECT_EQ(32768u, big->attr.cap.tag.eager.max_bcopy);
    EXPECT_EQ(32768u, big->attr.cap.tag.eager.max_zcopy);
    EXPECT_EQ(16384u, seg->attr.cap.tag.eager.max_bcopy);
    EXPECT_EQ(16384u, seg->attr.cap.tag.eager.max_zcopy);
    EXPECT_EQ(off->attr.cap.am.max_bcopy, def->attr.cap.am.max_bcopy);
    EXPECT_EQ(off->attr.cap.am.max_bcopy, big->attr.cap.am.max_bcopy);
    EXPECT_EQ(off->attr.cap.am.max_zcopy, big->attr.cap.am.max_zcopy);
    EXPECT_EQ(0u, off->attr.cap.tag.eager.max_bcopy);
}

/* Eager messages between SEG_SIZE (8 KiB) and TM_SEG_SIZE: an expected one
 * lands in the posted buffer, an unexpected one reaches the eager callback
 * whole, bcopy and zcopy; one byte more is refused with one error line */
TEST_P(uct_dcx_tag, eager_above_seg_size)
{
    std::map<std::string, std::string> cfg = {{"TM_ENABLE", "y"},
                                              {"TM_SEG_SIZE", "40k"}};
    entity *a = create_entity(cfg), *b = create_entity(cfg);
    uct_ep_h ep    = connect(a, b);
    size_t sizes[] = {8193, 20000, 40 * 1024};

    ASSERT_EQ(40u * 1024, a->attr.cap.tag.eager.max_zcopy);
    for (int how = 1; how <= 2; ++how) {
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
            size_t len             = sizes[i];
            std::vector<char> data = pattern(len, 5 * i + how);
            uint64_t imm           = 0x4400000000000000ull | i;
            mem m                  = alloc_mem(len + 64);
            recv_ctx ctx;

            memset(m.ptr, 0, len + 64);
            post_recv(b, ctx, m, len + 64, 0x500 + i);
            send_eager(ep, how, 0x500 + i, imm, data);
            ASSERT_TRUE(wait_for([&]() { return ctx.completed > 0; }))
                << "size " << len;
            EXPECT_EQ(1, ctx.consumed);
            EXPECT_EQ(UCS_OK, ctx.status);
            EXPECT_EQ(imm, ctx.imm);
            EXPECT_EQ(len, ctx.length);
            EXPECT_EQ(0, memcmp(m.ptr, data.data(), len)) << "size " << len;
            EXPECT_TRUE(m_unexp.empty());

            m_unexp.clear();
            send_eager(ep, how, 0x600 + i, imm, data);
            ASSERT_TRUE(wait_for([&]() { return !m_unexp.empty(); }))
                << "size " << len;
            ASSERT_EQ(1u, m_unexp.size());
            EXPECT_FALSE(m_unexp[0].rndv);
            EXPECT_EQ(0x600 + i, m_unexp[0].tag);
            EXPECT_EQ(imm, m_unexp[0].imm);
            EXPECT_TRUE(m_unexp[0].data == data) << "size " << len;
            m_unexp.clear();
        }
    }

    mem src       = alloc_mem(40 * 1024 + 1);
    uct_iov_t iov = {src.ptr, 40 * 1024 + 1, src.memh, 0, 1};
    log_counter::reset();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_tag_eager_zcopy(ep, 1, 0, &iov, 1, 0, NULL));
    EXPECT_EQ(1, log_counter::errors()) << log_counter::joined();
    EXPECT_TRUE(log_counter::contains("exceeds the maximum 40960"))
        << log_counter::joined();
    log_counter::reset();
}

/* A job with two TM_SEG_SIZE values: an unexpected eager message larger
 * than the receiver's buffers is a receive error there, the sending
 * endpoint fails (its operation completes with an error), and the receiver
 * goes on taking messages that fit */
TEST_P(uct_dcx_tag, tm_seg_size_mismatch_bad_flow)
{
    entity *a   = create_entity({{"TM_ENABLE", "y"}, {"TM_SEG_SIZE", "32k"}});
    entity *b   = create_entity({{"TM_ENABLE", "y"}, {"TM_SEG_SIZE", "8k"}});
    entity *c   = create_entity({{"TM_ENABLE", "y"}, {"TM_SEG_SIZE", "8k"}});
    uct_ep_h ep = connect(a, b), ep_cb = connect(c, b);
    mem src       = alloc_mem(20000);
    uct_iov_t iov = {src.ptr, 20000, src.memh, 0, 1};
    test_comp comp;
    ucs_status_t status;

    ASSERT_EQ(8192u, b->attr.cap.tag.eager.max_zcopy);
    log_counter::reset();
    ASSERT_TRUE(wait_for([&]() {
        status = uct_ep_tag_eager_zcopy(ep, 0x70, 0, &iov, 1, 0, &comp.uct);
        return status != UCS_ERR_NO_RESOURCE;
    }));
    ASSERT_EQ(UCS_INPROGRESS, status);
    ASSERT_TRUE(wait_for([&]() { return comp.done > 0; }));
    EXPECT_TRUE(UCS_STATUS_IS_ERR(comp.status));
    ASSERT_TRUE(wait_for([&]() { return !m_errors.empty(); }));
    EXPECT_EQ(ep, m_errors[0].ep);
    EXPECT_TRUE(m_unexp.empty());
    EXPECT_GE(log_counter::errors(), 1) << log_counter::joined();
    log_counter::reset();

    std::vector<char> data = pattern(8000, 3);
    send_eager(ep_cb, 2, 0x71, 0, data);
    ASSERT_TRUE(wait_for([&]() { return !m_unexp.empty(); }));
    ASSERT_EQ(1u, m_unexp.size());
    EXPECT_EQ(0x71u, m_unexp[0].tag);
    EXPECT_TRUE(m_unexp[0].data == data);
}

/* AMs (and the credit grants behind them) between TM and non-TM
 * interfaces, both ways: the mixed job */
TEST_P(uct_dcx_tag, am_between_tm_and_non_tm)
{
    entity *t = create_tm("y"), *n = create_tm("n");
    std::vector<std::vector<char>> at_t, at_n;
    uct_ep_h ep_tn = connect(t, n), ep_nt = connect(n, t);
    std::vector<char> data = pattern(3000, 5);
    pack_arg pa            = {data.data(), data.size()};
    int i;

    ASSERT_EQ(UCS_OK,
              uct_iface_set_am_handler(t->iface, AM_ID, am_cb, &at_t, 0));
    ASSERT_EQ(UCS_OK,
              uct_iface_set_am_handler(n->iface, AM_ID, am_cb, &at_n, 0));
    /* more than the credit window, so grants flow both ways */
    for (i = 0; i < 200; ++i) {
        ASSERT_TRUE(wait_for([&]() {
            return uct_ep_am_bcopy(ep_tn, AM_ID, pack_cb, &pa, 0) !=
                   UCS_ERR_NO_RESOURCE;
        }));
        ASSERT_TRUE(wait_for([&]() {
            return uct_ep_am_short(ep_nt, AM_ID, 0x1122334455667788ull,
                                   data.data(), 20) != UCS_ERR_NO_RESOURCE;
        }));
    }
    ASSERT_TRUE(wait_for([&]() {
        return (at_t.size() == 200) && (at_n.size() == 200);
    }));
    for (i = 0; i < 200; ++i) {
        EXPECT_TRUE(at_n[i] == data);
        ASSERT_EQ(28u, at_t[i].size());
        EXPECT_EQ(0, memcmp(&at_t[i][8], data.data(), 20));
    }
    flush_ep(ep_tn);
    flush_ep(ep_nt);
}

/* UCX_DCX_SOFT_TM=n and UCX_DCX_MLX5_TM=n: the device has no tag
 * matching, as a NIC without it: "try" gives a plain SRQ, "y" fails with
 * one error */
class uct_dcx_tag_dev_off : public uct_dcx_tag {
protected:
    virtual void init_env(scoped_env &env)
    {
        uct_dcx_tag::init_env(env);
        env.set("UCX_DCX_SOFT_TM", "n");
        env.set("UCX_DCX_MLX5_TM", "n");
    }

    /* on any device: the soft one is told to have none */
    virtual bool needs_tm() const { return false; }
};

TEST_P(uct_dcx_tag_dev_off, device_without_tm_bad_flow)
{
    std::map<std::string, std::string> cfg;
    entity *e = create_tm("try");
    entity *y = NULL;

    ASSERT_TRUE(e != NULL);
    EXPECT_EQ(0u, e->attr.cap.flags & (UCT_IFACE_FLAG_TAG_EAGER_BCOPY |
                                       UCT_IFACE_FLAG_TAG_RNDV_ZCOPY));
    EXPECT_FALSE(device()->caps.flags & DCX_CAP_TM);
    EXPECT_EQ(0u, device()->caps.tm_max_tags);

    log_counter::reset();
    cfg["TM_ENABLE"] = "y";
    EXPECT_NE(UCS_OK, try_create_entity(cfg, &y));
    EXPECT_EQ(1, log_counter::errors()) << log_counter::joined();
    EXPECT_TRUE(log_counter::contains("no tag matching"));
    log_counter::reset();
}

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_tag, UCT_DCX_POLICIES);
INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_tag_dev_off, UCT_DCX_POLICIES);
