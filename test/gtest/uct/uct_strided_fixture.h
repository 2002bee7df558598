/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fixture of the strided uct_iov_t tests (test_uct_strided.cc,
 * test_uct_strided_queue.cc): interfaces opened for strided keys, layouts
 * of registered memory filled with seeded bytes and gaps, and the checks
 * that every element moved and no gap was touched.
 */
#ifndef DCX_TEST_UCT_STRIDED_FIXTURE_H_
#define DCX_TEST_UCT_STRIDED_FIXTURE_H_

#include "uct_fixture.h"

extern "C" {
#include "dcx_strided_stats.h"
#include "uct_invalidate.h"
}

#include <cstring>
#include <unistd.h>
#include <vector>

using namespace dcx_test;

/* Named, not anonymous: the fixture is the same class in every file that
 * includes it */
namespace dcx_strided_test {

const uint8_t AM_ID = 7;
const char GAP      = (char)0xee;

/* One strided iov entry over registered memory */
struct layout {
    size_t length;
    size_t stride;
    unsigned count;
};

inline char elem_byte(size_t k, size_t j, unsigned seed)
{
    return (char)(k * 13 + j * 7 + seed + 1);
}

struct am_rx {
    std::vector<std::vector<char>> msgs;
};

inline ucs_status_t am_cb(void *arg, void *data, size_t length, unsigned flags)
{
    static_cast<am_rx *>(arg)->msgs.push_back(std::vector<char>((char *)data,
                                                                (char *)data +
                                                                    length));
    return UCS_OK;
}

/* What the peer process of the cross-process tests publishes
 * (uct_dcx_strided_peer.DISABLED_serve) */
struct strided_peer_info {
    uint8_t dev_addr[64];
    uint8_t iface_addr[64];
    size_t dev_addr_len, iface_addr_len;
    uint64_t buf;
    char rkey[64];
};

/* That peer, killed however the test ends */
struct strided_peer {
    peer_proc p;
    strided_peer_info info;
    ~strided_peer() { kill_peer(p); }
};

} /* namespace dcx_strided_test */

using namespace dcx_strided_test;


class uct_dcx_strided : public uct_dcx_policy_test {
protected:
    /* The parameter: a DCI policy, and "/own" to put strided-key configures
     * on a queue of their own, which the device runs late */
    virtual void init_env(scoped_env &env)
    {
        const std::string p = GetParam();
        const size_t slash  = p.find('/');

        env.set("UCX_DCX_DCI_POLICY", p.substr(0, slash));
        if (slash != std::string::npos) {
            env.set("UCX_DCX_STRIDED_KEY_QUEUE", p.substr(slash + 1));
            /* the soft device runs a configure after its post, not within
             * it, so that a data work request posted before its completion
             * would find the key not configured yet (or the layout before),
             * as it can on a ConnectX */
            env.set("UCX_DCX_SOFT_MKEY_LATE", "y");
        }
    }

    /* Every test moves layouts through strided keys, and through the tag
     * operations too where the device has tag matching (the interfaces
     * are opened with TM_ENABLE=y then) */
    virtual void SetUp()
    {
        uct_dcx_policy_test::SetUp();
        if (!IsSkipped() && !dev_has(DCX_CAP_MKEY_STRIDE)) {
            GTEST_SKIP() << "the device lacks strided keys";
        }
    }

    bool skip_without_tm() { return !dev_has(DCX_CAP_TM); }

    virtual void iface_params(uct_iface_params_t &params)
    {
        set_tm_callbacks(params, unexp_eager_cb, unexp_rndv_cb, this);
    }

    static ucs_status_t unexp_eager_cb(void *arg, void *data, size_t length,
                                       unsigned flags, uct_tag_t stag,
                                       uint64_t imm, void **context)
    {
        ADD_FAILURE() << "unexpected eager message, tag " << stag;
        return UCS_OK;
    }

    static ucs_status_t unexp_rndv_cb(void *arg, unsigned flags, uint64_t stag,
                                      const void *header,
                                      unsigned header_length,
                                      uint64_t remote_addr, size_t length,
                                      const void *rkey_buf)
    {
        ADD_FAILURE() << "unexpected rendezvous, tag " << stag;
        return UCS_OK;
    }

    entity *create(const std::map<std::string, std::string> &extra =
                       std::map<std::string, std::string>())
    {
        std::map<std::string, std::string> cfg = extra;
        cfg["TM_ENABLE"] = dev_has(DCX_CAP_TM) ? "y" : "n";
        if (cfg.find("STRIDED_SGE_MAX") == cfg.end()) {
            /* small layouts through keys too (the default expands all that
             * fit a work request to sges) */
            cfg["STRIDED_SGE_MAX"] = "4";
        }
        return create_entity(cfg);
    }

    /* create() with one more setting */
    entity *create(const char *name, const std::string &value)
    {
        std::map<std::string, std::string> cfg;

        cfg[name] = value;
        return create(cfg);
    }

    static size_t span(const layout &l)
    {
        return (l.count == 0) ? 0 : (l.count - 1) * l.stride + l.length;
    }

    /* Registered memory holding the layout's elements (seeded), gaps GAP */
    mem strided_mem(const layout &l, unsigned seed, bool fill = true)
    {
        mem m = alloc_mem(span(l) + 64);
        memset(m.ptr, GAP, m.length);
        if (fill) {
            for (size_t k = 0; k < l.count; ++k) {
                for (size_t j = 0; j < l.length; ++j) {
                    ((char *)m.ptr)[k * l.stride + j] = elem_byte(k, j, seed);
                }
            }
        }
        return m;
    }

    static std::vector<char> packed(const layout &l, unsigned seed)
    {
        std::vector<char> v;
        for (size_t k = 0; k < l.count; ++k) {
            for (size_t j = 0; j < l.length; ++j) {
                v.push_back(elem_byte(k, j, seed));
            }
        }
        return v;
    }

    /* Every element of m holds the seeded bytes, every gap is untouched */
    static void check_strided(const mem &m, const layout &l, unsigned seed)
    {
        const char *p = (const char *)m.ptr;
        size_t errors = 0;

        for (size_t off = 0; off < m.length; ++off) {
            size_t k = off / l.stride, j = off % l.stride;
            bool in  = (k < l.count) && (j < l.length);
            char exp = in ? elem_byte(k, j, seed) : GAP;
            if ((p[off] != exp) && (errors++ < 5)) {
                ADD_FAILURE() << "offset " << off
                              << (in ? " (element " : " (gap after element ")
                              << k << ") holds " << (int)(unsigned char)p[off]
                              << ", expected " << (int)(unsigned char)exp;
            }
        }
        EXPECT_EQ(0u, errors);
    }

    static uct_iov_t iov_of(const mem &m, const layout &l)
    {
        uct_iov_t iov = {m.ptr, l.length, m.memh, l.stride, l.count};
        return iov;
    }

    dcx_strided_stats_t stats(entity *e)
    {
        dcx_strided_stats_t s;
        EXPECT_EQ(0, dcx_strided_iface_stats(e->iface, &s));
        return s;
    }

    /* Runs op until it is not NO_RESOURCE and waits for its completion */
    void run_zcopy(const std::function<ucs_status_t(uct_completion_t *)> &op)
    {
        test_comp comp;
        ucs_status_t status = UCS_OK;

        ASSERT_TRUE(wait_for([&]() {
            status = op(&comp.uct);
            return status != UCS_ERR_NO_RESOURCE;
        }));
        ASSERT_FALSE(UCS_STATUS_IS_ERR(status)) << ucs_status_string(status);
        if (status == UCS_INPROGRESS) {
            ASSERT_TRUE(wait_for([&]() { return comp.done > 0; }));
            EXPECT_EQ(UCS_OK, comp.status);
        }
    }

    void put(uct_ep_h ep, const uct_iov_t *iov, size_t iovcnt, const mem &dst)
    {
        run_zcopy([&](uct_completion_t *c) {
            return uct_ep_put_zcopy(ep, iov, iovcnt, (uintptr_t)dst.ptr,
                                    dst.rkey, c);
        });
    }

    /* put_zcopy of one strided entry into a contiguous buffer */
    void put_check(entity *a, uct_ep_h ep, const layout &l, unsigned seed)
    {
        mem src = strided_mem(l, seed);
        mem dst = alloc_mem(l.length * l.count + 64);
        memset(dst.ptr, GAP, dst.length);
        uct_iov_t iov = iov_of(src, l);

        put(ep, &iov, 1, dst);
        std::vector<char> exp = packed(l, seed);
        EXPECT_EQ(0, memcmp(dst.ptr, exp.data(), exp.size()))
            << "length " << l.length << " stride " << l.stride << " count "
            << l.count;
        for (size_t i = exp.size(); i < dst.length; ++i) {
            ASSERT_EQ(GAP, ((char *)dst.ptr)[i]) << "written past the end";
        }
        check_strided(src, l, seed); /* the source is unchanged */
    }

    struct recv_ctx {
        uct_tag_context_t uct;
        int completed;
        size_t length;
        ucs_status_t status;
    };

    static void completed_cb(uct_tag_context_t *self, uct_tag_t stag,
                             uint64_t imm, size_t length, void *inline_data,
                             ucs_status_t status)
    {
        recv_ctx *c = ucs_container_of(self, recv_ctx, uct);
        c->completed++;
        c->length = length;
        c->status = status;
    }

    static void consumed_cb(uct_tag_context_t *self) {}

    void post_recv(entity *e, recv_ctx &ctx, const uct_iov_t &iov,
                   uct_tag_t tag)
    {
        ucs_status_t status;

        memset(&ctx, 0, sizeof(ctx));
        ctx.uct.tag_consumed_cb = consumed_cb;
        ctx.uct.completed_cb    = completed_cb;
        /* a strided buffer's key is configured first: NO_RESOURCE until
         * then */
        ASSERT_TRUE(wait_for([&]() {
            status = uct_iface_tag_recv_zcopy(e->iface, tag, (uct_tag_t)-1,
                                              &iov, 1, &ctx.uct);
            return status != UCS_ERR_NO_RESOURCE;
        }));
        ASSERT_EQ(UCS_OK, status);
    }

    /* Starts the peer process on our fabric and connects a to it: *ep and
     * *rkb reach its registered buffer (peer.info.buf) */
    void start_peer(entity *a, strided_peer &peer, uct_ep_h *ep,
                    uct_rkey_bundle_t *rkb)
    {
        peer.p = spawn_peer("uct_dcx_strided_peer.DISABLED_serve");
        ASSERT_GT(peer.p.pid, 0);
        ASSERT_TRUE(read_full(peer.p.from, &peer.info, sizeof(peer.info)))
            << "the peer did not start";
        *ep = connect_addr(a, peer.info.dev_addr, peer.info.iface_addr);
        ASSERT_TRUE(*ep != NULL);
        ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, peer.info.rkey, rkb));
    }
};

/* Every policy, with configures where the device chooses (on the DCI of
 * the operation on the soft device, on the UMR queue on mlx5) and on a
 * queue of their own */
#define UCT_DCX_STRIDED_PARAMS                                              \
    ::testing::Values("dcs", "dcs_quota", "rand", "hybrid", "streams",      \
                      "dcs/own", "dcs_quota/own", "rand/own", "hybrid/own", \
                      "streams/own")

#endif /* DCX_TEST_UCT_STRIDED_FIXTURE_H_ */
