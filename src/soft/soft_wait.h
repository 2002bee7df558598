/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the engine's wait set joined by a light post
 * (soft_req_post_inline), inline there: the light post's half of
 * soft_engine.c, whose passes and looks read the set (soft_engine_wait_t).
 */
#ifndef SOFT_WAIT_H_
#define SOFT_WAIT_H_

#include "soft_acked.h"

/* A timer due sooner than this after a pass keeps polls locked. */
#define SOFT_WAIT_MIN_NS 4000ull

/* Whether word, just read off qp's ack line for the wait set, already
 * acknowledges qp's oldest request: its answer came before the read (the
 * responder took a packet between its publish, or a pass's look at the
 * table, and the read), the line will not move for it again, and a wait
 * set holding word would let polls skip the pass that completes it until
 * the timer (an ack timeout, ~1 s by default).  The engine must not wait
 * then. */
static inline int soft_wait_word_acks(soft_qp_t *qp, uint64_t word)
{
    return ((uint32_t)(word >> 32) == qp->gen) &&
           soft_req_table_acks(soft_wqe(qp, qp->sq_comp), (uint32_t)word);
}

/* A post on the light path (soft_req_post_inline: every request of the
 * DCI is out, to 'peer', its ack timer to start at 'now', which the post
 * read from the counter reading 'clk'; 'started': the post started the
 * peer's watch) to an engine that was idle or only waiting: the engine
 * still only waits, now for this DCI too.  Its ack timer starts here (a
 * prod check due is left to a pass), and the DCI's ack line and timers
 * join the wait set, so that no pass is needed before its answer comes.
 * Returns 0 when that does not apply (the engine is then marked busy: the
 * next poll runs a pass, which arms the timer: SOFT_DEADLINE_ARM, or the
 * ack timer set here). */
static inline __attribute__((always_inline)) int
soft_engine_wait_add(soft_dev_t *dev, soft_qp_t *qp, const soft_peer_t *peer,
                     uint64_t now, uint64_t clk, int started)
{
    soft_engine_wait_t *w = &dev->wait;
    int idle              = dev->engine_idle;
    const uint64_t *line;
    uint64_t due, since, word = 0;
    uint32_t i, n, seq;

    if ((idle == SOFT_ENGINE_BUSY) || (qp->super.state != DCX_QPS_RTS)) {
        qp->deadline_ns = SOFT_DEADLINE_ARM;
        return 0;
    }
    due             = now + qp->ack_timeout_ns;
    qp->deadline_ns = due;
    /* every WQE outstanding goes to 'peer' (the light path's rule) */
    if (started) {
        /* the post started the watch (its DCI's earlier requests there
         * completed): the wait's length is the DCI's, set at its creation
         * (soft_qp_wait_clk) */
        if (qp->wait_clk == 0) {
            return 0;
        }
        clk += qp->wait_clk;
    } else if (((since = peer->watch_since) != 0) &&
               (since + SOFT_PROD_NS < due)) {
        /* a prod check due now is left to the next pass (a post does not
         * read the target's ring head) */
        due = since + SOFT_PROD_NS;
        if ((due <= now) || (due - now < SOFT_WAIT_MIN_NS)) {
            return 0;
        }
        clk = soft_clock_after_at(clk, (due - now) - (due - now) / 16);
    } else {
        /* no watch (our own port), or one whose prod check comes after the
         * ack timeout: the ack timeout's wait, set at the DCI's creation
         * (soft_qp_ack_clk) */
        if (qp->ack_clk == 0) {
            return 0;
        }
        clk += qp->ack_clk;
    }
    line = qp->ack_line;
    if (line != NULL) {
        word = __atomic_load_n(line, __ATOMIC_ACQUIRE);
        if (soft_wait_word_acks(qp, word)) {
            return 0; /* answered already: the next poll's pass takes it */
        }
    }
    seq = w->seq;
    if (idle == SOFT_ENGINE_IDLE) {
        /* the set was empty (a ping-pong's post: the pass that completed
         * the DCI's last send left the engine idle): it is this line */
        __atomic_store_n(&w->seq, seq + 1, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_RELEASE);
        n = 0;
        if (line != NULL) {
            __atomic_store_n(&w->lines[0].line, line, __ATOMIC_RELAXED);
            __atomic_store_n(&w->lines[0].word, word, __ATOMIC_RELAXED);
            n = 1;
        }
        __atomic_store_n(&w->n, n, __ATOMIC_RELAXED);
        __atomic_store_n(&w->due, clk, __ATOMIC_RELAXED);
        __atomic_store_n(&dev->engine_idle, SOFT_ENGINE_WAIT, __ATOMIC_RELAXED);
        __atomic_store_n(&w->seq, seq + 2, __ATOMIC_RELEASE);
        return 1;
    }
    n = w->n;
    for (i = 0; (line != NULL) && (i < n); ++i) {
        if (w->lines[i].line == line) {
            break;
        }
    }
    if ((line != NULL) && (i == n) && (n == SOFT_WAIT_LINES)) {
        return 0;
    }
    __atomic_store_n(&w->seq, seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    if ((line != NULL) && (i == n)) {
        __atomic_store_n(&w->lines[n].line, line, __ATOMIC_RELAXED);
        __atomic_store_n(&w->lines[n].word, word, __ATOMIC_RELAXED);
        n++;
    }
    __atomic_store_n(&w->n, n, __ATOMIC_RELAXED);
    if ((int64_t)(clk - w->due) < 0) {
        __atomic_store_n(&w->due, clk, __ATOMIC_RELAXED);
    }
    /* the engine waits already: engine_idle is not written (a BUSY an
     * unlocked look set meanwhile, soft_engine_tail_look, stays) */
    __atomic_store_n(&w->seq, seq + 2, __ATOMIC_RELEASE);
    return 1;
}

/* A DCI's wait in the wait set after a light post that starts its
 * peer's watch (soft_engine_wait_add): until its ack timeout or the
 * watch's prod check, the sooner, less a sixteenth, in soft_clock_now()
 * units; 0 when shorter than SOFT_WAIT_MIN_NS (no wait).  Set once, with
 * the ack timeout: the clock was calibrated at the device's open. */
static inline uint64_t soft_qp_wait_clk(const soft_qp_t *qp)
{
    uint64_t span = qp->ack_timeout_ns;

    if (span > SOFT_PROD_NS) {
        span = SOFT_PROD_NS;
    }
    if (span < SOFT_WAIT_MIN_NS) {
        return 0;
    }
    return soft_clock_after_at(0, span - span / 16);
}

/* The same for a DCI whose wait is its ack timeout alone (no watch runs
 * or its prod check comes later): the timeout less a sixteenth, in
 * soft_clock_now() units; 0 when shorter than SOFT_WAIT_MIN_NS. */
static inline uint64_t soft_qp_ack_clk(const soft_qp_t *qp)
{
    uint64_t span = qp->ack_timeout_ns;

    if (span < SOFT_WAIT_MIN_NS) {
        return 0;
    }
    return soft_clock_after_at(0, span - span / 16);
}

static inline void soft_engine_active_add(soft_dev_t *dev, soft_qp_t *qp)
{
    if (!qp->active) {
        qp->active       = 1;
        qp->next_active  = dev->active_dcis;
        dev->active_dcis = qp;
    }
}

/* A light post (soft_req_post_inline) with its ack timer to arm: the
 * wait set, or a pass */
static inline __attribute__((always_inline)) void
soft_engine_activate_light(soft_qp_t *qp, const soft_peer_t *peer, uint64_t now,
                           uint64_t clk, int started)
{
    soft_dev_t *dev = qp->dev;

    soft_engine_active_add(dev, qp);
    if (!soft_engine_wait_add(dev, qp, peer, now, clk, started)) {
        __atomic_store_n(&dev->engine_idle, SOFT_ENGINE_BUSY, __ATOMIC_RELAXED);
    }
}

#endif
