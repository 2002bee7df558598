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

/* Engine lock held: the head receive is taken */
static inline void soft_srq_pop(soft_srq_t *srq)
{
    srq->hpos = (srq->hpos + 1 == srq->size) ? 0 : srq->hpos + 1;
    srq->head++;
}

#endif
