/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the way of an application that sleeps on a completion
 * channel (soft_channel.c has the channel and its CQs): arming a CQ, which
 * serves the packets already queued and tells senders and the helper that
 * the application sleeps, and taking a channel's events, which serves the
 * packet a sender's wake-up announced.  Both run the engine, so they sit
 * above it, and above the channel whose events the engine's completions
 * fire.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_channel.h"

#include <errno.h>

/* The application is about to sleep on a channel with requests of its
 * own outstanding: a helper parked behind its polls (soft_helper.c) must
 * watch them now, so it is rung; it naps while a CQ stays armed.  The fence pairs with the helper's, which
 * publishes PARKED before it looks at armed_cqs: one of the two sees the
 * other. */
static void soft_channel_unpark(soft_dev_t *dev)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (dev->helper_started &&
        (__atomic_load_n(&dev->hdr->sleeping, __ATOMIC_RELAXED) ==
         SOFT_HELPER_PARKED)) {
        soft_port_ring(dev->hdr);
        __atomic_fetch_add(&dev->futex_wakes, 1, __ATOMIC_RELAXED);
    }
}

int soft_cq_req_notify(dcx_cq_t *cq_)
{
    soft_cq_t *cq   = (soft_cq_t *)cq_;
    soft_dev_t *dev = cq->dev;
    int busy;

    if (cq->ch == NULL) {
        dcx_error("%s: cq %p arm: the CQ has no completion channel",
                  dev->super.caps.name, (void *)cq);
        return EINVAL;
    }
    soft_lock(&dev->lock);
    if (!cq->armed) {
        cq->armed = 1;
        __atomic_store_n(&dev->armed_cqs, dev->armed_cqs + 1, __ATOMIC_RELAXED);
    }
    /* senders wake us from now on (soft_wake.c), by a datagram if the
     * channel watches the wake socket, else through the helper; packets
     * already queued for us are served now: their completions fire the
     * CQ here, not after the caller went to sleep */
    if (cq->ch->wake) {
        soft_wake_arm(dev);
    }
    soft_engine_app_sleeps(dev);
    if (cq->armed && (cq->head != cq->tail)) { /* (the pass may fire) */
        soft_cq_fire(cq);
    }
    /* the helper is needed while we sleep for our own requests' timers
     * and acknowledgements; peers ring it for what else it serves */
    busy = (dev->engine_idle != SOFT_ENGINE_IDLE) || soft_engine_busy(dev);
    soft_unlock(&dev->lock);
    if (busy) {
        soft_channel_unpark(dev);
    }
    return 0;
}

/* Under the device lock: a CQ of the channel with an event, or NULL */
static soft_cq_t *soft_channel_event(soft_channel_t *ch)
{
    soft_cq_t *cq;

    for (cq = ch->cqs; cq != NULL; cq = cq->ch_next) {
        if (cq->events != 0) {
            return cq;
        }
    }
    return NULL;
}

/* Under the device lock: 1 if a CQ of the channel is armed */
static int soft_channel_armed(soft_channel_t *ch)
{
    soft_cq_t *cq;

    for (cq = ch->cqs; cq != NULL; cq = cq->ch_next) {
        if (cq->armed) {
            return 1;
        }
    }
    return 0;
}

int soft_channel_get_event(dcx_comp_channel_t *ch_, dcx_cq_t **cq_p)
{
    soft_channel_t *ch = soft_channel(ch_);
    soft_dev_t *dev    = ch->dev;
    soft_cq_t *cq;
    int ret = EAGAIN;

    soft_lock(&dev->lock);
    if (ch->wake) {
        soft_wake_taken(dev);
    }
    cq = soft_channel_event(ch);
    if ((cq == NULL) && soft_channel_armed(ch) &&
        soft_engine_rings_pending(dev)) {
        /* a sender's datagram woke us before its packet was served: the
         * packet is served here, and its completion fires the CQ */
        soft_engine_progress(dev, 0);
        dev->app_passes++;
        cq = soft_channel_event(ch);
    }
    if (cq != NULL) {
        cq->events--;
        *cq_p = &cq->super;
        ret   = 0;
    }
    soft_channel_drain(ch);
    soft_unlock(&dev->lock);
    return ret;
}
