/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: datagrams.  A DCI made a datagram DCI
 * (dcx_soft_qp_set_datagram) sends each SEND or SEND_IMM as one packet of
 * at most the MTU, flagged SOFT_PKT_DGRAM, and completes it as soon as it
 * is in the target's ring, or lost (no target, a dead one, or one whose
 * ring stayed full past the DCI's ack timeout): the loss of a datagram is
 * silent and never moves the DCI to ERR.  Its packets name wire_qpn as
 * their source, the number the receiver reports in src_qp, and its
 * completions carry wc_qpn.
 *
 * At the target a datagram bypasses the responder's per-source state: the
 * DCT named by the packet takes it when the DC key matches and its SRQ
 * has a receive, completing that receive with the source's number; a
 * datagram longer than the receive completes it with a local length
 * error; with no receive posted it is dropped.  Nothing is answered.
 * This is what an InfiniBand UD queue pair does, on the DC engine: the
 * mlx5 emulation builds its UD QPs from a datagram DCI and a DCT.
 */
#include "soft.h"
#include "soft_dgram.h"
#include "soft_srq.h"
#include "soft_stream.h"
#include "dcx_soft.h"

#include <errno.h>
#include <string.h>

int dcx_soft_qp_set_datagram(dcx_qp_t *qp_, uint32_t wire_qpn, uint32_t wc_qpn)
{
    soft_qp_t *qp;
    soft_dev_t *dev;

    if (!dcx_dev_is_soft(qp_->dev) || (qp_->type != DCX_QPT_DCI) ||
        soft_qp_has_streams((soft_qp_t *)qp_)) {
        dcx_error("%s: qp 0x%x: datagram mode: not a soft DCI without "
                  "streams",
                  dcx_dev_name(qp_->dev), qp_->qp_num);
        return EINVAL;
    }
    qp  = (soft_qp_t *)qp_;
    dev = qp->dev;
    soft_lock(&dev->lock);
    if (qp->sq_head != qp->sq_tail) {
        soft_unlock(&dev->lock);
        dcx_error("%s: dci 0x%x: datagram mode asked for with WRs "
                  "outstanding",
                  dev->super.caps.name, qp->super.qp_num);
        return EBUSY;
    }
    qp->datagram = 1;
    qp->wire_qpn = wire_qpn;
    qp->wc_qpn   = wc_qpn;
    if (qp->super.post_send == qp->post_ready) { /* ready: switch now */
        __atomic_store_n(&qp->super.post_send, soft_dgram_post_send,
                         __ATOMIC_RELEASE);
    }
    qp->post_ready = soft_dgram_post_send;
    soft_unlock(&dev->lock);
    return 0;
}

/* The LID of a datagram's source port (0: unknown) */
static uint16_t soft_dgram_slid(soft_dev_t *dev, const soft_pkt_t *pkt)
{
    soft_peer_t *peer = soft_peer_get(dev, pkt->src_pid, pkt->src_inst,
                                      pkt->src_token);

    return ((peer != NULL) && (soft_peer_map(dev, peer) != NULL)) ?
               peer->hdr->lid :
               0;
}

static void soft_dgram_cqe(soft_dev_t *dev, soft_qp_t *dct,
                           const soft_pkt_t *pkt, uint64_t wr_id,
                           uint8_t status)
{
    int imm = (pkt->op == DCX_WR_SEND_IMM);
    dcx_wc_t wc;

    memset(&wc, 0, sizeof(wc));
    wc.wr_id  = wr_id;
    wc.status = status;
    wc.opcode = DCX_WC_RECV;
    wc.flags  = (imm && (status == DCX_WC_SUCCESS)) ? DCX_WC_FLAG_WITH_IMM : 0;
    wc.imm    = imm ? pkt->imm : 0;
    wc.byte_len = (status == DCX_WC_SUCCESS) ? pkt->len : 0;
    wc.qp_num   = dct->super.qp_num;
    wc.src_qp   = pkt->src_qpn;
    wc.slid     = soft_dgram_slid(dev, pkt);
    if (soft_cq_push(dct->cq, &wc, NULL, 0) != 0) {
        dcx_warn("%s: dct 0x%x: receive completion queue overrun, a "
                 "datagram's completion lost",
                 dev->super.caps.name, dct->super.qp_num);
    }
}

void soft_resp_dgram(soft_dev_t *dev, const soft_pkt_t *pkt,
                     const void *payload)
{
    soft_rwqe_t wqe;
    uint64_t room = 0;
    soft_srq_t *srq;
    soft_qp_t *dct;
    unsigned i;

    if (((pkt->op != DCX_WR_SEND) && (pkt->op != DCX_WR_SEND_IMM)) ||
        (pkt->len > dev->limits.mtu)) {
        dcx_debug("%s: dropping malformed datagram (opcode %u, %u bytes)",
                  dev->super.caps.name, pkt->op, pkt->len);
        return;
    }
    dct = soft_resp_dct(dev, pkt);
    if (dct == NULL) {
        return;
    }
    srq = dct->srq;
    if ((srq->tm != NULL) || (srq->head == srq->tail)) {
        soft_srq_found_empty(srq);
        return; /* no receive (a tag-matching SRQ takes none): lost */
    }
    wqe.wr_id   = soft_srq_head(srq)->wr_id;
    wqe.num_sge = soft_srq_head(srq)->num_sge;
    memcpy(wqe.sge, soft_srq_head(srq)->sge, wqe.num_sge * sizeof(wqe.sge[0]));
    soft_srq_pop(srq);
    for (i = 0; i < wqe.num_sge; ++i) {
        if (!soft_sge_ok(dev, &wqe.sge[i], DCX_ACCESS_LOCAL_WRITE,
                         srq->super.pd)) {
            soft_dgram_cqe(dev, dct, pkt, wqe.wr_id, DCX_WC_LOC_PROT_ERR);
            return;
        }
        room += wqe.sge[i].length;
    }
    if (pkt->len > room) {
        soft_dgram_cqe(dev, dct, pkt, wqe.wr_id, DCX_WC_LOC_LEN_ERR);
        return;
    }
    if (soft_sge_scatter(dev, payload, wqe.sge, wqe.num_sge, 0, pkt->len) !=
        0) {
        soft_dgram_cqe(dev, dct, pkt, wqe.wr_id, DCX_WC_LOC_PROT_ERR);
        return;
    }
    dev->stats.rx_packets++;
    dev->stats.rx_bytes += pkt->len;
    soft_dgram_cqe(dev, dct, pkt, wqe.wr_id, DCX_WC_SUCCESS);
}
