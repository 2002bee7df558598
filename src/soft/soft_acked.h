/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the completion of a DCI's requests acknowledged in its ack
 * table when nothing else is outstanding (a ping-pong's send), inline in
 * the engine's pass (soft_engine.c) ahead of the requester's general walk
 * (soft_req_timers, soft_req.c).
 */
#ifndef SOFT_ACKED_H_
#define SOFT_ACKED_H_

#include "soft_cq.h"
#include "soft_req.h"

#include <string.h>

/* w completed: if it held the newest request we queued to its target,
 * everything of ours there was consumed (the ring is served in order). */
static inline void soft_req_watch_done(const soft_swqe_t *w)
{
    soft_peer_t *peer = w->peer;

    if ((peer != NULL) && (w->tx_end != 0) &&
        ((uint32_t)peer->watch_pos == w->tx_end)) {
        peer->watch_since = 0;
    }
}

/* 1 if w is acknowledged by the ack table's next msn 'next' and completes
 * with it: a SEND/WRITE waiting for its response with an msn below it
 * (READs and atomics complete only with their data) */
static inline int soft_req_table_acks(const soft_swqe_t *w, uint32_t next)
{
    return ((int32_t)(next - w->msn) > 0) && (w->state == SOFT_WQE_WAIT_RESP) &&
           !(soft_opinfo[w->wr.opcode].flags &
             (SOFT_OPF_READ | SOFT_OPF_ATOMIC));
}

/* soft_req_timers' common case (a ping-pong's), with no call, so that no
 * register is saved: the active list holds one DCI in RTS, all its
 * requests out, and its ack table line acknowledges them all.  Each is
 * completed as soft_req_acked_in does, a signaled one's CQE written in
 * place (soft_wqe_wc, as soft_wqe_push_cqe fills it); the DCI leaves the list, and 1 is
 * returned.  Otherwise 0, after completing, in order, what
 * soft_req_acked_in would have completed before the first WQE this does
 * not take (not acknowledged, a READ or atomic, its CQ full or armed:
 * soft_wqe_push_cqe reports the overrun, soft_cq_commit fires the
 * channel); the general walk goes on from there.  Not taken at all with
 * tracing on (soft_wqe_state logs every state change). */
static inline __attribute__((always_inline)) int
soft_req_timers_quick(soft_dev_t *dev, uint64_t now)
{
    soft_qp_t *qp = dev->active_dcis;
    soft_cqe_t *cqe;
    soft_swqe_t *w;
    uint32_t comp, next;
    uint64_t word;

    if ((qp == NULL) || (qp->next_active != NULL) || (dev->acks == NULL) ||
        (qp->super.state != DCX_QPS_RTS) || (qp->sq_send != qp->sq_head) ||
        (DCX_LOG_TRACE <= dcx_log_max_level)) {
        return 0;
    }
    /* the DCI's entry, found at its creation (qp->ack_line: set whenever
     * dev->acks is) */
    word = __atomic_load_n(qp->ack_line, __ATOMIC_ACQUIRE);
    if ((uint32_t)(word >> 32) != qp->gen) {
        return 0;
    }
    next = (uint32_t)word;
    for (comp = qp->sq_comp; comp != qp->sq_head; ++comp) {
        w = soft_wqe(qp, comp);
        if (!soft_req_table_acks(w, next)) {
            break;
        }
        if (w->wr.flags & DCX_SEND_SIGNALED) {
            cqe = soft_cq_slot(qp->cq);
            if ((cqe == NULL) || qp->cq->armed) {
                break;
            }
            soft_wqe_wc(qp, w, DCX_WC_SUCCESS, (uint32_t)w->total_len,
                        &cqe->wc);
            cqe->qp     = qp;
            cqe->sq_idx = comp;
            cqe->tm     = NULL;
            /* release: the unlocked look of soft_engine_poll_idle() */
            __atomic_store_n(&qp->cq->tail, qp->cq->tail + 1, __ATOMIC_RELEASE);
        }
        dev->resp_credits += w->credits;
        w->credits = 0;
        w->state   = SOFT_WQE_DONE;
        soft_req_watch_done(w);
        dev->stats.table_completions++;
    }
    if (comp != qp->sq_comp) {
        qp->sq_comp     = comp;
        qp->retries     = 0;
        qp->rnr_count   = 0;
        /* without the pass's clock (now 0: soft_engine_acked_pass), the
         * timer of what is left starts at the next pass, as after a light
         * post (soft_req_timers arms it) */
        qp->deadline_ns = (comp == qp->sq_head) ? 0 :
                          (now != 0)            ? now + qp->ack_timeout_ns :
                                                  SOFT_DEADLINE_ARM;
    }
    if (comp != qp->sq_head) {
        return 0;
    }
    dev->active_dcis = NULL;
    qp->active       = 0;
    return 1;
}

#endif
