/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hybrid DCI policy (src/uct/dcx/dcx_dci_hybrid.c): what it does that
 * the other policies do not.  (Every policy-iterating suite runs under it
 * as well: UCT_DCX_POLICIES.)
 *
 * - With a pool of 1 or 2 DCIs and many endpoints, every send goes through
 *   at once: the endpoints the pool cannot serve send on the shared DCI
 *   (its counter grows), none is refused or told to wait.
 * - Endpoints move between the shared DCI and DCIs of their own while
 *   sending sequence-checked active messages: every message arrives, in
 *   the order each endpoint sent it.
 * - A peer process killed while its endpoints' work is on the shared DCI,
 *   together with other endpoints' work to live peers: exactly the dead
 *   peer's endpoints fail, once each; the live endpoints' messages on the
 *   shared DCI all arrive, in order.
 * - A device that refuses the shared DCI: endpoints wait for the pool's
 *   DCIs as under dcs_quota, with one error line.
 */
#include "uct_fixture.h"
#include "dcx_dci_stats.h"
#include "seq_am.h"

#include <sys/time.h>

#include <algorithm>
#include <cstring>

using namespace dcx_test;

namespace {

const uint8_t AM_ID    = 13; /* the peer process (uct_dcx_scale_peer) too */
const double limit_sec = 30; /* no wait is longer (a hang fails) */

} /* namespace */


class uct_dcx_hybrid : public uct_dcx_test {
protected:
    virtual void init_env(scoped_env &env)
    {
        env.set("UCX_DCX_DCI_POLICY", "hybrid");
        env.set("UCX_DCX_TIMEOUT", "131ms");
        env.set("UCX_DCX_RETRY_COUNT", "2");
    }

    virtual void TearDown()
    {
        kill_peer(m_peer);
        uct_dcx_test::TearDown();
    }

    dcx_dci_stats_t stats(entity *e)
    {
        dcx_dci_stats_t s;

        memset(&s, 0, sizeof(s));
        EXPECT_EQ(0, dcx_dci_iface_stats(e->iface, &s));
        return s;
    }

    /* One message of ep number idx, retried while refused; false if the
     * ep failed */
    bool send(uct_ep_h ep, uint32_t idx, uint64_t seq, size_t len)
    {
        seq_arg arg  = {idx, seq, len};
        double start = now_sec();
        ssize_t ret;

        while ((ret = uct_ep_am_bcopy(ep, AM_ID, seq_pack, &arg, 0)) ==
               UCS_ERR_NO_RESOURCE) {
            progress();
            if (now_sec() - start > limit_sec) {
                ADD_FAILURE() << "a send refused for " << limit_sec << " s";
                return false;
            }
        }
        return ret > 0;
    }

    bool ep_failed(uct_ep_h ep)
    {
        for (size_t i = 0; i < m_errors.size(); ++i) {
            if (m_errors[i].ep == ep) {
                return true;
            }
        }
        return false;
    }

    peer_proc m_peer;
};

/* 1 and 2 DCIs, 16 eps each sending 4 messages back to back with nothing
 * polled in between: all 64 taken at once (dcs_quota refuses every ep but
 * the first NUM_DCI ones), those of the eps without a DCI on the shared
 * one, counted there; all arrive in order */
TEST_F(uct_dcx_hybrid, pool_dry_sends_on_shared_dci)
{
    const unsigned num_eps = 16, per_ep = 4;

    for (unsigned num_dci = 1; num_dci <= 2; ++num_dci) {
        std::map<std::string, std::string> cfg;
        cfg["NUM_DCI"] = std::to_string(num_dci);
        entity *a = create_entity(cfg), *b = create_entity();
        ASSERT_TRUE(a && b);
        seq_rx rx(num_eps);
        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(b->iface, AM_ID, seq_rx::cb,
                                                   &rx, 0));
        std::vector<uct_ep_h> eps;
        for (unsigned i = 0; i < num_eps; ++i) {
            eps.push_back(connect(a, b));
        }

        unsigned on_shared = 0;
        for (unsigned k = 0; k < per_ep; ++k) {
            for (unsigned i = 0; i < num_eps; ++i) {
                seq_arg arg = {i, k, 8 + i};
                ASSERT_GT(uct_ep_am_bcopy(eps[i], AM_ID, seq_pack, &arg, 0), 0)
                    << num_dci << " DCIs, ep " << i << " message " << k;
                on_shared += (dcx_dci_ep_index(eps[i]) == (int)num_dci + 1);
            }
        }
        dcx_dci_stats_t s = stats(a);
        EXPECT_EQ((num_eps - num_dci) * per_ep, on_shared);
        EXPECT_EQ((num_eps - num_dci) * per_ep, s.shared_wrs);
        EXPECT_EQ(num_dci, s.created);
        EXPECT_EQ(0u, s.refusals);
        EXPECT_EQ(0u, s.waiters);
        EXPECT_EQ(0u, s.wait_ns);

        ASSERT_TRUE(wait_for([&] { return rx.received == num_eps * per_ep; },
                             limit_sec));
        EXPECT_EQ(0u, rx.bad());
        for (unsigned i = 0; i < num_eps; ++i) {
            flush_ep(eps[i]);
            EXPECT_EQ(per_ep, rx.next[i]) << "ep " << i;
        }
        printf("hybrid, %u DCIs, %u eps: %llu of %u sends on the shared DCI, "
               "no wait\n",
               num_dci, num_eps, (unsigned long long)s.shared_wrs,
               num_eps * per_ep);
        for (unsigned i = 0; i < num_eps; ++i) {
            destroy_ep(eps[i]);
        }
    }
    EXPECT_EQ(0, log_counter::errors()) << log_counter::joined();
}

/* Eps keep moving between the shared DCI and a DCI of their own (1 DCI, 6
 * eps, bursts of different lengths, progress now and then, on the soft
 * device one send in four rounds lost once on the wire): each ep's messages
 * arrive in the order sent, none lost or repeated, every byte right; moves
 * both ways seen.  (With an ep allowed to leave the shared DCI while its
 * WRs there were in flight, its messages arrived out of order.) */
TEST_F(uct_dcx_hybrid, order_kept_across_moves)
{
    const unsigned num_eps = 6, rounds = 400;
    std::map<std::string, std::string> cfg;
    cfg["NUM_DCI"]      = "1";
    cfg["TX_QUEUE_LEN"] = "32";
    cfg["QUOTA"]        = "4";
    cfg["TIMEOUT"]      = "4ms"; /* the retransmission of a lost packet */
    entity *a = create_entity(cfg), *b = create_entity();
    ASSERT_TRUE(a && b);
    seq_rx rx(num_eps);
    ASSERT_EQ(UCS_OK,
              uct_iface_set_am_handler(b->iface, AM_ID, seq_rx::cb, &rx, 0));
    std::vector<uct_ep_h> eps;
    std::vector<uint64_t> seq(num_eps, 0);
    std::vector<int> where(num_eps, -1);
    unsigned to_shared = 0, to_own = 0;
    for (unsigned i = 0; i < num_eps; ++i) {
        eps.push_back(connect(a, b));
    }

    for (unsigned r = 0; r < rounds; ++r) {
        if (test_on_soft() && ((r % 4) == 0)) {
            /* one send of the round lost once on the wire, sent again
             * after the ack timeout: an ep that moved on with it still in
             * flight would be overtaken by its next message */
            dcx_soft_fault_t fault;
            memset(&fault, 0, sizeof(fault));
            fault.type   = DCX_SOFT_FAULT_DROP;
            fault.opcode = DCX_WR_SEND;
            fault.skip   = (r * 5) % 11;
            fault.count  = 1;
            ASSERT_EQ(0, dcx_soft_fault_inject(device(), &fault));
        }
        /* each round begins with another ep: the first to send finds
         * the pool's DCI drained, so each one takes it in turn */
        for (unsigned j = 0; j < num_eps; ++j) {
            unsigned i     = (r + j) % num_eps;
            unsigned burst = 1 + (r * 7 + i * 3) % 5;
            for (unsigned k = 0; k < burst; ++k) {
                ASSERT_TRUE(send(eps[i], i, seq[i], (seq[i] * 13 + i) % 300))
                    << "ep " << i;
                seq[i]++;
                int now = dcx_dci_ep_index(eps[i]);
                if ((where[i] >= 0) && (now != where[i])) {
                    to_shared += (now == 2);
                    to_own += (now == 0);
                }
                where[i] = now;
            }
        }
        if ((r % 3) == 0) {
            progress();
        }
    }
    if (test_on_soft()) {
        dcx_soft_fault_clear(device());
    }
    uint64_t total = 0;
    for (unsigned i = 0; i < num_eps; ++i) {
        flush_ep(eps[i]);
        total += seq[i];
    }
    ASSERT_TRUE(wait_for([&] { return rx.received + rx.bad() >= total; },
                         limit_sec));
    EXPECT_EQ(0u, rx.bad());
    for (unsigned i = 0; i < num_eps; ++i) {
        EXPECT_EQ(seq[i], rx.next[i]) << "ep " << i;
    }
    EXPECT_GT(to_shared, 0u);
    EXPECT_GT(to_own, 0u);
    dcx_dci_stats_t s = stats(a);
    EXPECT_GT(s.shared_wrs, 0u);
    EXPECT_EQ(0u, s.errors);
    printf("hybrid order: %llu messages from %u eps, %u moves to the shared "
           "DCI, %u back, %llu sends on it\n",
           (unsigned long long)total, num_eps, to_shared, to_own,
           (unsigned long long)s.shared_wrs);
    EXPECT_EQ(0, log_counter::errors()) << log_counter::joined();
}

/* One DCI, held by an ep to a live peer that keeps sending; 4 eps to a
 * peer process and 4 to live peers all send on the shared DCI; the peer
 * process is killed: its 4 eps fail (each once, ENDPOINT_TIMEOUT), the
 * errors were on the shared DCI, and every message of the live eps --
 * those on the shared DCI included -- arrives in order */
TEST_F(uct_dcx_hybrid, peer_failure_on_shared_dci)
{
    const unsigned pairs = 4, rounds = 240, kill_round = 60;
    std::map<std::string, std::string> cfg;
    cfg["NUM_DCI"] = "1";
    cfg["FC_WND"]  = "16";
    entity *a = create_entity(cfg), *b = create_entity();
    ASSERT_TRUE(a && b);
    seq_rx rx(pairs + 1);
    ASSERT_EQ(UCS_OK,
              uct_iface_set_am_handler(b->iface, AM_ID, seq_rx::cb, &rx, 0));

    m_peer = spawn_peer("uct_dcx_scale_peer.DISABLED_serve");
    ASSERT_GT(m_peer.pid, 0);
    uint32_t len = 0;
    ASSERT_TRUE(read_full(m_peer.from, &len, sizeof(len), 60000));
    ASSERT_LT(len, 4096u);
    std::string peer_addr(len, '\0');
    ASSERT_TRUE(read_full(m_peer.from, &peer_addr[0], len, 60000));

    /* eps[0] (live) takes the pool's only DCI and keeps sending on it;
     * the others alternate live and dead */
    std::vector<uct_ep_h> live, dead;
    live.push_back(connect(a, b));
    ASSERT_TRUE(send(live[0], 0, 0, 16));
    ASSERT_EQ(0, dcx_dci_ep_index(live[0]));
    std::vector<uint64_t> seq(pairs + 1, 0);
    seq[0] = 1;
    for (unsigned i = 0; i < pairs; ++i) {
        live.push_back(connect(a, b));
        dead.push_back(connect_str(a, peer_addr));
    }

    std::vector<bool> dead_on_shared(pairs, false);
    unsigned live_on_shared = 0;
    for (unsigned r = 0; r < rounds; ++r) {
        if (r == kill_round) {
            kill_peer(m_peer);
        }
        for (unsigned i = 0; i < live.size(); ++i) {
            /* the DCI holder sends without a pause so that the pool stays
             * dry; the others send one each */
            ASSERT_TRUE(send(live[i], i, seq[i], 16 + (seq[i] * 5 + i) % 200))
                << "live ep " << i << " round " << r;
            seq[i]++;
            live_on_shared += (i > 0) && (r > kill_round) &&
                              (dcx_dci_ep_index(live[i]) == 2);
        }
        for (unsigned i = 0; i < pairs; ++i) {
            if (ep_failed(dead[i])) {
                continue;
            }
            seq_arg arg = {i, r, 64};
            ssize_t ret = uct_ep_am_bcopy(dead[i], AM_ID, seq_pack, &arg, 0);
            if ((ret > 0) && (dcx_dci_ep_index(dead[i]) == 2)) {
                dead_on_shared[i] = true;
            }
        }
        progress();
    }

    /* the dead peer's eps: each failed once, with a timeout */
    for (unsigned i = 0; i < pairs; ++i) {
        EXPECT_TRUE(wait_for([&] { return ep_failed(dead[i]); }, limit_sec))
            << "dead ep " << i << " never failed";
        EXPECT_TRUE(dead_on_shared[i]) << "dead ep " << i;
    }
    EXPECT_EQ(pairs, m_errors.size());
    for (size_t k = 0; k < m_errors.size(); ++k) {
        EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, m_errors[k].status);
        EXPECT_TRUE(std::find(dead.begin(), dead.end(), m_errors[k].ep) !=
                    dead.end());
    }

    /* the live eps: nothing failed, everything arrived in order */
    uint64_t total = 0;
    for (unsigned i = 0; i < live.size(); ++i) {
        EXPECT_FALSE(ep_failed(live[i])) << "live ep " << i;
        flush_ep(live[i]);
        total += seq[i];
    }
    ASSERT_TRUE(wait_for([&] { return rx.received == total; }, limit_sec));
    EXPECT_EQ(0u, rx.bad());
    for (unsigned i = 0; i < live.size(); ++i) {
        EXPECT_EQ(seq[i], rx.next[i]) << "live ep " << i;
    }
    EXPECT_GT(live_on_shared, 0u);

    dcx_dci_stats_t s = stats(a);
    EXPECT_GE(s.errors, 1u);
    EXPECT_EQ(pairs, s.ep_failures);
    EXPECT_GT(s.shared_wrs, 0u);
    /* a peer failure is a diagnostic, not an error */
    EXPECT_EQ(0, log_counter::errors()) << log_counter::joined();
    printf("hybrid peer killed: %llu messages of %zu live eps checked (%u "
           "sends on the shared DCI after the kill), %u dead eps failed, "
           "%llu DCI errors recovered\n",
           (unsigned long long)total, live.size(), live_on_shared, pairs,
           (unsigned long long)s.errors);
    log_counter::reset();
    for (unsigned i = 0; i < pairs; ++i) {
        destroy_ep(dead[i]);
    }
}

/* A device with 3 DCIs in all: the two interfaces' control DCIs and the
 * sender's one data DCI take them, and the device refuses the shared DCI:
 * the second ep waits for the pool's DCI as under dcs_quota (one error
 * line saying so), and gets it once the first ep's work is done */
class uct_dcx_hybrid_no_shared : public uct_dcx_hybrid {
protected:
    virtual void init_env(scoped_env &env)
    {
        uct_dcx_hybrid::init_env(env);
        env.set("UCX_DCX_SOFT_MAX_DCI", "3");
    }
};

TEST_F(uct_dcx_hybrid_no_shared, device_refuses_shared_dci_bad_flow)
{
    if (!test_on_soft()) {
        GTEST_SKIP() << "the DCI limit is the soft device's";
    }
    std::map<std::string, std::string> cfg;
    cfg["NUM_DCI"] = "1";
    entity *a = create_entity(cfg), *b = create_entity(cfg);
    ASSERT_TRUE(a && b);
    seq_rx rx(2);
    ASSERT_EQ(UCS_OK,
              uct_iface_set_am_handler(b->iface, AM_ID, seq_rx::cb, &rx, 0));
    uct_ep_h e1 = connect(a, b), e2 = connect(a, b);

    seq_arg arg1 = {0, 0, 8}, arg2 = {1, 0, 8};
    ASSERT_GT(uct_ep_am_bcopy(e1, AM_ID, seq_pack, &arg1, 0), 0);
    EXPECT_EQ(0, dcx_dci_ep_index(e1));
    log_counter::reset();
    EXPECT_EQ(UCS_ERR_NO_RESOURCE,
              uct_ep_am_bcopy(e2, AM_ID, seq_pack, &arg2, 0));
    EXPECT_TRUE(log_counter::contains("shared DCI")) << log_counter::joined();
    dcx_dci_stats_t s = stats(a);
    EXPECT_EQ(1u, s.refusals);
    EXPECT_EQ(1u, s.waiters);
    EXPECT_EQ(0u, s.shared_wrs);

    ASSERT_TRUE(send(e2, 1, 0, 8));
    EXPECT_EQ(0, dcx_dci_ep_index(e2));
    flush_ep(e2);
    ASSERT_TRUE(wait_for([&] { return rx.received == 2; }, limit_sec));
    EXPECT_EQ(0u, rx.bad());
    s = stats(a);
    EXPECT_EQ(0u, s.waiters);
    EXPECT_EQ(0u, s.shared_wrs);
    log_counter::reset();
}
