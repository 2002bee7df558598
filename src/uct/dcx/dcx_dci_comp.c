/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: what happens to the WRs a DCI posted: send completions
 * (retiring WRs, firing their operations, a drained DCI going back to its
 * policy), error completions and the recovery of a DCI (with the replay of
 * a shared DCI's WRs that did not fail, from the WR log dcx_dci.c keeps),
 * cancel, and the completion of an endpoint's operations when it goes away
 * or fails.  The pool and its policies are in dcx_dci.c; a failed
 * endpoint is reported through iface->ep_failed.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.inl"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <string.h>


/* Fires the operations of dci numbered up to sn (rare path: most WRs of a
 * short send carry none) */
UCS_F_NOINLINE void uct_dcx_dci_fire_ops(uct_dcx_iface_t *iface,
                                         uct_dcx_dci_t *dci, uint64_t sn,
                                         ucs_status_t status)
{
    uct_dcx_op_t *op;

    do {
        op = ucs_queue_head_elem_non_empty(&dci->ops, uct_dcx_op_t, queue);
        if (op->sn > sn) {
            break;
        }
        ucs_queue_pull_non_empty(&dci->ops);
        uct_dcx_op_complete(iface, op, status);
    } while (!ucs_queue_is_empty(&dci->ops));
}

static const char *uct_dcx_wr_opcode_names[] = {
    [DCX_WR_SEND]                = "send",
    [DCX_WR_SEND_IMM]            = "send with immediate",
    [DCX_WR_RDMA_WRITE]          = "RDMA write",
    [DCX_WR_RDMA_WRITE_IMM]      = "RDMA write with immediate",
    [DCX_WR_RDMA_READ]           = "RDMA read",
    [DCX_WR_ATOMIC_FADD]         = "atomic fetch-add",
    [DCX_WR_ATOMIC_CSWAP]        = "atomic compare-swap",
    [DCX_WR_ATOMIC_MASKED_FADD]  = "masked atomic fetch-add",
    [DCX_WR_ATOMIC_MASKED_CSWAP] = "masked atomic compare-swap"};

/* "ep 0x.. to DCT 0x.. at port 01:02:..", for error messages */
static const char *uct_dcx_ep_peer_str(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep,
                                       char *buf, size_t max)
{
    size_t len;
    unsigned i, j;

    if (ep == NULL) {
        ucs_snprintf_zero(buf, max, "a peer without endpoint");
        return buf;
    }

    ucs_snprintf_zero(buf, max, "ep %p to DCT 0x%x", ep, ep->dctn);
    for (i = 0; i < iface->num_peers; ++i) {
        if (iface->peers[i].ah != ep->ah) {
            continue;
        }
        len = strlen(buf);
        ucs_snprintf_zero(buf + len, max - len, " at port ");
        for (j = 0; (j < iface->peers[i].len) && (j < 8); ++j) {
            len = strlen(buf);
            ucs_snprintf_zero(buf + len, max - len, "%s%02x", j ? ":" : "",
                              iface->peers[i].addr[j]);
        }
        break;
    }
    return buf;
}

/* Moves the operations at the head of from numbered sn to the tail of to */
static void uct_dcx_ops_move_sn(ucs_queue_head_t *from, ucs_queue_head_t *to,
                                uint64_t sn)
{
    uct_dcx_op_t *op;

    while (!ucs_queue_is_empty(from)) {
        op = ucs_queue_head_elem_non_empty(from, uct_dcx_op_t, queue);
        if (op->sn != sn) {
            break;
        }
        ucs_queue_pull_non_empty(from);
        ucs_queue_push(to, &op->queue);
    }
}

static UCS_F_ALWAYS_INLINE uct_dcx_wr_log_t *
uct_dcx_dci_log_entry(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci, uint64_t sn)
{
    return (uct_dcx_wr_log_t *)(dci->log + (sn & iface->pool.ring_mask) *
                                               iface->pool.log_stride);
}

/* Whether WR sn of dci is an orphan: a zero-copy WR whose endpoint was
 * destroyed while it was in flight (its operation completed then) */
static UCS_F_ALWAYS_INLINE int
uct_dcx_dci_wr_orphan(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci, uint64_t sn)
{
    unsigned idx = sn & iface->pool.ring_mask;

    return (dci->wr_ep[idx] == NULL) &&
           (dci->wr_opcode[idx] & UCT_DCX_WR_USER_MEM);
}

/*
 * Whether WR x, flushed by the failure of WR first, shares its fate.  A WR
 * of an endpoint fails with that endpoint (the failing one, or one already
 * failed).  A WR without endpoint (a credit grant, the probe of a destroyed
 * endpoint, an interface flush marker) names only its destination: it fails
 * if it goes where the failed WR went, and is posted again otherwise --
 * unless WR first failed alone (orphan: a WR of a destroyed endpoint whose
 * memory was deregistered, which says nothing of the destination).  A
 * zero-copy WR of a destroyed endpoint is never posted again: its
 * operation completed at the destroy, and the user may have released its
 * memory since.
 */
static int uct_dcx_dci_wr_failed(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                                 uint64_t x, uint64_t first,
                                 uct_dcx_ep_t *fail_ep, int orphan)
{
    uct_dcx_ep_t *ep = dci->wr_ep[x & iface->pool.ring_mask];
    const dcx_dc_dest_t *dest, *fail_dest;

    if (x == first) {
        return 1;
    }
    if (ep != NULL) {
        return (ep == fail_ep) || (ep->flags & UCT_DCX_EP_FLAG_FAILED);
    }
    if (uct_dcx_dci_wr_orphan(iface, dci, x)) {
        return 1;
    }
    if (orphan) {
        return 0;
    }
    dest      = &uct_dcx_dci_log_entry(iface, dci, x)->wr.dest;
    fail_dest = &uct_dcx_dci_log_entry(iface, dci, first)->wr.dest;
    return (dest->ah == fail_dest->ah) && (dest->dctn == fail_dest->dctn);
}

/*
 * After recovery of a shared DCI: posts again, in their order, the WRs in
 * [first, last] that do not share the fate of the failed one (their
 * operations follow them to their new numbers); the operations of the
 * others move to failed, to be completed once the replay is over (no user
 * callback runs while WRs are being posted again).
 */
static void uct_dcx_dci_replay(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                               uint64_t first, uint64_t last,
                               uct_dcx_ep_t *fail_ep, int orphan,
                               ucs_queue_head_t *ops,
                               ucs_queue_head_t *failed_ops)
{
    uct_dcx_wr_log_t *copy = iface->pool.wr_replay;
    uct_dcx_ep_t *ep;
    uct_dcx_op_t *op;
    uint64_t x;
    int signal, failed;

    for (x = first; x <= last; ++x) {
        ep     = dci->wr_ep[x & iface->pool.ring_mask];
        failed = uct_dcx_dci_wr_failed(iface, dci, x, first, fail_ep, orphan);
        if (!failed) {
            memcpy(copy, uct_dcx_dci_log_entry(iface, dci, x),
                   iface->pool.log_stride);
            copy->wr.sg_list = copy->sge;
            if (copy->wr.flags & DCX_SEND_INLINE) {
                copy->sge[0].addr = (uintptr_t)(copy + 1);
            }
            signal = !!(copy->wr.flags & DCX_SEND_SIGNALED);
            copy->wr.flags &= ~DCX_SEND_SIGNALED;
            if (uct_dcx_dci_post(iface, dci, ep, &copy->wr, NULL, signal) !=
                UCS_OK) {
                failed = 1;
            }
        }

        if (failed) {
            uct_dcx_ops_move_sn(ops, failed_ops, x);
            continue;
        }

        /* the operations of WR x now wait for WR dci->sn */
        while (!ucs_queue_is_empty(ops)) {
            op = ucs_queue_head_elem_non_empty(ops, uct_dcx_op_t, queue);
            if (op->sn != x) {
                break;
            }
            ucs_queue_pull_non_empty(ops);
            op->sn = dci->sn;
            ucs_queue_push(&dci->ops, &op->queue);
        }
    }
}

/* The status the failed WR sn of dci completes with, and its log line
 * (at the interface's failure level when the peer is at fault; debug for
 * an orphan, whose endpoint and operations are gone already) */
static ucs_status_t uct_dcx_dci_error_status(uct_dcx_iface_t *iface,
                                             uct_dcx_dci_t *dci, uint64_t sn,
                                             const dcx_wc_t *wc,
                                             uct_dcx_ep_t *fail_ep, int orphan)
{
    ucs_status_t status = uct_dcx_status(wc->status);
    uint8_t opcode;
    char peer[128];

    opcode = dci->wr_opcode[sn & iface->pool.ring_mask] & ~UCT_DCX_WR_USER_MEM;
    ucs_log(orphan ? UCS_LOG_LEVEL_DEBUG :
            (status == UCS_ERR_ENDPOINT_TIMEOUT) ||
                    (status == UCS_ERR_CONNECTION_RESET) ?
                     iface->super.config.failure_level :
                     UCS_LOG_LEVEL_ERROR,
            "dcx: %s: %s%s on DCI 0x%x to %s failed: %s (vendor 0x%x)",
            dcx_dev_name(iface->dev),
            (opcode < DCX_WR_OPCODE_LAST) ? uct_dcx_wr_opcode_names[opcode] :
                                            "operation",
            (dci->flags & UCT_DCX_DCI_FLAG_CTL) ? " (control)" : "",
            dci->qp->qp_num,
            uct_dcx_ep_peer_str(iface, fail_ep, peer, sizeof(peer)),
            dcx_wc_status_str(wc->status), wc->vendor_err);
    return status;
}

/* Brings dci back after an error (completions not yet polled are
 * discarded; a stream's reset keeps them: they retire nothing any more, and
 * the operations it cancels go to cancelled); a DCI that cannot be is taken
 * out of the pool (BROKEN). The device's return value. */
static int uct_dcx_dci_recover(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                               ucs_queue_head_t *cancelled)
{
    int ret = uct_dcx_dci_restart(iface, dci, cancelled);

    dci->done_sn    = dci->sn;
    dci->sig_sn     = dci->sn;
    dci->unsig      = 0;
    dci->next_flags = 0;
    dci->flags &= ~(UCT_DCX_DCI_FLAG_ERR | UCT_DCX_DCI_FLAG_CANCEL);
    if (ret != 0) {
        ucs_error("dcx: %s: DCI 0x%x could not be recovered (%s); it is "
                  "taken out of the pool",
                  dcx_dev_name(iface->dev), dci->qp->qp_num, strerror(ret));
        dci->flags |= UCT_DCX_DCI_FLAG_BROKEN;
        dci->avail = 0;
    } else {
        dci->avail = iface->pool.sq_len;
    }
    return ret;
}

/* The operations flushed by the error (from the failed WR sn to last_sn):
 * on a shared DCI that recovered, those of healthy endpoints posted again
 * (replay); then those of the failed WR and of fail_ep complete with
 * status, the others as cancelled.  Sorted first, completed after:
 * callbacks may post again, and must not disturb what is being read. */
static void uct_dcx_dci_error_ops(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                                  uint64_t sn, uint64_t last_sn,
                                  uct_dcx_ep_t *fail_ep, int orphan,
                                  ucs_queue_head_t *flushed,
                                  ucs_queue_head_t *cancelled_ops, int replay,
                                  ucs_status_t status)
{
    ucs_queue_head_t failed_ops;
    uct_dcx_op_t *op;

    ucs_queue_head_init(&failed_ops);
    if (replay) {
        /* shared DCI: healthy endpoints lose nothing */
        uct_dcx_dci_replay(iface, dci, sn, last_sn, fail_ep, orphan, flushed,
                           &failed_ops);
    }
    while (!ucs_queue_is_empty(flushed)) {
        op = ucs_queue_pull_elem_non_empty(flushed, uct_dcx_op_t, queue);
        if ((op->sn == sn) ||
            ((fail_ep != NULL) &&
             (dci->wr_ep[op->sn & iface->pool.ring_mask] == fail_ep))) {
            ucs_queue_push(&failed_ops, &op->queue);
        } else {
            ucs_queue_push(cancelled_ops, &op->queue);
        }
    }
    while (!ucs_queue_is_empty(&failed_ops)) {
        op = ucs_queue_pull_elem_non_empty(&failed_ops, uct_dcx_op_t, queue);
        uct_dcx_op_complete(iface, op, status);
    }
    while (!ucs_queue_is_empty(cancelled_ops)) {
        op = ucs_queue_pull_elem_non_empty(cancelled_ops, uct_dcx_op_t, queue);
        uct_dcx_op_complete(iface, op, UCS_ERR_CANCELED);
    }
}

/* The WR numbered sn of dci failed, and every WR after it was flushed:
 * dci is recovered, its operations sorted out, the failed endpoint told */
static void uct_dcx_dci_fail(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                             uint64_t sn, const dcx_wc_t *wc)
{
    int cancel            = !!(dci->flags & UCT_DCX_DCI_FLAG_CANCEL);
    uct_dcx_ep_t *fail_ep = dci->wr_ep[sn & iface->pool.ring_mask];
    /* a zero-copy WR of an endpoint destroyed while it was in flight,
     * whose memory the user then deregistered: nobody is told (its
     * operation completed at the destroy), and it fails alone */
    int orphan            = uct_dcx_dci_wr_orphan(iface, dci, sn) &&
                 (wc->status == DCX_WC_LOC_PROT_ERR);
    ucs_queue_head_t flushed, cancelled_ops;
    ucs_status_t status;
    uint64_t last_sn;
    int ret;

    status = cancel ?
                 UCS_ERR_CANCELED :
                 uct_dcx_dci_error_status(iface, dci, sn, wc, fail_ep, orphan);

    /* The failed WR and every WR after it were flushed */
    ucs_queue_head_init(&flushed);
    ucs_queue_splice(&flushed, &dci->ops);
    last_sn = dci->sn;

    ucs_queue_head_init(&cancelled_ops);
    ret = uct_dcx_dci_recover(iface, dci, &cancelled_ops);
    uct_dcx_dci_error_ops(iface, dci, sn, last_sn, fail_ep, orphan, &flushed,
                          &cancelled_ops,
                          (dci->log != NULL) && !cancel && (ret == 0), status);

    /* A lent DCI goes back to the pool, unless it is broken */
    if (dci->flags & UCT_DCX_DCI_FLAG_BROKEN) {
        uct_dcx_dci_unkeep(iface, dci);
        if (dci->owner != NULL) {
            dci->owner->dci = UCT_DCX_DCI_NONE;
            dci->owner      = NULL;
        }
    } else if (uct_dcx_dci_is_drained(dci)) {
        iface->policy->dci_idle(iface, dci);
    }

    if (!cancel && (fail_ep != NULL)) {
        iface->ep_failed(iface, fail_ep, status, wc->status);
    }
}

/* Whether the error of WR sn on dci stopped one stream of a DCI that is
 * still up, with WRs posted after sn: those come flushed, and hold the
 * stream's send queue until their completions are polled, so that the
 * stream can be reset and its healthy work posted again only once the
 * last of them is seen (mlx5dv_dci_stream_id_reset's rule) */
static int uct_dcx_dci_stream_flushing(uct_dcx_iface_t *iface,
                                       uct_dcx_dci_t *dci, uint64_t sn)
{
    return uct_dcx_dci_is_stream(iface, dci) &&
           (dci->qp->state == DCX_QPS_RTS) && (sn < dci->sn) &&
           !(dci->flags & UCT_DCX_DCI_FLAG_CANCEL);
}

/* An error completion on dci: the WR numbered sn failed, or (a stream in
 * error, UCT_DCX_DCI_FLAG_ERR) was flushed. */
UCS_F_NOINLINE void uct_dcx_dci_handle_error(uct_dcx_iface_t *iface,
                                             uct_dcx_dci_t *dci, uint64_t sn,
                                             const dcx_wc_t *wc)
{
    dcx_wc_t err_wc;

    if (dci->flags & UCT_DCX_DCI_FLAG_ERR) {
        if (sn < dci->sn) {
            return; /* more of the stream's flushed WRs to come */
        }
        /* the stream's last WR: its queue is empty, recover it now */
        memset(&err_wc, 0, sizeof(err_wc));
        err_wc.status     = dci->err_status;
        err_wc.vendor_err = dci->err_vendor;
        dci->flags &= ~UCT_DCX_DCI_FLAG_ERR;
        uct_dcx_dci_fail(iface, dci, dci->err_sn, &err_wc);
        return;
    }

    iface->cnt->dci.errors++;

    /* Everything before sn executed in order */
    if (sn > dci->done_sn + 1) {
        uct_dcx_dci_retire(iface, dci, sn - 1, UCS_OK);
    }

    if (uct_dcx_dci_stream_flushing(iface, dci, sn)) {
        /* no new work on the stream until it is recovered */
        dci->flags |= UCT_DCX_DCI_FLAG_ERR;
        dci->err_sn     = sn;
        dci->err_status = wc->status;
        dci->err_vendor = wc->vendor_err;
        dci->avail      = 0;
        return;
    }
    uct_dcx_dci_fail(iface, dci, sn, wc);
}

/* All WRs of dci completed: a cancel to finish, or a lent DCI to give
 * back or to keep */
UCS_F_NOINLINE void uct_dcx_dci_drained_slow(uct_dcx_iface_t *iface,
                                             uct_dcx_dci_t *dci)
{
    int ret;

    if (ucs_unlikely(dci->flags & UCT_DCX_DCI_FLAG_CANCEL)) {
        /* everything completed before the cancel took effect: the DCI is in
         * error with nothing to flush; bring it back now */
        dci->flags &= ~UCT_DCX_DCI_FLAG_CANCEL;
        ret = dcx_qp_recover(dci->qp);
        if (ret != 0) {
            ucs_error("dcx: %s: DCI 0x%x could not be recovered after a "
                      "cancel (%s); it is taken out of the pool",
                      dcx_dev_name(iface->dev), dci->qp->qp_num, strerror(ret));
            dci->flags |= UCT_DCX_DCI_FLAG_BROKEN;
            dci->avail = 0;
            return;
        }
    }
    iface->policy->dci_idle(iface, dci);
}

/* ---------------------------------------------------------------------------
 * Setting a DCI into error (cancellation)
 * ------------------------------------------------------------------------- */

void uct_dcx_dci_set_error(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci)
{
    int ret;

    if (dci->flags & (UCT_DCX_DCI_FLAG_ERR | UCT_DCX_DCI_FLAG_CANCEL)) {
        return;
    }

    dci->flags |= UCT_DCX_DCI_FLAG_CANCEL;
    ret = dcx_qp_set_error(dci->qp);
    if (ret != 0) {
        ucs_error("dcx: %s: failed to move DCI 0x%x to error for cancel: %s",
                  dcx_dev_name(iface->dev), dci->qp->qp_num, strerror(ret));
        dci->flags &= ~UCT_DCX_DCI_FLAG_CANCEL;
    }
}


/* ---------------------------------------------------------------------------
 * Cancel
 * ------------------------------------------------------------------------- */

/* Queues op among dci's operations, after those with the same or a lower
 * number (the queue stays sorted; rare path) */
static void uct_dcx_dci_insert_op(uct_dcx_dci_t *dci, uct_dcx_op_t *op)
{
    ucs_queue_head_t rest;
    uct_dcx_op_t *cur;
    int inserted = 0;

    ucs_queue_head_init(&rest);
    ucs_queue_splice(&rest, &dci->ops);
    while (!ucs_queue_is_empty(&rest)) {
        cur = ucs_queue_pull_elem_non_empty(&rest, uct_dcx_op_t, queue);
        if (!inserted && (cur->sn > op->sn)) {
            ucs_queue_push(&dci->ops, &op->queue);
            inserted = 1;
        }
        ucs_queue_push(&dci->ops, &cur->queue);
    }
    if (!inserted) {
        ucs_queue_push(&dci->ops, &op->queue);
    }
}

/* Calls comp once WR sn of dci is done.  The op queue stays in sn order: on
 * a shared DCI, ops of other eps for later WRs must not hold this one up. */
ucs_status_t uct_dcx_dci_add_comp(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                                  uint64_t sn, uct_completion_t *comp)
{
    uct_dcx_op_t *op;

    op = ucs_mpool_get_inline(&iface->op_mp);
    if (op == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    op->cb   = uct_dcx_op_put;
    op->comp = comp;
    op->sn   = sn;
    if (ucs_queue_is_empty(&dci->ops) ||
        (ucs_queue_tail_elem_non_empty(&dci->ops, uct_dcx_op_t, queue)->sn <=
         sn)) {
        ucs_queue_push(&dci->ops, &op->queue);
    } else {
        uct_dcx_dci_insert_op(dci, op);
    }
    return UCS_OK;
}

/*
 * Takes from dci the operations of ep that call the user back or deliver
 * data to the user (fetch results, get-bcopy): their completions go to
 * comps (bare ops, for uct_dcx_comps_complete()), and they are left to
 * release only their own buffers when their WRs complete.  Returns whether
 * a WR of ep in flight on dci accesses the user's memory.
 */
uint64_t uct_dcx_dci_ep_user_mem_sn(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                                    uct_dcx_ep_t *ep)
{
    uint64_t sn, last = 0;

    for (sn = dci->done_sn + 1; sn <= dci->sn; ++sn) {
        if ((dci->wr_ep[sn & iface->pool.ring_mask] == ep) &&
            (dci->wr_opcode[sn & iface->pool.ring_mask] &
             UCT_DCX_WR_USER_MEM)) {
            last = sn;
        }
    }
    return last;
}

int uct_dcx_dci_take_ep_comps(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                              uct_dcx_ep_t *ep, ucs_queue_head_t *comps)
{
    uct_dcx_op_t *op;

    ucs_queue_for_each(op, &dci->ops, queue) {
        if ((op->comp == NULL) && (op->cb == uct_dcx_op_put)) {
            continue; /* nothing of the user's */
        }
        if (dci->wr_ep[op->sn & iface->pool.ring_mask] != ep) {
            continue;
        }
        if (op->comp != NULL) {
            /* the user's completion is called once the scan is over, from
             * a bare op of its own (it may post, and change dci->ops) */
            if (uct_dcx_comps_push(iface, comps, op->comp) != UCS_OK) {
                ucs_error("dcx: out of memory completing the operations of "
                          "ep %p",
                          ep);
                continue;
            }
        }
        /* a descriptor's op is its first member: op_put frees either */
        op->comp = NULL;
        op->cb   = uct_dcx_op_put;
    }

    return uct_dcx_dci_ep_user_mem_sn(iface, dci, ep) != 0;
}

/* comp queued on comps, from a bare op, for uct_dcx_comps_complete() */
ucs_status_t uct_dcx_comps_push(uct_dcx_iface_t *iface, ucs_queue_head_t *comps,
                                uct_completion_t *comp)
{
    uct_dcx_op_t *cop = ucs_mpool_get_inline(&iface->op_mp);

    if (cop == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    cop->comp = comp;
    ucs_queue_push(comps, &cop->queue);
    return UCS_OK;
}

/* Calls, with status, the completions uct_dcx_dci_take_ep_comps() took */
void uct_dcx_comps_complete(ucs_queue_head_t *comps, ucs_status_t status)
{
    uct_dcx_op_t *cop;

    while (!ucs_queue_is_empty(comps)) {
        cop = ucs_queue_pull_elem_non_empty(comps, uct_dcx_op_t, queue);
        uct_invoke_completion(cop->comp, status);
        ucs_mpool_put_inline(cop);
    }
}

/* Completes now, with status, what uct_dcx_dci_take_ep_comps() takes */
static int uct_dcx_dci_complete_ep_ops(uct_dcx_iface_t *iface,
                                       uct_dcx_dci_t *dci, uct_dcx_ep_t *ep,
                                       ucs_status_t status)
{
    ucs_queue_head_t comps;
    int user_mem;

    ucs_queue_head_init(&comps);
    user_mem = uct_dcx_dci_take_ep_comps(iface, dci, ep, &comps);
    uct_dcx_comps_complete(&comps, status);
    return user_mem;
}

/*
 * ep goes away, or failed: every operation of it that the user sees
 * completes now with status; nothing completes later.  WRs still in flight
 * that access the user's memory are stopped by putting a lent DCI into
 * error (a shared DCI cannot be: the WRs of other endpoints on it, some
 * perhaps executed, would be flushed too).
 */
void uct_dcx_ep_complete_ops(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep,
                             ucs_status_t status)
{
    uct_dcx_dci_t *dci;

    if (ep->dci == UCT_DCX_DCI_NONE) {
        return;
    }
    dci = uct_dcx_ep_dci(iface, ep);
    if (uct_dcx_dci_complete_ep_ops(iface, dci, ep, status) &&
        !uct_dcx_dci_is_shared(iface, dci)) {
        uct_dcx_dci_set_error(iface, dci);
    }
}

/*
 * Cancel on a lent DCI (a shared one takes the plain flush: erroring it
 * would also flush the WRs of other endpoints, some of which may have
 * executed already): the operations that call the user back, and the WRs
 * that read or write the user's memory (zero-copy, get) even without a
 * completion of their own, must be over before the flush is, since the
 * user may free that memory then; other WRs (short, bcopy: their data are
 * the transport's) may complete after the ep is gone.  If there are such
 * operations or WRs, the DCI is put into error so that they all end at
 * once (as cancelled) and the device touches none of them after that.
 */
ucs_status_t uct_dcx_ep_flush_cancel(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep,
                                     uct_completion_t *comp)
{
    uct_dcx_dci_t *dci = uct_dcx_ep_dci(iface, ep);
    uint64_t last_sn   = 0;
    uct_dcx_op_t *op;
    ucs_status_t status;

    ucs_queue_for_each(op, &dci->ops, queue) {
        if ((op->comp != NULL) &&
            (dci->wr_ep[op->sn & iface->pool.ring_mask] == ep)) {
            last_sn = op->sn;
        }
    }
    last_sn = ucs_max(last_sn, uct_dcx_dci_ep_user_mem_sn(iface, dci, ep));
    if (last_sn == 0) {
        /* the DCI returns to the pool when its last WR completes */
        iface->policy->ep_detach(iface, ep);
        UCT_TL_EP_STAT_FLUSH(&ep->super);
        return UCS_OK;
    }

    if (comp != NULL) {
        status = uct_dcx_dci_add_comp(iface, dci, last_sn, comp);
        if (status != UCS_OK) {
            return status;
        }
    }
    uct_dcx_dci_set_error(iface, dci);
    UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
    return UCS_INPROGRESS;
}


/* ---------------------------------------------------------------------------
 * Registrations an orphan still writes through
 * ------------------------------------------------------------------------- */

/* A deregistration held back until the WR op.sn is done */
typedef struct uct_dcx_kept_mr {
    uct_dcx_op_t op;
    dcx_mr_t *mr;
} uct_dcx_kept_mr_t;

static void uct_dcx_op_dereg_kept(uct_dcx_iface_t *iface, uct_dcx_op_t *op,
                                  ucs_status_t status)
{
    uct_dcx_kept_mr_t *k = ucs_container_of(op, uct_dcx_kept_mr_t, op);
    int ret              = dcx_mr_dereg(k->mr);

    if (ret != 0) {
        ucs_warn("dcx: %s: deregistration of lkey 0x%x, held for a WR of a "
                 "destroyed endpoint, failed: %s",
                 dcx_dev_name(iface->dev), k->mr->lkey, strerror(ret));
    }
    ucs_free(k);
}

/* The newest WR on dci of a destroyed endpoint whose response writes
 * through lkey (a get or a fetching atomic, whose local memory the user
 * gave up at the destroy), or 0 */
static uint64_t uct_dcx_dci_orphan_writer(uct_dcx_iface_t *iface,
                                          uct_dcx_dci_t *dci, uint32_t lkey)
{
    const uct_dcx_wr_log_t *entry;
    uint64_t sn, last = 0;
    uint8_t opcode;
    unsigned i;

    for (sn = dci->done_sn + 1; sn <= dci->sn; ++sn) {
        opcode = dci->wr_opcode[sn & iface->pool.ring_mask] &
                 ~UCT_DCX_WR_USER_MEM;
        if (!uct_dcx_dci_wr_orphan(iface, dci, sn) ||
            (opcode < DCX_WR_RDMA_READ)) {
            continue;
        }
        entry = uct_dcx_dci_log_entry(iface, dci, sn);
        for (i = 0; i < entry->wr.num_sge; ++i) {
            if (entry->sge[i].lkey == lkey) {
                last = sn;
            }
        }
    }
    return last;
}

/*
 * The memory domain deregisters mr: a get or fetching atomic of an endpoint
 * destroyed while it was in flight on a shared DCI (only those keep a WR
 * log), whose response still writes through mr, keeps mr registered until
 * that WR is done.  Deregistered now, the response would fail the WR (a
 * destroyed key) after WRs of other endpoints to the same destination,
 * pipelined behind it, may have executed; the recovery would post those
 * again.  The memory itself may go meanwhile: a NIC writes the response
 * into the pages its registration pinned, the soft device drops it.
 */
static int uct_dcx_dci_keep_mr(void *arg, dcx_mr_t *mr, int kept)
{
    uct_dcx_iface_t *iface = arg;
    uct_dcx_kept_mr_t *k;
    uct_dcx_dci_t *dci;
    unsigned i;
    uint64_t sn;

    if (kept) {
        return 0;
    }
    for (i = 0; i < iface->pool.total; ++i) {
        dci = &iface->pool.dcis[i];
        if ((dci->qp == NULL) || (dci->log == NULL) ||
            (dci->flags & UCT_DCX_DCI_FLAG_BROKEN) ||
            ((sn = uct_dcx_dci_orphan_writer(iface, dci, mr->lkey)) == 0)) {
            continue;
        }
        k = ucs_malloc(sizeof(*k), "dcx_kept_mr");
        if (k == NULL) {
            return 0; /* deregistered now: that WR fails */
        }
        k->op.sn   = sn;
        k->op.cb   = uct_dcx_op_dereg_kept;
        k->op.comp = NULL;
        k->mr      = mr;
        uct_dcx_dci_insert_op(dci, &k->op);
        ucs_debug("dcx: %s: lkey 0x%x stays registered until WR %" PRIu64
                  " of DCI 0x%x, of a destroyed endpoint, is done",
                  dcx_dev_name(iface->dev), mr->lkey, sn, dci->qp->qp_num);
        return 1;
    }
    return 0;
}

void uct_dcx_dci_keep_init(uct_dcx_iface_t *iface)
{
    uct_dcx_md_t *md = ucs_derived_of(iface->super.md, uct_dcx_md_t);

    iface->pool.keep_cb.cb  = uct_dcx_dci_keep_mr;
    iface->pool.keep_cb.arg = iface;
    ucs_list_add_tail(&md->dereg_cbs, &iface->pool.keep_cb.list);
}

void uct_dcx_dci_keep_cleanup(uct_dcx_iface_t *iface)
{
    ucs_list_del(&iface->pool.keep_cb.list);
}
