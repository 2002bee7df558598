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
#include "uct_fixture.h"

#include <algorithm>
#include <cstring>
#include <vector>

using namespace dcx_test;

namespace {

const uint8_t AM_ID = 5;

struct unexp_msg {
    uct_tag_t          tag;
    uint64_t           imm;
    unsigned           flags;
    std::vector<char>  data;
    bool               rndv;
};

struct recv_ctx {
    uct_tag_context_t  uct;
    int                consumed;
    int                completed;
    int                rndv;
    uct_tag_t          stag;
    uint64_t           imm;
    size_t             length;
    ucs_status_t       status;
    std::vector<char>  header;

    recv_ctx() : consumed(0), completed(0), rndv(0), stag(0), imm(0),
                 length(0), status(UCS_OK)
    {
        memset(&uct, 0, sizeof(uct));
        uct.tag_consumed_cb = consumed_cb;
        uct.completed_cb    = completed_cb;
        uct.rndv_cb         = rndv_cb;
    }

    static recv_ctx *of(uct_tag_context_t *self)
    {
        return ucs_container_of(self, recv_ctx, uct);
    }

    static void consumed_cb(uct_tag_context_t *self)
    {
        of(self)->consumed++;
    }

    static void completed_cb(uct_tag_context_t *self, uct_tag_t stag,
                             uint64_t imm, size_t length, void *inline_data,
                             ucs_status_t status)
    {
        recv_ctx *c = of(self);
        c->completed++;
        c->stag   = stag;
        c->imm    = imm;
        c->length = length;
        c->status = status;
    }

    static void rndv_cb(uct_tag_context_t *self, uct_tag_t stag,
                        const void *header, unsigned header_length,
                        ucs_status_t status, unsigned flags)
    {
        recv_ctx *c = of(self);
        c->rndv++;
        c->stag   = stag;
        c->status = status;
        c->header.assign((const char*)header,
                         (const char*)header + header_length);
    }
};

struct pack_arg {
    const char *data;
    size_t      length;
};

size_t pack_cb(void *dest, void *arg)
{
    pack_arg *a = static_cast<pack_arg*>(arg);
    if (a->length > 0) {
        memcpy(dest, a->data, a->length);
    }
    return a->length;
}

ucs_status_t am_cb(void *arg, void *data, size_t length, unsigned flags)
{
    std::vector<std::vector<char> > *v =
            static_cast<std::vector<std::vector<char> >*>(arg);
    v->push_back(std::vector<char>((char*)data, (char*)data + length));
    return UCS_OK;
}

} /* namespace */


class uct_dcx_tag : public uct_dcx_policy_test {
protected:
    virtual void iface_params(uct_iface_params_t &params)
    {
        if (!m_tag_params) {
            return;
        }
        params.field_mask |= UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_CB |
                             UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_ARG |
                             UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_CB |
                             UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_ARG;
        params.eager_cb  = unexp_eager_cb;
        params.eager_arg = this;
        params.rndv_cb   = unexp_rndv_cb;
        params.rndv_arg  = this;
    }

    virtual void SetUp()
    {
        m_tag_params = true;
        uct_dcx_test::SetUp();
    }

    entity *create_tm(const char *enable = "y")
    {
        std::map<std::string, std::string> cfg;
        cfg["TM_ENABLE"] = enable;
        return create_entity(cfg);
    }

    static ucs_status_t unexp_eager_cb(void *arg, void *data, size_t length,
                                       unsigned flags, uct_tag_t stag,
                                       uint64_t imm, void **context)
    {
        uct_dcx_tag *self = static_cast<uct_dcx_tag*>(arg);
        unexp_msg m;

        m.tag   = stag;
        m.imm   = imm;
        m.flags = flags;
        m.rndv  = false;
        m.data.assign((char*)data, (char*)data + length);
        self->m_unexp.push_back(m);
        return UCS_OK;
    }

    static ucs_status_t unexp_rndv_cb(void *arg, unsigned flags, uint64_t stag,
                                      const void *header,
                                      unsigned header_length,
                                      uint64_t remote_addr, size_t length,
                                      const void *rkey_buf)
    {
        uct_dcx_tag *self = static_cast<uct_dcx_tag*>(arg);
        unexp_msg m;

        m.tag   = stag;
        m.imm   = 0;
        m.flags = flags;
        m.rndv  = true;
        m.data.assign((char*)header, (char*)header + header_length);
        self->m_unexp.push_back(m);
        self->m_rndv_va  = remote_addr;
        self->m_rndv_len = length;
        if (rkey_buf != NULL) {
            self->m_rndv_rkey.assign((const char*)rkey_buf,
                                     (const char*)rkey_buf +
                                     self->m_md_attr.rkey_packed_size);
        }
        return UCS_OK;
    }

    static std::vector<char> pattern(size_t length, unsigned seed)
    {
        std::vector<char> v(length);
        for (size_t i = 0; i < length; ++i) {
            v[i] = (char)(i * 7 + seed);
        }
        return v;
    }

    void post_recv(entity *e, recv_ctx &ctx, mem &m, size_t length,
                   uct_tag_t tag, uct_tag_t mask = (uct_tag_t)-1)
    {
        uct_iov_t iov;
        ucs_status_t status;

        iov.buffer = m.ptr;
        iov.length = length;
        iov.memh   = m.memh;
        iov.stride = 0;
        iov.count  = 1;
        do {
            status = uct_iface_tag_recv_zcopy(e->iface, tag, mask, &iov, 1,
                                              &ctx.uct);
            if (status == UCS_ERR_NO_RESOURCE) {
                progress();
            }
        } while (status == UCS_ERR_NO_RESOURCE);
        ASSERT_EQ(UCS_OK, status);
    }

    /* Sends one eager message of 'length' bytes in the given way */
    void send_eager(uct_ep_h ep, int how, uct_tag_t tag, uint64_t imm,
                    const std::vector<char> &data)
    {
        ucs_status_t status;
        ssize_t packed;

        if (how == 0) {
            ASSERT_TRUE(wait_for([&]() {
                status = uct_ep_tag_eager_short(ep, tag, data.data(),
                                                data.size());
                return status != UCS_ERR_NO_RESOURCE;
            }));
            ASSERT_EQ(UCS_OK, status);
        } else if (how == 1) {
            pack_arg a = { data.data(), data.size() };
            ASSERT_TRUE(wait_for([&]() {
                packed = uct_ep_tag_eager_bcopy(ep, tag, imm, pack_cb, &a, 0);
                return packed != UCS_ERR_NO_RESOURCE;
            }));
            ASSERT_EQ((ssize_t)data.size(), packed);
        } else {
            mem m = alloc_mem(ucs_max(data.size(), (size_t)1));
            if (!data.empty()) {
                memcpy(m.ptr, data.data(), data.size());
            }
            uct_iov_t iov = { m.ptr, data.size(), m.memh, 0, 1 };
            test_comp comp;
            ASSERT_TRUE(wait_for([&]() {
                status = uct_ep_tag_eager_zcopy(ep, tag, imm, &iov, 1, 0,
                                                &comp.uct);
                return status != UCS_ERR_NO_RESOURCE;
            }));
            ASSERT_TRUE(UCS_STATUS_IS_ERR(status) == 0);
            if (status == UCS_INPROGRESS) {
                ASSERT_TRUE(wait_for([&]() { return comp.done > 0; }));
                EXPECT_EQ(UCS_OK, comp.status);
            }
        }
    }

    size_t max_eager(entity *e, int how)
    {
        return (how == 0) ? e->attr.cap.tag.eager.max_short :
               (how == 1) ? e->attr.cap.tag.eager.max_bcopy :
                            e->attr.cap.tag.eager.max_zcopy;
    }

    void expected_eager(int how)
    {
        entity *a = create_tm(), *b = create_tm();
        uct_ep_h ep = connect(a, b);
        size_t sizes[] = { 0, 1, 100, 4000, max_eager(a, how) };

        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
            size_t len = sizes[i];
            if (len > max_eager(a, how)) {
                continue;
            }
            mem m      = alloc_mem(len + 64);
            recv_ctx ctx;
            std::vector<char> data = pattern(len, i + how);
            uint64_t imm = (how == 0) ? 0 : (0x1234567800000000ull | i);

            post_recv(b, ctx, m, len + 64, 0x100 + i);
            send_eager(ep, how, 0x100 + i, imm, data);
            ASSERT_TRUE(wait_for([&]() { return ctx.completed > 0; }))
                << "size " << len;
            EXPECT_EQ(1, ctx.consumed);
            EXPECT_EQ(UCS_OK, ctx.status);
            EXPECT_EQ(0x100 + i, ctx.stag);
            EXPECT_EQ(imm, ctx.imm);
            EXPECT_EQ(len, ctx.length);
            EXPECT_TRUE((len == 0) || !memcmp(m.ptr, data.data(), len))
                << "size " << len;
            EXPECT_TRUE(m_unexp.empty());
        }
    }

    void unexpected_eager(int how)
    {
        entity *a = create_tm(), *b = create_tm();
        uct_ep_h ep = connect(a, b);
        size_t sizes[] = { 0, 33, max_eager(a, how) };

        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
            std::vector<char> data = pattern(sizes[i], 3 * i + how);
            uint64_t imm = (how == 0) ? 0 : (0xabcdull << 40) + i;

            m_unexp.clear();
            send_eager(ep, how, 0x77 + i, imm, data);
            ASSERT_TRUE(wait_for([&]() { return !m_unexp.empty(); }));
            ASSERT_EQ(1u, m_unexp.size());
            EXPECT_FALSE(m_unexp[0].rndv);
            EXPECT_EQ(0x77 + i, m_unexp[0].tag);
            EXPECT_EQ(imm, m_unexp[0].imm);
            EXPECT_TRUE(m_unexp[0].flags & UCT_CB_PARAM_FLAG_FIRST);
            EXPECT_FALSE(m_unexp[0].flags & UCT_CB_PARAM_FLAG_MORE);
            EXPECT_TRUE(m_unexp[0].data == data) << "size " << sizes[i];
        }
    }

    bool                   m_tag_params;
    uint64_t               m_rndv_va;
    size_t                 m_rndv_len;
    std::vector<char>      m_rndv_rkey;
    std::vector<unexp_msg> m_unexp;
};


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
    mem m = alloc_mem(256);
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

    ASSERT_EQ(UCS_OK, uct_ep_tag_rndv_request(ep, 0x43, hdr.data(),
                                              hdr.size(), 0));
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
    uct_ep_h ep = connect(a, b);
    size_t sizes[] = { 1, 9000, 256 * 1024, 4 * 1024 * 1024 };
    char hdr[18] = "rndv-header-18-b";

    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        size_t len = sizes[i];
        mem src    = alloc_mem(len), dst = alloc_mem(len);
        std::vector<char> data = pattern(len, i + 11);
        recv_ctx ctx;
        test_comp comp;
        void *op;

        memcpy(src.ptr, data.data(), len);
        post_recv(b, ctx, dst, len, 0x500 + i);
        uct_iov_t iov = { src.ptr, len, src.memh, 0, 1 };
        ASSERT_TRUE(wait_for([&]() {
            op = uct_ep_tag_rndv_zcopy(ep, 0x500 + i, hdr, sizeof(hdr), &iov,
                                       1, 0, &comp.uct);
            return op != UCS_STATUS_PTR(UCS_ERR_NO_RESOURCE);
        }));
        ASSERT_FALSE(UCS_PTR_IS_ERR(op));
        ASSERT_TRUE(wait_for([&]() {
            return (ctx.completed > 0) && (comp.done > 0);
        })) << "size " << len;
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
    char hdr[18] = "sw-rndv-18-bytes";
    test_comp comp, get;
    void *op;

    memcpy(src.ptr, data.data(), len);
    uct_iov_t iov = { src.ptr, len, src.memh, 0, 1 };
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
    uct_iov_t diov = { dst.ptr, len, dst.memh, 0, 1 };
    ucs_status_t status = uct_ep_get_zcopy(back, &diov, 1, m_rndv_va,
                                           rkb.rkey, &get.uct);
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
    mem src = alloc_mem(4096);
    test_comp comp;
    void *op;

    uct_iov_t iov = { src.ptr, 4096, src.memh, 0, 1 };
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
    uct_ep_h ep = connect(a, b);
    mem src = alloc_mem(4096);
    char hdr[19] = {0};
    test_comp comp;

    log_counter::reset();
    uct_iov_t iov = { src.ptr, 4096, src.memh, 0, 1 };
    /* header too large: 64 - 48 + 2 = 18 bytes at most */
    EXPECT_EQ(UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM),
              uct_ep_tag_rndv_zcopy(ep, 1, hdr, sizeof(hdr), &iov, 1, 0,
                                    &comp.uct));
    uct_iov_t bad = { src.ptr, 4096, UCT_MEM_HANDLE_NULL, 0, 1 };
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
    mem src = alloc_mem(100000);
    test_comp comp;
    void *op;

    /* b goes away */
    uct_iface_close(b->iface);
    uct_worker_destroy(b->worker);
    m_entities.erase(std::find(m_entities.begin(), m_entities.end(), b));
    delete b;

    uct_iov_t iov = { src.ptr, 100000, src.memh, 0, 1 };
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
    mem m = alloc_mem(64);
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
    entity *b = create_tm();
    unsigned max = b->attr.cap.tag.recv.max_outstanding;
    std::vector<recv_ctx> ctx(max + 1);
    ucs_status_t status;
    unsigned i;

    for (i = 0; i < max; ++i) {
        do {
            status = uct_iface_tag_recv_zcopy(b->iface, i, (uct_tag_t)-1,
                                              NULL, 0, &ctx[i].uct);
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
        status = uct_iface_tag_recv_zcopy(b->iface, max, (uct_tag_t)-1, NULL,
                                          0, &ctx[max].uct);
        return status != UCS_ERR_EXCEEDS_LIMIT &&
               status != UCS_ERR_NO_RESOURCE;
    }));
    EXPECT_EQ(UCS_OK, status);
    for (i = 1; i <= max; ++i) {
        uct_iface_tag_recv_cancel(b->iface, &ctx[i].uct, 1);
    }
    progress();
}

TEST_P(uct_dcx_tag, truncated_bad_flow)
{
    entity *a = create_tm(), *b = create_tm();
    uct_ep_h ep = connect(a, b);
    mem m = alloc_mem(64);
    recv_ctx ctx;

    post_recv(b, ctx, m, 16, 0x9);
    send_eager(ep, 1, 0x9, 0, pattern(100, 1));
    ASSERT_TRUE(wait_for([&]() { return ctx.completed > 0; }));
    EXPECT_EQ(UCS_ERR_MESSAGE_TRUNCATED, ctx.status);
}

TEST_P(uct_dcx_tag, send_bad_flow)
{
    entity *a = create_tm(), *b = create_tm(), *n = create_tm("n");
    uct_ep_h ep    = connect(a, b);
    uct_ep_h ep_n  = connect(a, n);
    std::vector<char> big(a->attr.cap.tag.eager.max_short + 1);

    log_counter::reset();
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_ep_tag_eager_short(ep_n, 1, big.data(), 1));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_tag_eager_short(ep, 1, big.data(), big.size()));
    uct_iov_t iov = { big.data(), 1, UCT_MEM_HANDLE_NULL, 0, 1 };
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_tag_eager_zcopy(ep, 1, 0, &iov, 1, 0, NULL));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_iface_tag_recv_zcopy(n->iface, 1, 1, NULL, 0, NULL));
    EXPECT_EQ(4, log_counter::errors()) << log_counter::joined();
    log_counter::reset();
}

/* AMs (and the credit grants behind them) between TM and non-TM
 * interfaces, both ways: the mixed job */
TEST_P(uct_dcx_tag, am_between_tm_and_non_tm)
{
    entity *t = create_tm("y"), *n = create_tm("n");
    std::vector<std::vector<char> > at_t, at_n;
    uct_ep_h ep_tn = connect(t, n), ep_nt = connect(n, t);
    std::vector<char> data = pattern(3000, 5);
    pack_arg pa = { data.data(), data.size() };
    int i;

    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(t->iface, AM_ID, am_cb, &at_t,
                                               0));
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(n->iface, AM_ID, am_cb, &at_n,
                                               0));
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

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_tag, UCT_DCX_POLICIES);
