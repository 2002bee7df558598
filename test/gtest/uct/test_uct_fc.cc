/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: flow control and endpoint lifetime, in one process.
 *  - a credit grant lost on the receiver's side: the sender asks again after
 *    FC_REQ_TIMEOUT and traffic resumes;
 *  - flush reports "in progress" while an endpoint waits for credits;
 *  - uct_ep_destroy completes every outstanding operation of the endpoint
 *    (cancelled) before it returns, and nothing of it completes later;
 *  - uct_ep_destroy never reads pending requests the user did not purge.
 * The peer-death cases of flow control (a grant to a dead peer, a peer that
 * dies before granting) are in test_uct_errors.cc, with a peer process.
 */
#include "uct_fixture.h"
#include "dcx_dci_stats.h"

#include <algorithm>
#include <cstring>
#include <cstdlib>

using namespace dcx_test;

namespace {

const uint8_t AM_ID        = 9;
const uint8_t AM_ID_CLOSED = 10; /* closed senders' AMs, counted apart */

/* An AM that waits in the pending queue */
struct am_req {
    uct_pending_req_t uct;
    uct_ep_h ep;
    int sent;
    int purged;

    static ucs_status_t cb(uct_pending_req_t *self)
    {
        am_req *r           = ucs_container_of(self, am_req, uct);
        ucs_status_t status = uct_ep_am_short(r->ep, AM_ID, 0, NULL, 0);

        if (status == UCS_OK) {
            r->sent++;
        }
        return status;
    }

    static void purge_cb(uct_pending_req_t *self, void *arg)
    {
        ucs_container_of(self, am_req, uct)->purged++;
    }
};

/* A completion that must fire exactly once, and never after 'closed' */
struct tracked_comp {
    uct_completion_t uct;
    int calls;
    int late_calls;
    bool closed;
    ucs_status_t status;

    tracked_comp() : calls(0), late_calls(0), closed(false), status(UCS_OK)
    {
        uct.func   = cb;
        uct.count  = 1;
        uct.status = UCS_OK;
    }

    static void cb(uct_completion_t *self)
    {
        tracked_comp *c = ucs_container_of(self, tracked_comp, uct);

        c->calls++;
        c->status = self->status;
        if (c->closed) {
            c->late_calls++;
        }
    }
};

struct unpack_ctx {
    int calls;
    bool closed;
    int late_calls;
};

void unpack_cb(void *arg, const void *data, size_t length)
{
    unpack_ctx *ctx = static_cast<unpack_ctx *>(arg);

    ctx->calls++;
    if (ctx->closed) {
        ctx->late_calls++;
    }
}

} /* namespace */


class uct_dcx_fc : public uct_dcx_pair_test {
protected:
    virtual void init_env(scoped_env &env)
    {
        uct_dcx_pair_test::init_env(env);
        env.set("UCX_DCX_FC_WND", "4");
    }

    virtual void SetUp()
    {
        std::map<std::string, std::string> cfg;

        uct_dcx_test::SetUp();
        cfg["FC_REQ_TIMEOUT"] = "20ms";
        setup_pair(AM_ID, cfg);
    }

    int m_rx_closed = 0; /* AMs of AM_ID_CLOSED received */

    /* Sends AMs on ep without progress until it is out of credits */
    int drain_credits(uct_ep_h ep)
    {
        int n = 0;

        while (uct_ep_am_short(ep, AM_ID, n, NULL, 0) == UCS_OK) {
            ++n;
            EXPECT_LT(n, 1000);
            if (n >= 1000) {
                break;
            }
        }
        return n;
    }

    /* Sends count AMs on ep, progressing as needed; false if stuck */
    bool send_all(uct_ep_h ep, int count)
    {
        int sent = 0;

        return wait_for([&] {
            while ((sent < count) &&
                   (uct_ep_am_short(ep, AM_ID, sent, NULL, 0) == UCS_OK)) {
                ++sent;
            }
            return sent == count;
        });
    }

    /* n AMs a -> b and back, one at a time on two new endpoints, both
     * flushed; then both interfaces' flow-control counters */
    void ping_pong(int n, dcx_fc_stats_t *sa, dcx_fc_stats_t *sb)
    {
        int rx_a    = 0;
        uct_ep_h ab = connect(m_a, m_b);
        uct_ep_h ba = connect(m_b, m_a);

        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_a->iface, AM_ID,
                                                   am_count_cb, &rx_a, 0));
        for (int i = 0; i < n; ++i) {
            ASSERT_EQ(UCS_OK, retry([&] {
                          return uct_ep_am_short(ab, AM_ID, i, NULL, 0);
                      }));
            ASSERT_TRUE(wait_for([&] { return m_rx == i + 1; }))
                << "ping " << i;
            ASSERT_EQ(UCS_OK, retry([&] {
                          return uct_ep_am_short(ba, AM_ID, i, NULL, 0);
                      }));
            ASSERT_TRUE(wait_for([&] { return rx_a == i + 1; }))
                << "pong " << i;
        }
        flush_ep(ab);
        flush_ep(ba);

        ASSERT_EQ(0, dcx_fc_iface_stats(m_a->iface, sa));
        ASSERT_EQ(0, dcx_fc_iface_stats(m_b->iface, sb));
    }
};

/* The grant answering a's request fails on b's control DCI (injected error
 * completion): a's request is sent again after FC_REQ_TIMEOUT and traffic
 * resumes.  Without the resend, a waits forever. */
TEST_P(uct_dcx_fc, lost_grant_resent)
{
    uct_ep_h ep = connect(m_a, m_b);
    int n;

    n = drain_credits(ep);
    ASSERT_GT(n, 0);

    /* the next send posted on the device is b's grant */
    ASSERT_EQ(0, inject_error_completion(DCX_WR_SEND, DCX_WC_REM_OP_ERR));

    /* only b progresses until the grant is out: a's timer cannot send its
     * request again (another send) before the fault hit the grant */
    for (int i = 0; (i < 100000) && (m_rx < n); ++i) {
        uct_worker_progress(m_b->worker);
    }
    EXPECT_EQ(n, m_rx);
    EXPECT_TRUE(send_all(ep, 50)) << "sender never got credits again";
    dcx_soft_fault_clear(device());
    EXPECT_TRUE(wait_for([&] { return m_rx == n + 50; }));
    flush_ep(ep);
    /* the grant failed with a peer-failure status, logged at the diagnostic
     * level; no endpoint of a failed */
    EXPECT_TRUE(m_errors.empty());
    log_counter::reset();
}

/* While a waits for a grant with a request pending, neither the interface
 * nor the endpoint is flushed; once b grants, both are. */
TEST_P(uct_dcx_fc, flush_in_progress_while_waiting_for_grant)
{
    uct_ep_h ep = connect(m_a, m_b);
    am_req req;
    ucs_status_t status;
    int n;

    n = drain_credits(ep);
    ASSERT_GT(n, 0);
    req.uct.func = am_req::cb;
    req.ep       = ep;
    req.sent     = 0;
    req.purged   = 0;
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(ep, &req.uct, 0));

    /* a's sends complete; b, not progressed, does not grant */
    for (int i = 0; i < 100; ++i) {
        uct_worker_progress(m_a->worker);
    }
    EXPECT_EQ(UCS_INPROGRESS, uct_iface_flush(m_a->iface, 0, NULL));
    EXPECT_EQ(UCS_INPROGRESS, uct_ep_flush(ep, 0, NULL));
    EXPECT_EQ(0, req.sent);

    /* b grants: the pending request goes, and everything flushes */
    EXPECT_TRUE(wait_for([&] { return req.sent == 1; }));
    EXPECT_TRUE(wait_for([&] {
        status = uct_iface_flush(m_a->iface, 0, NULL);
        return status == UCS_OK;
    }));
    EXPECT_EQ(UCS_OK, status);
    EXPECT_TRUE(wait_for([&] { return m_rx == n + 1; }));
    flush_ep(ep);
    EXPECT_EQ(0, req.purged);
}

/* Requests left in the pending queue at uct_ep_destroy (the user did not
 * purge them, and reused their memory): destroy does not read them. */
TEST_P(uct_dcx_fc, destroy_ignores_unpurged_pending_bad_flow)
{
    uct_ep_h ep     = connect(m_a, m_b);
    const int count = 3;
    am_req *reqs    = new am_req[count];

    drain_credits(ep);
    for (int i = 0; i < count; ++i) {
        reqs[i].uct.func = am_req::cb;
        reqs[i].ep       = ep;
        reqs[i].sent     = 0;
        reqs[i].purged   = 0;
        ASSERT_EQ(UCS_OK, uct_ep_pending_add(ep, &reqs[i].uct, 0));
    }
    /* the user's memory is reused for something else */
    memset(reqs, 0xa5, sizeof(*reqs) * count);

    log_counter::reset();
    destroy_ep(ep);
    EXPECT_EQ(1, log_counter::warnings()); /* "not asked to purge" */
    log_counter::reset();
    delete[] reqs;

    /* the interface goes on */
    uct_ep_h ep2 = connect(m_a, m_b);
    int before   = m_rx;
    EXPECT_TRUE(send_all(ep2, 20));
    EXPECT_TRUE(wait_for([&] { return m_rx >= before + 20; }));
    flush_ep(ep2);
}

/* Purge calls back every request once, in order, and leaves none */
TEST_P(uct_dcx_fc, purge_pending)
{
    uct_ep_h ep = connect(m_a, m_b);
    am_req reqs[3];

    drain_credits(ep);
    for (int i = 0; i < 3; ++i) {
        reqs[i].uct.func = am_req::cb;
        reqs[i].ep       = ep;
        reqs[i].sent     = 0;
        reqs[i].purged   = 0;
        ASSERT_EQ(UCS_OK, uct_ep_pending_add(ep, &reqs[i].uct, 0));
    }
    uct_ep_pending_purge(ep, am_req::purge_cb, NULL);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(1, reqs[i].purged);
    }
    uct_ep_pending_purge(ep, am_req::purge_cb, NULL);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(1, reqs[i].purged);
        EXPECT_EQ(0, reqs[i].sent);
    }
    EXPECT_TRUE(wait_for([&] { return m_rx > 0; }));
}

/* uct_ep_destroy with zcopy sends, a get into a bounce buffer, an atomic
 * fetch and a flush in flight, nothing progressed: every completion fires
 * (cancelled) before destroy returns, none afterwards, and nothing is
 * written to the user's result buffers later. */
TEST_P(uct_dcx_fc, destroy_completes_outstanding_ops)
{
    uct_ep_h ep  = connect(m_a, m_b);
    mem remote   = alloc_mem(65536);
    mem local    = alloc_mem(65536);
    const int nz = 4;
    tracked_comp zc[nz], get_comp, fetch_comp, flush_comp;
    unpack_ctx ctx   = {0, false, 0};
    uint64_t *result = new uint64_t(0x1111);
    ucs_status_t status;

    memset(local.ptr, 'z', local.length);
    for (int i = 0; i < nz; ++i) {
        uct_iov_t iov = {(char *)local.ptr + i * 8192, 8192, local.memh, 0, 1};
        if (i % 2) {
            status = uct_ep_put_zcopy(ep, &iov, 1,
                                      (uintptr_t)remote.ptr + i * 8192,
                                      remote.rkey, &zc[i].uct);
        } else {
            status = uct_ep_get_zcopy(ep, &iov, 1,
                                      (uintptr_t)remote.ptr + i * 8192,
                                      remote.rkey, &zc[i].uct);
        }
        ASSERT_EQ(UCS_INPROGRESS, status);
    }
    /* (a region of its own: a get_bcopy to one the device checked already
     * may be read within the call, DCX_CAP_POST_NOW, and not be in flight) */
    mem get_src = alloc_mem(4096);
    ASSERT_EQ(UCS_INPROGRESS,
              uct_ep_get_bcopy(ep, unpack_cb, &ctx, 64, (uintptr_t)get_src.ptr,
                               get_src.rkey, &get_comp.uct));
    ASSERT_EQ(UCS_INPROGRESS,
              uct_ep_atomic64_fetch(ep, UCT_ATOMIC_OP_ADD, 1, result,
                                    (uintptr_t)remote.ptr, remote.rkey,
                                    &fetch_comp.uct));
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_flush(ep, 0, &flush_comp.uct));

    destroy_ep(ep);

    for (int i = 0; i < nz; ++i) {
        EXPECT_EQ(1, zc[i].calls) << "zcopy " << i;
        EXPECT_EQ(UCS_ERR_CANCELED, zc[i].status);
        zc[i].closed = true;
    }
    EXPECT_EQ(1, get_comp.calls);
    EXPECT_EQ(1, fetch_comp.calls);
    EXPECT_EQ(1, flush_comp.calls);
    EXPECT_EQ(UCS_ERR_CANCELED, flush_comp.status);
    get_comp.closed = fetch_comp.closed = flush_comp.closed = true;
    ctx.closed                                              = true;
    *result                                                 = 0x2222;

    /* whatever the device still completes goes nowhere */
    for (int i = 0; i < 200; ++i) {
        progress();
    }
    flush_iface(m_a);
    for (int i = 0; i < nz; ++i) {
        EXPECT_EQ(0, zc[i].late_calls);
    }
    EXPECT_EQ(0, get_comp.late_calls + fetch_comp.late_calls +
                     flush_comp.late_calls);
    EXPECT_EQ(0, ctx.late_calls);
    EXPECT_EQ(0x2222u, *result);
    delete result;

    /* the pool still works */
    uct_ep_h ep2 = connect(m_a, m_b);
    EXPECT_TRUE(send_all(ep2, 10));
    flush_ep(ep2);
    EXPECT_TRUE(m_errors.empty());
}

/* A ping-pong of many more AMs than the window (FC_WND 4): both sides ask
 * for credits and grant them many times, every request and grant an
 * inline send from the stack (no send buffer), and nothing is lost. */
TEST_P(uct_dcx_fc, ping_pong_credits_inline)
{
    const int n = 64;
    dcx_fc_stats_t sa, sb;

    ASSERT_NO_FATAL_FAILURE(ping_pong(n, &sa, &sb));
    /* a window of 4 asks at every 3rd AM (see the test below): at least
     * n/4 requests and grants per side */
    EXPECT_GE(sa.reqs_sent, (uint64_t)(n / 4));
    EXPECT_GE(sb.reqs_sent, (uint64_t)(n / 4));
    EXPECT_GE(sa.grants_sent, (uint64_t)(n / 4));
    EXPECT_GE(sb.grants_sent, (uint64_t)(n / 4));
    EXPECT_EQ(0u, sa.bufs_sent) << "requests or grants through send buffers";
    EXPECT_EQ(0u, sb.bufs_sent) << "requests or grants through send buffers";
    EXPECT_EQ(-1, dcx_fc_iface_stats(NULL, &sa));
    EXPECT_TRUE(m_errors.empty());
}

/* The request goes out with a quarter of the window left and asks for the
 * other three quarters (FC_WND 4: at 1 credit left, for 3): a ping-pong of
 * n AMs per side sends about n/3 requests and grants per side, where
 * asking half-way (at 2 left, for 2) sent n/2. */
TEST_P(uct_dcx_fc, ping_pong_asks_with_a_quarter_left)
{
    const int n = 60;
    dcx_fc_stats_t sa, sb;

    ASSERT_NO_FATAL_FAILURE(ping_pong(n, &sa, &sb));
    /* the first after 3 AMs, then one per 3: n/3, give or take one */
    EXPECT_GE(sa.reqs_sent, (uint64_t)(n / 3 - 1));
    EXPECT_LE(sa.reqs_sent, (uint64_t)(n / 3 + 1));
    EXPECT_LE(sb.reqs_sent, (uint64_t)(n / 3 + 1));
    EXPECT_LE(sa.grants_sent, (uint64_t)(n / 3 + 1));
    EXPECT_LE(sb.grants_sent, (uint64_t)(n / 3 + 1));
    EXPECT_TRUE(m_errors.empty());
}

/* UCX's test_uct_ep.destroy_entity_after_send, in rounds: a new sender
 * interface connects to b (which lives on), every interface is flushed,
 * the sender sends zero-copy AMs until refused (its credit request goes
 * with the last quarter of its window) and is closed before b even saw
 * the request, with them in flight; in even rounds only once b posted
 * its grant, which may still be in flight then (a close with work in
 * flight may cancel the request itself, on a device that takes work from
 * queue memory asynchronously, as a NIC and the emulated ConnectX do: the
 * even rounds make sure grants to closed senders happen).  b then grants
 * each closed interface
 * credits it can no longer take: such a grant ends only at the
 * peer-failure timeout (made long here: TIMEOUT 10 s, 7 retries).  The
 * flush of every round must not wait for it: the whole test is bounded
 * far below one peer-failure timeout (with the flush waiting for grants
 * it hung in the second round). */
TEST_P(uct_dcx_fc, closed_senders_do_not_hold_flush)
{
    auto fc_grants = [](entity *e) {
        dcx_fc_stats_t st;

        EXPECT_EQ(0, dcx_fc_iface_stats(e->iface, &st));
        return st.grants_sent;
    };
    std::map<std::string, std::string> cfg;
    const int rounds = 8;
    dcx_fc_stats_t fc;

    cfg["FC_REQ_TIMEOUT"] = "20ms";
    cfg["TIMEOUT"]        = "10s";
    entity *b             = create_entity(cfg);
    ASSERT_TRUE(b != NULL);
    ASSERT_EQ(UCS_OK,
              uct_iface_set_am_handler(b->iface, AM_ID, am_count_cb, &m_rx, 0));
    /* the closed senders' AMs may arrive after their close (a device
     * executes what was posted to it): counted apart from the live one's */
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(b->iface, AM_ID_CLOSED,
                                               am_count_cb, &m_rx_closed, 0));
    /* as UCX's uct_test::flush: each pass progresses, then flushes */
    auto flush_all = [&]() {
        return wait_for(
            [&] {
                progress();
                for (size_t i = 0; i < m_entities.size(); ++i) {
                    if (uct_iface_flush(m_entities[i]->iface, 0, NULL) !=
                        UCS_OK) {
                        return false;
                    }
                }
                return true;
            },
            5.0);
    };

    for (int r = 0; r < rounds; ++r) {
        entity *s = create_entity(cfg);
        ASSERT_TRUE(s != NULL);
        uct_ep_h ep = connect(s, b);
        ASSERT_TRUE(flush_all()) << "round " << r << ": flush held";

        mem buf       = alloc_mem(4096);
        uct_iov_t iov = {buf.ptr, 4096, buf.memh, 0, 1};
        std::vector<test_comp> comps(64);
        size_t posted = 0;
        while (posted < comps.size()) {
            ucs_status_t status = uct_ep_am_zcopy(ep, AM_ID_CLOSED, NULL, 0,
                                                  &iov, 1, 0,
                                                  &comps[posted].uct);
            if (status == UCS_ERR_NO_RESOURCE) {
                break;
            }
            ASSERT_TRUE((status == UCS_OK) || (status == UCS_INPROGRESS))
                << ucs_status_string(status);
            ++posted;
        }
        ASSERT_GT(posted, 0u);
        ASSERT_LT(posted, comps.size()); /* stopped by the window */
        if ((r % 2) == 0) {
            uint64_t granted = fc_grants(b);

            ASSERT_TRUE(wait_for([&] { return fc_grants(b) > granted; }, 5.0))
                << "round " << r << ": b sent no grant";
        }
        destroy_ep(ep);
        free_mem(buf);
        m_mems.pop_back();
        uct_iface_close(s->iface);
        uct_worker_destroy(s->worker);
        m_entities.erase(std::find(m_entities.begin(), m_entities.end(), s));
        delete s;
    }
    ASSERT_TRUE(flush_all()) << "flush held after the last round";
    /* b did grant closed senders: at least in each even round */
    EXPECT_TRUE(wait_for(
        [&] {
            EXPECT_EQ(0, dcx_fc_iface_stats(b->iface, &fc));
            return fc.grants_sent >= (uint64_t)rounds / 2;
        },
        5.0))
        << fc.grants_sent << " grants";
    ASSERT_TRUE(flush_all()) << "flush held by the last grant";

    /* b still takes messages from a live sender, within its window */
    uct_ep_h ab = connect(m_a, b);
    int before  = m_rx;
    for (int i = 0; i < 2; ++i) {
        ASSERT_EQ(UCS_OK, retry([&] {
                      return uct_ep_am_short(ab, AM_ID, i, NULL, 0);
                  }));
    }
    EXPECT_TRUE(wait_for([&] { return m_rx == before + 2; }));
    flush_ep(ab);
    EXPECT_TRUE(m_errors.empty());
}

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_fc, UCT_DCX_POLICIES);
