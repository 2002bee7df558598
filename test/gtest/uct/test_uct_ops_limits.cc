/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport through the UCT API at its limits: flow control under a
 * flood into a tiny receive queue, many endpoints over few DCIs, fairness
 * of the pending queue (under every DCI pool policy); bad configuration
 * values, a device with little inline space, hundreds of DCIs, malformed
 * addresses.
 */
#include "uct_ops_fixture.h"

#include <algorithm>

/* ---------------------------------------------------------------------------
 * Flow control and many endpoints over a small pool
 * ------------------------------------------------------------------------- */

class uct_dcx_flood : public uct_dcx_policy_test {
protected:
    virtual void TearDown()
    {
        uct_dcx_test::TearDown();
        EXPECT_EQ(0, log_counter::errors());
    }
};

/* One sender floods a receiver whose receive queue is tiny: every message
 * arrives, none needs a receiver-not-ready retry, nothing deadlocks. */
TEST_P(uct_dcx_flood, one_dci_tiny_rx_queue)
{
    std::map<std::string, std::string> cfg;
    const int n = 5000;
    dcx_soft_stats_t before, after;
    am_rx rx;

    cfg["NUM_DCI"]      = "1";
    cfg["RX_QUEUE_LEN"] = "16";
    cfg["FC_WND"]       = "8";
    cfg["TX_QUEUE_LEN"] = "16";
    entity *a           = create_entity(cfg);
    entity *b           = create_entity(cfg);
    ASSERT_TRUE(a && b);
    uct_ep_h ab = connect(a, b);
    connect(b, a);
    ASSERT_EQ(UCS_OK,
              uct_iface_set_am_handler(b->iface, AM_ID, am_rx::cb, &rx, 0));
    ASSERT_EQ(0, dcx_soft_stats(device(), &before));

    std::string payload(200, 'f');
    pack_arg arg   = {payload.data(), payload.size()};
    unsigned spins = 0;
    for (int i = 0; i < n; ++i) {
        ssize_t len;
        while ((len = uct_ep_am_bcopy(ab, AM_ID, pack_cb, &arg, 0)) ==
               UCS_ERR_NO_RESOURCE) {
            /* the receiver is slow: it progresses once in 7 times */
            uct_worker_progress(a->worker);
            if ((++spins % 7) == 0) {
                uct_worker_progress(b->worker);
            }
        }
        ASSERT_EQ((ssize_t)payload.size(), len);
    }
    ASSERT_TRUE(wait_for([&] { return rx.count == n; }, 30));
    flush_ep(ab);
    ASSERT_EQ(0, dcx_soft_stats(device(), &after));
    EXPECT_EQ(before.rnr_naks_sent, after.rnr_naks_sent)
        << "flow control let the receive queue overflow";
}

/* More endpoints than DCIs, all sending: each gets its turn. */
TEST_P(uct_dcx_flood, many_eps_few_dcis)
{
    std::map<std::string, std::string> cfg;
    const int num_eps = 12, per_ep = 300;
    std::vector<entity *> senders;
    std::vector<uct_ep_h> eps;
    std::vector<int> sent(num_eps, 0);
    am_rx rx;

    cfg["NUM_DCI"] = "2";
    cfg["QUOTA"]   = "4";
    entity *target = create_entity(cfg);
    ASSERT_TRUE(target != NULL);
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(target->iface, AM_ID, am_rx::cb,
                                               &rx, 0));
    entity *src = create_entity(cfg);
    for (int i = 0; i < num_eps; ++i) {
        eps.push_back(connect(src, target));
    }

    int total = 0;
    while (total < num_eps * per_ep) {
        for (int i = 0; i < num_eps; ++i) {
            if (sent[i] < per_ep) {
                ucs_status_t status = uct_ep_am_short(eps[i], AM_ID, i, NULL,
                                                      0);
                if (status == UCS_OK) {
                    sent[i]++;
                    total++;
                } else {
                    ASSERT_EQ(UCS_ERR_NO_RESOURCE, status);
                }
            }
        }
        progress();
    }
    ASSERT_TRUE(wait_for([&] { return rx.count == num_eps * per_ep; }, 30));
    for (int i = 0; i < num_eps; ++i) {
        flush_ep(eps[i]);
    }
}

/* Endpoints that queue their sends in the pending queue when refused: with
 * dcs_quota and rand every ep keeps moving while the others are busy (no
 * starvation); with dcs an ep may keep its DCI, but all finish. */
struct fair_req {
    uct_pending_req_t uct;
    uct_ep_h ep;
    int ep_index;
    std::vector<int> *done;
    std::vector<int> *progress_when_first_done;

    static ucs_status_t cb(uct_pending_req_t *self)
    {
        fair_req *r         = ucs_container_of(self, fair_req, uct);
        ucs_status_t status = uct_ep_am_short(r->ep, AM_ID, r->ep_index, NULL,
                                              0);
        if (status == UCS_OK) {
            (*r->done)[r->ep_index]++;
        }
        return status;
    }
};

TEST_P(uct_dcx_flood, pending_fairness)
{
    std::map<std::string, std::string> cfg;
    const int num_eps = 8, per_ep = 400;
    std::vector<uct_ep_h> eps;
    std::vector<int> done(num_eps, 0);
    std::vector<fair_req> reqs(num_eps * per_ep);
    am_rx rx;

    cfg["NUM_DCI"]      = "2";
    cfg["QUOTA"]        = "8";
    cfg["TX_QUEUE_LEN"] = "16";
    entity *target      = create_entity(cfg);
    entity *src         = create_entity(cfg);
    ASSERT_TRUE(target && src);
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(target->iface, AM_ID, am_rx::cb,
                                               &rx, 0));
    for (int i = 0; i < num_eps; ++i) {
        eps.push_back(connect(src, target));
    }

    /* everything goes through the pending queue, round robin */
    for (int k = 0; k < per_ep; ++k) {
        for (int i = 0; i < num_eps; ++i) {
            fair_req &r         = reqs[k * num_eps + i];
            r.uct.func          = fair_req::cb;
            r.ep                = eps[i];
            r.ep_index          = i;
            r.done              = &done;
            ucs_status_t status = uct_ep_pending_add(eps[i], &r.uct, 0);
            if (status == UCS_ERR_BUSY) {
                ASSERT_EQ(UCS_OK, fair_req::cb(&r.uct));
            } else {
                ASSERT_EQ(UCS_OK, status);
            }
        }
    }

    int min_when_first_done = -1;
    ASSERT_TRUE(wait_for(
        [&] {
            int total = 0, lo = per_ep;
            for (int i = 0; i < num_eps; ++i) {
                total += done[i];
                lo = std::min(lo, done[i]);
                if ((done[i] == per_ep) && (min_when_first_done < 0)) {
                    min_when_first_done = *std::min_element(done.begin(),
                                                            done.end());
                }
            }
            return total == num_eps * per_ep;
        },
        30));
    ASSERT_TRUE(wait_for([&] { return rx.count == num_eps * per_ep; }));
    if (GetParam() != "dcs") {
        /* when the fastest finished, the slowest had done a fair share */
        EXPECT_GE(min_when_first_done, per_ep / 4);
    }
    for (int i = 0; i < num_eps; ++i) {
        flush_ep(eps[i]);
    }
}

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_flood, UCT_DCX_POLICIES);


/* ---------------------------------------------------------------------------
 * Configuration and addresses
 * ------------------------------------------------------------------------- */

class uct_dcx_config : public uct_dcx_test {};

TEST_F(uct_dcx_config, bad_values_bad_flow)
{
    const char *bad[][2] = {{"NUM_DCI", "0"},     {"NUM_DCI", "5000"},
                            {"QUOTA", "0"},       {"RX_QUEUE_LEN", "1"},
                            {"SEG_SIZE", "16"},   {"FC_WND", "0"},
                            {"RETRY_COUNT", "9"}, {"RNR_RETRY_COUNT", "8"},
                            {"TX_QUEUE_LEN", "1"}};
    entity *e;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        std::map<std::string, std::string> cfg;
        cfg[bad[i][0]] = bad[i][1];
        log_counter::reset();
        EXPECT_NE(UCS_OK, try_create_entity(cfg, &e)) << bad[i][0];
        EXPECT_EQ(1, log_counter::errors()) << bad[i][0];
        EXPECT_TRUE(log_counter::contains(bad[i][0])) << bad[i][0];
    }
    std::map<std::string, std::string> cfg;
    cfg["DCI_POLICY"] = "nonsense";
    EXPECT_NE(UCS_OK, try_create_entity(cfg, &e));
    log_counter::reset();
}

/* A device with little inline space: no AM short is advertised (its
 * header does not fit), put short only as far as it fits, the rest works */
class uct_dcx_no_inline : public uct_dcx_test {
protected:
    virtual void init_env(scoped_env &env)
    {
        env.set("UCX_DCX_SOFT_MAX_INLINE", "4");
    }
};

TEST_F(uct_dcx_no_inline, no_short_ops)
{
    entity *a = create_entity();
    entity *b = create_entity();
    ASSERT_TRUE(a && b);
    if (a->attr.cap.put.max_short > 8) {
        GTEST_SKIP() << "the device keeps more inline space";
    }
    EXPECT_FALSE(a->attr.cap.flags & UCT_IFACE_FLAG_AM_SHORT);
    EXPECT_TRUE(a->attr.cap.flags & UCT_IFACE_FLAG_PUT_SHORT);
    EXPECT_EQ(0u, a->attr.cap.am.max_short);

    uct_ep_h ab = connect(a, b);
    am_rx rx;
    ASSERT_EQ(UCS_OK,
              uct_iface_set_am_handler(b->iface, AM_ID, am_rx::cb, &rx, 0));
    std::string payload(100, 'n');
    pack_arg arg = {payload.data(), payload.size()};
    ssize_t len;
    while ((len = uct_ep_am_bcopy(ab, AM_ID, pack_cb, &arg, 0)) ==
           UCS_ERR_NO_RESOURCE) {
        progress();
    }
    ASSERT_EQ((ssize_t)payload.size(), len);
    ASSERT_TRUE(wait_for([&] { return rx.count == 1; }));
    flush_ep(ab);

    log_counter::reset();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_ep_am_short(ab, AM_ID, 0, NULL, 0));
    EXPECT_EQ(1, log_counter::errors());
    log_counter::reset();
}

TEST_F(uct_dcx_config, hundreds_of_dcis)
{
    std::map<std::string, std::string> cfg;
    cfg["NUM_DCI"]      = "300";
    cfg["TX_QUEUE_LEN"] = "8";
    entity *a           = create_entity(cfg);
    entity *b           = create_entity();
    ASSERT_TRUE(a && b);
    std::vector<uct_ep_h> eps;
    am_rx rx;
    ASSERT_EQ(UCS_OK,
              uct_iface_set_am_handler(b->iface, AM_ID, am_rx::cb, &rx, 0));
    /* 280 eps each hold a DCI of their own (dcs_quota) at once */
    for (int i = 0; i < 280; ++i) {
        eps.push_back(connect(a, b));
        ASSERT_EQ(UCS_OK, uct_ep_am_short(eps.back(), AM_ID, i, NULL, 0));
    }
    ASSERT_TRUE(wait_for([&] { return rx.count == 280; }));
    EXPECT_EQ(0, log_counter::errors());
}

TEST_F(uct_dcx_config, malformed_address_bad_flow)
{
    entity *a = create_entity();
    entity *b = create_entity();
    ASSERT_TRUE(a && b);
    std::vector<char> iaddr = b->iface_addr, daddr = b->dev_addr;
    uct_ep_params_t params;
    uct_ep_h ep;

    EXPECT_TRUE(uct_iface_is_reachable(a->iface, (uct_device_addr_t *)&daddr[0],
                                       (uct_iface_addr_t *)&iaddr[0]));
    iaddr[0] ^= 0xff;
    EXPECT_FALSE(uct_iface_is_reachable(a->iface,
                                        (uct_device_addr_t *)&daddr[0],
                                        (uct_iface_addr_t *)&iaddr[0]));

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = a->iface;
    params.dev_addr   = (uct_device_addr_t *)&daddr[0];
    params.iface_addr = (uct_iface_addr_t *)&iaddr[0];
    log_counter::reset();
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, uct_ep_create(&params, &ep));
    EXPECT_EQ(1, log_counter::errors());

    iaddr = b->iface_addr;
    daddr[0] += 1; /* port length */
    EXPECT_FALSE(uct_iface_is_reachable(a->iface,
                                        (uct_device_addr_t *)&daddr[0],
                                        (uct_iface_addr_t *)&iaddr[0]));
    log_counter::reset();
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, uct_ep_create(&params, &ep));
    EXPECT_EQ(1, log_counter::errors());

    params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    log_counter::reset();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_ep_create(&params, &ep));
    EXPECT_EQ(1, log_counter::errors());
    log_counter::reset();
}
