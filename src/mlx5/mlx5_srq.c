/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: shared receive queues, posted one WR or a chained list
 * at a time through libmlx5, or written in memory (mlx5_raw_srq.c) when
 * their CQ is polled there.  A tag-matching SRQ is made of DEVX objects
 * (mlx5_xrq.c).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mlx5/mlx5_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int dcx_mlx5_srq_post_recv(dcx_srq_t *super, uint64_t wr_id,
                                  const dcx_sge_t *sg_list, unsigned num_sge)
{
    dcx_mlx5_srq_t *srq = (dcx_mlx5_srq_t *)super;
    struct ibv_sge sge[DCX_MLX5_MAX_SGE];
    struct ibv_recv_wr wr, *bad;
    unsigned i;
    int ret;

    if (num_sge > super->max_sge) {
        dcx_error("%s: srq %u: %u sge, at most %u", super->dev->caps.name,
                  srq->srq->handle, num_sge, super->max_sge);
        return EINVAL;
    }
    for (i = 0; i < num_sge; ++i) {
        sge[i].addr   = sg_list[i].addr;
        sge[i].length = sg_list[i].length;
        sge[i].lkey   = sg_list[i].lkey;
    }
    wr.wr_id   = wr_id;
    wr.next    = NULL;
    wr.sg_list = sge;
    wr.num_sge = (int)num_sge;
    ret        = ibv_post_srq_recv(srq->srq, &wr, &bad);
    if (ret == ENOMEM) {
        /* full: normal back-pressure, the caller retries later */
        dcx_trace("%s: srq %u: full", super->dev->caps.name, srq->srq->handle);
    } else if (ret != 0) {
        dcx_error("%s: srq %u: ibv_post_srq_recv failed: %s",
                  super->dev->caps.name, srq->srq->handle, strerror(ret));
    }
    return ret;
}

/* Single-buffer receives chained into one ibv_post_srq_recv per chunk, so
 * that the provider writes the WQEs and rings the doorbell once. */
static int dcx_mlx5_srq_post_recv_list(dcx_srq_t *super, const dcx_recv_t *list,
                                       unsigned count, uint32_t length,
                                       unsigned *posted_p)
{
    enum {
        CHUNK = 32
    };
    dcx_mlx5_srq_t *srq = (dcx_mlx5_srq_t *)super;
    struct ibv_recv_wr wr[CHUNK], *bad;
    struct ibv_sge sge[CHUNK];
    unsigned done, n, i;
    int ret = 0;

    for (done = 0; done < count; done += n) {
        n = (count - done < CHUNK) ? (count - done) : CHUNK;
        for (i = 0; i < n; ++i) {
            sge[i].addr   = list[done + i].addr;
            sge[i].length = length;
            sge[i].lkey   = list[done + i].lkey;
            wr[i].wr_id   = list[done + i].wr_id;
            wr[i].sg_list = &sge[i];
            wr[i].num_sge = 1;
            wr[i].next    = (i + 1 < n) ? &wr[i + 1] : NULL;
        }
        bad = NULL;
        ret = ibv_post_srq_recv(srq->srq, wr, &bad);
        if (ret != 0) {
            /* the provider posted the WRs before the one it returns */
            done += (bad != NULL) ? (unsigned)(bad - wr) : 0;
            break;
        }
    }
    *posted_p = done;
    if (ret == ENOMEM) {
        dcx_trace("%s: srq %u: full", super->dev->caps.name, srq->srq->handle);
    } else if (ret != 0) {
        dcx_error("%s: srq %u: ibv_post_srq_recv failed at receive %u of %u: "
                  "%s",
                  super->dev->caps.name, srq->srq->handle, done, count,
                  strerror(ret));
    }
    return ret;
}

int dcx_mlx5_srq_create(dcx_pd_t *pd, const dcx_srq_attr_t *attr,
                        dcx_srq_t **srq_p)
{
    const char *name = pd->dev->caps.name;
    struct ibv_srq_init_attr init;
    dcx_mlx5_srq_t *srq;
    int ret;

    if ((attr->type != DCX_SRQ_BASIC) && (attr->type != DCX_SRQ_TM)) {
        dcx_error("%s: srq: unknown type %u", name, attr->type);
        return EINVAL;
    }
    if ((attr->type == DCX_SRQ_TM) && !(pd->dev->caps.flags & DCX_CAP_TM)) {
        dcx_error("%s: srq: the device has no tag matching (it needs DEVX, "
                  "raw queues and an InfiniBand port)",
                  name);
        return EOPNOTSUPP;
    }
    if ((attr->max_sge == 0) || (attr->max_sge > DCX_MLX5_MAX_SGE) ||
        (attr->max_sge > pd->dev->caps.max_recv_sge) || (attr->max_wr == 0) ||
        (attr->max_wr > pd->dev->caps.max_srq_wr) || (attr->cq == NULL)) {
        dcx_error("%s: srq: invalid attributes (max_wr %u, max_sge %u, "
                  "cq %p)",
                  name, attr->max_wr, attr->max_sge, (void *)attr->cq);
        return EINVAL;
    }
    srq = calloc(1, sizeof(*srq));
    if (srq == NULL) {
        dcx_error("%s: srq: out of memory", name);
        return ENOMEM;
    }
    if (attr->type == DCX_SRQ_TM) {
        /* DC tag matching: DEVX objects (mlx5_xrq.c) on a CQ polled in
         * memory */
        srq->cq            = (dcx_mlx5_cq_t *)attr->cq;
        srq->super.dev     = pd->dev;
        srq->super.pd      = pd;
        srq->super.max_sge = attr->max_sge;
        ret                = dcx_mlx5_cq_use(srq->cq, true, "tm srq");
        ret                = (ret != 0) ? ret : dcx_mlx5_xrq_create(srq, attr);
        if (ret != 0) {
            free(srq);
            return ret;
        }
        *srq_p = &srq->super;
        return 0;
    }
    memset(&init, 0, sizeof(init));
    init.attr.max_wr  = attr->max_wr;
    init.attr.max_sge = attr->max_sge;
    srq->srq          = ibv_create_srq(((dcx_mlx5_pd_t *)pd)->pd, &init);
    if (srq->srq == NULL) {
        ret = errno ? errno : ENOMEM;
        dcx_error("%s: srq: ibv_create_srq(max_wr %u, max_sge %u) failed: "
                  "%s",
                  name, attr->max_wr, attr->max_sge, strerror(ret));
        free(srq);
        return ret;
    }
    srq->cq                   = (dcx_mlx5_cq_t *)attr->cq;
    srq->super.dev            = pd->dev;
    srq->super.pd             = pd;
    srq->super.max_wr         = init.attr.max_wr;
    srq->super.max_sge        = attr->max_sge;
    srq->super.post_recv      = dcx_mlx5_srq_post_recv;
    srq->super.post_recv_list = dcx_mlx5_srq_post_recv_list;
    srq->super.tm_post        = dcx_srq_tm_post_none;
    /* written in memory where its CQ is polled there (mlx5_raw_cq.c) */
    if (dcx_mlx5_dev(pd->dev)->raw && (srq->cq->mode != DCX_MLX5_CQ_VERBS)) {
        ret = dcx_mlx5_cq_use(srq->cq, true, "srq");
        ret = (ret != 0) ? ret : dcx_mlx5_raw_srq_init(srq);
        if (ret != 0) {
            ibv_destroy_srq(srq->srq);
            free(srq);
            return ret;
        }
        srq->raw->in_place = (attr->flags & DCX_SRQ_F_IN_PLACE) != 0;
    }
    *srq_p = &srq->super;
    return 0;
}

int dcx_mlx5_srq_destroy(dcx_srq_t *super)
{
    dcx_mlx5_srq_t *srq = (dcx_mlx5_srq_t *)super;
    int ret;

    if (srq->xrq != NULL) {
        ret = dcx_mlx5_xrq_destroy(srq); /* logged */
        if (ret != 0) {
            return ret;
        }
    } else {
        ret = ibv_destroy_srq(srq->srq);
        if (ret != 0) {
            dcx_error("%s: srq: ibv_destroy_srq failed: %s",
                      super->dev->caps.name, strerror(ret));
            return ret;
        }
    }
    if ((srq->raw_cq != NULL) && (srq->raw_cq->raw->srq == srq)) {
        srq->raw_cq->raw->srq = NULL;
    }
    dcx_mlx5_raw_srq_free(srq);
    free(srq);
    return 0;
}
