/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: ibv_post_send and ibv_post_recv, the context's ops.
 *
 * They are modelled for RC and UD QPs (DCIs and DCTs take the ibv_wr_*
 * API and SRQs): a send WR goes through the QP's ibv_wr_* builders
 * (emu_wr.c, emu_umr.c), one batch per WR so that bad_wr names the WR
 * that failed; a receive WR goes to the QP's own receive queue, an SRQ
 * of the emulation (a UD QP's with the slot of its buffer, emu_ud.c).
 */
#include "emu/emu_raw.h"

#include <errno.h>

#define EMU_RC_MAX_INLINE_SGE 16

/* Builds wr's operation on x (between wr_start and wr_complete); false
 * for an opcode an RC QP of the emulation does not take */
static bool emu_rc_build(struct ibv_qp_ex *x, const struct ibv_send_wr *wr)
{
    switch (wr->opcode) {
    case IBV_WR_SEND:
        x->wr_send(x);
        return true;
    case IBV_WR_SEND_WITH_IMM:
        x->wr_send_imm(x, wr->imm_data);
        return true;
    case IBV_WR_RDMA_WRITE:
        x->wr_rdma_write(x, wr->wr.rdma.rkey, wr->wr.rdma.remote_addr);
        return true;
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        x->wr_rdma_write_imm(x, wr->wr.rdma.rkey, wr->wr.rdma.remote_addr,
                             wr->imm_data);
        return true;
    case IBV_WR_RDMA_READ:
        x->wr_rdma_read(x, wr->wr.rdma.rkey, wr->wr.rdma.remote_addr);
        return true;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        x->wr_atomic_fetch_add(x, wr->wr.atomic.rkey, wr->wr.atomic.remote_addr,
                               wr->wr.atomic.compare_add);
        return true;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        x->wr_atomic_cmp_swp(x, wr->wr.atomic.rkey, wr->wr.atomic.remote_addr,
                             wr->wr.atomic.compare_add, wr->wr.atomic.swap);
        return true;
    case IBV_WR_LOCAL_INV:
        emu_umr_post_local_inv((emu_qp_t *)x, wr->invalidate_rkey);
        return true;
    default:
        return false;
    }
}

/* One WR as one batch of the ibv_wr_* builders; 0 or an errno */
static int emu_rc_post_one(emu_qp_t *qp, const struct ibv_send_wr *wr)
{
    struct ibv_data_buf bufs[EMU_RC_MAX_INLINE_SGE];
    struct ibv_qp_ex *x = &qp->qpx;
    const char *name    = x->qp_base.context->device->name;
    int i;

    if ((wr->num_sge < 0) || ((wr->send_flags & IBV_SEND_INLINE) &&
                              (wr->num_sge > EMU_RC_MAX_INLINE_SGE))) {
        emu_error("%s: qp 0x%x: post_send: %d sge%s", name, x->qp_base.qp_num,
                  wr->num_sge,
                  (wr->send_flags & IBV_SEND_INLINE) ? " of inline data" : "");
        return EINVAL;
    }
    x->wr_start(x);
    x->wr_id    = wr->wr_id;
    x->wr_flags = wr->send_flags;
    if (!emu_rc_build(x, wr)) {
        x->wr_abort(x);
        emu_error("%s: qp 0x%x: post_send: opcode %d is not modelled on RC "
                  "or UD",
                  name, x->qp_base.qp_num, (int)wr->opcode);
        return EINVAL;
    }
    if (qp->kind == EMU_QP_UD) {
        x->wr_set_ud_addr(x, wr->wr.ud.ah, wr->wr.ud.remote_qpn,
                          wr->wr.ud.remote_qkey);
    }
    if (wr->opcode == IBV_WR_LOCAL_INV) {
        /* no data: the key is all it names */
    } else if (wr->send_flags & IBV_SEND_INLINE) {
        for (i = 0; i < wr->num_sge; ++i) {
            bufs[i].addr   = (void *)(uintptr_t)wr->sg_list[i].addr;
            bufs[i].length = wr->sg_list[i].length;
        }
        x->wr_set_inline_data_list(x, (size_t)wr->num_sge, bufs);
    } else {
        x->wr_set_sge_list(x, (size_t)wr->num_sge, wr->sg_list);
    }
    return x->wr_complete(x);
}

static int emu_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
                         struct ibv_send_wr **bad_wr)
{
    emu_qp_t *qp = emu_qp(ibqp);
    int ret      = 0;

    if ((qp->kind != EMU_QP_RC) && (qp->kind != EMU_QP_UD)) {
        emu_error("%s: qp 0x%x: ibv_post_send is not modelled on DC QPs "
                  "(use the ibv_wr_* API)",
                  ibqp->context->device->name, ibqp->qp_num);
        *bad_wr = wr;
        return EOPNOTSUPP;
    }
    for (; wr != NULL; wr = wr->next) {
        ret = emu_rc_post_one(qp, wr);
        if (ret != 0) {
            *bad_wr = wr;
            break;
        }
    }
    return ret;
}

static int emu_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
                         struct ibv_recv_wr **bad_wr)
{
    emu_qp_t *qp = emu_qp(ibqp);
    bool dc      = (qp->kind != EMU_QP_RC) && (qp->kind != EMU_QP_UD);

    if (dc || (qp->rq == NULL) || (qp->rq_max_wr == 0)) {
        emu_error("%s: qp 0x%x: ibv_post_recv: the QP has no receive queue "
                  "(%s)",
                  ibqp->context->device->name, ibqp->qp_num,
                  dc               ? "a DC QP: use an SRQ" :
                  (qp->rq == NULL) ? "it receives from an SRQ" :
                                     "created with max_recv_wr 0");
        *bad_wr = wr;
        return EINVAL;
    }
    if (qp->qpx.qp_base.state == IBV_QPS_RESET) {
        emu_error("%s: qp 0x%x: ibv_post_recv in RESET",
                  ibqp->context->device->name, ibqp->qp_num);
        *bad_wr = wr;
        return EINVAL;
    }
    if (qp->rq->raw != NULL) {
        emu_error("%s: qp 0x%x: ibv_post_recv: the receive queue's memory "
                  "was taken (mlx5dv_init_obj): post WQEs there",
                  ibqp->context->device->name, ibqp->qp_num);
        *bad_wr = wr;
        return EINVAL;
    }
    if (qp->kind == EMU_QP_UD) {
        return emu_ud_post_recv(qp, wr, bad_wr);
    }
    return ibv_post_srq_recv(&qp->rq->srq, wr, bad_wr);
}

void emu_ctx_set_post_ops(struct ibv_context *ctx)
{
    ctx->ops.post_send = emu_post_send;
    ctx->ops.post_recv = emu_post_recv;
}
