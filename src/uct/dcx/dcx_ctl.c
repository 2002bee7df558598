/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: the send side of the transport's control messages.  A
 * control message is a SEND whose header byte has UCT_DCX_AM_CTL set
 * (dcx.h): a no-op (flush marker, endpoint check), a credit request of an
 * endpoint (FC_REQ, on the endpoint's DCI), a credit grant answering one
 * (FC_GRANT, on the control DCI, queued in iface->grant_q until it can go
 * out), or the FIN of a rendezvous that the device matched but left to
 * software (a no-op behind a FIN tag-matching header).  Posting them, what
 * happens when they complete (a grant or a FIN cancelled by another peer's
 * failure on the control DCI is queued again), and which of them a flush of
 * the interface waits for.  The receive side (what a peer's control
 * message does here) is in dcx_rx.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.inl"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <string.h>


/* ---------------------------------------------------------------------------
 * Posting
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

/* A control message from a send buffer: the header byte of type after a
 * TMH of tmh_len bytes (tmh, or, NULL, a NO_TAG one), then msg_len bytes
 * of msg; comp (may be NULL) is called when the WR completes */
static ucs_status_t
uct_dcx_dci_post_ctl_tmh(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                         uct_dcx_ep_t *ep, const dcx_dc_dest_t *dest,
                         uint8_t type, const uct_dcx_ctl_msg_t *msg,
                         size_t msg_len, unsigned tmh_len, const uint8_t *tmh,
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

/* The same with a NO_TAG TMH (tmh_len 0 or 16 bytes) */
ucs_status_t uct_dcx_dci_post_ctl(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                                  uct_dcx_ep_t *ep, const dcx_dc_dest_t *dest,
                                  uint8_t type, const uct_dcx_ctl_msg_t *msg,
                                  size_t msg_len, unsigned tmh_len,
                                  uct_completion_t *comp)
{
    return uct_dcx_dci_post_ctl_tmh(iface, dci, ep, dest, type, msg, msg_len,
                                    tmh_len, NULL, comp);
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
static ucs_status_t
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

/* ---------------------------------------------------------------------------
 * Credit requests, grants and rendezvous FINs
 * ------------------------------------------------------------------------- */

/* Posts a credit request of ep on its DCI, which has a free slot */
ucs_status_t uct_dcx_ep_fc_post_req(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep,
                                    uint8_t seq)
{
    uct_dcx_ctl_msg_t msg;
    dcx_dc_dest_t dest;
    ucs_status_t status;
    size_t len;

    memset(&msg, 0, sizeof(msg));
    msg.credits  = iface->fc.wnd - iface->fc.thresh;
    msg.addr_len = iface->config.port_len;
    msg.seq      = seq;
    msg.dctn     = iface->config.dctn;
    msg.ep_id    = ep->ext->id;
    msg.flags    = iface->rx.tmh_len ? UCT_DCX_ADDR_FLAG_TM : 0;
    memcpy(msg.port, iface->config.port, iface->config.port_len);

    /* On the ep's own DCI, after the messages it asks credits for; if the
     * peer is gone, the failure is the ep's.  Inline when it fits (no send
     * buffer), else from a send buffer. */
    uct_dcx_ep_dest(ep, &dest);
    len    = ucs_offsetof(uct_dcx_ctl_msg_t, port) + iface->config.port_len;
    status = uct_dcx_dci_post_ctl_inline(iface, uct_dcx_ep_dci(iface, ep), ep,
                                         &dest, UCT_DCX_CTL_FC_REQ, &msg, len,
                                         ep->tmh_len, NULL);
    if (status == UCS_ERR_UNSUPPORTED) {
        status = uct_dcx_dci_post_ctl(iface, uct_dcx_ep_dci(iface, ep), ep,
                                      &dest, UCT_DCX_CTL_FC_REQ, &msg, len,
                                      ep->tmh_len, NULL);
        iface->cnt->fc.bufs_sent += (status == UCS_OK);
    }
    iface->cnt->fc.reqs_sent += (status == UCS_OK);
    return status;
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

/* The FIN of a rendezvous whose request our device matched but did not
 * complete: to the sender's DCT, TMH opcode FIN with its operation's
 * app_ctx, then one control byte (a no-op) */
static ucs_status_t uct_dcx_ctl_post_fin(uct_dcx_iface_t *iface,
                                         uct_dcx_dci_t *dci,
                                         const dcx_dc_dest_t *dest,
                                         const uct_dcx_grant_t *fin)
{
    uint8_t tmh[DCX_TM_TMH_LEN];

    dcx_tmh_pack(tmh, DCX_TMH_FIN, fin->app_ctx, fin->ep_id);
    return uct_dcx_dci_post_ctl_tmh(iface, dci, NULL, dest, UCT_DCX_CTL_NOP,
                                    NULL, 0, DCX_TM_TMH_LEN, tmh, NULL);
}

/* Posts the grants (and FINs) of iface->grant_q on the control DCI, in
 * order, until one cannot go out now (retried from progress) */
void uct_dcx_iface_send_grants(uct_dcx_iface_t *iface)
{
    uct_dcx_dci_t *dci = &iface->pool.dcis[iface->pool.ctl];
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
            status = uct_dcx_ctl_post_fin(iface, dci, &dest, grant);
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

/* A peer asked for credits (msg, an FC_REQ; ah: its port): the grant is
 * queued and sent with those before it */
void uct_dcx_iface_queue_grant(uct_dcx_iface_t *iface, dcx_ah_t *ah,
                               const uct_dcx_ctl_msg_t *msg)
{
    uct_dcx_grant_t *grant = ucs_mpool_get_inline(&iface->op_mp);

    if (grant == NULL) {
        ucs_error("dcx: out of memory queueing a credit grant");
        return;
    }
    grant->ah      = ah;
    grant->dctn    = msg->dctn;
    grant->credits = msg->credits;
    grant->seq     = msg->seq;
    grant->tmh_len = (msg->flags & UCT_DCX_ADDR_FLAG_TM) ? DCX_TM_TMH_LEN : 0;
    grant->fin     = 0;
    grant->ep_id   = msg->ep_id;
    ucs_queue_push(&iface->grant_q, &grant->queue);
    uct_dcx_iface_send_grants(iface);
}

/* ---------------------------------------------------------------------------
 * What a flush of the interface waits for
 * ------------------------------------------------------------------------- */

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
    uct_dcx_dci_t *dci = &iface->pool.dcis[iface->pool.ctl];
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
