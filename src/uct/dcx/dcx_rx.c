/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: the transport's control messages (posting them, and what
 * happens when they complete), the receive path (receive buffers, active
 * messages, control messages and the credit grants they ask for) and the
 * progress of an interface.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.inl"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <string.h>

/* ---------------------------------------------------------------------------
 * Control messages of the transport (no-op, credit request and grant)
 * ------------------------------------------------------------------------- */

static void uct_dcx_ctl_done(uct_dcx_iface_t *iface, uct_dcx_op_t *op,
                             ucs_status_t status)
{
    uct_dcx_send_desc_t *desc = ucs_container_of(op, uct_dcx_send_desc_t, op);
    uint8_t *data = (uint8_t *)uct_dcx_desc_data(desc) + desc->u.ctl.tmh_len;
    uct_dcx_ctl_msg_t *msg = (uct_dcx_ctl_msg_t *)(data + 1);
    uct_dcx_grant_t *grant;
    uint8_t opcode;
    int is_fin;

    /* A grant (or a FIN) cancelled because another peer's message failed
     * on the control DCI must still reach its peer, or that peer stalls. */
    is_fin = (desc->u.ctl.tmh_len != 0) &&
             (data[-(int)desc->u.ctl.tmh_len] == DCX_TMH_FIN);
    if ((status == UCS_ERR_CANCELED) &&
        (is_fin || (data[0] == (UCT_DCX_AM_CTL | UCT_DCX_CTL_FC_GRANT)))) {
        grant = ucs_mpool_get(&iface->op_mp);
        if (grant != NULL) {
            grant->ah      = desc->u.ctl.ah;
            grant->dctn    = desc->u.ctl.dctn;
            grant->tmh_len = desc->u.ctl.tmh_len;
            grant->fin     = is_fin;
            if (is_fin) {
                /* its TMH says for which operation */
                dcx_tmh_unpack(data - desc->u.ctl.tmh_len, &opcode,
                               &grant->app_ctx, &grant->ep_id);
            } else {
                grant->credits = msg->credits;
                grant->seq     = msg->seq;
                grant->ep_id   = msg->ep_id;
            }
            ucs_queue_push(&iface->grant_q, &grant->queue);
        } else {
            ucs_error("dcx: out of memory re-queueing a credit grant");
        }
    }

    if (op->comp != NULL) {
        uct_invoke_completion(op->comp, status);
    }
    ucs_mpool_put_inline(desc);
}

/* The SEND of a control message of len bytes at data (one sge), to dest */
static void uct_dcx_ctl_wr(dcx_send_wr_t *wr, dcx_sge_t *sge,
                           const dcx_dc_dest_t *dest, const uint8_t *data,
                           size_t len, uint32_t lkey, unsigned flags)
{
    sge->addr       = (uintptr_t)data;
    sge->length     = (uint32_t)len;
    sge->lkey       = lkey;
    wr->opcode      = DCX_WR_SEND;
    wr->flags       = flags;
    wr->num_sge     = 1;
    wr->atomic_size = 0;
    wr->imm         = 0;
    wr->dest        = *dest;
    wr->sg_list     = sge;
    wr->remote_addr = 0;
    wr->rkey        = 0;
    wr->reserved    = 0;
}

ucs_status_t uct_dcx_dci_post_ctl(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                                  uct_dcx_ep_t *ep, const dcx_dc_dest_t *dest,
                                  uint8_t type, const uct_dcx_ctl_msg_t *msg,
                                  size_t msg_len, unsigned tmh_len,
                                  uct_completion_t *comp)
{
    return uct_dcx_dci_post_ctl_tmh(iface, dci, ep, dest, type, msg, msg_len,
                                    tmh_len, NULL, comp);
}

/* The same with the given TMH (tmh_len bytes) instead of a NO_TAG one */
ucs_status_t uct_dcx_dci_post_ctl_tmh(uct_dcx_iface_t *iface,
                                      uct_dcx_dci_t *dci, uct_dcx_ep_t *ep,
                                      const dcx_dc_dest_t *dest, uint8_t type,
                                      const uct_dcx_ctl_msg_t *msg,
                                      size_t msg_len, unsigned tmh_len,
                                      const uint8_t *tmh,
                                      uct_completion_t *comp)
{
    uct_dcx_send_desc_t *desc;
    dcx_send_wr_t wr;
    dcx_sge_t sge;
    uint8_t *data;
    ucs_status_t status;

    if (dci->avail == 0) {
        return UCS_ERR_NO_RESOURCE;
    }

    desc = uct_dcx_iface_get_desc(iface);
    if (desc == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }

    data = uct_dcx_desc_data(desc);
    if (tmh != NULL) {
        memcpy(data, tmh, tmh_len);
    } else {
        memset(data, 0, tmh_len); /* TMH of opcode NO_TAG */
    }
    data[tmh_len] = UCT_DCX_AM_CTL | type;
    if (msg_len > 0) {
        memcpy(data + tmh_len + 1, msg, msg_len);
    }
    desc->op.cb         = uct_dcx_ctl_done;
    desc->op.comp       = comp;
    desc->u.ctl.ah      = dest->ah;
    desc->u.ctl.dctn    = dest->dctn;
    desc->u.ctl.tmh_len = tmh_len;

    uct_dcx_ctl_wr(&wr, &sge, dest, data, tmh_len + 1 + msg_len, desc->lkey, 0);
    status = uct_dcx_dci_post(iface, dci, ep, &wr, &desc->op, 1);
    if (status != UCS_OK) {
        ucs_mpool_put_inline(desc);
    }
    return status;
}

/* A control message small enough for an inline send (no tag header but a
 * NO_TAG one): posted from the stack, with no send buffer; op (may be NULL)
 * fires when the WR completes.  Signalled, as a buffered one: unsignalled
 * control messages measured slower in am_lat (fast placement, paired A/B:
 * 0.180-0.190 against 0.171 us signalled), though ~100 instructions per
 * round trip cheaper.  UCS_ERR_UNSUPPORTED, with
 * nothing posted, when it does not fit the DCI's inline size: the caller
 * sends it through uct_dcx_dci_post_ctl.  The bytes on the wire are those
 * uct_dcx_dci_post_ctl sends. */
ucs_status_t
uct_dcx_dci_post_ctl_inline(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                            uct_dcx_ep_t *ep, const dcx_dc_dest_t *dest,
                            uint8_t type, const uct_dcx_ctl_msg_t *msg,
                            size_t msg_len, unsigned tmh_len, uct_dcx_op_t *op)
{
    uint8_t data[DCX_TM_TMH_LEN + 1 + sizeof(uct_dcx_ctl_msg_t)];
    dcx_send_wr_t wr;
    dcx_sge_t sge;

    if ((tmh_len + 1 + msg_len > iface->config.max_inline) ||
        (tmh_len > DCX_TM_TMH_LEN) || (msg_len > sizeof(*msg))) {
        return UCS_ERR_UNSUPPORTED;
    }
    if (dci->avail == 0) {
        return UCS_ERR_NO_RESOURCE;
    }

    memset(data, 0, tmh_len); /* TMH of opcode NO_TAG */
    data[tmh_len] = UCT_DCX_AM_CTL | type;
    memcpy(data + tmh_len + 1, msg, msg_len);

    uct_dcx_ctl_wr(&wr, &sge, dest, data, tmh_len + 1 + msg_len, 0,
                   DCX_SEND_INLINE);
    return uct_dcx_dci_post(iface, dci, ep, &wr, op, 1);
}

/* An inline grant completed (its op, uct_dcx_iface_send_grants): back to
 * the pool, or, cancelled by another peer's failure on the control DCI,
 * queued again, as uct_dcx_ctl_done does for a grant in a send buffer */
static void uct_dcx_grant_done(uct_dcx_iface_t *iface, uct_dcx_op_t *op,
                               ucs_status_t status)
{
    uct_dcx_grant_t *grant = ucs_container_of(op, uct_dcx_grant_t, op);

    if (status == UCS_ERR_CANCELED) {
        ucs_queue_push(&iface->grant_q, &grant->queue);
        return;
    }
    ucs_mpool_put_inline(grant);
}

/* op is that of a credit grant in flight (inline, or from a send buffer) */
static int uct_dcx_op_is_grant(uct_dcx_op_t *op)
{
    uct_dcx_send_desc_t *desc;
    const uint8_t *data;

    if (op->cb == uct_dcx_grant_done) {
        return 1;
    }
    if (op->cb != uct_dcx_ctl_done) {
        return 0;
    }
    /* the header byte after the TMH (a FIN's says NOP) */
    desc = ucs_container_of(op, uct_dcx_send_desc_t, op);
    data = (const uint8_t *)uct_dcx_desc_data(desc) + desc->u.ctl.tmh_len;
    return data[0] == (UCT_DCX_AM_CTL | UCT_DCX_CTL_FC_GRANT);
}

/* What a flush of the interface waits for on the control DCI and in the
 * queue of control messages still to post: everything but credit grants.
 * A grant is owed to a peer, not an operation of ours: one to a live peer
 * arrives in a round trip, a lost one is asked for again by its requester
 * (FC_REQ_TIMEOUT), and one to an interface closed after it asked (its
 * DCT gone) ends only at the peer-failure timeout, which must not hold
 * our flush (UCX's test_uct_ep.destroy_entity_after_send: a flush per
 * round, each behind the grant to the sender closed the round before).
 * Every grant in flight holds one op and one WR, so the outstanding WRs
 * are all grants when they are as many as the grant ops.  1 if something
 * else is outstanding. */
int uct_dcx_iface_ctl_busy(uct_dcx_iface_t *iface)
{
    uct_dcx_dci_t *dci = &iface->dcis[iface->ctl_dci];
    uint64_t grants    = 0;
    uct_dcx_grant_t *grant;
    uct_dcx_op_t *op;

    ucs_queue_for_each(grant, &iface->grant_q, queue) {
        if (grant->fin) {
            return 1;
        }
    }
    if (uct_dcx_dci_is_drained(dci)) {
        return 0;
    }
    ucs_queue_for_each(op, &dci->ops, queue) {
        if (!uct_dcx_op_is_grant(op)) {
            return 1;
        }
        ++grants;
    }
    return grants != dci->sn - dci->done_sn;
}


/* ---------------------------------------------------------------------------
 * Receive path
 * ------------------------------------------------------------------------- */

const uint8_t uct_dcx_tmh_no_tag[DCX_TM_TMH_LEN] = {0};


void uct_dcx_iface_release_desc(uct_recv_desc_t *self, void *desc)
{
    uct_dcx_iface_t *iface = ucs_container_of(self, uct_dcx_iface_t,
                                              release_desc);

    /* desc = wire + 1 - headroom */
    ucs_mpool_put_inline(UCS_PTR_BYTE_OFFSET(desc,
                                             iface->rx_headroom -
                                                 UCT_DCX_AM_HDR_LEN -
                                                 iface->rx_payload_offset));
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
    if (iface->rx_target < iface->rx_queue_len) {
        uct_dcx_iface_set_rx_target(iface, ucs_min(iface->rx_target * 2,
                                                   iface->rx_queue_len));
        ucs_debug("dcx: %s: receive queue grows to %u buffers",
                  dcx_dev_name(iface->dev), iface->rx_target);
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
    size_t offset   = iface->rx_payload_offset - iface->rx_tmh_len;
    uint32_t length = iface->config.rx_seg_size + iface->rx_tmh_len;
    unsigned count  = 0;
    unsigned n, max, posted;
    void *elem;
    int ret;

    /* in batches of at most UCT_DCX_RX_REPOST_MAX, one device call each;
     * what the loop needs of the iface is read before it (its stores into
     * the buffers and the list would make the compiler read it again) */
    while (iface->rx_posted < iface->rx_target) {
        max = ucs_min(iface->rx_target - iface->rx_posted,
                      (unsigned)UCT_DCX_RX_REPOST_MAX);
        for (n = 0; n < max; ++n) {
            elem = ucs_mpool_get_inline(&iface->rx_mp);
            if (elem == NULL) {
                break;
            }
            list[n].wr_id      = (uintptr_t)elem;
            list[n].sge.addr   = (uintptr_t)elem + offset;
            list[n].sge.length = length;
            memcpy(&list[n].sge.lkey,
                   UCS_PTR_BYTE_OFFSET(elem, UCT_DCX_RX_LKEY_OFFSET),
                   sizeof(list[n].sge.lkey));
        }
        if (n == 0) {
            break;
        }
        ret = dcx_srq_post_recv_list(iface->srq, list, n, &posted);
        iface->rx_posted += posted;
        count += posted;
        if (ucs_unlikely(ret != 0)) {
            uct_dcx_iface_rx_unposted(iface, list, posted, n, ret);
            break;
        }
        if (n < UCT_DCX_RX_REPOST_MAX) {
            break; /* the pool ran dry, or the goal is reached */
        }
    }
    iface->rx_reposts += (count > 0);
    iface->rx_reposted += count;
    return count;
}

/* exported (dcx_* names only) for tests and diagnostics */
__attribute__((visibility("default"))) int
dcx_rx_iface_stats(uct_iface_h tl_iface, dcx_rx_stats_t *stats)
{
    uct_dcx_iface_t *iface;

    if ((tl_iface == NULL) ||
        (tl_iface->ops.ep_put_short != uct_dcx_ep_put_short)) {
        return -1;
    }
    iface           = ucs_derived_of(tl_iface, uct_dcx_iface_t);
    stats->reposts  = iface->rx_reposts;
    stats->reposted = iface->rx_reposted;
    stats->posted   = iface->rx_posted;
    stats->target   = iface->rx_target;
    stats->batch    = iface->rx_repost;
    return 0;
}

void uct_dcx_iface_send_grants(uct_dcx_iface_t *iface)
{
    uct_dcx_dci_t *dci = &iface->dcis[iface->ctl_dci];
    uct_dcx_ctl_msg_t msg;
    uct_dcx_grant_t *grant;
    dcx_dc_dest_t dest;
    ucs_status_t status;

    memset(&msg, 0, sizeof(msg));
    while (!ucs_queue_is_empty(&iface->grant_q)) {
        grant = ucs_queue_head_elem_non_empty(&iface->grant_q, uct_dcx_grant_t,
                                              queue);
        dest.ah     = grant->ah;
        dest.dctn   = grant->dctn;
        dest.dc_key = iface->config.dc_key;
        if (grant->fin) {
            status = uct_dcx_tag_post_fin(iface, dci, &dest, grant);
        } else {
            msg.credits    = grant->credits;
            msg.seq        = grant->seq;
            msg.ep_id      = grant->ep_id;
            /* inline, the grant its own op: no send buffer */
            grant->op.cb   = uct_dcx_grant_done;
            grant->op.comp = NULL;
            status = uct_dcx_dci_post_ctl_inline(iface, dci, NULL, &dest,
                                                 UCT_DCX_CTL_FC_GRANT, &msg,
                                                 ucs_offsetof(uct_dcx_ctl_msg_t,
                                                              port),
                                                 grant->tmh_len, &grant->op);
            if (status == UCS_OK) {
                ucs_queue_pull_non_empty(&iface->grant_q);
                iface->cnt->fc.grants_sent++;
                continue; /* the op owns the grant now */
            }
            if (status == UCS_ERR_UNSUPPORTED) {
                status = uct_dcx_dci_post_ctl(iface, dci, NULL, &dest,
                                              UCT_DCX_CTL_FC_GRANT, &msg,
                                              ucs_offsetof(uct_dcx_ctl_msg_t,
                                                           port),
                                              grant->tmh_len, NULL);
                if (status == UCS_OK) {
                    iface->cnt->fc.grants_sent++;
                    iface->cnt->fc.bufs_sent++;
                }
            }
        }
        if (status != UCS_OK) {
            break; /* retried from progress */
        }
        ucs_queue_pull_non_empty(&iface->grant_q);
        ucs_mpool_put_inline(grant);
    }
}

static UCS_F_NOINLINE void uct_dcx_iface_handle_ctl(uct_dcx_iface_t *iface,
                                                    uint8_t type,
                                                    const uint8_t *data,
                                                    unsigned length)
{
    const uct_dcx_ctl_msg_t *msg = (const uct_dcx_ctl_msg_t *)data;
    size_t min_len               = ucs_offsetof(uct_dcx_ctl_msg_t, port);
    uct_dcx_grant_t *grant;
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
        grant = ucs_mpool_get_inline(&iface->op_mp);
        if (grant == NULL) {
            ucs_error("dcx: out of memory queueing a credit grant");
            return;
        }
        grant->ah      = ah;
        grant->dctn    = msg->dctn;
        grant->credits = msg->credits;
        grant->seq     = msg->seq;
        grant->tmh_len = (msg->flags & UCT_DCX_ADDR_FLAG_TM) ? DCX_TM_TMH_LEN :
                                                               0;
        grant->fin     = 0;
        grant->ep_id   = msg->ep_id;
        ucs_queue_push(&iface->grant_q, &grant->queue);
        uct_dcx_iface_send_grants(iface);
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
                                                   void *elem, uint8_t *wire,
                                                   unsigned length)
{
    if (wire[0] & UCT_DCX_AM_CTL) {
        uct_dcx_iface_handle_ctl(iface, wire[0] & ~UCT_DCX_AM_CTL, wire + 1,
                                 length - 1);
    } else {
        ucs_error("dcx: %s: dropped a message with AM id %u",
                  dcx_dev_name(iface->dev), wire[0]);
    }
    ucs_mpool_put_inline(elem);
}

/* A whole message in the receive buffer elem: AM or control message */
static UCS_F_ALWAYS_INLINE void
uct_dcx_iface_rx_am_inline(uct_dcx_iface_t *iface, void *elem, uint8_t *wire,
                           unsigned length)
{
    uct_recv_desc_t *rdesc;
    ucs_status_t status;

    if (ucs_unlikely(wire[0] >= UCT_AM_ID_MAX)) {
        uct_dcx_iface_rx_not_am(iface, elem, wire, length);
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
        memcpy(wire + 1 - iface->rx_headroom - sizeof(rdesc), &rdesc,
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
        iface->rx_posted--;
        if (ucs_unlikely((wc[i].status != DCX_WC_SUCCESS) ||
                         (wc[i].byte_len < UCT_DCX_AM_HDR_LEN))) {
            uct_dcx_iface_rx_error(iface, &wc[i]);
            ucs_mpool_put_inline(elem);
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
unsigned uct_dcx_iface_progress(uct_iface_h tl_iface)
{
    return uct_dcx_iface_progress_common(ucs_derived_of(tl_iface,
                                                        uct_dcx_iface_t),
                                         uct_dcx_iface_rx_wcs);
}
