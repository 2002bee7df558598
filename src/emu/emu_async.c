/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: a context's asynchronous events (ibv_get_async_event).
 *
 * The one event modelled is an SRQ-attached RC QP's last WQE reached,
 * raised when ibv_modify_qp moves the QP into ERR (not again while it
 * stays there): UCX's rc_mlx5 without DEVX waits for it before it
 * destroys such a QP.  QPs made through DEVX raise theirs on their event
 * channel instead (emu_devx_obj.c).  Each event is one count of the
 * context's async fd (an eventfd in semaphore mode), so that a reader's
 * poll on the fd and its read agree with the queue.  As with rdma-core, a
 * QP destroyed takes its events not yet read with it, and its destroy
 * waits until each event already handed out for it is acknowledged: the
 * reader may still be looking at the QP, so it is not freed under it.
 */
#include "emu/emu.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

void emu_async_init(emu_ctx_t *ctx)
{
    pthread_mutex_init(&ctx->async_lock, NULL);
    ctx->async_head  = 0;
    ctx->async_count = 0;
}

void emu_async_fini(emu_ctx_t *ctx)
{
    pthread_mutex_destroy(&ctx->async_lock);
}

void emu_async_qp_event(emu_qp_t *qp, enum ibv_event_type type)
{
    emu_ctx_t *ctx           = qp->ctx;
    struct ibv_context *vctx = &ctx->vctx.context;
    uint64_t one             = 1;
    unsigned tail;

    pthread_mutex_lock(&ctx->async_lock);
    if (ctx->async_count == EMU_ASYNC_MAX) {
        pthread_mutex_unlock(&ctx->async_lock);
        emu_error("%s: QP 0x%x: %s event lost: %u events not read yet",
                  vctx->device->name, qp->qpx.qp_base.qp_num,
                  ibv_event_type_str(type), EMU_ASYNC_MAX);
        return;
    }
    tail = (ctx->async_head + ctx->async_count) % EMU_ASYNC_MAX;
    ctx->async_q[tail].type = type;
    ctx->async_q[tail].qp   = &qp->qpx.qp_base;
    ctx->async_count++;
    /* counted under the lock: a reader's count never runs ahead of the
     * queue (an eventfd write of 1 cannot fail short of 2^64 - 2) */
    (void)!write(vctx->async_fd, &one, sizeof(one));
    pthread_mutex_unlock(&ctx->async_lock);
}

/* Whether an event of this type names a QP (element.qp) */
static bool emu_async_is_qp_event(enum ibv_event_type type)
{
    switch (type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
        return true;
    default:
        return false;
    }
}

void emu_async_qp_forget(emu_qp_t *qp)
{
    emu_ctx_t *ctx = qp->ctx;
    unsigned i, kept = 0, n;

    pthread_mutex_lock(&ctx->async_lock);
    n = ctx->async_count;
    for (i = 0; i < n; ++i) {
        emu_async_ev_t e = ctx->async_q[(ctx->async_head + i) % EMU_ASYNC_MAX];

        if (e.qp != &qp->qpx.qp_base) {
            ctx->async_q[(ctx->async_head + kept) % EMU_ASYNC_MAX] = e;
            kept++;
        }
    }
    /* the counts of the events taken stay on the fd: a read that finds
     * the queue empty reads again (ibv_get_async_event) */
    ctx->async_count = kept;
    pthread_mutex_unlock(&ctx->async_lock);
}

/* After emu_async_qp_forget: no event for qp is handed out any more, so
 * the count of those that were is final.  More acknowledgements than
 * events would make rdma-core wait forever; the emulation says so and
 * goes on. */
void emu_async_qp_wait_acks(emu_qp_t *qp)
{
    struct ibv_qp *ibqp = &qp->qpx.qp_base;
    const char *name    = ibqp->context->device->name;
    uint32_t reported;

    pthread_mutex_lock(&qp->ctx->async_lock);
    reported = qp->async_reported;
    pthread_mutex_unlock(&qp->ctx->async_lock);

    pthread_mutex_lock(&ibqp->mutex);
    if (ibqp->events_completed > reported) {
        emu_error("%s: destroy_qp: QP 0x%x: %u events acknowledged, %u were "
                  "handed out (rdma-core would wait here forever)",
                  name, ibqp->qp_num, ibqp->events_completed, reported);
    }
    while (ibqp->events_completed < reported) {
        pthread_cond_wait(&ibqp->cond, &ibqp->mutex);
    }
    pthread_mutex_unlock(&ibqp->mutex);
}

/* Blocks on the async fd as rdma-core does (EAGAIN if the caller made it
 * nonblocking and nothing is there). */
int ibv_get_async_event(struct ibv_context *context,
                        struct ibv_async_event *event)
{
    emu_ctx_t *ctx = emu_ctx_check(context, "ibv_get_async_event");
    uint64_t v;

    if (ctx == NULL) {
        errno = EINVAL;
        return -1;
    }
    for (;;) {
        if (read(context->async_fd, &v, sizeof(v)) != (ssize_t)sizeof(v)) {
            return -1;
        }
        pthread_mutex_lock(&ctx->async_lock);
        if (ctx->async_count > 0) {
            memset(event, 0, sizeof(*event));
            event->event_type = ctx->async_q[ctx->async_head].type;
            event->element.qp = ctx->async_q[ctx->async_head].qp;
            emu_qp(event->element.qp)->async_reported++;
            ctx->async_head = (ctx->async_head + 1) % EMU_ASYNC_MAX;
            ctx->async_count--;
            pthread_mutex_unlock(&ctx->async_lock);
            return 0;
        }
        pthread_mutex_unlock(&ctx->async_lock);
    }
}

/* Counts a QP event as rdma-core does, waking a destroy that waits for
 * it (emu_async_qp_wait_acks); the emulation raises no other kind. */
void ibv_ack_async_event(struct ibv_async_event *event)
{
    struct ibv_qp *qp;

    if (!emu_async_is_qp_event(event->event_type)) {
        return;
    }
    qp = event->element.qp;
    if (qp == NULL) {
        emu_error("ibv_ack_async_event: %s event names no QP",
                  ibv_event_type_str(event->event_type));
        return;
    }
    pthread_mutex_lock(&qp->mutex);
    qp->events_completed++;
    pthread_cond_signal(&qp->cond);
    pthread_mutex_unlock(&qp->mutex);
}
