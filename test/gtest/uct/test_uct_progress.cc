/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: a progress call polls the receive and the send CQ in one
 * device call (dcx_cq_poll_pair).  What it returns is the number of
 * completions it handled from both CQs: receives delivered and sends
 * retired, each alone and both in one call; an idle interface returns 0
 * and still finds a message that arrives later.
 */
#include "uct_fixture.h"

using namespace dcx_test;

namespace {

const uint8_t AM_ID = 11;

} // namespace

class uct_dcx_progress : public uct_dcx_test {
protected:
    virtual void init_env(scoped_env &env)
    {
        /* every send signalled: one send completion per message (by
         * default most sends of a lent DCI are unsignalled, and a flush
         * adds a no-op to report them) */
        env.set("UCX_DCX_DCI_POLICY", "dcs");
        env.set("UCX_DCX_SIGNAL_PERIOD", "1");
    }

    virtual void SetUp()
    {
        uct_dcx_test::SetUp();
        m_a = create_entity();
        m_b = create_entity();
        ASSERT_TRUE(m_a && m_b);
        m_rx_a = m_rx_b = 0;
        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_a->iface, AM_ID,
                                                   am_count_cb, &m_rx_a, 0));
        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_b->iface, AM_ID,
                                                   am_count_cb, &m_rx_b, 0));
        m_ab = connect(m_a, m_b);
        m_ba = connect(m_b, m_a);
    }

    /* Progresses e alone until cond(); returns the sum of what its
     * progress calls returned, or -1 if cond() never came */
    template <typename F> int progress_until(entity *e, F cond)
    {
        unsigned total = 0;

        if (!wait_for_iface(e, cond, &total)) {
            return -1;
        }
        return (int)total;
    }

    template <typename F>
    bool wait_for_iface(entity *e, F cond, unsigned *total)
    {
        for (int i = 0; i < 10000000; ++i) {
            if (cond()) {
                return true;
            }
            *total += uct_iface_progress(e->iface);
        }
        return cond();
    }

    /* nothing of ep is in flight (its flush is done at once) */
    static bool flushed(uct_ep_h ep)
    {
        return uct_ep_flush(ep, 0, NULL) == UCS_OK;
    }

    entity *m_a, *m_b;
    uct_ep_h m_ab, m_ba;
    int m_rx_a, m_rx_b;
};

TEST_F(uct_dcx_progress, idle_progress_returns_nothing)
{
    for (int i = 0; i < 1000; ++i) {
        ASSERT_EQ(0u, uct_iface_progress(m_a->iface)) << "call " << i;
    }
    /* a message sent after many idle calls is still found */
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ba, AM_ID, 1, NULL, 0));
    EXPECT_EQ(1, progress_until(m_a, [&] { return m_rx_a == 1; }));
    EXPECT_GE(progress_until(m_b, [&] { return flushed(m_ba); }), 1);
}

/* A send completion alone, a receive alone, then both found by the same
 * progress calls: every completion of both CQs is counted once */
TEST_F(uct_dcx_progress, counts_receives_and_send_completions)
{
    /* a's send: b receives it, then a retires it */
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ab, AM_ID, 1, NULL, 0));
    ASSERT_EQ(1, progress_until(m_b, [&] { return m_rx_b == 1; }));
    EXPECT_EQ(1, progress_until(m_a, [&] { return flushed(m_ab); }));

    /* b's send: a receives it */
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ba, AM_ID, 2, NULL, 0));
    EXPECT_EQ(1, progress_until(m_a, [&] { return m_rx_a == 1; }));
    EXPECT_EQ(1, progress_until(m_b, [&] { return flushed(m_ba); }));

    /* both ways at once: a receives b's message and retires its own */
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ab, AM_ID, 3, NULL, 0));
    ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ba, AM_ID, 4, NULL, 0));
    ASSERT_GE(progress_until(m_b, [&] { return m_rx_b == 2; }), 1);
    EXPECT_EQ(2, progress_until(m_a, [&] {
                  return (m_rx_a == 2) && flushed(m_ab);
              }));
    EXPECT_GE(progress_until(m_b, [&] { return flushed(m_ba); }), 0);
}
