/*
 * Soft device queue pairs: DCI (requester + completer) and DCT objects.
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

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *soft_wqe_state_names[SOFT_WQE_STATE_LAST] = {
    [SOFT_WQE_POSTED]    = "posted",
    [SOFT_WQE_SENDING]   = "sending",
    [SOFT_WQE_WAIT_RESP] = "wait-response",
    [SOFT_WQE_DONE]      = "done"
};

#define V SOFT_OPF_VALID
const soft_opinfo_t soft_opinfo[DCX_WR_OPCODE_LAST] = {
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
                                     DCX_ACCESS_REMOTE_ATOMIC }
};
#undef V

/* min_rnr_timer encoding of verbs, in units of 10 us (index 0 = 655.36 ms) */
static const uint32_t soft_rnr_table[32] = {
    65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384,
    512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576,
    32768, 49152
};

/* Copies 'len' bytes at byte 'off' of an sg list: into 'gather' if it is
 * not NULL, else from 'scatter' into the list. */
static void soft_sge_walk(const dcx_sge_t *sge, unsigned num_sge, uint64_t off,
                          uint64_t len, uint8_t *gather,
                          const uint8_t *scatter)
{
    unsigned i;

    for (i = 0; (i < num_sge) && (len > 0); ++i) {
        uint64_t chunk;
        uint8_t *a;

        if (off >= sge[i].length) {
            off -= sge[i].length;
            continue;
        }
        chunk = sge[i].length - off;
        if (chunk > len) {
            chunk = len;
        }
        a = (uint8_t *)(uintptr_t)(sge[i].addr + off);
        if (gather != NULL) {
            memcpy(gather, a, chunk);
            gather += chunk;
        } else {
            memcpy(a, scatter, chunk);
            scatter += chunk;
        }
        len -= chunk;
        off  = 0;
    }
}

void soft_sge_gather(void *buf, const dcx_sge_t *sge, unsigned num_sge,
                     uint64_t off, uint64_t len)
{
    soft_sge_walk(sge, num_sge, off, len, buf, NULL);
}

void soft_sge_scatter(const void *buf, const dcx_sge_t *sge, unsigned num_sge,
                      uint64_t off, uint64_t len)
{
    soft_sge_walk(sge, num_sge, off, len, NULL, buf);
}

static inline soft_swqe_t *soft_wqe(soft_qp_t *qp, uint32_t idx)
{
    return &qp->sq[idx % qp->sq_size];
}

static inline const char *soft_qp_dev_name(soft_qp_t *qp)
{
    return qp->dev->super.caps.name;
}

/* Every requester state change goes through here (DCX_LOG_LEVEL=trace). */
static inline void soft_wqe_state(soft_qp_t *qp, soft_swqe_t *w,
                                  soft_wqe_state_t state)
{
    dcx_trace("%s: dci 0x%x msn %u %s: %s -> %s", soft_qp_dev_name(qp),
              qp->super.qp_num, w->msn, soft_opinfo[w->wr.opcode].name,
              soft_wqe_state_names[w->state], soft_wqe_state_names[state]);
    w->state = state;
}

/* ------------------------------------------------------------------------
 * Completer
 * ------------------------------------------------------------------------ */
static void soft_wqe_release(soft_qp_t *qp, soft_swqe_t *w)
{
    qp->dev->resp_credits += w->credits;
    w->credits = 0;
    if (w->rd_counted) {
        qp->rd_atomic--;
        w->rd_counted = 0;
    }
}

static int soft_wqe_push_cqe(soft_qp_t *qp, soft_swqe_t *w, uint32_t idx,
                             uint8_t status, uint32_t byte_len)
{
    dcx_wc_t wc;

    memset(&wc, 0, sizeof(wc));
    wc.wr_id    = w->wr.wr_id;
    wc.status   = status;
    wc.opcode   = soft_opinfo[w->wr.opcode].wc_opcode;
    wc.byte_len = byte_len;
    wc.qp_num   = qp->super.qp_num;
    if ((status == DCX_WC_SUCCESS) && (soft_opinfo[w->wr.opcode].flags &
                                       SOFT_OPF_IMM)) {
        wc.flags = DCX_WC_FLAG_WITH_IMM;
        wc.imm   = w->wr.imm;
    }
    return soft_cq_push(qp->cq, &wc, qp, idx);
}

static void soft_flush_post(soft_qp_t *qp);

void soft_qp_to_error(soft_qp_t *qp, const char *reason)
{
    uint32_t idx;

    if (qp->super.state == DCX_QPS_ERR) {
        return;
    }
    dcx_debug("%s: dci 0x%x to error: %s", soft_qp_dev_name(qp),
              qp->super.qp_num, reason);
    __atomic_store_n(&qp->super.state, DCX_QPS_ERR, __ATOMIC_RELAXED);
    soft_flush_post(qp);
    for (idx = qp->sq_comp; idx != qp->sq_head; ++idx) {
        soft_swqe_t *w = soft_wqe(qp, idx);

        soft_wqe_release(qp, w);
        soft_wqe_state(qp, w, SOFT_WQE_DONE);
        soft_wqe_push_cqe(qp, w, idx, DCX_WC_WR_FLUSH_ERR, 0);
    }
    qp->sq_comp     = qp->sq_head;
    qp->sq_send     = qp->sq_head;
    qp->deadline_ns = 0;
}

/* Completes the oldest WQE of the DCI. */
static void soft_req_complete(soft_qp_t *qp, uint8_t status,
                              uint32_t byte_len, uint64_t now)
{
    uint32_t idx   = qp->sq_comp;
    soft_swqe_t *w = soft_wqe(qp, idx);
    int overrun    = 0;

    soft_wqe_release(qp, w);
    soft_wqe_state(qp, w, SOFT_WQE_DONE);
    if ((status != DCX_WC_SUCCESS) || (w->wr.flags & DCX_SEND_SIGNALED)) {
        overrun = (soft_wqe_push_cqe(qp, w, idx, status, byte_len) != 0);
    }
    qp->sq_comp++;
    if ((int32_t)(qp->sq_send - qp->sq_comp) < 0) {
        qp->sq_send = qp->sq_comp;
    }
    qp->retries     = 0;
    qp->rnr_count   = 0;
    qp->deadline_ns = (qp->sq_comp != qp->sq_head) ?
                      now + qp->ack_timeout_ns : 0;
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

void soft_comp_packet(soft_dev_t *dev, const soft_pkt_t *pkt,
                      const void *payload)
{
    uint32_t idx = pkt->dst_qpn - SOFT_QPN_BASE;
    uint64_t now;
    soft_swqe_t *w;
    soft_qp_t *qp;
    unsigned flags;

    if ((idx >= dev->max_qps) || ((qp = dev->qps[idx]) == NULL) ||
        (qp->super.type != DCX_QPT_DCI) ||
        (qp->super.state != DCX_QPS_RTS) || (qp->sq_comp == qp->sq_head)) {
        return;   /* stale response */
    }
    w = soft_wqe(qp, qp->sq_comp);
    if ((w->msn != pkt->msn) || (w->state == SOFT_WQE_POSTED)) {
        return;   /* not for the oldest WQE on the wire: stale/out of order */
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
        qp->retries = 0;   /* the target answered: not a transport loss */
        soft_req_rewind(qp);
        qp->rnr_until_ns = now + pkt->args[0] * 1000ull;
        qp->deadline_ns  = qp->rnr_until_ns + qp->ack_timeout_ns;
        break;
    case SOFT_OP_READ_RESP:
        if (!(flags & SOFT_OPF_READ) || (pkt->offset != w->recv_off) ||
            (pkt->offset + pkt->len > w->total_len)) {
            return;
        }
        soft_sge_scatter(payload, w->sge, w->wr.num_sge, pkt->offset,
                         pkt->len);
        w->recv_off += pkt->len;
        if (w->credits > 0) {
            w->credits--;
            dev->resp_credits++;
        }
        qp->retries     = 0;
        qp->deadline_ns = now + qp->ack_timeout_ns;
        if ((pkt->flags & SOFT_PKT_LAST) && (w->recv_off == w->total_len) &&
            w->all_sent) {
            soft_req_complete(qp, DCX_WC_SUCCESS, (uint32_t)w->total_len,
                              now);
        }
        break;
    case SOFT_OP_ATOMIC_RESP:
        if (!(flags & SOFT_OPF_ATOMIC)) {
            return;
        }
        if (w->total_len == 4) {
            uint32_t v = (uint32_t)pkt->args[0];
            memcpy((void *)(uintptr_t)w->sge[0].addr, &v, 4);
        } else {
            memcpy((void *)(uintptr_t)w->sge[0].addr, &pkt->args[0], 8);
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
        soft_mr_t *mr = soft_mr_lookup(qp->dev, w->sge[i].lkey);

        if ((mr == NULL) || (w->sge[i].addr < mr->start) ||
            (w->sge[i].addr + w->sge[i].length > mr->end) ||
            ((flags & (SOFT_OPF_READ | SOFT_OPF_ATOMIC)) &&
             !(mr->super.access & DCX_ACCESS_LOCAL_WRITE))) {
            return DCX_WC_LOC_PROT_ERR;
        }
    }
    return DCX_WC_SUCCESS;
}

/* Sends the remaining packets of w; EAGAIN if the target cannot take more
 * right now (ring full or no response credit). */
static int soft_req_send_packets(soft_qp_t *qp, soft_swqe_t *w, uint64_t now)
{
    soft_dev_t *dev  = qp->dev;
    unsigned flags   = soft_opinfo[w->wr.opcode].flags;
    soft_port_hdr_t *target;
    uint64_t chunk, mtu, delay;
    soft_pkt_t *pkt;
    void *payload;
    uint64_t pos;
    int fate;

    target = soft_peer_map(dev, w->peer);
    mtu    = dev->limits.mtu;
    if ((target != NULL) && (target->req.payload < mtu)) {
        mtu = target->req.payload;
    }
    if ((flags & SOFT_OPF_READ) && (dev->hdr->resp.payload < mtu)) {
        mtu = dev->hdr->resp.payload;
    }

    while (!w->all_sent) {
        chunk = w->total_len - w->sent_off;
        if (chunk > mtu) {
            chunk = mtu;
        }
        if (flags & SOFT_OPF_READ) {
            if (dev->resp_credits == 0) {
                return EAGAIN;
            }
        }
        fate = soft_fault_tx(dev, w->wr.opcode, &delay);
        pkt  = NULL;
        if ((target != NULL) && (fate != SOFT_TX_DROP) && !dev->killed &&
            !__atomic_load_n(&target->killed, __ATOMIC_RELAXED)) {
            pkt = soft_ring_reserve(target, &target->req, dev->pid,
                                    &payload, &pos);
            if (pkt == NULL) {
                if (fate != SOFT_TX_PASS) {
                    /* the fault will apply to the retried packet again */
                    dev->fault.hits--;
                    dev->fault.seen--;
                }
                return EAGAIN;
            }
        }
        if (pkt != NULL) {
            pkt->op          = w->wr.opcode;
            pkt->flags       = ((w->sent_off == 0) ? SOFT_PKT_FIRST : 0) |
                               ((w->sent_off + chunk == w->total_len) ?
                                SOFT_PKT_LAST : 0);
            pkt->status      = 0;
            pkt->atomic_size = (uint8_t)((flags & SOFT_OPF_ATOMIC) ?
                                         w->total_len : 0);
            pkt->len         = (flags & SOFT_OPF_PAYLOAD) ? (uint32_t)chunk :
                               0;
            pkt->src_pid     = dev->pid;
            pkt->src_inst    = dev->inst;
            pkt->src_qpn     = qp->super.qp_num;
            pkt->dst_qpn     = w->wr.dest.dctn;
            pkt->msn         = w->msn;
            pkt->ack_base    = soft_wqe(qp, qp->sq_comp)->msn;
            pkt->dc_key      = w->wr.dest.dc_key;
            pkt->offset      = w->sent_off;
            pkt->total_len   = w->total_len;
            pkt->raddr       = w->wr.remote_addr;
            pkt->rkey        = w->wr.rkey;
            pkt->imm         = w->wr.imm;
            pkt->args[0]     = (flags & SOFT_OPF_READ) ? chunk :
                               w->wr.compare_add;
            pkt->args[1]     = w->wr.swap;
            pkt->args[2]     = w->wr.compare_mask;
            pkt->args[3]     = w->wr.swap_mask;
            pkt->deliver_ns  = (fate == SOFT_TX_DELAY) ? now + delay : 0;
            pkt->gen         = qp->gen;
            if (flags & SOFT_OPF_PAYLOAD) {
                if (w->wr.flags & DCX_SEND_INLINE) {
                    memcpy(payload, w->inl + w->sent_off, chunk);
                } else {
                    soft_sge_gather(payload, w->sge, w->wr.num_sge,
                                    w->sent_off, chunk);
                }
            }
            pkt->csum = soft_pkt_csum(pkt) ^ (fate == SOFT_TX_CORRUPT);
            soft_ring_publish(target, &target->req, pos, now);
        }
        dev->stats.tx_packets++;
        if (flags & SOFT_OPF_PAYLOAD) {
            dev->stats.tx_bytes += chunk;
        }
        if (flags & SOFT_OPF_READ) {
            dev->resp_credits--;
            w->credits++;
        }
        w->sent_off += chunk;
        if (w->sent_off == w->total_len) {
            w->all_sent = 1;
        }
        qp->deadline_ns = now + qp->ack_timeout_ns;
    }
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
        if (w->state == SOFT_WQE_POSTED) {
            if (now < qp->rnr_until_ns) {
                return;
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
        soft_wqe_state(qp, w, SOFT_WQE_WAIT_RESP);
        qp->sq_send++;
    }
}

static void soft_req_timeout(soft_qp_t *qp, uint64_t now)
{
    soft_dev_t *dev = qp->dev;
    soft_swqe_t *w  = soft_wqe(qp, qp->sq_comp);

    if (soft_peer_dead(dev, w->peer)) {
        dcx_debug("%s: dci 0x%x: peer pid %u is gone", soft_qp_dev_name(qp),
                  qp->super.qp_num, w->peer->pid);
        soft_req_complete(qp, DCX_WC_RETRY_EXC_ERR, 0, now);
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

void soft_req_timers(soft_dev_t *dev, uint64_t now)
{
    soft_qp_t *qp;

    for (qp = dev->dcis; qp != NULL; qp = qp->next_dci) {
        if ((qp->super.state != DCX_QPS_RTS) || (qp->sq_comp == qp->sq_head)) {
            continue;
        }
        if ((qp->deadline_ns != 0) && (now >= qp->deadline_ns)) {
            soft_req_timeout(qp, now);
        }
        soft_req_run(qp, now);
    }
}

/* ------------------------------------------------------------------------
 * Posting
 * ------------------------------------------------------------------------ */
static int soft_post_check(soft_qp_t *qp, const dcx_send_wr_t *wr,
                           uint64_t *total_p)
{
    const soft_opinfo_t *op = soft_op(wr->opcode);
    const char *name        = soft_qp_dev_name(qp);
    uint64_t total = 0;
    unsigned i;

    if (op == NULL) {
        dcx_error("%s: dci 0x%x post: opcode %u not supported", name,
                  qp->super.qp_num, wr->opcode);
        return EINVAL;
    }
    if (wr->num_sge > qp->super.max_send_sge) {
        dcx_error("%s: dci 0x%x post %s: %u sge > max %u", name,
                  qp->super.qp_num, op->name, wr->num_sge,
                  qp->super.max_send_sge);
        return EINVAL;
    }
    if ((wr->dest.ah == NULL) || ((wr->num_sge > 0) && (wr->sg_list == NULL))) {
        dcx_error("%s: dci 0x%x post %s: no destination or sg list", name,
                  qp->super.qp_num, op->name);
        return EINVAL;
    }
    for (i = 0; i < wr->num_sge; ++i) {
        total += wr->sg_list[i].length;
    }
    if (op->flags & SOFT_OPF_ATOMIC) {
        uint64_t size = 8;

        if ((wr->opcode == DCX_WR_ATOMIC_MASKED_FADD) ||
            (wr->opcode == DCX_WR_ATOMIC_MASKED_CSWAP)) {
            size = wr->atomic_size;
        }
        if (((size != 4) && (size != 8)) || (wr->num_sge != 1) ||
            (wr->sg_list[0].length < size) ||
            (wr->flags & DCX_SEND_INLINE)) {
            dcx_error("%s: dci 0x%x post %s: need one result sge of the "
                      "atomic size (4/8), got size %llu, %u sge", name,
                      qp->super.qp_num, op->name, (unsigned long long)size,
                      wr->num_sge);
            return EINVAL;
        }
        total = size;
    } else if (wr->flags & DCX_SEND_INLINE) {
        if ((op->flags & SOFT_OPF_READ) || (total > qp->super.max_inline)) {
            dcx_error("%s: dci 0x%x post %s: inline %llu bytes > max %u",
                      name, qp->super.qp_num, op->name,
                      (unsigned long long)total, qp->super.max_inline);
            return EINVAL;
        }
    }
    *total_p = total;
    return 0;
}

static soft_swqe_t *soft_post_enqueue(soft_qp_t *qp, const dcx_send_wr_t *wr,
                                      uint64_t total)
{
    soft_swqe_t *w = soft_wqe(qp, qp->sq_head);
    unsigned i;

    w->wr        = *wr;
    w->wr.sg_list = NULL;
    w->peer      = ((soft_ah_t *)wr->dest.ah)->peer;
    w->total_len = total;
    w->sent_off  = 0;
    w->recv_off  = 0;
    w->credits   = 0;
    w->msn       = qp->next_msn++;
    w->state     = SOFT_WQE_POSTED;
    w->forced    = SOFT_NO_STATUS;
    w->checked   = 0;
    w->all_sent  = 0;
    w->rd_counted = 0;
    if (wr->flags & DCX_SEND_INLINE) {
        uint64_t off = 0;

        for (i = 0; i < wr->num_sge; ++i) {
            memcpy(w->inl + off, (void *)(uintptr_t)wr->sg_list[i].addr,
                   wr->sg_list[i].length);
            off += wr->sg_list[i].length;
        }
    } else {
        memcpy(w->sge, wr->sg_list, wr->num_sge * sizeof(*w->sge));
    }
    qp->sq_head++;
    return w;
}

static int soft_dci_post_send(dcx_qp_t *qp_, const dcx_send_wr_t *wr)
{
    soft_qp_t *qp   = (soft_qp_t *)qp_;
    soft_dev_t *dev = qp->dev;
    soft_swqe_t *w;
    uint64_t total;
    int ret;

    ret = soft_post_check(qp, wr, &total);
    if (ret != 0) {
        return ret;
    }
    pthread_mutex_lock(&dev->lock);
    if (qp->sq_head - qp->sq_tail >= qp->sq_size) {
        pthread_mutex_unlock(&dev->lock);
        dcx_debug("%s: dci 0x%x post: send queue full (%u WRs not retired)",
                  soft_qp_dev_name(qp), qp->super.qp_num, qp->sq_size);
        return ENOMEM;
    }
    if (qp->super.post_send != soft_dci_post_send) {
        /* moved to error while we waited for the lock */
        pthread_mutex_unlock(&dev->lock);
        return qp->super.post_send(qp_, wr);
    }
    w = soft_post_enqueue(qp, wr, total);
    soft_fault_post(dev, wr->opcode, &w->forced);
    dev->now = soft_now_ns();
    soft_req_run(qp, dev->now);
    pthread_mutex_unlock(&dev->lock);
    soft_port_kick_sleeping(dev->hdr);
    return 0;
}

static int soft_dci_post_flush(dcx_qp_t *qp_, const dcx_send_wr_t *wr)
{
    soft_qp_t *qp   = (soft_qp_t *)qp_;
    soft_dev_t *dev = qp->dev;
    soft_swqe_t *w;
    uint64_t total;
    int ret;

    ret = soft_post_check(qp, wr, &total);
    if (ret != 0) {
        return ret;
    }
    pthread_mutex_lock(&dev->lock);
    if (qp->sq_head - qp->sq_tail >= qp->sq_size) {
        pthread_mutex_unlock(&dev->lock);
        dcx_debug("%s: dci 0x%x post: send queue full (%u WRs not retired)",
                  soft_qp_dev_name(qp), qp->super.qp_num, qp->sq_size);
        return ENOMEM;
    }
    if (qp->super.post_send != soft_dci_post_flush) {
        pthread_mutex_unlock(&dev->lock);
        return qp->super.post_send(qp_, wr);
    }
    w        = soft_post_enqueue(qp, wr, total);
    w->state = SOFT_WQE_DONE;
    soft_wqe_push_cqe(qp, w, qp->sq_head - 1, DCX_WC_WR_FLUSH_ERR, 0);
    qp->sq_comp = qp->sq_head;
    qp->sq_send = qp->sq_head;
    pthread_mutex_unlock(&dev->lock);
    return 0;
}

static void soft_flush_post(soft_qp_t *qp)
{
    __atomic_store_n(&qp->super.post_send, soft_dci_post_flush,
                     __ATOMIC_RELEASE);
}

static int soft_dct_post_send(dcx_qp_t *qp_, const dcx_send_wr_t *wr)
{
    dcx_error("%s: qp 0x%x is a DCT: cannot post sends",
              qp_->dev->caps.name, qp_->qp_num);
    return EINVAL;
}

void soft_qp_retire(soft_qp_t *qp, uint32_t sq_idx)
{
    if ((int32_t)(sq_idx + 1 - qp->sq_tail) > 0) {
        qp->sq_tail = sq_idx + 1;
    }
}

/* ------------------------------------------------------------------------
 * Control path
 * ------------------------------------------------------------------------ */
static void soft_cq_purge(soft_cq_t *cq, soft_qp_t *qp, int drop)
{
    uint32_t i, out = cq->head;

    for (i = cq->head; i != cq->tail; ++i) {
        soft_cqe_t *e = &cq->q[i & (cq->size - 1)];

        if (e->qp == qp) {
            if (drop) {
                continue;
            }
            e->qp = NULL;
        }
        cq->q[out++ & (cq->size - 1)] = *e;
    }
    cq->tail = out;
}

static int soft_qp_alloc_num(soft_dev_t *dev, soft_qp_t *qp)
{
    uint32_t i, idx;

    for (i = 0; i < dev->max_qps; ++i) {
        idx = (dev->qp_cursor + i) % dev->max_qps;
        if (dev->qps[idx] == NULL) {
            dev->qps[idx]       = qp;
            dev->qp_cursor      = idx + 1;
            qp->super.qp_num    = SOFT_QPN_BASE + idx;
            return 0;
        }
    }
    return ENOMEM;
}

static int soft_dci_init(soft_dev_t *dev, soft_qp_t *qp,
                         const dcx_qp_attr_t *attr)
{
    const dcx_soft_limits_t *l = &dev->limits;
    const char *name           = dev->super.caps.name;
    uint32_t i, sge = attr->max_send_sge ? attr->max_send_sge : 1;
    uint32_t rd     = attr->max_rd_atomic ? attr->max_rd_atomic :
                      l->max_rd_atomic;

    if ((attr->send_cq == NULL) || (attr->max_send_wr == 0) ||
        (attr->max_send_wr > l->max_qp_wr) || (sge > l->max_sge) ||
        (attr->max_inline > l->max_inline) || (rd > l->max_rd_atomic) ||
        (attr->retry_cnt > 7) || (attr->rnr_retry > 7) ||
        (attr->timeout > 31)) {
        dcx_error("%s: dci create: invalid attributes (send_cq %p, "
                  "max_send_wr %u/%u, max_send_sge %u/%u, max_inline %u/%u, "
                  "max_rd_atomic %u/%u, retry %u, rnr_retry %u)", name,
                  (void *)attr->send_cq, attr->max_send_wr, l->max_qp_wr, sge,
                  l->max_sge, attr->max_inline, l->max_inline, rd,
                  l->max_rd_atomic, attr->retry_cnt, attr->rnr_retry);
        return EINVAL;
    }
    if (dev->num_dcis >= l->max_dci) {
        dcx_error("%s: dci create: %u DCIs already (max_dci)", name,
                  dev->num_dcis);
        return ENOMEM;
    }
    qp->sq_size  = attr->max_send_wr;
    qp->sq       = calloc(qp->sq_size, sizeof(*qp->sq));
    qp->sge_pool = calloc((size_t)qp->sq_size * sge, sizeof(dcx_sge_t));
    qp->inl_pool = calloc((size_t)qp->sq_size, attr->max_inline + 1);
    if ((qp->sq == NULL) || (qp->sge_pool == NULL) ||
        (qp->inl_pool == NULL)) {
        dcx_error("%s: dci create: out of memory for %u WRs", name,
                  qp->sq_size);
        return ENOMEM;
    }
    for (i = 0; i < qp->sq_size; ++i) {
        qp->sq[i].sge = qp->sge_pool + (size_t)i * sge;
        qp->sq[i].inl = qp->inl_pool + (size_t)i * (attr->max_inline + 1);
    }
    qp->cq                    = (soft_cq_t *)attr->send_cq;
    qp->super.max_send_wr     = attr->max_send_wr;
    qp->super.max_send_sge    = sge;
    qp->super.max_inline      = attr->max_inline;
    qp->super.max_rd_atomic   = rd;
    qp->super.post_send       = soft_dci_post_send;
    if (attr->timeout != 0) {
        /* the caller gives the verbs transport parameters: use them as is */
        qp->ack_timeout_ns = 4096ull << attr->timeout;
        qp->retry_cnt      = attr->retry_cnt;
        qp->rnr_retry      = attr->rnr_retry;
    } else {
        /* timeout 0 (infinite in verbs): the device's configured timers */
        qp->ack_timeout_ns = (uint64_t)l->ack_timeout_us * 1000ull;
        qp->retry_cnt      = l->retry_cnt;
        qp->rnr_retry      = l->rnr_retry;
    }
    return 0;
}

static int soft_dct_init(soft_dev_t *dev, soft_qp_t *qp,
                         const dcx_qp_attr_t *attr)
{
    const uint32_t remote = DCX_ACCESS_REMOTE_WRITE | DCX_ACCESS_REMOTE_READ |
                            DCX_ACCESS_REMOTE_ATOMIC;
    const char *name      = dev->super.caps.name;

    if (attr->srq == NULL) {
        dcx_error("%s: dct create: an SRQ is mandatory", name);
        return EINVAL;
    }
    if ((attr->access & ~remote) || (attr->min_rnr_timer > 31)) {
        dcx_error("%s: dct create: access 0x%x (allowed 0x%x) or "
                  "min_rnr_timer %u invalid", name, attr->access, remote,
                  attr->min_rnr_timer);
        return EINVAL;
    }
    qp->srq    = (soft_srq_t *)attr->srq;
    qp->cq     = attr->recv_cq ? (soft_cq_t *)attr->recv_cq : qp->srq->cq;
    qp->dc_key = attr->dc_key;
    qp->access = attr->access;
    qp->rnr_delay_us = attr->min_rnr_timer ?
                       soft_rnr_table[attr->min_rnr_timer] * 10u :
                       dev->limits.rnr_timer_us;
    qp->super.post_send = soft_dct_post_send;
    return 0;
}

static void soft_qp_free(soft_qp_t *qp)
{
    free(qp->sq);
    free(qp->sge_pool);
    free(qp->inl_pool);
    free(qp);
}

int soft_qp_create(dcx_pd_t *pd, const dcx_qp_attr_t *attr, dcx_qp_t **qp_p)
{
    soft_dev_t *dev = soft_dev(pd->dev);
    soft_qp_t *qp;
    int ret;

    if ((attr->type != DCX_QPT_DCI) && (attr->type != DCX_QPT_DCT)) {
        dcx_error("%s: qp create: type %d not supported",
                  dev->super.caps.name, (int)attr->type);
        return EINVAL;
    }
    qp = calloc(1, sizeof(*qp));
    if (qp == NULL) {
        dcx_error("%s: qp create: out of memory", dev->super.caps.name);
        return ENOMEM;
    }
    qp->dev       = dev;
    qp->super.dev = pd->dev;
    qp->super.pd  = pd;
    qp->super.type = attr->type;

    pthread_mutex_lock(&dev->lock);
    ret = (attr->type == DCX_QPT_DCI) ? soft_dci_init(dev, qp, attr) :
                                        soft_dct_init(dev, qp, attr);
    if (ret == 0) {
        ret = soft_qp_alloc_num(dev, qp);
        if (ret != 0) {
            dcx_error("%s: qp create: out of QP numbers",
                      dev->super.caps.name);
        }
    }
    if (ret != 0) {
        pthread_mutex_unlock(&dev->lock);
        soft_qp_free(qp);
        return ret;
    }
    qp->gen = ++dev->qp_gen;
    if (attr->type == DCX_QPT_DCI) {
        __atomic_store_n(&qp->super.state, DCX_QPS_RTS, __ATOMIC_RELAXED);
        qp->next_dci    = dev->dcis;
        dev->dcis       = qp;
        dev->num_dcis++;
    } else {
        __atomic_store_n(&qp->super.state, DCX_QPS_RTR, __ATOMIC_RELAXED);
        qp->srq->refs++;
    }
    qp->cq->refs++;
    dev->num_objs++;
    pthread_mutex_unlock(&dev->lock);
    *qp_p = &qp->super;
    return 0;
}

int soft_qp_destroy(dcx_qp_t *qp_)
{
    soft_qp_t *qp   = (soft_qp_t *)qp_;
    soft_dev_t *dev = qp->dev;
    soft_qp_t **pp;

    pthread_mutex_lock(&dev->lock);
    dev->qps[qp->super.qp_num - SOFT_QPN_BASE] = NULL;
    if (qp->super.type == DCX_QPT_DCI) {
        uint32_t idx;

        for (idx = qp->sq_comp; idx != qp->sq_head; ++idx) {
            soft_wqe_release(qp, soft_wqe(qp, idx));
        }
        for (pp = &dev->dcis; *pp != NULL; pp = &(*pp)->next_dci) {
            if (*pp == qp) {
                *pp = qp->next_dci;
                break;
            }
        }
        dev->num_dcis--;
        soft_cq_purge(qp->cq, qp, 0);
    } else {
        soft_resp_forget_dct(dev, qp);
        qp->srq->refs--;
    }
    qp->cq->refs--;
    dev->num_objs--;
    pthread_mutex_unlock(&dev->lock);
    soft_qp_free(qp);
    return 0;
}

int soft_qp_set_error(dcx_qp_t *qp_)
{
    soft_qp_t *qp   = (soft_qp_t *)qp_;
    soft_dev_t *dev = qp->dev;

    if (qp->super.type != DCX_QPT_DCI) {
        dcx_error("%s: qp 0x%x set error: not a DCI", dev->super.caps.name,
                  qp->super.qp_num);
        return EINVAL;
    }
    pthread_mutex_lock(&dev->lock);
    soft_qp_to_error(qp, "requested by the user");
    pthread_mutex_unlock(&dev->lock);
    return 0;
}

int soft_qp_recover(dcx_qp_t *qp_)
{
    soft_qp_t *qp   = (soft_qp_t *)qp_;
    soft_dev_t *dev = qp->dev;

    pthread_mutex_lock(&dev->lock);
    if ((qp->super.type != DCX_QPT_DCI) || (qp->super.state != DCX_QPS_ERR)) {
        pthread_mutex_unlock(&dev->lock);
        dcx_error("%s: qp 0x%x recover: not a DCI in error (state %d)",
                  dev->super.caps.name, qp->super.qp_num,
                  (int)qp->super.state);
        return EINVAL;
    }
    /* RESET: forget every WR and the unpolled completions */
    soft_cq_purge(qp->cq, qp, 1);
    qp->sq_tail         = qp->sq_head;
    qp->sq_comp         = qp->sq_head;
    qp->sq_send         = qp->sq_head;
    qp->rd_atomic       = 0;
    qp->retries         = 0;
    qp->rnr_count       = 0;
    qp->deadline_ns     = 0;
    qp->rnr_until_ns    = 0;
    __atomic_store_n(&qp->super.state, DCX_QPS_RTS, __ATOMIC_RELAXED);
    __atomic_store_n(&qp->super.post_send, soft_dci_post_send,
                     __ATOMIC_RELEASE);
    pthread_mutex_unlock(&dev->lock);
    return 0;
}
