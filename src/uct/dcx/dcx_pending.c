/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: the pending queue of an endpoint.
 *
 * The user's requests wait in a queue of the endpoint (linked through their
 * priv space); the interface's arbiter schedules endpoints, each through one
 * element of its own.  So the arbiter never holds the user's memory: an
 * endpoint destroyed with requests the user did not purge (against the UCT
 * contract, which asks for uct_ep_pending_purge first) drops them without
 * reading them, whatever the user did with that memory since.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.inl"

#include <ucs/debug/log.h>


static UCS_F_ALWAYS_INLINE ucs_queue_elem_t *
uct_dcx_pending_elem(uct_pending_req_t *req)
{
    UCS_STATIC_ASSERT(sizeof(ucs_queue_elem_t) <= UCT_PENDING_REQ_PRIV_LEN);
    return (ucs_queue_elem_t *)req->priv;
}

static UCS_F_ALWAYS_INLINE uct_pending_req_t *
uct_dcx_pending_head(uct_dcx_ep_t *ep)
{
    return ucs_container_of(ucs_queue_head_elem_non_empty(&ep->ext->pending_q,
                                                          ucs_queue_elem_t,
                                                          next),
                            uct_pending_req_t, priv);
}

void uct_dcx_ep_pending_init(uct_dcx_ep_t *ep)
{
    ep->ext = NULL;
}

ucs_status_t uct_dcx_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                    unsigned flags)
{
    uct_dcx_ep_t *ep       = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);
    uct_dcx_ep_ext_t *ext;
    ucs_status_t status;

    /* Busy if the ep could send right now (nobody ahead of it): on its DCI,
     * or, with none (dcs, dcs_quota), on one the pool gives it at once, as
     * UCX's dc does (an ep that never sent is busy, not queued).  Not while
     * a strided operation waits for a key (strided.key_wait): what it
     * waits for is no DCI slot, and a caller told "busy" would retry at
     * once, without the progress call that brings the key. */
    if (!(ep->flags & UCT_DCX_EP_FLAG_FAILED) && !iface->strided.key_wait &&
        ucs_arbiter_is_empty(&iface->arbiter) &&
        ((ep->dci != UCT_DCX_DCI_NONE) ?
             ((iface->pool.dcis[ep->dci].avail > 0) && (ep->quota > 0)) :
             ((iface->pool.free_top > 0) ||
              (iface->pool.created < iface->pool.limit))) &&
        (ep->fc_wnd > 0) &&
        ((ep->fc_wnd > iface->fc.thresh) ||
         (ep->flags & UCT_DCX_EP_FLAG_FC_REQ_SENT))) {
        return UCS_ERR_BUSY;
    }

    status = uct_dcx_ep_ext_get(iface, ep);
    if (status != UCS_OK) {
        return status;
    }

    ext = ep->ext;
    ucs_queue_push(&ext->pending_q, uct_dcx_pending_elem(req));
    if (iface->dispatch_ep != ep) {
        /* (while ep is being dispatched, its element stays scheduled as
         * long as requests remain) */
        if (ucs_arbiter_group_is_empty(&ext->arb_group)) {
            ucs_arbiter_group_push_elem(&ext->arb_group, &ext->arb_elem);
        }
        ucs_arbiter_group_schedule(&iface->arbiter, &ext->arb_group);
    }
    UCT_TL_EP_STAT_PEND(&ep->super);
    return UCS_OK;
}

ucs_arbiter_cb_result_t uct_dcx_ep_dispatch_cb(ucs_arbiter_t *arbiter,
                                               ucs_arbiter_group_t *group,
                                               ucs_arbiter_elem_t *elem,
                                               void *arg)
{
    uct_dcx_iface_t *iface = arg;
    uct_dcx_ep_t *ep = ucs_container_of(elem, uct_dcx_ep_ext_t, arb_elem)->ep;
    uct_pending_req_t *req;
    ucs_status_t status;

    if (ep->flags & (UCT_DCX_EP_FLAG_FAILED | UCT_DCX_EP_FLAG_INVALIDATED)) {
        /* the requests stay until the user purges them */
        return UCS_ARBITER_CB_RESULT_DESCHED_GROUP;
    }
    /* the credits a grant brought are the ep's now: its requests go first */
    uct_dcx_ep_fc_release_held(ep);
    if (ucs_queue_is_empty(&ep->ext->pending_q)) {
        return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
    }

    /* Cheap test before calling the request: a DCI with room.  DCIs are
     * given back only while progressing, and pending endpoints are
     * dispatched at the end of the same progress call: they get a freed
     * DCI before any new sender can ask for it. */
    status = uct_dcx_ep_tx_begin(iface, ep, 0);
    if (status != UCS_OK) {
        return UCS_ARBITER_CB_RESULT_RESCHED_GROUP;
    }

    /* req leaves the queue before it runs: once func returns UCS_OK the
     * request is the user's (freed, reused, added again to this or another
     * queue inside func) and is not read again.  Any other answer keeps it
     * first in line (a purge inside func does not see it).  The requests
     * behind req came after it: a flush that req issues on ep is not
     * refused for them (dispatch_ep). */
    req = uct_dcx_pending_head(ep);
    ucs_queue_pull_non_empty(&ep->ext->pending_q);
    iface->dispatch_ep = ep;
    status             = req->func(req);
    iface->dispatch_ep = NULL;
    if (status != UCS_OK) {
        ucs_queue_push_head(&ep->ext->pending_q, uct_dcx_pending_elem(req));
    }

    /* The DCI was taken for the request; one that posted nothing (a flush,
     * or a refusal) must not keep it, since no completion would return it */
    uct_dcx_ep_put_idle_dci(iface, ep);

    if (ucs_queue_is_empty(&ep->ext->pending_q)) {
        return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
    } else if ((status == UCS_OK) || (status == UCS_INPROGRESS)) {
        return UCS_ARBITER_CB_RESULT_NEXT_GROUP;
    }
    return UCS_ARBITER_CB_RESULT_RESCHED_GROUP;
}

static ucs_arbiter_cb_result_t
uct_dcx_ep_unschedule_cb(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
                         ucs_arbiter_elem_t *elem, void *arg)
{
    return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
}

/* Takes ep's own element out of the arbiter (touches no request) */
static void uct_dcx_ep_unschedule(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    if ((ep->ext != NULL) && !ucs_arbiter_group_is_empty(&ep->ext->arb_group)) {
        ucs_arbiter_group_purge(&iface->arbiter, &ep->ext->arb_group,
                                uct_dcx_ep_unschedule_cb, NULL);
    }
}

void uct_dcx_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                              void *arg)
{
    uct_dcx_ep_t *ep       = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);
    uct_pending_req_t *req;

    /* Each request leaves the queue before the callback, which may free it
     * or add requests again (those are purged too: the user asked for an
     * empty queue) */
    while (uct_dcx_ep_has_pending(ep)) {
        req = uct_dcx_pending_head(ep);
        ucs_queue_pull_non_empty(&ep->ext->pending_q);
        if (cb != NULL) {
            cb(req, arg);
        } else {
            ucs_debug("dcx: ep %p: purged pending request %p", ep, req);
        }
    }

    if (iface->dispatch_ep != ep) {
        /* (while dispatched, the dispatcher sees the queue empty) */
        uct_dcx_ep_unschedule(iface, ep);
    }
    /* nothing is left to go first */
    uct_dcx_ep_fc_release_held(ep);
}

void uct_dcx_ep_pending_cleanup(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    if (ep->ext == NULL) {
        return;
    }
    if (!ucs_queue_is_empty(&ep->ext->pending_q)) {
        /* The user did not purge them and may have freed them since: the
         * queue is dropped unread */
        ucs_warn("dcx: %s: ep %p destroyed with pending requests it was not "
                 "asked to purge; they are dropped",
                 dcx_dev_name(iface->dev), ep);
        ucs_queue_head_init(&ep->ext->pending_q);
    }
    uct_dcx_ep_unschedule(iface, ep);
    ucs_arbiter_group_cleanup(&ep->ext->arb_group);
}
