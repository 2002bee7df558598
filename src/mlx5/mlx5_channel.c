/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: completion channels (wake-up events).
 *
 * A dcx channel is an ibv_comp_channel of the device's context, made
 * non-blocking, plus an eventfd of the backend's own; the fd handed to the
 * transport is an epoll set over both.  Arming a CQ is ibv_req_notify_cq:
 * a ConnectX armed while its CQ holds completions past the consumer index
 * raises the event at once, so "arm, then sleep" misses none of those.  The
 * backend also reports completions of its own making (the outstanding WRs
 * of a failed DCI, reported as flushed from its ring, mlx5_cq.c): a CQ
 * armed while such reports wait fires through the eventfd instead, at once.
 * Each event collected is acknowledged at once (ibv_ack_cq_events), so a
 * CQ's destruction never waits for one.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mlx5/mlx5_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

static inline dcx_mlx5_channel_t *dcx_mlx5_channel(dcx_comp_channel_t *ch)
{
    return (dcx_mlx5_channel_t *)ch;
}

/* The ibv_comp_channel, non-blocking; NULL (errno set, logged) if the
 * device has none */
static struct ibv_comp_channel *dcx_mlx5_ibv_channel(dcx_mlx5_dev_t *dev,
                                                     bool quiet)
{
    struct ibv_comp_channel *ch;
    int flags, err;

    ch = ibv_create_comp_channel(dev->ctx);
    if (ch == NULL) {
        err = errno ? errno : ENOMEM;
        if (!quiet) {
            dcx_error("%s: comp channel: ibv_create_comp_channel failed: %s",
                      dev->super.caps.name, strerror(err));
        }
        errno = err;
        return NULL;
    }
    flags = fcntl(ch->fd, F_GETFL);
    if ((flags < 0) || (fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK) != 0)) {
        err = errno;
        dcx_error("%s: comp channel: cannot make fd %d non-blocking: %s",
                  dev->super.caps.name, ch->fd, strerror(err));
        ibv_destroy_comp_channel(ch);
        errno = err;
        return NULL;
    }
    return ch;
}

bool dcx_mlx5_channel_probe(dcx_mlx5_dev_t *dev)
{
    struct ibv_comp_channel *ch = dcx_mlx5_ibv_channel(dev, true);

    if (ch == NULL) {
        dcx_debug("%s: no completion channels (%s): no wake-up events",
                  dev->super.caps.name, strerror(errno));
        return false;
    }
    ibv_destroy_comp_channel(ch);
    return true;
}

int dcx_mlx5_channel_create(dcx_dev_t *super, dcx_comp_channel_t **ch_p)
{
    dcx_mlx5_dev_t *dev = dcx_mlx5_dev(super);
    const char *name    = super->caps.name;
    struct epoll_event ev;
    dcx_mlx5_channel_t *ch;
    int ret;

    ch = calloc(1, sizeof(*ch));
    if (ch == NULL) {
        dcx_error("%s: comp channel: out of memory", name);
        return ENOMEM;
    }
    ch->ch = dcx_mlx5_ibv_channel(dev, false);
    if (ch->ch == NULL) {
        ret = errno;
        goto err_free;
    }
    ch->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ch->efd < 0) {
        ret = errno;
        dcx_error("%s: comp channel: eventfd: %s", name, strerror(ret));
        goto err_ibv;
    }
    ch->super.fd = epoll_create1(EPOLL_CLOEXEC);
    if (ch->super.fd < 0) {
        ret = errno;
        dcx_error("%s: comp channel: epoll_create1: %s", name, strerror(ret));
        goto err_efd;
    }
    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    if ((epoll_ctl(ch->super.fd, EPOLL_CTL_ADD, ch->ch->fd, &ev) != 0) ||
        (epoll_ctl(ch->super.fd, EPOLL_CTL_ADD, ch->efd, &ev) != 0)) {
        ret = errno;
        dcx_error("%s: comp channel: epoll_ctl: %s", name, strerror(ret));
        goto err_epoll;
    }
    ch->super.dev = super;
    *ch_p         = &ch->super;
    return 0;

err_epoll:
    close(ch->super.fd);
err_efd:
    close(ch->efd);
err_ibv:
    ibv_destroy_comp_channel(ch->ch);
err_free:
    free(ch);
    return ret;
}

int dcx_mlx5_channel_destroy(dcx_comp_channel_t *super)
{
    dcx_mlx5_channel_t *ch = dcx_mlx5_channel(super);
    int ret;

    if (ch->cqs != NULL) {
        dcx_error("%s: comp channel destroy: CQs are still attached",
                  super->dev->caps.name);
        return EBUSY;
    }
    ret = ibv_destroy_comp_channel(ch->ch);
    if (ret != 0) {
        dcx_error("%s: comp channel destroy: ibv_destroy_comp_channel "
                  "failed: %s",
                  super->dev->caps.name, strerror(ret));
        return ret;
    }
    close(super->fd);
    close(ch->efd);
    free(ch);
    return 0;
}

int dcx_mlx5_cq_create_ch(dcx_dev_t *super, uint32_t cqe,
                          dcx_comp_channel_t *ch_, dcx_cq_t **cq_p)
{
    dcx_mlx5_channel_t *ch = dcx_mlx5_channel(ch_);
    dcx_mlx5_cq_t *cq;
    int ret;

    ret = dcx_mlx5_cq_create_on(super, cqe, ch->ch, &cq);
    if (ret != 0) {
        return ret;
    }
    cq->channel = ch;
    cq->ch_next = ch->cqs;
    ch->cqs     = cq;
    *cq_p       = &cq->super;
    return 0;
}

/* The eventfd back to zero once no own event waits */
static void dcx_mlx5_channel_own_drain(dcx_mlx5_channel_t *ch)
{
    uint64_t count;

    if (ch->own == 0) {
        (void)!read(ch->efd, &count, sizeof(count));
    }
}

void dcx_mlx5_channel_detach(dcx_mlx5_cq_t *cq)
{
    dcx_mlx5_channel_t *ch = cq->channel;
    dcx_mlx5_cq_t **pp;

    for (pp = &ch->cqs; *pp != NULL; pp = &(*pp)->ch_next) {
        if (*pp == cq) {
            *pp = cq->ch_next;
            break;
        }
    }
    ch->own -= cq->own_events;
    cq->own_events = 0;
    dcx_mlx5_channel_own_drain(ch);
    cq->channel = NULL;
}

int dcx_mlx5_cq_req_notify(dcx_cq_t *super)
{
    dcx_mlx5_cq_t *cq      = (dcx_mlx5_cq_t *)super;
    dcx_mlx5_channel_t *ch = cq->channel;
    uint64_t one           = 1;
    int ret;

    if (ch == NULL) {
        dcx_error("%s: cq arm: the CQ has no completion channel",
                  super->dev->caps.name);
        return EINVAL;
    }
    if (cq->flush_head != NULL) {
        /* flush reports wait in the backend, not in the CQ: the event
         * fires now */
        cq->own_events++;
        if ((ch->own++ == 0) &&
            (write(ch->efd, &one, sizeof(one)) != sizeof(one))) {
            dcx_error("%s: cq arm: cannot signal the channel: %s",
                      super->dev->caps.name, strerror(errno));
            return EIO;
        }
        return 0;
    }
    if (cq->mode == DCX_MLX5_CQ_RAW) {
        /* libmlx5's arm would carry its own consumer index, not ours */
        dcx_mlx5_raw_cq_arm(cq);
        return 0;
    }
    ret = ibv_req_notify_cq(ibv_cq_ex_to_cq(cq->cq), 0);
    if (ret != 0) {
        dcx_error("%s: cq arm: ibv_req_notify_cq failed: %s",
                  super->dev->caps.name, strerror(ret));
    }
    return ret;
}

int dcx_mlx5_channel_get_event(dcx_comp_channel_t *super, dcx_cq_t **cq_p)
{
    dcx_mlx5_channel_t *ch = dcx_mlx5_channel(super);
    struct ibv_cq *ibcq;
    dcx_mlx5_cq_t *cq;
    void *cq_ctx;

    if (ch->own != 0) {
        for (cq = ch->cqs; cq != NULL; cq = cq->ch_next) {
            if (cq->own_events != 0) {
                cq->own_events--;
                ch->own--;
                dcx_mlx5_channel_own_drain(ch);
                *cq_p = &cq->super;
                return 0;
            }
        }
    }
    if (ibv_get_cq_event(ch->ch, &ibcq, &cq_ctx) != 0) {
        if (errno != EAGAIN) {
            dcx_error("%s: comp channel: ibv_get_cq_event failed: %s",
                      super->dev->caps.name, strerror(errno));
            return errno ? errno : EIO;
        }
        return EAGAIN;
    }
    ibv_ack_cq_events(ibcq, 1);
    dcx_mlx5_raw_cq_event((dcx_mlx5_cq_t *)cq_ctx);
    *cq_p = &((dcx_mlx5_cq_t *)cq_ctx)->super;
    return 0;
}
