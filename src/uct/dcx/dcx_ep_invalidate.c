/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: endpoint invalidation (uct_iface_internal_ops_t
 * .ep_invalidate, reached through uct_ep_invalidate()).
 *
 * An invalidated endpoint behaves as if its peer had failed, as an error of
 * the transport would make it, while the peer itself is untouched:
 *  - in the call: its pending requests are no longer dispatched; the
 *    completions of its outstanding operations are taken from them (none
 *    of them completes successfully later, nor writes a fetched value to
 *    the user's buffer), and the WRs
 *    of a lent DCI that still access the user's memory are stopped by
 *    putting that DCI into error (it is recovered and goes back to the
 *    pool; a shared DCI is left alone, so the other endpoints on it lose
 *    nothing);
 *  - until then, as a queue pair in error takes WRs, every new operation
 *    on it is taken and dropped: it returns what a posted one returns
 *    (UCS_OK, the packed length of a bcopy, UCS_INPROGRESS), nothing of it
 *    reaches the peer or touches the user's buffers (a bcopy's packer is
 *    called, into a scratch buffer), and its completion joins those above
 *    (UCX's own transports do the same: test_uct_peer_failure expects a
 *    put_short right after uct_ep_invalidate() to return UCS_OK); a flush
 *    of the ep is taken the same way, whatever it follows, and the
 *    interface's flush answers UCS_INPROGRESS (iface->invalidated); a
 *    pending request is queued, and never dispatched;
 *  - at the next progress of its worker: the endpoint fails through the
 *    transport's own failure path (uct_dcx_ep_handle_failure): failed
 *    first (new operations fail from then on, UCS_ERR_CONNECTION_RESET,
 *    those a completion callback issues included), then those completions
 *    are called with UCS_ERR_ENDPOINT_TIMEOUT, then the interface's error
 *    handler gets it with UCS_ERR_ENDPOINT_TIMEOUT.  Its pending requests
 *    stay until the user purges them (uct_ep_pending_purge), as for any
 *    failed endpoint.  (As in every failure path, a completion callback
 *    must not destroy the endpoint: UCP defers its destroys.)
 * The user is called back from progress, as UCX's own transports report a
 * failure (an error completion, a timer), never from inside the call.  An
 * endpoint destroyed before that progress is simply gone: its completions
 * are called with UCS_ERR_CANCELED, as for any endpoint destroyed with
 * operations outstanding, and no error is reported for it.  Invalidating
 * an endpoint that already failed, or was already invalidated, does
 * nothing more.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.inl"

#include <ucs/debug/log.h>


static uct_worker_h uct_dcx_ep_worker(uct_dcx_iface_t *iface)
{
    return &iface->super.worker->super;
}

/* Worker progress callback of an invalidated endpoint: it fails now */
static unsigned uct_dcx_ep_invalidate_progress(void *arg)
{
    uct_dcx_ep_t *ep       = arg;
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);

    uct_worker_progress_unregister_safe(uct_dcx_ep_worker(iface),
                                        &ep->ext->invalidate_cb_id);
    ep->flags &= ~UCT_DCX_EP_FLAG_INVALIDATED;
    iface->invalidated--;
    if (ep->flags & UCT_DCX_EP_FLAG_FAILED) {
        return 1; /* a real failure came first, and was reported */
    }

    ucs_debug("dcx: %s: ep %p to DCT 0x%x: failing it, as invalidated",
              dcx_dev_name(iface->dev), ep, ep->dctn);
    /* as any failure: the ep is failed first (an operation a completion
     * callback issues on it is refused), its operations complete (those
     * taken since the invalidation with the others:
     * uct_dcx_ep_invalidate_fail_taken), then the error handler, which may
     * destroy ep: not touched after this */
    iface->ep_failed(iface, ep, UCS_ERR_ENDPOINT_TIMEOUT, DCX_WC_WR_FLUSH_ERR);
    return 1;
}

ucs_status_t uct_dcx_ep_invalidate(uct_ep_h tl_ep, unsigned flags)
{
    uct_dcx_ep_t *ep       = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);
    uct_dcx_ep_ext_t *ext;
    ucs_status_t status;

    if (flags != 0) {
        ucs_error("dcx: %s: ep_invalidate: flags 0x%x not supported (none "
                  "is defined)",
                  dcx_dev_name(iface->dev), flags);
        return UCS_ERR_INVALID_PARAM;
    }

    if (ep->flags & (UCT_DCX_EP_FLAG_FAILED | UCT_DCX_EP_FLAG_INVALIDATED)) {
        return UCS_OK; /* its failure is reported, or about to be */
    }

    /* what the progress callback needs lives with the ep's rarely used
     * state */
    status = uct_dcx_ep_ext_get(iface, ep);
    if (status != UCS_OK) {
        return status;
    }

    ucs_debug("dcx: %s: ep %p to DCT 0x%x invalidated",
              dcx_dev_name(iface->dev), ep, ep->dctn);
    ext = ep->ext;
    ep->flags |= UCT_DCX_EP_FLAG_INVALIDATED;
    iface->invalidated++;
    /* No quota: every send leaves the fast path for uct_dcx_ep_tx_slow(),
     * which refuses it for the flag (nothing gives quota back before the
     * flag is seen there) */
    ep->quota = 0;

    if ((ep->dci != UCT_DCX_DCI_NONE) &&
        uct_dcx_dci_take_ep_comps(iface, uct_dcx_ep_dci(iface, ep), ep,
                                  &ext->invalidate_comps) &&
        !uct_dcx_dci_is_shared(iface, uct_dcx_ep_dci(iface, ep))) {
        uct_dcx_dci_set_error(iface, uct_dcx_ep_dci(iface, ep));
    }

    ext->invalidate_cb_id = UCS_CALLBACKQ_ID_NULL;
    uct_worker_progress_register_safe(uct_dcx_ep_worker(iface),
                                      uct_dcx_ep_invalidate_progress, ep, 0,
                                      &ext->invalidate_cb_id);
    return UCS_OK;
}

void uct_dcx_ep_invalidate_cleanup(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    if (!(ep->flags & UCT_DCX_EP_FLAG_INVALIDATED)) {
        return;
    }

    /* destroyed before its failure was reported: never reported */
    uct_worker_progress_unregister_safe(uct_dcx_ep_worker(iface),
                                        &ep->ext->invalidate_cb_id);
    ep->flags &= ~UCT_DCX_EP_FLAG_INVALIDATED;
    iface->invalidated--;
    uct_dcx_comps_complete(&ep->ext->invalidate_comps, UCS_ERR_CANCELED);
}

/* ep failed (uct_dcx_ep_handle_failure, the flag set): the operations it
 * took since an invalidation, and those outstanding at it, complete with
 * status, from a queue of their own (a callback may touch ep's) */
void uct_dcx_ep_invalidate_fail_taken(uct_dcx_ep_t *ep, ucs_status_t status)
{
    ucs_queue_head_t comps;

    if ((ep->ext == NULL) || ucs_queue_is_empty(&ep->ext->invalidate_comps)) {
        return;
    }
    ucs_queue_head_init(&comps);
    ucs_queue_splice(&comps, &ep->ext->invalidate_comps);
    uct_dcx_comps_complete(&comps, status);
}

/* uct_dcx_ep_tx_refused() for UCT_DCX_TX_SINK: the operation is taken */
ucs_status_t uct_dcx_ep_tx_sink(uct_dcx_ep_t *ep, uct_completion_t *comp,
                                ucs_status_t taken)
{
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);

    if (comp == NULL) {
        return taken;
    }

    /* queued with the outstanding ones uct_dcx_dci_take_ep_comps() took:
     * completed with them when the failure is reported */
    if (uct_dcx_comps_push(iface, &ep->ext->invalidate_comps, comp) != UCS_OK) {
        ucs_error("dcx: %s: ep %p to DCT 0x%x (invalidated): out of memory "
                  "taking an operation",
                  dcx_dev_name(iface->dev), ep, ep->dctn);
        return UCS_ERR_NO_MEMORY;
    }
    return UCS_INPROGRESS;
}

/* uct_dcx_ep_bcopy_refused() for UCT_DCX_TX_SINK: the data is packed into a
 * send buffer given back at once */
ssize_t uct_dcx_ep_bcopy_sink(uct_dcx_iface_t *iface,
                              uct_pack_callback_t pack_cb, void *arg)
{
    uct_dcx_send_desc_t *desc = uct_dcx_iface_get_desc(iface);
    size_t length;

    if (desc == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    length = pack_cb(uct_dcx_desc_data(desc), arg);
    ucs_mpool_put_inline(desc);
    return length;
}
