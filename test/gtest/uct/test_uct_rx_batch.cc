/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: receive buffers are reposted in batches.  A progress call
 * reposts once an eighth of the posted goal (at most 16, at least one) is
 * missing, so small messages received one per progress call cost one
 * repost call per batch, not one per message; what is missing stays below
 * a batch, and every message still arrives, with receive queues down to
 * two buffers.  Observed through dcx_dci_stats.h (dcx_rx_iface_stats).
 */
#include "uct_fixture.h"
#include "dcx_dci_stats.h"

#include <cstring>

using namespace dcx_test;

namespace {

const uint8_t AM_ID = 6;

} // namespace

class uct_dcx_rx_batch : public uct_dcx_policy_test {
protected:
    dcx_rx_stats_t rx_stats(entity *e)
    {
        dcx_rx_stats_t s;

        memset(&s, 0, sizeof(s));
        EXPECT_EQ(0, dcx_rx_iface_stats(e->iface, &s));
        return s;
    }

    /* n AMs from a to b, each received before the next is sent */
    void send_one_by_one(const std::map<std::string, std::string> &cfg, int n,
                         dcx_rx_stats_t *before, dcx_rx_stats_t *after)
    {
        entity *a = create_entity(cfg);
        entity *b = create_entity(cfg);
        int rx    = 0;

        ASSERT_TRUE((a != NULL) && (b != NULL));
        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(b->iface, AM_ID, am_count_cb,
                                                   &rx, 0));
        uct_ep_h ep = connect(a, b);
        *before     = rx_stats(b);
        for (int i = 0; i < n; ++i) {
            ASSERT_TRUE(wait_for([&] {
                return uct_ep_am_short(ep, AM_ID, i, NULL, 0) == UCS_OK;
            })) << "message "
                << i;
            ASSERT_TRUE(wait_for([&] { return rx == i + 1; }))
                << "message " << i;
            dcx_rx_stats_t s = rx_stats(b);
            /* after a progress call less than a batch is missing */
            ASSERT_LT(s.target - s.posted, s.batch) << "message " << i;
        }
        *after = rx_stats(b);
    }
};

TEST_P(uct_dcx_rx_batch, small_messages_reposted_in_batches)
{
    dcx_rx_stats_t before, after;

    send_one_by_one(std::map<std::string, std::string>(), 256, &before, &after);
    if (HasFatalFailure()) {
        return;
    }
    EXPECT_EQ(10u, after.batch)
        << "80 posted at first (FC_WND 64 and a quarter): an eighth";
    uint64_t reposted = after.reposted - before.reposted;
    uint64_t reposts  = after.reposts - before.reposts;
    /* every buffer used (messages and credit requests) was reposted, but
     * for less than a batch, in calls of a batch each */
    EXPECT_GE(reposted, 256u - after.batch);
    EXPECT_GT(reposts, 0u);
    EXPECT_LE(reposts * after.batch, reposted);
}

/* With a receive queue of two buffers a batch is one buffer: every message
 * still gets through */
TEST_P(uct_dcx_rx_batch, tiny_receive_queue)
{
    std::map<std::string, std::string> cfg;
    dcx_rx_stats_t before, after;

    cfg["RX_QUEUE_LEN"] = "2";
    cfg["FC_WND"]       = "2";
    send_one_by_one(cfg, 64, &before, &after);
    if (HasFatalFailure()) {
        return;
    }
    EXPECT_EQ(1u, after.batch);
    EXPECT_EQ(2u, after.target);
    EXPECT_GE(after.reposted - before.reposted, 64u);
}

/* A stream from one peer with the default settings: its credit window
 * (FC_WND 64) is what is posted at open, and its credit requests take
 * buffers too, so the posted goal must grow before the device's queue runs
 * dry (a poll that finds a whole batch of receives grows it).  The stream
 * needs no receiver-not-ready NAK, each of which costs the sender RNR_TIMER
 * (1 ms). */
TEST_P(uct_dcx_rx_batch, stream_grows_receive_queue_before_rnr)
{
    const int n = 20000;
    entity *a   = create_entity(std::map<std::string, std::string>());
    entity *b   = create_entity(std::map<std::string, std::string>());
    dcx_soft_stats_t before, after;
    unsigned spins = 0;
    int rx         = 0;

    ASSERT_TRUE((a != NULL) && (b != NULL));
    ASSERT_EQ(UCS_OK,
              uct_iface_set_am_handler(b->iface, AM_ID, am_count_cb, &rx, 0));
    uct_ep_h ep = connect(a, b);
    ASSERT_EQ(0, dcx_soft_stats(device(), &before));
    for (int i = 0; i < n; ++i) {
        while (uct_ep_am_short(ep, AM_ID, i, NULL, 0) == UCS_ERR_NO_RESOURCE) {
            /* out of credits or send slots: the receiver catches up */
            uct_worker_progress(a->worker);
            if ((++spins % 2) == 0) {
                uct_worker_progress(b->worker);
            }
        }
    }
    ASSERT_TRUE(wait_for([&] { return rx == n; }, 30));
    ASSERT_EQ(0, dcx_soft_stats(device(), &after));
    EXPECT_EQ(before.rnr_naks_sent, after.rnr_naks_sent)
        << "the receive queue ran dry under one peer's credit window";
    EXPECT_GT(rx_stats(b).target, 64u) << "the posted goal did not grow";
}

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_rx_batch, UCT_DCX_POLICIES);
