/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device CQs (soft_cq.c): their creation, and the inline writing of
 * a completion the engine does in place.  Sits on soft_objs.h (CQs, send
 * WQEs, QPs) and soft_base.h (the opcode table).
 */
#ifndef DCX_SOFT_CQ_H_
#define DCX_SOFT_CQ_H_

#include "dcx_dev.h"
#include "soft_base.h"
#include "soft_wire.h"
#include "soft_objs.h"

#include <stdint.h>
#include <string.h>

/* soft_cq.c */
int soft_cq_create(dcx_dev_t *dev, uint32_t cqe, dcx_cq_t **cq_p);
int soft_cq_create_ch(dcx_dev_t *dev, uint32_t cqe, dcx_comp_channel_t *ch,
                      dcx_cq_t **cq_p);
int soft_cq_destroy(dcx_cq_t *cq);
int soft_cq_push(soft_cq_t *cq, const dcx_wc_t *wc, soft_qp_t *qp,
                 uint32_t sq_idx);
void soft_cq_overrun(soft_cq_t *cq, uint32_t qp_num);
void soft_cq_purge(soft_cq_t *cq, soft_qp_t *qp, int drop);

/* soft_cq_poll.c: the CQ's ops, installed by soft_cq_create */
int soft_cq_poll(dcx_cq_t *cq, int max, dcx_wc_t *wc);
int soft_cq_poll_pair(dcx_cq_t *cq, dcx_cq_t *other, int max, dcx_wc_t *wc,
                      int *n_other_p);
int soft_cq_ready(const dcx_cq_t *cq);
void soft_cq_release(dcx_cq_t *cq);

/* The entry the next completion of cq is written into, in place (engine
 * lock held), or NULL when the CQ is full (the caller then reports
 * soft_cq_overrun()); soft_cq_commit() queues it. */
static inline soft_cqe_t *soft_cq_slot(soft_cq_t *cq)
{
    if (cq->tail - cq->head >= cq->super.cqe) {
        return NULL;
    }
    return &cq->q[cq->tail & (cq->size - 1)];
}

/* The receive completion of a one-packet SEND (or SEND_IMM) taken by the
 * responder's one-pass path into wr_id, written into cqe: every field the
 * transport reads, the rest zero; the caller sets the TM fields. */
static inline void soft_cqe_fast_recv(soft_cqe_t *cqe, uint8_t opcode,
                                      uint64_t wr_id, uint32_t qp_num,
                                      const soft_pkt_t *pkt, uint16_t slid)
{
    int imm = (pkt->op == DCX_WR_SEND_IMM);

    cqe->wc.wr_id      = wr_id;
    cqe->wc.status     = DCX_WC_SUCCESS;
    cqe->wc.opcode     = opcode;
    cqe->wc.flags      = imm ? DCX_WC_FLAG_WITH_IMM : 0;
    cqe->wc.byte_len   = pkt->len;
    cqe->wc.imm        = imm ? pkt->imm : 0;
    cqe->wc.qp_num     = qp_num;
    cqe->wc.src_qp     = pkt->src_qpn;
    cqe->wc.vendor_err = 0;
    cqe->wc.tm_tag     = 0;
    cqe->wc.tm_priv    = 0;
    cqe->wc.slid       = slid;
    cqe->wc.reserved   = 0;
    cqe->qp            = NULL;
    cqe->sq_idx        = 0;
}

/* soft_channel.c */
void soft_cq_fire(soft_cq_t *cq);

/* The completion of WQE w of qp, with status and byte_len, into *wc */
static inline void soft_wqe_wc(const soft_qp_t *qp, const soft_swqe_t *w,
                               uint8_t status, uint32_t byte_len, dcx_wc_t *wc)
{
    memset(wc, 0, sizeof(*wc));
    wc->wr_id    = w->wr.wr_id;
    wc->status   = status;
    wc->opcode   = soft_opinfo[w->wr.opcode].wc_opcode;
    wc->byte_len = byte_len;
    wc->qp_num   = qp->wc_qpn;
    if ((status == DCX_WC_SUCCESS) &&
        (soft_opinfo[w->wr.opcode].flags & SOFT_OPF_IMM)) {
        wc->flags = DCX_WC_FLAG_WITH_IMM;
        wc->imm   = w->wr.imm;
    }
}

static inline void soft_cq_commit(soft_cq_t *cq)
{
    /* release: the unlocked look of soft_engine_poll_idle() */
    __atomic_store_n(&cq->tail, cq->tail + 1, __ATOMIC_RELEASE);
    if (cq->armed) {
        soft_cq_fire(cq);
    }
}

/* soft_channel.c: soft_channel.h */

#endif
