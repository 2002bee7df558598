/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device polls (soft_engine.c, soft_cq.c): the poll stamp and what a
 * poll looks at without the engine lock before it knows whether it needs
 * the lock.  Sits on soft_dev.h (the device, its engine's wait set and its
 * rings' views).
 */
#ifndef DCX_SOFT_POLL_H_
#define DCX_SOFT_POLL_H_

#include "soft_base.h"
#include "soft_ring.h"
#include "soft_clock.h"
#include "soft_objs.h"
#include "soft_dev.h"

#include <stdint.h>

/* The poll stamp, written only once the last one written is
 * SOFT_STAMP_NS old (compared with a private copy: no shared line is read
 * or written by a poll in between). */
/* Once in this many stamps, the rings' tails are looked at: a slot claimed
 * by a producer that died before it marked its claim shows only there (a
 * poll looks at the head slots); the next poll then runs a whole pass,
 * which skips it (soft_ring_unstick). */
#define SOFT_TAIL_STAMPS 16u

/* soft_poll.c */
void soft_engine_stamp_write(soft_dev_t *dev, uint64_t now);
int soft_engine_tail_look(soft_dev_t *dev);
int soft_ring_idle_count(soft_stall_t *st);

/* Without the lock: 1 if a poll should take the lock to clear consumed
 * slots (a ring pass that finds nothing clears them, soft_engine_serve_req):
 * once they waited SOFT_CLEAR_POLLS polls without a post clearing them */
static inline int soft_ring_idle_clear(const soft_ring_t *ring,
                                       soft_stall_t *st)
{
    return soft_ring_unfreed(ring) && soft_ring_idle_count(st);
}

/* The stamp with a soft_clock_now() reading the caller took (a whole
 * pass's, soft_dev_now_clk: taken before the pass, so the stamp is at
 * most the pass's length old, which a peer deciding whether to prod reads
 * as a poll that came a moment earlier) */
static inline void soft_engine_stamp_at(soft_dev_t *dev, uint64_t now)
{
    /* signed: a reading older than the last stamp (another thread's
     * poll stamped in between) writes nothing */
    if ((int64_t)(now - dev->stamp) >= (int64_t)soft_clock_stamp_gran) {
        soft_engine_stamp_write(dev, now);
    }
}

static inline void soft_engine_stamp(soft_dev_t *dev)
{
    soft_engine_stamp_at(dev, soft_clock_now());
}

/* The stamp with the reading a look took (soft_engine_look's *clk_p), or
 * a fresh one if it took none (0): a counter read costs ~10 ns here, more
 * than the rest of a poll that finds nothing */
static inline void soft_engine_stamp_clk(soft_dev_t *dev, uint64_t clk)
{
    soft_engine_stamp_at(dev, (clk != 0) ? clk : soft_clock_now());
}

/* After a locked poll's pass (or none): cq and, unless NULL, other have seen
 * every pass of the application so far (soft_engine_poll_pass) */
static inline void soft_cq_pair_seen(soft_dev_t *dev, soft_cq_t *cq,
                                     soft_cq_t *other)
{
    cq->passes_seen = dev->app_passes;
    if (other != NULL) {
        other->passes_seen = dev->app_passes;
    }
}

/* What a poll finds for the engine without the lock (soft_engine_look) */
enum {
    SOFT_LOOK_NONE = 0, /* nothing for the engine: no pass */
    SOFT_LOOK_RING = 1, /* packets in the request ring only: ring pass */
    SOFT_LOOK_PASS = 2  /* a whole engine pass */
};

/* Without the lock: 1 if the engine has nothing to do for a poll (the
 * caller then stamps the port, soft_engine_stamp, after its other looks:
 * a call, with nothing of the caller's left to keep across it, so that a
 * poll with nothing to do saves no register).  A completion, packet or
 * post racing with the look is seen by the next poll, as if this one came
 * a moment earlier.  Inline, it covers an idle engine; the rest (an engine
 * that only waits for answers, packets in a ring) is looked at by
 * soft_engine_look(), inlined in the callers' out-of-line part (one call,
 * no more, before they know whether they need the lock). */
/* always inlined: a poll with nothing to do costs no call (the compiler
 * otherwise keeps it out of line since the rings' views were added).
 * Consumed slots waiting for their clear send the poll to the look, which
 * counts it (soft_ring_idle_clear): no call here, so that a caller that
 * goes on to its out-of-line part keeps its arguments in their registers
 * (nothing saved by the poll that finds work). */
static inline __attribute__((always_inline)) int
soft_engine_poll_idle(soft_dev_t *dev)
{
    return (__atomic_load_n(&dev->engine_idle, __ATOMIC_ACQUIRE) ==
            SOFT_ENGINE_IDLE) &&
           !soft_ring_view_ready(&dev->resp_stall) &&
           !soft_ring_view_ready(&dev->req_stall) &&
           !soft_ring_unfreed(&dev->hdr->req);
}

/* Without the lock: 1 if an engine that only waits (SOFT_ENGINE_WAIT)
 * still does: no watched ack line moved, no timer due, and the set did not
 * change meanwhile; 0 otherwise (the caller then takes the lock).  The
 * clock reading it compared with the timer, if it read one, in *clk_p (for
 * the poll's stamp: one counter read per poll). */
static inline int soft_engine_wait_holds(soft_dev_t *dev, uint64_t *clk_p)
{
    const soft_engine_wait_t *w = &dev->wait;
    uint32_t seq                = __atomic_load_n(&w->seq, __ATOMIC_ACQUIRE);
    uint32_t i, n = __atomic_load_n(&w->n, __ATOMIC_RELAXED);
    uint64_t moved = 0;

    if ((seq & 1) || (n > SOFT_WAIT_LINES)) {
        return 0;
    }
    for (i = 0; i < n; ++i) {
        moved |= __atomic_load_n(__atomic_load_n(&w->lines[i].line,
                                                 __ATOMIC_RELAXED),
                                 __ATOMIC_RELAXED) ^
                 __atomic_load_n(&w->lines[i].word, __ATOMIC_RELAXED);
    }
    if (moved) {
        return 0;
    }
    *clk_p = soft_clock_now();
    if ((int64_t)(*clk_p - __atomic_load_n(&w->due, __ATOMIC_RELAXED)) >= 0) {
        return 0;
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return __atomic_load_n(&w->seq, __ATOMIC_RELAXED) == seq;
}

/* Without the lock: what a poll must have done by the engine (SOFT_LOOK_*).
 * A packet in the response ring, an engine left busy, or one that waits
 * and whose ack line moved or timer is due needs a whole pass; an engine
 * that is idle or still only waits needs none, or only its request ring
 * served (soft_engine_ring_pass) when packets are there.  A packet or post
 * racing with the look is seen by the next poll, as if this one came a
 * moment earlier.  *clk_p (0 from the caller): the clock reading the look
 * took, if it took one (soft_engine_stamp_clk). */
static inline int soft_engine_look(soft_dev_t *dev, uint64_t *clk_p)
{
    int idle = __atomic_load_n(&dev->engine_idle, __ATOMIC_ACQUIRE);

    if (soft_ring_view_ready(&dev->resp_stall) || (idle == SOFT_ENGINE_BUSY) ||
        ((idle == SOFT_ENGINE_WAIT) && !soft_engine_wait_holds(dev, clk_p))) {
        return SOFT_LOOK_PASS;
    }
    return (soft_ring_view_ready(&dev->req_stall) ||
            soft_ring_idle_clear(&dev->hdr->req, &dev->req_stall)) ?
               SOFT_LOOK_RING :
               SOFT_LOOK_NONE;
}

/* Without the lock: 1 if no completion waits in cq */
static inline int soft_cq_empty(const soft_cq_t *cq)
{
    return __atomic_load_n(&cq->tail, __ATOMIC_ACQUIRE) ==
           __atomic_load_n(&cq->head, __ATOMIC_RELAXED);
}

#endif
