/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: completion queues.  Completions are queued by the engine
 * (under the engine lock) and drained by polls; a poll first looks at the
 * engine and its CQs without the lock (soft_poll.h) and takes the lock
 * only when there is work.  This file holds the CQ, below the engine that
 * queues completions; its polls, which run the engine, are in
 * soft_cq_poll.c, installed here as the CQ's ops.  The completion channel
 * of a CQ is in soft_channel.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_channel.h"

#include <errno.h>
#include <stdlib.h>

/* A CQ is full: the completion is lost (logged once per overrun). */
__attribute__((noinline)) void soft_cq_overrun(soft_cq_t *cq, uint32_t qp_num)
{
    if (!cq->overrun) {
        dcx_error("%s: cq %p overrun (%u entries): completion of qp 0x%x "
                  "lost, qp moved to error",
                  cq->dev->super.caps.name, (void *)cq, cq->super.cqe, qp_num);
    }
    cq->overrun = 1;
}

int soft_cq_push(soft_cq_t *cq, const dcx_wc_t *wc, soft_qp_t *qp,
                 uint32_t sq_idx)
{
    soft_cqe_t *cqe = soft_cq_slot(cq);

    if (cqe == NULL) {
        soft_cq_overrun(cq, wc->qp_num);
        return ENOSPC;
    }
    cqe->wc     = *wc;
    cqe->qp     = qp;
    cqe->sq_idx = sq_idx;
    cqe->tm     = NULL;
    soft_cq_commit(cq);
    return 0;
}

/* The completions of qp queued in cq (engine lock held): dropped (a DCI's
 * reset), or kept without their QP, which retire nothing when polled (a
 * destroyed QP) */
void soft_cq_purge(soft_cq_t *cq, soft_qp_t *qp, int drop)
{
    uint32_t i, out = cq->head;

    for (i = cq->head; i != cq->tail; ++i) {
        soft_cqe_t *e = &cq->q[i & (cq->size - 1)];

        if (e->qp == qp) {
            if (drop) {
                continue;
            }
            e->qp = NULL;
        }
        cq->q[out++ & (cq->size - 1)] = *e;
    }
    cq->tail = out;
}

int soft_cq_create(dcx_dev_t *dev_, uint32_t cqe, dcx_cq_t **cq_p)
{
    soft_dev_t *dev = soft_dev(dev_);
    soft_cq_t *cq;
    uint32_t size = 1;

    if ((cqe == 0) || (cqe > dev->limits.max_cqe)) {
        dcx_error("%s: cq create: cqe %u not in [1, %u]", dev->super.caps.name,
                  cqe, dev->limits.max_cqe);
        return EINVAL;
    }
    while (size < cqe) {
        size <<= 1;
    }
    cq = calloc(1, sizeof(*cq));
    if (cq != NULL) {
        cq->q = calloc(size, sizeof(*cq->q));
    }
    if ((cq == NULL) || (cq->q == NULL)) {
        free(cq);
        dcx_error("%s: cq create: out of memory for %u entries",
                  dev->super.caps.name, cqe);
        return ENOMEM;
    }
    cq->super.dev       = dev_;
    cq->super.cqe       = size;
    cq->super.poll      = soft_cq_poll;
    cq->super.poll_pair = soft_cq_poll_pair;
    cq->super.ready     = soft_cq_ready;
    cq->super.release   = soft_cq_release;
    /* a poll runs the engine too: no one word tells that it is idle */
    cq->super.look      = NULL;
    cq->dev             = dev;
    cq->size            = size;
    soft_lock(&dev->lock);
    dev->num_objs++;
    soft_unlock(&dev->lock);
    *cq_p = &cq->super;
    return 0;
}

/* A CQ made on a channel joins the channel's list of CQs */
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

int soft_cq_destroy(dcx_cq_t *cq_)
{
    soft_cq_t *cq   = (soft_cq_t *)cq_;
    soft_dev_t *dev = cq->dev;

    soft_lock(&dev->lock);
    if (cq->refs != 0) {
        soft_unlock(&dev->lock);
        dcx_error("%s: cq %p destroy: still used by %d QP/SRQ",
                  dev->super.caps.name, (void *)cq, cq->refs);
        return EBUSY;
    }
    if (cq->ch != NULL) {
        soft_cq_detach_channel(cq);
    }
    if (cq->ip_on) {
        soft_cq_t **p = &dev->ip_cqs;

        while (*p != cq) {
            p = &(*p)->ip_next;
        }
        *p = cq->ip_next;
    }
    dev->num_objs--;
    soft_unlock(&dev->lock);
    free(cq->q);
    free(cq);
    return 0;
}
