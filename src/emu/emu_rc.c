/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: RC queue pairs between any two ports of the fabric.
 *
 * The soft device's transport is DC, and an RC connection is what DC does
 * with one fixed destination, so an RC QP is built from the two halves of
 * DC: its requester is a soft DCI (qp->soft) whose every request goes to
 * the peer named at INIT->RTR, and its responder a soft DCT (qp->resp),
 * made when the QP is created so that the QP has its number from the
 * start, as an RC QP does.  The QP's number is the DCT's (where a peer's
 * requests go); the DCI's number (send_num) keys the device's QP map, so
 * that the DCI's completions find the QP and carry its number.  The
 * responder takes its receives from the QP's SRQ or, without one, from a
 * receive queue of the QP's own (an SRQ of the emulation that nobody else
 * sees), and completes them on the QP's receive CQ.
 *
 * A real RC responder accepts requests from its connected peer only.
 * Here that peer is told by the DC key: at INIT->RTR both ends derive the
 * same key from the requester's and the responder's (LID, QP number), the
 * responder arms its DCT with the key of the requests it may take, and
 * every request of the requester carries the key of its peer.  Until RTR,
 * and again from RESET or ERR, the DCT's key is one nobody derives, and
 * requests meant for the QP are dropped (their sender retries and fails
 * with IBV_WC_RETRY_EXC_ERR, as when an RC peer is not ready).
 *
 * ibv_post_send and ibv_post_recv are emu_post.c's.  The move into ERR
 * flushes the QP's own receive queue, and RESET empties it
 * (emu_qp_modify.c, through the soft DCT).
 */
#include "emu/emu_raw.h"
#include "soft/dcx_soft.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The DC key of the requests from (req_lid, req_qpn) to (resp_lid,
 * resp_qpn): a 64-bit mix of the four, never 0 */
static uint64_t emu_rc_key(uint16_t req_lid, uint32_t req_qpn,
                           uint16_t resp_lid, uint32_t resp_qpn)
{
    uint64_t z = ((uint64_t)req_lid << 48) ^ ((uint64_t)req_qpn << 24) ^
                 ((uint64_t)resp_lid << 36) ^ resp_qpn ^ 0x5243a11ce5d0c0deull;

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (z ^ (z >> 31)) | 1;
}

/* The key of a closed responder: even, so no derived key matches it */
static uint64_t emu_rc_closed_key(const emu_qp_t *qp)
{
    return emu_rc_key(0, (uint32_t)(uintptr_t)qp, 0, 0) & ~1ull;
}

int emu_rc_init(emu_qp_t *qp, struct ibv_qp_init_attr_ex *attr,
                const char *name)
{
    struct ibv_srq_init_attr rq_attr;
    const dcx_dev_caps_t *caps = dcx_dev_caps(qp->ctx->dev->soft);
    dcx_qp_attr_t sa;
    uint32_t num;
    int ret;

    qp->send_num = qp->qpx.qp_base.qp_num;
    if (attr->srq != NULL) {
        qp->srq                = (emu_srq_t *)attr->srq;
        attr->cap.max_recv_wr  = 0; /* as libmlx5: no queue of its own */
        attr->cap.max_recv_sge = 0;
    } else {
        if ((attr->cap.max_recv_wr > caps->max_srq_wr) ||
            (attr->cap.max_recv_sge > caps->max_recv_sge)) {
            emu_error("%s: create_qp: max_recv_wr %u (<= %u) or max_recv_sge "
                      "%u (<= %u) out of range",
                      name, attr->cap.max_recv_wr, caps->max_srq_wr,
                      attr->cap.max_recv_sge, caps->max_recv_sge);
            return EINVAL;
        }
        /* a QP that takes no receives still has a queue the responder
         * looks at: empty, it answers RNR */
        memset(&rq_attr, 0, sizeof(rq_attr));
        rq_attr.attr.max_wr  = attr->cap.max_recv_wr ?: 1;
        rq_attr.attr.max_sge = attr->cap.max_recv_sge ?: 1;
        qp->rq               = emu_srq_new(attr->pd, &rq_attr, NULL);
        if (qp->rq == NULL) {
            return errno;
        }
        qp->srq               = qp->rq;
        qp->rq_max_wr         = attr->cap.max_recv_wr ? rq_attr.attr.max_wr : 0;
        attr->cap.max_recv_wr = qp->rq_max_wr;
        attr->cap.max_recv_sge = qp->rq_max_wr ? rq_attr.attr.max_sge : 0;
    }
    memset(&sa, 0, sizeof(sa));
    sa.type    = DCX_QPT_DCT;
    sa.send_cq = qp->send_cq->soft;
    sa.recv_cq = qp->recv_cq->soft;
    sa.srq     = qp->srq->soft;
    sa.dc_key  = emu_rc_closed_key(qp);
    ret        = dcx_qp_create(attr->pd ? emu_pd(attr->pd)->soft : NULL, &sa,
                        &qp->resp);
    if (ret == 0) {
        __atomic_add_fetch(&qp->srq->refs, 1, __ATOMIC_RELEASE);
        num = qp->resp->qp_num;
        if (num - qp->ctx->dev->qpn_base >= EMU_QPN_SPAN) {
            emu_error("%s: create_qp: soft QP number 0x%x outside the "
                      "port's window of %u numbers from 0x%x",
                      name, num, EMU_QPN_SPAN, qp->ctx->dev->qpn_base);
            ret = ENOMEM;
        }
    } else {
        emu_error("%s: create_qp: the soft device refused the RC responder "
                  "(%s)",
                  name, strerror(ret));
    }
    if (ret != 0) {
        emu_rc_fini(qp);
        return ret;
    }
    qp->qpx.qp_base.qp_num = num;
    return 0;
}

void emu_rc_fini(emu_qp_t *qp)
{
    if (qp->resp != NULL) {
        dcx_qp_destroy(qp->resp);
        qp->resp = NULL;
        __atomic_sub_fetch(&qp->srq->refs, 1, __ATOMIC_RELEASE);
    }
    if (qp->rq != NULL) {
        ibv_destroy_srq(&qp->rq->srq);
        qp->rq = NULL;
    }
    qp->srq = NULL;
    if (qp->rc_ah != NULL) {
        ibv_destroy_ah(qp->rc_ah);
        qp->rc_ah = NULL;
    }
}

/* INIT->RTR: the peer's address and number; the responder takes the
 * peer's requests from now on */
static int emu_rc_to_rtr(emu_qp_t *qp, const struct ibv_qp_attr *a)
{
    const char *name = qp->qpx.qp_base.context->device->name;
    uint16_t lid     = qp->ctx->dev->lid;
    uint32_t qpn     = qp->qpx.qp_base.qp_num;
    struct ibv_ah_attr ah_attr;
    struct ibv_ah *ah;
    int ret;

    if ((a->ah_attr.dlid == 0) || (a->dest_qp_num > 0xffffff)) {
        emu_error("%s: rc qp 0x%x: INIT->RTR to qp 0x%x at LID %u: no such "
                  "LID or QP number on an InfiniBand fabric",
                  name, qpn, a->dest_qp_num, a->ah_attr.dlid);
        return EINVAL;
    }
    ah_attr          = a->ah_attr;
    ah_attr.port_num = 1;
    ah               = ibv_create_ah(qp->qpx.qp_base.pd, &ah_attr);
    if (ah == NULL) {
        return errno;
    }
    ret = dcx_soft_dct_set(qp->resp,
                           emu_rc_key(a->ah_attr.dlid, a->dest_qp_num, lid,
                                      qpn),
                           emu_dcx_access(qp->rc_access), a->min_rnr_timer);
    if (ret != 0) {
        ibv_destroy_ah(ah);
        return ret;
    }
    if (qp->rc_ah != NULL) {
        ibv_destroy_ah(qp->rc_ah);
    }
    qp->rc_ah       = ah;
    qp->rc_dest_qpn = a->dest_qp_num;
    qp->rc_min_rnr  = a->min_rnr_timer;
    qp->rc_key      = emu_rc_key(lid, qpn, a->ah_attr.dlid, a->dest_qp_num);
    qp->rc_resp_key = emu_rc_key(a->ah_attr.dlid, a->dest_qp_num, lid, qpn);
    return 0;
}

int emu_rc_modify(emu_qp_t *qp, const struct ibv_qp_attr *a, int mask,
                  enum ibv_qp_state to)
{
    if ((to == IBV_QPS_RESET) || (to == IBV_QPS_ERR)) {
        qp->rc_resp_key = 0;
        return dcx_soft_dct_set(qp->resp, emu_rc_closed_key(qp), 0, 0);
    }
    if (mask & IBV_QP_ACCESS_FLAGS) {
        qp->rc_access = a->qp_access_flags;
    }
    if (to == IBV_QPS_RTR) {
        return emu_rc_to_rtr(qp, a);
    }
    if ((mask & (IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER)) &&
        (qp->rc_resp_key != 0)) {
        if (mask & IBV_QP_MIN_RNR_TIMER) {
            qp->rc_min_rnr = a->min_rnr_timer;
        }
        return dcx_soft_dct_set(qp->resp, qp->rc_resp_key,
                                emu_dcx_access(qp->rc_access), qp->rc_min_rnr);
    }
    return 0;
}

void emu_rc_dest(emu_qp_t *qp, dcx_send_wr_t *wr)
{
    const emu_route_t *route = emu_ah_route((emu_ah_t *)qp->rc_ah);

    /* a number outside the LID owner's window names no soft QP there */
    wr->dest.ah     = route->soft;
    wr->dest.dctn   = emu_qpn_at(route->qpn_base, qp->rc_dest_qpn);
    wr->dest.dc_key = qp->rc_key;
}
