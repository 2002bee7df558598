/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device queue pairs: DCI and DCT objects, their creation and
 * destruction, error state and recovery.  A DCI with stream channels is
 * built on these (soft_stream.c), and the device's operations choose
 * between the two (soft_qp_ops.c).  Their post functions, which
 * creation installs, and a DCI's reset are in soft_post.c; the engine that
 * executes a DCI's work is in soft_req.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_dgram.h"
#include "soft_dgrant.h"
#include "soft_light.h"
#include "soft_now.h"
#include "soft_srq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* min_rnr_timer encoding of verbs, in units of 10 us (index 0 = 655.36 ms) */
static const uint32_t soft_rnr_table[32] = {
    65536, 1,    2,    3,    4,    6,     8,     12,    16,    24,   32,
    48,    64,   96,   128,  192,  256,   384,   512,   768,   1024, 1536,
    2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};

/* The smallest power of two >= n (n <= max_qp_wr, far below 2^31): a
 * DCI's slot count, so that soft_wqe() indexes with a mask */
static uint32_t soft_pow2_above(uint32_t n)
{
    uint32_t p = 1;

    while (p < n) {
        p <<= 1;
    }
    return p;
}

/* ------------------------------------------------------------------------
 * Control path
 * ------------------------------------------------------------------------ */
static int soft_qp_alloc_num(soft_dev_t *dev, soft_qp_t *qp)
{
    uint32_t i, idx;

    for (i = 0; i < dev->max_qps; ++i) {
        idx = (dev->qp_cursor + i) % dev->max_qps;
        if (dev->qps[idx] == NULL) {
            dev->qps[idx]    = qp;
            dev->qp_cursor   = idx + 1;
            qp->super.qp_num = dev->qpn_base + idx;
            qp->wire_qpn     = qp->super.qp_num;
            qp->ack_line = (dev->acks != NULL) ? &dev->acks[idx].word : NULL;
            return 0;
        }
    }
    return ENOMEM;
}

static int soft_dci_init(soft_dev_t *dev, soft_qp_t *qp,
                         const dcx_qp_attr_t *attr)
{
    const dcx_soft_limits_t *l = &dev->limits;
    const char *name           = dev->super.caps.name;
    uint32_t sge               = attr->max_send_sge ? attr->max_send_sge : 1;
    uint32_t rd = attr->max_rd_atomic ? attr->max_rd_atomic : l->max_rd_atomic;

    if ((attr->send_cq == NULL) || (attr->max_send_wr == 0) ||
        (attr->max_send_wr > l->max_qp_wr) || (sge > l->max_sge) ||
        (attr->max_inline > l->max_inline) || (rd > l->max_rd_atomic) ||
        (attr->retry_cnt > 7) || (attr->rnr_retry > 7) ||
        (attr->timeout > 31)) {
        dcx_error("%s: dci create: invalid attributes (send_cq %p, "
                  "max_send_wr %u/%u, max_send_sge %u/%u, max_inline %u/%u, "
                  "max_rd_atomic %u/%u, retry %u, rnr_retry %u)",
                  name, (void *)attr->send_cq, attr->max_send_wr, l->max_qp_wr,
                  sge, l->max_sge, attr->max_inline, l->max_inline, rd,
                  l->max_rd_atomic, attr->retry_cnt, attr->rnr_retry);
        return EINVAL;
    }
    if (dev->num_dcis >= l->max_dci) {
        dcx_error("%s: dci create: %u DCIs already (max_dci)", name,
                  dev->num_dcis);
        return ENOMEM;
    }
    qp->sq_size             = attr->max_send_wr;
    qp->sq_mask             = soft_pow2_above(attr->max_send_wr) - 1;
    /* slots and inline buffers at the first post: soft_qp_slots_alloc() */
    qp->sq                  = NULL;
    qp->sge_pool            = NULL;
    qp->inl_pool            = NULL;
    qp->cq                  = (soft_cq_t *)attr->send_cq;
    qp->super.max_send_wr   = attr->max_send_wr;
    qp->super.max_send_sge  = sge;
    qp->super.max_inline    = attr->max_inline;
    qp->super.max_rd_atomic = rd;
    qp->super.post_send     = soft_dci_post_first;
    qp->post_ready          = soft_dci_post_send;
    if (attr->timeout != 0) {
        /* the caller gives the verbs transport parameters: use them as is */
        qp->ack_timeout_ns = 4096ull << attr->timeout;
        qp->retry_cnt      = attr->retry_cnt;
        qp->rnr_retry      = attr->rnr_retry;
    } else {
        /* timeout 0 (infinite in verbs): the device's configured timers */
        qp->ack_timeout_ns = (uint64_t)l->ack_timeout_us * 1000ull;
        qp->retry_cnt      = l->retry_cnt;
        qp->rnr_retry      = l->rnr_retry;
    }
    qp->wait_clk = soft_qp_wait_clk(qp);
    qp->ack_clk  = soft_qp_ack_clk(qp);
    return 0;
}

/* A DCT's key, remote access and RNR delay; EINVAL (logged) when out of
 * range.  The responder reads them under the engine lock. */
static int soft_dct_params(soft_dev_t *dev, soft_qp_t *qp, uint64_t dc_key,
                           uint32_t access, uint8_t min_rnr_timer,
                           const char *what)
{
    const uint32_t remote = DCX_ACCESS_REMOTE_WRITE | DCX_ACCESS_REMOTE_READ |
                            DCX_ACCESS_REMOTE_ATOMIC;

    if ((access & ~remote) || (min_rnr_timer > 31)) {
        dcx_error("%s: %s: access 0x%x (allowed 0x%x) or min_rnr_timer %u "
                  "invalid",
                  dev->super.caps.name, what, access, remote, min_rnr_timer);
        return EINVAL;
    }
    qp->dc_key       = dc_key;
    qp->access       = access;
    qp->rnr_delay_us = min_rnr_timer ? soft_rnr_table[min_rnr_timer] * 10u :
                                       dev->limits.rnr_timer_us;
    return 0;
}

static int soft_dct_init(soft_dev_t *dev, soft_qp_t *qp,
                         const dcx_qp_attr_t *attr)
{
    if (attr->srq == NULL) {
        dcx_error("%s: dct create: an SRQ is mandatory", dev->super.caps.name);
        return EINVAL;
    }
    qp->srq = (soft_srq_t *)attr->srq;
    qp->cq  = attr->recv_cq ? (soft_cq_t *)attr->recv_cq : qp->srq->cq;
    qp->ext_atomic_max  = 8;
    qp->super.post_send = soft_dct_post_send;
    return soft_dct_params(dev, qp, attr->dc_key, attr->access,
                           attr->min_rnr_timer, "dct create");
}

int dcx_soft_dct_set(dcx_qp_t *qp_, uint64_t dc_key, uint32_t access,
                     uint8_t min_rnr_timer)
{
    soft_qp_t *qp   = (soft_qp_t *)qp_;
    soft_dev_t *dev = qp->dev;
    int ret;

    if (qp->super.type != DCX_QPT_DCT) {
        dcx_error("%s: qp 0x%x: dct set on a QP that is not a DCT",
                  dev->super.caps.name, qp->super.qp_num);
        return EINVAL;
    }
    soft_lock(&dev->lock);
    ret = soft_dct_params(dev, qp, dc_key, access, min_rnr_timer, "dct set");
    soft_unlock(&dev->lock);
    return ret;
}

/* Whether qp is a DCT on an SRQ without tag matching or in-place
 * receives, which the mlx5 emulation's RC and UD QPs stand on; logs what
 * was asked of one that is not. */
static int soft_qp_is_plain_dct(const soft_qp_t *qp, const char *what)
{
    if ((qp->super.type != DCX_QPT_DCT) || (qp->srq == NULL) ||
        (qp->srq->tm != NULL) || qp->srq->in_place) {
        dcx_error("%s: qp 0x%x: %s of a QP that is not a DCT on a plain SRQ",
                  qp->dev->super.caps.name, qp->super.qp_num, what);
        return 0;
    }
    return 1;
}

int dcx_soft_dct_purge(dcx_qp_t *qp_)
{
    soft_qp_t *qp   = (soft_qp_t *)qp_;
    soft_dev_t *dev = qp->dev;
    soft_cq_t *cq;
    uint32_t i, out;

    if (!soft_qp_is_plain_dct(qp, "purge")) {
        return EINVAL;
    }
    soft_lock(&dev->lock);
    cq  = qp->cq;
    out = cq->head;
    for (i = cq->head; i != cq->tail; ++i) {
        soft_cqe_t *e = &cq->q[i & (cq->size - 1)];

        if ((e->qp == NULL) && (e->tm == NULL) &&
            (e->wc.qp_num == qp->super.qp_num)) {
            continue; /* a receive of this DCT: dropped */
        }
        cq->q[out++ & (cq->size - 1)] = *e;
    }
    cq->tail = out;
    soft_unlock(&dev->lock);
    return 0;
}

int dcx_soft_dct_flush(dcx_qp_t *qp_, int on)
{
    soft_qp_t *qp   = (soft_qp_t *)qp_;
    soft_dev_t *dev = qp->dev;

    if (!soft_qp_is_plain_dct(qp, "receive queue flush")) {
        return EINVAL;
    }
    soft_lock(&dev->lock);
    if (on) {
        soft_resp_flush_dct(dev, qp);
        soft_srq_flush(qp->srq, qp);
    } else {
        soft_resp_forget_dct(dev, qp);
        soft_srq_flush(qp->srq, NULL);
    }
    soft_unlock(&dev->lock);
    return 0;
}

static void soft_qp_free(soft_qp_t *qp)
{
    free(qp->sq);
    free(qp->sge_pool);
    free(qp->inl_pool);
    free(qp);
}

int soft_qp_create_plain(dcx_pd_t *pd, const dcx_qp_attr_t *attr,
                         dcx_qp_t **qp_p)
{
    soft_dev_t *dev = soft_dev(pd->dev);
    soft_qp_t *qp;
    int ret;

    if ((attr->type != DCX_QPT_DCI) && (attr->type != DCX_QPT_DCT)) {
        dcx_error("%s: qp create: type %d not supported", dev->super.caps.name,
                  (int)attr->type);
        return EINVAL;
    }
    qp = calloc(1, sizeof(*qp));
    if (qp == NULL) {
        dcx_error("%s: qp create: out of memory", dev->super.caps.name);
        return ENOMEM;
    }
    qp->dev        = dev;
    qp->super.dev  = pd->dev;
    qp->super.pd   = pd;
    qp->super.type = attr->type;

    soft_lock(&dev->lock);
    ret = (attr->type == DCX_QPT_DCI) ? soft_dci_init(dev, qp, attr) :
                                        soft_dct_init(dev, qp, attr);
    if (ret == 0) {
        ret = soft_qp_alloc_num(dev, qp);
        if (ret != 0) {
            dcx_error("%s: qp create: out of QP numbers", dev->super.caps.name);
        }
    }
    if (ret != 0) {
        soft_unlock(&dev->lock);
        soft_qp_free(qp);
        return ret;
    }
    qp->gen    = ++dev->qp_gen;
    qp->wc_qpn = qp->super.qp_num;
    if (attr->type == DCX_QPT_DCI) {
        __atomic_store_n(&qp->super.state, DCX_QPS_RTS, __ATOMIC_RELAXED);
        qp->next_dci = dev->dcis;
        dev->dcis    = qp;
        dev->num_dcis++;
    } else {
        __atomic_store_n(&qp->super.state, DCX_QPS_RTR, __ATOMIC_RELAXED);
        qp->srq->refs++;
        soft_direct_dct_publish(dev, qp, 1);
    }
    qp->cq->refs++;
    dev->num_objs++;
    soft_unlock(&dev->lock);
    *qp_p = &qp->super;
    return 0;
}

int soft_qp_destroy_plain(dcx_qp_t *qp_)
{
    soft_qp_t *qp   = (soft_qp_t *)qp_;
    soft_dev_t *dev = qp->dev;
    soft_qp_t **pp;

    soft_lock(&dev->lock);
    dev->qps[qp->super.qp_num - dev->qpn_base] = NULL;
    if (qp->super.type == DCX_QPT_DCI) {
        uint32_t idx;

        for (idx = qp->sq_comp; idx != qp->sq_head; ++idx) {
            soft_wqe_release(qp, soft_wqe(qp, idx));
        }
        soft_engine_deactivate(qp);
        for (pp = &dev->dcis; *pp != NULL; pp = &(*pp)->next_dci) {
            if (*pp == qp) {
                *pp = qp->next_dci;
                break;
            }
        }
        dev->num_dcis--;
        soft_cq_purge(qp->cq, qp, 0);
    } else {
        soft_direct_dct_publish(dev, qp, 0);
        soft_resp_forget_dct(dev, qp);
        qp->srq->refs--;
    }
    qp->cq->refs--;
    dev->num_objs--;
    soft_unlock(&dev->lock);
    soft_qp_free(qp);
    return 0;
}

int soft_qp_set_error_plain(dcx_qp_t *qp_)
{
    soft_qp_t *qp   = (soft_qp_t *)qp_;
    soft_dev_t *dev = qp->dev;

    if (qp->super.type != DCX_QPT_DCI) {
        dcx_error("%s: qp 0x%x set error: not a DCI", dev->super.caps.name,
                  qp->super.qp_num);
        return EINVAL;
    }
    soft_lock(&dev->lock);
    soft_qp_to_error(qp, "requested by the user");
    soft_unlock(&dev->lock);
    return 0;
}

int soft_qp_recover_plain(dcx_qp_t *qp_)
{
    soft_qp_t *qp   = (soft_qp_t *)qp_;
    soft_dev_t *dev = qp->dev;

    soft_lock(&dev->lock);
    if ((qp->super.type != DCX_QPT_DCI) || (qp->super.state != DCX_QPS_ERR)) {
        soft_unlock(&dev->lock);
        dcx_error("%s: qp 0x%x recover: not a DCI in error (state %d)",
                  dev->super.caps.name, qp->super.qp_num, (int)qp->super.state);
        return EINVAL;
    }
    soft_qp_reset(qp);
    soft_unlock(&dev->lock);
    return 0;
}

int soft_qp_set_timers_plain(dcx_qp_t *qp_, uint8_t timeout, uint8_t retry_cnt,
                             uint8_t rnr_retry, uint32_t max_rd_atomic)
{
    soft_qp_t *qp              = (soft_qp_t *)qp_;
    soft_dev_t *dev            = qp->dev;
    const dcx_soft_limits_t *l = &dev->limits;

    if ((qp->super.type != DCX_QPT_DCI) || (timeout > 31) || (retry_cnt > 7) ||
        (rnr_retry > 7) || (max_rd_atomic > l->max_rd_atomic)) {
        dcx_error("%s: qp 0x%x set timers: not a DCI, or timeout %u, "
                  "retry_cnt %u, rnr_retry %u, max_rd_atomic %u/%u invalid",
                  dev->super.caps.name, qp->super.qp_num, timeout, retry_cnt,
                  rnr_retry, max_rd_atomic, l->max_rd_atomic);
        return EINVAL;
    }
    soft_lock(&dev->lock);
    if (timeout != 0) {
        qp->ack_timeout_ns = 4096ull << timeout;
        qp->retry_cnt      = retry_cnt;
        qp->rnr_retry      = rnr_retry;
    } else {
        qp->ack_timeout_ns = (uint64_t)l->ack_timeout_us * 1000ull;
        qp->retry_cnt      = l->retry_cnt;
        qp->rnr_retry      = l->rnr_retry;
    }
    if (max_rd_atomic != 0) {
        qp->super.max_rd_atomic = max_rd_atomic;
    }
    qp->wait_clk = soft_qp_wait_clk(qp);
    qp->ack_clk  = soft_qp_ack_clk(qp);
    soft_unlock(&dev->lock);
    return 0;
}
