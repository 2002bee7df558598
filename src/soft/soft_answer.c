/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device responder: what its message handlers (soft_resp.c) and the
 * tag-matching engine (soft_tm.c) both build on: the DCT a request packet
 * names, the receive a message takes from the DCT's SRQ (and the signal
 * to the SRQ's watcher when there is none), and the answers
 * (responses, NAKs, acknowledgements by packet or in the requester's ack
 * table) with the end of a message.  Below both, calling neither.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_dgram.h"
#include "soft_srq.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* The DCT a request names (soft_dgram.h) */
soft_qp_t *soft_resp_dct(soft_dev_t *dev, const soft_pkt_t *pkt)
{
    soft_qp_t *dct = soft_dct_at(dev, pkt->dst_qpn);

    if ((dct == NULL) || (dct->super.state == DCX_QPS_ERR)) {
        dev->stats.bad_dctn_drops++;
        return NULL;
    }
    if (pkt->dc_key != dct->dc_key) {
        dev->stats.dc_key_violations++;
        return NULL;
    }
    return dct;
}

/* Pushes one response to the requester; dropped if it does not fit. */
void soft_resp_send(soft_dev_t *dev, soft_rstate_t *rs, const soft_pkt_t *req,
                    uint8_t op, uint8_t status, uint64_t arg, uint64_t offset,
                    const void *data, uint32_t len, uint8_t flags)
{
    soft_port_hdr_t *hdr = soft_peer_map(dev, rs->peer);
    soft_pkt_t *pkt;
    void *payload;
    uint64_t pos;

    if ((hdr == NULL) || __atomic_load_n(&hdr->killed, __ATOMIC_RELAXED) ||
        (len > hdr->resp.payload)) {
        return;
    }
    pkt = soft_ring_reserve_c(hdr, &hdr->resp, dev->pid,
                              &rs->peer->resp_freed_seen, &payload, &pos);
    if (pkt == NULL) {
        dev->stats.resp_drops++;
        return;
    }
    /* the slot holds its last packet (soft_ring.h, "Ring slots"): the fields a
     * response does not carry are zero */
    memset(pkt, 0, sizeof(*pkt));
    pkt->op        = op;
    pkt->flags     = flags;
    pkt->status    = status;
    pkt->len       = len;
    pkt->src_pid   = dev->pid;
    pkt->src_inst  = (uint16_t)dev->inst;
    pkt->src_token = dev->token;
    pkt->src_qpn   = req->dst_qpn;
    pkt->dst_qpn   = req->src_qpn;
    pkt->msn       = req->msn;
    pkt->offset    = offset;
    pkt->total_len = req->total_len;
    pkt->args[0]   = arg;
    if (len > 0) {
        memcpy(payload, data, len);
    }
    dev->stats.futex_wakes += soft_ring_publish(hdr, &hdr->resp, pos);
    dev->stats.tx_packets++;
    dev->stats.tx_bytes += len;
}

void soft_resp_nak(soft_dev_t *dev, soft_rstate_t *rs, const soft_pkt_t *pkt,
                   uint8_t status)
{
    rs->msg_err    = 1;
    rs->msg_status = status;
    rs->wack_hold  = 1;
    rs->hold_msn   = pkt->msn;
    soft_resp_send(dev, rs, pkt, SOFT_OP_NAK, status, 0, 0, NULL, 0, 0);
}

/* Publishes message pkt->msn's acknowledgement in the requester's ack
 * table at once; 0 if that cannot be done (soft_resp_ack_entry). */
static int soft_resp_ack_word(soft_dev_t *dev, soft_rstate_t *rs,
                              const soft_pkt_t *pkt)
{
    soft_ack_t *a = soft_resp_ack_entry(dev, rs, pkt);

    if (a == NULL) {
        return 0;
    }
    soft_ack_publish(a, soft_ack_word(pkt));
    dev->stats.acks_in_table++;
    dev->stats.table_stores++;
    if (pkt->flags & SOFT_PKT_WKICK) {
        dev->stats.futex_wakes += soft_port_kick(rs->peer->hdr);
    }
    return 1;
}

/* Acknowledges message pkt->msn, finished successfully. */
void soft_resp_ack(soft_dev_t *dev, soft_rstate_t *rs, const soft_pkt_t *pkt)
{
    if ((pkt->flags & SOFT_PKT_WACK) && soft_resp_ack_word(dev, rs, pkt)) {
        return;
    }
    soft_resp_send(dev, rs, pkt, SOFT_OP_ACK, 0, 0, 0, NULL, 0, 0);
}

/* Message e is finished (answered): move on. */
void soft_resp_finish(soft_rstate_t *rs)
{
    if (!rs->msg_err) {
        rs->msg_status = DCX_WC_SUCCESS;
    }
    rs->e++;
    rs->cur_off = 0;
    rs->msg_err = 0;
}

/* Engine lock held: a message found srq empty; its watcher learns it */
void soft_srq_found_empty(soft_srq_t *srq)
{
    uint64_t one = 1;

    if ((srq->watch_fd >= 0) &&
        (write(srq->watch_fd, &one, sizeof(one)) != sizeof(one))) {
        dcx_debug("%s: srq %p: its watcher's fd refused a write: %s",
                  srq->dev->super.caps.name, (void *)srq, strerror(errno));
    }
}

/* Takes a receive for the message; 0 if none (RNR NAK sent). */
int soft_resp_take_recv(soft_dev_t *dev, soft_qp_t *dct, soft_rstate_t *rs,
                        const soft_pkt_t *pkt)
{
    soft_srq_t *srq = dct->srq;
    const soft_rwqe_t *wqe;

    if (rs->have_recv) {
        return 1;
    }
    if (srq->head == srq->tail) {
        dev->stats.rnr_naks_sent++;
        soft_srq_found_empty(srq);
        soft_resp_send(dev, rs, pkt, SOFT_OP_RNR_NAK, 0, dct->rnr_delay_us, 0,
                       NULL, 0, 0);
        return 0;
    }
    wqe              = soft_srq_head(srq);
    /* the used part only: a whole WQE is ~500 bytes, most of them unused
     * SGE slots */
    rs->recv.wr_id   = wqe->wr_id;
    rs->recv.num_sge = wqe->num_sge;
    memcpy(rs->recv.sge, wqe->sge, wqe->num_sge * sizeof(wqe->sge[0]));
    rs->have_recv = 1;
    rs->dct       = dct;
    soft_srq_pop(srq);
    return 1;
}
