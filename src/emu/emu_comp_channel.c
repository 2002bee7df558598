/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: completion channels and CQ events.
 *
 * An ibv_comp_channel is a completion channel of the soft device behind
 * the context (dcx_comp_channel_*), plus an eventfd of the emulation's own
 * merged into it (dcx_soft_channel_add_fd).  The fd the application sees
 * is the soft channel's: readable while an event waits to be collected.
 * Not an epoll set of ours over it: the soft fd is itself a wait set, and
 * the kernel bounds through how many nested wait sets one file may be
 * watched (epoll_ctl fails with EINVAL past it: 100 paths three sets
 * deep), which an application wrapping each channel in a set of its own,
 * as dcx's mlx5 backend does, reached at about 100 channels of a device.
 * The soft channel does not watch the device's wake socket
 * (dcx_soft_channel_no_wake): the raw queues' engine sleeps on a channel
 * of its own that does, and serves what a sender's datagram announces;
 * an application's fd that watched the socket too would wake for every
 * such message, and spin until the engine had taken the datagram.  A
 * sleeper on a CQ of the verbs path is woken by the soft device's helper,
 * whose completions fire the CQ.
 * The soft CQ fires on its own when it is armed and a completion is
 * pushed to it, or at once when it is armed over completions it still
 * holds.  The emulated CQ may also hold completions
 * the soft CQ no longer has: those buffered by the last poll and not yet
 * handed out.  A ConnectX armed while its CQ holds completions past the
 * consumer index fires at once; so does the emulation, through its own
 * eventfd, instead of arming the soft CQ (so one arm makes one event).
 *
 * As in rdma-core: ibv_get_cq_event reads the fd (blocking unless the
 * application made it non-blocking, then -1 with errno EAGAIN when nothing
 * waits) and counts the events it hands out per CQ; ibv_ack_cq_events
 * counts the acknowledgements; ibv_destroy_cq waits until every event
 * handed out is acknowledged, and events not yet collected go with the CQ.
 * ibv_destroy_comp_channel fails with EBUSY while CQs use the channel.
 *
 * The soft device carries no solicited flag to the responder's completion:
 * an arm with solicited_only fires on the next completion of any kind (an
 * application sees more wake-ups than on hardware, never fewer).
 *
 * Locks: a CQ's buffer lock, then the channel's lock, then the soft
 * device's; the CQ's event counters are under the ibv_cq mutex.
 */
#include "emu/emu_raw.h"
#include "soft/dcx_soft.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct emu_channel {
    struct ibv_comp_channel ch; /* context, fd, refcnt (CQs on it) */
    dcx_comp_channel_t *soft;
    int efd;              /* the emulation's own events */
    pthread_mutex_t lock; /* cqs, own_events of its CQs, efd */
    emu_cq_t *cqs;        /* CQs on the channel */
    unsigned own;         /* own events not collected, all CQs */
};

static inline emu_channel_t *emu_channel(struct ibv_comp_channel *ch)
{
    return (emu_channel_t *)ch;
}

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
    emu_ctx_t *ectx = emu_ctx_check(context, "create_comp_channel");
    const char *name;
    emu_channel_t *ch;
    int ret;

    if (ectx == NULL) {
        return NULL;
    }
    name = context->device->name;
    ch   = calloc(1, sizeof(*ch));
    if (ch == NULL) {
        emu_error("%s: create_comp_channel: out of memory", name);
        errno = ENOMEM;
        return NULL;
    }
    ret = dcx_comp_channel_create(ectx->dev->soft, &ch->soft);
    if (ret != 0) {
        goto err_free;
    }
    ret = dcx_soft_channel_no_wake(ch->soft);
    if (ret != 0) {
        goto err_soft;
    }
    ch->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ch->efd < 0) {
        ret = errno;
        emu_error("%s: create_comp_channel: eventfd: %s", name, strerror(ret));
        goto err_soft;
    }
    ret = dcx_soft_channel_add_fd(ch->soft, ch->efd);
    if (ret != 0) {
        goto err_efd;
    }
    ch->ch.fd = ch->soft->fd;
    pthread_mutex_init(&ch->lock, NULL);
    ch->ch.context = context;
    ch->ch.refcnt  = 0;
    return &ch->ch;

err_efd:
    close(ch->efd);
err_soft:
    dcx_comp_channel_destroy(ch->soft);
err_free:
    free(ch);
    errno = ret;
    return NULL;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
    emu_channel_t *ch = emu_channel(channel);
    int refs, ret;

    pthread_mutex_lock(&ch->lock);
    refs = ch->ch.refcnt;
    pthread_mutex_unlock(&ch->lock);
    if (refs != 0) {
        emu_error("%s: destroy_comp_channel: %d CQs still use it",
                  channel->context->device->name, refs);
        return EBUSY;
    }
    ret = dcx_comp_channel_destroy(ch->soft); /* and the fd, ch.fd */
    if (ret != 0) {
        return ret;
    }
    close(ch->efd);
    pthread_mutex_destroy(&ch->lock);
    free(ch);
    return 0;
}

/* ------------------------------------------------------------------------
 * The CQs of a channel (emu_cq.c)
 * ------------------------------------------------------------------------ */
int emu_channel_check(struct ibv_comp_channel *channel,
                      struct ibv_context *context)
{
    if (channel->context != context) {
        /* the kernel finds no channel of this context under its fd */
        emu_error("%s: create_cq: completion channel (fd %d) belongs to "
                  "another context",
                  context->device->name, channel->fd);
        return EBADF;
    }
    return 0;
}

dcx_comp_channel_t *emu_channel_soft(struct ibv_comp_channel *channel)
{
    return emu_channel(channel)->soft;
}

void emu_channel_attach(emu_cq_t *cq, struct ibv_comp_channel *channel,
                        bool new_cq)
{
    emu_channel_t *ch = emu_channel(channel);

    pthread_mutex_lock(&ch->lock);
    cq->ch_next = ch->cqs;
    ch->cqs     = cq;
    if (new_cq) {
        ch->ch.refcnt++;
    }
    pthread_mutex_unlock(&ch->lock);
    cq->channel    = ch;
    cq->cq.channel = channel;
}

/* Under the channel lock: the eventfd back to zero once no own event is
 * left */
static void emu_channel_own_drain(emu_channel_t *ch)
{
    uint64_t count;

    if (ch->own == 0) {
        (void)!read(ch->efd, &count, sizeof(count));
    }
}

void emu_channel_detach(emu_cq_t *cq)
{
    emu_channel_t *ch = cq->channel;
    emu_cq_t **pp;

    pthread_mutex_lock(&ch->lock);
    for (pp = &ch->cqs; *pp != NULL; pp = &(*pp)->ch_next) {
        if (*pp == cq) {
            *pp = cq->ch_next;
            break;
        }
    }
    /* its events not collected go with it */
    ch->own -= cq->own_events;
    cq->own_events = 0;
    emu_channel_own_drain(ch);
    pthread_mutex_unlock(&ch->lock);
}

/* After the CQ left its channel: as rdma-core, waits until every event
 * handed out for it is acknowledged (another thread may still be
 * processing one).  More acknowledgements than events would make rdma-core
 * wait forever; the emulation says so and goes on. */
void emu_channel_cq_wait_acks(emu_cq_t *cq)
{
    struct ibv_cq *ibcq = ibv_cq_ex_to_cq(&cq->cq);
    emu_channel_t *ch   = cq->channel;
    const char *name    = ibcq->context->device->name;

    pthread_mutex_lock(&ibcq->mutex);
    if (ibcq->comp_events_completed > cq->events_reported) {
        emu_error("%s: destroy_cq: %u events acknowledged, %u were handed "
                  "out (rdma-core would wait here forever)",
                  name, ibcq->comp_events_completed, cq->events_reported);
    } else if (ibcq->comp_events_completed < cq->events_reported) {
        emu_warn("%s: destroy_cq: waiting for %u events to be acknowledged "
                 "(ibv_ack_cq_events)",
                 name, cq->events_reported - ibcq->comp_events_completed);
        while (ibcq->comp_events_completed < cq->events_reported) {
            pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
        }
    }
    pthread_mutex_unlock(&ibcq->mutex);

    pthread_mutex_lock(&ch->lock);
    ch->ch.refcnt--;
    pthread_mutex_unlock(&ch->lock);
    cq->channel = NULL;
}

/* ------------------------------------------------------------------------
 * Arming and events
 * ------------------------------------------------------------------------ */
static int emu_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
    emu_cq_t *cq      = emu_cq(ibcq);
    emu_channel_t *ch = cq->channel;
    int ret           = 0;

    (void)solicited_only; /* see the top of this file */
    if (ch == NULL) {
        /* rdma-core arms it all the same: no event can ever come */
        emu_debug("%s: req_notify_cq: the CQ has no completion channel",
                  ibcq->context->device->name);
        return 0;
    }
    if (cq->raw != NULL) {
        return cq->raw->arm(cq); /* the engine watches its memory */
    }
    pthread_mutex_lock(&cq->lock);
    if (cq->head < cq->count) {
        /* completions past the consumer index: the event fires now */
        emu_channel_fire(cq);
    } else {
        ret = dcx_cq_req_notify(cq->soft);
    }
    pthread_mutex_unlock(&cq->lock);
    return ret;
}

void emu_channel_fire(emu_cq_t *cq)
{
    emu_channel_t *ch = cq->channel;
    uint64_t one      = 1;

    if (ch == NULL) {
        return;
    }
    pthread_mutex_lock(&ch->lock);
    cq->own_events++;
    if ((ch->own++ == 0) &&
        (write(ch->efd, &one, sizeof(one)) != sizeof(one))) {
        emu_error("%s: cq event: cannot signal the channel: %s",
                  cq->cq.context->device->name, strerror(errno));
    }
    pthread_mutex_unlock(&ch->lock);
}

/* Under the channel lock: the CQ of one waiting event, or NULL */
static emu_cq_t *emu_channel_take(emu_channel_t *ch)
{
    dcx_cq_t *soft;
    emu_cq_t *cq;

    if (ch->own != 0) {
        for (cq = ch->cqs; cq != NULL; cq = cq->ch_next) {
            if (cq->own_events != 0) {
                cq->own_events--;
                ch->own--;
                emu_channel_own_drain(ch);
                return cq;
            }
        }
    }
    while (dcx_comp_channel_get_event(ch->soft, &soft) == 0) {
        for (cq = ch->cqs; cq != NULL; cq = cq->ch_next) {
            if (cq->soft == soft) {
                return cq;
            }
        }
        /* a CQ being destroyed: its event goes with it */
    }
    return NULL;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq_p,
                     void **cq_context_p)
{
    emu_channel_t *ch = emu_channel(channel);
    struct pollfd pfd;
    struct ibv_cq *ibcq;
    emu_cq_t *cq;
    int flags;

    for (;;) {
        pthread_mutex_lock(&ch->lock);
        cq = emu_channel_take(ch);
        if (cq != NULL) {
            ibcq = ibv_cq_ex_to_cq(&cq->cq);
            pthread_mutex_lock(&ibcq->mutex);
            cq->events_reported++;
            pthread_mutex_unlock(&ibcq->mutex);
            pthread_mutex_unlock(&ch->lock);
            *cq_p         = ibcq;
            *cq_context_p = ibcq->cq_context;
            return 0;
        }
        pthread_mutex_unlock(&ch->lock);

        /* nothing waits: a read of the fd would block or fail */
        flags = fcntl(channel->fd, F_GETFL);
        if ((flags < 0) || (flags & O_NONBLOCK)) {
            errno = (flags < 0) ? errno : EAGAIN;
            return -1;
        }
        pfd.fd      = channel->fd;
        pfd.events  = POLLIN;
        pfd.revents = 0;
        if ((poll(&pfd, 1, -1) < 0) && (errno != EINTR)) {
            return -1;
        }
    }
}

void ibv_ack_cq_events(struct ibv_cq *ibcq, unsigned int nevents)
{
    emu_cq_t *cq = emu_cq(ibcq);

    pthread_mutex_lock(&ibcq->mutex);
    ibcq->comp_events_completed += nevents;
    if (ibcq->comp_events_completed > cq->events_reported) {
        emu_error("%s: ack_cq_events: %u events acknowledged, %u were "
                  "handed out",
                  ibcq->context->device->name, ibcq->comp_events_completed,
                  cq->events_reported);
    }
    pthread_cond_signal(&ibcq->cond);
    pthread_mutex_unlock(&ibcq->mutex);
}

void emu_ctx_set_channel_ops(struct verbs_context *vctx)
{
    vctx->context.ops.req_notify_cq = emu_req_notify_cq;
}
