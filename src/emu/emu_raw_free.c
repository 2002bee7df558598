/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: the raw state of a QP, CQ or SRQ given back
 * (emu_raw.h): the engine lets go of its queues (emu_raw.c), and the
 * memory emu_dv_obj.c laid out goes, back to the heap or to the object's
 * huge-page segment, along with what the engine made for a send queue
 * (AHs, scratch and result buffers).  Called as the object is destroyed,
 * or as mlx5dv_init_obj or a DEVX attach fails half-way, under
 * emu_raw_lock.
 */
#include "emu/emu_qbuf.h"
#include "emu/emu_raw.h"

#include <stdlib.h>

static void emu_dv_rq_free(struct emu_raw_rq *rq, const emu_qbuf_t *qb)
{
    if (rq != NULL) {
        free(rq->grh);
        free(rq->keep);
        if (!rq->ext && !emu_qbuf_owns(qb, rq->buf)) {
            free(rq->buf);
        }
        free(rq);
    }
}

void emu_raw_qp_free(emu_qp_t *qp)
{
    struct emu_raw_sq *sq = qp->raw_sq;
    unsigned i;

    if (sq == NULL) {
        return;
    }
    emu_raw_del_sq(qp);
    if ((qp->rq != NULL) && (qp->rq->raw != NULL)) {
        emu_raw_del_rq(qp->rq);
        emu_dv_rq_free(qp->rq->raw, qp->qbuf);
        qp->rq->raw = NULL;
    }
    for (i = 0; i < 64; ++i) {
        if (sq->ahs[i] != NULL) {
            ibv_destroy_ah(sq->ahs[i]);
        }
    }
    if (sq->scratch_mr != NULL) {
        dcx_mr_dereg(sq->scratch_mr);
    }
    free(sq->scratch);
    free(sq->be4);
    if (!sq->ext) {
        if (!emu_qbuf_owns(qp->qbuf, sq->buf)) {
            free(sq->buf);
        }
        free((void *)sq->dbrec);
    }
    free(sq);
    qp->raw_sq = NULL;
    emu_qbuf_reset(qp->qbuf);
}

void emu_raw_cq_free(emu_cq_t *cq)
{
    if (cq->raw == NULL) {
        return;
    }
    emu_raw_del_cq(cq);
    if (!emu_qbuf_owns(cq->qbuf, cq->raw->buf)) {
        free(cq->raw->buf);
    }
    free((void *)cq->raw->dbrec);
    free(cq->raw);
    cq->raw = NULL;
    emu_qbuf_reset(cq->qbuf);
}

void emu_raw_srq_free(emu_srq_t *srq)
{
    if (srq->raw == NULL) {
        return;
    }
    emu_raw_del_rq(srq);
    emu_dv_rq_free(srq->raw, srq->qbuf);
    free((void *)srq->raw_db);
    srq->raw    = NULL;
    srq->raw_db = NULL;
    emu_qbuf_reset(srq->qbuf);
}
