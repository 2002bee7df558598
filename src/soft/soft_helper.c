/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device helper thread: one per device.  It guarantees that inbound
 * requests (one-sided operations, receives) and the requester's retry timers
 * make progress while the application is busy elsewhere, without competing
 * with an application that polls:
 *  - while the application polled recently (< SOFT_APP_IDLE_NS) the helper
 *    is PARKED (hdr->sleeping, soft_base.h): it waits on the doorbell for
 *    SOFT_PARK_NS at a time and touches nothing, and senders neither ring
 *    nor read the poll stamp, so two applications polling each other see
 *    no helper activity and no futex call at all.  What wakes it: a prod
 *    (below), the application arming a CQ on a completion channel (it is
 *    about to sleep on the fd; the helper naps while a CQ is armed), or
 *    the end of the park, after which it looks at the application again;
 *  - once the application is idle it runs the engine (try-lock) on every nap,
 *    and pass after pass without napping while a pass served packets and
 *    more are queued (a burst is served at once, not 64 packets a nap);
 *  - with nothing outstanding and the application idle for longer than
 *    SOFT_DEEP_IDLE_NS it sleeps on the port doorbell with no timeout; peers
 *    then ring the doorbell (FUTEX_WAKE) after queueing a packet.  The
 *    'sleeping' flag and a seq_cst fence on both sides make the wake-up
 *    impossible to miss.
 *  - peers also ring the doorbell while the application is idle and the
 *    helper NAPs, so that the helper answers at once instead of at the
 *    end of its nap; an application that polls costs its peers no syscall.
 *    An application that arms a completion channel counts as idle at once
 *    (soft_engine_app_sleeps), and a message it receives wakes it without
 *    the helper: the sender sends a datagram to the port's wake socket,
 *    which the channel's fd reflects, and the application serves the
 *    message itself (soft_wake.c).  The helper still serves what does not
 *    wake the application (one-sided operations, later messages of the
 *    same wake-up, a sender whose datagram failed), when rung, not at the
 *    end of a nap (helper_timer_packets counts the packets that waited
 *    for one).
 *  - one ring per idle episode: the first sender to ring sets 'woken', and
 *    the senders after it make no syscall until the helper has run and
 *    cleared it (a helper that is slow to get a core is not rung once per
 *    packet meanwhile).  stats.futex_wakes counts the syscalls a device
 *    made.
 *  - an application that polled a moment ago and then went busy elsewhere
 *    is not "idle" yet for the rules above; a requester whose packets sit
 *    unserved in our ring for SOFT_PROD_NS while we did not poll either
 *    rings the doorbell itself (soft_req_prod), and a helper woken by the
 *    doorbell serves once the application has been away for SOFT_PROD_NS.
 *    One-sided operations thus complete within tens of microseconds of a
 *    target that stopped polling, instead of at the end of a nap.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_direct.h"

#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SOFT_NAP_NS 1000000ull /* 1 ms */


static int soft_helper_has_work(soft_dev_t *dev)
{
    int busy = 1;

    if (soft_trylock_helper(&dev->lock)) {
        busy = soft_engine_busy(dev);
        soft_unlock(&dev->lock);
    }
    return busy;
}

/* After a wait: a rung doorbell means a peer queued work for an application
 * that is not polling (or prodded us about unserved requests), so the next
 * pass serves it unless the application polled within SOFT_PROD_NS; a nap
 * that merely timed out keeps the SOFT_APP_IDLE_NS rule. */
static uint64_t soft_helper_woken(soft_port_hdr_t *hdr, uint32_t *seen)
{
    uint32_t bell;

    /* senders of the next episode ring again (before the doorbell is
     * read: a ring after this point moves it past 'seen') */
    __atomic_store_n(&hdr->woken, 0, __ATOMIC_SEQ_CST);
    bell = __atomic_load_n(&hdr->doorbell, __ATOMIC_ACQUIRE);

    if (bell == *seen) {
        return SOFT_APP_IDLE_NS;
    }
    *seen = bell;
    return SOFT_PROD_NS;
}

/* Publishes the helper's state for senders (soft_port_kick); a seq_cst
 * fence after it, so that a sender that queued a packet before the store
 * is seen by the look that follows, or sees the new state: a sleeper's
 * fence for DEEP (soft_port_sleep_fence: a sender that left its fence to
 * us is seen too; soft_wake.c says why a nap does not need it). */
static void soft_helper_state(soft_dev_t *dev, uint32_t state)
{
    soft_port_hdr_t *hdr = dev->hdr;

    if (__atomic_load_n(&hdr->sleeping, __ATOMIC_RELAXED) != state) {
        __atomic_store_n(&hdr->sleeping, state, __ATOMIC_RELAXED);
    }
    if (state == SOFT_HELPER_DEEP) {
        soft_port_sleep_fence(dev);
    } else {
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    }
}

/* A timed wait on the doorbell; counted. */
static uint64_t soft_helper_nap(soft_dev_t *dev, uint32_t *seen,
                                uint64_t timeout_ns)
{
    soft_futex_wait(&dev->hdr->doorbell, *seen, timeout_ns);
    __atomic_fetch_add(&dev->helper_naps, 1, __ATOMIC_RELAXED);
    return soft_helper_woken(dev->hdr, seen);
}

static void *soft_helper_main(void *arg)
{
    soft_dev_t *dev      = arg;
    soft_port_hdr_t *hdr = dev->hdr;
    uint64_t age, idle_ns = SOFT_APP_IDLE_NS;
    uint64_t served;
    uint32_t seen;
    int busy, burst, passed, parked;
    int timed          = 0; /* the last wait ended with no ring */
    /* the last wait was a whole park (no ring) that began at 'park_arms'
     * arms: the port's fence hint may go (soft_port_hint_clear) */
    int park_whole     = 0;
    uint32_t park_arms = 0;

    soft_direct_life_begin(dev); /* peers see us alive without a syscall */
    seen = __atomic_load_n(&hdr->doorbell, __ATOMIC_ACQUIRE);
    while (!__atomic_load_n(&dev->helper_stop, __ATOMIC_ACQUIRE)) {
        age    = soft_port_poll_age(hdr); /* since the application polled */
        busy   = 1;
        burst  = 0;
        passed = 0;
        if (age > idle_ns) {
            if (!soft_trylock_helper(&dev->lock)) {
                __atomic_fetch_add(&dev->lock.waits, 1, __ATOMIC_RELAXED);
            } else {
                __atomic_fetch_add(&dev->helper_passes, 1, __ATOMIC_RELAXED);
                served = dev->stats.rx_packets;
                soft_engine_progress(dev, 1);
                /* packets that waited for the end of a nap or a park: no
                 * ring announced them */
                if (timed) {
                    dev->helper_timer_packets += dev->stats.rx_packets - served;
                }
                passed = 1;
                /* a pass serves at most SOFT_PROGRESS_BUDGET packets per
                 * ring: with more queued, go on at once */
                burst  = (dev->stats.rx_packets != served) &&
                        soft_engine_rings_pending(dev);
                busy = soft_engine_busy(dev);
                soft_unlock(&dev->lock);
            }
        }
        timed = 0;
        if (burst) {
            continue;
        }
        if (age <= idle_ns) {
            /* the application polls: it serves everything itself.  Park
             * until rung (a prod, a completion channel armed) or for a
             * long while, then look again; no sender rings meanwhile. */
            soft_helper_state(dev, SOFT_HELPER_PARKED);
            if ((__atomic_load_n(&dev->armed_cqs, __ATOMIC_RELAXED) == 0) &&
                (soft_port_poll_age(hdr) <= idle_ns)) {
                if (park_whole && soft_trylock_helper(&dev->lock)) {
                    soft_port_hint_clear(dev, park_arms);
                    soft_unlock(&dev->lock);
                }
                park_arms  = __atomic_load_n(&dev->arms, __ATOMIC_RELAXED);
                idle_ns    = soft_helper_nap(dev, &seen, dev->helper_park_ns);
                timed      = (idle_ns == SOFT_APP_IDLE_NS);
                park_whole = timed;
                continue;
            }
            /* a CQ is armed: the application sleeps on its channel, the
             * helper naps (and sleeps deep once nothing is outstanding) */
        }
        park_whole = 0;
        if (busy || (age < SOFT_DEEP_IDLE_NS)) {
            parked = (__atomic_load_n(&hdr->sleeping, __ATOMIC_RELAXED) ==
                      SOFT_HELPER_PARKED);
            soft_helper_state(dev, SOFT_HELPER_NAP);
            /* out of a park into a nap (a completion channel armed): a
             * sender that queued a packet after our pass saw PARKED and did
             * not ring; its packet is seen here, after the fence, and
             * served without a nap */
            if (parked && passed && soft_engine_rings_pending(dev)) {
                continue;
            }
            idle_ns = soft_helper_nap(dev, &seen, dev->helper_nap_ns);
            timed   = (idle_ns == SOFT_APP_IDLE_NS);
            continue;
        }

        /* deep sleep, unless something arrived meanwhile */
        soft_helper_state(dev, SOFT_HELPER_DEEP);
        if (!__atomic_load_n(&dev->helper_stop, __ATOMIC_ACQUIRE) &&
            !soft_helper_has_work(dev)) {
            soft_futex_wait(&hdr->doorbell, seen, 0);
            __atomic_fetch_add(&dev->helper_wakeups, 1, __ATOMIC_RELAXED);
        }
        soft_helper_state(dev, SOFT_HELPER_NAP);
        idle_ns = soft_helper_woken(hdr, &seen);
    }
    soft_direct_life_end(dev);
    return NULL;
}

/* The nap and park lengths are the device's (0: SOFT_NAP_NS, SOFT_PARK_NS),
 * written only while the helper is stopped: tests that must tell the end of
 * one from a wake-up lengthen them. */
int soft_helper_start(soft_dev_t *dev)
{
    sigset_t all, old;
    int ret;

    if (dev->helper_nap_ns == 0) {
        dev->helper_nap_ns = SOFT_NAP_NS;
    }
    if (dev->helper_park_ns == 0) {
        dev->helper_park_ns = SOFT_PARK_NS;
    }
    /* a helper stopped earlier (soft_helper_stop) left the flag set */
    __atomic_store_n(&dev->helper_stop, 0, __ATOMIC_RELAXED);
    /* the helper never handles the application's signals */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    ret = pthread_create(&dev->helper, NULL, soft_helper_main, dev);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (ret != 0) {
        dcx_error("%s: cannot start the helper thread: %s",
                  dev->super.caps.name, strerror(ret));
        return ret;
    }
    dev->helper_started = 1;
    return 0;
}

void soft_helper_stop(soft_dev_t *dev)
{
    if (!dev->helper_started) {
        return;
    }
    __atomic_store_n(&dev->helper_stop, 1, __ATOMIC_RELEASE);
    __atomic_fetch_add(&dev->hdr->doorbell, 1, __ATOMIC_SEQ_CST);
    syscall(SYS_futex, &dev->hdr->doorbell, FUTEX_WAKE, 1, NULL, NULL, 0);
    pthread_join(dev->helper, NULL);
    dev->helper_started = 0;
}

void soft_helper_wake_if_sleeping(soft_dev_t *dev)
{
    if (soft_port_kick_sleeping(dev->hdr)) {
        __atomic_fetch_add(&dev->futex_wakes, 1, __ATOMIC_RELAXED);
    }
}
