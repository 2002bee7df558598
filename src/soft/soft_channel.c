/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device completion channels: the model of ibv_comp_channel.
 *
 * A channel is an eventfd.  A CQ created on a channel and armed generates
 * one event when a completion is pushed to it (by the engine, under the
 * device lock, in whichever thread runs it: the application's, or the helper
 * thread's while the application sleeps on the fd), or at once when it is
 * armed while it still holds unpolled completions, as an mlx5 CQ armed
 * behind its producer does.  Arming also serves the packets already queued
 * for the device (a NIC would have turned them into completions by then),
 * and marks the application idle for senders and the helper
 * (soft_engine_app_sleeps), so that the first packet sent to a sleeper
 * rings its helper.  Each CQ counts its events not yet collected;
 * the eventfd is non-zero exactly while some CQ of the channel has one.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

static inline soft_channel_t *soft_channel(dcx_comp_channel_t *ch)
{
    return (soft_channel_t *)ch;
}

/* Under the device lock */
void soft_cq_fire(soft_cq_t *cq)
{
    uint64_t one = 1;

    cq->armed = 0;
    __atomic_store_n(&cq->dev->armed_cqs, cq->dev->armed_cqs - 1,
                     __ATOMIC_RELAXED);
    cq->events++;
    /* the counter cannot overflow: it is reset whenever events run out */
    if (write(cq->ch->super.fd, &one, sizeof(one)) != sizeof(one)) {
        dcx_error("%s: cq %p: cannot signal its completion channel: %s",
                  cq->dev->super.caps.name, (void *)cq, strerror(errno));
    }
}

/* Under the device lock: the eventfd back to zero once no event waits */
static void soft_channel_drain(soft_channel_t *ch)
{
    soft_cq_t *cq;
    uint64_t count;

    for (cq = ch->cqs; cq != NULL; cq = cq->ch_next) {
        if (cq->events != 0) {
            return;
        }
    }
    /* EAGAIN: already zero */
    (void)!read(ch->super.fd, &count, sizeof(count));
}

int soft_channel_create(dcx_dev_t *dev_, dcx_comp_channel_t **ch_p)
{
    soft_dev_t *dev = soft_dev(dev_);
    soft_channel_t *ch;

    ch = calloc(1, sizeof(*ch));
    if (ch == NULL) {
        dcx_error("%s: comp channel create: out of memory",
                  dev->super.caps.name);
        return ENOMEM;
    }
    ch->super.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ch->super.fd < 0) {
        dcx_error("%s: comp channel create: eventfd: %s", dev->super.caps.name,
                  strerror(errno));
        free(ch);
        return (errno == EMFILE) || (errno == ENFILE) ? errno : ENOMEM;
    }
    ch->super.dev = dev_;
    ch->dev       = dev;
    soft_lock(&dev->lock);
    dev->num_objs++;
    soft_unlock(&dev->lock);
    *ch_p = &ch->super;
    return 0;
}

int soft_channel_destroy(dcx_comp_channel_t *ch_)
{
    soft_channel_t *ch = soft_channel(ch_);
    soft_dev_t *dev    = ch->dev;

    soft_lock(&dev->lock);
    if (ch->cqs != NULL) {
        soft_unlock(&dev->lock);
        dcx_error("%s: comp channel %p destroy: CQs are still attached",
                  dev->super.caps.name, (void *)ch);
        return EBUSY;
    }
    dev->num_objs--;
    soft_unlock(&dev->lock);
    close(ch->super.fd);
    free(ch);
    return 0;
}

int soft_cq_create_ch(dcx_dev_t *dev_, uint32_t cqe, dcx_comp_channel_t *ch_,
                      dcx_cq_t **cq_p)
{
    soft_channel_t *ch = soft_channel(ch_);
    soft_dev_t *dev    = soft_dev(dev_);
    soft_cq_t *cq;
    dcx_cq_t *super;
    int ret;

    ret = soft_cq_create(dev_, cqe, &super);
    if (ret != 0) {
        return ret;
    }
    cq = (soft_cq_t *)super;
    soft_lock(&dev->lock);
    cq->ch      = ch;
    cq->ch_next = ch->cqs;
    ch->cqs     = cq;
    soft_unlock(&dev->lock);
    *cq_p = super;
    return 0;
}

/* Under the device lock: cq goes away, with its uncollected events */
void soft_cq_detach_channel(soft_cq_t *cq)
{
    soft_cq_t **pp;

    for (pp = &cq->ch->cqs; *pp != NULL; pp = &(*pp)->ch_next) {
        if (*pp == cq) {
            *pp = cq->ch_next;
            break;
        }
    }
    if (cq->armed) {
        cq->armed = 0;
        __atomic_store_n(&cq->dev->armed_cqs, cq->dev->armed_cqs - 1,
                         __ATOMIC_RELAXED);
    }
    cq->events = 0;
    soft_channel_drain(cq->ch);
    cq->ch = NULL;
}

/* The application is about to sleep on a channel: a helper parked behind
 * its polls (soft_helper.c) must serve its CQs now, so it is rung; it naps
 * while a CQ stays armed.  The fence pairs with the helper's, which
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
    /* packets already queued for us are served now: their completions
     * fire the CQ here, not after the caller went to sleep */
    soft_engine_app_sleeps(dev);
    if (cq->armed && (cq->head != cq->tail)) { /* (the pass may fire) */
        soft_cq_fire(cq);
    }
    soft_unlock(&dev->lock);
    soft_channel_unpark(dev);
    return 0;
}

int soft_channel_get_event(dcx_comp_channel_t *ch_, dcx_cq_t **cq_p)
{
    soft_channel_t *ch = soft_channel(ch_);
    soft_dev_t *dev    = ch->dev;
    soft_cq_t *cq;
    int ret = EAGAIN;

    soft_lock(&dev->lock);
    for (cq = ch->cqs; cq != NULL; cq = cq->ch_next) {
        if (cq->events != 0) {
            cq->events--;
            *cq_p = &cq->super;
            ret   = 0;
            break;
        }
    }
    soft_channel_drain(ch);
    soft_unlock(&dev->lock);
    return ret;
}
