/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: CQEs in CQ memory (emu_raw.h).
 *
 * The engine drains a raw CQ's soft CQ and writes each completion as the
 * HCA writes a 64-byte CQE (the last 64 bytes of a 128-byte one): the
 * fields first, then op_own (opcode in the high nibble, the owner bit
 * that flips on every pass over the queue) with a release store, so that
 * software that sees op_own sees the rest.  A requester CQE carries the
 * WQE's index and opcode (in sop_drop_qpn's top byte, as libmlx5 reads
 * it); a responder CQE the receive WQE's index, the byte count, the
 * immediate, the source QP (with the GRH flag for UD) and its LID; an
 * error CQE the PRM's syndrome.  The CQ is never reported overrun: like
 * UCX's CQs (ignore-overrun), software owns the consumer index.
 *
 * Arming: software writes the arm word (sequence, command, consumer
 * index) to the CQ's doorbell record and rings the UAR; the engine takes
 * a new arm word as an arm and raises the CQ's event on its completion
 * channel once a CQE lies past the armed consumer index.  The record's
 * arm word starts at a value no arm writes, so the first arm is seen.
 */
#include "emu/emu_devx.h"
#include "emu/emu_raw.h"

#include <string.h>

#define EMU_RAW_ARM_NONE 0xffffffffu /* bits 30-31 are 0 in an arm word */

/* mlx5_cqe64's app and app_op for tag matching */
#define EMU_CQE_APP_TM         1u
#define EMU_TM_CONSUMED        0x1u
#define EMU_TM_EXPECTED        0x2u
#define EMU_TM_UNEXPECTED      0x3u
#define EMU_TM_NO_TAG          0x4u
#define EMU_TM_APPEND          0x5u
#define EMU_TM_REMOVE          0x6u
#define EMU_TM_NOOP            0x7u
#define EMU_TM_CONSUMED_MSG    0xau
#define EMU_TM_CONSUMED_SW_MSG 0xbu

static struct mlx5_cqe64 *emu_raw_cqe(struct emu_raw_cq *rc)
{
    uint8_t *slot = rc->buf +
                    (size_t)(rc->pi & (rc->cqe_cnt - 1)) * rc->cqe_size;

    return (struct mlx5_cqe64 *)(slot + rc->cqe_size -
                                 sizeof(struct mlx5_cqe64));
}

/* op_own last: the opcode, the format (MLX5_INLINE_SCATTER_*, or 0) and
 * the owner bit of the pass */
static void emu_raw_cqe_commit_fmt(struct emu_raw_cq *rc,
                                   struct mlx5_cqe64 *cqe, uint8_t opcode,
                                   uint8_t fmt)
{
    uint8_t owner = (rc->pi & rc->cqe_cnt) ? MLX5_CQE_OWNER_MASK : 0;

    __atomic_store_n(&cqe->op_own, (uint8_t)((opcode << 4) | fmt | owner),
                     __ATOMIC_RELEASE);
    rc->pi++;
}

static void emu_raw_cqe_commit(struct emu_raw_cq *rc, struct mlx5_cqe64 *cqe,
                               uint8_t opcode)
{
    emu_raw_cqe_commit_fmt(rc, cqe, opcode, 0);
}

void emu_raw_cq_req(emu_cq_t *cq, uint32_t qpn, uint16_t wqe_counter,
                    uint8_t opcode)
{
    struct emu_raw_cq *rc = cq->raw;
    struct mlx5_cqe64 *cqe;

    if (rc == NULL) {
        return;
    }
    cqe = emu_raw_cqe(rc);
    memset(cqe, 0, sizeof(*cqe) - 1);
    cqe->sop_drop_qpn = htobe32(((uint32_t)opcode << 24) | (qpn & 0xffffff));
    cqe->wqe_counter  = htobe16(wqe_counter);
    emu_raw_cqe_commit(rc, cqe, MLX5_CQE_REQ);
}

/* An error CQE; tm_slot >= 0: of the receive of a tag list's entry in
 * that slot, which the app fields say as a matched message's CQE does
 * (the wqe_counter of a receive names an XRQ WQE) */
static void emu_raw_cqe_error(struct emu_raw_cq *rc, const dcx_wc_t *wc,
                              uint32_t qpn, bool recv, int tm_slot)
{
    struct mlx5_err_cqe *e = (struct mlx5_err_cqe *)emu_raw_cqe(rc);
    uint8_t opcode         = (uint8_t)(wc->wr_id >> 16);

    memset(e, 0, sizeof(*e) - 1);
    if (tm_slot >= 0) {
        ((struct mlx5_cqe64 *)e)->app      = EMU_CQE_APP_TM;
        ((struct mlx5_cqe64 *)e)->app_op   = EMU_TM_CONSUMED_MSG;
        ((struct mlx5_cqe64 *)e)->app_info = htobe16((uint16_t)tm_slot);
    }
    e->syndrome         = emu_wc_syndrome(wc->status);
    e->vendor_err_synd  = e->syndrome;
    e->s_wqe_opcode_qpn = htobe32(((uint32_t)(recv ? 0 : opcode) << 24) |
                                  (qpn & 0xffffff));
    e->wqe_counter      = htobe16((uint16_t)wc->wr_id);
    emu_raw_cqe_commit(rc, (struct mlx5_cqe64 *)e,
                       recv ? MLX5_CQE_RESP_ERR : MLX5_CQE_REQ_ERR);
}

/* The format of a SEND's CQE: MLX5_INLINE_SCATTER_64 with its bytes in
 * the first half of the 128-byte CQE when its DCT scatters (emu_qp.c),
 * else 0, its bytes in the receive's buffers.  A DCT has only the 64-byte
 * mode, on 128-byte CQEs; an RDMA WRITE's immediate brings no bytes. */
static uint8_t emu_raw_cqe_scatter(emu_dev_t *dev, struct emu_raw_cq *rc,
                                   struct mlx5_cqe64 *cqe, const dcx_wc_t *wc,
                                   uint32_t qpn, uint8_t opcode)
{
    emu_srq_t *srq;

    if ((opcode == MLX5_CQE_RESP_WR_IMM) || (wc->byte_len == 0) ||
        (wc->byte_len > EMU_SCAT_MAX) || (rc->cqe_size != 128) ||
        !emu_dct_scatters(dev, qpn)) {
        return 0;
    }
    srq = emu_num_find(dev, EMU_NUM_SRQ,
                       (uint32_t)(wc->wr_id >> 32) & 0xffffff);
    if ((srq == NULL) || (srq->raw == NULL) ||
        !emu_raw_rq_scatter(srq->raw, (uint16_t)wc->wr_id, wc->byte_len,
                            (uint8_t *)cqe - EMU_SCAT_MAX)) {
        return 0;
    }
    return MLX5_INLINE_SCATTER_64;
}

/* A receive's CQE; a UD QP's receive gives its GRH flag and source LID
 * from the buffer's first 40 bytes */
static void emu_raw_cqe_recv(emu_dev_t *dev, struct emu_raw_cq *rc,
                             const dcx_wc_t *wc, uint32_t qpn)
{
    struct mlx5_cqe64 *cqe = emu_raw_cqe(rc);
    emu_qp_t *ud           = emu_qp_find(dev, qpn);
    emu_wc_ext_t ext       = {wc->slid, 0};
    uint8_t opcode;

    if ((ud != NULL) && (ud->kind == EMU_QP_UD) && (ud->rq != NULL) &&
        (ud->rq->raw != NULL) && (ud->rq->raw->grh != NULL)) {
        emu_ud_raw_recv(ud, (uint16_t)wc->wr_id, &ext);
    }
    opcode = (wc->opcode == DCX_WC_RECV_RDMA_WITH_IMM) ? MLX5_CQE_RESP_WR_IMM :
             (wc->flags & DCX_WC_FLAG_WITH_IMM) ? MLX5_CQE_RESP_SEND_IMM :
                                                  MLX5_CQE_RESP_SEND;
    memset(cqe, 0, sizeof(*cqe) - 1);
    cqe->byte_cnt       = htobe32(wc->byte_len);
    cqe->imm_inval_pkey = htobe32(wc->imm);
    cqe->sop_drop_qpn   = htobe32(qpn & 0xffffff);
    cqe->flags_rqpn     = htobe32((wc->src_qp & 0xffffff) |
                                  (ext.grh ? (1u << 28) : 0));
    cqe->slid           = htobe16(ext.slid);
    cqe->wqe_counter    = htobe16((uint16_t)wc->wr_id);
    emu_raw_cqe_commit_fmt(rc, cqe, opcode,
                           emu_raw_cqe_scatter(dev, rc, cqe, wc, qpn, opcode));
}

/* A list operation's CQE (NO_PACKET): its slot, whether a REMOVE took an
 * entry, the device's unexpected count */
static void emu_raw_cqe_tm_op(struct emu_raw_cq *rc, emu_xrq_t *xrq,
                              const dcx_wc_t *wc)
{
    struct mlx5_cqe64 *cqe = emu_raw_cqe(rc);
    bool remove            = (wc->opcode == DCX_WC_TM_DEL) ||
                  (wc->wr_id & EMU_XRQ_WR_REMOVE);

    memset(cqe, 0, sizeof(*cqe) - 1);
    if ((wc->opcode == DCX_WC_TM_DEL) && (wc->status == DCX_WC_SUCCESS)) {
        cqe->tm_cqe.success = htobe32(MLX5_TMC_SUCCESS);
    }
    cqe->tm_cqe.hw_phase_cnt = htobe16(xrq->hw_cnt);
    cqe->srqn_uidx           = htobe32(xrq->srq->srqn);
    cqe->app                 = EMU_CQE_APP_TM;
    cqe->app_op              = (wc->opcode == DCX_WC_TM_ADD) ? EMU_TM_APPEND :
                               remove                        ? EMU_TM_REMOVE :
                                                               EMU_TM_NOOP;
    cqe->app_info            = htobe16((uint16_t)wc->wr_id);
    emu_raw_cqe_commit(rc, cqe, MLX5_CQE_NO_PACKET);
}

/* A message's CQE on an XRQ with tag matching: matched (the TMH in the
 * CQE's first 16 bytes, the entry's slot in app_info), or in an XRQ
 * buffer (its WQE in wqe_counter) */
static void emu_raw_cqe_tm_msg(struct emu_raw_cq *rc, emu_xrq_t *xrq,
                               const dcx_wc_t *wc, uint32_t qpn)
{
    struct mlx5_cqe64 *cqe = emu_raw_cqe(rc);
    uint16_t match         = wc->flags &
                     (DCX_WC_FLAG_TM_MATCH | DCX_WC_FLAG_TM_DATA_VALID);
    bool entry = (wc->wr_id & EMU_XRQ_WR_ENTRY) != 0;
    uint8_t app_op;

    if (wc->status == DCX_WC_TM_RNDV_INCOMPLETE) {
        app_op = EMU_TM_CONSUMED_SW_MSG;
    } else if (wc->opcode == DCX_WC_TM_NO_TAG) {
        app_op = EMU_TM_NO_TAG;
    } else if (match == (DCX_WC_FLAG_TM_MATCH | DCX_WC_FLAG_TM_DATA_VALID)) {
        app_op = EMU_TM_CONSUMED_MSG;
    } else if (match == DCX_WC_FLAG_TM_MATCH) {
        app_op = EMU_TM_CONSUMED;
    } else if (match == DCX_WC_FLAG_TM_DATA_VALID) {
        app_op = EMU_TM_EXPECTED;
    } else {
        app_op = EMU_TM_UNEXPECTED;
        xrq->hw_cnt++;
    }
    memset(cqe, 0, sizeof(*cqe) - 1);
    if (match & DCX_WC_FLAG_TM_MATCH) {
        dcx_tmh_pack(cqe,
                     (app_op == EMU_TM_CONSUMED) ? DCX_TMH_RNDV : DCX_TMH_EAGER,
                     wc->tm_priv, wc->tm_tag);
    }
    cqe->srqn_uidx      = htobe32(xrq->srq->srqn);
    cqe->imm_inval_pkey = htobe32(wc->imm);
    cqe->app            = EMU_CQE_APP_TM;
    cqe->app_op         = app_op;
    cqe->app_info       = entry ? htobe16((uint16_t)wc->wr_id) : 0;
    cqe->byte_cnt       = htobe32(wc->byte_len);
    cqe->sop_drop_qpn   = htobe32(qpn & 0xffffff);
    cqe->flags_rqpn     = htobe32(wc->src_qp & 0xffffff);
    cqe->slid           = htobe16(wc->slid);
    cqe->wqe_counter    = entry ? 0 : htobe16((uint16_t)wc->wr_id);
    emu_raw_cqe_commit(rc, cqe,
                       (wc->flags & DCX_WC_FLAG_WITH_IMM) ?
                           MLX5_CQE_RESP_SEND_IMM :
                           MLX5_CQE_RESP_SEND);
    if (entry) {
        emu_xrq_entry_done(xrq, wc->wr_id,
                           (match & DCX_WC_FLAG_TM_DATA_VALID) ||
                               (wc->status == DCX_WC_TM_RNDV_INCOMPLETE));
    }
}

/* A completion of an XRQ with tag matching (the XRQ gone: none) */
static void emu_raw_cqe_tm(emu_dev_t *dev, struct emu_raw_cq *rc,
                           const dcx_wc_t *wc, uint32_t qpn)
{
    emu_xrq_t *xrq = emu_xrq_of(dev, wc->wr_id);

    if (xrq == NULL) {
        return;
    }
    if (wc->wr_id & EMU_XRQ_WR_OP) {
        if (wc->wr_id & EMU_XRQ_WR_CQE) {
            emu_raw_cqe_tm_op(rc, xrq, wc);
        }
        return;
    }
    if ((wc->status == DCX_WC_SUCCESS) ||
        (wc->status == DCX_WC_TM_RNDV_INCOMPLETE)) {
        emu_raw_cqe_tm_msg(rc, xrq, wc, qpn);
        return;
    }
    if (wc->wr_id & EMU_XRQ_WR_ENTRY) {
        emu_xrq_entry_done(xrq, wc->wr_id, true);
        emu_raw_cqe_error(rc, wc, qpn, true, (uint16_t)wc->wr_id);
        return;
    }
    emu_raw_cqe_error(rc, wc, qpn, true, -1);
}

/* An arm word software wrote since the last look: an event is owed */
static void emu_raw_cq_arm_look(struct emu_raw_cq *rc)
{
    uint32_t word = be32toh(rc->dbrec[EMU_RAW_CQ_ARM]);

    if (word != rc->arm_seen) {
        rc->arm_seen  = word;
        rc->app_armed = true;
        rc->arm_ci    = word & 0xffffff;
    }
}

/* A 4-byte masked atomic completed: its fetched value in network order,
 * as a ConnectX writes it (emu_raw.h, be4) */
static void emu_raw_cq_be4(emu_qp_t *qp, uint64_t wr_id)
{
    struct emu_raw_sq *sq = qp->raw_sq;
    uint32_t *result, v;

    if ((sq == NULL) || (sq->be4 == NULL)) {
        return;
    }
    result = (uint32_t *)(uintptr_t)sq->be4[(uint16_t)wr_id & (sq->wqe_cnt - 1)];
    memcpy(&v, result, sizeof(v));
    v = htobe32(v);
    memcpy(result, &v, sizeof(v));
}

unsigned emu_raw_cq_run(emu_cq_t *cq)
{
    struct emu_raw_cq *rc = cq->raw;
    emu_dev_t *dev        = emu_ctx(cq->cq.context)->dev;
    dcx_wc_t wc[16];
    unsigned total = 0;
    uint32_t qpn;
    emu_qp_t *qp;
    int i, n;

    while ((n = dcx_cq_poll(cq->soft, 16, wc)) > 0) {
        for (i = 0; i < n; ++i) {
            qpn = wc[i].qp_num;
            if ((wc[i].opcode >= DCX_WC_TM_ADD) ||
                (wc[i].wr_id & (EMU_XRQ_WR_ENTRY | EMU_XRQ_WR_OP))) {
                emu_raw_cqe_tm(dev, rc, &wc[i], qpn);
                continue;
            }
            if (wc[i].opcode & DCX_WC_RECV_BIT) {
                if (wc[i].status == DCX_WC_SUCCESS) {
                    emu_raw_cqe_recv(dev, rc, &wc[i], qpn);
                } else {
                    emu_raw_cqe_error(rc, &wc[i], qpn, true, -1);
                }
                continue;
            }
            qp  = emu_qp_find(dev, qpn); /* a send queue's: the QP's number */
            qpn = (qp != NULL) ? qp->qpx.qp_base.qp_num : qpn;
            if ((qp != NULL) && (qp->raw_sq != NULL) &&
                (qp->raw_sq->wait_idx == (uint16_t)wc[i].wr_id)) {
                qp->raw_sq->waiting = false;
            }
            if ((wc[i].status == DCX_WC_SUCCESS) &&
                (wc[i].wr_id & EMU_RAW_WR_BE4) && (qp != NULL)) {
                emu_raw_cq_be4(qp, wc[i].wr_id);
            }
            if (wc[i].status == DCX_WC_SUCCESS) {
                if (!(wc[i].wr_id & EMU_RAW_WR_SILENT)) {
                    emu_raw_cq_req(cq, qpn, (uint16_t)wc[i].wr_id,
                                   (uint8_t)(wc[i].wr_id >> 16));
                }
            } else {
                emu_raw_cqe_error(rc, &wc[i], qpn, false, -1);
            }
        }
        total += (unsigned)n;
    }
    emu_raw_cq_arm_look(rc);
    if (rc->app_armed && (((rc->pi - rc->arm_ci) & 0xffffff) != 0)) {
        rc->app_armed = false;
        emu_channel_fire(cq);
    }
    return total;
}

void emu_raw_cq_init(struct emu_raw_cq *rc)
{
    rc->run                     = emu_raw_cq_run;
    rc->arm                     = emu_raw_cq_arm;
    rc->dbrec[EMU_RAW_CQ_SETCI] = 0;
    rc->dbrec[EMU_RAW_CQ_ARM]   = htobe32(EMU_RAW_ARM_NONE);
    rc->arm_seen                = EMU_RAW_ARM_NONE;
}

int emu_raw_cq_arm(emu_cq_t *cq)
{
    pthread_mutex_lock(&emu_raw_lock);
    cq->raw->app_armed = true;
    cq->raw->arm_ci    = be32toh(cq->raw->dbrec[EMU_RAW_CQ_SETCI]) & 0xffffff;
    pthread_mutex_unlock(&emu_raw_lock);
    emu_raw_kick();
    return 0;
}
