/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device tag matching: what polling a completion of a TM SRQ's CQ
 * retires, inline in the CQ's drain (soft_cq_poll.c).  Above soft_tm.h
 * and soft_tm.c, which it calls; neither calls it.
 */
#ifndef DCX_SOFT_TM_POLL_H_
#define DCX_SOFT_TM_POLL_H_

#include "soft_tm.h"

/* soft_tm.c */
void soft_tm_polled_rest(soft_cqe_t *cqe, dcx_wc_t *wc);

/* Polling a completion with cqe->tm set (engine lock held): what it
 * retires.  An unexpected message alone (every unexpected eager, on the
 * responder's fast path too) is counted here, inline in the drain; list
 * operations and entries out of line. */
static inline void soft_tm_polled(soft_cqe_t *cqe, dcx_wc_t *wc)
{
    if (cqe->tm_flags == SOFT_TMC_UNEXP) {
        soft_tm_polled_unexp(cqe->tm, wc);
    } else {
        soft_tm_polled_rest(cqe, wc);
    }
}

#endif
