/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx tag matching against the UCT contract at its corners: receives
 * without a buffer (iovcnt 0), more entries than cap.tag.recv.max_iov,
 * eager zcopy at cap.tag.eager.max_iov/max_zcopy and one past, rendezvous
 * headers at cap.tag.rndv.max_hdr and one past, unexpected eager
 * descriptors kept by the user past the receive queue, a context or a
 * buffer posted twice.
 */
#include "uct_tag_fixture.h"
#include "uct_invalidate.h"

#include <algorithm>
#include <poll.h>

class uct_dcx_tag_contract : public uct_dcx_tag {
protected:
    virtual void TearDown()
    {
        for (size_t i = 0; i < m_kept.size(); ++i) {
            release_desc(m_kept[i]); /* not aligned: uct_fixture.h */
        }
        m_kept.clear();
        uct_dcx_tag::TearDown();
        EXPECT_EQ(0, log_counter::errors()) << log_counter::joined();
    }

    /* Every list operation e posted so far has completed: a device that
     * runs them on its own (a ConnectX, the emulation's engine) completes
     * them in order, so they have once the cancel of a receive posted
     * after them has (into spare, a buffer of its own).  An event e then
     * sleeps for is not the completion of an earlier post. */
    void list_settled(entity *e, mem &spare)
    {
        recv_ctx later;

        post_recv(e, later, spare, 8, 0x5e771edull);
        ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(e->iface, &later.uct, 0));
        ASSERT_TRUE(wait_for([&]() { return later.completed > 0; }));
        EXPECT_EQ(UCS_ERR_CANCELED, later.status);
    }

    /* an unexpected eager callback that keeps one descriptor in 'keep' */
    static ucs_status_t keep_eager_cb(void *arg, void *data, size_t length,
                                      unsigned flags, uct_tag_t stag,
                                      uint64_t imm, void **context)
    {
        uct_dcx_tag_contract *self = static_cast<uct_dcx_tag_contract *>(arg);

        unexp_eager_cb(arg, data, length, flags, stag, imm, context);
        /* the headroom is the user's (UCP writes its descriptor there) */
        memset((char *)data - 16, 0xee, 16);
        if ((self->m_keep_every > 0) && (flags & UCT_CB_PARAM_FLAG_DESC) &&
            ((self->m_unexp.size() % self->m_keep_every) == 0)) {
            self->m_kept.push_back((char *)data - 16);
            return UCS_INPROGRESS;
        }
        return UCS_OK;
    }

    virtual void iface_params(uct_iface_params_t &params)
    {
        uct_dcx_tag::iface_params(params);
        if (m_tag_params) {
            params.eager_cb = keep_eager_cb;
        }
    }

    virtual void SetUp()
    {
        m_keep_every = 0;
        uct_dcx_tag::SetUp();
    }

    /* uct_iface_tag_recv_zcopy, retried while the device's operation
     * queue is full (and, with 'full_too', while the list is) */
    ucs_status_t post_iov(entity *e, recv_ctx &ctx, const uct_iov_t *iov,
                          size_t iovcnt, uct_tag_t tag,
                          uct_tag_t mask = (uct_tag_t)-1, bool full_too = false)
    {
        ucs_status_t status;

        /* a slot comes back when the device's completions for it are
         * polled, which a device that runs list operations on its own
         * (a ConnectX, the emulation's engine) gives some time later */
        wait_for([&]() {
            status = uct_iface_tag_recv_zcopy(e->iface, tag, mask, iov, iovcnt,
                                              &ctx.uct);
            return (status != UCS_ERR_NO_RESOURCE) &&
                   (!full_too || (status != UCS_ERR_EXCEEDS_LIMIT));
        });
        return status;
    }

    unsigned m_keep_every;
    std::vector<void *> m_kept;
};

/* A receive posted with no buffer (iovcnt 0, iov NULL) takes a message of
 * no data, in each of the three eager ways */
TEST_P(uct_dcx_tag_contract, recv_without_buffer)
{
    entity *a = create_tm(), *b = create_tm();
    uct_ep_h ep = connect(a, b);

    for (int how = 0; how < 3; ++how) {
        recv_ctx ctx;
        ucs_status_t status;

        ASSERT_TRUE(wait_for([&] {
            status = uct_iface_tag_recv_zcopy(b->iface, 0x900 + how,
                                              (uct_tag_t)-1, NULL, 0, &ctx.uct);
            return status != UCS_ERR_NO_RESOURCE;
        }));
        ASSERT_EQ(UCS_OK, status);
        send_eager(ep, how, 0x900 + how, 0, std::vector<char>());
        ASSERT_TRUE(wait_for([&] { return ctx.completed > 0; })) << how;
        EXPECT_EQ(UCS_OK, ctx.status);
        EXPECT_EQ(0u, ctx.length);
        EXPECT_EQ(0x900u + how, ctx.stag);
        EXPECT_TRUE(m_unexp.empty());
    }
}

/* A receive of more entries than cap.tag.recv.max_iov is refused with one
 * log line; one of max_iov entries is taken */
TEST_P(uct_dcx_tag_contract, recv_iov_count_bad_flow)
{
    entity *b      = create_tm();
    size_t max_iov = b->attr.cap.tag.recv.max_iov;
    mem m          = alloc_mem(4096);
    std::vector<uct_iov_t> iov(max_iov + 1);
    recv_ctx ctx;

    for (size_t i = 0; i <= max_iov; ++i) {
        iov[i] = {(char *)m.ptr + i * 64, 64, m.memh, 0, 1};
    }
    log_counter::reset();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_iface_tag_recv_zcopy(b->iface, 1, (uct_tag_t)-1, &iov[0],
                                       max_iov + 1, &ctx.uct));
    EXPECT_EQ(1, log_counter::errors());
    log_counter::reset();
    EXPECT_EQ(UCS_OK, uct_iface_tag_recv_zcopy(b->iface, 1, (uct_tag_t)-1,
                                               &iov[0], max_iov, &ctx.uct));
    EXPECT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &ctx.uct, 1));
}

/* eager zcopy: max_iov entries adding up to max_zcopy, expected and
 * unexpected; one byte or one entry more refused */
TEST_P(uct_dcx_tag_contract, eager_zcopy_limits)
{
    entity *a = create_tm(), *b = create_tm();
    uct_ep_h ep      = connect(a, b);
    size_t max_iov   = a->attr.cap.tag.eager.max_iov;
    size_t max_zcopy = a->attr.cap.tag.eager.max_zcopy;
    mem src = alloc_mem(max_zcopy + 64), dst = alloc_mem(max_zcopy + 64);
    std::vector<uct_iov_t> iov(max_iov + 1);
    std::vector<char> data = pattern(max_zcopy, 9);
    size_t per             = max_zcopy / max_iov;

    memcpy(src.ptr, data.data(), max_zcopy);
    for (size_t i = 0; i < max_iov; ++i) {
        iov[i] = {(char *)src.ptr + i * per,
                  (i == max_iov - 1) ? max_zcopy - i * per : per, src.memh, 0,
                  1};
    }
    for (int expected = 1; expected >= 0; --expected) {
        recv_ctx ctx;
        test_comp comp;
        ucs_status_t status;

        m_unexp.clear();
        if (expected) {
            post_recv(b, ctx, dst, max_zcopy + 64, 0x31);
        }
        ASSERT_TRUE(wait_for([&] {
            status = uct_ep_tag_eager_zcopy(ep, 0x31, 5, &iov[0], max_iov, 0,
                                            &comp.uct);
            return status != UCS_ERR_NO_RESOURCE;
        }));
        ASSERT_FALSE(UCS_STATUS_IS_ERR(status)) << ucs_status_string(status);
        if (status == UCS_INPROGRESS) {
            ASSERT_TRUE(wait_for([&] { return comp.done > 0; }));
            EXPECT_EQ(UCS_OK, comp.status);
        }
        if (expected) {
            ASSERT_TRUE(wait_for([&] { return ctx.completed > 0; }));
            EXPECT_EQ(UCS_OK, ctx.status);
            EXPECT_EQ(max_zcopy, ctx.length);
            EXPECT_EQ(0, memcmp(dst.ptr, data.data(), max_zcopy));
        } else {
            ASSERT_TRUE(wait_for([&] { return !m_unexp.empty(); }));
            EXPECT_TRUE(m_unexp[0].data == data);
        }
    }

    log_counter::reset();
    iov[max_iov - 1].length++;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_tag_eager_zcopy(ep, 0x32, 0, &iov[0], max_iov, 0, NULL));
    iov[max_iov - 1].length--;
    iov[max_iov] = {src.ptr, 1, src.memh, 0, 1};
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_tag_eager_zcopy(ep, 0x32, 0, &iov[0], max_iov + 1, 0,
                                     NULL));
    EXPECT_EQ(2, log_counter::errors()) << log_counter::joined();
    log_counter::reset();
}

/* rendezvous: a header of cap.tag.rndv.max_hdr reaches the receiver whole,
 * expected and unexpected; one byte more is refused */
TEST_P(uct_dcx_tag_contract, rndv_header_limits)
{
    entity *a = create_tm(), *b = create_tm();
    uct_ep_h ep    = connect(a, b);
    size_t max_hdr = a->attr.cap.tag.rndv.max_hdr;
    size_t len     = 64 * 1024;
    mem src = alloc_mem(len), dst = alloc_mem(len);
    std::vector<char> hdr  = pattern(max_hdr + 1, 4);
    std::vector<char> data = pattern(len, 6);
    void *op;

    ASSERT_GT(max_hdr, 0u);
    memcpy(src.ptr, data.data(), len);
    uct_iov_t iov = {src.ptr, len, src.memh, 0, 1};
    for (int expected = 1; expected >= 0; --expected) {
        recv_ctx ctx;
        test_comp comp;

        m_unexp.clear();
        if (expected) {
            post_recv(b, ctx, dst, len, 0x41);
        }
        ASSERT_TRUE(wait_for([&] {
            op = uct_ep_tag_rndv_zcopy(ep, 0x41, hdr.data(), max_hdr, &iov, 1,
                                       0, &comp.uct);
            return op != UCS_STATUS_PTR(UCS_ERR_NO_RESOURCE);
        }));
        ASSERT_FALSE(UCS_PTR_IS_ERR(op));
        if (expected) {
            ASSERT_TRUE(wait_for([&] {
                return (ctx.completed > 0) && (comp.done > 0);
            }));
            EXPECT_EQ(UCS_OK, ctx.status);
            EXPECT_EQ(0, memcmp(dst.ptr, data.data(), len));
            /* the header went to the rndv callback of the context */
            EXPECT_TRUE((ctx.rndv == 0) ||
                        (ctx.header ==
                         std::vector<char>(hdr.begin(),
                                           hdr.begin() + max_hdr)));
        } else {
            ASSERT_TRUE(wait_for([&] { return !m_unexp.empty(); }));
            ASSERT_TRUE(m_unexp[0].rndv);
            EXPECT_TRUE(m_unexp[0].data ==
                        std::vector<char>(hdr.begin(), hdr.begin() + max_hdr));
            EXPECT_EQ(len, m_rndv_len);
            EXPECT_EQ(UCS_OK, uct_ep_tag_rndv_cancel(ep, op));
        }
    }

    log_counter::reset();
    op = uct_ep_tag_rndv_zcopy(ep, 0x42, hdr.data(), max_hdr + 1, &iov, 1, 0,
                               NULL);
    EXPECT_EQ(UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM), op);
    EXPECT_EQ(1, log_counter::errors()) << log_counter::joined();
    log_counter::reset();
}

/* The user keeps every other unexpected eager descriptor (UCP keeps them
 * until a receive matches), many more than the receive queue holds, and
 * writes the headroom of each: receiving goes on and the kept data stay
 * intact */
TEST_P(uct_dcx_tag_contract, unexpected_descriptors_kept)
{
    std::map<std::string, std::string> cfg;
    cfg["TM_ENABLE"]    = "y";
    cfg["RX_QUEUE_LEN"] = "64";
    entity *a = create_tm(), *b = create_entity(cfg);
    uct_ep_h ep = connect(a, b);
    const int n = 1000;

    ASSERT_TRUE(b != NULL);
    m_keep_every = 2;
    for (int i = 0; i < n; ++i) {
        send_eager(ep, i % 3, 0x5000 + i, (i % 3) ? 0x77 : 0,
                   pattern(10 + (i % 200), i));
    }
    ASSERT_TRUE(wait_for([&] { return m_unexp.size() == (size_t)n; }, 30));
    ASSERT_EQ((size_t)n / 2, m_kept.size());
    for (size_t k = 0; k < m_kept.size(); ++k) {
        size_t i = 2 * k + 1;
        EXPECT_EQ(0, memcmp((char *)m_kept[k] + 16, m_unexp[i].data.data(),
                            m_unexp[i].data.size()))
            << k;
        EXPECT_TRUE(m_unexp[i].data == pattern(10 + (i % 200), i)) << i;
    }
}

/* UCX's sw_rndv_expected: a software rendezvous request with a header of
 * cap.tag.rndv.max_hdr bytes to a posted receive of that length: consumed,
 * then the context's rndv callback (not completed_cb) with the whole header
 * in the receive buffer */
TEST_P(uct_dcx_tag_contract, rndv_request_at_max_hdr)
{
    entity *a = create_tm(), *b = create_tm();
    uct_ep_h ep           = connect(a, b);
    size_t len            = a->attr.cap.tag.rndv.max_hdr;
    mem m                 = alloc_mem(len);
    std::vector<char> hdr = pattern(len, 21);
    recv_ctx ctx;
    ucs_status_t status;

    post_recv(b, ctx, m, len, 11);
    ASSERT_TRUE(wait_for([&]() {
        status = uct_ep_tag_rndv_request(ep, 11, hdr.data(), len, 0);
        return status != UCS_ERR_NO_RESOURCE;
    }));
    ASSERT_EQ(UCS_OK, status);
    ASSERT_TRUE(wait_for([&]() { return ctx.rndv > 0; }));
    EXPECT_EQ(1, ctx.consumed);
    EXPECT_EQ(0, ctx.completed);
    EXPECT_EQ(UCS_OK, ctx.status);
    EXPECT_EQ(len, ctx.header.size());
    EXPECT_EQ(0, memcmp(m.ptr, hdr.data(), len));
    flush_ep(ep);
}

/* UCX's tag_post_same: a context already posted is refused with
 * UCS_ERR_ALREADY_EXISTS until it is completed or cancelled (a forced
 * cancel frees it at once, an unforced one at its completion) */
TEST_P(uct_dcx_tag_contract, post_same_context)
{
    entity *a = create_tm(), *b = create_tm();
    uct_ep_h ep   = connect(a, b);
    mem m         = alloc_mem(128);
    uct_iov_t iov = {m.ptr, 128, m.memh, 0, 1};
    recv_ctx ctx;

    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_zcopy(b->iface, 1, (uct_tag_t)-1, &iov,
                                               1, &ctx.uct));
    EXPECT_EQ(UCS_ERR_ALREADY_EXISTS,
              uct_iface_tag_recv_zcopy(b->iface, 1, (uct_tag_t)-1, &iov, 1,
                                       &ctx.uct));
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &ctx.uct, 1));
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_zcopy(b->iface, 1, (uct_tag_t)-1, &iov,
                                               1, &ctx.uct));
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &ctx.uct, 0));
    EXPECT_EQ(UCS_ERR_ALREADY_EXISTS,
              uct_iface_tag_recv_zcopy(b->iface, 1, (uct_tag_t)-1, &iov, 1,
                                       &ctx.uct));
    ASSERT_TRUE(wait_for([&]() { return ctx.completed > 0; }));
    EXPECT_EQ(UCS_ERR_CANCELED, ctx.status);
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_zcopy(b->iface, 1, (uct_tag_t)-1, &iov,
                                               1, &ctx.uct));
    ctx.completed = 0;
    send_eager(ep, 1, 1, 0, pattern(64, 3));
    ASSERT_TRUE(wait_for([&]() { return ctx.completed > 0; }));
    EXPECT_EQ(UCS_OK, ctx.status);
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_zcopy(b->iface, 1, (uct_tag_t)-1, &iov,
                                               1, &ctx.uct));
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &ctx.uct, 1));
    log_counter::reset();
}

/* A receive context whose completion (completed_cb or rndv_cb) posts
 * 'next' on the same buffer at once, as the user may: the buffer must be
 * free again by then */
struct repost_ctx : public recv_ctx {
    uct_iface_h iface;
    uct_iov_t iov;
    recv_ctx *next;
    ucs_status_t repost_status;

    repost_ctx(uct_iface_h i, const uct_iov_t &v, recv_ctx *n) :
        iface(i), iov(v), next(n), repost_status(UCS_ERR_LAST)
    {
        uct.completed_cb = completed_repost;
        uct.rndv_cb      = rndv_repost;
    }

    void repost()
    {
        repost_status = uct_iface_tag_recv_zcopy(iface, 0x77, (uct_tag_t)-1,
                                                 &iov, 1, &next->uct);
    }

    static void completed_repost(uct_tag_context_t *self, uct_tag_t stag,
                                 uint64_t imm, size_t length, void *inline_data,
                                 ucs_status_t status)
    {
        recv_ctx::completed_cb(self, stag, imm, length, inline_data, status);
        static_cast<repost_ctx *>(of(self))->repost();
    }

    static void rndv_repost(uct_tag_context_t *self, uct_tag_t stag,
                            const void *header, unsigned header_length,
                            ucs_status_t status, unsigned flags)
    {
        recv_ctx::rndv_cb(self, stag, header, header_length, status, flags);
        static_cast<repost_ctx *>(of(self))->repost();
    }
};

/* UCX's rc/dc tag_addrs: a buffer already posted is refused under another
 * context, tag and length alike, not logged (UCP falls back to software
 * matching); only the start address counts, an overlapping buffer is
 * taken; a forced cancel gives the buffer back at once */
TEST_P(uct_dcx_tag_contract, post_same_buffer_bad_flow)
{
    entity *b         = create_tm();
    mem m             = alloc_mem(256);
    uct_iov_t iov     = {m.ptr, 128, m.memh, 0, 1};
    uct_iov_t shorter = {m.ptr, 16, m.memh, 0, 1};
    uct_iov_t inside  = {(char *)m.ptr + 8, 120, m.memh, 0, 1};
    recv_ctx c1, c2, c3, c4;

    ASSERT_EQ(UCS_OK, post_iov(b, c1, &iov, 1, 1));
    log_counter::reset();
    EXPECT_EQ(UCS_ERR_ALREADY_EXISTS, post_iov(b, c2, &iov, 1, 1));
    EXPECT_EQ(UCS_ERR_ALREADY_EXISTS, post_iov(b, c2, &iov, 1, 2, 0xff));
    EXPECT_EQ(UCS_ERR_ALREADY_EXISTS, post_iov(b, c2, &shorter, 1, 3));
    EXPECT_EQ(0, log_counter::errors() + log_counter::warnings());
    ASSERT_EQ(UCS_OK, post_iov(b, c2, &inside, 1, 1));
    EXPECT_EQ(UCS_ERR_ALREADY_EXISTS, post_iov(b, c3, &inside, 1, 4));

    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &c1.uct, 1));
    ASSERT_EQ(UCS_OK, post_iov(b, c3, &iov, 1, 1));
    EXPECT_EQ(UCS_ERR_ALREADY_EXISTS, post_iov(b, c4, &iov, 1, 1));
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &c2.uct, 1));
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &c3.uct, 1));
    ASSERT_EQ(UCS_OK, post_iov(b, c4, &iov, 1, 1));
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &c4.uct, 1));
    EXPECT_EQ(0, c1.completed + c2.completed + c3.completed + c4.completed);
}

/* A cancel without force, then with force before the first completes:
 * the buffer is free at the forced one; the first one's completion, which
 * reports nothing, leaves the buffer to its new holder */
TEST_P(uct_dcx_tag_contract, post_same_buffer_unforced_then_forced_cancel)
{
    entity *b     = create_tm();
    mem m         = alloc_mem(128);
    uct_iov_t iov = {m.ptr, 128, m.memh, 0, 1};
    recv_ctx c1, c2, c3;

    ASSERT_EQ(UCS_OK, post_iov(b, c1, &iov, 1, 1));
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &c1.uct, 0));
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &c1.uct, 1));
    ASSERT_EQ(UCS_OK, post_iov(b, c2, &iov, 1, 1));
    for (int i = 0; i < 300; ++i) {
        progress();
    }
    EXPECT_EQ(0, c1.completed);
    EXPECT_EQ(UCS_ERR_ALREADY_EXISTS, post_iov(b, c3, &iov, 1, 1));
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &c2.uct, 1));
    ASSERT_EQ(UCS_OK, post_iov(b, c3, &iov, 1, 1));
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &c3.uct, 1));
}

/* Receives without data (iovcnt 0, or a length of 0) write no memory and
 * are not checked (docs/tag-matching.md): any number on one address, and
 * a receive with data there beside them */
TEST_P(uct_dcx_tag_contract, post_same_buffer_without_data)
{
    entity *b       = create_tm();
    mem m           = alloc_mem(64);
    uct_iov_t empty = {m.ptr, 0, m.memh, 0, 1};
    uct_iov_t full  = {m.ptr, 64, m.memh, 0, 1};
    recv_ctx c[5];

    ASSERT_EQ(UCS_OK, post_iov(b, c[0], &empty, 1, 1));
    ASSERT_EQ(UCS_OK, post_iov(b, c[1], &empty, 1, 2));
    ASSERT_EQ(UCS_OK, post_iov(b, c[2], NULL, 0, 3));
    ASSERT_EQ(UCS_OK, post_iov(b, c[3], &full, 1, 4));
    EXPECT_EQ(UCS_ERR_ALREADY_EXISTS, post_iov(b, c[4], &full, 1, 5));
    for (int i = 0; i < 4; ++i) {
        ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &c[i].uct, 1));
    }
}

/* An unforced cancel keeps the buffer until its completion reports the
 * receive: refused until then, taken from that very callback */
TEST_P(uct_dcx_tag_contract, post_same_buffer_unforced_cancel)
{
    entity *b     = create_tm();
    mem m         = alloc_mem(128);
    uct_iov_t iov = {m.ptr, 128, m.memh, 0, 1};
    recv_ctx next, other;
    repost_ctx first(b->iface, iov, &next);

    ASSERT_EQ(UCS_OK, post_iov(b, first, &iov, 1, 1));
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &first.uct, 0));
    EXPECT_EQ(UCS_ERR_ALREADY_EXISTS, post_iov(b, other, &iov, 1, 2));
    ASSERT_TRUE(wait_for([&]() { return first.completed > 0; }));
    EXPECT_EQ(UCS_ERR_CANCELED, first.status);
    EXPECT_EQ(UCS_OK, first.repost_status);
    EXPECT_EQ(UCS_ERR_ALREADY_EXISTS, post_iov(b, other, &iov, 1, 2));
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &next.uct, 1));
    ASSERT_EQ(UCS_OK, post_iov(b, other, &iov, 1, 2));
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &other.uct, 1));
}

/* A receive completed by a message gives its buffer back before its
 * callback: eager (completed_cb), a rendezvous the device reads
 * (completed_cb), a software rendezvous request (rndv_cb) */
TEST_P(uct_dcx_tag_contract, post_same_buffer_after_message)
{
    entity *a = create_tm(), *b = create_tm();
    uct_ep_h ep      = connect(a, b);
    const size_t len = 64 * 1024;
    mem src = alloc_mem(len), dst = alloc_mem(len);
    uct_iov_t iov         = {dst.ptr, len, dst.memh, 0, 1};
    uct_iov_t siov        = {src.ptr, len, src.memh, 0, 1};
    std::vector<char> hdr = pattern(8, 4);

    memcpy(src.ptr, pattern(len, 6).data(), len);
    for (int how = 0; how < 3; ++how) {
        uct_tag_t tag = 0x100 + how;
        recv_ctx next, other;
        repost_ctx first(b->iface, iov, &next);
        test_comp comp;
        ucs_status_t status;
        void *op;

        ASSERT_EQ(UCS_OK, post_iov(b, first, &iov, 1, tag));
        EXPECT_EQ(UCS_ERR_ALREADY_EXISTS,
                  post_iov(b, other, &iov, 1, tag + 0x10));
        if (how == 0) {
            send_eager(ep, 1, tag, 0, pattern(100, how));
        } else if (how == 1) {
            ASSERT_TRUE(wait_for([&]() {
                op = uct_ep_tag_rndv_zcopy(ep, tag, hdr.data(), hdr.size(),
                                           &siov, 1, 0, &comp.uct);
                return op != UCS_STATUS_PTR(UCS_ERR_NO_RESOURCE);
            }));
            ASSERT_FALSE(UCS_PTR_IS_ERR(op));
        } else {
            ASSERT_TRUE(wait_for([&]() {
                status = uct_ep_tag_rndv_request(ep, tag, hdr.data(),
                                                 hdr.size(), 0);
                return status != UCS_ERR_NO_RESOURCE;
            }));
            ASSERT_EQ(UCS_OK, status);
        }
        ASSERT_TRUE(wait_for([&]() {
            return (first.completed + first.rndv > 0) &&
                   ((how != 1) || (comp.done > 0));
        })) << how;
        EXPECT_EQ(UCS_OK, first.status) << how;
        EXPECT_EQ((how == 2) ? 1 : 0, first.rndv) << how;
        /* taken from the callback; held by 'next' now */
        EXPECT_EQ(UCS_OK, first.repost_status) << how;
        EXPECT_EQ(UCS_ERR_ALREADY_EXISTS,
                  post_iov(b, other, &iov, 1, tag + 0x10))
            << how;
        ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &next.uct, 1));
        ASSERT_EQ(UCS_OK, post_iov(b, other, &iov, 1, tag + 0x10));
        ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &other.uct, 1));
    }
    EXPECT_TRUE(m_unexp.empty());
    flush_ep(ep);
}

/* Rounds of a full list of distinct buffers, cancelled with and without
 * force: every buffer is free again after its round (the interface keeps
 * an entry only per listed receive; its close frees them, LeakSanitizer
 * checks) */
TEST_P(uct_dcx_tag_contract, post_distinct_buffers_cycles)
{
    entity *b        = create_tm();
    const size_t n   = b->attr.cap.tag.recv.max_outstanding;
    const int rounds = 4;
    mem m            = alloc_mem(n * rounds * 8);
    std::vector<recv_ctx> ctx(n);
    uct_iov_t iov = {NULL, 8, m.memh, 0, 1};

    for (int r = 0; r <= rounds; ++r) {
        /* the last round posts the first round's buffers again */
        size_t base = (r < rounds) ? r * n : 0;
        int force   = r % 2;

        for (size_t i = 0; i < n; ++i) {
            ctx[i]     = recv_ctx();
            iov.buffer = (char *)m.ptr + (base + i) * 8;
            ASSERT_EQ(UCS_OK,
                      post_iov(b, ctx[i], &iov, 1, i, (uct_tag_t)-1, true))
                << "round " << r << " receive " << i;
        }
        for (size_t i = 0; i < n; ++i) {
            ucs_status_t status;
            ASSERT_TRUE(wait_for([&]() {
                status = uct_iface_tag_recv_cancel(b->iface, &ctx[i].uct,
                                                   force);
                return status != UCS_ERR_NO_RESOURCE;
            }));
            ASSERT_EQ(UCS_OK, status) << "round " << r << " receive " << i;
        }
        if (!force) {
            ASSERT_TRUE(wait_for([&]() {
                for (size_t i = 0; i < n; ++i) {
                    if (ctx[i].completed == 0) {
                        return false;
                    }
                }
                return true;
            })) << "round "
                << r;
        }
    }
}

/* UCX's rndv_limit: rendezvous sends with nobody progressing are refused
 * with UCS_ERR_NO_RESOURCE at some point; all cancelled, the endpoint is
 * destroyed */
TEST_P(uct_dcx_tag_contract, rndv_limit)
{
    entity *a = create_tm(), *b = create_tm();
    uct_ep_h ep   = connect(a, b);
    mem src       = alloc_mem(8);
    uct_iov_t iov = {src.ptr, 8, src.memh, 0, 1};
    std::vector<void *> ops;
    std::vector<test_comp> comps(100000);
    void *op;

    (void)b;
    do {
        op = uct_ep_tag_rndv_zcopy(ep, 0xffff, NULL, 0, &iov, 1, 0,
                                   &comps[ops.size()].uct);
        if (!UCS_PTR_IS_ERR(op)) {
            ops.push_back(op);
        }
    } while (!UCS_PTR_IS_ERR(op) && (ops.size() < comps.size()));
    EXPECT_EQ(UCS_STATUS_PTR(UCS_ERR_NO_RESOURCE), op);
    EXPECT_GT(ops.size(), 0u);
    for (size_t i = 0; i < ops.size(); ++i) {
        EXPECT_EQ(UCS_OK, uct_ep_tag_rndv_cancel(ep, ops[i]));
    }
    destroy_ep(ep);
    for (size_t i = 0; i < 1000; ++i) {
        progress();
    }
    log_counter::reset();
}

/* A receive cancelled with force is the user's again at once (uct.h: "the
 * cancel is assumed to be successful"): a message the device matched to it
 * before the cancel, polled after it, writes nothing into the context (the
 * user may have freed or reused it) and calls nothing */
TEST_P(uct_dcx_tag_contract, forced_cancel_after_match_leaves_ctx_alone)
{
    entity *a = create_tm(), *b = create_tm();
    uct_ep_h ep = connect(a, b);
    mem m = alloc_mem(64), spare = alloc_mem(64);
    recv_ctx ctx;
    std::vector<char> data = pattern(16, 8);
    int fd;

    ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(b->iface, &fd));
    post_recv(b, ctx, m, 64, 0x77);
    list_settled(b, spare);
    /* b sleeps (armed, not progressed): the device matches the message
     * and leaves its completion in b's queue */
    ASSERT_TRUE(wait_for([&]() {
        return uct_iface_event_arm(b->iface, UCT_EVENT_RECV) == UCS_OK;
    }));
    ASSERT_TRUE(wait_for(
        [&]() {
            return uct_ep_tag_eager_short(ep, 0x77, data.data(), data.size()) !=
                   UCS_ERR_NO_RESOURCE;
        },
        5));
    struct pollfd pfd = {fd, POLLIN, 0};
    ASSERT_EQ(1, poll(&pfd, 1, 5000)) << "no event for the message";

    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &ctx.uct, 1));
    uct_tag_context_t copy = ctx.uct;
    memset(ctx.uct.priv, 0xab, sizeof(ctx.uct.priv));
    memcpy(copy.priv, ctx.uct.priv, sizeof(copy.priv));
    for (int i = 0; i < 1000; ++i) {
        progress();
    }
    EXPECT_EQ(0, memcmp(copy.priv, ctx.uct.priv, sizeof(copy.priv)))
        << "dcx wrote into a context cancelled with force";
    EXPECT_EQ(0, ctx.consumed);
    EXPECT_EQ(0, ctx.completed);
    flush_ep(ep);
}

/* The device matched a message to a receive while its process slept; the
 * receive is then cancelled: without force, the cancel loses the race and
 * the receive completes with the message (UCS_OK); with force, the context
 * posted again at once takes the next message, whose tag and length it
 * reports (the first one's late completion does not touch it) */
TEST_P(uct_dcx_tag_contract, cancel_after_device_match)
{
    entity *a = create_tm(), *b = create_tm();
    uct_ep_h ep = connect(a, b);
    mem m = alloc_mem(64), spare = alloc_mem(64);
    std::vector<char> d1 = pattern(16, 1), d2 = pattern(24, 2);
    int fd;

    ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(b->iface, &fd));
    auto match_asleep = [&](uct_tag_t tag, const std::vector<char> &d) {
        list_settled(b, spare); /* the receive is listed before b sleeps */
        ASSERT_TRUE(wait_for([&]() {
            return uct_iface_event_arm(b->iface, UCT_EVENT_RECV) == UCS_OK;
        }));
        ASSERT_TRUE(wait_for(
            [&]() {
                return uct_ep_tag_eager_short(ep, tag, d.data(), d.size()) !=
                       UCS_ERR_NO_RESOURCE;
            },
            5));
        struct pollfd pfd = {fd, POLLIN, 0};
        ASSERT_EQ(1, poll(&pfd, 1, 5000)) << "no event for the message";
    };

    recv_ctx c1;
    post_recv(b, c1, m, 64, 0x61);
    match_asleep(0x61, d1);
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &c1.uct, 0));
    ASSERT_TRUE(wait_for([&]() { return c1.completed > 0; }));
    EXPECT_EQ(1, c1.completed);
    EXPECT_EQ(UCS_OK, c1.status);
    EXPECT_EQ(d1.size(), c1.length);
    EXPECT_EQ(0x61u, c1.stag);
    EXPECT_EQ(0, memcmp(m.ptr, d1.data(), d1.size()));

    recv_ctx c2;
    post_recv(b, c2, m, 64, 0x62, (uct_tag_t)0xff);
    match_asleep(0x162, d1);
    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &c2.uct, 1));
    post_recv(b, c2, m, 64, 0x62, (uct_tag_t)0xff);
    ASSERT_TRUE(wait_for([&]() {
        return uct_ep_tag_eager_short(ep, 0x262, d2.data(), d2.size()) !=
               UCS_ERR_NO_RESOURCE;
    }));
    ASSERT_TRUE(wait_for([&]() { return c2.completed > 0; }));
    for (int i = 0; i < 300; ++i) {
        progress();
    }
    EXPECT_EQ(1, c2.completed);
    EXPECT_EQ(UCS_OK, c2.status);
    EXPECT_EQ(0x262u, c2.stag);
    EXPECT_EQ(d2.size(), c2.length);
    EXPECT_EQ(0, memcmp(m.ptr, d2.data(), d2.size()));
    EXPECT_TRUE(m_unexp.empty());
    flush_ep(ep);
}

/* Active messages at their advertised limits between interfaces with and
 * without tag matching, every direction: short at am.max_short, bcopy at
 * am.max_bcopy, zcopy of am.max_hdr header and am.max_zcopy in all */
TEST_P(uct_dcx_tag_contract, am_limits_between_tm_and_non_tm)
{
    entity *e[2] = {create_tm("y"), create_tm("n")};
    std::vector<std::vector<char>> rx[2];

    for (int i = 0; i < 2; ++i) {
        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(e[i]->iface, AM_ID, am_cb,
                                                   &rx[i], 0));
    }
    for (int from = 0; from < 2; ++from) {
        for (int to = 0; to < 2; ++to) {
            const uct_iface_attr_t &a = e[from]->attr;
            uct_ep_h ep               = connect(e[from], e[to]);
            std::vector<char> sdata   = pattern(a.cap.am.max_short, 1);
            std::vector<char> bdata   = pattern(a.cap.am.max_bcopy, 2);
            std::vector<char> hdr     = pattern(a.cap.am.max_hdr, 3);
            size_t zlen               = a.cap.am.max_zcopy - hdr.size();
            mem m                     = alloc_mem(zlen);
            pack_arg pa               = {bdata.data(), bdata.size()};
            uct_iov_t iov             = {m.ptr, zlen, m.memh, 0, 1};
            uint64_t h;
            ssize_t len;
            ucs_status_t status;
            test_comp comp;

            memcpy(&h, sdata.data(), 8);
            memcpy(m.ptr, pattern(zlen, 4).data(), zlen);
            rx[to].clear();
            ASSERT_TRUE(wait_for([&]() {
                status = uct_ep_am_short(ep, AM_ID, h, sdata.data() + 8,
                                         sdata.size() - 8);
                return status != UCS_ERR_NO_RESOURCE;
            }));
            ASSERT_EQ(UCS_OK, status) << from << "->" << to;
            ASSERT_TRUE(wait_for([&]() {
                len = uct_ep_am_bcopy(ep, AM_ID, pack_cb, &pa, 0);
                return len != UCS_ERR_NO_RESOURCE;
            }));
            ASSERT_EQ((ssize_t)bdata.size(), len) << from << "->" << to;
            ASSERT_TRUE(wait_for([&]() {
                status = uct_ep_am_zcopy(ep, AM_ID, hdr.data(), hdr.size(),
                                         &iov, 1, 0, &comp.uct);
                return status != UCS_ERR_NO_RESOURCE;
            }));
            ASSERT_FALSE(UCS_STATUS_IS_ERR(status)) << from << "->" << to;
            ASSERT_TRUE(wait_for([&]() { return rx[to].size() == 3; }))
                << from << "->" << to;
            EXPECT_TRUE(rx[to][0] == sdata) << from << "->" << to;
            EXPECT_TRUE(rx[to][1] == bdata) << from << "->" << to;
            std::vector<char> z = hdr, p = pattern(zlen, 4);
            z.insert(z.end(), p.begin(), p.end());
            EXPECT_TRUE(rx[to][2] == z) << from << "->" << to;
            flush_ep(ep);
        }
    }
}

/* A TM interface closed with receives posted, a rendezvous of its own in
 * flight and endpoints alive: nothing crashes, nothing of it is called
 * after the close returned, its peer goes on */
TEST_P(uct_dcx_tag_contract, close_with_tm_state_outstanding)
{
    entity *a = create_tm(), *b = create_tm();
    uct_ep_h ab = connect(a, b), ba = connect(b, a);
    mem m = alloc_mem(4096), src = alloc_mem(65536);
    mem m2 = m; /* a buffer of its own: one is posted once at a time */
    recv_ctx c1, c2;
    test_comp comp;
    uct_iov_t iov = {src.ptr, 65536, src.memh, 0, 1};
    void *op;

    m2.ptr = (char *)m.ptr + 64;
    post_recv(b, c1, m, 64, 0x1);
    post_recv(b, c2, m2, 64, 0x2);
    ASSERT_TRUE(wait_for([&]() {
        op = uct_ep_tag_rndv_zcopy(ba, 0x99, NULL, 0, &iov, 1, 0, &comp.uct);
        return op != UCS_STATUS_PTR(UCS_ERR_NO_RESOURCE);
    }));
    ASSERT_FALSE(UCS_PTR_IS_ERR(op));
    /* the rendezvous reaches a unexpected */
    ASSERT_TRUE(wait_for([&]() { return !m_unexp.empty(); }));

    int before = c1.completed + c1.consumed + c2.completed + c2.consumed +
                 comp.done;
    for (size_t i = 0; i < m_eps.size(); ++i) {
        if (m_eps[i] == ba) {
            m_eps[i] = NULL;
        }
    }
    forget_ep(ba); /* not freed by the close: uct_fixture.h */
    uct_iface_close(b->iface);
    uct_worker_destroy(b->worker);
    m_entities.erase(std::find(m_entities.begin(), m_entities.end(), b));
    delete b;
    int after_close = c1.completed + c1.consumed + c2.completed + c2.consumed +
                      comp.done;
    EXPECT_GE(after_close, before);
    for (int i = 0; i < 300; ++i) {
        progress();
    }
    EXPECT_EQ(after_close, c1.completed + c1.consumed + c2.completed +
                               c2.consumed + comp.done);

    /* a is fine: to a new interface */
    entity *c   = create_tm();
    uct_ep_h ac = connect(a, c);
    recv_ctx c3;
    post_recv(c, c3, m, 64, 0x3);
    send_eager(ac, 1, 0x3, 0, pattern(32, 5));
    ASSERT_TRUE(wait_for([&]() { return c3.completed > 0; }));
    EXPECT_EQ(UCS_OK, c3.status);
    (void)ab;
    log_counter::reset();
}

/* A rendezvous the device matched to a sleeping process's receive, that
 * receive then cancelled with force: the sender's operation completes, the
 * context is neither called nor written */
TEST_P(uct_dcx_tag_contract, forced_cancel_during_device_rndv)
{
    entity *a = create_tm(), *b = create_tm();
    uct_ep_h ep      = connect(a, b);
    const size_t len = 1 << 20;
    mem src = alloc_mem(len), dst = alloc_mem(len);
    recv_ctx ctx;
    test_comp comp;
    void *op;
    int fd;

    memcpy(src.ptr, pattern(len, 5).data(), len);
    ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(b->iface, &fd));
    post_recv(b, ctx, dst, len, 0x88);
    list_settled(b, src); /* the receive is listed before b sleeps */
    ASSERT_TRUE(wait_for([&]() {
        return uct_iface_event_arm(b->iface, UCT_EVENT_RECV) == UCS_OK;
    }));
    uct_iov_t iov = {src.ptr, len, src.memh, 0, 1};
    op = uct_ep_tag_rndv_zcopy(ep, 0x88, "h", 1, &iov, 1, 0, &comp.uct);
    ASSERT_FALSE(UCS_PTR_IS_ERR(op));
    struct pollfd pfd = {fd, POLLIN, 0};
    ASSERT_EQ(1, poll(&pfd, 1, 5000)) << "no event for the rendezvous";

    ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &ctx.uct, 1));
    memset(ctx.uct.priv, 0xcd, sizeof(ctx.uct.priv));
    std::vector<char> poison(ctx.uct.priv, ctx.uct.priv + sizeof(ctx.uct.priv));
    ASSERT_TRUE(wait_for([&]() { return comp.done > 0; }));
    for (int i = 0; i < 300; ++i) {
        progress();
    }
    EXPECT_EQ(1, comp.done);
    EXPECT_EQ(0, ctx.consumed + ctx.completed + ctx.rndv);
    EXPECT_EQ(0, memcmp(poison.data(), ctx.uct.priv, poison.size()));
    /* the slot comes back: as many receives as the list holds go in */
    std::vector<recv_ctx> more(b->attr.cap.tag.recv.max_outstanding);
    for (size_t i = 0; i < more.size(); ++i) {
        uct_iov_t one = {(char *)dst.ptr + (i * 64) % len, 64, dst.memh, 0, 1};
        ASSERT_EQ(UCS_OK, post_iov(b, more[i], &one, 1, 0x1000 + i,
                                   (uct_tag_t)-1, true))
            << "receive " << i;
    }
    for (size_t i = 0; i < more.size(); ++i) {
        ASSERT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &more[i].uct, 1));
    }
    flush_ep(ep);
}

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_tag_contract, UCT_DCX_POLICIES);

/* The tag operations of an endpoint invalidated and not yet reported are
 * taken as any other (test_uct_invalidate.cc): eager short/bcopy and the
 * rendezvous request return UCS_OK or the packed length, eager zcopy
 * UCS_INPROGRESS, a rendezvous its handle; nothing reaches the receiver's
 * list, and the completions fail with UCS_ERR_ENDPOINT_TIMEOUT when the
 * failure is reported */
TEST_P(uct_dcx_tag_contract, invalidated_ep_takes_tag_ops)
{
    entity *a = create_tm(), *b = create_tm();
    uct_ep_h ep = connect(a, b);
    mem src = alloc_mem(8192), dst = alloc_mem(8192);
    uct_iov_t iov = {src.ptr, 4096, src.memh, 0, 1};
    test_comp zc, rc;
    recv_ctx ctx;
    void *op;
    int packs = 0;

    memset(dst.ptr, 0x3c, 8192);
    post_recv(b, ctx, dst, 8192, 0x10);
    ASSERT_EQ(UCS_OK, dcx_test::invalidate(ep));

    EXPECT_EQ(UCS_OK, uct_ep_tag_eager_short(ep, 0x10, "short", 5));
    EXPECT_EQ(64, uct_ep_tag_eager_bcopy(
                      ep, 0x10, 0,
                      [](void *dest, void *arg) -> size_t {
                          ++*static_cast<int *>(arg);
                          memset(dest, 1, 64);
                          return 64;
                      },
                      &packs, 0));
    EXPECT_EQ(1, packs);
    EXPECT_EQ(UCS_INPROGRESS,
              uct_ep_tag_eager_zcopy(ep, 0x10, 0, &iov, 1, 0, &zc.uct));
    op = uct_ep_tag_rndv_zcopy(ep, 0x10, NULL, 0, &iov, 1, 0, &rc.uct);
    ASSERT_FALSE(UCS_PTR_IS_ERR(op));
    EXPECT_EQ(UCS_OK, uct_ep_tag_rndv_request(ep, 0x10, NULL, 0, 0));
    EXPECT_TRUE(m_errors.empty());

    ASSERT_TRUE(wait_for([&] { return !m_errors.empty(); }));
    EXPECT_EQ(ep, m_errors[0].ep);
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, m_errors[0].status);
    EXPECT_EQ(1, zc.done);
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, zc.status);
    EXPECT_EQ(1, rc.done);
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, rc.status);
    /* the handle is gone with the failure: a cancel finds nothing */
    log_counter::reset();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_ep_tag_rndv_cancel(ep, op));
    EXPECT_EQ(1, log_counter::errors());
    log_counter::reset();

    for (int i = 0; i < 300; ++i) {
        progress();
    }
    EXPECT_EQ(0, ctx.completed + ctx.consumed);
    EXPECT_TRUE(m_unexp.empty());
    for (size_t i = 0; i < 8192; ++i) {
        ASSERT_EQ(0x3c, static_cast<uint8_t *>(dst.ptr)[i]) << i;
    }
    EXPECT_EQ(UCS_OK, uct_iface_tag_recv_cancel(b->iface, &ctx.uct, 1));
}
