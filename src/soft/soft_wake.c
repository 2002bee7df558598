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
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"

#include <errno.h>
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
