/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device polls: the out-of-line parts of what a poll does without the
 * engine lock (soft_poll.h): the poll stamp's write, the look at the
 * rings' tails and the count of polls that found consumed slots waiting
 * for their clear.  They read and write the device's and its port's
 * fields only, below the engine and the CQs whose polls call them.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft_engine.h"
#include "soft_poll.h"

/* The poll stamp is due (soft_engine_stamp): written, and once in
 * SOFT_TAIL_STAMPS, the rings' tails looked at (soft_engine_tail_look);
 * not written for the polls that drain the CQs after an arm. */
__attribute__((noinline)) void soft_engine_stamp_write(soft_dev_t *dev,
                                                       uint64_t now)
{
    dev->stamp = now;
    if (dev->drain_polls != 0) {
        /* draining after an arm: still asleep to the peers */
        dev->drain_polls--;
        return;
    }
    __atomic_store_n(&dev->hdr->last_poll, now, __ATOMIC_RELAXED);
    if (__atomic_load_n(&dev->hdr->app_wait, __ATOMIC_RELAXED) !=
        SOFT_WAKE_NONE) {
        /* the application polls: awake, until its next arm (soft_wake.c) */
        __atomic_store_n(&dev->hdr->app_wait, SOFT_WAKE_NONE, __ATOMIC_RELAXED);
    }
    if ((++dev->tail_stamps % SOFT_TAIL_STAMPS) == 0) {
        soft_engine_tail_look(dev);
    }
}

/* Without the lock, once in SOFT_TAIL_STAMPS poll stamps (soft_engine_stamp):
 * 1 if a ring has a slot claimed and not published at its head, which the
 * head slot does not show when the claimer died before marking it; the
 * engine is then marked busy, so that the poll runs a whole pass, which
 * skips the slot of a dead claimer (soft_ring_unstick). */
int soft_engine_tail_look(soft_dev_t *dev)
{
    if (!soft_engine_rings_pending(dev)) {
        return 0;
    }
    __atomic_store_n(&dev->engine_idle, SOFT_ENGINE_BUSY, __ATOMIC_RELAXED);
    return 1;
}

/* Packets queued in either ring (claimed slots count too). */
int soft_engine_rings_pending(soft_dev_t *dev)
{
    soft_port_hdr_t *hdr = dev->hdr;

    return !dev->killed &&
           ((__atomic_load_n(&hdr->req.tail, __ATOMIC_ACQUIRE) !=
             hdr->req.head) ||
            (__atomic_load_n(&hdr->resp.tail, __ATOMIC_ACQUIRE) !=
             hdr->resp.head));
}

/* Without the lock (soft_ring_idle_clear): one more poll found consumed
 * slots waiting for their clear; 1 once SOFT_CLEAR_POLLS did. */
__attribute__((noinline)) int soft_ring_idle_count(soft_stall_t *st)
{
    uint32_t n = __atomic_load_n(&st->idle_polls, __ATOMIC_RELAXED) + 1;

    __atomic_store_n(&st->idle_polls, n, __ATOMIC_RELAXED);
    return n >= SOFT_CLEAR_POLLS;
}
