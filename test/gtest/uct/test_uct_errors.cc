/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport error paths through the UCT API, under every policy: an
 * access error, a DC key mismatch, an injected error completion, a peer
 * process killed, ep_check of a dead peer.  Each failure reaches the error
 * handler with its endpoint, the other endpoints keep working, and the
 * failed DCI is recovered.
 */
#include "uct_fixture.h"
#include "dcx_dci_stats.h"

#include <cstring>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace dcx_test;

namespace {

const uint8_t AM_ID = 7;

ucs_status_t count_am_u64(void *arg, void *data, size_t length, unsigned flags)
{
    (*static_cast<uint64_t *>(arg))++;
    return UCS_OK;
}

/* What a peer process publishes: its addresses and a registered buffer */
struct peer_info {
    char dev_addr[64];
    char iface_addr[64];
    uint32_t dev_addr_len;
    uint32_t iface_addr_len;
    uint64_t buf;
    char rkey[64];
    uint64_t sent; /* AMs sent to DCX_PEER_SEND_TO */
};

} /* namespace */


class uct_dcx_errors : public uct_dcx_pair_test {
protected:
    virtual void init_env(scoped_env &env)
    {
        uct_dcx_pair_test::init_env(env);
        /* fail fast: 4us * 2^11 = 8ms per try, 2 retries */
        env.set("UCX_DCX_TIMEOUT", "8ms");
        env.set("UCX_DCX_RETRY_COUNT", "2");
    }

    virtual void SetUp()
    {
        uct_dcx_test::SetUp();
        setup_pair(AM_ID);
    }

    /* Waits for the first error reported for ep */
    bool wait_error(uct_ep_h ep, ucs_status_t *status_p)
    {
        if (!wait_for([&] { return !errors_of(ep).empty(); })) {
            return false;
        }
        *status_p = errors_of(ep)[0];
        return true;
    }
};

TEST_P(uct_dcx_errors, remote_access_error)
{
    uct_ep_h bad  = connect(m_a, m_b);
    uct_ep_h good = connect(m_a, m_b);
    ucs_status_t status;

    check_healthy(good);
    ASSERT_EQ(UCS_OK, put(bad, m_mem.rkey ^ 0x5a5a00));
    ASSERT_TRUE(wait_error(bad, &status));
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, status);
    EXPECT_EQ(1u, m_errors.size());
    check_healthy(good);

    /* the failed ep refuses new work; flush with cancel completes */
    EXPECT_NE(UCS_OK, put(bad, m_mem.rkey));
    EXPECT_EQ(UCS_OK, uct_ep_flush(bad, UCT_FLUSH_FLAG_CANCEL, NULL));
    /* a peer failure is logged at the diagnostic level, not as an error */
    EXPECT_EQ(0, log_counter::errors());
}

/* UCT_IFACE_FLAG_ERRHANDLE_REMOTE_MEM and _ZCOPY_BUF are advertised: a
 * zero-copy operation whose local buffer lies outside its memory handle
 * (here: unmapped memory), or whose remote range is outside the remote
 * region, fails that endpoint through the error handler, writes nothing and
 * leaves the other endpoints working */
TEST_P(uct_dcx_errors, zcopy_bad_buffers_reach_error_handler)
{
    const uint64_t caps = UCT_IFACE_FLAG_ERRHANDLE_ZCOPY_BUF |
                          UCT_IFACE_FLAG_ERRHANDLE_REMOTE_MEM;
    mem src             = alloc_mem(4096);
    uct_ep_h bad_local  = connect(m_a, m_b);
    uct_ep_h bad_remote = connect(m_a, m_b);
    uct_ep_h good       = connect(m_a, m_b);
    test_comp lcomp, rcomp;
    ucs_status_t status;
    size_t len = 64;
    void *unmapped;

    EXPECT_EQ(caps, m_a->attr.cap.flags & caps);
    EXPECT_FALSE(m_a->attr.cap.flags & (UCT_IFACE_FLAG_ERRHANDLE_SHORT_BUF |
                                        UCT_IFACE_FLAG_ERRHANDLE_BCOPY_BUF |
                                        UCT_IFACE_FLAG_ERRHANDLE_BCOPY_LEN |
                                        UCT_IFACE_FLAG_ERRHANDLE_AM_ID));

    unmapped = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, unmapped);
    munmap(unmapped, 4096);

    memset(m_mem.ptr, 0, 256);
    uct_iov_t liov = {unmapped, len, src.memh, 0, 1};
    ASSERT_EQ(UCS_INPROGRESS, retry([&] {
                  return uct_ep_put_zcopy(bad_local, &liov, 1,
                                          (uintptr_t)m_mem.ptr, m_mem.rkey,
                                          &lcomp.uct);
              }));
    ASSERT_TRUE(wait_error(bad_local, &status));
    ASSERT_TRUE(wait_for([&] { return lcomp.done == 1; }));
    EXPECT_NE(UCS_OK, lcomp.status);

    uct_iov_t riov = {src.ptr, len, src.memh, 0, 1};
    ASSERT_EQ(UCS_INPROGRESS, retry([&] {
                  return uct_ep_put_zcopy(bad_remote, &riov, 1,
                                          (uintptr_t)m_mem.ptr + m_mem.length -
                                              8,
                                          m_mem.rkey, &rcomp.uct);
              }));
    ASSERT_TRUE(wait_error(bad_remote, &status));
    ASSERT_TRUE(wait_for([&] { return rcomp.done == 1; }));
    EXPECT_NE(UCS_OK, rcomp.status);

    EXPECT_EQ(2u, m_errors.size());
    EXPECT_EQ(std::string(256, '\0'), std::string((char *)m_mem.ptr, 256));
    EXPECT_EQ(0, ((char *)m_mem.ptr)[m_mem.length - 1]);
    check_healthy(good);
    log_counter::reset();
}

TEST_P(uct_dcx_errors, dc_key_mismatch)
{
    std::map<std::string, std::string> cfg;
    dcx_soft_stats_t before, after;
    ucs_status_t status;

    cfg["DC_KEY"] = "12345";
    entity *other = create_entity(cfg);
    ASSERT_TRUE(other != NULL);
    uct_ep_h bad  = connect(m_a, other);
    uct_ep_h good = connect(m_a, m_b);

    /* the soft device counts the violations; a NIC drops them silently */
    const bool counted = dcx_dev_is_soft(device());

    ASSERT_TRUE(!counted || (dcx_soft_stats(device(), &before) == 0));
    ASSERT_EQ(UCS_OK,
              retry([&] { return uct_ep_am_short(bad, AM_ID, 0, NULL, 0); }));
    ASSERT_TRUE(wait_error(bad, &status));
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, status);
    if (counted) {
        ASSERT_EQ(0, dcx_soft_stats(device(), &after));
        EXPECT_GT(after.dc_key_violations, before.dc_key_violations);
    }
    check_healthy(good);
    log_counter::reset();
}

/* An endpoint's probe takes no receive at its peer: 32 endpoints probe a
 * peer of 4 posted receives at once, with no RNR retry allowed, and none
 * of them fails */
TEST_P(uct_dcx_errors, ep_check_takes_no_receive)
{
    entity *a = create_entity({{"RNR_RETRY_COUNT", "0"}});
    entity *t = create_entity({{"RX_QUEUE_LEN", "4"}});
    std::vector<uct_ep_h> eps;

    ASSERT_TRUE((a != NULL) && (t != NULL));
    for (int i = 0; i < 32; ++i) {
        eps.push_back(connect(a, t));
    }
    for (uct_ep_h ep : eps) {
        ASSERT_EQ(UCS_OK, uct_ep_check(ep, 0, NULL));
    }
    flush_iface(a);
    EXPECT_TRUE(m_errors.empty());
    EXPECT_EQ(0, log_counter::errors());
}

TEST_P(uct_dcx_errors, injected_error_completion)
{
    uct_ep_h bad  = connect(m_a, m_b);
    uct_ep_h good = connect(m_a, m_b);
    ucs_status_t status;

    check_healthy(good);
    ASSERT_EQ(0, inject_error_completion(DCX_WR_RDMA_WRITE, DCX_WC_REM_OP_ERR));
    ASSERT_EQ(UCS_OK, put(bad, m_mem.rkey));
    ASSERT_TRUE(wait_error(bad, &status));
    dcx_soft_fault_clear(device());
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, status);
    check_healthy(good);
    log_counter::reset();
}

/* streams: every stream of the DCI in error at once, where the device's
 * errored-stream limit is its number of streams (the soft device: 64 and
 * 64) -- the one way the DCI fails as a whole under this policy.  dcx
 * recovers the DCI: the error it saw first fails its endpoint, the other
 * streams' work in flight ends (one error line says so), and the DCI
 * carries traffic again. */
TEST_P(uct_dcx_errors, streams_whole_dci_failure_bad_flow)
{
    if (GetParam() != "streams") {
        GTEST_SKIP() << "the streams policy only";
    }
    const dcx_dev_caps_t &caps = device()->caps;
    const unsigned n           = 1u << caps.dci_streams_log_max;
    if (!dev_has(DCX_CAP_DCI_STREAMS) ||
        (caps.dci_errored_log_max > caps.dci_streams_log_max)) {
        GTEST_SKIP() << "the device's DCIs never fail for their streams";
    }
    entity *a = create_entity({{"NUM_DCI_STREAMS", std::to_string(n)}});
    ASSERT_TRUE(a);

    /* an endpoint on each stream */
    std::vector<uct_ep_h> on(n, nullptr);
    unsigned covered = 0;
    for (unsigned i = 0; (i < 64 * n) && (covered < n); ++i) {
        uct_ep_h ep = connect(a, m_b);
        int s       = dcx_dci_ep_index(ep);
        ASSERT_GE(s, 0);
        ASSERT_LT(s, (int)n);
        if (on[s] == nullptr) {
            on[s] = ep;
            covered++;
        }
    }
    ASSERT_EQ(n, covered);

    /* each stream's put fails at post, before dcx polls: n errored */
    ASSERT_EQ(0,
              inject_error_completion(DCX_WR_RDMA_WRITE, DCX_WC_REM_OP_ERR, n));
    for (unsigned s = 0; s < n; ++s) {
        ASSERT_EQ(UCS_OK, put(on[s], m_mem.rkey)) << "stream " << s;
    }
    ASSERT_TRUE(wait_for([&] { return !m_errors.empty(); }));
    for (int i = 0; i < 100; ++i) {
        progress();
    }
    dcx_soft_fault_clear(device());

    dcx_dci_stats_t st;
    memset(&st, 0, sizeof(st));
    ASSERT_EQ(0, dcx_dci_iface_stats(a->iface, &st));
    EXPECT_EQ(1u, st.errors);
    EXPECT_EQ(0u, st.stream_resets);
    EXPECT_EQ(1u, m_errors.size());
    EXPECT_TRUE(log_counter::contains("failed as a whole"))
        << log_counter::joined();
    log_counter::reset();

    /* the recovered DCI works: an endpoint on every stream but the one
     * that failed (the others were not reported failed) */
    for (unsigned s = 0; s < n; ++s) {
        if (errors_of(on[s]).empty()) {
            check_healthy(on[s], 1000 + s);
        }
    }
    EXPECT_EQ(0, log_counter::errors()) << log_counter::joined();
}

/* An error handler may destroy the endpoint and still decline the error:
 * the transport's own report of the unhandled failure must not read the
 * freed endpoint (ASan reports a heap-use-after-free if it does) */
TEST_P(uct_dcx_errors, handler_destroys_ep_and_declines)
{
    uct_ep_h bad  = connect(m_a, m_b);
    uct_ep_h good = connect(m_a, m_b);

    check_healthy(good);
    ASSERT_EQ(0, inject_error_completion(DCX_WR_RDMA_WRITE, DCX_WC_REM_OP_ERR));
    m_err_destroys_ep = true;
    ASSERT_EQ(UCS_OK, put(bad, m_mem.rkey));
    ASSERT_TRUE(wait_for([&] { return !m_errors.empty(); }));
    m_err_destroys_ep = false;
    dcx_soft_fault_clear(device());
    ASSERT_EQ(1u, m_errors.size());
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, m_errors[0].status);
    EXPECT_TRUE(log_counter::contains("no error handler took it"))
        << log_counter::joined();
    check_healthy(good);
    log_counter::reset();
}

/* Lost and late packets are the device's business: retransmitted, nothing
 * reaches the error handler, nothing is lost or duplicated */
TEST_P(uct_dcx_errors, dropped_and_delayed_packets)
{
    uct_ep_h ep = connect(m_a, m_b);
    dcx_soft_stats_t before, after;
    dcx_soft_fault_t fault;

    /* the retry timeout must cover the drops */
    for (int type = 0; type < 2; ++type) {
        memset(&fault, 0, sizeof(fault));
        fault.type     = type ? DCX_SOFT_FAULT_DELAY : DCX_SOFT_FAULT_DROP;
        fault.opcode   = DCX_WR_SEND;
        fault.skip     = 3;
        fault.count    = 2;
        fault.delay_us = 2000;
        ASSERT_EQ(0, dcx_soft_stats(device(), &before));
        ASSERT_EQ(0, dcx_soft_fault_inject(device(), &fault));
        int start = m_rx;
        for (int i = 0; i < 20; ++i) {
            ASSERT_EQ(UCS_OK, retry([&] {
                          return uct_ep_am_short(ep, AM_ID, i, NULL, 0);
                      }));
        }
        ASSERT_TRUE(wait_for([&] { return m_rx == start + 20; }));
        flush_ep(ep);
        dcx_soft_fault_clear(device());
        ASSERT_EQ(0, dcx_soft_stats(device(), &after));
        if (type == 0) {
            EXPECT_GT(after.retransmits, before.retransmits);
        }
        EXPECT_EQ(start + 20, m_rx);
    }
    EXPECT_TRUE(m_errors.empty());
    check_healthy(ep);
}

TEST_P(uct_dcx_errors, error_completes_outstanding_ops)
{
    uct_ep_h bad  = connect(m_a, m_b);
    uct_ep_h good = connect(m_a, m_b);
    mem loc       = alloc_mem(4096);
    test_comp comp;
    ucs_status_t status;

    uct_iov_t iov = {loc.ptr, 4096, loc.memh, 0, 1};
    ASSERT_EQ(UCS_INPROGRESS, retry([&] {
                  return uct_ep_get_zcopy(bad, &iov, 1, (uintptr_t)m_mem.ptr,
                                          m_mem.rkey ^ 0x777700, &comp.uct);
              }));
    ASSERT_TRUE(wait_error(bad, &status));
    ASSERT_TRUE(wait_for([&] { return comp.done > 0; }));
    EXPECT_NE(UCS_OK, comp.status);
    check_healthy(good);
    log_counter::reset();
}

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_errors, UCT_DCX_POLICIES);


/* ---------------------------------------------------------------------------
 * A peer in another process
 * ------------------------------------------------------------------------- */

/* Run in the child process (exec'ed): publishes its addresses and memory on
 * its pipe (spawn_peer), then serves until killed.  With DCX_PEER_SEND_TO (a parent
 * interface's device and interface address, hex, '/'-separated) it first
 * sends DCX_PEER_SEND_COUNT active messages there (enough for a credit
 * request to go out with them) and waits for their delivery; with DCX_PEER_IDLE it never progresses after
 * publishing (its device still acknowledges, it grants nothing). */
class uct_dcx_peer : public uct_dcx_test {};

TEST_F(uct_dcx_peer, DISABLED_serve)
{
    int in_fd, out_fd;
    peer_info info;

    if (!peer_fds(&in_fd, &out_fd)) {
        GTEST_SKIP() << "run by the peer tests only";
    }
    entity *e = create_entity();
    ASSERT_TRUE(e != NULL);
    mem m = alloc_mem(65536);
    /* AMs are counted in the first word of the published buffer */
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(e->iface, AM_ID, count_am_u64,
                                               m.ptr, 0));

    memset(&info, 0, sizeof(info));
    info.dev_addr_len   = e->dev_addr.size();
    info.iface_addr_len = e->iface_addr.size();
    memcpy(info.dev_addr, &e->dev_addr[0], e->dev_addr.size());
    memcpy(info.iface_addr, &e->iface_addr[0], e->iface_addr.size());
    info.buf = (uintptr_t)m.ptr;
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(m_md, m.memh, info.rkey));

    const char *target = getenv("DCX_PEER_SEND_TO");
    if (target != NULL) {
        uct_ep_h ep = connect_str(e, target);
        int n       = 0;

        ASSERT_TRUE(ep != NULL);
        n = atoi(getenv("DCX_PEER_SEND_COUNT"));
        for (int i = 0; i < n; ++i) {
            ASSERT_EQ(UCS_OK, uct_ep_am_short(ep, AM_ID, i, NULL, 0));
        }
        /* everything, the credit request included, reached the parent */
        flush_ep(ep);
        info.sent = n;
    }
    ASSERT_TRUE(write_full(out_fd, &info, sizeof(info)));
    bool slow = (getenv("DCX_PEER_SLOW") != NULL);
    if (getenv("DCX_PEER_IDLE") != NULL) {
        for (;;) {
            pause();
        }
    }
    for (;;) {
        progress();
        if (slow) {
            usleep(20); /* a receiver that cannot keep up */
        }
    }
}

class uct_dcx_remote : public uct_dcx_errors {
protected:
    virtual void TearDown()
    {
        kill_peer(m_peer);
        uct_dcx_errors::TearDown();
    }

    /* Starts the peer process on our fabric; ep to it in m_remote */
    void start_peer(entity *from = NULL)
    {
        peer_info info;

        m_peer = spawn_peer("uct_dcx_peer.DISABLED_serve");
        ASSERT_GT(m_peer.pid, 0);
        ASSERT_TRUE(read_full(m_peer.from, &info, sizeof(info)));

        m_remote = connect_addr((from != NULL) ? from : m_a, info.dev_addr,
                                info.iface_addr);
        ASSERT_TRUE(m_remote != NULL);
        ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, info.rkey, &m_rkb));
        m_rkeys.push_back(m_rkb);
        m_remote_buf = info.buf;
        m_peer_sent  = info.sent;
    }

    virtual void SetUp() { uct_dcx_errors::SetUp(); }

    ~uct_dcx_remote()
    {
        for (size_t i = 0; i < m_rkeys.size(); ++i) {
            uct_rkey_release(m_component, &m_rkeys[i]);
        }
    }

    peer_proc m_peer;
    uct_ep_h m_remote;
    uct_rkey_bundle_t m_rkb;
    uint64_t m_remote_buf;
    uint64_t m_peer_sent;
    std::vector<uct_rkey_bundle_t> m_rkeys;
};

TEST_P(uct_dcx_remote, peer_killed)
{
    uct_ep_h good  = connect(m_a, m_b);
    uint64_t value = 17, result = 0;
    test_comp comp;
    ucs_status_t status;

    ASSERT_NO_FATAL_FAILURE(start_peer());
    /* the peer works */
    ASSERT_EQ(UCS_INPROGRESS, retry([&] {
                  return uct_ep_atomic64_fetch(m_remote, UCT_ATOMIC_OP_ADD,
                                               value, &result, m_remote_buf,
                                               m_rkb.rkey, &comp.uct);
              }));
    ASSERT_TRUE(wait_for([&] { return comp.done > 0; }));
    EXPECT_EQ(UCS_OK, comp.status);
    EXPECT_EQ(0u, result);

    kill_peer(m_peer);

    ASSERT_EQ(UCS_OK, retry([&] {
                  return uct_ep_put_short(m_remote, &value, 8, m_remote_buf,
                                          m_rkb.rkey);
              }));
    ASSERT_TRUE(wait_error(m_remote, &status));
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, status);
    check_healthy(good);
    log_counter::reset();
}

TEST_P(uct_dcx_remote, ep_check_dead_peer)
{
    uct_ep_h good = connect(m_a, m_b);
    ucs_status_t status;

    ASSERT_NO_FATAL_FAILURE(start_peer());
    ASSERT_EQ(UCS_OK, uct_ep_check(m_remote, 0, NULL));
    flush_iface(m_a);
    EXPECT_TRUE(m_errors.empty());

    kill_peer(m_peer);

    ASSERT_EQ(UCS_OK, uct_ep_check(m_remote, 0, NULL));
    ASSERT_TRUE(wait_error(m_remote, &status));
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, status);
    check_healthy(good);

    log_counter::reset();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_ep_check(good, 1, NULL));
    EXPECT_EQ(1, log_counter::errors());
    log_counter::reset();
}

/* An ep destroyed while its probe and its operations to a dead peer are
 * still in flight: the failure that comes later names no endpoint */
TEST_P(uct_dcx_remote, ep_destroyed_with_work_in_flight)
{
    uct_ep_h good  = connect(m_a, m_b);
    uint64_t value = 1;

    ASSERT_NO_FATAL_FAILURE(start_peer());
    kill_peer(m_peer);

    ASSERT_EQ(UCS_OK, uct_ep_check(m_remote, 0, NULL));
    ASSERT_EQ(UCS_OK, retry([&] {
                  return uct_ep_put_short(m_remote, &value, 8, m_remote_buf,
                                          m_rkb.rkey);
              }));
    destroy_ep(m_remote);
    flush_iface(m_a);
    EXPECT_TRUE(m_errors.empty());
    check_healthy(good);
    log_counter::reset();
}

/* Sends to a dead peer whose completions were not requested (most are
 * unsignalled, SIGNAL_PERIOD), with one operation that has a completion:
 * the ep fails once, that completion is called once, with an error, the
 * bounce buffers of the bcopy sends come back (ASan: once), and the other
 * eps keep working */
TEST_P(uct_dcx_remote, unsignalled_sends_to_dead_peer_fail_once)
{
    uct_ep_h good  = connect(m_a, m_b);
    mem loc        = alloc_mem(4096);
    uint64_t value = 3;
    char payload[32];
    test_comp comp;
    ucs_status_t status;

    ASSERT_NO_FATAL_FAILURE(start_peer());
    kill_peer(m_peer);

    memset(payload, 'p', sizeof(payload));
    for (int i = 0; i < 4; ++i) {
        ASSERT_EQ(UCS_OK, retry([&] {
                      return uct_ep_put_short(m_remote, &value, 8,
                                              m_remote_buf + 8 * i, m_rkb.rkey);
                  }));
        ASSERT_EQ(UCS_OK, retry([&] {
                      return uct_ep_am_short(m_remote, AM_ID, i, NULL, 0);
                  }));
        ssize_t len = uct_ep_am_bcopy(
            m_remote, AM_ID,
            [](void *dest, void *arg) -> size_t {
                memcpy(dest, arg, 32);
                return 32;
            },
            payload, 0);
        ASSERT_EQ(32, len);
    }
    uct_iov_t iov = {loc.ptr, 64, loc.memh, 0, 1};
    ASSERT_EQ(UCS_INPROGRESS, retry([&] {
                  return uct_ep_put_zcopy(m_remote, &iov, 1, m_remote_buf,
                                          m_rkb.rkey, &comp.uct);
              }));

    ASSERT_TRUE(wait_error(m_remote, &status));
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, status);
    ASSERT_TRUE(wait_for([&] { return comp.done > 0; }));
    for (int i = 0; i < 200; ++i) {
        progress();
    }
    EXPECT_EQ(1, comp.done);
    EXPECT_NE(UCS_OK, comp.status);
    EXPECT_EQ(1u, errors_of(m_remote).size());
    check_healthy(good);
    log_counter::reset();
}

/* One DCI for everybody: the WRs of a healthy ep queued behind those to a
 * dead peer are not lost (rand re-posts them after recovery, dcs lends the
 * recovered DCI to the waiting ep). */
TEST_P(uct_dcx_remote, shared_dci_survives_peer_death)
{
    std::map<std::string, std::string> cfg;
    cfg["NUM_DCI"] = "1";
    entity *c      = create_entity(cfg);
    ASSERT_TRUE(c != NULL);
    uct_ep_h good  = connect(c, m_b);
    mem loc        = alloc_mem(8192);
    uint64_t value = 5;
    test_comp comp;
    ucs_status_t status;

    ASSERT_NO_FATAL_FAILURE(start_peer(c));
    kill_peer(m_peer);

    ASSERT_EQ(UCS_OK, retry([&] {
                  return uct_ep_put_short(m_remote, &value, 8, m_remote_buf,
                                          m_rkb.rkey);
              }));
    for (int i = 0; i < 40; ++i) {
        ASSERT_EQ(UCS_OK, retry([&] {
                      return uct_ep_am_short(good, AM_ID, i, NULL, 0);
                  }));
    }
    memset(loc.ptr, 'q', 8192);
    uct_iov_t iov = {loc.ptr, 8192, loc.memh, 0, 1};
    ASSERT_EQ(UCS_INPROGRESS, retry([&] {
                  return uct_ep_put_zcopy(good, &iov, 1, (uintptr_t)m_mem.ptr,
                                          m_mem.rkey, &comp.uct);
              }));

    ASSERT_TRUE(wait_error(m_remote, &status));
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, status);
    ASSERT_TRUE(wait_for([&] { return (m_rx == 40) && comp.done; }));
    EXPECT_EQ(UCS_OK, comp.status);
    EXPECT_EQ(0, memcmp(m_mem.ptr, loc.ptr, 8192));
    EXPECT_EQ(1u, m_errors.size());
    check_healthy(good);
    log_counter::reset();
}

/* A dead peer's put at the head of a shared DCI (one stream under
 * streams) that a live endpoint then fills: its puts, flushed by the
 * failure, are all posted again and all land, each in its slot.  The
 * flushed WRs hold the send queue until their completions are polled (and
 * a stream may be reset only then): over the emulated ConnectX the
 * streams policy once posted them again at once, met a full queue, and
 * lost every put that did not fit (the peer_failure test lost 1 to 4 in
 * 20 runs). */
TEST_P(uct_dcx_remote, full_dci_behind_dead_peer)
{
    std::map<std::string, std::string> cfg;
    cfg["NUM_DCI"]         = "1";
    cfg["NUM_DCI_STREAMS"] = "1";
    entity *c              = create_entity(cfg);
    ASSERT_TRUE(c != NULL);
    uct_ep_h good    = connect(c, m_b);
    uint64_t *slots  = static_cast<uint64_t *>(m_mem.ptr);
    const size_t max = m_mem.length / sizeof(uint64_t);
    uint64_t value   = 5;
    ucs_status_t status;
    size_t n;

    memset(m_mem.ptr, 0, m_mem.length);
    ASSERT_NO_FATAL_FAILURE(start_peer(c));
    kill_peer(m_peer);
    ASSERT_EQ(UCS_OK, retry([&] {
                  return uct_ep_put_short(m_remote, &value, 8, m_remote_buf,
                                          m_rkb.rkey);
              }));
    /* no progress: everything stays queued behind the dead peer's put */
    for (n = 0, status = UCS_OK; n < max; ++n) {
        value  = n + 1;
        status = uct_ep_put_short(good, &value, 8, (uintptr_t)&slots[n],
                                  m_mem.rkey);
        if (status != UCS_OK) {
            break;
        }
    }
    ASSERT_TRUE((status == UCS_OK) || (status == UCS_ERR_NO_RESOURCE))
        << ucs_status_string(status);

    ASSERT_TRUE(wait_error(m_remote, &status));
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, status);
    flush_ep(good);
    size_t landed = 0;
    for (size_t i = 0; i < n; ++i) {
        landed += (slots[i] == i + 1);
    }
    EXPECT_EQ(n, landed) << n << " puts queued behind the dead peer's";
    if (n < max) {
        EXPECT_EQ(0u, slots[n]) << "beyond the last put";
    }
    EXPECT_EQ(1u, m_errors.size());
    check_healthy(good);
    log_counter::reset();
}

/* A slow receiver in another process with a tiny receive queue, flooded:
 * every message arrives, flow control keeps the sender from needing
 * receiver-not-ready retries */
class uct_dcx_remote_flood : public uct_dcx_remote {
protected:
    virtual void init_env(scoped_env &env)
    {
        uct_dcx_remote::init_env(env);
        env.set("UCX_DCX_RX_QUEUE_LEN", "32");
        env.set("UCX_DCX_FC_WND", "16");
        env.set("UCX_DCX_TIMEOUT", "1s");
        env.set("DCX_PEER_SLOW", "1");
    }
};

TEST_P(uct_dcx_remote_flood, slow_receiver)
{
    const uint64_t n = 3000;
    dcx_soft_stats_t before, after;
    uint64_t count = 0;
    std::string payload(300, 'w');

    ASSERT_NO_FATAL_FAILURE(start_peer());
    ASSERT_EQ(0, dcx_soft_stats(device(), &before));
    for (uint64_t i = 0; i < n; ++i) {
        ASSERT_EQ(UCS_OK, retry([&] {
                      return uct_ep_am_short(m_remote, AM_ID, i, payload.data(),
                                             payload.size());
                  }));
    }
    /* read the peer's counter until it saw everything */
    ASSERT_TRUE(wait_for(
        [&] {
            test_comp comp;
            uct_iov_t iov       = {m_mem.ptr, 8, m_mem.memh, 0, 1};
            ucs_status_t status = retry([&] {
                return uct_ep_get_zcopy(m_remote, &iov, 1, m_remote_buf,
                                        m_rkb.rkey, &comp.uct);
            });
            EXPECT_EQ(UCS_INPROGRESS, status);
            wait_for([&] { return comp.done > 0; });
            count = *(uint64_t *)m_mem.ptr;
            return count == n;
        },
        60))
        << "peer counted " << count << " of " << n;
    ASSERT_EQ(0, dcx_soft_stats(device(), &after));
    EXPECT_EQ(before.rnr_retries, after.rnr_retries)
        << "flow control let the peer's receive queue overflow";
    EXPECT_TRUE(m_errors.empty());
}

/* Flow control with a peer process: small windows, and credit requests
 * resent only when a test asks for it */
class uct_dcx_remote_fc : public uct_dcx_remote {
protected:
    virtual void init_env(scoped_env &env)
    {
        uct_dcx_remote::init_env(env);
        env.set("UCX_DCX_FC_WND", "4");
        env.set("UCX_DCX_FC_REQ_TIMEOUT", "3600s");
    }

    /* An AM waiting in the pending queue */
    struct am_req {
        uct_pending_req_t uct;
        uct_ep_h ep;
        int sent;
        int purged;

        static ucs_status_t cb(uct_pending_req_t *self)
        {
            am_req *r           = ucs_container_of(self, am_req, uct);
            ucs_status_t status = uct_ep_am_short(r->ep, AM_ID, 0, NULL, 0);

            r->sent += (status == UCS_OK);
            return status;
        }

        static void purge_cb(uct_pending_req_t *self, void *arg)
        {
            ucs_container_of(self, am_req, uct)->purged++;
        }
    };

    void kill_peer() { dcx_test::kill_peer(m_peer); }
};

/*
 * The grant a sends to a peer that died after asking for credits
 * fails on a's control DCI.  The grant a owes a live sender, queued behind
 * it on that DCI, must still go out, not be completed with the dead
 * peer's error and dropped: the live sender would stall forever
 * (requests are not resent in this test).
 */
TEST_P(uct_dcx_remote_fc, grant_to_dead_peer_keeps_live_grants)
{
    const int total = 100;
    int rx_a        = 0;
    int sent        = 0;

    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_a->iface, AM_ID, am_count_cb,
                                               &rx_a, 0));
    m_env.set("DCX_PEER_SEND_TO", addr_str(m_a));
    m_env.set("DCX_PEER_SEND_COUNT", "3"); /* window 4: asks at the 3rd */
    m_env.set("DCX_PEER_IDLE", "1");
    ASSERT_NO_FATAL_FAILURE(start_peer());
    ASSERT_EQ(3u, m_peer_sent);
    kill_peer();

    /* a live sender runs out of credits before a hears of anything */
    uct_ep_h live = connect(m_b, m_a);
    while (uct_ep_am_short(live, AM_ID, sent, NULL, 0) == UCS_OK) {
        ++sent;
    }
    ASSERT_GT(sent, 0);

    /* a grants the dead peer, then the live one; the first grant fails */
    EXPECT_TRUE(wait_for([&] {
        while ((sent < total) &&
               (uct_ep_am_short(live, AM_ID, sent, NULL, 0) == UCS_OK)) {
            ++sent;
        }
        return sent == total;
    })) << "the live sender stalled after "
        << sent << " messages";
    EXPECT_TRUE(wait_for([&] { return rx_a == 3 + total; })) << rx_a;
    flush_ep(live);
    EXPECT_TRUE(m_errors.empty());
    log_counter::reset();
}

/*
 * The peer takes c's credit request and dies before granting.
 * While c waits with a request pending, neither c nor its ep is flushed;
 * the request is sent again after FC_REQ_TIMEOUT, fails, and the error
 * handler runs; the pending request is the user's to purge.
 */
TEST_P(uct_dcx_remote_fc, peer_dies_before_grant)
{
    std::map<std::string, std::string> cfg;
    ucs_status_t status;
    am_req req;
    int n = 0;

    cfg["FC_REQ_TIMEOUT"] = "30ms";
    entity *c             = create_entity(cfg);
    ASSERT_TRUE(c != NULL);
    m_env.set("DCX_PEER_IDLE", "1");
    ASSERT_NO_FATAL_FAILURE(start_peer(c));

    while (uct_ep_am_short(m_remote, AM_ID, n, NULL, 0) == UCS_OK) {
        ++n;
    }
    ASSERT_GT(n, 0);
    req.uct.func = am_req::cb;
    req.ep       = m_remote;
    req.sent     = 0;
    req.purged   = 0;
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(m_remote, &req.uct, 0));
    for (int i = 0; i < 100; ++i) {
        progress();
    }
    EXPECT_EQ(UCS_INPROGRESS, uct_iface_flush(c->iface, 0, NULL));
    EXPECT_EQ(UCS_INPROGRESS, uct_ep_flush(m_remote, 0, NULL));

    kill_peer();
    ASSERT_TRUE(wait_error(m_remote, &status));
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, status);
    EXPECT_EQ(0, req.sent);
    uct_ep_pending_purge(m_remote, am_req::purge_cb, NULL);
    EXPECT_EQ(1, req.purged);
    flush_iface(c);
    destroy_ep(m_remote);
    EXPECT_EQ(1u, m_errors.size());
    log_counter::reset();
}

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_remote_fc, UCT_DCX_POLICIES);

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_remote_flood, UCT_DCX_POLICIES);

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_remote, UCT_DCX_POLICIES);
