/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: the hybrid DCI policy.
 *
 * As dcs_quota, an endpoint borrows a DCI of the pool (NUM_DCI of them)
 * while it has work in flight.  When none can be lent -- none free, none
 * kept idle by another endpoint, the pool at NUM_DCI -- the endpoint does
 * not wait: it sends on one more DCI, the shared DCI (dcis[num_dci + 1],
 * created the first time the pool runs dry), with the other endpoints the
 * pool could not serve.  At each send there (its quota on the shared DCI
 * is one send) it looks for a DCI of its own again, and moves to one only
 * once everything it posted on the shared DCI completed: an endpoint's
 * WRs are never on two DCIs at once, so they execute in the order posted.
 * (The other way round, an endpoint has no DCI -- and so nothing in flight
 * -- when it is sent to the shared DCI: the dcs policies take a DCI from
 * its endpoint only once it drained.)
 *
 * While endpoints send on the shared DCI the pool works as when endpoints
 * wait for a DCI under dcs: every WR is signalled and a lent DCI goes back
 * to the pool as soon as it drains, so that the endpoints on the shared DCI
 * find one (uct_dcx_dci_set_spill).  That lasts until the shared DCI
 * drains.
 *
 * The shared DCI keeps a copy of the WRs in flight, as rand's DCIs do: a
 * WR to a dead peer that fails there stops the DCI, which is recovered;
 * the failing endpoint fails, and the WRs of the other endpoints flushed
 * with it are posted again (uct_dcx_dci_handle_error), so that only the
 * endpoints of the dead peer see the failure.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.inl"

#include <ucs/debug/log.h>


void uct_dcx_hybrid_ep_init(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    ep->dci   = UCT_DCX_DCI_NONE;
    ep->quota = INT32_MAX;
}

static UCS_F_ALWAYS_INLINE uct_dcx_dci_t *
uct_dcx_hybrid_shared(uct_dcx_iface_t *iface)
{
    return &iface->pool.dcis[iface->pool.shared];
}

/* The pool has no DCI for ep: the shared DCI, or, if it cannot be had
 * (the device refused it), a wait as under dcs */
static ucs_status_t uct_dcx_hybrid_join(uct_dcx_iface_t *iface,
                                        uct_dcx_ep_t *ep)
{
    uct_dcx_dci_t *dci = uct_dcx_hybrid_shared(iface);

    if (ucs_unlikely(dci->qp == NULL) &&
        (uct_dcx_dci_create_shared(iface) != UCS_OK)) {
        return uct_dcx_dcs_dci_refuse(iface, ep);
    }
    if (ucs_unlikely(dci->flags & UCT_DCX_DCI_FLAG_BROKEN)) {
        return uct_dcx_dcs_dci_refuse(iface, ep);
    }

    uct_dcx_dci_set_spill(iface, 1);
    ep->dci     = dci->index;
    ep->last_sn = dci->sn; /* nothing of this ep is in flight there */
    ep->quota   = 1;       /* the next send looks for a DCI again */
    ucs_trace("dcx: ep %p sends on the shared DCI", ep);
    return UCS_OK;
}

ucs_status_t uct_dcx_hybrid_dci_get(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    uct_dcx_dci_t *dci;

    if (iface->pool.spill && (ep->quota <= 0)) {
        /* it used up its quota on the DCI it gave back for the eps on the
         * shared DCI: it joins them rather than taking that DCI again */
        return uct_dcx_hybrid_join(iface, ep);
    }

    dci = uct_dcx_dcs_dci_take(iface, ep);
    if (dci != NULL) {
        uct_dcx_dcs_dci_assign(iface, ep, dci);
        return UCS_OK;
    }
    return uct_dcx_hybrid_join(iface, ep);
}

/* The shared DCI drained while the pool still counts endpoints on it (the
 * send that set the spill was refused after all): they are not there */
static void uct_dcx_hybrid_spill_check(uct_dcx_iface_t *iface)
{
    if (iface->pool.spill &&
        uct_dcx_dci_is_drained(uct_dcx_hybrid_shared(iface))) {
        uct_dcx_dci_set_spill(iface, 0);
    }
}

ucs_status_t uct_dcx_hybrid_quota_out(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    uct_dcx_dci_t *shared = uct_dcx_hybrid_shared(iface);
    uct_dcx_dci_t *dci;

    if (ep->dci != iface->pool.shared) {
        /* A DCI of its own: as under dcs_quota, it yields it when others
         * want one -- here, while eps send on the shared DCI, even if a
         * DCI is free: those eps take one only once their WRs on the
         * shared DCI completed, and an ep that never yields would outrun
         * them.  It refuses sends until the DCI drained and went back to
         * the pool, then sends on the shared DCI (uct_dcx_hybrid_dci_get) */
        uct_dcx_hybrid_spill_check(iface);
        if (iface->pool.spill) {
            return UCS_ERR_NO_RESOURCE;
        }
        ep->quota = iface->config.quota;
        return UCS_OK;
    }

    /* On the shared DCI: a DCI of its own once everything it posted here
     * completed (before that, its next WRs must follow them here) */
    if ((ep->last_sn <= shared->done_sn) &&
        ((dci = uct_dcx_dcs_dci_take(iface, ep)) != NULL)) {
        ucs_trace("dcx: ep %p leaves the shared DCI for DCI %u", ep,
                  dci->index);
        ep->dci = UCT_DCX_DCI_NONE;
        uct_dcx_dcs_dci_assign(iface, ep, dci);
        uct_dcx_hybrid_spill_check(iface);
        return UCS_OK;
    }

    uct_dcx_dci_set_spill(iface, 1);
    ep->quota = 1;
    return UCS_OK;
}

void uct_dcx_hybrid_dci_idle(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci)
{
    if (dci->index == iface->pool.shared) {
        /* nothing in flight on the shared DCI: nobody sends there now (an
         * ep still pointing at it looks for a DCI at its next send) */
        uct_dcx_dci_set_spill(iface, 0);
        return;
    }
    uct_dcx_dcs_dci_idle(iface, dci);
    uct_dcx_hybrid_spill_check(iface);
}

void uct_dcx_hybrid_ep_detach(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    if (ep->dci != iface->pool.shared) {
        uct_dcx_dcs_ep_detach(iface, ep);
        return;
    }

    /* its WRs still in flight there complete without it (a failure of
     * one is matched by destination: uct_dcx_dci_wr_failed) */
    uct_dcx_dci_detach_ep(iface, uct_dcx_hybrid_shared(iface), ep);
    ep->dci = UCT_DCX_DCI_NONE;
}
