/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: flow control of the sender.  An endpoint may have fc_wnd
 * active messages unconsumed at its peer; with a quarter of the window left
 * (fc_thresh) it asks the peer for the other three quarters (FC_REQ) and
 * waits for the grant (FC_GRANT): one request and one grant per three
 * quarters of a window, where asking half-way took one per half.
 *
 * A request or its grant can be lost without the sender ever seeing an
 * error: the peer may die after it took the request and before it granted,
 * or the grant may fail on the peer's control DCI.  So while any endpoint
 * waits, a timer of the interface sends the request again every
 * FC_REQ_TIMEOUT: to a live peer that brings the grant, to a dead one it
 * fails like any other send and reaches the error handler.  Requests are
 * numbered; a grant counts only if it answers the latest request, so a
 * request sent twice is never granted twice.
 *
 * Here too is the rare path of every send (uct_dcx_ep_tx_slow, from
 * uct_dcx_ep_tx_begin): what the endpoint lacks, credits first, then a
 * DCI from the pool's policy, a free slot, its quota, and the credit
 * request when the window runs low.  The messages themselves are posted by
 * dcx_ctl.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.inl"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <ucs/time/time.h>
#include <string.h>


static unsigned uct_dcx_iface_fc_progress(void *arg);

void uct_dcx_iface_fc_init(uct_dcx_iface_t *iface,
                           const uct_dcx_iface_config_t *config)
{
    iface->fc.wnd    = config->fc_wnd;
    iface->fc.thresh = config->fc_wnd / 4;
    ucs_list_head_init(&iface->fc.waiters);
    iface->fc.req_timeout = ucs_time_from_sec(config->fc_req_timeout);
    iface->fc.next_check  = 0;
    iface->fc.cb_id       = UCS_CALLBACKQ_ID_NULL;
}

void uct_dcx_iface_fc_cleanup(uct_dcx_iface_t *iface)
{
    uct_worker_progress_unregister_safe(&iface->super.worker->super,
                                        &iface->fc.cb_id);
}

ucs_status_t uct_dcx_ep_fc_request(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    ucs_status_t status;

    uct_dcx_ep_ext_t *ext;

    ucs_assert(!(ep->flags & UCT_DCX_EP_FLAG_FC_REQ_SENT));
    status = uct_dcx_ep_ext_get(iface, ep);
    if (status != UCS_OK) {
        return status;
    }

    ext    = ep->ext;
    status = uct_dcx_ep_fc_post_req(iface, ep, (uint8_t)(ext->fc_seq + 1));
    if (status != UCS_OK) {
        return status;
    }

    ext->fc_seq++;
    ext->fc_req_time = ucs_get_time();
    ep->flags |= UCT_DCX_EP_FLAG_FC_REQ_SENT;
    if (ucs_list_is_empty(&iface->fc.waiters)) {
        iface->fc.next_check = ext->fc_req_time + iface->fc.req_timeout;
    }
    ucs_list_add_tail(&iface->fc.waiters, &ext->fc_list);
    uct_worker_progress_register_safe(&iface->super.worker->super,
                                      uct_dcx_iface_fc_progress, iface,
                                      UCS_CALLBACKQ_FLAG_FAST,
                                      &iface->fc.cb_id);
    return UCS_OK;
}

void uct_dcx_ep_fc_forget(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    if (!(ep->flags & UCT_DCX_EP_FLAG_FC_REQ_SENT)) {
        return;
    }
    ep->flags &= ~UCT_DCX_EP_FLAG_FC_REQ_SENT;
    ucs_list_del(&ep->ext->fc_list);
    if (ucs_list_is_empty(&iface->fc.waiters)) {
        uct_worker_progress_unregister_safe(&iface->super.worker->super,
                                            &iface->fc.cb_id);
    }
}

void uct_dcx_ep_fc_grant(uct_dcx_iface_t *iface, uint64_t ep_id, uint8_t seq,
                         unsigned credits)
{
    khiter_t it = kh_get(uct_dcx_eps, &iface->eps, ep_id);
    uct_dcx_ep_t *ep;

    if (it == kh_end(&iface->eps)) {
        ucs_debug("dcx: credit grant for endpoint id %" PRIu64 " which is "
                  "gone",
                  ep_id);
        return;
    }

    ep = kh_val(&iface->eps, it);
    if (!(ep->flags & UCT_DCX_EP_FLAG_FC_REQ_SENT) ||
        (seq != ep->ext->fc_seq)) {
        /* the answer to a request sent again since: the latest one's
         * grant brings the credits */
        ucs_debug("dcx: ep %p: ignored grant %u (waiting for %u: %d)", ep, seq,
                  ep->ext->fc_seq, !!(ep->flags & UCT_DCX_EP_FLAG_FC_REQ_SENT));
        return;
    }

    iface->cnt->fc.grants_recvd++;
    if (uct_dcx_ep_has_pending(ep) && (iface->dispatch_ep != ep)) {
        /* the requests queued while the ep had no credits go first */
        ep->ext->fc_held += credits;
    } else {
        ep->fc_wnd += credits;
    }
    uct_dcx_ep_fc_forget(iface, ep);
}

void uct_dcx_ep_fc_release_held(uct_dcx_ep_t *ep)
{
    if ((ep->ext != NULL) && (ep->ext->fc_held != 0)) {
        ep->fc_wnd += ep->ext->fc_held;
        ep->ext->fc_held = 0;
    }
}

/* Sends the request of ep again, if it can get a slot on a DCI now */
static void uct_dcx_ep_fc_resend(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep,
                                 ucs_time_t now)
{
    ucs_status_t status;

    if (ep->flags & UCT_DCX_EP_FLAG_FAILED) {
        return;
    }
    if ((ep->dci == UCT_DCX_DCI_NONE) &&
        (iface->policy->dci_get(iface, ep) != UCS_OK)) {
        return; /* no DCI free: at the next tick */
    }
    if (uct_dcx_ep_dci(iface, ep)->avail == 0) {
        return;
    }

    status = uct_dcx_ep_fc_post_req(iface, ep, (uint8_t)(ep->ext->fc_seq + 1));
    if (status != UCS_OK) {
        uct_dcx_ep_put_idle_dci(iface, ep);
        return;
    }
    ucs_debug("dcx: ep %p to DCT 0x%x: no grant for request %u, asked "
              "again",
              ep, ep->dctn, ep->ext->fc_seq);
    ep->ext->fc_seq++;
    ep->ext->fc_req_time = now;
}

/* Worker progress callback, registered while endpoints wait for grants */
static unsigned uct_dcx_iface_fc_progress(void *arg)
{
    uct_dcx_iface_t *iface = arg;
    ucs_time_t now         = ucs_get_time();
    ucs_time_t next;
    uct_dcx_ep_ext_t *ext;
    unsigned count = 0;

    if (ucs_likely(now < iface->fc.next_check)) {
        return 0;
    }

    next = now + iface->fc.req_timeout;
    ucs_list_for_each(ext, &iface->fc.waiters, fc_list) {
        if ((now - ext->fc_req_time) >= iface->fc.req_timeout) {
            uct_dcx_ep_fc_resend(iface, ext->ep, now);
            count++;
        }
        /* not sent again (no DCI): tried at the next tick */
        next = ucs_min(next,
                       ((now - ext->fc_req_time) >= iface->fc.req_timeout) ?
                           now + ucs_time_from_msec(1) :
                           ext->fc_req_time + iface->fc.req_timeout);
    }
    iface->fc.next_check = next;
    return count;
}


/* ---------------------------------------------------------------------------
 * Send resources: the rare path of uct_dcx_ep_tx_begin()
 * ------------------------------------------------------------------------- */

static ucs_status_t uct_dcx_ep_tx_resources(uct_dcx_iface_t *iface,
                                            uct_dcx_ep_t *ep, int is_am)
{
    ucs_status_t status;

    if (is_am && (ep->fc_wnd <= iface->fc.thresh) && (ep->ext != NULL) &&
        (ep->ext->fc_held != 0)) {
        /* granted, but held for the pending requests (uct_dcx_ep_fc_grant):
         * no second request either */
        return UCS_ERR_NO_RESOURCE;
    }
    if (is_am && (ep->fc_wnd <= 0) &&
        (ep->flags & UCT_DCX_EP_FLAG_FC_REQ_SENT)) {
        iface->cnt->fc.stalls++;
        return UCS_ERR_NO_RESOURCE; /* waiting for a grant */
    }

    if (ep->dci == UCT_DCX_DCI_NONE) {
        status = iface->policy->dci_get(iface, ep);
        if (status != UCS_OK) {
            return status;
        }
    }

    if (iface->pool.dcis[ep->dci].avail == 0) {
        return UCS_ERR_NO_RESOURCE;
    }

    if (ep->quota <= 0) {
        status = iface->policy->quota_out(iface, ep);
        if (status != UCS_OK) {
            return status;
        }
    }

    if (is_am && (ep->fc_wnd <= iface->fc.thresh)) {
        if (!(ep->flags & UCT_DCX_EP_FLAG_FC_REQ_SENT)) {
            status = uct_dcx_ep_fc_request(iface, ep);
            if (status != UCS_OK) {
                return status;
            }
        }
        if ((ep->fc_wnd <= 0) || (iface->pool.dcis[ep->dci].avail == 0)) {
            iface->cnt->fc.stalls += (ep->fc_wnd <= 0);
            return UCS_ERR_NO_RESOURCE;
        }
    }

    return UCS_OK;
}

UCS_F_NOINLINE ucs_status_t uct_dcx_ep_tx_slow(uct_dcx_iface_t *iface,
                                               uct_dcx_ep_t *ep, int is_am)
{
    ucs_status_t status;

    if (ucs_unlikely(ep->flags &
                     (UCT_DCX_EP_FLAG_FAILED | UCT_DCX_EP_FLAG_INVALIDATED))) {
        /* failed and reported: refused; invalidated, not yet reported:
         * taken and dropped, as by a queue pair in error */
        return (ep->flags & UCT_DCX_EP_FLAG_FAILED) ? UCS_ERR_CONNECTION_RESET :
                                                      UCT_DCX_TX_SINK;
    }

    status = uct_dcx_ep_tx_resources(iface, ep, is_am);
    if (status != UCS_OK) {
        /* Do not sit on an idle lent DCI while waiting for something else */
        uct_dcx_ep_put_idle_dci(iface, ep);
    }
    return status;
}
