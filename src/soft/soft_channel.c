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
 * (soft_engine_app_sleeps).  Each CQ counts its events not yet collected;
 * the eventfd is non-zero exactly while some CQ of the channel has one.
 *
 * The channel's fd, the one the application sleeps on, is an epoll set
 * over that eventfd and the device's wake socket (soft_wake.c), and over
 * any fd its user merged in (dcx_soft_channel_add_fd: an emulated channel's
 * own events, without an epoll set over this one, since the kernel bounds
 * how many wait sets nested over one fd may watch the same file): arming
 * also tells senders that the application sleeps, and the first packet
 * for a receive sent to it afterwards wakes it directly, with a datagram,
 * before any completion exists.  Its completion is then made by whoever
 * runs the engine first: the woken application's progress, or its
 * get_event, which serves queued packets when no CQ has an event yet.
 * Arming and get_event run the engine: they are in soft_arm.c, above it;
 * this file holds the channel, its CQs and the firing of their events,
 * below the engine.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_channel.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Under the device lock */
void soft_cq_fire(soft_cq_t *cq)
{
    uint64_t one = 1;

    cq->armed = 0;
    __atomic_store_n(&cq->dev->armed_cqs, cq->dev->armed_cqs - 1,
                     __ATOMIC_RELAXED);
    cq->events++;
    cq->ch->signaled = 1;
    /* the counter cannot overflow: it is reset whenever events run out */
    if (write(cq->ch->efd, &one, sizeof(one)) != sizeof(one)) {
        dcx_error("%s: cq %p: cannot signal its completion channel: %s",
                  cq->dev->super.caps.name, (void *)cq, strerror(errno));
    }
}

/* Under the device lock: the eventfd back to zero once no event waits */
void soft_channel_drain(soft_channel_t *ch)
{
    soft_cq_t *cq;
    uint64_t count;

    for (cq = ch->cqs; cq != NULL; cq = cq->ch_next) {
        if (cq->events != 0) {
            return;
        }
    }
    /* no syscall when nothing was written since the last read */
    if (ch->signaled) {
        ch->signaled = 0;
        (void)!read(ch->efd, &count, sizeof(count));
    }
}

/* An fd creation failed: its errno as the channel's error */
static int soft_channel_fd_error(soft_dev_t *dev, const char *what)
{
    int err = errno;

    dcx_error("%s: comp channel create: %s: %s", dev->super.caps.name, what,
              strerror(err));
    return (err == EMFILE) || (err == ENFILE) ? err : ENOMEM;
}

/* fd joins the wait set 'set', readable-only; 0, or -1 with errno set */
static int soft_channel_watch(int set, int fd)
{
    struct epoll_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    return epoll_ctl(set, EPOLL_CTL_ADD, fd, &ev);
}

/* The fd to sleep on: an epoll set over the eventfd and the device's wake
 * socket (if it has one); -1 (logged) on failure, *err_p set */
static int soft_channel_epoll(soft_dev_t *dev, int efd, int *err_p)
{
    int fd;

    fd = epoll_create1(EPOLL_CLOEXEC);
    if (fd < 0) {
        *err_p = soft_channel_fd_error(dev, "epoll_create1");
        return -1;
    }
    if ((soft_channel_watch(fd, efd) != 0) ||
        ((dev->wake_fd >= 0) && (soft_channel_watch(fd, dev->wake_fd) != 0))) {
        *err_p = soft_channel_fd_error(dev, "epoll_ctl");
        close(fd);
        return -1;
    }
    return fd;
}

int soft_channel_create(dcx_dev_t *dev_, dcx_comp_channel_t **ch_p)
{
    soft_dev_t *dev = soft_dev(dev_);
    soft_channel_t *ch;
    int err;

    ch = calloc(1, sizeof(*ch));
    if (ch == NULL) {
        dcx_error("%s: comp channel create: out of memory",
                  dev->super.caps.name);
        return ENOMEM;
    }
    ch->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ch->efd < 0) {
        err = soft_channel_fd_error(dev, "eventfd");
        free(ch);
        return err;
    }
    ch->super.fd = soft_channel_epoll(dev, ch->efd, &err);
    if (ch->super.fd < 0) {
        close(ch->efd);
        free(ch);
        return err;
    }
    ch->super.dev = dev_;
    ch->dev       = dev;
    ch->wake      = (dev->wake_fd >= 0);
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
    close(ch->efd);
    free(ch);
    return 0;
}

int dcx_soft_channel_add_fd(dcx_comp_channel_t *ch_, int fd)
{
    soft_channel_t *ch;

    if ((ch_ == NULL) || !dcx_dev_is_soft(ch_->dev)) {
        dcx_error("comp channel %p: add_fd %d: not a soft device's channel",
                  (void *)ch_, fd);
        return EINVAL;
    }
    ch = soft_channel(ch_);
    if (soft_channel_watch(ch->super.fd, fd) != 0) {
        int err = errno;

        dcx_error("%s: comp channel %p: cannot add fd %d: %s",
                  ch->dev->super.caps.name, (void *)ch, fd, strerror(err));
        return err;
    }
    return 0;
}

int dcx_soft_channel_no_wake(dcx_comp_channel_t *ch_)
{
    soft_channel_t *ch;
    soft_dev_t *dev;
    int err = 0;

    if ((ch_ == NULL) || !dcx_dev_is_soft(ch_->dev)) {
        dcx_error("comp channel %p: no_wake: not a soft device's channel",
                  (void *)ch_);
        return EINVAL;
    }
    ch  = soft_channel(ch_);
    dev = ch->dev;
    soft_lock(&dev->lock);
    if (ch->cqs != NULL) {
        err = EBUSY;
    } else if (ch->wake) {
        /* the socket stays open (the device's): only this set stops
         * watching it */
        if (epoll_ctl(ch->super.fd, EPOLL_CTL_DEL, dev->wake_fd, NULL) != 0) {
            err = errno;
        } else {
            ch->wake = 0;
        }
    }
    soft_unlock(&dev->lock);
    if (err == EBUSY) {
        dcx_error("%s: comp channel %p: no_wake: CQs use it already",
                  dev->super.caps.name, (void *)ch);
    } else if (err != 0) {
        dcx_error("%s: comp channel %p: no_wake: epoll_ctl: %s",
                  dev->super.caps.name, (void *)ch, strerror(err));
    }
    return err;
}

int dcx_soft_cq_move_channel(dcx_cq_t *cq_, dcx_comp_channel_t *ch_)
{
    soft_cq_t *cq      = (soft_cq_t *)cq_;
    soft_channel_t *ch = (ch_ != NULL) ? soft_channel(ch_) : NULL;
    soft_dev_t *dev    = cq->dev;

    if (!dcx_dev_is_soft(cq_->dev) || ((ch != NULL) && (ch->dev != dev))) {
        dcx_error("%s: cq %p: move to channel %p: not a CQ and channel of "
                  "one soft device",
                  dcx_dev_name(cq_->dev), (void *)cq_, (void *)ch_);
        return EINVAL;
    }
    soft_lock(&dev->lock);
    if (cq->ch != NULL) {
        soft_cq_detach_channel(cq);
    }
    if (ch != NULL) {
        cq->ch      = ch;
        cq->ch_next = ch->cqs;
        ch->cqs     = cq;
    }
    soft_unlock(&dev->lock);
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
    /* a sender's wake-up whose packets were all served goes too (one
     * still queued keeps it: it announces that packet) */
    if (cq->ch->wake && !soft_engine_rings_pending(cq->dev)) {
        soft_wake_taken(cq->dev);
    }
    cq->ch = NULL;
}
