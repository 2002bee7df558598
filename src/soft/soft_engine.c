/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device engine: the progress loop, and what lets a poll with nothing
 * to do skip it.
 *
 * An engine pass serves the response ring, then the request ring, then the
 * requester's timers and transmission of the DCIs with work outstanding
 * (the "active" list: a DCI joins it when a WQE is posted and leaves it
 * when a pass finds nothing outstanding), then device rendezvous.  A ring
 * found empty is not peeked.  At the end of a pass 'engine_idle' records
 * that nothing but new packets or new posts can give the engine work, or
 * what else its DCIs wait for.
 *
 * A poll (CQ poll, device progress) first looks without the lock: an empty
 * CQ, both rings empty (tail == head) and an idle engine mean there is
 * nothing to do; it stamps the port (the poll stamp peers and the helper
 * read) and returns.  No clock read, no lock, no shared write but the stamp.
 * An engine whose DCIs have all their requests out and only wait for
 * answers counts as idle too (SOFT_ENGINE_WAIT, soft_engine_publish) as
 * long as none of their ack lines moved and no timer is due: that look
 * reads the lines and the time-stamp counter, still without the lock.
 * Otherwise it takes the lock; the application's passes are counted, and a
 * CQ polled after a pass it did not see takes that pass's completions
 * without running another one, so the transport's progress (receive CQ,
 * then send CQ) costs one pass, not two.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_acked.h"
#include "soft_tm.h"
#include "soft_wait.h"

#include <unistd.h>

/* The earliest timer of the DCIs on the active list, in ns (UINT64_MAX:
 * none), or 0 if one of them has more than answers to wait for: requests
 * not all out (ring full, no credit, RNR wait, fence), a timer not started
 * yet, more DCIs than the wait set holds.  Fills the wait set's lines. */
static uint64_t soft_engine_wait_lines(soft_dev_t *dev, soft_wait_line_t *l,
                                       uint32_t *n_p)
{
    uint64_t due = UINT64_MAX;
    soft_peer_t *peer;
    soft_qp_t *qp;
    uint32_t n = 0;

    for (qp = dev->active_dcis; qp != NULL; qp = qp->next_active) {
        if ((qp->super.state != DCX_QPS_RTS) || (qp->sq_send != qp->sq_head) ||
            (qp->deadline_ns == SOFT_DEADLINE_ARM) || (n == SOFT_WAIT_LINES)) {
            return 0;
        }
        if ((qp->deadline_ns != 0) && (qp->deadline_ns < due)) {
            due = qp->deadline_ns;
        }
        /* soft_req_prod's look at the oldest WQE's target */
        peer = soft_wqe(qp, qp->sq_comp)->peer;
        if ((peer != NULL) && (peer->watch_since != 0) &&
            (peer->watch_since + SOFT_PROD_NS < due)) {
            due = peer->watch_since + SOFT_PROD_NS;
        }
        if (dev->acks != NULL) {
            l[n].line = &dev->acks[qp->super.qp_num - dev->qpn_base].word;
            l[n].word = __atomic_load_n(l[n].line, __ATOMIC_ACQUIRE);
            if (soft_wait_word_acks(qp, l[n].word)) {
                return 0; /* answered since this pass looked: a pass */
            }
            n++;
        }
    }
    *n_p = n;
    return due;
}

/* soft_engine_publish with DCIs active and no device rendezvous: the wait
 * set, if their answers are all the engine waits for. */
static __attribute__((noinline)) void soft_engine_publish_wait(soft_dev_t *dev,
                                                               uint64_t now)
{
    soft_engine_wait_t *w = &dev->wait;
    soft_wait_line_t lines[SOFT_WAIT_LINES];
    uint64_t due;
    uint32_t i, n = 0;

    due = soft_engine_wait_lines(dev, lines, &n);
    if ((due <= now) || (due - now < SOFT_WAIT_MIN_NS)) {
        __atomic_store_n(&dev->engine_idle, SOFT_ENGINE_BUSY, __ATOMIC_RELAXED);
        return;
    }
    __atomic_store_n(&w->seq, w->seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    for (i = 0; i < n; ++i) {
        __atomic_store_n(&w->lines[i].line, lines[i].line, __ATOMIC_RELAXED);
        __atomic_store_n(&w->lines[i].word, lines[i].word, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&w->n, n, __ATOMIC_RELAXED);
    /* no timer at all (UINT64_MAX): soft_clock_after() caps it at ~1 s */
    __atomic_store_n(&w->due, soft_clock_after((due - now) - (due - now) / 16),
                     __ATOMIC_RELAXED);
    __atomic_store_n(&dev->engine_idle, SOFT_ENGINE_WAIT, __ATOMIC_RELAXED);
    __atomic_store_n(&w->seq, w->seq + 1, __ATOMIC_RELEASE);
}

/* End of a pass (engine lock held): what a poll must find before it needs
 * the lock again (soft_engine_poll_idle).  A timer due within
 * SOFT_WAIT_MIN_NS is left to locked passes, so that the early rounding of
 * 'due' stays small against the time to it.  Inline: a pass that leaves
 * nothing outstanding (a ping-pong's common case) costs a store. */
static inline __attribute__((always_inline)) void
soft_engine_publish(soft_dev_t *dev, uint64_t now, int tm_pending)
{
    if (tm_pending) {
        __atomic_store_n(&dev->engine_idle, SOFT_ENGINE_BUSY, __ATOMIC_RELAXED);
    } else if (dev->active_dcis == NULL) {
        __atomic_store_n(&dev->engine_idle, SOFT_ENGINE_IDLE, __ATOMIC_RELAXED);
    } else {
        soft_engine_publish_wait(dev, now);
    }
}

/* Serves the request ring (engine lock held), up to SOFT_PROGRESS_BUDGET
 * packets.  'now' is the clock of a whole pass, or 0 for a ring pass,
 * which reads no clock: that stops at a packet delayed on the wire (fault
 * injection) or at a slot claimed but not published yet and returns 0 (a
 * whole pass is needed: it compares the delay, and skips the slot of a
 * dead claimer); 1 otherwise.  Only the head slots are read, not the
 * producers' tail (soft_ring_unstick reads it rarely).  A packet the
 * owner's rx hold keeps (dcx_soft_dev_set_rx_hold) stays at the head for
 * a later pass. */
static inline __attribute__((always_inline)) int
soft_engine_serve_req(soft_dev_t *dev, uint64_t now, int from_helper)
{
    soft_port_hdr_t *hdr    = dev->hdr;
    dcx_soft_rx_hold_t hold = dev->rx_hold;
    int done                = 1;
    unsigned served         = 0;
    soft_pkt_t *pkt;
    void *payload;
    uint64_t seq;
    unsigned n;

    for (n = 0; n < SOFT_PROGRESS_BUDGET; ++n) {
        pkt = soft_ring_peek_view(&dev->req_stall, &payload, &seq);
        if (pkt == NULL) {
            if (now == 0) {
                done = !soft_ring_seq_marked(&dev->req_stall, seq);
            } else if (soft_ring_unstick_due(&dev->req_stall, now, seq) &&
                       soft_ring_unstick(hdr, &hdr->req, &dev->req_stall, now,
                                         dev->super.caps.name,
                                         soft_peers_any_dead, dev)) {
                continue;
            }
            break;
        }
        /* (a light packet's deliver_ns may be a one-line payload) */
        if ((pkt->deliver_ns != 0) && !(pkt->flags & SOFT_PKT_LIGHT) &&
            ((now == 0) || (pkt->deliver_ns > now))) {
            done = (now != 0); /* delayed link: head of line waits */
            break;
        }
        if ((hold != NULL) && hold(dev->rx_hold_arg)) {
            break; /* the owner's rung work first: a later pass serves it */
        }
        /* the packet count is added once, after the loop */
        served++;
        dev->stats.rx_bytes += pkt->len;
        soft_resp_packet(dev, pkt, payload);
        /* the pop writes no line of the slot (only our head): the held
         * acknowledgement goes out after the loop, and the slot is cleared
         * later (soft_ring_clear), unless many wait for that */
        if (soft_ring_pop_view(hdr, &hdr->req, &dev->req_stall) >=
            SOFT_RING_CLEAR_LAG) {
            soft_req_clear(dev);
        }
    }
    dev->stats.rx_packets += served;
    if (from_helper) {
        dev->stats.helper_packets += served;
    }
    if (dev->ack_line != NULL) {
        soft_resp_ack_flush(dev);
    }
    /* a pass that found nothing clears what earlier ones consumed (one
     * that served packets leaves that to later: soft_ring.h, "Ring slots") */
    if ((n == 0) && done && soft_ring_unfreed(&hdr->req)) {
        soft_req_clear(dev);
    }
    return done;
}

/* A whole pass (engine lock held); inline in the application's pass
 * (soft_engine_progress_app) and in the helper's (soft_engine_progress).
 * *clk_p: the soft_clock_now() reading the pass's clock came from (the
 * application's pass stamps the port with it: one counter read per pass) */
static inline __attribute__((always_inline)) uint64_t
soft_engine_pass(soft_dev_t *dev, int from_helper, uint64_t *clk_p)
{
    soft_port_hdr_t *hdr = dev->hdr;
    /* the counter-based clock of a post (soft_dev_now_clk): a whole pass
     * of a ping-pong reads no vDSO clock either */
    uint64_t now         = soft_dev_now_clk(dev, clk_p);
    soft_pkt_t *pkt;
    void *payload;
    uint64_t seq;
    int tm_pending;
    unsigned n;

    dev->now = now;
    /* a long pass (large READ bursts) must not look like an absent
     * application to requesters deciding whether to prod */
    __atomic_store_n(&hdr->in_engine, 1, __ATOMIC_RELAXED);
    if (!dev->killed) {
        for (n = 0; n < SOFT_PROGRESS_BUDGET; ++n) {
            pkt = soft_ring_peek_view(&dev->resp_stall, &payload, &seq);
            if (pkt == NULL) {
                if (soft_ring_unstick_due(&dev->resp_stall, now, seq) &&
                    soft_ring_unstick(hdr, &hdr->resp, &dev->resp_stall, now,
                                      dev->super.caps.name, soft_peers_any_dead,
                                      dev)) {
                    continue;
                }
                break;
            }
            dev->stats.rx_packets++;
            dev->stats.rx_bytes += pkt->len;
            if (from_helper) {
                dev->stats.helper_packets++;
            }
            soft_comp_packet(dev, pkt, payload);
            soft_ring_pop(hdr, &hdr->resp);
            soft_ring_view(hdr, &hdr->resp, &dev->resp_stall);
            /* freed at once: the slot's credit is back, and a request
             * sent with it may be answered before this pass ends (the
             * light path's acknowledgements do not come this way) */
            soft_ring_clear(hdr, &hdr->resp, hdr->resp.head);
        }
        /* 'killed' is set under the engine lock only */
        soft_engine_serve_req(dev, now, from_helper);
    }
    /* a ping-pong's send completes inline; the requester's walk takes
     * anything else */
    if (!soft_req_timers_quick(dev, now)) {
        soft_req_timers(dev, now);
    }
    /* request slots consumed by this pass or by ring passes before it
     * (inline: the slot of a ping-pong's every message is cleared here) */
    if (hdr->req.freed != hdr->req.head) {
        soft_ring_clear_inline(hdr, &hdr->req, soft_req_clear_end(dev));
    }
    /* device rendezvous (TM SRQs only) */
    tm_pending = (dev->tms != NULL) && soft_tm_progress(dev);
    soft_engine_publish(dev, now, tm_pending);
    __atomic_store_n(&hdr->in_engine, 0, __ATOMIC_RELEASE);
    return now;
}

uint64_t soft_engine_progress(soft_dev_t *dev, int from_helper)
{
    uint64_t clk;

    return soft_engine_pass(dev, from_helper, &clk);
}

/* The application arms a CQ (engine lock held): it is about to sleep on
 * the CQ's completion channel.  Its poll stamp is set back past
 * SOFT_DEEP_IDLE_NS, so that it counts as idle at once: senders ring the
 * helper for the first packet they queue (soft_port_kick_due), the helper
 * serves it as soon as it is rung, and it sleeps without a timeout once
 * nothing is outstanding.  The polls that drain the CQ after the arm
 * (verbs' arm, drain, then sleep) leave the announcement standing: the
 * first SOFT_ARM_DRAIN_POLLS stamps after it are not written
 * (soft_engine_stamp_write); a program that goes on polling past them is
 * awake after all, and its next stamp says so.  A sender that read the
 * stamp before this store did not ring: the fence orders the store before
 * the look at the rings that follows, so either that sender saw the
 * old-looking stamp or this look sees its packet, which a pass serves now
 * (its completion is then found by the arm, soft_cq_req_notify).  The same
 * fence orders the arm's store of the port's app_wait (soft_wake_arm, just
 * before) before that look: a sender that did not find it ARMED published
 * before the look. */
void soft_engine_app_sleeps(soft_dev_t *dev)
{
    uint64_t back = soft_clock_idle_gran *
                    (SOFT_DEEP_IDLE_NS / SOFT_APP_IDLE_NS + 1);
    uint64_t now = soft_clock_now();

    dev->stamp       = now;
    dev->drain_polls = SOFT_ARM_DRAIN_POLLS;
    __atomic_store_n(&dev->hdr->last_poll, now - back, __ATOMIC_RELAXED);
    __atomic_store_n(&dev->arms, dev->arms + 1, __ATOMIC_RELAXED);
    soft_port_sleep_fence(dev); /* the arm's store before the look */
    if (soft_engine_rings_pending(dev)) {
        soft_engine_progress(dev, 0);
        dev->app_passes++;
    }
}

/* Work the helper must keep an eye on. */
int soft_engine_busy(soft_dev_t *dev)
{
    soft_qp_t *qp;

    /* claimed slots count too: a dead claimer must be skipped in time */
    if (soft_engine_rings_pending(dev)) {
        return 1;
    }
    /* every DCI with work outstanding is on the active list */
    for (qp = dev->active_dcis; qp != NULL; qp = qp->next_active) {
        if (qp->sq_comp != qp->sq_head) {
            return 1;
        }
    }
    return 0;
}

/* An engine pass of the application (engine lock held).  Inline in both
 * of its callers (a locked poll, soft_engine_poll_pass, and the device's
 * progress): no call, and no register saved twice, between a poll and its
 * pass. */
static inline __attribute__((always_inline)) void
soft_engine_progress_app(soft_dev_t *dev)
{
    uint64_t clk;

    soft_engine_pass(dev, 0, &clk);
    dev->app_passes++;
    soft_engine_stamp_at(dev, clk);
}

/* The request ring served, as by a whole pass but nothing else: 1 if that
 * was all, 0 if a whole pass is needed (a packet needs the clock, or a
 * rendezvous request started a device rendezvous) */
static inline __attribute__((always_inline)) int
soft_engine_serve_ring(soft_dev_t *dev)
{
    int ret;

    dev->stats.ring_passes++;
    /* as in a whole pass: requesters deciding whether to prod us */
    __atomic_store_n(&dev->hdr->in_engine, 1, __ATOMIC_RELAXED);
    ret = soft_engine_serve_req(dev, 0, 0);
    __atomic_store_n(&dev->hdr->in_engine, 0, __ATOMIC_RELEASE);
    return ret && (dev->tm_rndv_live == 0);
}

/* The engine only waits (SOFT_ENGINE_WAIT), its response ring is empty, and
 * the requests of its one active DCI all completed from the ack table
 * (soft_req_timers_quick, without the clock: a part left waits for the next
 * pass to arm its timer): nothing is left for a whole pass but the request
 * ring.  The test of both passes below that end as an acknowledgement. */
static inline __attribute__((always_inline)) int
soft_engine_acks_took_all(soft_dev_t *dev)
{
    return (__atomic_load_n(&dev->engine_idle, __ATOMIC_RELAXED) ==
            SOFT_ENGINE_WAIT) &&
           !soft_ring_view_ready(&dev->resp_stall) &&
           soft_req_timers_quick(dev, 0);
}

/* A ring pass (engine lock held): the request ring served and nothing
 * else, for a poll whose look (soft_engine_look) found packets there and
 * an engine otherwise idle or only waiting.  No clock read, no timer walk,
 * nothing published: a responder does not touch the DCIs; an answer it
 * gives to a DCI of ours moves that DCI's ack line or fills our response
 * ring, which the next look sees.  Except in one case, which that look
 * would send to an acknowledgement pass (soft_engine_acked_pass) finding
 * the request ring empty: the engine waits, its response ring is empty,
 * and the ring pass acknowledged in our own table every request of our
 * one active DCI (requester and responder on one device, as two UCP
 * workers of one context are: the poll after a send serves it).  The ring
 * pass then ends as that acknowledgement pass: the requests complete from
 * the table, the engine is idle, the consumed slots are cleared, and the
 * poll of the CQ the message went to has only that CQ to drain.  Anything
 * less (a part acknowledged, its CQ armed or full) leaves the engine
 * waiting on a moved line: the next look asks for a whole pass, which
 * takes the rest and arms its timer.  Returns 0 when a whole pass is
 * needed instead: the engine became busy since the look, device
 * rendezvous of TM SRQs are under way (before the pass or started by it),
 * or a packet needs the clock (soft_engine_serve_req). */
static int soft_engine_ring_pass(soft_dev_t *dev)
{
    if ((__atomic_load_n(&dev->engine_idle, __ATOMIC_RELAXED) ==
         SOFT_ENGINE_BUSY) ||
        (dev->tm_rndv_live != 0)) {
        return 0;
    }
    if (dev->killed) {
        return 1;
    }
    if (!soft_engine_serve_ring(dev)) {
        return 0;
    }
    if (soft_engine_acks_took_all(dev)) {
        __atomic_store_n(&dev->engine_idle, SOFT_ENGINE_IDLE, __ATOMIC_RELAXED);
        soft_req_clear(dev);
    }
    return 1;
}

/* An acknowledgement pass (engine lock held): for a poll that needs a
 * whole pass (its look found an ack line moved or a timer due) while the
 * engine only waited (SOFT_ENGINE_WAIT) and its response ring is empty,
 * which is the ping-pong's case: the ack line of its one DCI moved.  The
 * DCI's requests complete from the ack table, and if that took them all
 * (soft_engine_acks_took_all), nothing is left for the engine but its
 * request ring, served as by a ring pass: no clock read, no timer walk,
 * the engine idle after it.  Returns 0 when a whole pass is needed
 * instead (the engine was busy, a timer or something else than its
 * answers woke it, device rendezvous are under way, or the ring pass
 * needs one: soft_engine_serve_req). */
static inline __attribute__((always_inline)) int
soft_engine_acked_pass(soft_dev_t *dev)
{
    int done;

    if ((dev->tm_rndv_live != 0) || dev->killed ||
        !soft_engine_acks_took_all(dev)) {
        return 0;
    }
    done = soft_engine_serve_ring(dev);
    /* no DCI is active any more (soft_req_timers_quick took them all) */
    __atomic_store_n(&dev->engine_idle,
                     done ? SOFT_ENGINE_IDLE : SOFT_ENGINE_BUSY,
                     __ATOMIC_RELAXED);
    return done;
}

/* What a locked poll needs short of a whole pass, as its look
 * (soft_engine_look) found: 1 if that was all (nothing found, or only
 * packets in the request ring, which a ring pass served); 0 if a whole
 * pass is needed (the caller may try an acknowledgement pass first). */
static int soft_engine_looked_pass(soft_dev_t *dev, int look)
{
    return (look == SOFT_LOOK_NONE) ||
           ((look == SOFT_LOOK_RING) && soft_engine_ring_pass(dev));
}

/* A poll under the engine lock, of cq and (unless NULL) other: the pass
 * its look asked for (SOFT_LOOK_RING or SOFT_LOOK_PASS: a look that found
 * nothing needs none, soft_cq_poll_locked), then the stamp.  A whole pass
 * is not run again for a CQ polled after one it did not see: its
 * completions are queued already, so the transport's progress costs one
 * pass, not two.  Otherwise an acknowledgement pass, when it takes all,
 * stands for it. */
void soft_engine_poll_pass(soft_dev_t *dev, soft_cq_t *cq, soft_cq_t *other,
                           int look, uint64_t clk)
{
    if (((look == SOFT_LOOK_RING) && soft_engine_ring_pass(dev)) ||
        (cq->passes_seen != dev->app_passes) || soft_engine_acked_pass(dev)) {
        soft_engine_stamp_clk(dev, clk);
    } else {
        soft_engine_progress_app(dev);
    }
    soft_cq_pair_seen(dev, cq, other);
}

void soft_dev_progress(dcx_dev_t *dev_)
{
    soft_dev_t *dev = soft_dev(dev_);
    uint64_t clk    = 0;
    int look;

    if (soft_engine_poll_idle(dev)) {
        soft_engine_stamp(dev);
        return;
    }
    look = soft_engine_look(dev, &clk);
    if (look == SOFT_LOOK_NONE) {
        soft_engine_stamp_clk(dev, clk);
        return;
    }
    soft_lock(&dev->lock);
    dev->stats.locked_polls++;
    /* no acknowledgement pass here (the CQ polls have it): one more copy
     * of the ring's service inline made the compiler keep a piece of it
     * (soft_resp_ack_flush) out of line for every pass */
    if (soft_engine_looked_pass(dev, look)) {
        soft_engine_stamp_clk(dev, clk);
    } else {
        soft_engine_progress_app(dev);
    }
    soft_unlock(&dev->lock);
}
