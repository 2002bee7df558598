/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: the receive path (receive buffers, active messages, the
 * control messages of peers: a credit request queues a grant, dcx_ctl.c
 * sends it; a grant goes to flow control, dcx_fc.c) and the progress of an
 * interface.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.inl"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <string.h>

/* ---------------------------------------------------------------------------
 * Receive path
 * ------------------------------------------------------------------------- */

const uint8_t uct_dcx_tmh_no_tag[DCX_TM_TMH_LEN] = {0};

/* The receive side before its queues exist: nothing posted, the goal
 * (uct_dcx_rx_init_posted); a TM SRQ sets tmh_len when it is created,
 * the memory pools the buffer layout (headroom, payload_offset) */
void uct_dcx_iface_rx_init(uct_dcx_iface_t *iface,
                           const uct_dcx_iface_config_t *cfg)
{
    iface->rx.tmh_len   = 0;
    iface->rx.queue_len = cfg->rx_queue_len;
    iface->rx.posted    = 0;
    uct_dcx_iface_set_rx_target(iface, uct_dcx_rx_init_posted(cfg->rx_queue_len,
                                                              cfg->fc_wnd));
    iface->rx.reposts  = 0;
    iface->rx.reposted = 0;
}


void uct_dcx_iface_release_desc(uct_recv_desc_t *self, void *desc)
{
    uct_dcx_iface_t *iface = ucs_container_of(self, uct_dcx_iface_t,
                                              release_desc);

    /* desc = wire + 1 - headroom */
    ucs_mpool_put_inline(UCS_PTR_BYTE_OFFSET(desc,
                                             iface->rx.headroom -
                                                 UCT_DCX_AM_HDR_LEN -
                                                 iface->rx.payload_offset));
}

/* The receive load needs more posted buffers, up to RX_QUEUE_LEN (the pool
 * grows by a chunk when it runs dry): most of them were used since the last
 * refill, or a poll found a whole batch of receive completions.  The second
 * is the one a stream from a single peer shows: its credit window (FC_WND)
 * is as large as what is posted at open, the credit requests it sends take
 * buffers too, and the completions not yet polled hide from rx_posted that
 * the device's queue ran dry, so the sender got RNR NAKs (and waited
 * RNR_TIMER each) while every refill still found most buffers posted. */
UCS_F_NOINLINE void uct_dcx_iface_rx_grow(uct_dcx_iface_t *iface)
{
    if (iface->rx.target < iface->rx.queue_len) {
        uct_dcx_iface_set_rx_target(iface, ucs_min(iface->rx.target * 2,
                                                   iface->rx.queue_len));
        ucs_debug("dcx: %s: receive queue grows to %u buffers",
                  dcx_dev_name(iface->dev), iface->rx.target);
    }
}

/* Puts back the buffers of list[from..count) that the device did not take. */
static UCS_F_NOINLINE void uct_dcx_iface_rx_unposted(uct_dcx_iface_t *iface,
                                                     const dcx_recv_t *list,
                                                     unsigned from,
                                                     unsigned count, int ret)
{
    unsigned i;

    for (i = from; i < count; ++i) {
        ucs_mpool_put_inline((void *)(uintptr_t)list[i].wr_id);
    }
    if (ret != ENOMEM) {
        ucs_error("dcx: %s: posting receives failed at %u of %u: %s",
                  dcx_dev_name(iface->dev), from + 1, count, strerror(ret));
    }
}

unsigned uct_dcx_iface_post_recv(uct_dcx_iface_t *iface)
{
    dcx_recv_t list[UCT_DCX_RX_REPOST_MAX];
    /* a TM SRQ places the TMH too: it lands in the headroom */
    size_t offset   = iface->rx.payload_offset - iface->rx.tmh_len;
    uint32_t length = iface->config.rx_seg_size + iface->rx.tmh_len;
    unsigned count  = 0;
    unsigned n, max, posted;
    void *elem;
    int ret;

    /* in batches of at most UCT_DCX_RX_REPOST_MAX, one device call each;
     * what the loop needs of the iface is read before it (its stores into
     * the buffers and the list would make the compiler read it again) */
    while (iface->rx.posted < iface->rx.target) {
        max = ucs_min(iface->rx.target - iface->rx.posted,
                      (unsigned)UCT_DCX_RX_REPOST_MAX);
        for (n = 0; n < max; ++n) {
            elem = ucs_mpool_get_inline(&iface->rx_mp);
            if (elem == NULL) {
                break;
            }
            list[n].wr_id = (uintptr_t)elem;
            list[n].addr  = (uintptr_t)elem + offset;
            memcpy(&list[n].lkey,
                   UCS_PTR_BYTE_OFFSET(elem, UCT_DCX_RX_LKEY_OFFSET),
                   sizeof(list[n].lkey));
        }
        if (n == 0) {
            break;
        }
        ret = dcx_srq_post_recv_list(iface->srq, list, n, length, &posted);
        iface->rx.posted += posted;
        count += posted;
        if (ucs_unlikely(ret != 0)) {
            uct_dcx_iface_rx_unposted(iface, list, posted, n, ret);
            break;
        }
        if (n < UCT_DCX_RX_REPOST_MAX) {
            break; /* the pool ran dry, or the goal is reached */
        }
    }
    iface->rx.reposts += (count > 0);
    iface->rx.reposted += count;
    return count;
}

static UCS_F_NOINLINE void uct_dcx_iface_handle_ctl(uct_dcx_iface_t *iface,
                                                    uint8_t type,
                                                    const uint8_t *data,
                                                    unsigned length)
{
    const uct_dcx_ctl_msg_t *msg = (const uct_dcx_ctl_msg_t *)data;
    size_t min_len               = ucs_offsetof(uct_dcx_ctl_msg_t, port);
    ucs_status_t status;
    dcx_ah_t *ah;

    switch (type) {
    case UCT_DCX_CTL_NOP:
        return;
    case UCT_DCX_CTL_FC_REQ:
        if ((length < min_len) || (length < min_len + msg->addr_len)) {
            break;
        }
        status = uct_dcx_iface_peer_ah(iface, msg->port, msg->addr_len, &ah);
        if (status != UCS_OK) {
            return; /* logged */
        }
        uct_dcx_iface_queue_grant(iface, ah, msg);
        return;
    case UCT_DCX_CTL_FC_GRANT:
        if (length < min_len) {
            break;
        }
        uct_dcx_ep_fc_grant(iface, msg->ep_id, msg->seq, msg->credits);
        return;
    default:
        break;
    }

    ucs_error("dcx: %s: dropped a malformed control message (type %u, %u "
              "bytes)",
              dcx_dev_name(iface->dev), type, length);
}

void uct_dcx_iface_rx_error(uct_dcx_iface_t *iface, const dcx_wc_t *wc)
{
    if (wc->status != DCX_WC_WR_FLUSH_ERR) {
        ucs_error("dcx: %s: receive completion error: %s (vendor 0x%x)",
                  dcx_dev_name(iface->dev), dcx_wc_status_str(wc->status),
                  wc->vendor_err);
    }
}

/* A message that is not an AM for the user: control message, or garbage */
static UCS_F_NOINLINE void uct_dcx_iface_rx_not_am(uct_dcx_iface_t *iface,
                                                   const uint8_t *wire,
                                                   unsigned length)
{
    if (wire[0] & UCT_DCX_AM_CTL) {
        uct_dcx_iface_handle_ctl(iface, wire[0] & ~UCT_DCX_AM_CTL, wire + 1,
                                 length - 1);
    } else {
        ucs_error("dcx: %s: dropped a message with AM id %u",
                  dcx_dev_name(iface->dev), wire[0]);
    }
}

/* A whole message in the receive buffer elem: AM or control message */
static UCS_F_ALWAYS_INLINE void
uct_dcx_iface_rx_am_inline(uct_dcx_iface_t *iface, void *elem, uint8_t *wire,
                           unsigned length)
{
    uct_recv_desc_t *rdesc;
    ucs_status_t status;

    if (ucs_unlikely(wire[0] >= UCT_AM_ID_MAX)) {
        uct_dcx_iface_rx_not_am(iface, wire, length);
        ucs_mpool_put_inline(elem);
        return;
    }

    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_RECV, wire[0], wire + 1,
                       length - 1, "RX: AM");
    status = uct_iface_invoke_am(&iface->super, wire[0], wire + 1, length - 1,
                                 UCT_CB_PARAM_FLAG_DESC);
    if (status == UCS_INPROGRESS) {
        /* the user keeps the buffer; it comes back through
         * uct_iface_release_desc(), which finds rdesc where uct_recv_desc()
         * looks: a slot aligned only when the headroom is a multiple of 8
         * (UCP's is; a headroom of 5 puts it at an odd address) */
        rdesc = &iface->release_desc;
        memcpy(wire + 1 - iface->rx.headroom - sizeof(rdesc), &rdesc,
               sizeof(rdesc));
    } else {
        ucs_mpool_put_inline(elem);
    }
}

void uct_dcx_iface_rx_am(uct_dcx_iface_t *iface, void *elem, uint8_t *wire,
                         unsigned length)
{
    uct_dcx_iface_rx_am_inline(iface, elem, wire, length);
}

/* A handler that kept a message it was lent (no UCT_CB_PARAM_FLAG_DESC):
 * its bytes go back to the device all the same as the handler returns */
static UCS_F_NOINLINE void uct_dcx_iface_rx_kept(uct_dcx_iface_t *iface,
                                                 uint8_t id)
{
    ucs_error("dcx: %s: AM handler %u returned UCS_INPROGRESS for a message "
              "passed without UCT_CB_PARAM_FLAG_DESC; it is not kept",
              dcx_dev_name(iface->dev), id);
}

/* A whole message where the device received it (DCX_WC_FLAG_IN_PLACE), its
 * receive buffer elem unused: lent to the handler for the call only (no
 * UCT_CB_PARAM_FLAG_DESC), as UCX's transports without descriptors do;
 * its bytes go back to the device when the handler returns */
static UCS_F_ALWAYS_INLINE void
uct_dcx_iface_rx_am_in_place(uct_dcx_iface_t *iface, void *elem,
                             const uint8_t *wire, unsigned length)
{
    uct_am_handler_t *handler;
    ucs_status_t status;

    ucs_mpool_put_inline(elem);
    if (ucs_unlikely(wire[0] >= UCT_AM_ID_MAX)) {
        uct_dcx_iface_rx_not_am(iface, wire, length);
        dcx_cq_release(iface->rx_cq);
        return;
    }
    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_RECV, wire[0],
                       (void *)(wire + 1), length - 1, "RX: AM in place");
    /* the handler is called here, not through uct_iface_invoke_am, whose
     * assertion would end the process on a handler that keeps the message:
     * that is logged instead (the message cannot be kept) */
    handler = &iface->super.am[wire[0]];
    UCS_STATS_UPDATE_COUNTER(iface->super.stats, UCT_IFACE_STAT_RX_AM, 1);
    UCS_STATS_UPDATE_COUNTER(iface->super.stats, UCT_IFACE_STAT_RX_AM_BYTES,
                             length - 1);
    status = handler->cb(handler->arg, (void *)(wire + 1), length - 1, 0);
    if (ucs_unlikely(status == UCS_INPROGRESS)) {
        uct_dcx_iface_rx_kept(iface, wire[0]);
    }
    dcx_cq_release(iface->rx_cq);
}

/* The same for the AM of a NO_TAG message a TM SRQ completed in place
 * (dcx_tag.c; wire: past its TMH) */
void uct_dcx_iface_rx_am_lent(uct_dcx_iface_t *iface, void *elem,
                              const uint8_t *wire, unsigned length)
{
    uct_dcx_iface_rx_am_in_place(iface, elem, wire, length);
}

/* The receive completions of a poll.  Inline in the progress: the poll
 * that finds a message makes no second call (and saves no registers twice)
 * before the AM handler's; a progress with nothing to do pays the pushes
 * of the registers the loop needs (6 instructions). */
static UCS_F_ALWAYS_INLINE void uct_dcx_iface_rx_wcs(uct_dcx_iface_t *iface,
                                                     const dcx_wc_t *wc, int n)
{
    void *elem;
    int i;

    for (i = 0; i < n; ++i) {
        elem = (void *)(uintptr_t)wc[i].wr_id;
        iface->rx.posted--;
        if (ucs_unlikely((wc[i].status != DCX_WC_SUCCESS) ||
                         (wc[i].byte_len < UCT_DCX_AM_HDR_LEN))) {
            uct_dcx_iface_rx_error(iface, &wc[i]);
            ucs_mpool_put_inline(elem);
            continue;
        }
        if (wc[i].flags & DCX_WC_FLAG_IN_PLACE) {
            uct_dcx_iface_rx_am_in_place(iface, elem, wc[i].data,
                                         wc[i].byte_len);
            continue;
        }
        uct_dcx_iface_rx_am_inline(iface, elem, uct_dcx_rx_wire(iface, elem),
                                   wc[i].byte_len);
    }
}

/* ---------------------------------------------------------------------------
 * Progress
 * ------------------------------------------------------------------------- */

/* Both CQs polled in one device call (dcx_cq_poll_pair): a progress call
 * with nothing to do costs one device call.  An interface on a TM SRQ has
 * uct_dcx_iface_tag_progress (dcx_tag.c) instead, set at its creation. */
UCS_F_NOINLINE unsigned uct_dcx_iface_progress(uct_iface_h tl_iface)
{
    return uct_dcx_iface_progress_common(ucs_derived_of(tl_iface,
                                                        uct_dcx_iface_t),
                                         uct_dcx_iface_rx_wcs);
}

/* The same where both CQs have a look (uct_dcx_iface_progress_choose): a
 * call with nothing to do returns after a few loads, with no device call
 * and no register saved (the poll is a tail call, out of line) */
static unsigned uct_dcx_iface_progress_look(uct_iface_h tl_iface)
{
    if (ucs_likely(uct_dcx_iface_idle(ucs_derived_of(tl_iface,
                                                     uct_dcx_iface_t)))) {
        return 0;
    }
    return uct_dcx_iface_progress(tl_iface);
}

/* Once the CQs and the SRQ exist: the progress looks before it polls
 * where the device can tell an idle CQ without a call (dcx_cq_idle); a
 * device that runs an engine when polled is polled every time */
void uct_dcx_iface_progress_choose(uct_dcx_iface_t *iface)
{
    if ((iface->rx_cq->look == NULL) || (iface->tx_cq->look == NULL)) {
        return;
    }
    iface->super.super.ops.iface_progress = (iface->rx.tmh_len != 0) ?
                                                uct_dcx_iface_tag_progress_look :
                                                uct_dcx_iface_progress_look;
}
