/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fixture of the dcx tag-matching tests (test_uct_tag.cc in one process,
 * test_uct_tag_remote.cc across processes): receive contexts that record
 * their callbacks, the interface's unexpected-message callbacks, posting
 * receives and sending eager messages in each of the three ways.
 */
#ifndef DCX_GTEST_UCT_TAG_FIXTURE_H_
#define DCX_GTEST_UCT_TAG_FIXTURE_H_

#include "uct_fixture.h"
#include "dcx_stat_file.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <vector>

using namespace dcx_test;

namespace dcx_tag_test {

const uint8_t AM_ID = 5;

struct unexp_msg {
    uct_tag_t tag;
    uint64_t imm;
    unsigned flags;
    std::vector<char> data;
    bool rndv;
};

struct recv_ctx {
    uct_tag_context_t uct;
    int consumed;
    int completed;
    int rndv;
    uct_tag_t stag;
    uint64_t imm;
    size_t length;
    ucs_status_t status;
    std::vector<char> header;

    recv_ctx() :
        consumed(0), completed(0), rndv(0), stag(0), imm(0), length(0),
        status(UCS_OK)
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

    static void consumed_cb(uct_tag_context_t *self) { of(self)->consumed++; }

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
        c->header.assign((const char *)header,
                         (const char *)header + header_length);
    }
};

struct pack_arg {
    const char *data;
    size_t length;
};

inline size_t pack_cb(void *dest, void *arg)
{
    pack_arg *a = static_cast<pack_arg *>(arg);
    if (a->length > 0) {
        memcpy(dest, a->data, a->length);
    }
    return a->length;
}

inline ucs_status_t am_cb(void *arg, void *data, size_t length, unsigned flags)
{
    std::vector<std::vector<char>> *v =
        static_cast<std::vector<std::vector<char>> *>(arg);
    v->push_back(std::vector<char>((char *)data, (char *)data + length));
    return UCS_OK;
}

} /* namespace dcx_tag_test */

using namespace dcx_tag_test;


class uct_dcx_tag_base : public uct_dcx_test {
protected:
    virtual void iface_params(uct_iface_params_t &params)
    {
        if (!m_tag_params) {
            return;
        }
        set_tm_callbacks(params, unexp_eager_cb, unexp_rndv_cb, this);
    }

    virtual void SetUp()
    {
        m_tag_params = true;
        uct_dcx_test::SetUp();
        if (!IsSkipped() && needs_tm() && !dev_has(DCX_CAP_TM)) {
            GTEST_SKIP() << "the device has no tag matching offload";
        }
    }

    /* The tests need a device with tag matching (those of a device
     * without it do not) */
    virtual bool needs_tm() const { return true; }

    entity *create_tm(const char *enable = "y")
    {
        std::map<std::string, std::string> cfg;
        cfg["TM_ENABLE"] = enable;
        return create_entity(cfg);
    }

    /* A TM interface whose counters live in a fresh directory
     * (UCX_DCX_TM_STATS_DIR, the former name of STATS_DIR), read by
     * tm_counter() */
    entity *create_tm_counted()
    {
        std::map<std::string, std::string> cfg;

        EXPECT_FALSE(m_stats.path().empty());
        cfg["TM_ENABLE"]    = "y";
        cfg["TM_STATS_DIR"] = m_stats.path();
        return create_entity(cfg);
    }

    /* Counter idx of the interface create_tm_counted() opened, read from
     * its counters file by name */
    enum {
        TM_SYNCS,
        TM_CANCELS
    };
    uint64_t tm_counter(unsigned idx)
    {
        unsigned files;
        uint64_t v = m_stats.sum((idx == TM_SYNCS) ? "tm.syncs" : "tm.cancels",
                                 &files);

        EXPECT_EQ(1u, files) << m_stats.path();
        return v;
    }

    static ucs_status_t unexp_eager_cb(void *arg, void *data, size_t length,
                                       unsigned flags, uct_tag_t stag,
                                       uint64_t imm, void **context)
    {
        uct_dcx_tag_base *self = static_cast<uct_dcx_tag_base *>(arg);
        unexp_msg m;

        m.tag   = stag;
        m.imm   = imm;
        m.flags = flags;
        m.rndv  = false;
        m.data.assign((char *)data, (char *)data + length);
        self->m_unexp.push_back(m);
        return UCS_OK;
    }

    static ucs_status_t unexp_rndv_cb(void *arg, unsigned flags, uint64_t stag,
                                      const void *header,
                                      unsigned header_length,
                                      uint64_t remote_addr, size_t length,
                                      const void *rkey_buf)
    {
        uct_dcx_tag_base *self = static_cast<uct_dcx_tag_base *>(arg);
        unexp_msg m;

        m.tag   = stag;
        m.imm   = 0;
        m.flags = flags;
        m.rndv  = true;
        m.data.assign((char *)header, (char *)header + header_length);
        self->m_unexp.push_back(m);
        self->m_rndv_va  = remote_addr;
        self->m_rndv_len = length;
        if (rkey_buf != NULL) {
            self->m_rndv_rkey.assign((const char *)rkey_buf,
                                     (const char *)rkey_buf +
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
            pack_arg a = {data.data(), data.size()};
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
            uct_iov_t iov = {m.ptr, data.size(), m.memh, 0, 1};
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
        uct_ep_h ep    = connect(a, b);
        size_t sizes[] = {0, 1, 100, 4000, max_eager(a, how)};

        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
            size_t len = sizes[i];
            if (len > max_eager(a, how)) {
                continue;
            }
            mem m = alloc_mem(len + 64);
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
        uct_ep_h ep    = connect(a, b);
        size_t sizes[] = {0, 33, max_eager(a, how)};

        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
            std::vector<char> data = pattern(sizes[i], 3 * i + how);
            uint64_t imm           = (how == 0) ? 0 : (0xabcdull << 40) + i;

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

    bool m_tag_params;
    dcx_stat_dir m_stats; /* create_tm_counted()'s counters */
    uint64_t m_rndv_va;
    size_t m_rndv_len;
    std::vector<char> m_rndv_rkey;
    std::vector<unexp_msg> m_unexp;
};

/* The same, run once per DCI pool policy */
class uct_dcx_tag :
    public uct_dcx_tag_base,
    public ::testing::WithParamInterface<std::string> {
protected:
    virtual void init_env(scoped_env &env)
    {
        env.set("UCX_DCX_DCI_POLICY", GetParam());
    }
};

#endif
