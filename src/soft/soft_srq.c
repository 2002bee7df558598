/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: shared receive queues (basic and tag-matching): the receive
 * queue the responder takes buffers from.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_srq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Engine lock held: 1 if the queue has room for one more receive. */
static inline int soft_srq_room(soft_srq_t *srq)
{
    return (srq->tail - srq->head) < srq->super.max_wr;
}

/* Engine lock held, room checked: queues one receive. */
static inline void soft_srq_push(soft_srq_t *srq, uint64_t wr_id,
                                 const dcx_sge_t *sg_list, unsigned num_sge)
{
    soft_rwqe_t *wqe = &srq->q[srq->tpos];

    wqe->wr_id   = wr_id;
    wqe->num_sge = num_sge;
    if (num_sge == 1) {
        wqe->sge[0] = sg_list[0]; /* the transport's one buffer: no call */
    } else {
        memcpy(wqe->sge, sg_list, num_sge * sizeof(*sg_list));
    }
    srq->tpos = (srq->tpos + 1 == srq->size) ? 0 : srq->tpos + 1;
    srq->tail++;
}

static void soft_srq_full(soft_srq_t *srq)
{
    dcx_debug("%s: srq %p post recv: full (%u receives)",
              srq->dev->super.caps.name, (void *)srq, srq->super.max_wr);
}

static int soft_srq_post_recv(dcx_srq_t *srq_, uint64_t wr_id,
                              const dcx_sge_t *sg_list, unsigned num_sge)
{
    soft_srq_t *srq = (soft_srq_t *)srq_;
    soft_dev_t *dev = srq->dev;

    if (num_sge > srq->super.max_sge) {
        dcx_error("%s: srq %p post recv: %u sge > max %u", dev->super.caps.name,
                  (void *)srq, num_sge, srq->super.max_sge);
        return EINVAL;
    }
    soft_lock(&dev->lock);
    if (!soft_srq_room(srq)) {
        soft_unlock(&dev->lock);
        soft_srq_full(srq);
        return ENOMEM;
    }
    soft_srq_push(srq, wr_id, sg_list, num_sge);
    soft_unlock(&dev->lock);
    return 0;
}

/* A batch of single-buffer receives in one lock round: a receive queue
 * refilled after a burst costs one lock round, not one per buffer. */
static int soft_srq_post_recv_list(dcx_srq_t *srq_, const dcx_recv_t *list,
                                   unsigned count, uint32_t length,
                                   unsigned *posted_p)
{
    soft_srq_t *srq = (soft_srq_t *)srq_;
    soft_rwqe_t *wqe;
    uint32_t tpos, room;
    unsigned i, n;

    soft_lock(&srq->dev->lock);
    /* the queue's position in locals: the stores into its entries do not
     * make the compiler read it again per receive */
    room = srq->super.max_wr - (srq->tail - srq->head);
    n    = (count < room) ? count : room;
    tpos = srq->tpos;
    for (i = 0; i < n; ++i) {
        wqe                = &srq->q[tpos];
        wqe->wr_id         = list[i].wr_id;
        wqe->num_sge       = 1;
        wqe->sge[0].addr   = list[i].addr;
        wqe->sge[0].length = length;
        wqe->sge[0].lkey   = list[i].lkey;
        tpos               = (tpos + 1 == srq->size) ? 0 : tpos + 1;
    }
    srq->tpos = tpos;
    srq->tail += n;
    soft_unlock(&srq->dev->lock);
    *posted_p = n;
    if (n < count) {
        soft_srq_full(srq);
        return ENOMEM;
    }
    return 0;
}

/* Engine lock held: completes every receive queued with
 * DCX_WC_WR_FLUSH_ERR on the flushing DCT's CQ, in order, and empties the
 * queue.  A full CQ takes what it can; its overrun is logged once there. */
static void soft_srq_flush_queued(soft_srq_t *srq)
{
    soft_qp_t *dct = srq->flush_dct;
    dcx_wc_t wc;

    memset(&wc, 0, sizeof(wc));
    wc.status = DCX_WC_WR_FLUSH_ERR;
    wc.opcode = DCX_WC_RECV;
    wc.qp_num = dct->super.qp_num;
    while (srq->head != srq->tail) {
        wc.wr_id = soft_srq_head(srq)->wr_id;
        soft_srq_pop(srq);
        (void)soft_cq_push(dct->cq, &wc, NULL, 0);
    }
}

/* After a post to a flushing queue: what it queued (and any a post that
 * raced the switch left) completed flushed; ret passed through */
static int soft_srq_flush_posted(dcx_srq_t *srq_, int ret)
{
    soft_srq_t *srq = (soft_srq_t *)srq_;

    soft_lock(&srq->dev->lock);
    if (srq->flush_dct != NULL) {
        soft_srq_flush_queued(srq);
    }
    soft_unlock(&srq->dev->lock);
    return ret;
}

/* The post functions of a flushing queue: the receives are checked and
 * queued as ever, then completed flushed */
static int soft_srq_post_recv_flushed(dcx_srq_t *srq_, uint64_t wr_id,
                                      const dcx_sge_t *sg_list,
                                      unsigned num_sge)
{
    return soft_srq_flush_posted(srq_, soft_srq_post_recv(srq_, wr_id, sg_list,
                                                          num_sge));
}

static int soft_srq_post_recv_list_flushed(dcx_srq_t *srq_,
                                           const dcx_recv_t *list,
                                           unsigned count, uint32_t length,
                                           unsigned *posted_p)
{
    return soft_srq_flush_posted(srq_,
                                 soft_srq_post_recv_list(srq_, list, count,
                                                         length, posted_p));
}

void soft_srq_flush(soft_srq_t *srq, soft_qp_t *dct)
{
    if (dct != NULL) {
        srq->flush_dct            = dct;
        srq->super.post_recv      = soft_srq_post_recv_flushed;
        srq->super.post_recv_list = soft_srq_post_recv_list_flushed;
        soft_srq_flush_queued(srq);
        return;
    }
    srq->flush_dct            = NULL;
    srq->super.post_recv      = soft_srq_post_recv;
    srq->super.post_recv_list = soft_srq_post_recv_list;
    srq->head                 = srq->tail;
    srq->hpos                 = srq->tpos;
}

int soft_srq_create(dcx_pd_t *pd, const dcx_srq_attr_t *attr, dcx_srq_t **srq_p)
{
    soft_dev_t *dev  = soft_dev(pd->dev);
    const char *name = dev->super.caps.name;
    soft_srq_t *srq;

    if ((attr->type != DCX_SRQ_BASIC) && (attr->type != DCX_SRQ_TM)) {
        dcx_error("%s: srq create: type %d not supported", name,
                  (int)attr->type);
        return EINVAL;
    }
    if ((attr->max_wr == 0) || (attr->max_wr > dev->limits.max_srq_wr) ||
        (attr->max_sge > dev->limits.max_sge) || (attr->cq == NULL)) {
        dcx_error("%s: srq create: max_wr %u (1..%u), max_sge %u (<= %u), "
                  "cq %p: invalid",
                  name, attr->max_wr, dev->limits.max_srq_wr, attr->max_sge,
                  dev->limits.max_sge, (void *)attr->cq);
        return EINVAL;
    }
    srq = calloc(1, sizeof(*srq));
    if (srq != NULL) {
        srq->q = calloc(attr->max_wr, sizeof(*srq->q));
    }
    if ((srq == NULL) || (srq->q == NULL)) {
        free(srq);
        dcx_error("%s: srq create: out of memory", name);
        return ENOMEM;
    }
    srq->super.dev            = pd->dev;
    srq->super.pd             = pd;
    srq->super.max_wr         = attr->max_wr;
    srq->super.max_sge        = attr->max_sge ? attr->max_sge : 1;
    srq->super.post_recv      = soft_srq_post_recv;
    srq->super.post_recv_list = soft_srq_post_recv_list;
    srq->super.tm_post        = dcx_srq_tm_post_none;
    srq->dev                  = dev;
    srq->cq                   = (soft_cq_t *)attr->cq;
    srq->size                 = attr->max_wr;
    srq->watch_fd             = -1;
    if (attr->type == DCX_SRQ_TM) {
        int ret = soft_tm_create(srq, attr);

        if (ret != 0) {
            free(srq->q);
            free(srq);
            return ret;
        }
    }
    soft_lock(&dev->lock);
    /* (dcx_srq_create refuses the flag where recv_copy took the cap away) */
    if (attr->flags & DCX_SRQ_F_IN_PLACE) {
        srq->in_place = 1;
        if (!srq->cq->ip_on) { /* the CQ holds ring slots from now on */
            srq->cq->ip_on   = 1;
            srq->cq->ip_next = dev->ip_cqs;
            dev->ip_cqs      = srq->cq;
        }
    }
    srq->cq->refs++;
    dev->num_objs++;
    soft_unlock(&dev->lock);
    *srq_p = &srq->super;
    return 0;
}

int dcx_soft_srq_watch(dcx_srq_t *srq_, int efd)
{
    soft_srq_t *srq = (soft_srq_t *)srq_;

    if (!dcx_dev_is_soft(srq_->dev)) {
        dcx_error("%s: srq %p watch: not an SRQ of a soft device",
                  dcx_dev_name(srq_->dev), (void *)srq_);
        return EINVAL;
    }
    soft_lock(&srq->dev->lock);
    srq->watch_fd = efd;
    soft_unlock(&srq->dev->lock);
    return 0;
}

int soft_srq_destroy(dcx_srq_t *srq_)
{
    soft_srq_t *srq = (soft_srq_t *)srq_;
    soft_dev_t *dev = srq->dev;

    soft_lock(&dev->lock);
    if (srq->refs != 0) {
        soft_unlock(&dev->lock);
        dcx_error("%s: srq %p destroy: still used by %d DCT",
                  dev->super.caps.name, (void *)srq, srq->refs);
        return EBUSY;
    }
    srq->cq->refs--;
    dev->num_objs--;
    soft_unlock(&dev->lock);
    if (srq->tm != NULL) {
        soft_tm_destroy(srq);
    }
    free(srq->q);
    free(srq);
    return 0;
}
