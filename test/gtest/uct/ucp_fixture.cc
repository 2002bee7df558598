/* SPDX-License-Identifier: BSD-3-Clause */
#include "ucp_fixture.h"
#include "test_device.h"

extern "C" {
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>
#include <ucs/debug/log_def.h>
}

#include <cstdlib>
#include <cstring>
#include <time.h>

namespace dcx_test {

double now_sec()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void use_test_device(const char *fabric)
{
    if (test_on_soft()) {
        setenv("UCX_DCX_SOFT_DEVICES", "1", 1);
        setenv("UCX_DCX_SOFT_FABRIC", fabric, 1);
    } else {
        setenv("UCX_NET_DEVICES", (test_md_name() + ":1").c_str(), 1);
    }
}

namespace {

/* the probe interface receives nothing: its tag callbacks only make it
 * ask for tag matching as UCP's does */
ucs_status_t probe_unexp_eager(void *, void *, size_t, unsigned, uct_tag_t,
                               uint64_t, void **)
{
    return UCS_OK;
}

ucs_status_t probe_unexp_rndv(void *, unsigned, uint64_t, const void *,
                              unsigned, uint64_t, size_t, const void *)
{
    return UCS_OK;
}

/* Swallows the log lines of a probe that may be refused */
ucs_log_func_rc_t probe_log_quiet(const char *, unsigned, const char *,
                                  ucs_log_level_t,
                                  const ucs_log_component_config_t *,
                                  const char *, va_list)
{
    return UCS_LOG_FUNC_RC_STOP;
}

/* The dcx interface's attributes on the test device; false when it cannot
 * be opened.  *streams: an interface with DCI_POLICY=streams opens too (the
 * device has DCI streams) */
bool query_dcx_iface(uct_iface_attr_t *attr, bool *streams)
{
    uct_component_h *comps, comp = NULL;
    unsigned num_comps, i;
    uct_component_attr_t cattr;
    uct_md_config_t *md_config;
    uct_iface_config_t *if_config;
    uct_iface_params_t params;
    ucs_async_context_t *async = NULL;
    uct_worker_h worker        = NULL;
    uct_iface_h iface          = NULL;
    uct_md_h md                = NULL;
    std::string dev            = test_md_name() + ":1";
    bool ok                    = false;

    if (uct_query_components(&comps, &num_comps) != UCS_OK) {
        return false;
    }
    for (i = 0; i < num_comps; ++i) {
        cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(comps[i], &cattr) == UCS_OK) &&
            (strcmp(cattr.name, "dcx") == 0)) {
            comp = comps[i];
        }
    }
    if ((comp != NULL) &&
        (uct_md_config_read(comp, NULL, NULL, &md_config) == UCS_OK)) {
        if (uct_md_open(comp, test_md_name().c_str(), md_config, &md) !=
            UCS_OK) {
            md = NULL;
        }
        uct_config_release(md_config);
    }
    if ((md != NULL) &&
        (ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async) ==
         UCS_OK) &&
        (uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker) == UCS_OK) &&
        (uct_md_iface_config_read(md, "dcx", NULL, NULL, &if_config) ==
         UCS_OK) &&
        (uct_config_modify(if_config, "TM_MIN_RECV", "auto") == UCS_OK)) {
        memset(&params, 0, sizeof(params));
        params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                            UCT_IFACE_PARAM_FIELD_DEVICE |
                            UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_CB |
                            UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_CB;
        params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
        params.mode.device.tl_name  = "dcx";
        params.mode.device.dev_name = dev.c_str();
        params.eager_cb             = probe_unexp_eager;
        params.rndv_cb              = probe_unexp_rndv;
        if (uct_iface_open(md, worker, &params, if_config, &iface) != UCS_OK) {
            iface = NULL;
        }
        if ((iface != NULL) &&
            (uct_config_modify(if_config, "DCI_POLICY", "streams") == UCS_OK)) {
            uct_iface_h probe;

            ucs_log_push_handler(probe_log_quiet);
            *streams = (uct_iface_open(md, worker, &params, if_config,
                                       &probe) == UCS_OK);
            ucs_log_pop_handler();
            if (*streams) {
                uct_iface_close(probe);
            }
        }
        uct_config_release(if_config);
    }
    if (iface != NULL) {
        ok = (uct_iface_query(iface, attr) == UCS_OK);
        uct_iface_close(iface);
    }
    if (worker != NULL) {
        uct_worker_destroy(worker);
    }
    if (async != NULL) {
        ucs_async_context_destroy(async);
    }
    if (md != NULL) {
        uct_md_close(md);
    }
    uct_release_component_list(comps);
    return ok;
}

} /* namespace */

const test_device_caps &test_device_query()
{
    static uct_iface_attr_t attr;
    static bool streams                = false;
    static const bool queried          = query_dcx_iface(&attr, &streams);
    static const test_device_caps caps = {
        queried && (attr.cap.flags & UCT_IFACE_FLAG_TAG_EAGER_BCOPY),
        queried && (attr.cap.event_flags & UCT_IFACE_FLAG_EVENT_RECV) &&
            (attr.cap.event_flags & UCT_IFACE_FLAG_EVENT_FD),
        queried && streams,
        queried && (attr.cap.flags & UCT_IFACE_FLAG_ATOMIC_CPU),
        queried ? attr.cap.tag.recv.min_recv : 0};

    /* every test asking fails while the device cannot be queried */
    EXPECT_TRUE(queried) << "cannot open and query the dcx interface on "
                         << test_md_name() << ":1";
    return caps;
}

void ucp_pair_test::create_peer(ucp_peer *p, uint64_t features)
{
    ucp_params_t params;
    ucp_worker_params_t wparams;
    ucp_config_t *config;
    ucp_address_t *addr;
    size_t len;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = features;
    ASSERT_EQ(UCS_OK, ucp_config_read(NULL, NULL, &config));
    ASSERT_EQ(UCS_OK, ucp_init(&params, config, &p->context));
    ucp_config_release(config);

    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    ASSERT_EQ(UCS_OK, ucp_worker_create(p->context, &wparams, &p->worker));
    ASSERT_EQ(UCS_OK, ucp_worker_get_address(p->worker, &addr, &len));
    p->address.assign((char *)addr, (char *)addr + len);
    ucp_worker_release_address(p->worker, addr);
}

void ucp_pair_test::destroy_peer(ucp_peer *p)
{
    /* a peer a skipped test never created has none */
    if (p->worker != NULL) {
        ucp_worker_destroy(p->worker);
        p->worker = NULL;
    }
    if (p->context != NULL) {
        ucp_cleanup(p->context);
        p->context = NULL;
    }
}

void ucp_pair_test::progress()
{
    ucp_worker_progress(m_a.worker);
    ucp_worker_progress(m_b.worker);
}

bool ucp_pair_test::wait_for(const std::function<bool()> &cond, double timeout)
{
    double deadline = now_sec() + ((timeout < 0) ? m_wait_timeout : timeout);

    while (!cond()) {
        if (now_sec() > deadline) {
            return false;
        }
        progress();
    }
    return true;
}

ucs_status_t ucp_pair_test::wait_req(void *req)
{
    ucs_status_t status;

    if (req == NULL) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        return UCS_PTR_STATUS(req);
    }
    wait_for([&] { return ucp_request_check_status(req) != UCS_INPROGRESS; });
    status = ucp_request_check_status(req);
    ucp_request_free(req);
    return status;
}

} /* namespace dcx_test */
