/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: unsignalled sends (SIGNAL_PERIOD) under every policy.
 *
 * Most WRs request no completion; a signalled one reports those before it.
 * A lent DCI (dcs policies) whose last WRs went unsignalled reports them
 * with a signalled no-op when it has to go back to the pool: its owner
 * left, or another endpoint waits for a DCI (and while one waits, every WR
 * is signalled).  Flush covers the unsignalled WRs, and a failure fails
 * each of them once.  The pool is observed through dcx_dci_stats.h.
 */
#include "uct_dci_pool.h"

#include <cstring>

using namespace dcx_test;

namespace {

const uint8_t AM_ID = 9;

} // namespace

class uct_dcx_unsig : public uct_dci_pool_test<uct_dcx_pair_test> {
protected:
    /* a pair whose sender a has a pool of num_dci DCIs */
    void setup_dcis(const char *num_dci, const char *sig_period = NULL)
    {
        std::map<std::string, std::string> cfg;

        cfg["NUM_DCI"] = num_dci;
        if (sig_period != NULL) {
            cfg["SIGNAL_PERIOD"] = sig_period;
        }
        setup_pair(AM_ID, cfg);
    }

    /* n AMs from ep, all received by b (their sends are done at the
     * peer; locally they are reported only by a later signalled WR) */
    void send_ams(uct_ep_h ep, int n)
    {
        int before = m_rx;

        for (int i = 0; i < n; ++i) {
            ASSERT_EQ(UCS_OK, retry([&] {
                          return uct_ep_am_short(ep, m_am_id, i, NULL, 0);
                      }));
        }
        ASSERT_TRUE(wait_for([&] { return m_rx == before + n; }));
    }

    uint64_t slot(unsigned i) const
    {
        return ((volatile uint64_t *)m_mem.ptr)[i];
    }
};

/* The default period: 16 for lent DCIs, half the queue for shared ones
 * (the queue the device granted: the soft device grants the 128 WRs asked
 * for, a ConnectX more); SIGNAL_PERIOD=1 signals every WR */
TEST_P(uct_dcx_unsig, default_period)
{
    setup_dcis("2");
    entity *every = create_entity({{"SIGNAL_PERIOD", "1"}});
    ASSERT_TRUE(every != NULL);

    EXPECT_GE(stats(m_a).sq_len, 128u);
    EXPECT_EQ(lends() ? 16u : stats(m_a).sq_len / 2, stats(m_a).sig_period);
    EXPECT_EQ(1u, stats(every).sig_period);
}

/* Flush after unsignalled sends completes only once all of them are done:
 * each put's value is in place when the flush completion is called */
TEST_P(uct_dcx_unsig, flush_covers_unsignalled_sends)
{
    const unsigned n = 10;
    uct_ep_h ep;
    test_comp comp;

    setup_dcis("2");
    ep = connect(m_a, m_b);
    for (unsigned i = 0; i < n; ++i) {
        m_value = 100 + i;
        ASSERT_EQ(UCS_OK, retry([&] {
                      return uct_ep_put_short(ep, &m_value, sizeof(m_value),
                                              (uintptr_t)m_mem.ptr + i * 8,
                                              m_mem.rkey);
                  }));
    }

    ucs_status_t status = retry([&] { return uct_ep_flush(ep, 0, &comp.uct); });
    ASSERT_EQ(UCS_INPROGRESS, status);
    ASSERT_TRUE(wait_for([&] { return comp.done > 0; }));
    EXPECT_EQ(1, comp.done);
    EXPECT_EQ(UCS_OK, comp.status);
    for (unsigned i = 0; i < n; ++i) {
        EXPECT_EQ(100u + i, slot(i)) << "put " << i;
    }
    /* everything reported: a second flush is done at once */
    EXPECT_EQ(UCS_OK, uct_ep_flush(ep, 0, NULL));

    /* the same through an iface flush */
    for (unsigned i = 0; i < n; ++i) {
        m_value = 200 + i;
        ASSERT_EQ(UCS_OK, retry([&] {
                      return uct_ep_put_short(ep, &m_value, sizeof(m_value),
                                              (uintptr_t)m_mem.ptr + i * 8,
                                              m_mem.rkey);
                  }));
    }
    flush_iface(m_a);
    for (unsigned i = 0; i < n; ++i) {
        EXPECT_EQ(200u + i, slot(i)) << "put " << i;
    }
    EXPECT_EQ(UCS_OK, uct_ep_flush(ep, 0, NULL));
}

/* An ep destroyed after sends whose completions were not requested: its
 * DCI reports them with a no-op and goes back to the pool */
TEST_P(uct_dcx_unsig, destroyed_ep_gives_dci_back)
{
    if (!lends()) {
        GTEST_SKIP() << "rand DCIs are not lent";
    }
    setup_dcis("1");
    uct_ep_h e1 = connect(m_a, m_b);

    ASSERT_NO_FATAL_FAILURE(send_ams(e1, 5));
    ASSERT_EQ(0, dcx_dci_ep_index(e1));
    EXPECT_EQ(0u, stats(m_a).free);
    destroy_ep(e1);

    ASSERT_TRUE(wait_for([&] { return stats(m_a).free == 1; }))
        << "the DCI of the destroyed ep never came back";
    EXPECT_EQ(1u, stats(m_a).drains);

    uct_ep_h e2 = connect(m_a, m_b);
    m_value     = 42;
    ASSERT_EQ(UCS_OK, put(e2, m_mem.rkey, 42));
    flush_ep(e2);
    EXPECT_EQ(42u, slot(0));
}

/* The same with a signalled WR (a fetching atomic) still in flight before
 * the unsignalled ones when the ep goes: the no-op follows once that WR's
 * completion is seen */
TEST_P(uct_dcx_unsig, destroyed_ep_tail_behind_signalled_wr)
{
    uint64_t result = 0;
    test_comp comp;

    if (!lends()) {
        GTEST_SKIP() << "rand DCIs are not lent";
    }
    setup_dcis("1");
    uct_ep_h e1 = connect(m_a, m_b);

    /* nothing is progressed from the fetch to the destroy */
    ASSERT_EQ(UCS_INPROGRESS,
              uct_ep_atomic64_fetch(e1, UCT_ATOMIC_OP_ADD, 1, &result,
                                    (uintptr_t)m_mem.ptr, m_mem.rkey,
                                    &comp.uct));
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(UCS_OK, uct_ep_am_short(e1, m_am_id, i, NULL, 0));
    }
    destroy_ep(e1);
    EXPECT_EQ(1, comp.done); /* cancelled with the ep */
    EXPECT_EQ(0u, stats(m_a).drains);

    ASSERT_TRUE(wait_for([&] { return stats(m_a).free == 1; }))
        << "the DCI of the destroyed ep never came back";
    EXPECT_EQ(1u, stats(m_a).drains);
    ASSERT_TRUE(wait_for([&] { return m_rx == 3; }));
    EXPECT_EQ(1, comp.done);
}

/* An ep waits for the only DCI, held by an idle ep whose last sends were
 * unsignalled: the holder's DCI drains (a no-op), goes to the waiting ep,
 * and while the ep waits every WR is signalled */
TEST_P(uct_dcx_unsig, waiting_ep_gets_idle_unsignalled_dci)
{
    if (!lends()) {
        GTEST_SKIP() << "rand DCIs are not lent";
    }
    setup_dcis("1");
    uct_ep_h e1 = connect(m_a, m_b);
    uct_ep_h e2 = connect(m_a, m_b);

    ASSERT_NO_FATAL_FAILURE(send_ams(e1, 3));
    ASSERT_EQ(0, dcx_dci_ep_index(e1));

    uint64_t value  = 7;
    ucs_status_t st = uct_ep_put_short(e2, &value, sizeof(value),
                                       (uintptr_t)m_mem.ptr + 8, m_mem.rkey);
    if (spills()) {
        /* e2 sends on the shared DCI (index 2) meanwhile; the holder's DCI
         * drains all the same, and e2 has it for its next send once its
         * put on the shared DCI is done */
        ASSERT_EQ(UCS_OK, st);
        EXPECT_EQ(2, dcx_dci_ep_index(e2));
        dcx_dci_stats_t s = stats(m_a);
        EXPECT_EQ(0u, s.waiters);
        EXPECT_EQ(1u, s.sig_period);
        EXPECT_EQ(1u, s.drains);
        flush_ep(e2);
        EXPECT_EQ(7u, slot(1));
        value = 8;
        ASSERT_EQ(UCS_OK,
                  uct_ep_put_short(e2, &value, sizeof(value),
                                   (uintptr_t)m_mem.ptr + 8, m_mem.rkey));
        EXPECT_EQ(0, dcx_dci_ep_index(e2));
        flush_ep(e2);
        EXPECT_EQ(8u, slot(1));
        EXPECT_EQ(16u, stats(m_a).sig_period);
        ASSERT_NO_FATAL_FAILURE(check_healthy(e1));
        return;
    }
    ASSERT_EQ(UCS_ERR_NO_RESOURCE, st);
    dcx_dci_stats_t s = stats(m_a);
    EXPECT_EQ(1u, s.waiters);
    EXPECT_EQ(1u, s.sig_period);
    EXPECT_EQ(1u, s.drains);

    pending_put_req req;
    req.uct.func = pending_put_req::cb;
    req.ep       = e2;
    req.value    = 7;
    req.raddr    = (uintptr_t)m_mem.ptr + 8;
    req.rkey     = m_mem.rkey;
    req.done     = 0;
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(e2, &req.uct, 0));
    ASSERT_TRUE(wait_for([&] { return req.done == 1; }))
        << "the waiting ep never got the idle DCI";
    flush_ep(e2);
    EXPECT_EQ(7u, slot(1));

    s = stats(m_a);
    EXPECT_EQ(0u, s.waiters);
    EXPECT_EQ(16u, s.sig_period);
    EXPECT_EQ(-1, dcx_dci_ep_index(e1));
    EXPECT_EQ(0, dcx_dci_ep_index(e2));

    /* e1 gets through again */
    ASSERT_NO_FATAL_FAILURE(check_healthy(e1));
    flush_ep(e2);
}

/* Unsignalled bcopy sends hold their buffers until a later signalled WR
 * reports them: with only three buffers, a send refused for want of one
 * makes the DCIs report theirs, so that it goes through after progress
 * (under every policy, rand included), and all arrive */
TEST_P(uct_dcx_unsig, bcopy_buffers_come_back)
{
    std::map<std::string, std::string> cfg;
    const int n = 300;
    char payload[64];

    cfg["TX_QUEUE_LEN"] = "16";
    cfg["TX_MAX_BUFS"]  = "3";
    setup_pair(AM_ID, cfg);
    uct_ep_h ep = connect(m_a, m_b);

    memset(payload, 'b', sizeof(payload));
    for (int i = 0; i < n; ++i) {
        ssize_t len;
        do {
            len = uct_ep_am_bcopy(
                ep, m_am_id,
                [](void *dest, void *arg) -> size_t {
                    memcpy(dest, arg, 64);
                    return 64;
                },
                payload, 0);
            if (len == UCS_ERR_NO_RESOURCE) {
                progress();
            }
        } while (len == UCS_ERR_NO_RESOURCE);
        ASSERT_EQ(64, len) << "send " << i;
    }
    ASSERT_TRUE(wait_for([&] { return m_rx == n; }));
    flush_ep(ep);
}

/* The ep and the interface go away with unsignalled sends still
 * unreported (bcopy buffers among them): everything is released, nothing
 * is reported twice (ASan, and no warning of buffers not returned) */
TEST_P(uct_dcx_unsig, close_with_unsignalled_sends)
{
    char payload[16];

    setup_dcis("2");
    uct_ep_h ep = connect(m_a, m_b);

    memset(payload, 'c', sizeof(payload));
    for (int i = 0; i < 5; ++i) {
        ASSERT_EQ(16, uct_ep_am_bcopy(
                          ep, m_am_id,
                          [](void *dest, void *arg) -> size_t {
                              memcpy(dest, arg, 16);
                              return 16;
                          },
                          payload, 0));
        m_value = i;
        ASSERT_EQ(UCS_OK,
                  uct_ep_put_short(ep, &m_value, sizeof(m_value),
                                   (uintptr_t)m_mem.ptr + i * 8, m_mem.rkey));
    }
    ASSERT_TRUE(wait_for([&] { return m_rx == 5; }));
    /* the fixture destroys the ep, then the interfaces */
}

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_unsig, UCT_DCX_POLICIES);
