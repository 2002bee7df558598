/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uct_ep_invalidate() on dcx endpoints (dcx_ep_invalidate.c), under every
 * DCI policy, with one DCI so that the endpoints to the peer share it
 * (rand) or take turns on it (dcs, dcs_quota):
 *  - operations outstanding at the invalidation complete with
 *    UCS_ERR_ENDPOINT_TIMEOUT (a fetched value is not delivered); new ones,
 *    until the failure is reported, are taken as by a queue pair in error
 *    (what a posted one returns, nothing reaches the peer, their
 *    completions fail with the others), and fail at once after it;
 *    pending requests are not dispatched and are purged by the user; the
 *    error handler gets the endpoint with UCS_ERR_ENDPOINT_TIMEOUT, all
 *    from progress, not in the call;
 *  - another endpoint to the same peer keeps working, and the invalidated
 *    one is destroyed cleanly (also before its failure was reported);
 *  - a second invalidation reports nothing more; unknown flags or
 *    parameter fields are refused.
 * The internal operation takes flags up to UCX 1.18 and a parameter struct
 * from 1.23 on (DCX_UCX_HAVE_EP_INVALIDATE_PARAMS); both are tested through
 * uct_ep_invalidate() of the UCX built against.
 */
#include "uct_fixture.h"
#include "uct_invalidate.h"

extern "C" {
#include <uct/base/uct_iface.h>
#include <uct/api/v2/uct_v2.h>
}

#include <cstring>
#include <vector>

using namespace dcx_test;

namespace {

const uint8_t AM_ID     = 9;
const uint8_t AM_ID_BAD = 10; /* bad's AMs, counted apart */

/* A pending request that counts its dispatches and purges */
struct counting_req {
    uct_pending_req_t uct;
    int dispatched;
    int purged;

    counting_req() : dispatched(0), purged(0) { uct.func = dispatch; }

    static ucs_status_t dispatch(uct_pending_req_t *self)
    {
        reinterpret_cast<counting_req *>(self)->dispatched++;
        return UCS_OK;
    }

    static void purge(uct_pending_req_t *self, void *arg)
    {
        reinterpret_cast<counting_req *>(self)->purged++;
    }
};

} /* namespace */


class uct_dcx_invalidate : public uct_dcx_pair_test {
protected:
    virtual void SetUp()
    {
        std::map<std::string, std::string> cfg;

        uct_dcx_pair_test::SetUp();
        cfg["NUM_DCI"] = "1";
        setup_pair(AM_ID, cfg);
        log_counter::reset();
    }

    /* A few hundred progress calls: what is due from progress is done */
    void progress_some()
    {
        for (int i = 0; i < 300; ++i) {
            progress();
        }
    }

    /* what operations outstanding on an endpoint refer to: members, so
     * that they outlive a test body that stops early (the endpoints go in
     * TearDown) */
    test_comp m_get_comp, m_put_comp, m_fadd_comp;
    uint64_t m_fetched;
    counting_req m_req;
    int m_rx_bad = 0; /* AMs of AM_ID_BAD received */
};

TEST_P(uct_dcx_invalidate, outstanding_and_pending_fail)
{
    uct_ep_h bad        = connect(m_a, m_b);
    uct_ep_h good       = connect(m_a, m_b);
    mem loc             = alloc_mem(8192);
    const uint64_t mark = 0x5a5a5a5a5a5a5a5aull;
    uint64_t value      = 1;
    test_comp &get_comp = m_get_comp, &put_comp = m_put_comp;
    test_comp &fadd_comp = m_fadd_comp;
    counting_req &req    = m_req;
    ucs_status_t status;
    int sent;

    m_fetched = mark;

    check_healthy(good, 11);

    /* Operations outstanding on bad: no progress from here on */
    uct_iov_t get_iov = {loc.ptr, 4096, loc.memh, 0, 1};
    uct_iov_t put_iov = {(char *)loc.ptr + 4096, 4096, loc.memh, 0, 1};
    ASSERT_EQ(UCS_INPROGRESS, retry([&] {
                  return uct_ep_get_zcopy(bad, &get_iov, 1,
                                          (uintptr_t)m_mem.ptr + 4096,
                                          m_mem.rkey, &get_comp.uct);
              }));
    ASSERT_EQ(UCS_INPROGRESS,
              uct_ep_put_zcopy(bad, &put_iov, 1, (uintptr_t)m_mem.ptr + 8192,
                               m_mem.rkey, &put_comp.uct));
    ASSERT_EQ(UCS_INPROGRESS,
              uct_ep_atomic64_fetch(bad, UCT_ATOMIC_OP_ADD, 1, &m_fetched,
                                    (uintptr_t)m_mem.ptr + 16384, m_mem.rkey,
                                    &fadd_comp.uct));
    /* ... until bad has no resources (DCI slots or AM credits) left.  They
     * are counted apart from good's: posted before the invalidation, they
     * may still arrive after it, whatever the policy (a device executes
     * what was posted to it, in its own time) */
    int &rx_bad = m_rx_bad;
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_b->iface, AM_ID_BAD,
                                               am_count_cb, &rx_bad, 0));
    for (sent = 0; sent < 100000; ++sent) {
        status = uct_ep_am_short(bad, AM_ID_BAD, sent, NULL, 0);
        if (status != UCS_OK) {
            break;
        }
    }
    ASSERT_EQ(UCS_ERR_NO_RESOURCE, status) << "after " << sent << " AMs";
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(bad, &req.uct, 0));

    ASSERT_EQ(UCS_OK, invalidate(bad));
    /* new operations are taken (and dropped: checked in
     * new_operations_taken_until_reported); nothing is reported in the
     * call */
    EXPECT_EQ(UCS_OK, uct_ep_put_short(bad, &value, sizeof(value),
                                       (uintptr_t)m_mem.ptr, m_mem.rkey));
    EXPECT_EQ(UCS_OK, uct_ep_am_short(bad, AM_ID, 0, NULL, 0));
    EXPECT_TRUE(m_errors.empty());
    EXPECT_EQ(0, get_comp.done + put_comp.done + fadd_comp.done);

    /* from progress: the error handler, the outstanding operations */
    ASSERT_TRUE(wait_for([&] { return !errors_of(bad).empty(); }));
    ASSERT_TRUE(wait_for([&] {
        return get_comp.done && put_comp.done && fadd_comp.done;
    }));
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, errors_of(bad)[0]);
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, get_comp.status);
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, put_comp.status);
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, fadd_comp.status);
    EXPECT_EQ(mark, m_fetched) << "a fetched value was delivered";

    /* the pending request waits for the purge, and is never dispatched */
    progress_some();
    /* the AMs bad had posted are on the wire: on a shared DCI, left alone,
     * they still arrive, some after a device retry that takes time rather
     * than a number of progress calls (an RNR wait at the target) */
    if ((std::string(GetParam()) == "rand") ||
        (std::string(GetParam()) == "streams")) {
        ASSERT_TRUE(wait_for([&] { return rx_bad == sent; }))
            << rx_bad << " of " << sent << " AMs of bad arrived";
    }
    EXPECT_EQ(0, req.dispatched);
    uct_ep_pending_purge(bad, counting_req::purge, NULL);
    EXPECT_EQ(1, req.purged);
    EXPECT_EQ(0, req.dispatched);

    /* one report, for bad alone; good to the same peer keeps working */
    EXPECT_EQ(1u, errors_of(bad).size());
    EXPECT_EQ(1u, m_errors.size());
    check_healthy(good, 22);
    destroy_ep(bad);
    check_healthy(good, 33);
    EXPECT_EQ(1u, m_errors.size());
    EXPECT_EQ(0, log_counter::errors()) << log_counter::joined();
}

/* Packs 'fill' into 64 bytes and counts its calls */
struct counting_pack {
    int calls;
    uint8_t fill;

    static size_t pack(void *dest, void *arg)
    {
        counting_pack *self = static_cast<counting_pack *>(arg);

        self->calls++;
        memset(dest, self->fill, 64);
        return 64;
    }

    static void unpack(void *arg, const void *data, size_t length)
    {
        static_cast<counting_pack *>(arg)->calls++;
    }
};

/* Between the invalidation and its report, every kind of operation is taken
 * as a queue pair in error takes a WR: it returns what a posted one returns
 * (UCX's test_uct_peer_failure puts right after uct_ep_invalidate() and
 * expects UCS_OK), a bcopy's packer runs, nothing reaches the peer or the
 * user's buffers, and the completions, a flush's included, are called with
 * UCS_ERR_ENDPOINT_TIMEOUT by the progress that reports the failure; after
 * the report new operations fail at once. */
TEST_P(uct_dcx_invalidate, new_operations_taken_until_reported)
{
    uct_ep_h bad        = connect(m_a, m_b);
    uct_ep_h good       = connect(m_a, m_b);
    mem loc             = alloc_mem(8192);
    const uint64_t mark = 0x5a5a5a5a5a5a5a5aull;
    const uint64_t cmp  = 0x1111;
    uint64_t value = 0x77, fetched = mark, swapped = mark;
    test_comp am_z, put_z, get_b, get_z, fadd, cswap, flush_c;
    counting_pack packer = {0, 0xab}, unpacker = {0, 0};
    uint8_t *remote = static_cast<uint8_t *>(m_mem.ptr);
    std::vector<uint8_t> before(remote, remote + 8192);
    uint64_t hdr = 3;

    check_healthy(good, 11);
    before.assign(remote, remote + 8192);
    memset(loc.ptr, 0xcd, 8192);
    int rx = m_rx;

    ASSERT_EQ(UCS_OK, invalidate(bad));

    uct_iov_t put_iov = {loc.ptr, 256, loc.memh, 0, 1};
    uct_iov_t get_iov = {(char *)loc.ptr + 4096, 256, loc.memh, 0, 1};
    EXPECT_EQ(UCS_OK, uct_ep_am_short(bad, AM_ID, 1, &value, sizeof(value)));
    EXPECT_EQ(64, uct_ep_am_bcopy(bad, AM_ID, counting_pack::pack, &packer, 0));
    EXPECT_EQ(UCS_INPROGRESS, uct_ep_am_zcopy(bad, AM_ID, &hdr, sizeof(hdr),
                                              &put_iov, 1, 0, &am_z.uct));
    EXPECT_EQ(UCS_OK, uct_ep_put_short(bad, &value, sizeof(value),
                                       (uintptr_t)remote, m_mem.rkey));
    EXPECT_EQ(64, uct_ep_put_bcopy(bad, counting_pack::pack, &packer,
                                   (uintptr_t)remote + 64, m_mem.rkey));
    EXPECT_EQ(UCS_INPROGRESS,
              uct_ep_put_zcopy(bad, &put_iov, 1, (uintptr_t)remote + 256,
                               m_mem.rkey, &put_z.uct));
    EXPECT_EQ(UCS_INPROGRESS,
              uct_ep_get_bcopy(bad, counting_pack::unpack, &unpacker, 64,
                               (uintptr_t)remote, m_mem.rkey, &get_b.uct));
    EXPECT_EQ(UCS_INPROGRESS,
              uct_ep_get_zcopy(bad, &get_iov, 1, (uintptr_t)remote, m_mem.rkey,
                               &get_z.uct));
    EXPECT_EQ(UCS_OK,
              uct_ep_atomic64_post(bad, UCT_ATOMIC_OP_ADD, 5,
                                   (uintptr_t)remote + 1024, m_mem.rkey));
    EXPECT_EQ(UCS_INPROGRESS,
              uct_ep_atomic64_fetch(bad, UCT_ATOMIC_OP_ADD, 5, &fetched,
                                    (uintptr_t)remote + 1024, m_mem.rkey,
                                    &fadd.uct));
    EXPECT_EQ(UCS_INPROGRESS,
              uct_ep_atomic_cswap64(bad, cmp, 9, (uintptr_t)remote + 1032,
                                    m_mem.rkey, &swapped, &cswap.uct));
    EXPECT_EQ(UCS_INPROGRESS, uct_ep_flush(bad, 0, &flush_c.uct));
    EXPECT_EQ(2, packer.calls);
    EXPECT_TRUE(m_errors.empty());

    /* reported from progress: every completion failed, once */
    ASSERT_TRUE(wait_for([&] { return !errors_of(bad).empty(); }));
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, errors_of(bad)[0]);
    for (test_comp *c :
         {&am_z, &put_z, &get_b, &get_z, &fadd, &cswap, &flush_c}) {
        EXPECT_EQ(1, c->done);
        EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, c->status);
    }

    /* nothing reached the peer or the user's buffers */
    progress_some();
    EXPECT_EQ(rx, m_rx);
    EXPECT_EQ(0, memcmp(before.data(), remote, before.size()));
    EXPECT_EQ(0, unpacker.calls);
    EXPECT_EQ(mark, fetched);
    EXPECT_EQ(mark, swapped);
    for (size_t i = 4096; i < 4096 + 256; ++i) {
        ASSERT_EQ(0xcd, static_cast<uint8_t *>(loc.ptr)[i]) << i;
    }

    /* after the report: refused at once */
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET,
              uct_ep_put_short(bad, &value, sizeof(value), (uintptr_t)remote,
                               m_mem.rkey));
    EXPECT_EQ(1u, errors_of(bad).size());
    EXPECT_EQ(1u, m_errors.size());
    check_healthy(good, 22);
    EXPECT_EQ(0, log_counter::errors()) << log_counter::joined();
}

/* A completion whose callback issues the same operation again on its ep */
struct reposting_comp {
    uct_completion_t uct;
    uct_ep_h ep;
    uct_iov_t iov;
    uint64_t raddr;
    uct_rkey_t rkey;
    int calls;
    ucs_status_t status;   /* the completion's */
    ucs_status_t reposted; /* what the repost returned */

    static void callback(uct_completion_t *self)
    {
        reposting_comp *c = ucs_container_of(self, reposting_comp, uct);

        c->calls++;
        c->status    = self->status;
        c->uct.count = 1;
        c->reposted  = uct_ep_get_zcopy(c->ep, &c->iov, 1, c->raddr, c->rkey,
                                        &c->uct);
    }
};

/* After an operation taken without a completion (a put_short), neither the
 * endpoint's flush nor the interface's is done before the report: the
 * former completes with UCS_ERR_ENDPOINT_TIMEOUT, the latter answers
 * UCS_INPROGRESS until then.  A completion callback of the report that
 * posts on the endpoint is refused (it failed first), and is not called
 * again. */
TEST_P(uct_dcx_invalidate, flush_and_reposting_callback)
{
    uct_ep_h bad       = connect(m_a, m_b);
    uct_ep_h good      = connect(m_a, m_b);
    mem loc            = alloc_mem(4096);
    uint64_t value     = 5;
    test_comp &flush_c = m_put_comp;
    reposting_comp rc;

    check_healthy(good, 11);
    ASSERT_TRUE(wait_for([&] {
        return uct_iface_flush(m_a->iface, 0, NULL) == UCS_OK;
    }));

    ASSERT_EQ(UCS_OK, invalidate(bad));
    EXPECT_EQ(UCS_OK, uct_ep_put_short(bad, &value, sizeof(value),
                                       (uintptr_t)m_mem.ptr, m_mem.rkey));
    EXPECT_EQ(UCS_INPROGRESS, uct_iface_flush(m_a->iface, 0, NULL));
    EXPECT_EQ(UCS_INPROGRESS, uct_ep_flush(bad, 0, NULL));
    EXPECT_EQ(UCS_INPROGRESS, uct_ep_flush(bad, 0, &flush_c.uct));

    rc.uct.func   = reposting_comp::callback;
    rc.uct.count  = 1;
    rc.uct.status = UCS_OK;
    rc.ep         = bad;
    rc.iov        = {loc.ptr, 64, loc.memh, 0, 1};
    rc.raddr      = (uintptr_t)m_mem.ptr;
    rc.rkey       = m_mem.rkey;
    rc.calls      = 0;
    rc.status     = UCS_OK;
    rc.reposted   = UCS_OK;
    EXPECT_EQ(UCS_INPROGRESS,
              uct_ep_get_zcopy(bad, &rc.iov, 1, rc.raddr, rc.rkey, &rc.uct));

    ASSERT_TRUE(wait_for([&] { return !errors_of(bad).empty(); }));
    EXPECT_EQ(1, flush_c.done);
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, flush_c.status);
    EXPECT_EQ(1, rc.calls);
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, rc.status);
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, rc.reposted);
    ASSERT_TRUE(wait_for([&] {
        return uct_iface_flush(m_a->iface, 0, NULL) == UCS_OK;
    }));
    progress_some();
    EXPECT_EQ(1, rc.calls);
    EXPECT_EQ(1u, m_errors.size());
    check_healthy(good, 22);
    EXPECT_EQ(0, log_counter::errors()) << log_counter::joined();
}

TEST_P(uct_dcx_invalidate, destroyed_before_reported)
{
    uct_ep_h bad    = connect(m_a, m_b);
    uct_ep_h good   = connect(m_a, m_b);
    mem loc         = alloc_mem(4096);
    test_comp &comp = m_get_comp;

    uct_iov_t iov = {loc.ptr, 4096, loc.memh, 0, 1};
    ASSERT_EQ(UCS_INPROGRESS, retry([&] {
                  return uct_ep_get_zcopy(bad, &iov, 1, (uintptr_t)m_mem.ptr,
                                          m_mem.rkey, &comp.uct);
              }));
    ASSERT_EQ(UCS_OK, invalidate(bad));
    destroy_ep(bad);
    /* as any endpoint destroyed with operations outstanding */
    EXPECT_EQ(1, comp.done);
    EXPECT_EQ(UCS_ERR_CANCELED, comp.status);

    progress_some();
    EXPECT_TRUE(m_errors.empty());
    EXPECT_EQ(1, comp.done);
    check_healthy(good, 44);
    EXPECT_EQ(0, log_counter::errors()) << log_counter::joined();
}

TEST_P(uct_dcx_invalidate, idle_ep_reported_once)
{
    uct_ep_h bad  = connect(m_a, m_b);
    uct_ep_h good = connect(m_a, m_b);

    /* nothing was ever posted on bad (under dcs it holds no DCI) */
    ASSERT_EQ(UCS_OK, invalidate(bad));
    ASSERT_EQ(UCS_OK, invalidate(bad));
    ASSERT_TRUE(wait_for([&] { return !errors_of(bad).empty(); }));
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, errors_of(bad)[0]);

    /* a failed endpoint: invalidating it again reports nothing more */
    ASSERT_EQ(UCS_OK, invalidate(bad));
    progress_some();
    EXPECT_EQ(1u, m_errors.size());
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET,
              uct_ep_am_short(bad, AM_ID, 0, NULL, 0));
    check_healthy(good, 55);
    EXPECT_EQ(0, log_counter::errors()) << log_counter::joined();
}

TEST_P(uct_dcx_invalidate, unknown_flags_bad_flow)
{
    uct_ep_h ep = connect(m_a, m_b);
    ucs_status_t status;

#if DCX_UCX_HAVE_EP_INVALIDATE_PARAMS
    uct_ep_invalidate_params_t params;

    params.field_mask = UCS_BIT(0);
    status            = uct_ep_invalidate(ep, &params);
#else
    status = uct_ep_invalidate(ep, 1);
#endif
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, status);
    EXPECT_EQ(1, log_counter::errors()) << log_counter::joined();

    /* the endpoint was left as it was */
    check_healthy(ep, 66);
    progress_some();
    EXPECT_TRUE(m_errors.empty());
    log_counter::reset();
}

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_invalidate, UCT_DCX_POLICIES);
