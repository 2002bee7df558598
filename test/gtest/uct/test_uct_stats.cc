/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: the counters an interface keeps (DCI pool, flow control,
 * failures, tag matching) and their live file (UCX_DCX_STATS_DIR), read
 * by name as contrib/dcx-stat reads them.  The file shows what the
 * introspection calls of dcx_dci_stats.h show, while the interface runs
 * and after it closed.
 */
#include "uct_dci_pool.h"
#include "dcx_stat_file.h"
#include "dcx_strided_stats.h"

#include <cstdlib>
#include <unistd.h>

using namespace dcx_test;

namespace {

const uint8_t AM_ID = 7;

} // namespace

class uct_dcx_stats : public uct_dci_pool_test<uct_dcx_policy_test> {
protected:
    virtual void TearDown()
    {
        uct_dci_pool_test<uct_dcx_policy_test>::TearDown();
        if (m_creates_at_close != UINT64_MAX) {
            /* the interfaces are closed: their files stay, final */
            unsigned files;
            EXPECT_EQ(m_creates_at_close, file("dci.creates", &files));
            EXPECT_EQ(2u, files);
        }
    }

    /* a sends to b; both keep their counters in m_stats; a has a pool of
     * two DCIs and b grants credits four at a time */
    void setup()
    {
        std::map<std::string, std::string> cfg;

        ASSERT_FALSE(m_stats.path().empty());
        cfg["STATS_DIR"] = m_stats.path();
        cfg["NUM_DCI"]   = "2";
        cfg["FC_WND"]    = "4";
        m_a              = create_entity(cfg);
        m_b              = create_entity(cfg);
        ASSERT_TRUE((m_a != NULL) && (m_b != NULL));
        m_rx = 0;
        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_b->iface, AM_ID,
                                                   am_count_cb, &m_rx, 0));
    }

    uint64_t file(const char *name, unsigned *files = NULL)
    {
        return m_stats.sum(name, files);
    }

    dcx_stat_dir m_stats;
    uint64_t m_creates_at_close = UINT64_MAX; /* checked after TearDown */
    entity *m_a, *m_b;
    int m_rx;
};

/* The pool's and flow control's counters, live, equal what the
 * introspection calls report */
TEST_P(uct_dcx_stats, file_shows_pool_and_flow_control)
{
    std::vector<uct_ep_h> eps;
    unsigned files;

    ASSERT_NO_FATAL_FAILURE(setup());
    file("dci.num_dci", &files);
    EXPECT_EQ(2u, files);
    EXPECT_EQ(4u, file("dci.num_dci")); /* 2 + 2 */
    EXPECT_EQ(0u, file("dci.created"));

    /* four eps with work in flight at once: two DCIs; under dcs two eps
     * wait */
    for (int i = 0; i < 4; ++i) {
        eps.push_back(connect(m_a, m_b));
        uct_ep_am_short(eps.back(), AM_ID, 0, NULL, 0);
    }
    dcx_dci_stats_t s = stats(m_a);
    EXPECT_EQ(2u, file("dci.created"));
    /* (hybrid: and the shared DCI, where the other two eps send) */
    EXPECT_EQ(spills() ? 3u : 2u, file("dci.creates"));
    EXPECT_EQ(2u, file("dci.high_water"));
    EXPECT_EQ(s.refusals, file("dci.waits"));
    EXPECT_EQ(s.waiters, file("dci.waiters"));
    EXPECT_EQ(s.shared_wrs, file("dci.shared_wrs"));
    if (spills()) {
        EXPECT_EQ(0u, s.refusals);
        EXPECT_EQ(2u, s.shared_wrs);
        EXPECT_EQ(2u, file("dci.in_use"));
    } else if (lends()) {
        EXPECT_EQ(2u, s.refusals);
        EXPECT_EQ(2u, file("dci.in_use"));
    }

    /* one ep sends past its credits: requests and grants */
    for (int i = 0; i < 40; ++i) {
        ASSERT_TRUE(wait_for([&] {
            return uct_ep_am_short(eps[0], AM_ID, i, NULL, 0) == UCS_OK;
        }));
    }
    for (uct_ep_h ep : eps) {
        ASSERT_TRUE(wait_for([&] {
            return uct_ep_am_short(ep, AM_ID, 0, NULL, 0) == UCS_OK;
        }));
        flush_ep(ep);
    }
    ASSERT_TRUE(wait_for([&] { return m_rx >= 44 + 2; }));

    dcx_fc_stats_t fa, fb;
    ASSERT_EQ(0, dcx_fc_iface_stats(m_a->iface, &fa));
    ASSERT_EQ(0, dcx_fc_iface_stats(m_b->iface, &fb));
    EXPECT_GT(fa.reqs_sent, 0u);
    EXPECT_GT(fa.grants_recvd, 0u);
    EXPECT_GT(fb.grants_sent, 0u);
    EXPECT_EQ(fa.reqs_sent + fb.reqs_sent, file("fc.reqs_sent"));
    EXPECT_EQ(fa.grants_recvd + fb.grants_recvd, file("fc.grants_recvd"));
    EXPECT_EQ(fa.grants_sent + fb.grants_sent, file("fc.grants_sent"));
    EXPECT_EQ(fa.stalls + fb.stalls, file("fc.stalls"));

    s = stats(m_a);
    EXPECT_EQ(s.gets + stats(m_b).gets, file("dci.gets"));
    if (lends() && !spills()) {
        EXPECT_GT(s.wait_ns, 0u);
    } else if (spills()) {
        EXPECT_EQ(0u, s.wait_ns); /* sending on the shared DCI is no wait */
    }
    EXPECT_EQ(0u, file("dci.errors"));
    EXPECT_EQ(0u, file("dci.ep_failures"));
    EXPECT_EQ(0, log_counter::errors());
}

/* An error completion and the failed ep are counted; the file keeps the
 * final figures after the interfaces closed */
TEST_P(uct_dcx_stats, failures_counted_file_stays)
{
    mem m;

    ASSERT_NO_FATAL_FAILURE(setup());
    m          = alloc_mem(4096);
    uct_ep_h e = connect(m_a, m_b);
    uint64_t v = 1;
    ASSERT_EQ(UCS_OK,
              uct_ep_put_short(e, &v, sizeof(v), (uintptr_t)m.ptr, m.rkey));
    flush_ep(e);

    ASSERT_EQ(0, inject_error_completion(DCX_WR_RDMA_WRITE, DCX_WC_REM_OP_ERR));
    ASSERT_EQ(UCS_OK,
              uct_ep_put_short(e, &v, sizeof(v), (uintptr_t)m.ptr, m.rkey));
    ASSERT_TRUE(wait_for([&] { return !m_errors.empty(); }));
    dcx_soft_fault_clear(device());
    EXPECT_EQ(1u, file("dci.errors"));
    EXPECT_EQ(1u, file("dci.ep_failures"));
    EXPECT_EQ(1u, stats(m_a).ep_failures);
    log_counter::reset();

    m_creates_at_close = file("dci.creates");
    EXPECT_GT(m_creates_at_close, 0u);
}

/* A directory that cannot take the file: the interface opens, one warning
 * names the path, the counters are still kept */
TEST_P(uct_dcx_stats, unwritable_dir_bad_flow)
{
    std::map<std::string, std::string> cfg;

    cfg["STATS_DIR"] = m_stats.path() + "/no/such/dir";
    log_counter::reset();
    entity *a = create_entity(cfg);
    entity *b = create_entity();
    ASSERT_TRUE((a != NULL) && (b != NULL));
    EXPECT_EQ(0, log_counter::errors());
    EXPECT_EQ(1, log_counter::warnings()) << log_counter::joined();
    EXPECT_TRUE(log_counter::contains(m_stats.path() + "/no/such/dir"));

    int rx = 0;
    ASSERT_EQ(UCS_OK,
              uct_iface_set_am_handler(b->iface, AM_ID, am_count_cb, &rx, 0));
    uct_ep_h ep = connect(a, b);
    ASSERT_EQ(UCS_OK, uct_ep_am_short(ep, AM_ID, 0, NULL, 0));
    flush_ep(ep);
    ASSERT_TRUE(wait_for([&] { return rx == 1; }));
    EXPECT_EQ(1u, stats(a).created);
    log_counter::reset();
}

/* Two interfaces of one process whose DCTs have the same number -- two
 * opens of the device (UCP opens one per worker) or two devices, each
 * numbering its own queue pairs -- keep a file each: before, the second
 * truncated and shared the first's, so each counted into both. */
TEST_P(uct_dcx_stats, same_dct_number_file_each)
{
    std::map<std::string, std::string> cfg;
    uct_md_config_t *md_config;
    uct_md_h md2;
    unsigned files;

    cfg["STATS_DIR"] = m_stats.path();
    cfg["NUM_DCI"]   = "2";
    entity *a        = create_entity(cfg);
    ASSERT_TRUE(a != NULL);

    ASSERT_EQ(UCS_OK, uct_md_config_read(m_component, NULL, NULL, &md_config));
    ucs_status_t status = uct_md_open(m_component, test_md_name().c_str(),
                                      md_config, &md2);
    uct_config_release(md_config);
    ASSERT_EQ(UCS_OK, status);
    std::swap(m_md, md2); /* the next entity on the second open */
    cfg["NUM_DCI"] = "3";
    entity *c      = create_entity(cfg);
    std::swap(m_md, md2);
    ASSERT_TRUE(c != NULL);
    /* the collision this test is about: the same DCT number (each open of
     * a soft device numbers its queue pairs from the same base; the
     * emulated ConnectX numbers them across the process) */
    if (test_on_soft()) {
        ASSERT_EQ(a->iface_addr, c->iface_addr);
    }

    EXPECT_EQ(5u, file("dci.num_dci", &files)); /* 2 + 3, not 3 + 3 */
    EXPECT_EQ(2u, files);

    /* c closes; a's file keeps counting a alone */
    uct_iface_close(c->iface);
    uct_worker_destroy(c->worker);
    m_entities.erase(std::find(m_entities.begin(), m_entities.end(), c));
    delete c;
    uct_md_close(md2);
    EXPECT_EQ(5u, file("dci.num_dci", &files));
    EXPECT_EQ(2u, files);
}

/* The introspection calls (dcx_diag.c) answer for a dcx interface and its
 * endpoints, and refuse anything else: no interface, or an interface and
 * endpoint of one of UCX's own transports (self) */
TEST_P(uct_dcx_stats, diag_refuses_other_transports)
{
    uct_component_h *comps;
    unsigned n;
    uct_md_h self_md = NULL;
    uct_md_config_t *md_config;
    uct_iface_config_t *if_config;
    uct_iface_params_t params;
    uct_iface_h self_iface;
    uct_worker_h worker;
    uct_ep_params_t ep_params;
    uct_ep_h self_ep;
    uct_iface_attr_t attr;
    std::vector<char> dev_addr, if_addr;
    dcx_dci_stats_t dci;
    dcx_fc_stats_t fc;
    dcx_rx_stats_t rx;
    dcx_strided_stats_t strided;
    entity *a = create_entity();

    EXPECT_EQ(0, dcx_dci_iface_stats(a->iface, &dci));
    EXPECT_EQ(0, dcx_fc_iface_stats(a->iface, &fc));
    EXPECT_EQ(0, dcx_rx_iface_stats(a->iface, &rx));
    EXPECT_EQ(0, dcx_strided_iface_stats(a->iface, &strided));
    EXPECT_EQ(-1, dcx_dci_iface_stats(NULL, &dci));
    EXPECT_EQ(-1, dcx_fc_iface_stats(NULL, &fc));
    EXPECT_EQ(-1, dcx_rx_iface_stats(NULL, &rx));
    EXPECT_EQ(-1, dcx_strided_iface_stats(NULL, &strided));
    EXPECT_EQ(-2, dcx_dci_ep_index(NULL));

    ASSERT_EQ(UCS_OK, uct_query_components(&comps, &n));
    for (unsigned i = 0; i < n; ++i) {
        uct_component_attr_t cattr;
        cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        ASSERT_EQ(UCS_OK, uct_component_query(comps[i], &cattr));
        if (!strcmp(cattr.name, "self")) {
            ASSERT_EQ(UCS_OK,
                      uct_md_config_read(comps[i], NULL, NULL, &md_config));
            ASSERT_EQ(UCS_OK,
                      uct_md_open(comps[i], "self", md_config, &self_md));
            uct_config_release(md_config);
        }
    }
    uct_release_component_list(comps);
    ASSERT_TRUE(self_md != NULL);

    ASSERT_EQ(UCS_OK,
              uct_worker_create(m_async, UCS_THREAD_MODE_SINGLE, &worker));
    ASSERT_EQ(UCS_OK, uct_md_iface_config_read(self_md, "self", NULL, NULL,
                                               &if_config));
    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                        UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "self";
    params.mode.device.dev_name = "memory";
    ASSERT_EQ(UCS_OK,
              uct_iface_open(self_md, worker, &params, if_config, &self_iface));
    uct_config_release(if_config);

    ASSERT_EQ(UCS_OK, uct_iface_query(self_iface, &attr));
    dev_addr.resize(attr.device_addr_len + 1);
    if_addr.resize(attr.iface_addr_len + 1);
    ASSERT_EQ(UCS_OK,
              uct_iface_get_device_address(self_iface, (uct_device_addr_t *)
                                                           dev_addr.data()));
    ASSERT_EQ(UCS_OK,
              uct_iface_get_address(self_iface,
                                    (uct_iface_addr_t *)if_addr.data()));
    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                           UCT_EP_PARAM_FIELD_DEV_ADDR |
                           UCT_EP_PARAM_FIELD_IFACE_ADDR;
    ep_params.iface      = self_iface;
    ep_params.dev_addr   = (const uct_device_addr_t *)dev_addr.data();
    ep_params.iface_addr = (const uct_iface_addr_t *)if_addr.data();
    ASSERT_EQ(UCS_OK, uct_ep_create(&ep_params, &self_ep));

    EXPECT_EQ(-1, dcx_dci_iface_stats(self_iface, &dci));
    EXPECT_EQ(-1, dcx_fc_iface_stats(self_iface, &fc));
    EXPECT_EQ(-1, dcx_rx_iface_stats(self_iface, &rx));
    EXPECT_EQ(-1, dcx_strided_iface_stats(self_iface, &strided));
    EXPECT_EQ(-2, dcx_dci_ep_index(self_ep));

    uct_ep_destroy(self_ep);
    uct_iface_close(self_iface);
    uct_worker_destroy(worker);
    uct_md_close(self_md);
}

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_stats, UCT_DCX_POLICIES);
