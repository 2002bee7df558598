/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: mlx5dv_init_obj, which gives an application the
 * memory of its queues (emu_raw.h), and the attach of the queues a DEVX
 * QP or RMP brings in the application's memory.
 *
 * The layout is libmlx5's: a send queue of 64-byte basic blocks, as many
 * as a power of 2 of the queue's size in bytes; a receive queue of WQEs
 * of a power-of-2 stride (16 bytes a scatter entry); an SRQ of WQEs led
 * by a next segment, linked in order, head 0 and tail the last; a CQ of
 * a power of 2 of CQEs above the requested count, each 64 bytes (or 128
 * through mlx5dv_create_cq), marked invalid; doorbell records of two
 * 32-bit words; a UAR page per context whose BlueFlame registers are at
 * 0x800 and 0x900, and the CQ doorbell at 0x20.  Asking twice gives the
 * same memory.  Once a QP's, CQ's or SRQ's memory is given out the device
 * engine serves it (emu_raw.c) and the verbs post and poll calls on it
 * are refused: the application posts and polls through the memory.
 *
 * The queues (not the doorbell records, which libmlx5 keeps apart too)
 * are cut from the object's huge-page segment when its creation got one
 * (emu_qbuf.h, sized by emu_dv_*_bytes of emu_raw.h at creation), else
 * from the heap.
 */
#include "emu/emu_dv.h"
#include "emu/emu_qbuf.h"
#include "emu/emu_raw.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define EMU_DV_OBJS                                                   \
    (MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ | MLX5DV_OBJ_SRQ | MLX5DV_OBJ_AH | \
     MLX5DV_OBJ_PD)

/* Zeroed, page-aligned queue memory, from qb's segment when there is one
 * (NULL, logged, when there is no memory) */
static void *emu_dv_alloc(emu_qbuf_t *qb, size_t len, const char *what)
{
    void *p = emu_qbuf_take(qb, len);

    if (p != NULL) {
        return p;
    }
    if (qb != NULL) {
        emu_error("mlx5dv_init_obj: %s of %zu bytes is beyond its huge-page "
                  "segment of %zu",
                  what, len, qb->len);
        return NULL;
    }
    if ((posix_memalign(&p, EMU_RAW_PAGE, len) != 0) || (p == NULL)) {
        emu_error("mlx5dv_init_obj: no memory for %s (%zu bytes)", what, len);
        return NULL;
    }
    memset(p, 0, len);
    return p;
}

/* A receive queue's memory: an SRQ's (linked) or a QP's own */
static struct emu_raw_rq *emu_dv_rq(emu_qbuf_t *qb, emu_srq_t *srq,
                                    uint32_t wqes, bool linked,
                                    volatile __be32 *dbrec)
{
    struct emu_raw_rq *rq = calloc(1, sizeof(*rq));
    struct mlx5_wqe_srq_next_seg *next;
    uint32_t i, seg = linked ? 16 : 0;

    if (rq == NULL) {
        return NULL;
    }
    rq->run     = emu_raw_rq_run;
    rq->wqe_cnt = emu_dv_pow2(wqes);
    rq->max_sge = srq->max_sge;
    rq->stride  = emu_dv_rq_stride(rq->max_sge, linked);
    rq->linked  = linked;
    rq->hdr     = seg;
    rq->dbrec   = dbrec;
    /* an SRQ's responders may scatter into CQEs (emu_raw_rq.c) */
    rq->keep    = linked ? calloc(rq->wqe_cnt, sizeof(*rq->keep)) : NULL;
    rq->buf     = ((rq->keep != NULL) || !linked) ?
                      emu_dv_alloc(qb, (size_t)rq->wqe_cnt * rq->stride, "an RQ") :
                      NULL;
    if (rq->buf == NULL) {
        free(rq->keep);
        free(rq);
        return NULL;
    }
    for (i = 0; linked && (i < rq->wqe_cnt); ++i) {
        next                 = (void *)(rq->buf + (size_t)i * rq->stride);
        next->next_wqe_index = htobe16((uint16_t)((i + 1) & (rq->wqe_cnt - 1)));
    }
    return rq;
}

/* A UD QP's GRH slots, one per basic block of its raw send queue */
static int emu_dv_ud_slots(emu_qp_t *qp, uint32_t wqe_cnt)
{
    size_t len = (size_t)wqe_cnt * 40;
    dcx_mr_t *mr;
    uint8_t *buf;
    int ret;

    if (wqe_cnt <= qp->max_send_wr) {
        return 0; /* the verbs path's are enough */
    }
    buf = calloc(1, len);
    if (buf == NULL) {
        return ENOMEM;
    }
    ret = dcx_mr_reg(qp->pd->soft, buf, len, DCX_ACCESS_LOCAL_WRITE, &mr);
    if (ret != 0) {
        free(buf);
        return ret;
    }
    dcx_mr_dereg(qp->ud_grh_mr);
    free(qp->ud_grh);
    qp->ud_grh    = buf;
    qp->ud_grh_mr = mr;
    return 0;
}

static int emu_dv_qp_make(emu_qp_t *qp)
{
    struct emu_raw_sq *sq;
    volatile __be32 *db;
    int ret;

    sq = calloc(1, sizeof(*sq));
    db = emu_dv_alloc(NULL, 64, "a doorbell record");
    if ((sq == NULL) || (db == NULL)) {
        free(sq);
        free((void *)db);
        return ENOMEM;
    }
    sq->run     = emu_raw_sq_run;
    sq->wqe_cnt = qp->sq_wqe_cnt;
    sq->dbrec   = db;
    sq->buf     = emu_dv_alloc(qp->qbuf, (size_t)sq->wqe_cnt * MLX5_SEND_WQE_BB,
                               "an SQ");
    sq->uar     = emu_raw_uar(qp->ctx);
    ret         = ((sq->buf == NULL) || (sq->uar == NULL)) ? ENOMEM : 0;
    if ((ret == 0) && (qp->kind == EMU_QP_UD)) {
        ret = emu_dv_ud_slots(qp, sq->wqe_cnt);
    }
    if ((ret == 0) && (qp->rq != NULL) && (qp->rq_max_wr > 0) &&
        (qp->rq->raw == NULL)) {
        qp->rq->raw = emu_dv_rq(qp->qbuf, qp->rq, qp->rq_max_wr, false,
                                &db[MLX5_RCV_DBR]);
        ret         = (qp->rq->raw == NULL) ? ENOMEM : 0;
        if ((ret == 0) && (qp->kind == EMU_QP_UD)) {
            qp->rq->raw->grh = calloc(qp->rq->raw->wqe_cnt, sizeof(uint64_t));
            ret              = (qp->rq->raw->grh == NULL) ? ENOMEM : 0;
        }
        if (ret == 0) {
            ret = emu_raw_add_rq(qp->rq);
        }
    }
    qp->raw_sq = sq;
    if (ret == 0) {
        ret = emu_raw_add_sq(qp);
    }
    if (ret != 0) {
        emu_raw_qp_free(qp);
    }
    return ret;
}

static int emu_dv_qp(struct mlx5dv_qp *out, struct ibv_qp *ibqp)
{
    emu_qp_t *qp = emu_qp(ibqp);
    int ret      = 0;

    if ((qp->kind == EMU_QP_DCT) || (qp->sq_wqe_cnt == 0)) {
        emu_error("%s: mlx5dv_init_obj: qp 0x%x has no send queue to give "
                  "(a DCT)",
                  ibqp->context->device->name, ibqp->qp_num);
        return EINVAL;
    }
    if (qp->raw_sq == NULL) {
        ret = emu_dv_qp_make(qp);
        if (ret != 0) {
            return ret;
        }
    }
    out->dbrec      = (__be32 *)qp->raw_sq->dbrec;
    out->sq.buf     = qp->raw_sq->buf;
    out->sq.wqe_cnt = qp->raw_sq->wqe_cnt;
    out->sq.stride  = MLX5_SEND_WQE_BB;
    if ((qp->rq != NULL) && (qp->rq->raw != NULL) && (qp->rq_max_wr > 0)) {
        out->rq.buf     = qp->rq->raw->buf;
        out->rq.wqe_cnt = qp->rq->raw->wqe_cnt;
        out->rq.stride  = qp->rq->raw->stride;
    } else {
        out->rq.buf     = NULL;
        out->rq.wqe_cnt = 0;
        out->rq.stride  = 0;
    }
    out->bf.reg          = qp->raw_sq->uar + EMU_RAW_BF_OFF;
    out->bf.size         = EMU_RAW_BF_SIZE;
    out->comp_mask       = 0; /* no UAR mmap offset, TIR/TIS or handles */
    out->uar_mmap_offset = 0;
    return 0;
}

static int emu_dv_cq(struct mlx5dv_cq *out, struct ibv_cq *ibcq)
{
    emu_cq_t *cq          = emu_cq(ibcq);
    struct emu_raw_cq *rc = cq->raw;
    struct mlx5_cqe64 *cqe;
    uint32_t i;
    int ret;

    if (rc == NULL) {
        rc = calloc(1, sizeof(*rc));
        if (rc == NULL) {
            return ENOMEM;
        }
        rc->cqe_cnt  = emu_dv_pow2((uint32_t)ibcq->cqe + 1);
        rc->cqe_size = cq->cqe_size ? cq->cqe_size : 64;
        rc->buf   = emu_dv_alloc(cq->qbuf, (size_t)rc->cqe_cnt * rc->cqe_size,
                                 "a CQ");
        rc->dbrec = emu_dv_alloc(NULL, 64, "a doorbell record");
        rc->uar   = emu_raw_uar(emu_ctx(ibcq->context));
        if ((rc->buf == NULL) || (rc->dbrec == NULL) || (rc->uar == NULL)) {
            if (!emu_qbuf_owns(cq->qbuf, rc->buf)) {
                free(rc->buf);
            }
            emu_qbuf_reset(cq->qbuf);
            free((void *)rc->dbrec);
            free(rc);
            return ENOMEM;
        }
        for (i = 0; i < rc->cqe_cnt; ++i) {
            cqe = (void *)(rc->buf + (size_t)i * rc->cqe_size + rc->cqe_size -
                           sizeof(*cqe));
            cqe->op_own = MLX5_CQE_INVALID << 4;
        }
        emu_raw_cq_init(rc);
        cq->raw = rc;
        ret     = emu_raw_add_cq(cq);
        if (ret != 0) {
            emu_raw_cq_free(cq);
            return ret;
        }
    }
    out->buf       = rc->buf;
    out->dbrec     = (__be32 *)rc->dbrec;
    out->cqe_cnt   = rc->cqe_cnt;
    out->cqe_size  = rc->cqe_size;
    out->cq_uar    = rc->uar;
    out->cqn       = cq->cqn;
    out->comp_mask = 0;
    return 0;
}

static int emu_dv_srq(struct mlx5dv_srq *out, struct ibv_srq *ibsrq)
{
    emu_srq_t *srq = (emu_srq_t *)ibsrq;
    volatile __be32 *db;
    int ret;

    if (srq->raw == NULL) {
        db = emu_dv_alloc(NULL, 64, "a doorbell record");
        if (db == NULL) {
            return ENOMEM;
        }
        srq->raw = emu_dv_rq(srq->qbuf, srq, srq->max_wr + 1, true, db);
        if (srq->raw == NULL) {
            free((void *)db);
            return ENOMEM;
        }
        srq->raw_db = db;
        ret         = emu_raw_add_rq(srq);
        if (ret != 0) {
            emu_raw_srq_free(srq);
            return ret;
        }
    }
    out->buf    = srq->raw->buf;
    out->dbrec  = (__be32 *)srq->raw->dbrec;
    out->stride = srq->raw->stride;
    out->head   = 0;
    out->tail   = srq->raw->wqe_cnt - 1;
    if (out->comp_mask & MLX5DV_SRQ_MASK_SRQN) {
        out->srqn      = srq->srqn;
        out->comp_mask = MLX5DV_SRQ_MASK_SRQN;
    } else {
        out->comp_mask = 0;
    }
    return 0;
}

int dcx_emu_mlx5dv_init_obj(struct mlx5dv_obj *obj, uint64_t obj_type)
{
    int ret = 0;

    if (obj_type & ~(uint64_t)EMU_DV_OBJS) {
        emu_error("mlx5dv_init_obj: object types 0x%llx are not modelled "
                  "(RWQ, DM)",
                  (unsigned long long)(obj_type & ~(uint64_t)EMU_DV_OBJS));
        return EOPNOTSUPP;
    }
/* an object asked for as _type, missing or not of the emulation */
#define EMU_DV_BAD(_type, _o)                          \
    ((obj_type & (_type)) &&                           \
     ((obj->_o.in == NULL) || (obj->_o.out == NULL) || \
      (emu_ctx_check(obj->_o.in->context, "mlx5dv_init_obj") == NULL)))
    if (EMU_DV_BAD(MLX5DV_OBJ_QP, qp) || EMU_DV_BAD(MLX5DV_OBJ_CQ, cq) ||
        EMU_DV_BAD(MLX5DV_OBJ_SRQ, srq) || EMU_DV_BAD(MLX5DV_OBJ_AH, ah) ||
        EMU_DV_BAD(MLX5DV_OBJ_PD, pd)) {
        emu_error("mlx5dv_init_obj: an object asked for (types 0x%llx) is "
                  "missing or not of the emulation",
                  (unsigned long long)obj_type);
        return EINVAL;
    }
    pthread_mutex_lock(&emu_raw_lock);
    if ((ret == 0) && (obj_type & MLX5DV_OBJ_QP)) {
        ret = emu_dv_qp(obj->qp.out, obj->qp.in);
    }
    if ((ret == 0) && (obj_type & MLX5DV_OBJ_CQ)) {
        ret = emu_dv_cq(obj->cq.out, obj->cq.in);
    }
    if ((ret == 0) && (obj_type & MLX5DV_OBJ_SRQ)) {
        ret = emu_dv_srq(obj->srq.out, obj->srq.in);
    }
    if ((ret == 0) && (obj_type & MLX5DV_OBJ_AH)) {
        obj->ah.out->av        = &((emu_ah_t *)obj->ah.in)->av;
        obj->ah.out->comp_mask = 0;
    }
    if ((ret == 0) && (obj_type & MLX5DV_OBJ_PD)) {
        obj->pd.out->pdn       = emu_pd(obj->pd.in)->pdn;
        obj->pd.out->comp_mask = 0;
    }
    pthread_mutex_unlock(&emu_raw_lock);
    return ret;
}

int emu_raw_srq_attach(emu_srq_t *srq, uint8_t *buf, uint32_t wqe_cnt,
                       uint32_t stride, bool linked, volatile __be32 *dbrec)
{
    struct emu_raw_rq *rq = calloc(1, sizeof(*rq));
    int ret;

    if (rq == NULL) {
        return ENOMEM;
    }
    rq->run     = emu_raw_rq_run;
    rq->ext     = true;
    rq->buf     = buf;
    rq->wqe_cnt = wqe_cnt;
    rq->stride  = stride;
    rq->hdr     = sizeof(struct mlx5_wqe_srq_next_seg);
    rq->max_sge = (stride - rq->hdr) / sizeof(struct mlx5_wqe_data_seg);
    rq->linked  = linked;
    rq->dbrec   = dbrec;
    srq->raw    = rq;
    ret         = emu_raw_add_rq(srq);
    if (ret != 0) {
        emu_raw_srq_free(srq);
    }
    return ret;
}

int emu_raw_qp_attach(emu_qp_t *qp, uint8_t *buf, uint32_t wqe_cnt,
                      volatile __be32 *dbrec)
{
    struct emu_raw_sq *sq = calloc(1, sizeof(*sq));
    int ret;

    if (sq == NULL) {
        return ENOMEM;
    }
    sq->run     = emu_raw_sq_run;
    sq->ext     = true;
    sq->buf     = buf;
    sq->wqe_cnt = wqe_cnt;
    sq->dbrec   = dbrec;
    sq->uar     = emu_raw_uar(qp->ctx);
    if (sq->uar == NULL) {
        free(sq);
        return ENOMEM;
    }
    qp->raw_sq     = sq;
    qp->sq_wqe_cnt = wqe_cnt;
    ret            = emu_raw_add_sq(qp);
    if (ret != 0) {
        emu_raw_qp_free(qp);
    }
    return ret;
}
