/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: DC initiators (DCI) and targets (DCT), and the common
 * control path of the UMR QPs (mlx5_mkey.c).
 *
 * Both are created with mlx5dv_create_qp and moved through their states
 * with the masks of the transition table in mlx5_pure.c.  A DCI writes its
 * WQEs into its queue (mlx5_raw_sq.c) when its CQ is polled in memory, and
 * else posts through the ibv_wr_* builders plus mlx5dv_wr_set_dc_addr; its
 * post_send pointer is one of those in RTS or, in ERR, a version that only
 * records the WR so the CQ reports it flushed.  What a DCI's completion
 * retires, and the CQ's list of failed DCIs still to report flushed, are
 * here too: both poll paths of the CQ (mlx5_cq.c, mlx5_raw_cq.c) hand a
 * DCI's completions over to them.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mlx5/mlx5_dci.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *dcx_mlx5_qp_kind(const dcx_mlx5_qp_t *qp)
{
    /* clang-format off */
    switch (qp->super.type) {
    case DCX_QPT_DCI: return "dci";
    case DCX_QPT_DCT: return "dct";
    default:          return "umr qp";
    }
    /* clang-format on */
}

int dcx_mlx5_qp_modify(dcx_mlx5_qp_t *qp, dcx_qp_state_t to,
                       struct ibv_qp_attr *attr, uint32_t extra)
{
    const char *name = qp->super.dev->caps.name;
    const dcx_mlx5_qp_transition_t *t;
    uint32_t mask;
    int ret;

    t = dcx_mlx5_qp_transition_find(qp->super.type, qp->super.state, to);
    if ((t == NULL) || (extra & ~t->optional)) {
        dcx_error("%s: %s 0x%x: transition %s->%s (extra mask 0x%x) is not "
                  "allowed",
                  name, dcx_mlx5_qp_kind(qp), qp->super.qp_num,
                  dcx_mlx5_qp_state_str(qp->super.state),
                  dcx_mlx5_qp_state_str(to), extra);
        return EINVAL;
    }
    mask           = t->required | extra;
    attr->qp_state = dcx_mlx5_qp_state_to_ibv(to);
    ret            = ibv_modify_qp(qp->qp, attr, (int)mask);
    if (ret != 0) {
        dcx_log((dcx_mlx5_dev(qp->super.dev)->selftest && (ret == EOPNOTSUPP)) ?
                    DCX_LOG_DEBUG :
                    DCX_LOG_ERROR,
                "%s: %s 0x%x: modify %s->%s (mask 0x%x) failed: %s", name,
                dcx_mlx5_qp_kind(qp), qp->super.qp_num,
                dcx_mlx5_qp_state_str(qp->super.state),
                dcx_mlx5_qp_state_str(to), mask, strerror(ret));
        return ret;
    }
    qp->super.state = to;
    return 0;
}

/* ------------------------------------------------------------------------
 * DCI fast path
 * ------------------------------------------------------------------------ */
static int dcx_mlx5_dci_post_send(dcx_qp_t *super, const dcx_send_wr_t *wr)
{
    dcx_mlx5_qp_t *qp     = (dcx_mlx5_qp_t *)super;
    struct ibv_qp_ex *qpx = qp->qpx;
    const char *name      = super->dev->caps.name;
    struct ibv_sge sge[DCX_MLX5_MAX_SGE];
    struct ibv_data_buf buf[DCX_MLX5_MAX_SGE];
    uint32_t total;
    unsigned i;
    int ret;

    ret = dcx_mlx5_dci_validate(qp, wr, &total);
    if (ret != 0) {
        return ret;
    }
    total = dcx_mlx5_sge_total(wr->sg_list, wr->num_sge);
    ibv_wr_start(qpx);
    /* our sequence number, see mlx5_cq.c */
    qpx->wr_id    = dcx_mlx5_dci_ring(qp, wr)->head;
    qpx->wr_flags = dcx_mlx5_send_flags(wr->flags);
    switch (wr->opcode) {
    case DCX_WR_SEND:
        ibv_wr_send(qpx);
        break;
    case DCX_WR_SEND_IMM:
        ibv_wr_send_imm(qpx, htobe32(wr->imm));
        break;
    case DCX_WR_RDMA_WRITE:
        ibv_wr_rdma_write(qpx, wr->rkey, wr->remote_addr);
        break;
    case DCX_WR_RDMA_WRITE_IMM:
        ibv_wr_rdma_write_imm(qpx, wr->rkey, wr->remote_addr, htobe32(wr->imm));
        break;
    case DCX_WR_RDMA_READ:
        ibv_wr_rdma_read(qpx, wr->rkey, wr->remote_addr);
        break;
    case DCX_WR_ATOMIC_FADD:
        ibv_wr_atomic_fetch_add(qpx, wr->rkey, wr->remote_addr,
                                wr->compare_add);
        break;
    default: /* DCX_WR_ATOMIC_CSWAP: dcx_mlx5_dci_check let nothing else by */
        ibv_wr_atomic_cmp_swp(qpx, wr->rkey, wr->remote_addr, wr->compare_add,
                              wr->swap);
        break;
    }
    if (super->num_streams > 0) {
        mlx5dv_wr_set_dc_addr_stream(qp->dvqp,
                                     ((dcx_mlx5_ah_t *)wr->dest.ah)->ah,
                                     wr->dest.dctn, wr->dest.dc_key,
                                     wr->stream_id);
    } else {
        mlx5dv_wr_set_dc_addr(qp->dvqp, ((dcx_mlx5_ah_t *)wr->dest.ah)->ah,
                              wr->dest.dctn, wr->dest.dc_key);
    }
    if (total == 0) {
        ibv_wr_set_sge(qpx, 0, 0, 0);
    } else if (wr->flags & DCX_SEND_INLINE) {
        for (i = 0; i < wr->num_sge; ++i) {
            buf[i].addr   = (void *)(uintptr_t)wr->sg_list[i].addr;
            buf[i].length = wr->sg_list[i].length;
        }
        ibv_wr_set_inline_data_list(qpx, wr->num_sge, buf);
    } else {
        for (i = 0; i < wr->num_sge; ++i) {
            sge[i].addr   = wr->sg_list[i].addr;
            sge[i].length = wr->sg_list[i].length;
            sge[i].lkey   = wr->sg_list[i].lkey;
        }
        ibv_wr_set_sge_list(qpx, wr->num_sge, sge);
    }
    ret = ibv_wr_complete(qpx);
    if (ret != 0) {
        dcx_error("%s: dci 0x%x: posting wr_id 0x%llx failed: %s", name,
                  super->qp_num, (unsigned long long)wr->wr_id, strerror(ret));
        return ret;
    }
    dcx_mlx5_ring_push(dcx_mlx5_dci_ring(qp, wr), wr->wr_id, wr->opcode,
                       wr->flags & DCX_SEND_SIGNALED);
    return 0;
}

/* In ERR: the WR is accepted and reported flushed by the next CQ poll. */
static int dcx_mlx5_dci_post_send_flush(dcx_qp_t *super,
                                        const dcx_send_wr_t *wr)
{
    dcx_mlx5_qp_t *qp = (dcx_mlx5_qp_t *)super;

    if (wr->flags & DCX_SEND_NOW) {
        return EAGAIN;
    }
    if (dcx_mlx5_dci_stream_check(qp, wr) != 0) {
        return EINVAL;
    }
    if (dcx_mlx5_dci_full(qp, wr)) {
        return ENOMEM;
    }
    dcx_mlx5_ring_push(dcx_mlx5_dci_ring(qp, wr), wr->wr_id, wr->opcode,
                       wr->flags & DCX_SEND_SIGNALED);
    dcx_mlx5_cq_schedule_flush(qp->send_cq, qp);
    return 0;
}

static int dcx_mlx5_dct_post_send(dcx_qp_t *super, const dcx_send_wr_t *wr)
{
    dcx_error("%s: dct 0x%x: a DCT cannot send", super->dev->caps.name,
              super->qp_num);
    return EINVAL;
}

void dcx_mlx5_dci_stream_failed(dcx_mlx5_qp_t *qp, uint16_t stream)
{
    if (qp->stream_err[stream]) {
        return;
    }
    qp->stream_err[stream] = 1;
    if (++qp->streams_errored >= qp->streams_err_max) {
        /* the HCA moved the DCI to ERR: every stream flushes */
        dcx_debug("%s: dci 0x%x: %u streams in error: the DCI fails",
                  qp->super.dev->caps.name, qp->super.qp_num,
                  qp->streams_errored);
        dcx_mlx5_dci_enter_error(qp);
    }
}

void dcx_mlx5_dci_enter_error(dcx_mlx5_qp_t *qp)
{
    if (qp->super.state != DCX_QPS_ERR) {
        qp->super.state     = DCX_QPS_ERR;
        qp->super.post_send = dcx_mlx5_dci_post_send_flush;
    }
    dcx_mlx5_cq_schedule_flush(qp->send_cq, qp);
}

/* ------------------------------------------------------------------------
 * DCI control path
 * ------------------------------------------------------------------------ */
static int dcx_mlx5_dci_connect(dcx_mlx5_qp_t *qp)
{
    dcx_mlx5_dev_t *dev = dcx_mlx5_dev(qp->super.dev);
    struct ibv_qp_attr attr;
    int ret;

    memset(&attr, 0, sizeof(attr));
    attr.pkey_index = 0;
    attr.port_num   = dev->port;
    ret             = dcx_mlx5_qp_modify(qp, DCX_QPS_INIT, &attr, 0);
    if (ret != 0) {
        return ret;
    }

    memset(&attr, 0, sizeof(attr));
    attr.path_mtu = dev->path_mtu;
    ret           = dcx_mlx5_qp_modify(qp, DCX_QPS_RTR, &attr, 0);
    if (ret != 0) {
        return ret;
    }

    memset(&attr, 0, sizeof(attr));
    if (qp->attr.timeout != 0) {
        attr.timeout   = qp->attr.timeout;
        attr.retry_cnt = qp->attr.retry_cnt;
        attr.rnr_retry = qp->attr.rnr_retry;
    } else {
        /* 0 asks for the defaults (dcx_dev.h), never verbs' "infinite" */
        attr.timeout   = DCX_QP_DEFAULT_TIMEOUT;
        attr.retry_cnt = DCX_QP_DEFAULT_RETRY_CNT;
        attr.rnr_retry = DCX_QP_DEFAULT_RNR_RETRY;
    }
    attr.max_rd_atomic = (uint8_t)qp->attr.max_rd_atomic;
    attr.sq_psn        = 0;
    ret                = dcx_mlx5_qp_modify(qp, DCX_QPS_RTS, &attr, 0);
    if (ret != 0) {
        return ret;
    }
    qp->super.post_send = (qp->raw != NULL) ? dcx_mlx5_raw_dci_post_send :
                                              dcx_mlx5_dci_post_send;
    return 0;
}

static void dcx_mlx5_qp_rings_cleanup(dcx_mlx5_qp_t *qp)
{
    uint32_t i;

    dcx_mlx5_ring_cleanup(&qp->ring);
    for (i = 0; (qp->stream_rings != NULL) && (i < qp->super.num_streams);
         ++i) {
        dcx_mlx5_ring_cleanup(&qp->stream_rings[i]);
    }
    free(qp->stream_rings);
    qp->stream_rings = NULL;
}

dcx_mlx5_ring_t *dcx_mlx5_qp_ring_of(dcx_mlx5_qp_t *qp, uint64_t seq,
                                     uint16_t *stream_p)
{
    uint64_t s;

    if (qp->super.num_streams == 0) {
        *stream_p = 0;
        return &qp->ring;
    }
    s = (seq - qp->stream_base) >> 32;
    if ((seq < qp->stream_base) || (s >= qp->super.num_streams)) {
        return NULL;
    }
    *stream_p = (uint16_t)s;
    return &qp->stream_rings[s];
}

int dcx_mlx5_qp_flush_one(dcx_mlx5_qp_t *qp, dcx_wc_t *wc)
{
    uint32_t i;

    if (dcx_mlx5_ring_flush_one(&qp->ring, qp->super.qp_num, wc)) {
        return 1;
    }
    for (i = 0; i < qp->super.num_streams; ++i) {
        if (dcx_mlx5_ring_flush_one(&qp->stream_rings[i], qp->super.qp_num,
                                    wc)) {
            return 1;
        }
    }
    return 0;
}

uint32_t dcx_mlx5_qp_outstanding(const dcx_mlx5_qp_t *qp)
{
    uint32_t i, n = dcx_mlx5_ring_outstanding(&qp->ring);

    for (i = 0; i < qp->super.num_streams; ++i) {
        n += dcx_mlx5_ring_outstanding(&qp->stream_rings[i]);
    }
    return n;
}

/* ------------------------------------------------------------------------
 * DCI completions, as both poll paths of the CQ (mlx5_cq.c, mlx5_raw_cq.c)
 * hand them over: the WR ring retires them, a failed DCI goes on its CQ's
 * list of DCIs whose outstanding WRs are reported flushed
 * ------------------------------------------------------------------------ */
void dcx_mlx5_cq_schedule_flush(dcx_mlx5_cq_t *cq, dcx_mlx5_qp_t *qp)
{
    if (qp->flush_listed) {
        return;
    }
    qp->flush_next   = cq->flush_head;
    cq->flush_head   = qp;
    qp->flush_listed = true;
    dcx_mlx5_raw_look_sync(cq);
}

void dcx_mlx5_cq_unschedule_flush(dcx_mlx5_cq_t *cq, dcx_mlx5_qp_t *qp)
{
    dcx_mlx5_qp_t **pp;

    if (!qp->flush_listed) {
        return;
    }
    for (pp = &cq->flush_head; *pp != NULL; pp = &(*pp)->flush_next) {
        if (*pp == qp) {
            *pp = qp->flush_next;
            break;
        }
    }
    qp->flush_next   = NULL;
    qp->flush_listed = false;
    dcx_mlx5_raw_look_sync(cq);
}

/* Completion of a WR of a DCI with streams: every WR completes on its
 * own (an error stops its stream only, whose WRs then come flushed). */
static int dcx_mlx5_cq_stream_cqe(dcx_mlx5_cq_t *cq, dcx_mlx5_qp_t *qp,
                                  const dcx_mlx5_cqe_t *c, dcx_wc_t *wc)
{
    dcx_mlx5_ring_t *ring;
    uint16_t stream;

    ring = dcx_mlx5_qp_ring_of(qp, c->seq, &stream);
    if ((ring == NULL) ||
        !dcx_mlx5_ring_take(ring, c->seq, c->status, qp->super.qp_num, wc)) {
        return 0; /* reported from the ring already (the DCI failed) */
    }
    if (c->status == IBV_WC_SUCCESS) {
        wc->byte_len = c->byte_len;
    } else if (c->status != IBV_WC_WR_FLUSH_ERR) {
        wc->vendor_err = c->vendor_err;
        dcx_debug("%s: dci 0x%x stream %u: wr_id 0x%llx failed: %s (vendor "
                  "0x%x)",
                  cq->super.dev->caps.name, qp->super.qp_num, stream,
                  (unsigned long long)wc->wr_id, ibv_wc_status_str(c->status),
                  wc->vendor_err);
        dcx_mlx5_dci_stream_failed(qp, stream);
    }
    return 1;
}

int dcx_mlx5_cq_dci_done(dcx_mlx5_cq_t *cq, dcx_mlx5_qp_t *qp,
                         const dcx_mlx5_cqe_t *c, dcx_wc_t *wc)
{
    if (qp->super.num_streams > 0) {
        return dcx_mlx5_cq_stream_cqe(cq, qp, c, wc);
    }
    switch (dcx_mlx5_ring_cqe(&qp->ring, c->seq, c->status, qp->super.qp_num,
                              wc)) {
    case DCX_MLX5_CQE_REPORT:
        wc->byte_len = c->byte_len;
        return 1;
    case DCX_MLX5_CQE_FAILED:
        wc->vendor_err = c->vendor_err;
        dcx_debug("%s: dci 0x%x: wr_id 0x%llx failed: %s (vendor 0x%x)",
                  cq->super.dev->caps.name, qp->super.qp_num,
                  (unsigned long long)wc->wr_id, ibv_wc_status_str(c->status),
                  wc->vendor_err);
        dcx_mlx5_dci_enter_error(qp);
        return 1;
    case DCX_MLX5_CQE_FLUSHED:
        dcx_mlx5_dci_enter_error(qp);
        return 0;
    default:
        return 0;
    }
}

int dcx_mlx5_cq_drain_flush(dcx_mlx5_cq_t *cq, int max, dcx_wc_t *wc)
{
    dcx_mlx5_qp_t *qp;
    int n = 0;

    while (((qp = cq->flush_head) != NULL) && (n < max)) {
        while ((n < max) && dcx_mlx5_qp_flush_one(qp, &wc[n])) {
            ++n;
        }
        if (dcx_mlx5_qp_outstanding(qp) == 0) {
            dcx_mlx5_cq_unschedule_flush(cq, qp);
        }
    }
    return n;
}

/* The QP's ring, or with streams one per stream (each of max_wr) */
static int dcx_mlx5_qp_rings_init(dcx_mlx5_qp_t *qp, uint32_t max_wr,
                                  uint64_t base)
{
    uint32_t i;
    int ret;

    if (qp->super.num_streams == 0) {
        return dcx_mlx5_ring_init(&qp->ring, max_wr, base);
    }
    /* qp->ring stays empty (zeroed): nothing is posted to it */
    qp->stream_base  = base;
    qp->stream_rings = calloc(qp->super.num_streams, sizeof(*qp->stream_rings));
    if (qp->stream_rings == NULL) {
        return ENOMEM;
    }
    for (i = 0; i < qp->super.num_streams; ++i) {
        ret = dcx_mlx5_ring_init(&qp->stream_rings[i], max_wr,
                                 base + ((uint64_t)i << 32));
        if (ret != 0) {
            dcx_mlx5_qp_rings_cleanup(qp);
            return ret;
        }
    }
    return 0;
}

int dcx_mlx5_qp_start(dcx_mlx5_dev_t *dev, dcx_mlx5_qp_t *qp, const char *what,
                      uint32_t max_wr, int (*connect)(dcx_mlx5_qp_t *qp))
{
    int ret;

    ret = dcx_mlx5_qp_rings_init(qp, max_wr, qp->send_cq->next_seq_base);
    if (ret != 0) {
        dcx_error("%s: %s 0x%x: no memory for %u WR slots",
                  dev->super.caps.name, what, qp->super.qp_num, max_wr);
        return ret;
    }
    qp->send_cq->next_seq_base += 1ull << 40;
    ret = dcx_mlx5_qpmap_insert(&qp->send_cq->qpmap, qp->super.qp_num, qp);
    if (ret != 0) {
        dcx_error("%s: %s 0x%x: QP map insert failed: %s", dev->super.caps.name,
                  what, qp->super.qp_num, strerror(ret));
        goto err_free_ring;
    }
    ret = connect(qp);
    if (ret != 0) {
        dcx_mlx5_qpmap_remove(&qp->send_cq->qpmap, qp->super.qp_num);
        goto err_free_ring;
    }
    return 0;

err_free_ring:
    dcx_mlx5_qp_rings_cleanup(qp);
    return ret;
}

static int dcx_mlx5_dci_create(dcx_mlx5_qp_t *qp, dcx_mlx5_pd_t *pd)
{
    dcx_mlx5_dev_t *dev    = dcx_mlx5_dev(pd->super.dev);
    const dcx_qp_attr_t *a = &qp->attr;
    struct ibv_cq *cq      = ibv_cq_ex_to_cq(qp->send_cq->cq);
    struct mlx5dv_qp_init_attr dv_attr;
    struct ibv_qp_init_attr_ex attr;
    bool raw;
    int ret;

    /* written in memory where its CQ is polled there (mlx5_raw_cq.c) */
    raw = dev->raw && (qp->send_cq->mode != DCX_MLX5_CQ_VERBS);
    ret = raw ? dcx_mlx5_cq_use(qp->send_cq, true, "dci") : 0;
    if (ret != 0) {
        return ret;
    }
    memset(&attr, 0, sizeof(attr));
    memset(&dv_attr, 0, sizeof(dv_attr));
    attr.qp_type   = IBV_QPT_DRIVER;
    attr.send_cq   = cq;
    attr.recv_cq   = cq; /* must be valid even with no RQ */
    attr.srq       = (a->srq != NULL) ? ((dcx_mlx5_srq_t *)a->srq)->srq : NULL;
    attr.pd        = pd->pd;
    attr.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    attr.send_ops_flags          = dev->dci_send_ops;
    attr.cap.max_send_wr         = a->max_send_wr;
    attr.cap.max_send_sge        = (a->max_send_sge > 0) ? a->max_send_sge : 1;
    attr.cap.max_inline_data     = a->max_inline;
    dv_attr.comp_mask            = MLX5DV_QP_INIT_ATTR_MASK_DC;
    dv_attr.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCI;
    if (raw) {
        /* READ and atomic results land in their buffers, never in the
         * CQE (the raw poll does not copy them out) */
        dv_attr.comp_mask |= MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS;
        dv_attr.create_flags = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE;
    }
    if (a->dci_streams) {
        /* the streams share the HCA's one send queue: each of them gets
         * max_send_wr slots of it (the device contract's bound) */
        dv_attr.comp_mask |= MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS;
        dv_attr.dc_init_attr.dci_streams.log_num_concurent =
            a->log_num_concurrent;
        dv_attr.dc_init_attr.dci_streams.log_num_errored = a->log_num_errored;
        attr.cap.max_send_wr = a->max_send_wr << a->log_num_concurrent;
        qp->stream_err       = calloc(1u << a->log_num_concurrent, 1);
        if (qp->stream_err == NULL) {
            dcx_error("%s: dci: out of memory for %u streams",
                      dev->super.caps.name, 1u << a->log_num_concurrent);
            return ENOMEM;
        }
        qp->super.num_streams = 1u << a->log_num_concurrent;
        qp->streams_err_max   = 1u << a->log_num_errored;
    }

    errno  = 0;
    qp->qp = mlx5dv_create_qp(dev->ctx, &attr, &dv_attr);
    if (qp->qp == NULL) {
        ret = errno ? errno : EINVAL;
        dcx_error("%s: dci: mlx5dv_create_qp(depth %u, sge %u, inline %u, "
                  "streams %u) failed: %s",
                  dev->super.caps.name, attr.cap.max_send_wr,
                  attr.cap.max_send_sge, a->max_inline, qp->super.num_streams,
                  strerror(ret));
        goto err_free;
    }
    qp->qpx  = ibv_qp_to_qp_ex(qp->qp);
    qp->dvqp = mlx5dv_qp_ex_from_ibv_qp_ex(qp->qpx);

    qp->super.qp_num        = qp->qp->qp_num;
    /* with streams: each stream's share of the queue the device gave */
    qp->super.max_send_wr   = (qp->super.num_streams > 0) ?
                                  (attr.cap.max_send_wr >>
                                 a->log_num_concurrent) :
                                  attr.cap.max_send_wr;
    qp->super.max_send_sge  = attr.cap.max_send_sge;
    qp->super.max_inline    = attr.cap.max_inline_data;
    qp->super.max_rd_atomic = a->max_rd_atomic;
    if (qp->super.max_send_sge > DCX_MLX5_MAX_SGE) {
        qp->super.max_send_sge = DCX_MLX5_MAX_SGE;
    }
    if (raw) {
        ret = dcx_mlx5_raw_sq_init(qp);
        if (ret != 0) {
            goto err_destroy;
        }
    }

    ret = dcx_mlx5_qp_start(dev, qp, "dci", qp->super.max_send_wr,
                            dcx_mlx5_dci_connect);
    if (ret != 0) {
        goto err_destroy;
    }
    return 0;

err_destroy:
    dcx_mlx5_raw_sq_free(qp);
    ibv_destroy_qp(qp->qp);
err_free:
    free(qp->stream_err);
    qp->stream_err = NULL;
    return ret;
}

/* ------------------------------------------------------------------------
 * DCT
 * ------------------------------------------------------------------------ */
static int dcx_mlx5_dct_create(dcx_mlx5_qp_t *qp, dcx_mlx5_pd_t *pd)
{
    dcx_mlx5_dev_t *dev    = dcx_mlx5_dev(pd->super.dev);
    const dcx_qp_attr_t *a = &qp->attr;
    struct ibv_cq *cq      = ibv_cq_ex_to_cq(qp->recv_cq->cq);
    struct mlx5dv_qp_init_attr dv_attr;
    struct ibv_qp_init_attr_ex attr;
    dcx_mlx5_srq_t *srq = (dcx_mlx5_srq_t *)a->srq;
    struct ibv_qp_attr qattr;
    int ret;

    if (srq->xrq != NULL) {
        /* on a tag-matching XRQ: a DEVX DCT (mlx5_xrq.c) */
        ret = dcx_mlx5_xrq_dct_create(qp, pd);
        if (ret != 0) {
            return ret;
        }
        goto map;
    }
    /* its receives are polled the way its SRQ is written */
    ret = dcx_mlx5_cq_use(qp->recv_cq, srq->raw != NULL, "dct");
    if (ret != 0) {
        return ret;
    }
    if (srq->raw != NULL) {
        dcx_mlx5_raw_cq_t *rc = qp->recv_cq->raw;

        rc->multi_srq |= (rc->srq != NULL) && (rc->srq != srq);
        rc->srq     = (rc->srq != NULL) ? rc->srq : srq;
        srq->raw_cq = qp->recv_cq;
    }
    memset(&attr, 0, sizeof(attr));
    memset(&dv_attr, 0, sizeof(dv_attr));
    attr.qp_type      = IBV_QPT_DRIVER;
    attr.send_cq      = cq;
    attr.recv_cq      = cq;
    attr.srq          = ((dcx_mlx5_srq_t *)a->srq)->srq;
    attr.pd           = pd->pd;
    attr.comp_mask    = IBV_QP_INIT_ATTR_PD; /* SEND_OPS_FLAGS: EINVAL */
    dv_attr.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC;
    dv_attr.dc_init_attr.dc_type        = MLX5DV_DCTYPE_DCT;
    dv_attr.dc_init_attr.dct_access_key = a->dc_key;
    /* libmlx5 asks for scatter-to-CQE unless told not to: kept only where
     * the SRQ reads its receives in place, so that no message is copied
     * out of a CQE into its buffer */
    if ((srq->raw == NULL) || !srq->raw->in_place) {
        dv_attr.comp_mask |= MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS;
        dv_attr.create_flags = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE;
    }

    errno  = 0;
    qp->qp = mlx5dv_create_qp(dev->ctx, &attr, &dv_attr);
    if (qp->qp == NULL) {
        ret = errno ? errno : EINVAL;
        dcx_error("%s: dct: mlx5dv_create_qp failed: %s", dev->super.caps.name,
                  strerror(ret));
        return ret;
    }

    memset(&qattr, 0, sizeof(qattr));
    qattr.qp_access_flags = (int)
        dcx_mlx5_access_flags(a->access & (DCX_ACCESS_REMOTE_WRITE |
                                           DCX_ACCESS_REMOTE_READ |
                                           DCX_ACCESS_REMOTE_ATOMIC));
    qattr.pkey_index = 0;
    qattr.port_num   = dev->port;
    ret              = dcx_mlx5_qp_modify(qp, DCX_QPS_INIT, &qattr, 0);
    if (ret != 0) {
        goto err_destroy;
    }

    memset(&qattr, 0, sizeof(qattr));
    qattr.min_rnr_timer    = a->min_rnr_timer;
    qattr.path_mtu         = dev->path_mtu;
    qattr.ah_attr.port_num = dev->port;
    if ((dev->link_layer == IBV_LINK_LAYER_ETHERNET) || dev->grh_required) {
        qattr.ah_attr.is_global      = 1;
        qattr.ah_attr.grh.sgid_index = (uint8_t)((dev->gid_index >= 0) ?
                                                     dev->gid_index :
                                                     0);
        qattr.ah_attr.grh.hop_limit  = 64;
    }
    ret = dcx_mlx5_qp_modify(qp, DCX_QPS_RTR, &qattr, 0);
    if (ret != 0) {
        goto err_destroy;
    }

    /* the hardware DCT exists, and has its number, only from RTR on */
    qp->super.qp_num = qp->qp->qp_num;
map:
    ret = dcx_mlx5_qpmap_insert(&qp->recv_cq->qpmap, qp->super.qp_num, qp);
    if (ret != 0) {
        dcx_error("%s: dct 0x%x: QP map insert failed: %s",
                  dev->super.caps.name, qp->super.qp_num, strerror(ret));
        goto err_destroy;
    }
    qp->super.post_send = dcx_mlx5_dct_post_send;
    return 0;

err_destroy:
    if (qp->devx_dct != NULL) {
        dcx_mlx5_xrq_dct_destroy(qp);
    } else {
        ibv_destroy_qp(qp->qp);
    }
    return ret;
}

/* ------------------------------------------------------------------------
 * Device ops
 * ------------------------------------------------------------------------ */
static int dcx_mlx5_qp_attr_check(dcx_pd_t *pd, const dcx_qp_attr_t *a)
{
    const dcx_dev_caps_t *caps = &pd->dev->caps;
    const char *why            = NULL;

    if (a->type == DCX_QPT_DCI) {
        if (a->send_cq == NULL) {
            why = "no send CQ";
        } else if ((a->max_send_wr == 0) ||
                   (a->max_send_wr > caps->max_qp_wr)) {
            why = "max_send_wr out of range";
        } else if (a->max_send_sge > caps->max_sge) {
            why = "max_send_sge above the device limit";
        } else if (a->max_inline > caps->max_inline) {
            why = "max_inline above the device limit";
        } else if (a->max_rd_atomic > caps->max_rd_atomic) {
            why = "max_rd_atomic above the device limit";
        } else if (a->dci_streams &&
                   (!(caps->flags & DCX_CAP_DCI_STREAMS) ||
                    (a->log_num_concurrent > caps->dci_streams_log_max) ||
                    (a->log_num_errored > caps->dci_errored_log_max))) {
            why = "DCI streams beyond what the device has";
        } else if (a->dci_streams &&
                   ((uint64_t)a->max_send_wr << a->log_num_concurrent >
                    caps->max_qp_wr)) {
            why = "max_send_wr times the streams above the device's send "
                  "queue";
        } else {
            dcx_mlx5_transport_params_check(a, &why);
        }
    } else if (a->type == DCX_QPT_DCT) {
        if ((a->srq == NULL) || (a->recv_cq == NULL)) {
            why = "a DCT needs an SRQ and a receive CQ";
        } else if (a->access & ~(uint32_t)(DCX_ACCESS_REMOTE_WRITE |
                                           DCX_ACCESS_REMOTE_READ |
                                           DCX_ACCESS_REMOTE_ATOMIC)) {
            why = "DCT access may only name remote rights";
        } else if ((a->access & DCX_ACCESS_REMOTE_ATOMIC) &&
                   (caps->atomic_flags == 0)) {
            why = "remote atomics are not supported by this device";
        } else if (a->min_rnr_timer > 31) {
            why = "min_rnr_timer above 31";
        }
    } else if (a->type == DCX_QPT_UMR) {
        if (!(caps->flags & DCX_CAP_MKEY_STRIDE)) {
            why = "the device has no strided keys";
        } else if (a->send_cq == NULL) {
            why = "no send CQ";
        } else if ((a->max_send_wr == 0) ||
                   (a->max_send_wr > dcx_mlx5_dev(pd->dev)->umr_max_wr)) {
            why = "max_send_wr out of range";
        }
    } else {
        why = "unknown QP type";
    }
    if (why != NULL) {
        dcx_error("%s: %s create: %s", caps->name,
                  (a->type == DCX_QPT_DCT) ? "dct" :
                  (a->type == DCX_QPT_UMR) ? "umr qp" :
                                             "dci",
                  why);
        return EINVAL;
    }
    return 0;
}

int dcx_mlx5_qp_create(dcx_pd_t *pd, const dcx_qp_attr_t *attr, dcx_qp_t **qp_p)
{
    dcx_mlx5_qp_t *qp;
    int ret;

    ret = dcx_mlx5_qp_attr_check(pd, attr);
    if (ret != 0) {
        return ret;
    }
    qp = calloc(1, sizeof(*qp));
    if (qp == NULL) {
        dcx_error("%s: qp create: out of memory", pd->dev->caps.name);
        return ENOMEM;
    }
    qp->attr = *attr;
    if ((attr->type == DCX_QPT_DCI) && (attr->max_rd_atomic == 0)) {
        /* as the soft device: 0 asks for the device limit (the kernel would
         * otherwise program one outstanding READ/atomic and report 0) */
        qp->attr.max_rd_atomic = pd->dev->caps.max_rd_atomic;
    }
    qp->super.dev   = pd->dev;
    qp->super.pd    = pd;
    qp->super.type  = attr->type;
    qp->super.state = DCX_QPS_RESET;
    if (attr->type != DCX_QPT_DCT) {
        /* requesters: a DCI, or a UMR QP (mlx5_mkey.c) */
        qp->send_cq = (dcx_mlx5_cq_t *)attr->send_cq;
        if (attr->type == DCX_QPT_DCI) {
            ret = dcx_mlx5_dci_create(qp, (dcx_mlx5_pd_t *)pd);
        } else {
            /* libmlx5's builders post a UMR QP's WQEs: libmlx5 must poll
             * their CQ */
            ret = dcx_mlx5_cq_use(qp->send_cq, false, "umr qp");
            if (ret == 0) {
                ret = dcx_mlx5_umr_qp_create(qp, (dcx_mlx5_pd_t *)pd);
            }
        }
        if (ret == 0) {
            ++qp->send_cq->num_dci;
        }
    } else {
        qp->recv_cq = (dcx_mlx5_cq_t *)attr->recv_cq;
        ret         = dcx_mlx5_dct_create(qp, (dcx_mlx5_pd_t *)pd);
        if (ret == 0) {
            ++qp->recv_cq->num_dct;
        }
    }
    if (ret != 0) {
        free(qp);
        return ret;
    }
    *qp_p = &qp->super;
    return 0;
}

int dcx_mlx5_qp_destroy(dcx_qp_t *super)
{
    dcx_mlx5_qp_t *qp   = (dcx_mlx5_qp_t *)super;
    dcx_mlx5_dev_t *dev = dcx_mlx5_dev(super->dev);
    int ret;

    ret = (qp->devx_dct != NULL) ? dcx_mlx5_xrq_dct_destroy(qp) :
                                   ibv_destroy_qp(qp->qp);
    if (ret != 0) {
        dcx_error("%s: %s 0x%x: destroy failed: %s", dev->super.caps.name,
                  dcx_mlx5_qp_kind(qp), super->qp_num, strerror(ret));
        return ret;
    }
    dcx_mlx5_qpmap_remove((super->type != DCX_QPT_DCT) ? &qp->send_cq->qpmap :
                                                         &qp->recv_cq->qpmap,
                          super->qp_num);
    if (super->type != DCX_QPT_DCT) {
        dcx_mlx5_raw_cq_clean(qp->send_cq, super->qp_num);
        dcx_mlx5_cq_unschedule_flush(qp->send_cq, qp);
        --qp->send_cq->num_dci;
    } else {
        --qp->recv_cq->num_dct;
    }
    dcx_mlx5_qp_rings_cleanup(qp);
    dcx_mlx5_raw_sq_free(qp);
    dcx_mlx5_umr_qp_cleanup(qp);
    free(qp->stream_err);
    free(qp);
    return 0;
}

int dcx_mlx5_qp_set_error(dcx_qp_t *super)
{
    dcx_mlx5_qp_t *qp = (dcx_mlx5_qp_t *)super;
    struct ibv_qp_attr attr;
    int ret;

    if (super->type == DCX_QPT_DCT) {
        dcx_error("%s: dct 0x%x: a DCT cannot be moved to ERR",
                  super->dev->caps.name, super->qp_num);
        return EINVAL;
    }
    if (super->state != DCX_QPS_ERR) {
        memset(&attr, 0, sizeof(attr));
        ret = dcx_mlx5_qp_modify(qp, DCX_QPS_ERR, &attr, 0);
        if (ret != 0) {
            return ret;
        }
    }
    dcx_mlx5_dci_enter_error(qp);
    return 0;
}

int dcx_mlx5_qp_recover(dcx_qp_t *super)
{
    dcx_mlx5_qp_t *qp = (dcx_mlx5_qp_t *)super;
    struct ibv_qp_attr attr;
    int ret;

    if ((super->type == DCX_QPT_DCT) || (super->state != DCX_QPS_ERR)) {
        dcx_error("%s: %s 0x%x: recover needs a DCI or UMR QP in ERR (state "
                  "%s)",
                  super->dev->caps.name, dcx_mlx5_qp_kind(qp), super->qp_num,
                  dcx_mlx5_qp_state_str(super->state));
        return EINVAL;
    }
    memset(&attr, 0, sizeof(attr));
    ret = dcx_mlx5_qp_modify(qp, DCX_QPS_RESET, &attr, 0);
    if (ret != 0) {
        return ret;
    }
    /* libmlx5 purged this QP's unpolled CQEs (a raw CQ's are purged
     * here): forget what is outstanding */
    dcx_mlx5_raw_cq_clean(qp->send_cq, super->qp_num);
    dcx_mlx5_raw_sq_reset(qp);
    dcx_mlx5_ring_reset(&qp->ring);
    for (uint32_t i = 0; i < super->num_streams; ++i) {
        dcx_mlx5_ring_reset(&qp->stream_rings[i]);
    }
    if (qp->stream_err != NULL) {
        memset(qp->stream_err, 0, super->num_streams);
        qp->streams_errored = 0;
    }
    dcx_mlx5_cq_unschedule_flush(qp->send_cq, qp);

    ret = (super->type == DCX_QPT_DCI) ? dcx_mlx5_dci_connect(qp) :
                                         dcx_mlx5_umr_qp_connect(qp);
    if (ret != 0) {
        /* Leave it in ERR so that recovery can be tried again.  If it is
         * still in RESET the hardware accepts no work either; posts are
         * flushed by the ERR post_send in both cases. */
        if (super->state != DCX_QPS_RESET) {
            memset(&attr, 0, sizeof(attr));
            dcx_mlx5_qp_modify(qp, DCX_QPS_ERR, &attr, 0);
        }
        super->state = DCX_QPS_ERR; /* post_send is still the ERR one */
        dcx_mlx5_dci_enter_error(qp);
        return ret;
    }
    return 0;
}

int dcx_mlx5_qp_stream_reset(dcx_qp_t *super, uint16_t stream_id)
{
    dcx_mlx5_qp_t *qp = (dcx_mlx5_qp_t *)super;
    const char *name  = super->dev->caps.name;
    int ret;

    if ((super->type != DCX_QPT_DCI) || (super->num_streams == 0)) {
        dcx_error("%s: qp 0x%x stream %u reset: not a DCI with streams", name,
                  super->qp_num, stream_id);
        return EINVAL;
    }
    if (stream_id >= super->num_streams) {
        dcx_error("%s: dci 0x%x stream %u reset: the DCI has %u streams", name,
                  super->qp_num, stream_id, super->num_streams);
        return EINVAL;
    }
    if (super->state != DCX_QPS_RTS) {
        dcx_error("%s: dci 0x%x stream %u reset: the DCI is not in RTS (%s)",
                  name, super->qp_num, stream_id,
                  dcx_mlx5_qp_state_str(super->state));
        return EOPNOTSUPP;
    }
    if (!qp->stream_err[stream_id]) {
        return 0; /* not in error: nothing to reset */
    }
    ret = mlx5dv_dci_stream_id_reset(qp->qp, stream_id);
    if (ret != 0) {
        dcx_error("%s: dci 0x%x stream %u reset: mlx5dv_dci_stream_id_reset "
                  "failed: %s",
                  name, super->qp_num, stream_id, strerror(ret));
        return ret;
    }
    qp->stream_err[stream_id] = 0;
    qp->streams_errored--;
    return 0;
}
