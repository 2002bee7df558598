/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device wake socket: how a sender wakes, in one hop, an application
 * asleep on a completion channel.
 *
 * Through the receiver's helper thread a message to a process asleep in
 * ucp_worker_wait would take two hops: the sender rings the helper (a
 * futex), which serves the packet and writes the channel's eventfd, which
 * wakes the application.  Instead, each port has a datagram socket of its own in the abstract
 * namespace, named from what every peer reads in the port's header (owner
 * uid, pid, device number and the segment's random token), and every
 * completion channel's fd is an epoll set over the channel's eventfd and
 * that socket.  The handshake, on the header word app_wait (SOFT_WAKE_*,
 * soft_base.h):
 *  - arming a CQ (soft_cq_req_notify, under the device lock) drains the
 *    socket unless app_wait is ARMED already, stores ARMED, and then, after
 *    a seq_cst fence (soft_engine_app_sleeps), looks at the rings and serves
 *    what is queued;
 *  - a sender publishes its packet, issues a full barrier, and reads
 *    app_wait; if it is ARMED and the packet consumes a receive (so that
 *    the application has a completion to wake for; one-sided operations
 *    stay with the helper and do not wake it), the sender moves it to
 *    POKED with a compare-and-swap and sends one byte to the socket.  Of
 *    the two fences, one sees the other's store: either the arm's look
 *    finds the packet or the sender finds ARMED, so no packet is slept
 *    through.  The CAS lets one sender per arm send: at most one datagram,
 *    so at most one spurious wake-up, per arm.
 * The woken application serves the packet itself (its progress, or the
 * channel's get_event: soft_channel.c); its helper thread is not involved.
 * Nor is it for the acknowledgement of what a sleeper sent before its arm,
 * unless that makes a completion: a SEND or WRITE is acknowledged in the
 * sleeper's ack table (soft_req_table_ack), which rings nobody for an
 * unsignaled one; for a signaled one the responder kicks the port after
 * the store (SOFT_PKT_WKICK) as an ACK packet's publish would, which rings
 * its helper, whose pass makes the completion that fires the armed CQ.
 * Collecting the channel's events takes the wake-up (soft_wake_taken:
 * POKED to NONE, the datagram drained), and every drain, there or at the
 * arm, is followed by a look at the rings under the same lock.
 * A sender that finds POKED, or whose datagram cannot be sent (the owner
 * died or closed the socket), or whose packet is a one-sided operation,
 * rings the port's helper instead, parked or not (soft_wake_sleeper): an
 * arm no longer wakes a parked helper unless the device has work of its
 * own outstanding.  An application that polls again (its poll stamp,
 * soft_engine_stamp_write) or collects its events sets the word back to
 * NONE: awake, it is kicked as before (soft_port_kick_seen).  A port whose
 * socket cannot be bound never stores ARMED, so nobody pokes it.  The datagrams' contents are never read: a
 * stray one from another process costs the owner a wake-up, nothing more.
 *
 * The asymmetric kick.  The full fence a sender issues between its
 * publish and its read of app_wait and 'sleeping' is most of what a small
 * light post costs after its biased unlock (the 8-byte am_short rate
 * +12-15% without it).  While the owner polls, nobody sleeps and the
 * fence buys nothing, so the owner's helper clears the port's fence_hint
 * after a whole park of polling with no arm (soft_port_hint_clear, under
 * the device lock, which every arm holds), and a sender registered for
 * membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) (kick_asym) skips the fence
 * toward a port whose hint it reads 0 (soft_post_unlock_kick); a port
 * starts with it 0.  A sleeper that no timer wakes stores its state (the
 * helper's DEEP, an arm's ARMED) and then runs soft_port_sleep_fence
 * before its look at the rings: finding the hint 0, it sets it and issues
 * the membarrier, which runs a full barrier on every CPU running a
 * registered sender, so that a sender's publish still in its store
 * buffer is visible to the look that follows, or the sender's reads come
 * after and see the hint (and fence) and the sleeper's state; finding it
 * 1, every sender fences, and a plain fence pairs with theirs as before.
 * The call costs a sleeper 0.2-2.4 us on the test VM and interrupts each
 * CPU running a registered process, once per episode of sleep: the hint
 * stays set while the application arms now and then (a -E sleep
 * ping-pong arms every message), and goes only after a whole park
 * (SOFT_PARK_NS) of polling.  A port whose owner cannot issue the call
 * never clears its hint.  The helper's NAP keeps a plain fence: a packet
 * whose sender left its fence to us and whose publish was still in that
 * sender's store buffer at the helper's look is served at the end of the
 * nap (SOFT_NAP_NS) instead of at once, where a nap that set the hint
 * each time a sender's prod woke it cost every sender an interrupt.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Datagrams drained per arm at most: more, sent by a stranger, leave the
 * fd readable (a wake-up, not a loop) */
#define SOFT_WAKE_DRAIN_MAX 64

/* The abstract address of the wake socket of the port whose header is
 * hdr (a peer's: its fields are read once each, whatever they hold) */
static socklen_t soft_wake_addr(const soft_port_hdr_t *hdr,
                                struct sockaddr_un *sun)
{
    uint32_t uid   = __atomic_load_n(&hdr->uid, __ATOMIC_RELAXED);
    int32_t pid    = __atomic_load_n(&hdr->owner_pid, __ATOMIC_RELAXED);
    uint32_t inst  = __atomic_load_n(&hdr->inst, __ATOMIC_RELAXED);
    uint64_t token = __atomic_load_n(&hdr->token, __ATOMIC_RELAXED);
    int len;

    memset(sun, 0, sizeof(*sun));
    sun->sun_family = AF_UNIX;
    /* sun_path[0] == 0: the abstract namespace, no file */
    len             = snprintf(sun->sun_path + 1, sizeof(sun->sun_path) - 1,
                               "dcx-soft-wake.%u.%d.%u.%016llx", uid, pid, inst,
                               (unsigned long long)token);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
}

/* At the device's open, after its port: the wake socket, bound to the
 * port's name.  Without one the device works as before (the helper
 * serves a sleeper's messages); that is said once in the debug log. */
void soft_wake_open(soft_dev_t *dev)
{
    struct sockaddr_un sun;
    socklen_t len;
    int fd;

    dev->wake_fd = -1;
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        dcx_debug("%s: no wake socket: socket: %s", dev->super.caps.name,
                  strerror(errno));
        return;
    }
    len = soft_wake_addr(dev->hdr, &sun);
    if (bind(fd, (struct sockaddr *)&sun, len) != 0) {
        dcx_debug("%s: no wake socket: bind: %s", dev->super.caps.name,
                  strerror(errno));
        close(fd);
        return;
    }
    dev->wake_fd = fd;
}

void soft_wake_close(soft_dev_t *dev)
{
    if (dev->wake_fd >= 0) {
        /* peers' pokes fail from now on and go to the helper */
        __atomic_store_n(&dev->hdr->app_wait, SOFT_WAKE_NONE, __ATOMIC_RELAXED);
        close(dev->wake_fd);
        dev->wake_fd = -1;
    }
}

static void soft_wake_drain(soft_dev_t *dev)
{
    char byte[8];
    int i;

    for (i = 0; i < SOFT_WAKE_DRAIN_MAX; ++i) {
        if (recv(dev->wake_fd, byte, sizeof(byte), MSG_DONTWAIT) < 0) {
            break; /* EAGAIN: empty */
        }
    }
}

/* At the device's open, after its port: whether this process receives
 * sleepers' membarriers (registered) and whether ours can issue them
 * (the call works here) */
static int soft_wake_registered; /* soft_membarrier_registered */

void soft_wake_asym_init(soft_dev_t *dev)
{
    int query = soft_membarrier(MEMBARRIER_CMD_QUERY);
    int able =
        (query > 0) && (query & MEMBARRIER_CMD_GLOBAL_EXPEDITED) &&
        soft_membarrier_registered(&soft_wake_registered,
                                   MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) &&
        (soft_membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0);

    dev->kick_asym  = able;
    dev->sleep_asym = able;
    /* nobody sleeps yet: senders may leave their fence to us from the
     * start, where our sleepers can take it */
    __atomic_store_n(&dev->hdr->fence_hint, !able, __ATOMIC_RELAXED);
}

/* A sleeper's fence after the store of its state (module comment,
 * "asymmetric kick") */
void soft_port_sleep_fence(soft_dev_t *dev)
{
    soft_port_hdr_t *hdr = dev->hdr;

    if (__atomic_load_n(&hdr->fence_hint, __ATOMIC_RELAXED) == 0) {
        __atomic_store_n(&hdr->fence_hint, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&dev->sleep_fences, 1, __ATOMIC_RELAXED);
        if (soft_membarrier_fence(MEMBARRIER_CMD_GLOBAL_EXPEDITED,
                                  dev->super.caps.name) != 0) {
            /* (waited a millisecond instead) the hint stays set */
            dev->sleep_asym = 0;
        }
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* The helper after a whole park of an application that polled, 'arms'
 * the arm count when the park began: the hint cleared if nothing armed
 * meanwhile and nothing sleeps (device lock held by the caller) */
void soft_port_hint_clear(soft_dev_t *dev, uint32_t arms)
{
    if (dev->sleep_asym && (dev->arms == arms) && (dev->armed_cqs == 0) &&
        (__atomic_load_n(&dev->hdr->app_wait, __ATOMIC_RELAXED) ==
         SOFT_WAKE_NONE)) {
        __atomic_store_n(&dev->hdr->fence_hint, 0, __ATOMIC_RELAXED);
    }
}

/* A CQ is armed (device lock held): the application is about to sleep on
 * a channel.  The store is ordered before the look at the rings by the
 * fence of soft_engine_app_sleeps, which the caller runs next.  A datagram
 * left from the last episode is drained first; with ARMED still stored
 * (the second CQ of an interface, or no sender since the last arm) nothing
 * was sent since, so nothing is drained: a poke answering this arm is
 * never lost. */
void soft_wake_arm(soft_dev_t *dev)
{
    soft_port_hdr_t *hdr = dev->hdr;

    if (dev->wake_fd < 0) {
        return;
    }
    if (__atomic_load_n(&hdr->app_wait, __ATOMIC_RELAXED) != SOFT_WAKE_ARMED) {
        soft_wake_drain(dev);
        __atomic_store_n(&hdr->app_wait, SOFT_WAKE_ARMED, __ATOMIC_RELAXED);
    }
}

/* The application collects its channel's events (device lock held): a
 * wake-up a sender sent is taken with them.  Its datagram is drained and
 * senders kick the helper again until the next arm (the application is
 * awake).  The caller looks at the rings after this (soft_channel.c): the
 * packet of a datagram drained here was published before it was sent, so
 * it is seen and served, not lost with its datagram. */
void soft_wake_taken(soft_dev_t *dev)
{
    uint32_t poked = SOFT_WAKE_POKED;

    if ((dev->wake_fd >= 0) &&
        (__atomic_load_n(&dev->hdr->app_wait, __ATOMIC_RELAXED) ==
         SOFT_WAKE_POKED) &&
        __atomic_compare_exchange_n(&dev->hdr->app_wait, &poked, SOFT_WAKE_NONE,
                                    0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
        soft_wake_drain(dev);
    }
}

/* A sender found the port's application ARMED (soft_wake_sleeper): wakes it
 * unless another sender did.  1 if this call woke it (its helper need not
 * be kicked), 0 otherwise. */
int soft_wake_poke(soft_dev_t *dev, soft_port_hdr_t *hdr)
{
    uint32_t armed = SOFT_WAKE_ARMED;
    struct sockaddr_un sun;
    socklen_t len;
    char byte = 1;

    if ((dev->wake_fd < 0) ||
        !__atomic_compare_exchange_n(&hdr->app_wait, &armed, SOFT_WAKE_POKED, 0,
                                     __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
        return 0;
    }
    len = soft_wake_addr(hdr, &sun);
    if ((sendto(dev->wake_fd, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL,
                (struct sockaddr *)&sun, len) != 1) &&
        (errno != EAGAIN)) {
        /* ECONNREFUSED, ENOENT: the owner is gone or closed its socket
         * (EAGAIN: its queue is full, so its fd is readable already) */
        return 0;
    }
    __atomic_fetch_add(&dev->wake_pokes, 1, __ATOMIC_RELAXED);
    return 1;
}

/* A packet published to a port whose application may sleep
 * (soft_wake_sleeps; recv: the packet consumes a receive there): the
 * application woken if it is ARMED, or else its helper rung, parked or
 * not (a one-sided operation, a second message of one wake-up, a datagram
 * that could not go).  Returns the FUTEX_WAKE calls made. */
int soft_wake_sleeper(soft_dev_t *dev, soft_port_hdr_t *hdr, int recv)
{
    if (recv &&
        (__atomic_load_n(&hdr->app_wait, __ATOMIC_RELAXED) ==
         SOFT_WAKE_ARMED) &&
        soft_wake_poke(dev, hdr)) {
        return 0;
    }
    return soft_port_wake_once(hdr);
}

/* After a packet's publish to the port's request ring (recv: it consumes
 * a receive there): a sleeping application or its helper woken
 * (soft_wake_sleeper), or else its helper kicked as soft_port_kick does.
 * Returns the FUTEX_WAKE calls made. */
int soft_wake_kick(soft_dev_t *dev, soft_port_hdr_t *hdr, int recv)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (soft_wake_sleeps(dev, hdr)) {
        return soft_wake_sleeper(dev, hdr, recv);
    }
    return soft_port_kick_seen(hdr);
}
