/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport tests: what the tests of the DCI pool share (keeping a DCI
 * across sends, unsignalled sends): the pool's counters, whether the policy
 * lends DCIs, and a put queued in the pending queue.
 */
#ifndef DCX_TEST_UCT_DCI_POOL_H_
#define DCX_TEST_UCT_DCI_POOL_H_

#include "uct_fixture.h"
#include "dcx_dci_stats.h"

#include <cstring>

namespace dcx_test {

/* A put refused (no DCI, no resource), queued in the pending queue */
struct pending_put_req {
    uct_pending_req_t uct;
    uct_ep_h ep;
    uint64_t value;
    uint64_t raddr;
    uct_rkey_t rkey;
    int done;

    static ucs_status_t cb(uct_pending_req_t *self)
    {
        pending_put_req *r  = ucs_container_of(self, pending_put_req, uct);
        ucs_status_t status = uct_ep_put_short(r->ep, &r->value,
                                               sizeof(r->value), r->raddr,
                                               r->rkey);
        if (status == UCS_OK) {
            r->done++;
        }
        return status;
    }
};

/* Base: a policy-parameterised fixture (uct_dcx_policy_test or one derived
 * from it) */
template <class Base> class uct_dci_pool_test : public Base {
protected:
    /* the dcs policies lend DCIs to endpoints; rand and streams fix one per
     * ep (streams: a stream of the one DCI, which the pool counts as its
     * DCIs) */
    bool lends() const
    {
        return (this->GetParam() != "rand") && (this->GetParam() != "streams");
    }
    /* hybrid: an ep the pool has no DCI for sends on the shared DCI
     * (index NUM_DCI + 1) instead of waiting */
    bool spills() const { return this->GetParam() == "hybrid"; }

    dcx_dci_stats_t stats(entity *e)
    {
        dcx_dci_stats_t s;

        memset(&s, 0, sizeof(s));
        EXPECT_EQ(0, dcx_dci_iface_stats(e->iface, &s));
        return s;
    }
};

} // namespace dcx_test

#endif
