/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device requester and completer: the engine side of a DCI.
 *
 * A DCI's send queue is a ring of WQEs walked by four indexes:
 *   sq_tail <= sq_comp <= sq_send <= sq_head
 * tail: oldest slot not yet retired by a polled CQE (ENOMEM accounting);
 * comp: oldest WQE not completed; send: next WQE to transmit; head: next post.
 * WQEs in [comp, send) are on the wire.  Every WQE walks the states of
 * soft_wqe_state_t; errors complete in order and move the DCI to ERR.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_stream.h"
#include "soft_light.h"
#include "soft_acked.h"
#include "soft_atomic.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *soft_wqe_state_names[SOFT_WQE_STATE_LAST] = {
    [SOFT_WQE_POSTED]    = "posted",
    [SOFT_WQE_SENDING]   = "sending",
    [SOFT_WQE_WAIT_RESP] = "wait-response",
    [SOFT_WQE_DONE]      = "done"};

#define V SOFT_OPF_VALID
/* clang-format off */
const soft_opinfo_t soft_opinfo[SOFT_OPCODE_MAX] = {
    [DCX_WR_SEND]           = { "SEND", V | SOFT_OPF_PAYLOAD | SOFT_OPF_RECV,
                                DCX_WC_SEND, 0 },
    [DCX_WR_SEND_IMM]       = { "SEND_IMM", V | SOFT_OPF_PAYLOAD |
                                SOFT_OPF_RECV | SOFT_OPF_IMM, DCX_WC_SEND, 0 },
    [DCX_WR_RDMA_WRITE]     = { "RDMA_WRITE", V | SOFT_OPF_PAYLOAD |
                                SOFT_OPF_RDMA, DCX_WC_RDMA_WRITE,
                                DCX_ACCESS_REMOTE_WRITE },
    [DCX_WR_RDMA_WRITE_IMM] = { "RDMA_WRITE_IMM", V | SOFT_OPF_PAYLOAD |
                                SOFT_OPF_RDMA | SOFT_OPF_RECV | SOFT_OPF_IMM,
                                DCX_WC_RDMA_WRITE, DCX_ACCESS_REMOTE_WRITE },
    [DCX_WR_RDMA_READ]      = { "RDMA_READ", V | SOFT_OPF_RDMA |
                                SOFT_OPF_READ, DCX_WC_RDMA_READ,
                                DCX_ACCESS_REMOTE_READ },
    [DCX_WR_ATOMIC_FADD]    = { "ATOMIC_FADD", V | SOFT_OPF_RDMA |
                                SOFT_OPF_ATOMIC, DCX_WC_FETCH_ADD,
                                DCX_ACCESS_REMOTE_ATOMIC },
    [DCX_WR_ATOMIC_CSWAP]   = { "ATOMIC_CSWAP", V | SOFT_OPF_RDMA |
                                SOFT_OPF_ATOMIC, DCX_WC_COMP_SWAP,
                                DCX_ACCESS_REMOTE_ATOMIC },
    [DCX_WR_ATOMIC_MASKED_FADD]  = { "ATOMIC_MASKED_FADD", V | SOFT_OPF_RDMA |
                                     SOFT_OPF_ATOMIC, DCX_WC_MASKED_FETCH_ADD,
                                     DCX_ACCESS_REMOTE_ATOMIC },
    [DCX_WR_ATOMIC_MASKED_CSWAP] = { "ATOMIC_MASKED_CSWAP", V | SOFT_OPF_RDMA |
                                     SOFT_OPF_ATOMIC, DCX_WC_MASKED_COMP_SWAP,
                                     DCX_ACCESS_REMOTE_ATOMIC },
    /* executed by the DCI itself (soft_mkey.c); never on the wire */
    [DCX_WR_MKEY_INTERLEAVED]    = { "MKEY_INTERLEAVED", SOFT_OPF_MKEY,
                                     DCX_WC_UMR, 0 },
    [DCX_WR_MKEY_LIST]           = { "MKEY_LIST", SOFT_OPF_MKEY, DCX_WC_UMR,
                                     0 },
    [DCX_WR_MKEY_INVALIDATE]     = { "MKEY_INVALIDATE", SOFT_OPF_MKEY,
                                     DCX_WC_LOCAL_INV, 0 }
};
/* clang-format on */
#undef V

/* Copies 'len' bytes at byte 'off' of an sg list: into 'gather' if it is
 * not NULL, else from 'scatter' into the list.  The list was checked
 * (soft_sge_ok); an sge over a strided key goes through its layout.  0, or
 * EFAULT if memory of the list was found unmapped (the copy stops there). */
static int soft_sge_walk(soft_dev_t *dev, const dcx_sge_t *sge,
                         unsigned num_sge, uint64_t off, uint64_t len,
                         uint8_t *gather, const uint8_t *scatter)
{
    unsigned i;

    for (i = 0; (i < num_sge) && (len > 0); ++i) {
        uint64_t chunk;
        soft_mr_t *key;
        uint8_t *a;

        if (off >= sge[i].length) {
            off -= sge[i].length;
            continue;
        }
        chunk = sge[i].length - off;
        if (chunk > len) {
            chunk = len;
        }
        if ((dev->num_mkeys != 0) &&
            ((key = soft_key_lookup(dev, sge[i].lkey)) != NULL) &&
            (key->mkey != NULL)) {
            if (gather != NULL) {
                soft_mkey_local_copy(dev, key, sge[i].addr + off, gather, chunk,
                                     0);
                gather += chunk;
            } else {
                soft_mkey_local_copy(dev, key, sge[i].addr + off,
                                     (void *)scatter, chunk, 1);
                scatter += chunk;
            }
            len -= chunk;
            off = 0;
            continue;
        }
        a = (uint8_t *)(uintptr_t)(sge[i].addr + off);
        if (gather != NULL) {
            if (dev->local_in(dev, gather, a, chunk) != 0) {
                return EFAULT;
            }
            gather += chunk;
        } else {
            if (dev->local_out(dev, a, scatter, chunk) != 0) {
                return EFAULT;
            }
            scatter += chunk;
        }
        len -= chunk;
        off = 0;
    }
    return 0;
}

int soft_sge_gather(soft_dev_t *dev, void *buf, const dcx_sge_t *sge,
                    unsigned num_sge, uint64_t off, uint64_t len)
{
    return soft_sge_walk(dev, sge, num_sge, off, len, buf, NULL);
}

int soft_sge_scatter(soft_dev_t *dev, const void *buf, const dcx_sge_t *sge,
                     unsigned num_sge, uint64_t off, uint64_t len)
{
    return soft_sge_walk(dev, sge, num_sge, off, len, NULL, buf);
}

/* ------------------------------------------------------------------------
 * Completer
 * ------------------------------------------------------------------------ */
void soft_wqe_release(soft_qp_t *qp, soft_swqe_t *w)
{
    if (w->mkw != NULL) {
        soft_mkey_wr_free(w);
    }
    qp->dev->resp_credits += w->credits;
    w->credits = 0;
    if (w->rd_counted) {
        qp->rd_atomic--;
        w->rd_counted = 0;
    }
}

int soft_wqe_push_cqe(soft_qp_t *qp, soft_swqe_t *w, uint32_t idx,
                      uint8_t status, uint32_t byte_len)
{
    dcx_wc_t wc;

    soft_wqe_wc(qp, w, status, byte_len, &wc);
    return soft_cq_push(qp->cq, &wc, qp, idx);
}

void soft_qp_to_error(soft_qp_t *qp, const char *reason)
{
    uint32_t idx;

    if (qp->super.state == DCX_QPS_ERR) {
        return;
    }
    dcx_debug("%s: dci 0x%x to error: %s", soft_qp_dev_name(qp),
              qp->super.qp_num, reason);
    __atomic_store_n(&qp->super.state, DCX_QPS_ERR, __ATOMIC_RELAXED);
    soft_qp_flush_mode(qp);
    for (idx = qp->sq_comp; idx != qp->sq_head; ++idx) {
        soft_swqe_t *w = soft_wqe(qp, idx);

        soft_wqe_release(qp, w);
        soft_wqe_state(qp, w, SOFT_WQE_DONE);
        soft_wqe_push_cqe(qp, w, idx, DCX_WC_WR_FLUSH_ERR, 0);
    }
    qp->sq_comp     = qp->sq_head;
    qp->sq_send     = qp->sq_head;
    qp->deadline_ns = 0;
    if (qp->stream_of != NULL) {
        qp->stream_of->ch_errored(qp); /* a stream channel: its DCI counts it */
    }
}

/* Completes the oldest WQE of the DCI. */
static void soft_req_complete(soft_qp_t *qp, uint8_t status, uint32_t byte_len,
                              uint64_t now)
{
    uint32_t idx   = qp->sq_comp;
    soft_swqe_t *w = soft_wqe(qp, idx);
    int overrun    = 0;

    soft_wqe_release(qp, w);
    soft_wqe_state(qp, w, SOFT_WQE_DONE);
    soft_req_watch_done(w);
    if ((status != DCX_WC_SUCCESS) || (w->wr.flags & DCX_SEND_SIGNALED)) {
        overrun = (soft_wqe_push_cqe(qp, w, idx, status, byte_len) != 0);
    }
    qp->sq_comp++;
    if ((int32_t)(qp->sq_send - qp->sq_comp) < 0) {
        qp->sq_send = qp->sq_comp;
    }
    qp->retries     = 0;
    qp->rnr_count   = 0;
    qp->deadline_ns = (qp->sq_comp != qp->sq_head) ? now + qp->ack_timeout_ns :
                                                     0;
    if (status != DCX_WC_SUCCESS) {
        dcx_debug("%s: dci 0x%x wr 0x%llx %s: %s", soft_qp_dev_name(qp),
                  qp->super.qp_num, (unsigned long long)w->wr.wr_id,
                  soft_opinfo[w->wr.opcode].name,
                  dcx_wc_status_str((dcx_wc_status_t)status));
        soft_qp_to_error(qp, dcx_wc_status_str((dcx_wc_status_t)status));
    } else if (overrun) {
        soft_qp_to_error(qp, "completion queue overrun");
    }
}

/* Go back to the oldest WQE on the wire and send everything again. */
static void soft_req_rewind(soft_qp_t *qp)
{
    uint32_t idx;

    for (idx = qp->sq_comp; idx != qp->sq_head; ++idx) {
        soft_swqe_t *w = soft_wqe(qp, idx);

        if (w->state == SOFT_WQE_POSTED) {
            break;
        }
        soft_wqe_release(qp, w);
        soft_wqe_state(qp, w, SOFT_WQE_POSTED);
        w->sent_off = 0;
        w->recv_off = 0;
        w->all_sent = 0;
    }
    qp->sq_send = qp->sq_comp;
}

/* Completes, in order, the WQEs the responder acknowledged in our ack
 * table (SOFT_PKT_WACK): every SEND/WRITE waiting for its response whose
 * msn is below the published one.  READs and atomics complete only with
 * their data, so the walk stops at one.  One pass over the batch, the
 * successful completion of soft_req_complete unrolled: such a WQE holds
 * no strided-key copy and no READ/atomic slot, only its response credit;
 * the DCI's timer and retry counts are set once, after the last. */
static inline __attribute__((always_inline)) void
soft_req_acked_in(soft_qp_t *qp, uint64_t now)
{
    soft_dev_t *dev = qp->dev;
    uint32_t comp   = qp->sq_comp;
    int overrun     = 0;
    soft_swqe_t *w;
    uint64_t word;
    uint32_t next;

    if ((dev->acks == NULL) || (comp == qp->sq_send) ||
        (qp->super.state != DCX_QPS_RTS)) {
        return;
    }
    word = __atomic_load_n(&dev->acks[qp->super.qp_num - dev->qpn_base].word,
                           __ATOMIC_ACQUIRE);
    if ((uint32_t)(word >> 32) != qp->gen) {
        return;
    }
    next = (uint32_t)word;
    while (comp != qp->sq_send) {
        w = soft_wqe(qp, comp);
        if (!soft_req_table_acks(w, next)) {
            break;
        }
        dev->resp_credits += w->credits;
        w->credits = 0;
        soft_wqe_state(qp, w, SOFT_WQE_DONE);
        soft_req_watch_done(w);
        dev->stats.table_completions++;
        if ((w->wr.flags & DCX_SEND_SIGNALED) &&
            (soft_wqe_push_cqe(qp, w, comp, DCX_WC_SUCCESS,
                               (uint32_t)w->total_len) != 0)) {
            overrun = 1;
            comp++;
            break;
        }
        comp++;
    }
    if (comp == qp->sq_comp) {
        return;
    }
    qp->sq_comp     = comp;
    qp->retries     = 0;
    qp->rnr_count   = 0;
    qp->deadline_ns = (comp != qp->sq_head) ? now + qp->ack_timeout_ns : 0;
    if (overrun) {
        soft_qp_to_error(qp, "completion queue overrun");
    }
}

void soft_req_acked(soft_qp_t *qp, uint64_t now)
{
    soft_req_acked_in(qp, now);
}

/* A response's bytes into the first num_sge sges of w (the oldest WQE),
 * at byte 'off' of them, under the copy mark (soft_mem_local_begin): 1
 * once w was failed because a key of it was deregistered; dropped, 0,
 * where its memory is unmapped under a live registration (or a page the
 * fault-safe copy finds gone), as a NIC writes into the pages it pinned */
static int soft_req_resp_data(soft_qp_t *qp, soft_swqe_t *w, const void *data,
                              unsigned num_sge, uint64_t off, uint64_t len,
                              uint64_t now)
{
    int ret = ENOENT;

    if (__builtin_expect(w->forced == SOFT_NO_STATUS, 1)) {
        ret = soft_mem_local_begin(qp->dev, w->sge, w->wr.num_sge);
    }
    if (ret == ENOENT) {
        soft_req_complete(qp, DCX_WC_LOC_PROT_ERR, 0, now);
        return 1;
    }
    if (ret == 0) {
        (void)soft_sge_scatter(qp->dev, data, w->sge, num_sge, off, len);
        soft_mem_local_end(qp->dev);
    }
    return 0;
}

void soft_comp_packet(soft_dev_t *dev, const soft_pkt_t *pkt,
                      const void *payload)
{
    uint32_t idx = pkt->dst_qpn - dev->qpn_base;
    uint64_t now;
    soft_swqe_t *w;
    soft_qp_t *qp;
    unsigned flags;
    uint32_t v32;

    if ((idx >= dev->max_qps) || ((qp = dev->qps[idx]) == NULL) ||
        (qp->super.type != DCX_QPT_DCI) || (qp->super.state != DCX_QPS_RTS) ||
        (qp->sq_comp == qp->sq_head)) {
        return; /* stale response */
    }
    /* what the table acknowledged comes before this packet (the responder
     * wrote it first) */
    soft_req_acked(qp, dev->now);
    if ((qp->super.state != DCX_QPS_RTS) || (qp->sq_comp == qp->sq_head)) {
        soft_req_run(qp, dev->now);
        return;
    }
    w = soft_wqe(qp, qp->sq_comp);
    if ((w->msn != pkt->msn) || (w->state == SOFT_WQE_POSTED)) {
        return; /* not for the oldest WQE on the wire: stale/out of order */
    }
    flags = soft_opinfo[w->wr.opcode].flags;
    now   = dev->now;

    switch (pkt->op) {
    case SOFT_OP_ACK:
        if ((flags & (SOFT_OPF_READ | SOFT_OPF_ATOMIC)) ||
            (w->state != SOFT_WQE_WAIT_RESP)) {
            return;
        }
        soft_req_complete(qp, DCX_WC_SUCCESS, (uint32_t)w->total_len, now);
        break;
    case SOFT_OP_NAK:
        soft_req_complete(qp, pkt->status, 0, now);
        break;
    case SOFT_OP_RNR_NAK:
        qp->rnr_count++;
        if ((qp->rnr_retry != 7) && (qp->rnr_count > qp->rnr_retry)) {
            soft_req_complete(qp, DCX_WC_RNR_RETRY_EXC_ERR, 0, now);
            break;
        }
        dev->stats.rnr_retries++;
        qp->retries = 0; /* the target answered: not a transport loss */
        soft_req_rewind(qp);
        qp->rnr_probe    = qp->sq_comp;
        qp->rnr_until_ns = now + pkt->args[0] * 1000ull;
        qp->deadline_ns  = qp->rnr_until_ns + qp->ack_timeout_ns;
        break;
    case SOFT_OP_READ_RESP:
        if (!(flags & SOFT_OPF_READ) || (pkt->offset != w->recv_off) ||
            (pkt->offset + pkt->len > w->total_len)) {
            return;
        }
        if (soft_req_resp_data(qp, w, payload, w->wr.num_sge, pkt->offset,
                               pkt->len, now)) {
            break; /* failed */
        }
        w->recv_off += pkt->len;
        if (w->credits > 0) {
            w->credits--;
            dev->resp_credits++;
        }
        qp->retries     = 0;
        qp->deadline_ns = now + qp->ack_timeout_ns;
        if ((pkt->flags & SOFT_PKT_LAST) && (w->recv_off == w->total_len) &&
            w->all_sent) {
            soft_req_complete(qp, DCX_WC_SUCCESS, (uint32_t)w->total_len, now);
        }
        break;
    case SOFT_OP_ATOMIC_RESP:
        if (!(flags & SOFT_OPF_ATOMIC)) {
            return;
        }
        v32 = (uint32_t)pkt->args[0];
        if (soft_req_resp_data(qp, w,
                               (w->total_len == 4) ? (const void *)&v32 :
                                                     &pkt->args[0],
                               1, 0, w->total_len, now)) {
            break; /* failed */
        }
        soft_req_complete(qp, DCX_WC_SUCCESS, (uint32_t)w->total_len, now);
        break;
    default:
        return;
    }
    soft_req_run(qp, now);
}

/* ------------------------------------------------------------------------
 * Requester
 * ------------------------------------------------------------------------ */
/* Local checks done when a WQE starts executing. */
static uint8_t soft_req_check_local(soft_qp_t *qp, soft_swqe_t *w)
{
    unsigned flags = soft_opinfo[w->wr.opcode].flags;
    unsigned i;

    if (w->total_len > qp->dev->limits.max_msg_size) {
        return DCX_WC_LOC_LEN_ERR;
    }
    if (w->wr.flags & DCX_SEND_INLINE) {
        return DCX_WC_SUCCESS;
    }
    for (i = 0; i < w->wr.num_sge; ++i) {
        if (!soft_sge_ok(qp->dev, &w->sge[i],
                         (flags & (SOFT_OPF_READ | SOFT_OPF_ATOMIC)) ?
                             DCX_ACCESS_LOCAL_WRITE :
                             0,
                         qp->super.pd)) {
            return DCX_WC_LOC_PROT_ERR;
        }
    }
    return DCX_WC_SUCCESS;
}

/* The flags that ask for the last packet of w to be acknowledged in our
 * ack table rather than by an ACK packet (one word the responder stores,
 * where a packet is a slot written, published and consumed): a SEND or
 * WRITE, which needs nothing back but its acknowledgement.  An unsignaled
 * one makes no completion: a table store rings nobody, and the ack is
 * taken by the next pass, the application's or the helper's (a nap's end
 * at the latest), so that an application asleep on a completion channel
 * is not woken for it.  A signaled one's completion is waited for (an
 * armed CQ turns it into an event): it asks for the kick an ACK packet's
 * publish makes (SOFT_PKT_WKICK), so that it is made as soon as the
 * acknowledgement is there.  0 (an ACK packet) for READs and atomics,
 * without a table, or with a fault rule set (the responder checks what it
 * acknowledges packet by packet then), as on the light path. */
static inline uint8_t soft_req_table_ack(const soft_dev_t *dev,
                                         const soft_swqe_t *w)
{
    if ((soft_opinfo[w->wr.opcode].flags & (SOFT_OPF_READ | SOFT_OPF_ATOMIC)) ||
        (dev->acks == NULL) || (dev->fault.rule.type != DCX_SOFT_FAULT_NONE)) {
        return 0;
    }
    return (w->wr.flags & DCX_SEND_SIGNALED) ? SOFT_PKT_WACK | SOFT_PKT_WKICK :
                                               SOFT_PKT_WACK;
}

/* w, on the wire, lost its memory (soft_req_key_gone): it completes with
 * its error once everything before it did, and sends nothing meanwhile.
 * Returns 1: nothing more of the DCI is sent now. */
static __attribute__((noinline)) int
soft_req_mem_gone(soft_qp_t *qp, soft_swqe_t *w, uint64_t now)
{
    if (w == soft_wqe(qp, qp->sq_comp)) {
        soft_req_complete(qp, w->forced, 0, now);
    }
    return 1;
}

/* Sends the remaining packets of w; EAGAIN if the target cannot take more
 * right now (ring full or no response credit). */
static int soft_req_send_packets(soft_qp_t *qp, soft_swqe_t *w, uint64_t now)
{
    soft_dev_t *dev = qp->dev;
    unsigned flags  = soft_opinfo[w->wr.opcode].flags;
    soft_port_hdr_t *target;
    uint64_t chunk, mtu, delay, burst, nresp;
    soft_pkt_t *pkt;
    void *payload;
    uint64_t pos;
    int fate, local;

    target = soft_peer_map(dev, w->peer);
    mtu    = dev->limits.mtu;
    if ((target != NULL) && (target->req.payload < mtu)) {
        mtu = target->req.payload;
    }
    if ((flags & SOFT_OPF_READ) && (dev->hdr->resp.payload < mtu)) {
        mtu = dev->hdr->resp.payload;
    }

    if (__builtin_expect(w->forced != SOFT_NO_STATUS, 0)) {
        return soft_req_mem_gone(qp, w, now);
    }
    if (qp->datagram && (w->total_len > mtu)) {
        target = NULL; /* more than one packet to this target: lost */
    }
    local = (flags & SOFT_OPF_PAYLOAD) && !(w->wr.flags & DCX_SEND_INLINE);
    while (!w->all_sent) {
        chunk = w->total_len - w->sent_off;
        nresp = 1;
        if (flags & SOFT_OPF_READ) {
            /* one request asks for a burst of up to SOFT_READ_BURST
             * response packets of 'mtu' bytes; wait until we hold response
             * slots for a whole burst (or the rest), else credits returning
             * one at a time would make one-slot requests again */
            burst = (chunk + mtu - 1) / mtu;
            if (burst > SOFT_READ_BURST) {
                burst = SOFT_READ_BURST;
            }
            if (burst == 0) {
                burst = 1;
            }
            if (dev->resp_credits < burst) {
                return EAGAIN;
            }
            if (chunk > burst * mtu) {
                chunk = burst * mtu;
            }
            nresp = burst;
        } else if (chunk > mtu) {
            chunk = mtu;
        }
        /* the packet's bytes are gathered under the copy mark, once the
         * memory is known to be there (soft_mem.c) */
        if (local && (soft_mem_local_begin(dev, w->sge, w->wr.num_sge) != 0)) {
            w->forced = DCX_WC_LOC_PROT_ERR;
            return soft_req_mem_gone(qp, w, now);
        }
        fate = soft_fault_tx(dev, w->wr.opcode, &delay);
        pkt  = NULL;
        if ((target != NULL) && (fate != SOFT_TX_DROP) && !dev->killed &&
            !__atomic_load_n(&target->killed, __ATOMIC_RELAXED)) {
            pkt = soft_ring_reserve_c(target, &target->req, dev->pid,
                                      &w->peer->req_freed_seen, &payload, &pos);
            if (pkt == NULL) {
                if (local) {
                    soft_mem_local_end(dev);
                }
                if (fate != SOFT_TX_PASS) {
                    /* the fault will apply to the retried packet again */
                    dev->fault.hits--;
                    dev->fault.seen--;
                }
                return EAGAIN;
            }
        }
        if (pkt != NULL) {
            pkt->op    = w->wr.opcode;
            pkt->flags = ((w->sent_off == 0) ? SOFT_PKT_FIRST : 0) |
                         ((w->sent_off + chunk == w->total_len) ?
                              SOFT_PKT_LAST :
                              0);
            if (pkt->flags & SOFT_PKT_LAST) {
                pkt->flags |= soft_req_table_ack(dev, w);
            }
            pkt->status      = 0;
            pkt->atomic_size = (uint8_t)((flags & SOFT_OPF_ATOMIC) ?
                                             w->total_len :
                                             0);
            pkt->len         = (flags & SOFT_OPF_PAYLOAD) ? (uint32_t)chunk : 0;
            pkt->src_pid     = dev->pid;
            pkt->src_inst    = (uint16_t)dev->inst;
            pkt->src_token   = dev->token;
            pkt->src_qpn     = qp->wire_qpn;
            pkt->dst_qpn     = w->wr.dest.dctn;
            pkt->msn         = w->msn;
            pkt->ack_base    = soft_wqe(qp, qp->sq_comp)->msn;
            pkt->dc_key      = w->wr.dest.dc_key;
            pkt->offset      = w->sent_off;
            pkt->total_len   = w->total_len;
            pkt->raddr       = w->wr.remote_addr;
            pkt->rkey        = w->wr.rkey;
            pkt->imm         = w->wr.imm;
            if (flags & SOFT_OPF_READ) {
                pkt->args[0] = chunk;
                pkt->args[1] = mtu;
                pkt->args[2] = 0;
                pkt->args[3] = 0;
            } else if (flags & SOFT_OPF_ATOMIC) {
                soft_atomic_args(&w->wr, pkt->args);
            } else {
                /* a light WQE records no atomic fields (its slot may hold
                 * an older WQE's): a SEND or WRITE carries none */
                memset(pkt->args, 0, sizeof(pkt->args));
            }
            pkt->deliver_ns = (fate == SOFT_TX_DELAY) ? now + delay : 0;
            pkt->gen        = qp->gen;
            pkt->pad        = 0;
            if (flags & SOFT_OPF_PAYLOAD) {
                if (w->wr.flags & DCX_SEND_INLINE) {
                    memcpy(payload, w->inl + w->sent_off, chunk);
                } else if (soft_sge_gather(dev, payload, w->sge, w->wr.num_sge,
                                           w->sent_off, chunk) != 0) {
                    /* unmapped under its registration: the slot goes out
                     * as a packet the target drops, and w fails */
                    w->forced = DCX_WC_LOC_PROT_ERR;
                    fate      = SOFT_TX_CORRUPT;
                }
            }
            if (qp->datagram) {
                pkt->flags = SOFT_PKT_FIRST | SOFT_PKT_LAST | SOFT_PKT_CSUM |
                             SOFT_PKT_DGRAM;
            }
            if ((dev->fault.rule.type != DCX_SOFT_FAULT_NONE) ||
                (fate == SOFT_TX_CORRUPT) || qp->datagram) {
                pkt->flags |= SOFT_PKT_CSUM;
                pkt->csum = soft_pkt_csum(pkt) ^ (fate == SOFT_TX_CORRUPT);
            } else {
                pkt->csum = 0;
            }
            /* a sleeping target is woken by a message it receives, not
             * by a one-sided operation (soft_wake.c) */
            soft_ring_publish_quiet(target, &target->req, pos);
            dev->stats.futex_wakes += soft_wake_kick(dev, target,
                                                     flags & SOFT_OPF_RECV);
            qp->tx_pos    = pos + 1;
            qp->tx_peer   = w->peer;
            qp->tx_dctn   = w->wr.dest.dctn;
            qp->tx_dc_key = w->wr.dest.dc_key;
            w->tx_end     = (uint32_t)(pos + 1); /* 0 at a wrap: no end */
            if (!w->peer->own) {
                soft_req_watch(w->peer, pos, now);
            }
        }
        if (local) {
            soft_mem_local_end(dev);
            if (__builtin_expect(w->forced != SOFT_NO_STATUS, 0)) {
                return soft_req_mem_gone(qp, w, now);
            }
        }
        dev->stats.tx_packets++;
        if (flags & SOFT_OPF_PAYLOAD) {
            dev->stats.tx_bytes += chunk;
        }
        if (flags & SOFT_OPF_READ) {
            dev->resp_credits -= nresp;
            w->credits += nresp;
        }
        w->sent_off += chunk;
        if (w->sent_off == w->total_len) {
            w->all_sent = 1;
        }
        qp->deadline_ns = now + qp->ack_timeout_ns;
    }
    return 0;
}

/* Completes w, the only WQE of a DCI that had nothing else outstanding
 * (sq_head - 1), successfully and at once: soft_req_complete's success for
 * a WQE the initiator copied, which holds no response credit, READ slot,
 * strided-key copy or watch: nothing to release, and no timer left to
 * run. */
static inline void soft_req_done_at_once(soft_qp_t *qp, soft_swqe_t *w,
                                         uint64_t total)
{
    int overrun;

    soft_wqe_state(qp, w, SOFT_WQE_DONE);
    overrun = (w->wr.flags & DCX_SEND_SIGNALED) &&
              (soft_wqe_push_cqe(qp, w, qp->sq_head - 1, DCX_WC_SUCCESS,
                                 (uint32_t)total) != 0);
    qp->sq_comp     = qp->sq_head;
    qp->sq_send     = qp->sq_head;
    qp->retries     = 0;
    qp->rnr_count   = 0;
    qp->deadline_ns = 0;
    if (overrun) {
        soft_qp_to_error(qp, "completion queue overrun");
    }
}

/* The light post's RDMA WRITE on a DCI with nothing outstanding
 * (soft_req_post_inline, engine lock held): the initiator's own copy,
 * which needs no target CPU, as the general path would try it.  0 when
 * that took it (the WQE posted and completed), 1 when the post goes on to
 * the target's ring (the WQE at sq_head is recorded again there). */
int soft_req_post_direct(soft_qp_t *qp, const dcx_send_wr_t *wr,
                         soft_peer_t *peer, uint64_t total)
{
    soft_swqe_t *w = soft_wqe(qp, qp->sq_head);

    soft_light_wqe_record(w, wr, peer, total);
    w->credits = 0;
    w->state   = SOFT_WQE_POSTED;
    if (!qp->dev->one_sided(qp, w)) {
        return 1;
    }
    w->msn = qp->next_msn++;
    qp->sq_head++;
    soft_req_done_at_once(qp, w, total);
    return 0;
}

/* The initiator's own execution of w (an RDMA WRITE or READ, or an
 * atomic) on a DCI with nothing on the wire: 1 if done */
static inline int soft_req_exec_direct(soft_qp_t *qp, soft_swqe_t *w)
{
    return (soft_opinfo[w->wr.opcode].flags & SOFT_OPF_ATOMIC) ?
               qp->dev->atomic_direct(qp, w) :
               qp->dev->one_sided(qp, w);
}

int soft_req_run_direct(soft_qp_t *qp, soft_swqe_t *w)
{
    if (soft_req_check_local(qp, w) != DCX_WC_SUCCESS) {
        return 1; /* soft_req_run checks it again and completes the error */
    }
    w->checked = 1;
    if (!soft_req_exec_direct(qp, w)) {
        w->copy_refused = 1; /* soft_req_run does not try again */
        return 1;
    }
    soft_req_done_at_once(qp, w, w->total_len);
    return 0;
}

void soft_req_run(soft_qp_t *qp, uint64_t now)
{
    soft_dev_t *dev = qp->dev;
    soft_swqe_t *w, *prev;
    unsigned flags;
    uint8_t status;

    while ((qp->super.state == DCX_QPS_RTS) && (qp->sq_send != qp->sq_head)) {
        w     = soft_wqe(qp, qp->sq_send);
        flags = soft_opinfo[w->wr.opcode].flags;
        if (flags & SOFT_OPF_MKEY) {
            /* executed here, after everything before it completed */
            if (qp->sq_comp != qp->sq_send) {
                return;
            }
            if (w->late) {
                /* limits.mkey_late: not by the run of its own post; the
                 * next run of this QP (a later post on it, or the engine
                 * pass of a poll) executes it */
                w->late = 0;
                return;
            }
            soft_req_complete(qp, soft_mkey_wr_exec(qp, w), 0, now);
            continue;
        }
        if (w->state == SOFT_WQE_POSTED) {
            if (qp->rnr_until_ns != 0) {
                /* after an RNR NAK, the WQE it named goes alone: a target
                 * that had no receive for it would refuse those behind
                 * it too, each retry a burst of packets for nothing (a
                 * NIC sends them, and its responder drops them) */
                if ((now < qp->rnr_until_ns) ||
                    ((qp->sq_comp == qp->rnr_probe) &&
                     (qp->sq_send != qp->sq_comp))) {
                    return;
                }
                if (qp->sq_comp != qp->rnr_probe) {
                    qp->rnr_until_ns = 0; /* over: the light path may post */
                }
            }
            status = w->forced;
            if ((status == SOFT_NO_STATUS) && !w->checked) {
                status = soft_req_check_local(qp, w);
                if (status == DCX_WC_SUCCESS) {
                    w->checked = 1;
                    status     = SOFT_NO_STATUS;
                }
            }
            if (status != SOFT_NO_STATUS) {
                /* errors complete in order, after everything before */
                if (qp->sq_comp == qp->sq_send) {
                    soft_req_complete(qp, status, 0, now);
                }
                return;
            }
            if ((qp->sq_comp == qp->sq_send) &&
                ((w->wr.opcode == DCX_WR_RDMA_WRITE) ||
                 (w->wr.opcode == DCX_WR_RDMA_READ) ||
                 (flags & SOFT_OPF_ATOMIC)) &&
                !w->copy_refused && soft_req_exec_direct(qp, w)) {
                /* executed by us (soft_direct.c): nothing of this DCI was
                 * on the wire, so per-DCI order holds */
                soft_req_complete(qp, DCX_WC_SUCCESS, (uint32_t)w->total_len,
                                  now);
                continue;
            }
            if ((qp->sq_comp != qp->sq_send) &&
                (w->total_len >= dev->limits.mtu) &&
                ((w->wr.opcode == DCX_WR_RDMA_WRITE) ||
                 (w->wr.opcode == DCX_WR_RDMA_READ)) &&
                dev->one_sided_ready(qp, w)) {
                /* a packet's data or more, ours to copy once the DCI's
                 * earlier work completed: wait for that (its response
                 * needs the target's CPU once, packets once per MTU and
                 * two copies of the data) */
                return;
            }
            if (qp->sq_comp != qp->sq_send) {
                /* one destination at a time */
                prev = soft_wqe(qp, qp->sq_send - 1);
                if ((prev->peer != w->peer) ||
                    (prev->wr.dest.dctn != w->wr.dest.dctn)) {
                    return;
                }
                if ((w->wr.flags & DCX_SEND_FENCE) && (qp->rd_atomic > 0)) {
                    return;
                }
            }
            if (flags & (SOFT_OPF_READ | SOFT_OPF_ATOMIC)) {
                if (qp->rd_atomic >= qp->super.max_rd_atomic) {
                    return;
                }
            }
            if (!(flags & SOFT_OPF_READ)) {
                if (dev->resp_credits == 0) {
                    return;
                }
                dev->resp_credits--;
                w->credits = 1;
            }
            if (flags & (SOFT_OPF_READ | SOFT_OPF_ATOMIC)) {
                qp->rd_atomic++;
                w->rd_counted = 1;
            }
            soft_wqe_state(qp, w, SOFT_WQE_SENDING);
            if (qp->deadline_ns == 0) {
                qp->deadline_ns = now + qp->ack_timeout_ns;
            }
        }
        if (soft_req_send_packets(qp, w, now) != 0) {
            return;
        }
        if (qp->datagram) {
            /* on the wire (or lost): done, nothing comes back */
            soft_req_complete(qp, DCX_WC_SUCCESS, (uint32_t)w->total_len, now);
            continue;
        }
        soft_wqe_state(qp, w, SOFT_WQE_WAIT_RESP);
        qp->sq_send++;
    }
}

/* True if a live target simply has not got to our requests yet: the newest
 * packet this DCI queued to it is still in its request ring, or the WQE
 * that timed out could not even be queued because the ring is full.  On
 * hardware the responder is the NIC, which answers whatever its host CPU
 * does; here the responder is the target's CPU, and a target starved of CPU
 * (or stopped) must not look like a lost packet.  A ring held by a packet
 * delayed on the wire (fault injection) past the expired ack deadline is a
 * slow link, not a busy target: that one counts as a loss, whenever our CPU
 * gets to look (a NIC's timer fires at the deadline). */
static int soft_req_target_busy(soft_qp_t *qp, soft_swqe_t *w, uint64_t now)
{
    soft_port_hdr_t *hdr = w->peer->hdr;
    uint64_t head, tail, freed;
    soft_slot_t *slot;

    if ((hdr == NULL) || w->peer->own) {
        return 0; /* never queued anything there / we serve ourselves */
    }
    head = __atomic_load_n(&hdr->req.head, __ATOMIC_ACQUIRE);
    w->peer->head_reads++;
    if ((qp->tx_peer == w->peer) && ((int64_t)(head - qp->tx_pos) < 0)) {
        slot = (soft_slot_t *)((char *)hdr + hdr->req.offset +
                               (head & (hdr->req.nslots - 1)) *
                                   hdr->req.slot_size);
        if ((__atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE) == head + 1) &&
            !(slot->pkt.flags & SOFT_PKT_LIGHT) &&
            (slot->pkt.deliver_ns > qp->deadline_ns)) {
            return 0;
        }
        return 1;
    }
    /* full as producers see it: the target gives consumed slots back
     * only when it clears them (soft_ring_clear), so a full ring may hold
     * packets it already consumed */
    tail  = __atomic_load_n(&hdr->req.tail, __ATOMIC_RELAXED);
    freed = __atomic_load_n(&hdr->req.freed, __ATOMIC_ACQUIRE);
    return !w->all_sent && (tail - freed >= hdr->req.nslots);
}

static void soft_req_timeout(soft_qp_t *qp, uint64_t now)
{
    soft_dev_t *dev = qp->dev;
    soft_swqe_t *w  = soft_wqe(qp, qp->sq_comp);

    if (soft_peer_dead(dev, w->peer)) {
        dcx_debug("%s: dci 0x%x: peer pid %u is gone", soft_qp_dev_name(qp),
                  qp->super.qp_num, w->peer->pid);
        /* a datagram to it is lost, as any */
        soft_req_complete(qp,
                          qp->datagram ? DCX_WC_SUCCESS : DCX_WC_RETRY_EXC_ERR,
                          0, now);
        return;
    }
    if (soft_req_target_busy(qp, w, now)) {
        /* not a retry: wait another timeout (the prod logic keeps the
         * target's helper awake meanwhile) */
        dcx_trace("%s: dci 0x%x: peer pid %u has not consumed our requests "
                  "yet",
                  soft_qp_dev_name(qp), qp->super.qp_num, w->peer->pid);
        qp->deadline_ns = now + qp->ack_timeout_ns;
        return;
    }
    if (qp->datagram) {
        /* a datagram the target could not take in time is lost */
        soft_req_complete(qp, DCX_WC_SUCCESS, 0, now);
        return;
    }
    if (++qp->retries > qp->retry_cnt) {
        soft_req_complete(qp, DCX_WC_RETRY_EXC_ERR, 0, now);
        return;
    }
    dev->stats.retransmits++;
    soft_req_rewind(qp);
    qp->deadline_ns = now + qp->ack_timeout_ns;
}

/* The target application may poll rarely or not at all; its helper only
 * naps between looks.  Real hardware answers at once, so when our requests
 * have made no progress in the peer's ring for SOFT_PROD_NS and its
 * application has not polled for as long, wake the peer's helper.  A peer
 * that polls never costs us a syscall. */
void soft_req_prod(soft_dev_t *dev, soft_peer_t *peer, uint64_t now)
{
    soft_port_hdr_t *hdr;
    uint64_t head;

    if ((peer == NULL) || (peer->watch_since == 0) ||
        ((int64_t)(now - peer->watch_since) < (int64_t)SOFT_PROD_NS) ||
        ((hdr = peer->hdr) == NULL)) {
        return;
    }
    head = __atomic_load_n(&hdr->req.head, __ATOMIC_RELAXED);
    peer->head_reads++;
    if ((int64_t)(head - peer->watch_pos) >= 0) {
        peer->watch_since = 0; /* all consumed */
        return;
    }
    if (head != peer->watch_head) {
        peer->watch_head  = head; /* moving: look again later */
        peer->watch_since = now;
        return;
    }
    if ((soft_port_poll_age(hdr) < SOFT_PROD_NS) ||
        __atomic_load_n(&hdr->in_engine, __ATOMIC_RELAXED)) {
        /* its application polls, or an engine pass is under way there
         * (a long one when it answers READ bursts): it will get to ours */
        peer->watch_since = now;
        return;
    }
    dev->stats.prods++;
    dev->stats.futex_wakes++;
    soft_port_ring(hdr);
    /* the next prod, if nothing moves meanwhile, after SOFT_REPROD_NS */
    peer->watch_since = now + SOFT_REPROD_NS - SOFT_PROD_NS;
}

/* Visits only the DCIs on the active list (soft_engine.c); those with
 * nothing outstanding leave it.  The engine's pass runs it when
 * soft_req_timers_quick (soft_acked.h, inline there) did not take all. */
void soft_req_timers(soft_dev_t *dev, uint64_t now)
{
    soft_qp_t **pp = &dev->active_dcis;
    soft_peer_t *peer;
    soft_qp_t *qp;

    while ((qp = *pp) != NULL) {
        if (qp->super.state == DCX_QPS_RTS) {
            soft_req_acked_in(qp, now); /* inline: once per pass */
        }
        if (qp->sq_comp == qp->sq_head) {
            *pp        = qp->next_active;
            qp->active = 0;
            continue;
        }
        pp = &qp->next_active;
        if (qp->super.state != DCX_QPS_RTS) {
            continue;
        }
        if (qp->deadline_ns == SOFT_DEADLINE_ARM) {
            qp->deadline_ns = now + qp->ack_timeout_ns;
        }
        /* also when the oldest WQE is only partly out (peer ring full) */
        peer = soft_wqe(qp, qp->sq_comp)->peer;
        if ((peer != NULL) && (peer->watch_since != 0) &&
            ((int64_t)(now - peer->watch_since) >= (int64_t)SOFT_PROD_NS)) {
            soft_req_prod(dev, peer, now);
        }
        if ((qp->deadline_ns != 0) && (now >= qp->deadline_ns) &&
            (peer != NULL)) {
            soft_req_timeout(qp, now);
        }
        if (qp->sq_send != qp->sq_head) {
            soft_req_run(qp, now);
        }
    }
}
