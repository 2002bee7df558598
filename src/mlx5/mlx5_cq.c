/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: completion queues.
 *
 * Polling uses the extended CQ API (start/next/end_poll), or reads the
 * CQ's memory (mlx5_raw_cq.c).  On a CQ that serves only DCTs every
 * completion is a receive; otherwise each completion is routed by its QP
 * number:
 *  - a DCI completion carries as wr_id the sequence number the backend gave
 *    the WR at post time; it is looked up in the DCI's outstanding ring
 *    (mlx5_qp.c, for both poll paths),
 *    which also retires the unsignalled WRs before it (one CQE retires
 *    everything up to its WQE, as libmlx5 does for its own SQ slots);
 *  - a DCT (receive) completion carries the wr_id given to the SRQ.
 * When a DCI fails, its remaining outstanding WRs are reported from the ring
 * as DCX_WC_WR_FLUSH_ERR, whatever the hardware does with them; flush CQEs
 * the hardware produces afterwards are recognised as stale and dropped.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mlx5/mlx5_int.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DCX_MLX5_CQ_WC_FLAGS                                                \
    (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM | \
     IBV_WC_EX_WITH_SRC_QP)

/* Completion of a DCI WR read through libmlx5 */
static int dcx_mlx5_cq_dci_cqe(dcx_mlx5_cq_t *cq, dcx_mlx5_qp_t *qp,
                               enum ibv_wc_status status, dcx_wc_t *wc)
{
    dcx_mlx5_cqe_t c;

    c.seq      = cq->cq->wr_id;
    c.status   = status;
    c.byte_len = (status == IBV_WC_SUCCESS) ? ibv_wc_read_byte_len(cq->cq) : 0;
    c.vendor_err = (status == IBV_WC_SUCCESS) ? 0 :
                                                ibv_wc_read_vendor_err(cq->cq);
    return dcx_mlx5_cq_dci_done(cq, qp, &c, wc);
}

/* Completion of a receive on a DCT's SRQ. */
static int dcx_mlx5_cq_recv_cqe(dcx_mlx5_cq_t *cq, uint32_t qpn,
                                enum ibv_wc_status status, dcx_wc_t *wc)
{
    dcx_wc_opcode_t opcode;

    memset(wc, 0, sizeof(*wc));
    wc->wr_id  = cq->cq->wr_id;
    wc->qp_num = qpn;
    wc->opcode = DCX_WC_RECV;
    wc->status = dcx_mlx5_wc_status(status);
    if (status != IBV_WC_SUCCESS) {
        wc->vendor_err = ibv_wc_read_vendor_err(cq->cq);
        return 1;
    }
    if (dcx_mlx5_wc_opcode(ibv_wc_read_opcode(cq->cq), &opcode) != 0) {
        dcx_warn("%s: dct 0x%x: unexpected completion opcode %d dropped",
                 cq->super.dev->caps.name, qpn, ibv_wc_read_opcode(cq->cq));
        return 0;
    }
    wc->opcode   = (uint8_t)opcode;
    wc->byte_len = ibv_wc_read_byte_len(cq->cq);
    wc->src_qp   = ibv_wc_read_src_qp(cq->cq);
    if (ibv_wc_read_wc_flags(cq->cq) & IBV_WC_WITH_IMM) {
        wc->flags |= DCX_WC_FLAG_WITH_IMM;
        wc->imm = be32toh(ibv_wc_read_imm_data(cq->cq));
    }
    return 1;
}

static int dcx_mlx5_cq_one(dcx_mlx5_cq_t *cq, dcx_wc_t *wc)
{
    dcx_mlx5_dev_t *dev       = dcx_mlx5_dev(cq->super.dev);
    enum ibv_wc_status status = cq->cq->status;
    uint32_t qpn              = ibv_wc_read_qp_num(cq->cq);
    dcx_mlx5_qp_t *qp;

    if (cq->num_dci == 0) {
        /* receive-only CQ: the wr_id is the SRQ's, no lookup needed (and
         * a receive that landed after its DCT was destroyed still hands
         * its buffer back) */
        return dcx_mlx5_cq_recv_cqe(cq, qpn, status, wc);
    }
    qp = (dcx_mlx5_qp_t *)dcx_mlx5_qpmap_find(&cq->qpmap, qpn);
    switch (dcx_mlx5_cq_route(qp != NULL,
                              (qp != NULL) ? qp->super.type : DCX_QPT_DCT,
                              cq->num_dct)) {
    case DCX_MLX5_ROUTE_DCI:
        return dcx_mlx5_cq_dci_cqe(cq, qp, status, wc);
    case DCX_MLX5_ROUTE_RECV:
        return dcx_mlx5_cq_recv_cqe(cq, qpn, status, wc);
    default:
        dcx_debug("%s: cq: completion for unknown QP 0x%x dropped",
                  dev->super.caps.name, qpn);
        return 0;
    }
}

/* The rest of a poll whose start found a completion, failed, or that has
 * DCIs to report as flushed: out of line, so that an empty poll (most of
 * them) costs the start and two tests */
static int __attribute__((noinline))
dcx_mlx5_cq_poll_found(dcx_mlx5_cq_t *cq, int ret, int max, dcx_wc_t *wc)
{
    int n = 0;

    if (ret == 0) {
        for (;;) {
            n += dcx_mlx5_cq_one(cq, &wc[n]);
            if (n >= max) {
                break;
            }
            ret = ibv_next_poll(cq->cq);
            if (ret != 0) {
                break;
            }
        }
        ibv_end_poll(cq->cq);
    }
    if ((ret != 0) && (ret != ENOENT)) {
        dcx_error("%s: cq: polling failed (%d)", cq->super.dev->caps.name, ret);
    }
    if ((n < max) && (cq->flush_head != NULL)) {
        n += dcx_mlx5_cq_drain_flush(cq, max - n, &wc[n]);
    }
    return n;
}

static inline __attribute__((always_inline)) int
dcx_mlx5_cq_poll_inl(dcx_cq_t *super, int max, dcx_wc_t *wc)
{
    dcx_mlx5_cq_t *cq            = (dcx_mlx5_cq_t *)super;
    struct ibv_poll_cq_attr attr = {0};
    int ret;

    if (max <= 0) {
        return 0;
    }
    ret = ibv_start_poll(cq->cq, &attr);
    if ((ret == ENOENT) && (cq->flush_head == NULL)) {
        return 0;
    }
    return dcx_mlx5_cq_poll_found(cq, ret, max, wc);
}

static int dcx_mlx5_cq_poll(dcx_cq_t *super, int max, dcx_wc_t *wc)
{
    return dcx_mlx5_cq_poll_inl(super, max, wc);
}

/* dcx_cq_poll_pair(): the hardware has no engine to run, so the pair is
 * two polls in one call */
static int dcx_mlx5_cq_poll_pair(dcx_cq_t *super, dcx_cq_t *other, int max,
                                 dcx_wc_t *wc, int *n_other_p)
{
    int n = dcx_mlx5_cq_poll_inl(super, max, wc);

    *n_other_p = dcx_mlx5_cq_poll_inl(other, max, wc + max);
    return n;
}

int dcx_mlx5_cq_create_on(dcx_dev_t *super, uint32_t cqe,
                          struct ibv_comp_channel *channel,
                          dcx_mlx5_cq_t **cq_p)
{
    dcx_mlx5_dev_t *dev = dcx_mlx5_dev(super);
    struct mlx5dv_cq_init_attr dv_attr;
    struct ibv_cq_init_attr_ex attr;
    dcx_mlx5_cq_t *cq;
    int ret;

    if ((cqe == 0) || (cqe > super->caps.max_cqe)) {
        dcx_error("%s: cq: %u entries requested, device allows 1..%u",
                  super->caps.name, cqe, super->caps.max_cqe);
        return EINVAL;
    }
    cq = calloc(1, sizeof(*cq));
    if (cq == NULL) {
        dcx_error("%s: cq: out of memory", super->caps.name);
        return ENOMEM;
    }
    memset(&attr, 0, sizeof(attr));
    attr.cqe        = cqe;
    attr.wc_flags   = DCX_MLX5_CQ_WC_FLAGS;
    attr.channel    = channel;
    attr.cq_context = cq; /* found again by ibv_get_cq_event */
    /* 128-byte CQEs: a DCT scatters short SENDs into the first half
     * (mlx5_raw_cq.c) */
    memset(&dv_attr, 0, sizeof(dv_attr));
    dv_attr.comp_mask = MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE;
    dv_attr.cqe_size  = 128;
    errno             = 0;
    cq->cq = dev->cqe128 ? mlx5dv_create_cq(dev->ctx, &attr, &dv_attr) :
                           ibv_create_cq_ex(dev->ctx, &attr);
    if (cq->cq == NULL) {
        ret = errno ? errno : ENOMEM;
        dcx_error("%s: cq: create_cq(%u entries of %u bytes) failed: %s",
                  super->caps.name, cqe, dev->cqe128 ? 128 : 64, strerror(ret));
        free(cq);
        return ret;
    }
    dcx_mlx5_qpmap_init(&cq->qpmap);
    cq->super.dev       = super;
    cq->super.cqe       = (uint32_t)ibv_cq_ex_to_cq(cq->cq)->cqe;
    cq->super.poll      = dcx_mlx5_cq_poll;
    cq->super.poll_pair = dcx_mlx5_cq_poll_pair;
    cq->super.release   = (super->caps.flags & DCX_CAP_RECV_IN_PLACE) ?
                              dcx_mlx5_raw_cq_release :
                              NULL;
    dcx_mlx5_cq_open_init(cq, dev->raw);
    *cq_p = cq;
    return 0;
}

int dcx_mlx5_cq_create(dcx_dev_t *super, uint32_t cqe, dcx_cq_t **cq_p)
{
    dcx_mlx5_cq_t *cq;
    int ret;

    ret = dcx_mlx5_cq_create_on(super, cqe, NULL, &cq);
    if (ret == 0) {
        *cq_p = &cq->super;
    }
    return ret;
}

int dcx_mlx5_cq_destroy(dcx_cq_t *super)
{
    dcx_mlx5_cq_t *cq = (dcx_mlx5_cq_t *)super;
    int ret;

    if ((cq->num_dci != 0) || (cq->num_dct != 0)) {
        dcx_error("%s: cq: destroy refused, %u DCIs and %u DCTs still use it",
                  super->dev->caps.name, cq->num_dci, cq->num_dct);
        return EBUSY;
    }
    ret = ibv_destroy_cq(ibv_cq_ex_to_cq(cq->cq));
    if (ret != 0) {
        dcx_error("%s: cq: ibv_destroy_cq failed: %s", super->dev->caps.name,
                  strerror(ret));
        return ret;
    }
    if (cq->channel != NULL) {
        dcx_mlx5_channel_detach(cq);
    }
    dcx_mlx5_qpmap_cleanup(&cq->qpmap);
    dcx_mlx5_raw_cq_free(cq);
    free(cq);
    return 0;
}
