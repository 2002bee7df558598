/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: DCIs with stream channels (dcx_qp_attr_t.dci_streams).
 *
 * A DCI with 2^k streams is a container of 2^k channel DCIs, each an
 * ordinary soft DCI with its own send queue, message numbers and
 * responder state at every target: so WRs of one stream execute in order,
 * and WRs of different streams neither wait for each other nor share a
 * fate.  The container has no engine state: its post hands a WR to the
 * channel of the WR's stream, and every channel's completions carry the
 * container's number (that of channel 0), into the container's send CQ.
 *
 * Errors: a channel that goes to ERR (an error completion, a CQ overrun)
 * flushes its own WRs only and counts as an errored stream of the
 * container; once 2^log_num_errored streams are errored at once, the
 * container goes to ERR with every channel.  dcx_qp_stream_reset brings
 * one errored channel back (its completions not yet polled stay);
 * dcx_qp_recover brings back the whole DCI (they are discarded, as for
 * any DCI).
 */
#include "soft.h"
#include "soft_stream.h"

#include <stdlib.h>

static int soft_stream_post(dcx_qp_t *qp_, const dcx_send_wr_t *wr)
{
    soft_stream_t *st = (soft_stream_t *)qp_;
    soft_qp_t *ch;

    if (wr->stream_id >= st->n) {
        if (wr->flags & DCX_SEND_NOW) {
            return EAGAIN; /* posted, it says what is wrong */
        }
        dcx_error("%s: dci 0x%x post: stream %u, the DCI has %u streams",
                  soft_qp_dev_name(&st->super), qp_->qp_num, wr->stream_id,
                  st->n);
        return EINVAL;
    }
    ch = st->ch[wr->stream_id];
    return ch->super.post_send(&ch->super, wr);
}

soft_qp_t *soft_stream_channel(soft_qp_t *qp, uint16_t stream_id)
{
    soft_stream_t *st = (soft_stream_t *)qp;

    if (stream_id >= st->n) {
        dcx_error("%s: dci 0x%x: stream %u, the DCI has %u streams",
                  soft_qp_dev_name(qp), qp->super.qp_num, stream_id, st->n);
        return NULL;
    }
    return st->ch[stream_id];
}

static void soft_stream_free(soft_stream_t *st)
{
    uint32_t i;

    for (i = 0; i < st->n; ++i) {
        if (st->ch[i] != NULL) {
            soft_qp_destroy_plain(&st->ch[i]->super);
        }
    }
    free(st->ch);
    free(st);
}

static void soft_stream_errored(soft_qp_t *ch);

int soft_stream_create(dcx_pd_t *pd, const dcx_qp_attr_t *attr, dcx_qp_t **qp_p)
{
    soft_dev_t *dev  = soft_dev(pd->dev);
    const char *name = dev->super.caps.name;
    dcx_qp_attr_t ch_attr;
    soft_stream_t *st;
    soft_qp_t *qp;
    dcx_qp_t *ch;
    uint32_t i;
    int ret;

    /* (dcx_qp_create checked the logs against the caps) */
    st = calloc(1, sizeof(*st));
    if (st == NULL) {
        dcx_error("%s: dci create: out of memory for the streams", name);
        return ENOMEM;
    }
    qp              = &st->super;
    st->n           = 1u << attr->log_num_concurrent;
    st->max_errored = 1u << attr->log_num_errored;
    st->ch          = calloc(st->n, sizeof(*st->ch));
    if (st->ch == NULL) {
        dcx_error("%s: dci create: out of memory for %u streams", name, st->n);
        free(st);
        return ENOMEM;
    }

    ch_attr             = *attr;
    ch_attr.dci_streams = 0;
    for (i = 0; i < st->n; ++i) {
        ret = soft_qp_create_plain(pd, &ch_attr, &ch);
        if (ret != 0) {
            dcx_error("%s: dci create: stream %u of %u: %s", name, i, st->n,
                      strerror(ret));
            soft_stream_free(st);
            return ret;
        }
        st->ch[i] = (soft_qp_t *)ch;
    }

    qp->dev                 = dev;
    qp->super.dev           = pd->dev;
    qp->super.pd            = pd;
    qp->super.type          = DCX_QPT_DCI;
    qp->super.qp_num        = st->ch[0]->super.qp_num;
    qp->super.max_send_wr   = st->ch[0]->super.max_send_wr;
    qp->super.max_send_sge  = st->ch[0]->super.max_send_sge;
    qp->super.max_inline    = st->ch[0]->super.max_inline;
    qp->super.max_rd_atomic = st->ch[0]->super.max_rd_atomic;
    qp->super.num_streams   = st->n;
    qp->super.post_send     = soft_stream_post;
    qp->cq                  = st->ch[0]->cq;
    qp->wc_qpn              = qp->super.qp_num;

    soft_lock(&dev->lock);
    st->ch_errored = soft_stream_errored;
    for (i = 0; i < st->n; ++i) {
        st->ch[i]->stream_of = st;
        st->ch[i]->wc_qpn    = qp->super.qp_num;
    }
    __atomic_store_n(&qp->super.state, DCX_QPS_RTS, __ATOMIC_RELAXED);
    soft_unlock(&dev->lock);
    dcx_debug("%s: dci 0x%x created with %u streams (errored limit %u)", name,
              qp->super.qp_num, st->n, st->max_errored);
    *qp_p = &qp->super;
    return 0;
}

int soft_stream_destroy(soft_qp_t *qp)
{
    soft_stream_free((soft_stream_t *)qp);
    return 0;
}

/* The whole DCI to ERR: every channel flushes.  Engine lock held. */
static void soft_stream_dci_error(soft_stream_t *st, const char *reason)
{
    uint32_t i;

    if (st->going_down) {
        return;
    }
    st->going_down = 1;
    dcx_debug("%s: dci 0x%x to error: %s", soft_qp_dev_name(&st->super),
              st->super.super.qp_num, reason);
    __atomic_store_n(&st->super.super.state, DCX_QPS_ERR, __ATOMIC_RELAXED);
    for (i = 0; i < st->n; ++i) {
        soft_qp_to_error(st->ch[i], reason);
    }
}

/* Channel ch went to ERR (soft_qp_to_error, through st->ch_errored).  Engine
 * lock held. */
static void soft_stream_errored(soft_qp_t *ch)
{
    soft_stream_t *st = ch->stream_of;

    if (st->going_down) {
        return; /* the whole DCI fails: no stream counts */
    }
    st->errored++;
    dcx_debug("%s: dci 0x%x: a stream failed, %u of %u errored allowed",
              soft_qp_dev_name(ch), st->super.super.qp_num, st->errored,
              st->max_errored);
    if (st->errored >= st->max_errored) {
        soft_stream_dci_error(st, "errored-stream limit reached");
    }
}

int soft_stream_set_error(soft_qp_t *qp)
{
    soft_lock(&qp->dev->lock);
    soft_stream_dci_error((soft_stream_t *)qp, "requested by the user");
    soft_unlock(&qp->dev->lock);
    return 0;
}

int soft_stream_recover(soft_qp_t *qp)
{
    soft_stream_t *st = (soft_stream_t *)qp;
    soft_dev_t *dev   = qp->dev;
    uint32_t i;

    soft_lock(&dev->lock);
    if (qp->super.state != DCX_QPS_ERR) {
        soft_unlock(&dev->lock);
        dcx_error("%s: qp 0x%x recover: not a DCI in error (state %d)",
                  dev->super.caps.name, qp->super.qp_num, (int)qp->super.state);
        return EINVAL;
    }
    for (i = 0; i < st->n; ++i) {
        soft_qp_reset(st->ch[i]);
    }
    st->errored    = 0;
    st->going_down = 0;
    __atomic_store_n(&qp->super.state, DCX_QPS_RTS, __ATOMIC_RELAXED);
    soft_unlock(&dev->lock);
    return 0;
}

int soft_stream_reset(dcx_qp_t *qp_, uint16_t stream_id)
{
    soft_qp_t *qp     = (soft_qp_t *)qp_;
    soft_stream_t *st = (soft_stream_t *)qp_;
    soft_dev_t *dev   = qp->dev;
    soft_qp_t *ch;

    if ((qp_->type != DCX_QPT_DCI) || !soft_qp_has_streams(qp)) {
        dcx_error("%s: qp 0x%x stream %u reset: not a DCI with streams",
                  dev->super.caps.name, qp_->qp_num, stream_id);
        return EINVAL;
    }
    if (stream_id >= st->n) {
        dcx_error("%s: dci 0x%x stream %u reset: the DCI has %u streams",
                  dev->super.caps.name, qp_->qp_num, stream_id, st->n);
        return EINVAL;
    }
    soft_lock(&dev->lock);
    if (qp->super.state != DCX_QPS_RTS) {
        soft_unlock(&dev->lock);
        dcx_error("%s: dci 0x%x stream %u reset: the DCI is not in RTS "
                  "(state %d)",
                  dev->super.caps.name, qp_->qp_num, stream_id,
                  (int)qp->super.state);
        return EOPNOTSUPP;
    }
    ch = st->ch[stream_id];
    if (ch->super.state == DCX_QPS_ERR) {
        /* every WR of the channel was flushed when it failed */
        soft_qp_rearm(ch);
        st->errored--;
        dcx_debug("%s: dci 0x%x stream %u reset", dev->super.caps.name,
                  qp_->qp_num, stream_id);
    }
    soft_unlock(&dev->lock);
    return 0;
}

int dcx_soft_stream_errored(dcx_qp_t *qp_, uint16_t stream_id)
{
    soft_qp_t *qp     = (soft_qp_t *)qp_;
    soft_stream_t *st = (soft_stream_t *)qp_;
    soft_dev_t *dev   = qp->dev;
    int errored;

    if ((qp_->type != DCX_QPT_DCI) || !soft_qp_has_streams(qp) ||
        (stream_id >= st->n)) {
        dcx_error("%s: qp 0x%x stream %u: not a DCI with that stream",
                  dev->super.caps.name, qp_->qp_num, stream_id);
        return -EINVAL;
    }
    soft_lock(&dev->lock);
    errored = (st->ch[stream_id]->super.state == DCX_QPS_ERR);
    soft_unlock(&dev->lock);
    return errored;
}

int soft_stream_set_timers(soft_qp_t *qp, uint8_t timeout, uint8_t retry_cnt,
                           uint8_t rnr_retry, uint32_t max_rd_atomic)
{
    soft_stream_t *st = (soft_stream_t *)qp;
    uint32_t i;
    int ret;

    for (i = 0; i < st->n; ++i) {
        ret = soft_qp_set_timers_plain(&st->ch[i]->super, timeout, retry_cnt,
                                       rnr_retry, max_rd_atomic);
        if (ret != 0) {
            return ret;
        }
    }
    qp->super.max_rd_atomic = st->ch[0]->super.max_rd_atomic;
    return 0;
}
