/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: shared receive queues (basic type).
 *
 * A soft SRQ holds the receives; their completions land on the receive CQ
 * of the DCT that consumes them.  max_wr and max_sge are checked against
 * the device's limits and written back to the init attributes, as the
 * kernel reports what it allocated.  Not modelled (EOPNOTSUPP): tag
 * matching and XRC SRQs, the SRQ limit event and resizing.
 */
#include "emu/emu_devx.h"
#include "emu/emu_qbuf.h"
#include "emu/emu_raw.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define EMU_SRQ_MAX_SGE 30

emu_srq_t *emu_srq_new(struct ibv_pd *ibpd, struct ibv_srq_init_attr *attr,
                       const dcx_srq_attr_t *tm)
{
    emu_pd_t *pd = emu_pd(ibpd);
    const dcx_dev_caps_t *caps;
    dcx_srq_attr_t sattr;
    const char *name;
    emu_ctx_t *ectx;
    emu_srq_t *srq;
    int ret;

    ectx = emu_ctx_check(ibpd->context, "create_srq");
    if (ectx == NULL) {
        return NULL;
    }
    name = ibpd->context->device->name;
    caps = dcx_dev_caps(ectx->dev->soft);
    if ((attr->attr.max_wr > caps->max_srq_wr) ||
        (attr->attr.max_sge > caps->max_recv_sge) ||
        (attr->attr.max_sge > EMU_SRQ_MAX_SGE) ||
        (attr->attr.srq_limit > attr->attr.max_wr)) {
        emu_error("%s: create_srq: max_wr %u (<= %u), max_sge %u (<= %u) or "
                  "srq_limit %u invalid",
                  name, attr->attr.max_wr, caps->max_srq_wr, attr->attr.max_sge,
                  caps->max_recv_sge, attr->attr.srq_limit);
        errno = EINVAL;
        return NULL;
    }
    if (attr->attr.srq_limit != 0) {
        emu_error("%s: create_srq: the SRQ limit event is not modelled", name);
        errno = EOPNOTSUPP;
        return NULL;
    }
    srq = calloc(1, sizeof(*srq));
    if (srq == NULL) {
        emu_error("%s: create_srq: out of memory", name);
        errno = ENOMEM;
        return NULL;
    }
    memset(&sattr, 0, sizeof(sattr));
    if (tm != NULL) {
        sattr = *tm; /* type, CQ and list sizes */
    } else {
        sattr.type = DCX_SRQ_BASIC;
        sattr.cq   = ectx->dev->srq_cq;
    }
    sattr.max_wr  = (attr->attr.max_wr > 0) ? attr->attr.max_wr : 1;
    sattr.max_sge = (attr->attr.max_sge > 0) ? attr->attr.max_sge : 1;
    ret           = dcx_srq_create(pd->soft, &sattr, &srq->soft);
    if (ret != 0) {
        free(srq);
        errno = ret;
        return NULL;
    }
    srq->srqn = ectx->dev->qpn_base +
                (__atomic_fetch_add(&ectx->dev->srq_seq, 1, __ATOMIC_RELAXED) %
                 EMU_QPN_SPAN);
    srq->pd              = pd;
    srq->max_wr          = srq->soft->max_wr;
    srq->max_sge         = srq->soft->max_sge;
    srq->srq.context     = ibpd->context;
    srq->srq.srq_context = attr->srq_context;
    srq->srq.pd          = ibpd;
    srq->srq.handle      = (uint32_t)(uintptr_t)srq;
    pthread_mutex_init(&srq->srq.mutex, NULL);
    pthread_cond_init(&srq->srq.cond, NULL);
    attr->attr.max_wr  = srq->max_wr;
    attr->attr.max_sge = srq->max_sge;
    __atomic_add_fetch(&pd->refs, 1, __ATOMIC_RELEASE);
    emu_num_add(ectx->dev, EMU_NUM_SRQ, srq->srqn, srq);
    return srq;
}

/* An application's SRQ placed as MLX_SRQ_ALLOC_TYPE asks (a QP's own
 * receive queue goes with its QP); a refusal destroys it */
static struct ibv_srq *emu_srq_place(emu_srq_t *srq)
{
    int ret;

    if (srq == NULL) {
        return NULL;
    }
    ret = emu_qbuf_open(srq->srq.context->device->name, "create_srq",
                        EMU_QBUF_SRQ, 0, emu_dv_srq_bytes(srq), &srq->qbuf);
    if (ret != 0) {
        ibv_destroy_srq(&srq->srq);
        errno = ret;
        return NULL;
    }
    return &srq->srq;
}

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
                               struct ibv_srq_init_attr *srq_init_attr)
{
    emu_srq_t *srq;

    if ((pd == NULL) || (srq_init_attr == NULL)) {
        emu_error("create_srq: no PD or attributes");
        errno = EINVAL;
        return NULL;
    }
    srq = emu_srq_new(pd, srq_init_attr, NULL);
    return emu_srq_place(srq);
}

static struct ibv_srq *emu_create_srq_ex(struct ibv_context *context,
                                         struct ibv_srq_init_attr_ex *attr)
{
    struct ibv_srq_init_attr basic;
    emu_srq_t *srq;

    if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || (attr->pd == NULL) ||
        (attr->pd->context != context)) {
        emu_error("%s: create_srq_ex: a PD of this context is required",
                  context->device->name);
        errno = EINVAL;
        return NULL;
    }
    if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
        (attr->srq_type != IBV_SRQT_BASIC)) {
        emu_error("%s: create_srq_ex: SRQ type %d is not modelled (basic "
                  "SRQs only)",
                  context->device->name, (int)attr->srq_type);
        errno = EOPNOTSUPP;
        return NULL;
    }
    if (attr->comp_mask & ~(IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD)) {
        emu_error("%s: create_srq_ex: comp_mask 0x%x has attributes of SRQ "
                  "types that are not modelled",
                  context->device->name, attr->comp_mask);
        errno = EOPNOTSUPP;
        return NULL;
    }
    basic.srq_context = attr->srq_context;
    basic.attr        = attr->attr;
    srq               = emu_srq_new(attr->pd, &basic, NULL);
    if (emu_srq_place(srq) == NULL) {
        return NULL;
    }
    attr->attr = basic.attr;
    return &srq->srq;
}

static int emu_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
                             struct ibv_recv_wr **bad_wr)
{
    emu_srq_t *srq = (emu_srq_t *)ibsrq;
    dcx_sge_t sge[EMU_SRQ_MAX_SGE];
    int i, ret = 0;

    for (; wr != NULL; wr = wr->next) {
        if ((wr->num_sge < 0) || ((uint32_t)wr->num_sge > srq->max_sge)) {
            emu_error("%s: post_srq_recv: %d sge (max %u)",
                      ibsrq->context->device->name, wr->num_sge, srq->max_sge);
            ret = EINVAL;
            break;
        }
        for (i = 0; i < wr->num_sge; ++i) {
            sge[i].addr   = wr->sg_list[i].addr;
            sge[i].length = wr->sg_list[i].length;
            sge[i].lkey   = wr->sg_list[i].lkey;
        }
        ret = dcx_srq_post_recv(srq->soft, wr->wr_id, sge,
                                (unsigned)wr->num_sge);
        if (ret != 0) {
            break; /* ENOMEM (full) is logged by the soft device */
        }
    }
    if (ret != 0) {
        *bad_wr = wr;
    }
    return ret;
}

int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
    emu_srq_t *srq = (emu_srq_t *)ibsrq;
    int ret;

    if ((__atomic_load_n(&srq->refs, __ATOMIC_ACQUIRE) == 0) &&
        (srq->raw != NULL)) {
        /* the engine lets go of its memory first */
        pthread_mutex_lock(&emu_raw_lock);
        emu_raw_srq_free(srq);
        pthread_mutex_unlock(&emu_raw_lock);
    }
    if (__atomic_load_n(&srq->refs, __ATOMIC_ACQUIRE) != 0) {
        emu_error("%s: destroy_srq: %u DCTs still use it",
                  ibsrq->context->device->name, srq->refs);
        return EBUSY;
    }
    ret = dcx_srq_destroy(srq->soft);
    if (ret != 0) {
        return ret;
    }
    /* the engine looks an XRQ up by number as it writes its CQEs */
    pthread_mutex_lock(&emu_raw_lock);
    emu_num_del(emu_ctx(ibsrq->context)->dev, EMU_NUM_SRQ, srq->srqn, srq);
    emu_xrq_free(srq);
    pthread_mutex_unlock(&emu_raw_lock);
    __atomic_sub_fetch(&srq->pd->refs, 1, __ATOMIC_RELEASE);
    pthread_mutex_destroy(&ibsrq->mutex);
    pthread_cond_destroy(&ibsrq->cond);
    emu_qbuf_close(srq->qbuf);
    free(srq);
    return 0;
}

int ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *srq_attr)
{
    emu_srq_t *srq = (emu_srq_t *)ibsrq;

    srq_attr->max_wr    = srq->max_wr;
    srq_attr->max_sge   = srq->max_sge;
    srq_attr->srq_limit = srq->srq_limit;
    return 0;
}

int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
                   int srq_attr_mask)
{
    emu_error("%s: modify_srq (mask 0x%x): neither resizing nor the limit "
              "event is modelled",
              srq->context->device->name, srq_attr_mask);
    return EOPNOTSUPP;
}

/* As libmlx5, for an SRQ of any type: its number */
static int emu_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
    *srq_num = ((emu_srq_t *)ibsrq)->srqn;
    return 0;
}

void emu_ctx_set_srq_ops(struct verbs_context *vctx)
{
    vctx->get_srq_num               = emu_get_srq_num;
    vctx->create_srq_ex             = emu_create_srq_ex;
    vctx->context.ops.post_srq_recv = emu_post_srq_recv;
}
