/* SPDX-License-Identifier: BSD-3-Clause */
#include "ucp_fixture.h"

#include <cstring>
#include <time.h>

namespace dcx_test {

double now_sec()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
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
    ucp_worker_destroy(p->worker);
    ucp_cleanup(p->context);
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
