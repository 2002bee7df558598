/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: what the responder does with an SRQ (soft_srq.c holds the
 * object), all with the engine lock held.
 */
#ifndef DCX_SOFT_SRQ_H_
#define DCX_SOFT_SRQ_H_

#include "soft_objs.h"

/* Engine lock held: the receive at the head of a non-empty SRQ */
static inline soft_rwqe_t *soft_srq_head(soft_srq_t *srq)
{
    return &srq->q[srq->hpos];
}

/* soft_answer.c, engine lock held: a message found srq empty
 * (dcx_soft_srq_watch) */
void soft_srq_found_empty(soft_srq_t *srq);

/* soft_srq.c, engine lock held: dct (the DCT whose receive queue srq is)
 * completes every receive queued, and every one posted from now on, with
 * DCX_WC_WR_FLUSH_ERR on its CQ; NULL: the receives queued are dropped
 * without completions and posts queue again (dcx_soft_dct_flush) */
void soft_srq_flush(soft_srq_t *srq, soft_qp_t *dct);

/* Engine lock held: the head receive is taken */
static inline void soft_srq_pop(soft_srq_t *srq)
{
    srq->hpos = (srq->hpos + 1 == srq->size) ? 0 : srq->hpos + 1;
    srq->head++;
}

#endif
