/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the polls of a CQ (its ops, installed by soft_cq_create).
 * A poll looks at the engine and the CQ without the lock (soft_poll.h),
 * and takes the lock, runs the pass the look asked for and drains the CQ
 * only when there is work.  Above the engine, whose passes they run, and
 * the CQ (soft_cq.c), into which the engine queues completions.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_tm_poll.h"

/* Without the lock, by the CQ's poller: done with the bytes of the oldest
 * receive in place its polls returned and it did not release yet */
void soft_cq_release(dcx_cq_t *cq_)
{
    soft_cq_t *cq = (soft_cq_t *)cq_;

    if (cq->ip_released != cq->ip_polled) {
        __atomic_store_n(&cq->ip_released, cq->ip_released + 1,
                         __ATOMIC_RELEASE);
    }
}

/* Takes up to max completions of cq (engine lock held). */
static inline int soft_cq_drain(soft_cq_t *cq, int max, dcx_wc_t *wc)
{
    soft_cqe_t *cqe;
    int n = 0;

    if (cq->ip_on) { /* a poll releases what the last ones returned */
        __atomic_store_n(&cq->ip_released, cq->ip_polled, __ATOMIC_RELEASE);
    }
    if (cq->head == cq->tail) {
        return 0;
    }
    while ((n < max) && (cq->head != cq->tail)) {
        cqe     = &cq->q[cq->head & (cq->size - 1)];
        wc[n++] = cqe->wc;
        cq->ip_polled += !!(cqe->wc.flags & DCX_WC_FLAG_IN_PLACE);
        if (cqe->qp != NULL) {
            soft_qp_retire(cqe->qp, cqe->sq_idx);
        }
        if (cqe->tm != NULL) {
            soft_tm_polled(cqe, &wc[n - 1]);
        }
        cq->head++;
    }
    if (cq->overrun && (cq->head == cq->tail)) {
        cq->overrun = 0; /* drained: a new overrun is logged again */
    }
    return n;
}

/* The locked side of a poll (soft_cq_poll_busy): one lock round, the pass
 * the look asked for (SOFT_LOOK_*), then both CQs drained.  Inline: the poll
 * saves the same registers either way (the pass stays a call: it spills).
 * A look that found nothing for the engine (completions to drain only: a
 * pass of another poll queued them, as on a device both ends of a message
 * share) makes no call: the stamp, and the CQs have seen the last pass. */
static inline __attribute__((always_inline)) int
soft_cq_poll_locked(soft_cq_t *cq, soft_cq_t *other, int max, dcx_wc_t *wc,
                    int *n_other_p, int look, uint64_t clk)
{
    soft_dev_t *dev = cq->dev;
    int n;

    soft_lock(&dev->lock);
    dev->stats.locked_polls++;
    if (look == SOFT_LOOK_NONE) {
        soft_engine_stamp_clk(dev, clk);
        soft_cq_pair_seen(dev, cq, other);
    } else {
        dev->ip_cq  = cq; /* looked at only for SRQs that asked */
        dev->ip_max = (uint32_t)max;
        soft_engine_poll_pass(dev, cq, other, look, clk);
        dev->ip_cq = NULL;
    }
    n = soft_cq_drain(cq, max, wc);
    if (other != NULL) {
        *n_other_p = soft_cq_drain(other, max, wc + max);
    }
    soft_unlock(&dev->lock);
    return n;
}

/* A poll of cq and, unless NULL, other (its completions at wc + max, their
 * number in *n_other_p) that soft_engine_poll_idle() did not settle: the
 * engine is looked at without the lock (soft_engine_look, inline here);
 * with nothing for it and both CQs empty the poll ends there.  Otherwise
 * one lock round (soft_cq_poll_locked), with a pass only if the look asked
 * for one. */
static __attribute__((noinline)) int soft_cq_poll_busy(soft_cq_t *cq,
                                                       soft_cq_t *other,
                                                       int max, dcx_wc_t *wc,
                                                       int *n_other_p)
{
    soft_dev_t *dev = cq->dev;
    uint64_t clk    = 0;
    int look        = soft_engine_look(dev, &clk);

    if (look == SOFT_LOOK_NONE) {
        if (soft_cq_empty(cq) && ((other == NULL) || soft_cq_empty(other))) {
            soft_engine_stamp_clk(dev, clk);
            if (other != NULL) {
                *n_other_p = 0;
            }
            return 0;
        }
        /* an instance of its own, without the pass's call: the instance
         * that runs a pass keeps the code it had (with the look tested
         * inside one instance, an am_lat locked poll took ~4 instructions
         * more, measured) */
        return soft_cq_poll_locked(cq, other, max, wc, n_other_p,
                                   SOFT_LOOK_NONE, clk);
    }
    return soft_cq_poll_locked(cq, other, max, wc, n_other_p, look, clk);
}

/* Nothing to do is found without the lock (soft_engine_poll_idle, then
 * soft_engine_look); the engine first: a waiting one costs one load here */
int soft_cq_poll(dcx_cq_t *cq_, int max, dcx_wc_t *wc)
{
    soft_cq_t *cq = (soft_cq_t *)cq_;

    if (soft_engine_poll_idle(cq->dev) && soft_cq_empty(cq)) {
        soft_engine_stamp(cq->dev);
        return 0;
    }
    return soft_cq_poll_busy(cq, NULL, max, wc, NULL);
}

/* dcx_cq_poll_pair(): both CQs and the engine looked at once (the engine
 * first, as in soft_cq_poll), and at most one lock round for both */
int soft_cq_poll_pair(dcx_cq_t *cq_, dcx_cq_t *other_, int max, dcx_wc_t *wc,
                      int *n_other_p)
{
    soft_cq_t *cq    = (soft_cq_t *)cq_;
    soft_cq_t *other = (soft_cq_t *)other_;

    if (soft_engine_poll_idle(cq->dev) && soft_cq_empty(cq) &&
        soft_cq_empty(other)) {
        *n_other_p = 0;
        soft_engine_stamp(cq->dev);
        return 0;
    }
    return soft_cq_poll_busy(cq, other, max, wc, n_other_p);
}

/* dcx_cq_ready(): the looks of a poll (soft_cq_poll), without its stamp:
 * completions queued, or packets, a moved ack line or a due timer for the
 * engine, whose pass the next poll runs */
int soft_cq_ready(const dcx_cq_t *cq_)
{
    const soft_cq_t *cq = (const soft_cq_t *)cq_;
    uint64_t clk        = 0;

    if (!soft_cq_empty(cq)) {
        return 1;
    }
    return !soft_engine_poll_idle(cq->dev) &&
           (soft_engine_look(cq->dev, &clk) != SOFT_LOOK_NONE);
}
