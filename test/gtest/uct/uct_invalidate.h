/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uct_ep_invalidate() (UCX's internal call that emulates a transport error)
 * for the tests, in the form the UCX version at hand takes.
 */
#ifndef DCX_TEST_UCT_INVALIDATE_H_
#define DCX_TEST_UCT_INVALIDATE_H_

#include "dcx_ucx_features.h" /* what differs between UCX versions */

extern "C" {
#include <uct/base/uct_iface.h>
#include <uct/api/v2/uct_v2.h>
}

namespace dcx_test {

/* uct_ep_invalidate() without flags or parameter fields */
inline ucs_status_t invalidate(uct_ep_h ep)
{
#if DCX_UCX_HAVE_EP_INVALIDATE_PARAMS
    uct_ep_invalidate_params_t params;

    params.field_mask = 0;
    return uct_ep_invalidate(ep, &params);
#else
    return uct_ep_invalidate(ep, 0);
#endif
}

} /* namespace dcx_test */

#endif
