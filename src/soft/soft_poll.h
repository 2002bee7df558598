/*
 * Soft device polls (soft_engine.c, soft_dev.c): the poll stamp and what a
 * poll looks at without the engine lock before it knows whether it needs
 * the lock.  Included by soft.h, after the device's types and the engine's
 * prototypes.
 */
#ifndef DCX_SOFT_POLL_H_
#define DCX_SOFT_POLL_H_

/* The poll stamp, written only once the last one written is
 * SOFT_STAMP_NS old (compared with a private copy: no shared line is read
 * or written by a poll in between). */
/* Once in this many stamps, the rings' tails are looked at: a slot claimed
 * by a producer that died before it marked its claim shows only there (a
 * poll looks at the head slots); the next poll then runs a whole pass,
 * which skips it (soft_ring_unstick). */
#define SOFT_TAIL_STAMPS  16u

/* soft_engine.c */
void soft_engine_stamp_write(soft_dev_t *dev, uint64_t now);
int  soft_engine_tail_look(soft_dev_t *dev);

static inline void soft_engine_stamp(soft_dev_t *dev)
{
    uint64_t now = soft_clock_now();

    if ((now - dev->stamp) >= soft_clock_stamp_gran) {
        soft_engine_stamp_write(dev, now);
    }
}

/* What a poll finds for the engine without the lock (soft_engine_look) */
enum {
    SOFT_LOOK_NONE = 0,   /* nothing for the engine: no pass */
    SOFT_LOOK_RING = 1,   /* packets in the request ring only: ring pass */
    SOFT_LOOK_PASS = 2    /* a whole engine pass */
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
 * otherwise keeps it out of line since the rings' views were added) */
static inline __attribute__((always_inline))
int soft_engine_poll_idle(soft_dev_t *dev)
{
    return (__atomic_load_n(&dev->engine_idle, __ATOMIC_ACQUIRE) ==
            SOFT_ENGINE_IDLE) &&
           !soft_ring_view_ready(&dev->resp_stall) &&
           !soft_ring_view_ready(&dev->req_stall) &&
           !soft_ring_idle_clear(&dev->hdr->req, &dev->req_stall);
}

/* Without the lock: 1 if an engine that only waits (SOFT_ENGINE_WAIT)
 * still does: no watched ack line moved, no timer due, and the set did not
 * change meanwhile; 0 otherwise (the caller then takes the lock). */
static inline int soft_engine_wait_holds(soft_dev_t *dev)
{
    const soft_engine_wait_t *w = &dev->wait;
    uint32_t seq = __atomic_load_n(&w->seq, __ATOMIC_ACQUIRE);
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
    if (moved || ((int64_t)(soft_clock_now() -
                            __atomic_load_n(&w->due, __ATOMIC_RELAXED)) >= 0)) {
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
 * moment earlier. */
static inline int soft_engine_look(soft_dev_t *dev)
{
    int idle             = __atomic_load_n(&dev->engine_idle,
                                           __ATOMIC_ACQUIRE);

    if (soft_ring_view_ready(&dev->resp_stall) || (idle == SOFT_ENGINE_BUSY) ||
        ((idle == SOFT_ENGINE_WAIT) && !soft_engine_wait_holds(dev))) {
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
