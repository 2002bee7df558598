/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: fast-path helpers shared by the ep and the DCI pool.
 */
#ifndef UCT_DCX_INL_
#define UCT_DCX_INL_

#include "dcx.h"

#include <ucs/debug/log.h>
#include <ucs/datastruct/mpool.inl>
#include <ucs/sys/math.h>


static UCS_F_ALWAYS_INLINE uct_dcx_iface_t *uct_dcx_ep_iface(uct_dcx_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.iface, uct_dcx_iface_t);
}

/* The DC destination of ep's WRs */
static UCS_F_ALWAYS_INLINE void uct_dcx_ep_dest(uct_dcx_ep_t *ep,
                                                dcx_dc_dest_t *dest)
{
    dest->ah     = ep->ah;
    dest->dctn   = ep->dctn;
    dest->dc_key = uct_dcx_ep_iface(ep)->config.dc_key;
}

/* The DC destination of our own DCT (no-ops that report a DCI's
 * unsignalled WRs: flush, drain) */
static UCS_F_ALWAYS_INLINE void uct_dcx_iface_self_dest(uct_dcx_iface_t *iface,
                                                        dcx_dc_dest_t *dest)
{
    dest->ah     = iface->self_ah;
    dest->dctn   = iface->config.dctn;
    dest->dc_key = iface->config.dc_key;
}

static UCS_F_ALWAYS_INLINE uint64_t uct_dcx_wr_id(uint64_t sn, uint16_t dci)
{
    return (sn << UCT_DCX_WR_SN_SHIFT) | dci;
}

static UCS_F_ALWAYS_INLINE uint16_t uct_dcx_wr_id_dci(uint64_t wr_id)
{
    return (uint16_t)(wr_id & UCS_MASK(UCT_DCX_WR_SN_SHIFT));
}

static UCS_F_ALWAYS_INLINE uint64_t uct_dcx_wr_id_sn(uint64_t wr_id)
{
    return wr_id >> UCT_DCX_WR_SN_SHIFT;
}

static UCS_F_ALWAYS_INLINE uct_dcx_dci_t *uct_dcx_ep_dci(uct_dcx_iface_t *iface,
                                                         uct_dcx_ep_t *ep)
{
    return &iface->pool.dcis[ep->dci];
}

/* Every WR dci posted has completed */
static UCS_F_ALWAYS_INLINE int uct_dcx_dci_is_drained(const uct_dcx_dci_t *dci)
{
    return dci->done_sn == dci->sn;
}

/* dci carries the WRs of several endpoints (every DCI under rand, the
 * shared DCI of hybrid): it is not put into error for one of them, whose
 * failure would flush the others' WRs too */
static UCS_F_ALWAYS_INLINE int uct_dcx_dci_is_shared(uct_dcx_iface_t *iface,
                                                     const uct_dcx_dci_t *dci)
{
    return iface->policy->shared || (dci->index == iface->pool.shared);
}

/* dci is one stream channel of the streams policy's shared queue pair
 * (an error stops that stream only), not a DCI of its own */
static UCS_F_ALWAYS_INLINE int uct_dcx_dci_is_stream(uct_dcx_iface_t *iface,
                                                     const uct_dcx_dci_t *dci)
{
    return (dci->qp->num_streams > 0) && (dci->index != iface->pool.ctl);
}

/* The DCI is no longer kept (taken back, given back, or its owner left) */
static UCS_F_ALWAYS_INLINE void uct_dcx_dci_unkeep(uct_dcx_iface_t *iface,
                                                   uct_dcx_dci_t *dci)
{
    if (dci->flags & UCT_DCX_DCI_FLAG_KEPT) {
        ucs_assert(iface->pool.kept > 0);
        dci->flags &= ~UCT_DCX_DCI_FLAG_KEPT;
        iface->pool.kept--;
    }
}

static UCS_F_ALWAYS_INLINE void uct_dcx_op_complete(uct_dcx_iface_t *iface,
                                                    uct_dcx_op_t *op,
                                                    ucs_status_t status)
{
    op->cb(iface, op, status);
}

/*
 * Posts one WR on dci for ep.  op, if not NULL, fires when the WR completes;
 * signal forces a completion for this WR (the op needs one soon).  own says
 * whether dci is ep's own DCI (a constant where the caller knows: the send
 * operations of an ep post on its own DCI).  On success the caller owns
 * nothing any more; on failure op is untouched.
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_dcx_dci_post_own(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                     uct_dcx_ep_t *ep, dcx_send_wr_t *wr, uct_dcx_op_t *op,
                     int signal, int own)
{
    uint64_t sn    = dci->sn + 1;
    uint8_t opcode = wr->opcode; /* not read back from wr after the call */
    int ret;

    wr->wr_id     = uct_dcx_wr_id(sn, dci->index);
    wr->stream_id = dci->index; /* (streams policy; ignored otherwise) */
    wr->flags |= dci->next_flags;
    signal |= (dci->unsig + 1 >= iface->pool.sig_period);
    if (signal) {
        wr->flags |= DCX_SEND_SIGNALED;
    }

    ret = dcx_qp_post_send(dci->qp, wr);
    if (ucs_unlikely(ret != 0)) {
        if (ret == ENOMEM) {
            return UCS_ERR_NO_RESOURCE;
        }
        ucs_error("dcx: %s: DCI %u rejected WR opcode %u: %s",
                  dcx_dev_name(iface->dev), dci->qp->qp_num, opcode,
                  strerror(ret));
        return UCS_ERR_INVALID_PARAM;
    }

    dci->sn = sn;
    dci->avail--;
    dci->next_flags = 0;
    if (signal) {
        dci->unsig  = 0;
        dci->sig_sn = sn;
    } else {
        dci->unsig++;
    }
    dci->wr_ep[sn & iface->pool.ring_mask]     = ep;
    dci->wr_opcode[sn & iface->pool.ring_mask] = opcode;
    if (dci->log != NULL) {
        uct_dcx_dci_log_wr(iface, dci, sn, wr);
    }
    if (op != NULL) {
        op->sn = sn;
        ucs_queue_push(&dci->ops, &op->queue);
    }
    if (own) {
        /* not for the control DCI, which only carries ep_check probes */
        ep->last_sn = sn;
        ep->quota--;
    }
    return UCS_OK;
}

/* The same, for a dci that may or may not be ep's own (ep may be NULL) */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_dcx_dci_post(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci, uct_dcx_ep_t *ep,
                 dcx_send_wr_t *wr, uct_dcx_op_t *op, int signal)
{
    return uct_dcx_dci_post_own(iface, dci, ep, wr, op, signal,
                                (ep != NULL) && (ep->dci == dci->index));
}

ucs_status_t uct_dcx_ep_tx_slow(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep,
                                int is_am);

/* ep holds a DCI with a free slot and has quota left on it */
static UCS_F_ALWAYS_INLINE int
uct_dcx_ep_dci_ready(const uct_dcx_iface_t *iface, const uct_dcx_ep_t *ep)
{
    return (ep->dci != UCT_DCX_DCI_NONE) &&
           (iface->pool.dcis[ep->dci].avail > 0) && (ep->quota > 0);
}

/* Makes sure ep has a DCI with a free slot (and, for AMs, credits). */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_dcx_ep_tx_begin(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep, int is_am)
{
    if (ucs_likely(uct_dcx_ep_dci_ready(iface, ep) &&
                   (!is_am || (ep->fc_wnd > iface->fc.thresh)))) {
        return UCS_OK;
    }
    return uct_dcx_ep_tx_slow(iface, ep, is_am);
}

/*
 * What an operation returns when uct_dcx_ep_tx_begin() (or a step that calls
 * it) refused it with status: status itself, except UCT_DCX_TX_SINK (ep
 * invalidated, not yet reported), for which the operation is taken and
 * dropped, and 'taken' is returned: UCS_OK for operations without a
 * completion, UCS_INPROGRESS for those with one (comp, when not NULL, is
 * called with UCS_ERR_ENDPOINT_TIMEOUT when the failure is reported).
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_dcx_ep_tx_refused(uct_dcx_ep_t *ep, ucs_status_t status,
                      uct_completion_t *comp, ucs_status_t taken)
{
    if (ucs_likely(status != UCT_DCX_TX_SINK)) {
        return status;
    }
    return uct_dcx_ep_tx_sink(ep, comp, taken);
}

/* The same for a bcopy send: a taken one packs its data (the caller's packer
 * advances its state) and returns the packed length */
static UCS_F_ALWAYS_INLINE ssize_t
uct_dcx_ep_bcopy_refused(uct_dcx_iface_t *iface, ucs_status_t status,
                         uct_pack_callback_t pack_cb, void *arg)
{
    if (ucs_likely(status != UCT_DCX_TX_SINK)) {
        return status;
    }
    return uct_dcx_ep_bcopy_sink(iface, pack_cb, arg);
}

/* A refusal of uct_dcx_strided_iov() after which *length_p holds the
 * operation's length, which its caller checks before it answers:
 * UCT_DCX_TX_SINK (from the ep's tx_begin before a configure on its DCI:
 * tx_begin answers it again after the check) and UCS_ERR_NO_RESOURCE (a key
 * not usable yet: returned after the check) */
static UCS_F_ALWAYS_INLINE int uct_dcx_strided_length_known(ucs_status_t status)
{
    return (status == UCT_DCX_TX_SINK) || (status == UCS_ERR_NO_RESOURCE);
}

static UCS_F_ALWAYS_INLINE int uct_dcx_ep_has_pending(const uct_dcx_ep_t *ep)
{
    return (ep->ext != NULL) && !ucs_queue_is_empty(&ep->ext->pending_q);
}

/* The ep asked for credits and has none left: waiting for the grant */
static UCS_F_ALWAYS_INLINE int uct_dcx_ep_fc_blocked(const uct_dcx_ep_t *ep)
{
    return (ep->flags & UCT_DCX_EP_FLAG_FC_REQ_SENT) && (ep->fc_wnd <= 0);
}

static UCS_F_ALWAYS_INLINE void
uct_dcx_wr_init(dcx_send_wr_t *wr, uct_dcx_ep_t *ep, uint8_t opcode,
                uint8_t flags, const dcx_sge_t *sge, unsigned num_sge)
{
    wr->opcode      = opcode;
    wr->flags       = flags;
    wr->num_sge     = num_sge;
    wr->atomic_size = 0;
    wr->imm         = 0;
    uct_dcx_ep_dest(ep, &wr->dest);
    wr->sg_list     = sge;
    wr->remote_addr = 0;
    wr->rkey        = 0;
    wr->reserved    = 0;
}

/* Receive buffers are reposted in batches of an eighth of the posted goal
 * (at most UCT_DCX_RX_REPOST_MAX, at least one): the progress call that
 * finds fewer missing leaves them for a later one */
static UCS_F_ALWAYS_INLINE void
uct_dcx_iface_set_rx_target(uct_dcx_iface_t *iface, unsigned target)
{
    iface->rx.target    = target;
    iface->rx.repost    = ucs_max(ucs_min(target / 8,
                                          (unsigned)UCT_DCX_RX_REPOST_MAX),
                                  1u);
    iface->rx.refill_at = target - iface->rx.repost;
}

/* The receives posted at open: UCT_DCX_RX_INIT_POSTED, or more when one
 * peer's whole credit window needs more: the window, and a quarter of it
 * for what the window does not count (its credit requests) and for the
 * buffers used but not yet reposted (less than a repost batch, an eighth);
 * never more than RX_QUEUE_LEN.  With fewer, a single peer's stream finds
 * the queue empty before the first grant, and each RNR NAK costs it the
 * RNR timer. */
static UCS_F_ALWAYS_INLINE unsigned
uct_dcx_rx_init_posted(unsigned rx_queue_len, unsigned fc_wnd)
{
    return ucs_min(rx_queue_len, ucs_max((unsigned)UCT_DCX_RX_INIT_POSTED,
                                         fc_wnd + fc_wnd / 4));
}

/* Receive buffer elem -> the header byte of the message in it */
static UCS_F_ALWAYS_INLINE uint8_t *uct_dcx_rx_wire(uct_dcx_iface_t *iface,
                                                    void *elem)
{
    return UCS_PTR_BYTE_OFFSET(elem, iface->rx.payload_offset);
}

/* A send buffer of mp; NULL if none is free (then unsignalled WRs holding
 * some are made to report, so that the caller's retry after progress finds
 * one) */
static UCS_F_ALWAYS_INLINE uct_dcx_send_desc_t *
uct_dcx_iface_get_desc_mp(uct_dcx_iface_t *iface, ucs_mpool_t *mp)
{
    void *desc = ucs_mpool_get_inline(mp);

    if (ucs_unlikely(desc == NULL)) {
        uct_dcx_iface_tx_starved(iface);
    }
    return (uct_dcx_send_desc_t *)desc;
}

static UCS_F_ALWAYS_INLINE uct_dcx_send_desc_t *
uct_dcx_iface_get_desc(uct_dcx_iface_t *iface)
{
    return uct_dcx_iface_get_desc_mp(iface, &iface->tx_mp);
}

static UCS_F_ALWAYS_INLINE void *uct_dcx_desc_data(uct_dcx_send_desc_t *desc)
{
    return desc + 1;
}

/*
 * Everything a send through a bounce buffer needs before the buffer is
 * filled: a slot on ep's DCI (and a credit, when is_am), then a descriptor
 * whose op runs cb when the WR completes, and cb calls comp.
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_dcx_ep_desc_begin_mp(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep, int is_am,
                         uct_dcx_op_cb_t cb, uct_completion_t *comp,
                         ucs_mpool_t *mp, uct_dcx_send_desc_t **desc_p)
{
    uct_dcx_send_desc_t *desc;
    ucs_status_t status;

    status = uct_dcx_ep_tx_begin(iface, ep, is_am);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    desc = uct_dcx_iface_get_desc_mp(iface, mp);
    if (ucs_unlikely(desc == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }

    desc->op.cb   = cb;
    desc->op.comp = comp;
    *desc_p       = desc;
    return UCS_OK;
}

static UCS_F_ALWAYS_INLINE ucs_status_t
uct_dcx_ep_desc_begin(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep, int is_am,
                      uct_dcx_op_cb_t cb, uct_completion_t *comp,
                      uct_dcx_send_desc_t **desc_p)
{
    return uct_dcx_ep_desc_begin_mp(iface, ep, is_am, cb, comp, &iface->tx_mp,
                                    desc_p);
}

/* Receive buffers reposted in batches, credit grants sent again, pending
 * requests dispatched: the end of every progress call (uct_dcx_iface_progress,
 * uct_dcx_iface_tag_progress) */
static UCS_F_ALWAYS_INLINE void
uct_dcx_iface_progress_tail(uct_dcx_iface_t *iface)
{
    if (ucs_unlikely(iface->rx.posted <= iface->rx.refill_at)) {
        if (ucs_unlikely(iface->rx.posted < (iface->rx.target / 2))) {
            uct_dcx_iface_rx_grow(iface);
        }
        uct_dcx_iface_post_recv(iface);
    }
    if (ucs_unlikely(!ucs_queue_is_empty(&iface->grant_q))) {
        uct_dcx_iface_send_grants(iface);
    }
    ucs_arbiter_dispatch(&iface->arbiter, 1, uct_dcx_ep_dispatch_cb, iface);
}

/* Fires the operations of the WRs of dci up to sn, then retires the WRs.
 * In that order, as UCX's RC transports do: a completion callback that
 * sends sees the slots of these WRs still taken, so that the endpoint's
 * pending requests, dispatched at the end of the progress, are not
 * overtaken by it (UCX's test_uct_pending.send_ooo_with_comp). */
static UCS_F_ALWAYS_INLINE void uct_dcx_dci_retire(uct_dcx_iface_t *iface,
                                                   uct_dcx_dci_t *dci,
                                                   uint64_t sn,
                                                   ucs_status_t status)
{
    if (!ucs_queue_is_empty(&dci->ops)) {
        uct_dcx_dci_fire_ops(iface, dci, sn, status);
    }
    dci->avail += (uint16_t)(sn - dci->done_sn);
    dci->done_sn = sn;
}

/* All WRs of dci completed.  Nothing to do for a DCI that is not lent
 * (shared policy, control DCI), nor for one its owner keeps (flagged when
 * it first drained) while nobody waits for a DCI: the common case of
 * back-to-back sends costs a flag test. */
static UCS_F_ALWAYS_INLINE void uct_dcx_dci_drained(uct_dcx_iface_t *iface,
                                                    uct_dcx_dci_t *dci)
{
    uint8_t flags = dci->flags &
                    (UCT_DCX_DCI_FLAG_BUSY | UCT_DCX_DCI_FLAG_KEPT |
                     UCT_DCX_DCI_FLAG_CANCEL);

    if (ucs_likely(((flags == 0) || (flags == (UCT_DCX_DCI_FLAG_BUSY |
                                               UCT_DCX_DCI_FLAG_KEPT))) &&
                   (iface->pool.waiters == 0))) {
        return;
    }
    uct_dcx_dci_drained_slow(iface, dci);
}

/* The send completions of a poll, inline in the progress: a completion
 * costs no call unless it fires operations, fails, or leaves its DCI to
 * its policy (the out-of-line parts are in dcx_dci_comp.c) */
static UCS_F_ALWAYS_INLINE void uct_dcx_dci_tx_wcs(uct_dcx_iface_t *iface,
                                                   const dcx_wc_t *wc, int n)
{
    uct_dcx_dci_t *dci;
    uint64_t sn;
    int i;

    for (i = 0; i < n; ++i) {
        dci = &iface->pool.dcis[uct_dcx_wr_id_dci(wc[i].wr_id)];
        sn  = uct_dcx_wr_id_sn(wc[i].wr_id);
        if (ucs_unlikely((sn <= dci->done_sn) ||
                         (wc[i].status != DCX_WC_SUCCESS))) {
            if (sn > dci->done_sn) {
                uct_dcx_dci_handle_error(iface, dci, sn, &wc[i]);
            }
            /* else already retired, e.g. flushed before recovery */
            continue;
        }

        uct_dcx_dci_retire(iface, dci, sn, UCS_OK);
        if (uct_dcx_dci_is_drained(dci)) {
            uct_dcx_dci_drained(iface, dci);
        } else if (ucs_unlikely(dci->sig_sn == sn)) {
            /* unsignalled WRs after the last signalled one */
            uct_dcx_dci_tail_slow(iface, dci);
        }
    }
    if (ucs_unlikely(--iface->pool.check_countdown == 0)) {
        uct_dcx_dci_pool_check(iface);
    }
}

/* A progress call with nothing to do, told without a device call where
 * both CQs have a look (dcx_cq_idle): neither shows a completion, and
 * neither the tail (uct_dcx_iface_progress_tail) nor the strided-key queue
 * has work due.  Such a call is exactly one that polls nothing and whose
 * tail does nothing. */
static UCS_F_ALWAYS_INLINE int uct_dcx_iface_idle(uct_dcx_iface_t *iface)
{
    return dcx_cq_idle(iface->rx_cq) && dcx_cq_idle(iface->tx_cq) &&
           (iface->rx.posted > iface->rx.refill_at) &&
           ucs_queue_is_empty(&iface->grant_q) &&
           ucs_arbiter_is_empty(&iface->arbiter) &&
           (iface->strided.cfgq.out == 0);
}

/* A progress call: both CQs polled in one device call (dcx_cq_poll_pair:
 * one with nothing to do costs that call), the receive completions handed
 * to rx_wcs, the send completions taken, then the tail.  rx_wcs is a
 * constant, always-inline function of the caller's file (the plain
 * receive queue's, uct_dcx_iface_progress; a TM SRQ's,
 * uct_dcx_iface_tag_progress): inlined through it, no call is made before
 * the AM or eager handler. */
static UCS_F_ALWAYS_INLINE unsigned
uct_dcx_iface_progress_common(uct_dcx_iface_t *iface,
                              void (*rx_wcs)(uct_dcx_iface_t *iface,
                                             const dcx_wc_t *wc, int n))
{
    dcx_wc_t wc[2 * UCT_DCX_TX_BATCH]; /* receives, then sends */
    int n_rx, n_tx;

    UCS_STATIC_ASSERT(UCT_DCX_TX_BATCH == UCT_DCX_RX_BATCH);
    n_rx = dcx_cq_poll_pair(iface->rx_cq, iface->tx_cq, UCT_DCX_TX_BATCH, wc,
                            &n_tx);
    if (ucs_unlikely(n_rx > 0)) {
        iface->progressed += n_rx; /* an arm's look restarts (dcx_event.c) */
        rx_wcs(iface, wc, n_rx);
        if (ucs_unlikely(n_rx == UCT_DCX_RX_BATCH)) {
            uct_dcx_iface_rx_grow(iface); /* a stream: more may wait */
        }
    }
    if (ucs_unlikely(n_tx > 0)) {
        iface->progressed += n_tx;
        uct_dcx_dci_tx_wcs(iface, wc + UCT_DCX_TX_BATCH, n_tx);
    }
    if (ucs_unlikely(iface->strided.cfgq.out != 0)) {
        /* strided-key configures on their own queue: the keys they make
         * ready let the requests waiting for them go in the tail */
        n_tx += uct_dcx_cfg_queue_progress(&iface->strided.cfgq);
    }
    uct_dcx_iface_progress_tail(iface);
    return n_rx + n_tx;
}

#endif /* UCT_DCX_INL_ */
