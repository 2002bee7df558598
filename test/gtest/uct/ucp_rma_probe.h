/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Whether the UCP these tests run on does RMA at all in the configuration
 * they run with.  UCP 1.23 (rma/rma_send.c) refuses ucp_put_nbx() and
 * ucp_get_nbx() with UCS_ERR_UNSUPPORTED when its older protocol selection
 * is chosen (UCX_PROTO_ENABLE=n), before any transport is involved; older
 * UCP does RMA either way.  The probe asks UCP itself, over the self
 * transport only (no dcx), so that a refusal by dcx can never pass for
 * UCP's: a test skips its RMA only when UCP refuses it without dcx too.
 */
#ifndef DCX_GTEST_UCP_RMA_PROBE_H_
#define DCX_GTEST_UCP_RMA_PROBE_H_

#include <ucp/api/ucp.h>

#include <cstring>

namespace dcx_test {

/* UCS_OK: UCP puts over self; UCS_ERR_UNSUPPORTED: UCP refuses RMA in
 * this configuration; another status: the probe itself failed */
inline ucs_status_t ucp_rma_probe_self()
{
    ucp_params_t params;
    ucp_worker_params_t wparams;
    ucp_ep_params_t eparams;
    ucp_mem_map_params_t mparams;
    ucp_request_param_t rparam;
    ucp_config_t *config;
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_address_t *addr;
    ucp_mem_h memh;
    ucp_rkey_h rkey;
    ucp_ep_h ep;
    void *rkey_buf, *req;
    size_t len;
    uint64_t src = 1, dst = 0;
    ucs_status_t status;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_RMA;
    status            = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK) {
        return status;
    }
    status = ucp_config_modify(config, "TLS", "self");
    if (status == UCS_OK) {
        status = ucp_init(&params, config, &context);
    }
    ucp_config_release(config);
    if (status != UCS_OK) {
        return status;
    }

    memset(&wparams, 0, sizeof(wparams));
    status = ucp_worker_create(context, &wparams, &worker);
    if (status != UCS_OK) {
        goto out_cleanup;
    }
    status = ucp_worker_get_address(worker, &addr, &len);
    if (status != UCS_OK) {
        goto out_worker;
    }
    memset(&eparams, 0, sizeof(eparams));
    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = addr;
    status             = ucp_ep_create(worker, &eparams, &ep);
    ucp_worker_release_address(worker, addr);
    if (status != UCS_OK) {
        goto out_worker;
    }

    memset(&mparams, 0, sizeof(mparams));
    mparams.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                         UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mparams.address = &dst;
    mparams.length  = sizeof(dst);
    status          = ucp_mem_map(context, &mparams, &memh);
    if (status != UCS_OK) {
        goto out_ep;
    }
    status = ucp_rkey_pack(context, memh, &rkey_buf, &len);
    if (status != UCS_OK) {
        goto out_unmap;
    }
    status = ucp_ep_rkey_unpack(ep, rkey_buf, &rkey);
    ucp_rkey_buffer_release(rkey_buf);
    if (status != UCS_OK) {
        goto out_unmap;
    }

    memset(&rparam, 0, sizeof(rparam));
    req = ucp_put_nbx(ep, &src, sizeof(src), (uintptr_t)&dst, rkey, &rparam);
    if (UCS_PTR_IS_ERR(req)) {
        status = UCS_PTR_STATUS(req);
    } else {
        while ((req != NULL) &&
               (ucp_request_check_status(req) == UCS_INPROGRESS)) {
            ucp_worker_progress(worker);
        }
        status = (req == NULL) ? UCS_OK : ucp_request_check_status(req);
        if (req != NULL) {
            ucp_request_free(req);
        }
    }
    ucp_rkey_destroy(rkey);

out_unmap:
    ucp_mem_unmap(context, memh);
out_ep:
    memset(&rparam, 0, sizeof(rparam));
    rparam.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    rparam.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    req                 = ucp_ep_close_nbx(ep, &rparam);
    while (UCS_PTR_IS_PTR(req) &&
           (ucp_request_check_status(req) == UCS_INPROGRESS)) {
        ucp_worker_progress(worker);
    }
    if (UCS_PTR_IS_PTR(req)) {
        ucp_request_free(req);
    }
out_worker:
    ucp_worker_destroy(worker);
out_cleanup:
    ucp_cleanup(context);
    return status;
}

/* True when UCP refuses RMA in this configuration on every transport */
inline bool ucp_rma_refused_by_ucp()
{
    static int result = -1;

    if (result < 0) {
        result = (ucp_rma_probe_self() == UCS_ERR_UNSUPPORTED);
    }
    return result;
}

#define DCX_UCP_RMA_SKIP_REASON                                          \
    "this UCP refuses ucp_put_nbx/ucp_get_nbx with UCS_ERR_UNSUPPORTED " \
    "over the self transport too (UCP 1.23 with UCX_PROTO_ENABLE=n)"

} /* namespace dcx_test */

#endif
