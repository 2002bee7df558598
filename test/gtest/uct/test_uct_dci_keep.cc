/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: an endpoint keeps its DCI across back-to-back sends.
 *
 * Under the dcs policies an endpoint takes a DCI from the pool when it needs
 * one and, once everything it posted completed, keeps it for its next sends
 * while no other endpoint needs one; a kept idle DCI is taken back the
 * moment another endpoint does, and a DCI drains straight back to the pool
 * while endpoints wait.  Under rand the DCI of an endpoint is fixed.  The
 * pool is observed through dcx_dci_stats.h.
 */
#include "uct_dci_pool.h"

#include <cstring>

using namespace dcx_test;

namespace {

const uint8_t AM_ID = 5;

} // namespace

class uct_dcx_dci_keep : public uct_dci_pool_test<uct_dcx_policy_test> {
protected:
    void setup(const std::map<std::string, std::string> &cfg =
                   std::map<std::string, std::string>())
    {
        m_a = create_entity(cfg);
        m_b = create_entity(cfg);
        ASSERT_TRUE((m_a != NULL) && (m_b != NULL));
        m_rx = 0;
        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_b->iface, AM_ID,
                                                   am_count_cb, &m_rx, 0));
        m_mem = alloc_mem(4096);
    }

    /* setup() with a pool of num_dci DCIs, and two eps from a to b */
    void setup_two_eps(const char *num_dci, uct_ep_h *e1, uct_ep_h *e2)
    {
        std::map<std::string, std::string> cfg;

        cfg["NUM_DCI"] = num_dci;
        setup(cfg);
        if (!HasFatalFailure()) {
            *e1 = connect(m_a, m_b);
            *e2 = connect(m_a, m_b);
        }
    }

    ucs_status_t put(uct_ep_h ep, uint64_t value, unsigned slot = 0)
    {
        return uct_ep_put_short(ep, &value, sizeof(value),
                                (uintptr_t)m_mem.ptr + slot * 8, m_mem.rkey);
    }

    /* a put, then a flush of ep */
    void put_flushed(uct_ep_h ep, uint64_t value, unsigned slot = 0)
    {
        ASSERT_EQ(UCS_OK, put(ep, value, slot));
        flush_ep(ep);
    }

    uint64_t slot(unsigned i) const
    {
        return ((volatile uint64_t *)m_mem.ptr)[i];
    }

    entity *m_a, *m_b;
    int m_rx;
    mem m_mem;
};

/* Sends each completed before the next: the ep takes a DCI once and keeps
 * it, with nothing given back in between (before, every send took a DCI
 * and every completion gave it back) */
TEST_P(uct_dcx_dci_keep, back_to_back_sends_use_one_dci)
{
    setup();
    uct_ep_h ep = connect(m_a, m_b);
    int first   = -1;

    for (int i = 0; i < 64; ++i) {
        if (i % 2) {
            ASSERT_EQ(UCS_OK, uct_ep_am_short(ep, AM_ID, i, NULL, 0));
            ASSERT_TRUE(wait_for([&] { return m_rx == (i + 1) / 2; }));
        } else {
            ASSERT_EQ(UCS_OK, put(ep, i));
        }
        flush_ep(ep);
        int idx = dcx_dci_ep_index(ep);
        ASSERT_GE(idx, 0) << "send " << i;
        if (first < 0) {
            first = idx;
        }
        EXPECT_EQ(first, idx) << "send " << i;
    }
    EXPECT_EQ(62u, slot(0));

    dcx_dci_stats_t s = stats(m_a);
    EXPECT_EQ(0u, s.releases);
    EXPECT_EQ(0u, s.take_backs);
    EXPECT_EQ(0u, s.refusals);
    if (lends()) {
        EXPECT_EQ(1u, s.gets);
        EXPECT_EQ(1u, s.kept);
        EXPECT_EQ(s.num_dci - 1, s.free);
    } else {
        EXPECT_EQ(0u, s.gets);
        EXPECT_EQ(0u, s.kept);
    }
}

/* A kept idle DCI goes to the next ep that needs one when the pool is
 * empty: keeping never makes another ep wait */
TEST_P(uct_dcx_dci_keep, idle_kept_dci_taken_back)
{
    uct_ep_h e1, e2;

    ASSERT_NO_FATAL_FAILURE(setup_two_eps("1", &e1, &e2));
    ASSERT_NO_FATAL_FAILURE(put_flushed(e1, 1, 0));
    EXPECT_EQ(0, dcx_dci_ep_index(e1));

    /* e2 gets the DCI at once, without a progress call in between */
    ASSERT_EQ(UCS_OK, put(e2, 2, 1));
    EXPECT_EQ(0, dcx_dci_ep_index(e2));
    flush_ep(e2);
    ASSERT_NO_FATAL_FAILURE(put_flushed(e1, 3, 2));
    EXPECT_EQ(1u, slot(0));
    EXPECT_EQ(2u, slot(1));
    EXPECT_EQ(3u, slot(2));

    dcx_dci_stats_t s = stats(m_a);
    if (lends()) {
        EXPECT_EQ(-1, dcx_dci_ep_index(e2));
        EXPECT_EQ(0, dcx_dci_ep_index(e1));
        EXPECT_EQ(1u, s.gets);
        EXPECT_EQ(2u, s.take_backs);
        EXPECT_EQ(0u, s.releases);
        EXPECT_EQ(0u, s.refusals);
        EXPECT_EQ(1u, s.kept);
    } else {
        EXPECT_EQ(0, dcx_dci_ep_index(e2));
        EXPECT_EQ(0u, s.take_backs);
    }
}

/* An ep with work in flight while another waits for a DCI: when its work
 * completes the DCI goes back to the pool (it is not kept), and the waiting
 * ep's pending request gets it */
TEST_P(uct_dcx_dci_keep, busy_dci_goes_to_waiting_ep)
{
    uct_ep_h e1, e2;

    ASSERT_NO_FATAL_FAILURE(setup_two_eps("1", &e1, &e2));
    /* nothing is polled in between: e1's put stays in flight */
    ASSERT_EQ(UCS_OK, put(e1, 1, 0));
    ucs_status_t status = put(e2, 2, 1);
    if (!lends()) {
        EXPECT_EQ(UCS_OK, status); /* one shared DCI */
        flush_ep(e2);
        EXPECT_EQ(2u, slot(1));
        return;
    }
    if (spills()) {
        /* e2 sends on the shared DCI; once that is done, the DCI e1 gave
         * back (drained while e2 was on the shared one) is e2's */
        EXPECT_EQ(UCS_OK, status);
        EXPECT_EQ(2, dcx_dci_ep_index(e2));
        EXPECT_EQ(0u, stats(m_a).waiters);
        EXPECT_EQ(1u, stats(m_a).shared_wrs);
        flush_ep(e2);
        EXPECT_EQ(2u, slot(1));
        ASSERT_EQ(UCS_OK, put(e2, 3, 1));
        EXPECT_EQ(0, dcx_dci_ep_index(e2));
        flush_ep(e2);
        EXPECT_EQ(3u, slot(1));
        EXPECT_EQ(0u, stats(m_a).refusals);
        return;
    }
    ASSERT_EQ(UCS_ERR_NO_RESOURCE, status);
    EXPECT_EQ(1u, stats(m_a).waiters);

    pending_put_req req;
    req.uct.func = pending_put_req::cb;
    req.ep       = e2;
    req.value    = 2;
    req.raddr    = (uintptr_t)m_mem.ptr + 8;
    req.rkey     = m_mem.rkey;
    req.done     = 0;
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(e2, &req.uct, 0));
    ASSERT_TRUE(wait_for([&] { return req.done == 1; }));
    flush_ep(e2);
    EXPECT_EQ(1u, slot(0));
    EXPECT_EQ(2u, slot(1));

    dcx_dci_stats_t s = stats(m_a);
    EXPECT_EQ(-1, dcx_dci_ep_index(e1));
    EXPECT_EQ(0, dcx_dci_ep_index(e2));
    EXPECT_EQ(1u, s.releases);
    EXPECT_EQ(2u, s.gets);
    EXPECT_EQ(0u, s.take_backs);
    EXPECT_EQ(0u, s.waiters);
}

/* More eps than DCIs, each sending in turn with its sends completed in
 * between: every ep keeps getting through, DCIs move between them, and
 * the pool is whole once the eps are gone */
TEST_P(uct_dcx_dci_keep, many_eps_small_pool_no_starvation)
{
    std::map<std::string, std::string> cfg;
    const int num_eps = 6, rounds = 20;
    std::vector<uct_ep_h> eps;

    cfg["NUM_DCI"] = "2";
    cfg["QUOTA"]   = "2";
    setup(cfg);
    for (int i = 0; i < num_eps; ++i) {
        eps.push_back(connect(m_a, m_b));
    }

    for (int r = 0; r < rounds; ++r) {
        for (int i = 0; i < num_eps; ++i) {
            ASSERT_TRUE(wait_for(
                [&] { return put(eps[i], r * 100 + i, i) == UCS_OK; }, 5))
                << "ep " << i << " round " << r << " never got a DCI";
            ASSERT_TRUE(wait_for(
                [&] {
                    return uct_ep_am_short(eps[i], AM_ID, 0, NULL, 0) == UCS_OK;
                },
                5))
                << "ep " << i << " round " << r << ": AM refused";
        }
        for (int i = 0; i < num_eps; ++i) {
            flush_ep(eps[i]);
            EXPECT_EQ((uint64_t)(r * 100 + i), slot(i));
        }
    }
    ASSERT_TRUE(wait_for([&] { return m_rx == num_eps * rounds; }));

    for (int i = 0; i < num_eps; ++i) {
        destroy_ep(eps[i]);
    }
    ASSERT_TRUE(wait_for([&] { return stats(m_a).free == 2; }));
    dcx_dci_stats_t s = stats(m_a);
    EXPECT_EQ(0u, s.kept);
    EXPECT_EQ(0u, s.waiters);
    if (spills()) {
        /* while eps were on the shared DCI, drained DCIs went back to the
         * pool (nothing kept to take back), and nobody waited */
        EXPECT_GT(s.shared_wrs, 0u);
        EXPECT_EQ(0u, s.refusals);
    } else if (lends()) {
        EXPECT_GT(s.take_backs, 0u);
    }
}

/* Flush, fence and destroy of an ep that holds a DCI: with nothing in
 * flight the flush is done at once (a put on the DCI it keeps may be done
 * within the call, so an AM puts something in flight); destroying the ep,
 * idle or not, gives the DCI back */
TEST_P(uct_dcx_dci_keep, flush_and_destroy_of_ep_holding_dci)
{
    test_comp comp;
    uct_ep_h e1, e2;

    ASSERT_NO_FATAL_FAILURE(setup_two_eps("2", &e1, &e2));
    ASSERT_NO_FATAL_FAILURE(put_flushed(e1, 1, 0));
    ASSERT_GE(dcx_dci_ep_index(e1), 0);
    EXPECT_EQ(UCS_OK, uct_ep_flush(e1, 0, &comp.uct));
    EXPECT_EQ(UCS_OK, uct_ep_flush(e1, 0, NULL));
    EXPECT_EQ(UCS_OK, uct_ep_fence(e1, 0));
    ASSERT_EQ(UCS_OK, put(e1, 2, 0));
    ASSERT_EQ(UCS_OK, uct_ep_am_short(e1, AM_ID, 0, NULL, 0));
    EXPECT_EQ(UCS_INPROGRESS, uct_ep_flush(e1, 0, &comp.uct));
    ASSERT_TRUE(wait_for([&] { return comp.done == 1; }));
    EXPECT_EQ(UCS_OK, comp.status);
    EXPECT_EQ(2u, slot(0));
    EXPECT_TRUE(wait_for([&] { return m_rx == 1; }));
    EXPECT_EQ(UCS_OK, uct_ep_flush(e1, 0, NULL));

    /* e2 destroyed with a put in flight (nothing polled since) */
    ASSERT_EQ(UCS_OK, put(e2, 3, 1));
    destroy_ep(e2);
    /* e1 destroyed while it keeps its DCI idle */
    destroy_ep(e1);
    ASSERT_TRUE(wait_for([&] { return stats(m_a).free == 2; }));
    dcx_dci_stats_t s = stats(m_a);
    EXPECT_EQ(0u, s.kept);

    /* the DCIs work for a new ep */
    uct_ep_h e3 = connect(m_a, m_b);
    ASSERT_NO_FATAL_FAILURE(put_flushed(e3, 4, 2));
    EXPECT_EQ(4u, slot(2));
}

/* A failure on a kept DCI: the ep reaches the error handler, the DCI is
 * recovered and goes back to the pool, and other eps use it */
TEST_P(uct_dcx_dci_keep, failure_on_kept_dci)
{
    ucs_status_t status;
    uct_ep_h bad, good;

    ASSERT_NO_FATAL_FAILURE(setup_two_eps("1", &bad, &good));
    ASSERT_NO_FATAL_FAILURE(put_flushed(bad, 1, 0));
    ASSERT_EQ(0, dcx_dci_ep_index(bad));

    ASSERT_EQ(0, inject_error_completion(DCX_WR_RDMA_WRITE, DCX_WC_REM_OP_ERR));
    ASSERT_EQ(UCS_OK, put(bad, 2, 0));
    ASSERT_TRUE(wait_for([&] {
        for (size_t i = 0; i < m_errors.size(); ++i) {
            if (m_errors[i].ep == bad) {
                status = m_errors[i].status;
                return true;
            }
        }
        return false;
    }));
    dcx_soft_fault_clear(device());
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, status);
    EXPECT_EQ(-1, dcx_dci_ep_index(bad));
    EXPECT_NE(UCS_OK, put(bad, 3, 0));

    dcx_dci_stats_t s = stats(m_a);
    EXPECT_EQ(0u, s.kept);
    EXPECT_EQ(1u, s.free);

    ASSERT_NO_FATAL_FAILURE(put_flushed(good, 4, 1));
    EXPECT_EQ(4u, slot(1));
    EXPECT_EQ(1u, slot(0));
    log_counter::reset();
}

/* An ep without a DCI queues a flush: the dispatcher takes a DCI for it
 * (here: back from the ep that kept it), the flush, which posts nothing,
 * completes, and the other ep gets the DCI again at once */
TEST_P(uct_dcx_dci_keep, pending_flush_on_ep_without_dci)
{
    uct_ep_h e1, e2;

    if (!lends()) {
        GTEST_SKIP() << "under rand an ep always has its DCI";
    }
    ASSERT_NO_FATAL_FAILURE(setup_two_eps("1", &e1, &e2));
    ASSERT_NO_FATAL_FAILURE(put_flushed(e1, 1, 0));
    ASSERT_NO_FATAL_FAILURE(put_flushed(e2, 2, 1));
    ASSERT_EQ(-1, dcx_dci_ep_index(e1));

    flush_req req;
    req.ep = e1;
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(e1, &req.uct, 0));
    ASSERT_TRUE(wait_for([&] { return req.done(); }));
    EXPECT_EQ(0, dcx_dci_ep_index(e1));

    ASSERT_NO_FATAL_FAILURE(put_flushed(e2, 3, 1));
    EXPECT_EQ(3u, slot(1));
    EXPECT_EQ(-1, dcx_dci_ep_index(e1));
    EXPECT_EQ(0u, stats(m_a).waiters);
}

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_dci_keep, UCT_DCX_POLICIES);
