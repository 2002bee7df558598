/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: DCIs are created when first needed, and the dcs policies'
 * pool shrinks back after DCI_IDLE_TIMEOUT.
 *
 * An interface opens with its control DCI only; a data DCI comes when an
 * endpoint needs one and none that exists is free or idle, so the pool
 * grows only as far as endpoints have work in flight at once (up to
 * NUM_DCI, at most 4095).  Under rand, the DCI an endpoint hashes onto is
 * created with the first endpoint on it.  Observed through
 * dcx_dci_stats.h.
 */
#include "uct_dci_pool.h"

#include <set>
#include <unistd.h>

using namespace dcx_test;

namespace {

const uint8_t AM_ID = 6;

} // namespace

class uct_dcx_dci_lazy : public uct_dci_pool_test<uct_dcx_policy_test> {
protected:
    /* extra: more of the sender's configuration */
    void setup(const char *num_dci, const char *idle_timeout = "inf",
               const std::map<std::string, std::string> &extra = {})
    {
        std::map<std::string, std::string> cfg = extra;

        cfg["NUM_DCI"]          = num_dci;
        cfg["DCI_IDLE_TIMEOUT"] = idle_timeout;

        m_a = create_entity(cfg);
        m_b = create_entity();
        ASSERT_TRUE((m_a != NULL) && (m_b != NULL));
        m_rx = 0;
        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_b->iface, AM_ID,
                                                   am_count_cb, &m_rx, 0));
    }

    /* n eps from a to b, each with one AM posted and none progressed */
    void send_from_new_eps(unsigned n, std::vector<uct_ep_h> &eps)
    {
        for (unsigned i = 0; i < n; ++i) {
            eps.push_back(connect(m_a, m_b));
            ASSERT_EQ(UCS_OK, uct_ep_am_short(eps.back(), AM_ID, i, NULL, 0));
        }
    }

    entity *m_a, *m_b;
    int m_rx;
};

/* Open creates no data DCI; one ep's sends create one */
TEST_P(uct_dcx_dci_lazy, open_creates_none)
{
    ASSERT_NO_FATAL_FAILURE(setup("32"));
    dcx_dci_stats_t s = stats(m_a);
    EXPECT_EQ(32u, s.num_dci);
    EXPECT_EQ(0u, s.created);
    EXPECT_EQ(0u, s.creates);
    EXPECT_EQ(32u, s.free);

    uct_ep_h ep = connect(m_a, m_b);
    for (int i = 0; i < 10; ++i) {
        ASSERT_EQ(UCS_OK, uct_ep_am_short(ep, AM_ID, i, NULL, 0));
        flush_ep(ep);
    }
    ASSERT_TRUE(wait_for([&] { return m_rx == 10; }));
    s = stats(m_a);
    EXPECT_EQ(1u, s.created);
    EXPECT_EQ(1u, s.creates);
    EXPECT_EQ(1u, s.high_water);
    EXPECT_EQ(0u, s.destroys);
    /* (rand: every DCI is shared, none is ever waited for) */
    EXPECT_EQ(lends() ? 31u : 32u, s.free);
}

/* Eps with work in flight at once each need a DCI of their own (dcs): the
 * pool grows to their number, not to NUM_DCI; eps that send one after
 * another share the DCIs that exist */
TEST_P(uct_dcx_dci_lazy, grows_to_concurrent_need)
{
    std::vector<uct_ep_h> eps;

    ASSERT_NO_FATAL_FAILURE(setup("16"));
    ASSERT_NO_FATAL_FAILURE(send_from_new_eps(5, eps));
    dcx_dci_stats_t s = stats(m_a);
    if (lends()) {
        EXPECT_EQ(5u, s.created);
    } else {
        std::set<int> used;
        for (uct_ep_h ep : eps) {
            used.insert(dcx_dci_ep_index(ep));
        }
        EXPECT_EQ(used.size(), s.created);
    }
    ASSERT_TRUE(wait_for([&] { return m_rx == 5; }));
    for (uct_ep_h ep : eps) {
        flush_ep(ep);
    }

    /* one at a time: nothing new is created */
    unsigned created = s.created;
    for (int i = 0; i < 20; ++i) {
        uct_ep_h ep = connect(m_a, m_b);
        ASSERT_EQ(UCS_OK, uct_ep_am_short(ep, AM_ID, i, NULL, 0));
        flush_ep(ep);
        if (!lends()) {
            created += (stats(m_a).created > created);
        }
    }
    ASSERT_TRUE(wait_for([&] { return m_rx == 25; }));
    s = stats(m_a);
    if (lends()) {
        EXPECT_EQ(5u, s.created);
        EXPECT_EQ(5u, s.high_water);
    }
    EXPECT_EQ(created, s.created);
    EXPECT_LE(s.created, 16u);
    EXPECT_EQ(0, log_counter::errors());
}

/* A large pool: none of its DCIs created at open; more eps
 * with work in flight than DCIs: the pool stops at NUM_DCI and the rest
 * wait (dcs) or share (rand), every message arrives.  The receiver takes
 * each message as it comes; the sender is not progressed, so its DCIs stay
 * taken, and the first ep that waits makes the 1024 busy DCIs drain at
 * once, each with a no-op behind its AM. */
TEST_P(uct_dcx_dci_lazy, pool_of_1024)
{
    std::vector<uct_ep_h> eps;
    const unsigned n = 1100;

    ASSERT_NO_FATAL_FAILURE(setup("1024"));
    EXPECT_EQ(0u, stats(m_a).created);
    for (unsigned i = 0; i < n; ++i) {
        eps.push_back(connect(m_a, m_b));
        ucs_status_t status = uct_ep_am_short(eps.back(), AM_ID, i, NULL, 0);
        uct_iface_progress(m_b->iface);
        if ((i < 1024) || spills()) {
            ASSERT_EQ(UCS_OK, status) << "ep " << i;
            if (i >= 1024) { /* hybrid: on the shared DCI, 1024 + 1 */
                EXPECT_EQ(1025, dcx_dci_ep_index(eps.back())) << "ep " << i;
            }
        } else if (lends()) {
            ASSERT_EQ(UCS_ERR_NO_RESOURCE, status) << "ep " << i;
        } else {
            ASSERT_EQ(UCS_OK, status) << "ep " << i;
        }
    }
    dcx_dci_stats_t s = stats(m_a);
    EXPECT_LE(s.created, 1024u);
    if (lends()) {
        EXPECT_EQ(1024u, s.created);
        EXPECT_EQ(0u, s.free);
    }
    if (spills()) {
        EXPECT_EQ(n - 1024u, s.shared_wrs);
        EXPECT_EQ(0u, s.refusals);
    }
    /* the eps refused send once their turn comes */
    int expect = (lends() && !spills()) ? 1024 : (int)n;
    ASSERT_TRUE(wait_for([&] { return m_rx == expect; }));
    for (unsigned i = 1024; lends() && !spills() && (i < n); ++i) {
        ASSERT_TRUE(wait_for([&] {
            return uct_ep_am_short(eps[i], AM_ID, i, NULL, 0) == UCS_OK;
        })) << "ep "
            << i;
    }
    ASSERT_TRUE(wait_for([&] { return m_rx == (int)n; }));
    EXPECT_EQ(0, log_counter::errors());
}

/* The no-ops that make DCIs report their unsignalled WRs take no receive
 * at the DCT they go to (the sender's own): 32 DCIs drain at once into a
 * DCT of 4 receives, with no RNR retry allowed, and no DCI fails. */
TEST_P(uct_dcx_dci_lazy, drain_takes_no_receive)
{
    std::vector<uct_ep_h> eps;
    const unsigned n = 32;

    ASSERT_NO_FATAL_FAILURE(setup("32", "inf",
                                  {{"RX_QUEUE_LEN", "4"},
                                   {"RNR_RETRY_COUNT", "0"}}));
    ASSERT_NO_FATAL_FAILURE(send_from_new_eps(n, eps));
    dcx_dci_stats_t s = stats(m_a);
    EXPECT_EQ(0u, s.drains);
    if (lends() && !spills()) {
        /* one ep more waits for a DCI: every busy DCI drains */
        uct_ep_h ep = connect(m_a, m_b);
        ASSERT_EQ(UCS_ERR_NO_RESOURCE, uct_ep_am_short(ep, AM_ID, n, NULL, 0));
        EXPECT_EQ(s.created, stats(m_a).drains);
        ASSERT_TRUE(wait_for([&] {
            return uct_ep_am_short(ep, AM_ID, n, NULL, 0) == UCS_OK;
        }));
        eps.push_back(ep);
    }
    /* the interface's flush posts a no-op on every DCI with an
     * unsignalled tail */
    flush_iface(m_a);
    ASSERT_TRUE(wait_for([&] { return m_rx == (int)eps.size(); }));
    /* (a no-op refused for want of a receive fails its DCI, which is
     * recovered: counted, not reported) */
    EXPECT_EQ(0u, stats(m_a).errors);
    EXPECT_TRUE(m_errors.empty());
    EXPECT_EQ(0, log_counter::errors());
}

/* dcs policies: DCIs unused for DCI_IDLE_TIMEOUT -- back in the pool, or
 * kept by an ep that stopped sending -- are destroyed by the pool's looks
 * (here: when a new ep asks for a DCI); the eps that had them kept get
 * one again when they send */
TEST_P(uct_dcx_dci_lazy, idle_dcis_destroyed)
{
    std::vector<uct_ep_h> eps;

    if (!lends()) {
        GTEST_SKIP() << "rand keeps every DCI it created";
    }
    /* a timeout far longer than the set-up of four eps takes even on a
     * loaded machine under ASan (with 20 ms, a look during the set-up made
     * the first DCIs look unused at e5's) */
    ASSERT_NO_FATAL_FAILURE(setup("8", "200ms"));
    ASSERT_NO_FATAL_FAILURE(send_from_new_eps(4, eps));
    ASSERT_TRUE(wait_for([&] { return m_rx == 4; }));
    for (uct_ep_h ep : eps) {
        flush_ep(ep);
    }
    EXPECT_EQ(4u, stats(m_a).created);

    /* The pool looks when an ep asks for a DCI: a new ep, e5, after
     * longer than the timeout.  This first look sees that the DCIs were
     * used since it last looked (at their creation): they stay, and e5
     * takes one back.  At the next look, longer than the timeout later,
     * those still unused go: all but the one e5 used. */
    usleep(250000);
    uct_ep_h e5 = connect(m_a, m_b);
    ASSERT_EQ(UCS_OK, uct_ep_am_short(e5, AM_ID, 4, NULL, 0));
    flush_ep(e5);
    EXPECT_EQ(4u, stats(m_a).created);
    EXPECT_EQ(0u, stats(m_a).destroys);
    usleep(250000);
    uct_ep_h e6 = connect(m_a, m_b);
    ASSERT_EQ(UCS_OK, uct_ep_am_short(e6, AM_ID, 5, NULL, 0));
    flush_ep(e6);
    dcx_dci_stats_t s = stats(m_a);
    EXPECT_EQ(1u, s.created);
    EXPECT_EQ(3u, s.destroys);
    EXPECT_EQ(4u, s.high_water);
    EXPECT_EQ(7u, s.free);
    EXPECT_EQ(-1, dcx_dci_ep_index(e5));
    EXPECT_GE(dcx_dci_ep_index(e6), 0);
    for (uct_ep_h ep : eps) {
        EXPECT_EQ(-1, dcx_dci_ep_index(ep));
    }

    /* the eps whose kept DCIs went send again on new ones */
    for (unsigned i = 0; i < 3; ++i) {
        ASSERT_EQ(UCS_OK, uct_ep_am_short(eps[i], AM_ID, i, NULL, 0));
    }
    for (uct_ep_h ep : eps) {
        flush_ep(ep);
    }
    ASSERT_TRUE(wait_for([&] { return m_rx == 9; }));
    s = stats(m_a);
    EXPECT_LE(s.created, 4u);
    EXPECT_GE(s.created, 1u);
    EXPECT_EQ(0, log_counter::errors());
}

/* With the default ("inf" here) nothing is destroyed however long idle */
TEST_P(uct_dcx_dci_lazy, no_timeout_keeps_dcis)
{
    std::vector<uct_ep_h> eps;

    ASSERT_NO_FATAL_FAILURE(setup("8"));
    ASSERT_NO_FATAL_FAILURE(send_from_new_eps(3, eps));
    ASSERT_TRUE(wait_for([&] { return m_rx == 3; }));
    for (uct_ep_h ep : eps) {
        flush_ep(ep);
    }
    unsigned created = stats(m_a).created;
    usleep(50000);
    ASSERT_EQ(UCS_OK, uct_ep_am_short(eps[0], AM_ID, 0, NULL, 0));
    flush_ep(eps[0]);
    EXPECT_EQ(created, stats(m_a).created);
    EXPECT_EQ(0u, stats(m_a).destroys);
}

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_dci_lazy, UCT_DCX_POLICIES);
