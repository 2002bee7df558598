/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: the DEVX QP and DCT commands (emu_devx.h).
 *
 * A QP made by CREATE_QP is a QP of emu_qp.c (RC, or a DCI) whose send
 * queue is the application's: the first 2^log_sq_size basic blocks of its
 * wq umem, its doorbell record at dbr_addr of its dbr umem, rung through
 * the context's UAR page.  The raw-queue engine serves it from creation
 * (emu_raw.h), as it serves a verbs QP after mlx5dv_init_obj.  Receives
 * come from an SRQ (rq_type 1: the SRQ of srqn, created through verbs) or
 * not at all; a QP's own receive queue, a QP without a send queue and
 * every other QP type are refused.
 *
 * RST2INIT, INIT2RTR, RTR2RTS, 2ERR and 2RST carry a qpc whose fields are
 * the attributes of the verbs transition they stand for; the transition
 * table and its checks are ibv_modify_qp's (emu_qp_modify.c).  QUERY_QP
 * answers the state and what the connection was given.  A DCT made by
 * CREATE_DCT is a verbs DCT taken to RTR at once (a DEVX DCT is live from
 * creation).  Moving an SRQ-attached QP to ERR raises its last-WQE event
 * on the channels subscribed to it.
 *
 * The qpc, dctc and mailbox fields below are bit offsets from the start of
 * the command's input (the qpc starts at byte 24, the dctc at byte 16).
 */
#include "emu/emu_devx.h"
#include "emu/emu_dv.h"
#include "emu/emu_raw.h"
#include "soft/dcx_soft.h"

#include <errno.h>
#include <string.h>

/* create_qp_in / modify_qp_in: the mailbox around the qpc */
#define EMU_QP_IN_LEN    272u
#define EMU_QP_WQ_UMEM   2112u, 32u
#define EMU_QP_OPT_MASK  128u, 32u
#define EMU_OPT_RRE      (1u << 1)
#define EMU_OPT_RAE      (1u << 2)
#define EMU_OPT_RWE      (1u << 3)
#define EMU_QUERY_QP_OUT (24u + 232u) /* through the qpc's used part */
/* qpc */
#define EMU_QPC_STATE      192u, 4u
#define EMU_QPC_ST         200u, 8u
#define EMU_QPC_PD         232u, 24u
#define EMU_QPC_MTU        256u, 3u
#define EMU_QPC_LOG_RQ_SZ  265u, 4u
#define EMU_QPC_NO_SQ      272u, 1u
#define EMU_QPC_LOG_SQ_SZ  273u, 4u
#define EMU_QPC_UAR_PAGE   296u, 24u
#define EMU_QPC_REMOTE_QPN 360u, 24u
#define EMU_QPC_PKEY_INDEX 400u, 16u
#define EMU_QPC_GRH        424u, 1u
#define EMU_QPC_MLID       425u, 7u
#define EMU_QPC_RLID       432u, 16u
#define EMU_QPC_ACK_TMO    448u, 5u
#define EMU_QPC_SGID_INDEX 456u, 8u
#define EMU_QPC_HOP_LIMIT  472u, 8u
#define EMU_QPC_TCLASS     484u, 8u
#define EMU_QPC_RGID_BYTE  64u
#define EMU_QPC_SL         676u, 4u
#define EMU_QPC_PORT       680u, 8u
#define EMU_QPC_LOG_SRA    1096u, 3u
#define EMU_QPC_RETRY      1101u, 3u
#define EMU_QPC_RNR_RETRY  1104u, 3u
#define EMU_QPC_SQ_PSN     1160u, 24u
#define EMU_QPC_CQN_SND    1192u, 24u
#define EMU_QPC_LOG_RRA    1352u, 3u
#define EMU_QPC_RRE        1360u, 1u
#define EMU_QPC_RWE        1361u, 1u
#define EMU_QPC_RAE        1362u, 1u
#define EMU_QPC_MIN_RNR    1379u, 5u
#define EMU_QPC_RQ_PSN     1384u, 24u
#define EMU_QPC_CQN_RCV    1448u, 24u
#define EMU_QPC_DBR_ADDR   1472u
#define EMU_QPC_RQ_TYPE    1573u, 3u
#define EMU_QPC_SRQN       1576u, 24u
#define EMU_QPC_DBR_UMEM   2016u, 32u
/* qpc.st and qpc.state values */
#define EMU_ST_RC    0x0u
#define EMU_ST_DCI   0x5u
#define EMU_QPS_RST  0x0u
#define EMU_QPS_INIT 0x1u
#define EMU_QPS_RTR  0x2u
#define EMU_QPS_RTS  0x3u
#define EMU_QPS_SQER 0x4u
#define EMU_QPS_ERR  0x6u
#define EMU_QPS_SQD  0x7u
/* create_dct_in: the dctc at byte 16 */
#define EMU_DCT_IN_LEN      128u
#define EMU_DCTC_CQN        200u, 24u
#define EMU_DCTC_ATOMIC     232u, 4u /* atomic_mode */
#define EMU_ATOMIC_MODE_8B  3u       /* operands up to 8 bytes, masked too */
#define EMU_DCTC_RRE        236u, 1u
#define EMU_DCTC_RWE        237u, 1u
#define EMU_DCTC_RAE        238u, 1u
#define EMU_DCTC_MIN_RNR    275u, 5u
#define EMU_DCTC_SRQN       296u, 24u
#define EMU_DCTC_PD         328u, 24u
#define EMU_DCTC_KEY        384u
#define EMU_DCTC_MTU        453u, 3u
#define EMU_DCTC_PORT       456u, 8u
#define EMU_DCTC_PKEY_INDEX 464u, 16u

/* What a command names by number, found or refused */
typedef struct {
    emu_pd_t *pd;
    emu_cq_t *scq;
    emu_cq_t *rcq;
    emu_srq_t *srq;
} emu_devx_refs_t;

static int emu_devx_find(emu_ctx_t *ctx, const char *call, uint16_t opcode,
                         uint8_t *out, size_t outlen, emu_num_kind_t kind,
                         uint32_t num, void **obj_p)
{
    static const char *const what[] = {"PD", "CQ", "SRQ"};

    *obj_p = emu_num_find(ctx->dev, kind, num);
    if (*obj_p != NULL) {
        return 0;
    }
    return emu_devx_refuse(ctx->vctx.context.device->name, call, opcode, out,
                           outlen, EMU_STAT_BAD_RES, 0x10u + kind,
                           "no %s 0x%x on the device", what[kind], num);
}

/* a CQ whose memory was given out: the engine writes its CQEs */
static int emu_devx_raw_cq(emu_ctx_t *ctx, const char *call, uint16_t opcode,
                           uint8_t *out, size_t outlen, uint32_t cqn,
                           emu_cq_t **cq_p)
{
    int ret = emu_devx_find(ctx, call, opcode, out, outlen, EMU_NUM_CQ, cqn,
                            (void **)cq_p);

    if ((ret == 0) && ((*cq_p)->raw == NULL)) {
        ret = emu_devx_refuse(ctx->vctx.context.device->name, call, opcode, out,
                              outlen, EMU_STAT_BAD_RES, 0x14u,
                              "CQ 0x%x is polled through verbs (no "
                              "mlx5dv_init_obj on it): a DEVX QP's "
                              "completions are written as CQEs",
                              cqn);
    }
    return ret;
}

static unsigned emu_devx_access(unsigned rre, unsigned rwe, unsigned rae)
{
    return IBV_ACCESS_LOCAL_WRITE | (rre ? IBV_ACCESS_REMOTE_READ : 0) |
           (rwe ? IBV_ACCESS_REMOTE_WRITE : 0) |
           (rae ? IBV_ACCESS_REMOTE_ATOMIC : 0);
}

/* A verbs QP for the qpc; its sge count the largest the WQE size takes
 * with one WR per basic block of the queue (the counts that do not fit
 * are the emulation's own tries, not the program's errors) */
static struct ibv_qp *emu_devx_make_qp(emu_ctx_t *ctx, bool dci,
                                       const emu_devx_refs_t *r,
                                       uint32_t sq_bbs)
{
    const dcx_dev_caps_t *caps = dcx_dev_caps(ctx->dev->soft);
    struct mlx5dv_qp_init_attr dv;
    struct ibv_qp_init_attr_ex a;
    struct ibv_qp *qp = NULL;
    uint32_t sge;

    emu_qp_sizing_quiet = true;
    for (sge = caps->max_sge; (qp == NULL) && (sge > 0); sge /= 2) {
        memset(&a, 0, sizeof(a));
        memset(&dv, 0, sizeof(dv));
        a.comp_mask        = IBV_QP_INIT_ATTR_PD;
        a.pd               = &r->pd->pd;
        a.send_cq          = ibv_cq_ex_to_cq(&r->scq->cq);
        a.recv_cq          = ibv_cq_ex_to_cq(&r->rcq->cq);
        a.srq              = (r->srq != NULL) ? &r->srq->srq : NULL;
        a.cap.max_send_wr  = sq_bbs;
        a.cap.max_send_sge = sge;
        a.qp_type          = dci ? IBV_QPT_DRIVER : IBV_QPT_RC;
        if (dci) {
            dv.comp_mask            = MLX5DV_QP_INIT_ATTR_MASK_DC;
            dv.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCI;
        }
        qp = dcx_emu_mlx5dv_create_qp(&ctx->vctx.context, &a, &dv);
    }
    emu_qp_sizing_quiet = false;
    return qp;
}

int emu_devx_qp_create(emu_ctx_t *ctx, const uint8_t *in, size_t inlen,
                       uint8_t *out, size_t outlen, struct mlx5dv_devx_obj *obj)
{
    static const char call[] = "mlx5dv_devx_obj_create(CREATE_QP)";
    const char *name         = ctx->vctx.context.device->name;
    const uint16_t op        = EMU_CMD_CREATE_QP;
    emu_devx_refs_t r        = {NULL, NULL, NULL, NULL};
    uint32_t st, log_sq, bbs;
    uint8_t *sq, *dbr;
    struct ibv_qp *ibqp;
    emu_qp_t *qp;
    int ret;

    if (inlen < EMU_QP_IN_LEN) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_INLEN,
                               0x20u, "%zu input bytes (%u)", inlen,
                               EMU_QP_IN_LEN);
    }
    st     = EMU_PRM_GET(in, EMU_QPC_ST);
    log_sq = EMU_PRM_GET(in, EMU_QPC_LOG_SQ_SZ);
    bbs    = 1u << log_sq;
    if ((st != EMU_ST_RC) && (st != EMU_ST_DCI)) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_PARAM,
                               0x21u,
                               "QP type st 0x%x is not modelled (RC "
                               "0x0 and DCI 0x5)",
                               st);
    }
    if (EMU_PRM_GET(in, EMU_QPC_NO_SQ) ||
        ((EMU_PRM_GET(in, EMU_QPC_RQ_TYPE) == 0) &&
         (EMU_PRM_GET(in, EMU_QPC_LOG_RQ_SZ) != 0))) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_PARAM,
                               0x22u,
                               "a QP without a send queue or with a "
                               "receive queue of its own is not modelled");
    }
    if (EMU_PRM_GET(in, EMU_QPC_UAR_PAGE) != 1u) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_PARAM,
                               0x23u, "uar_page 0x%x was not allocated",
                               EMU_PRM_GET(in, EMU_QPC_UAR_PAGE));
    }
    ret = emu_devx_find(ctx, call, op, out, outlen, EMU_NUM_PD,
                        EMU_PRM_GET(in, EMU_QPC_PD), (void **)&r.pd);
    if (ret == 0) {
        ret = emu_devx_raw_cq(ctx, call, op, out, outlen,
                              EMU_PRM_GET(in, EMU_QPC_CQN_SND), &r.scq);
    }
    if (ret == 0) {
        ret = emu_devx_raw_cq(ctx, call, op, out, outlen,
                              EMU_PRM_GET(in, EMU_QPC_CQN_RCV), &r.rcq);
    }
    if ((ret == 0) && (EMU_PRM_GET(in, EMU_QPC_RQ_TYPE) != 0)) {
        ret = emu_devx_find(ctx, call, op, out, outlen, EMU_NUM_SRQ,
                            EMU_PRM_GET(in, EMU_QPC_SRQN), (void **)&r.srq);
    }
    if (ret != 0) {
        return ret;
    }
    if ((emu_devx_umem_find(ctx, EMU_PRM_GET(in, EMU_QP_WQ_UMEM), 0,
                            (uint64_t)bbs * MLX5_SEND_WQE_BB, &sq) != 0) ||
        (emu_devx_umem_find(ctx, EMU_PRM_GET(in, EMU_QPC_DBR_UMEM),
                            emu_prm_get64(in, EMU_QPC_DBR_ADDR), 8,
                            &dbr) != 0) ||
        ((uintptr_t)dbr % 4 != 0)) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_PARAM,
                               0x24u,
                               "the send queue (%u basic blocks) or "
                               "the doorbell record is not inside its umem",
                               bbs);
    }
    ibqp = emu_devx_make_qp(ctx, st == EMU_ST_DCI, &r, bbs);
    if (ibqp == NULL) {
        return emu_devx_answer(out, outlen, EMU_STAT_LIM,
                               0x25u); /* logged by the call */
    }
    qp          = emu_qp(ibqp);
    qp->by_devx = true;
    pthread_mutex_lock(&emu_raw_lock);
    ret = emu_raw_qp_attach(qp, sq, bbs, (volatile __be32 *)dbr);
    pthread_mutex_unlock(&emu_raw_lock);
    if (ret != 0) {
        ibv_destroy_qp(ibqp);
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_LIM, 0x26u,
                               "no memory to serve the send queue");
    }
    obj->kind = EMU_DEVX_QP;
    obj->qp   = qp;
    obj->id   = ibqp->qp_num;
    return 0;
}

int emu_devx_dct_create(emu_ctx_t *ctx, const uint8_t *in, size_t inlen,
                        uint8_t *out, size_t outlen,
                        struct mlx5dv_devx_obj *obj)
{
    static const char call[] = "mlx5dv_devx_obj_create(CREATE_DCT)";
    const char *name         = ctx->vctx.context.device->name;
    const uint16_t op        = EMU_CMD_CREATE_DCT;
    emu_devx_refs_t r        = {NULL, NULL, NULL, NULL};
    struct mlx5dv_qp_init_attr dv;
    struct ibv_qp_init_attr_ex a;
    struct ibv_qp_attr qa;
    struct ibv_qp *ibqp;
    int ret;

    if (inlen < EMU_DCT_IN_LEN) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_INLEN,
                               0x30u, "%zu input bytes (%u)", inlen,
                               EMU_DCT_IN_LEN);
    }
    ret = emu_devx_find(ctx, call, op, out, outlen, EMU_NUM_PD,
                        EMU_PRM_GET(in, EMU_DCTC_PD), (void **)&r.pd);
    if (ret == 0) {
        ret = emu_devx_find(ctx, call, op, out, outlen, EMU_NUM_CQ,
                            EMU_PRM_GET(in, EMU_DCTC_CQN), (void **)&r.rcq);
    }
    if (ret == 0) {
        ret = emu_devx_find(ctx, call, op, out, outlen, EMU_NUM_SRQ,
                            EMU_PRM_GET(in, EMU_DCTC_SRQN), (void **)&r.srq);
    }
    if (ret != 0) {
        return ret;
    }
    memset(&a, 0, sizeof(a));
    memset(&dv, 0, sizeof(dv));
    a.comp_mask                    = IBV_QP_INIT_ATTR_PD;
    a.pd                           = &r.pd->pd;
    a.send_cq                      = ibv_cq_ex_to_cq(&r.rcq->cq);
    a.recv_cq                      = ibv_cq_ex_to_cq(&r.rcq->cq);
    a.srq                          = &r.srq->srq;
    a.qp_type                      = IBV_QPT_DRIVER;
    dv.comp_mask                   = MLX5DV_QP_INIT_ATTR_MASK_DC;
    dv.dc_init_attr.dc_type        = MLX5DV_DCTYPE_DCT;
    dv.dc_init_attr.dct_access_key = emu_prm_get64(in, EMU_DCTC_KEY);
    ibqp = dcx_emu_mlx5dv_create_qp(&ctx->vctx.context, &a, &dv);
    if (ibqp == NULL) {
        return emu_devx_answer(out, outlen, EMU_STAT_LIM,
                               0x31u); /* logged by the call */
    }
    memset(&qa, 0, sizeof(qa));
    qa.qp_state        = IBV_QPS_INIT;
    qa.port_num        = (uint8_t)EMU_PRM_GET(in, EMU_DCTC_PORT);
    qa.pkey_index      = (uint16_t)EMU_PRM_GET(in, EMU_DCTC_PKEY_INDEX);
    qa.qp_access_flags = emu_devx_access(EMU_PRM_GET(in, EMU_DCTC_RRE),
                                         EMU_PRM_GET(in, EMU_DCTC_RWE),
                                         EMU_PRM_GET(in, EMU_DCTC_RAE));
    ret                = ibv_modify_qp(ibqp, &qa,
                                       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                           IBV_QP_ACCESS_FLAGS);
    if (ret == 0) {
        memset(&qa, 0, sizeof(qa));
        qa.qp_state         = IBV_QPS_RTR;
        qa.path_mtu         = (enum ibv_mtu)EMU_PRM_GET(in, EMU_DCTC_MTU);
        qa.min_rnr_timer    = (uint8_t)EMU_PRM_GET(in, EMU_DCTC_MIN_RNR);
        qa.ah_attr.port_num = (uint8_t)EMU_PRM_GET(in, EMU_DCTC_PORT);
        ret                 = ibv_modify_qp(ibqp, &qa,
                                            IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER | IBV_QP_AV |
                                                IBV_QP_PATH_MTU);
    }
    if (ret == 0) {
        /* extended atomics as the DCT's atomic_mode allows: up to 8 bytes
         * from mode 3 (8B) on; the IB-compatible modes below take the
         * standard 8-byte atomics only */
        bool ext = EMU_PRM_GET(in, EMU_DCTC_ATOMIC) >= EMU_ATOMIC_MODE_8B;

        ret = dcx_soft_dct_set_ext_atomics(emu_qp(ibqp)->soft, ext ? 8 : 0);
    }
    if (ret != 0) {
        ibv_destroy_qp(ibqp);
        return emu_devx_answer(out, outlen, EMU_STAT_BAD_PARAM,
                               0x32u); /* logged by the call */
    }
    obj->kind = EMU_DEVX_DCT;
    obj->qp   = emu_qp(ibqp);
    obj->id   = ibqp->qp_num;
    return 0;
}

/* The verbs attributes and mask of a transition's qpc */
static uint32_t emu_devx_qpc_attr(const emu_qp_t *qp, uint16_t opcode,
                                  const uint8_t *in, struct ibv_qp_attr *a)
{
    uint32_t opt = EMU_PRM_GET(in, EMU_QP_OPT_MASK);
    bool rc      = (qp->kind == EMU_QP_RC);
    uint32_t mask;

    memset(a, 0, sizeof(*a));
    switch (opcode) {
    case EMU_CMD_RST2INIT_QP:
        a->qp_state   = IBV_QPS_INIT;
        a->port_num   = (uint8_t)EMU_PRM_GET(in, EMU_QPC_PORT);
        a->pkey_index = (uint16_t)EMU_PRM_GET(in, EMU_QPC_PKEY_INDEX);
        mask          = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
        if (rc) {
            a->qp_access_flags = emu_devx_access(EMU_PRM_GET(in, EMU_QPC_RRE),
                                                 EMU_PRM_GET(in, EMU_QPC_RWE),
                                                 EMU_PRM_GET(in, EMU_QPC_RAE));
            mask |= IBV_QP_ACCESS_FLAGS;
        }
        return mask;
    case EMU_CMD_INIT2RTR_QP:
        a->qp_state         = IBV_QPS_RTR;
        a->path_mtu         = (enum ibv_mtu)EMU_PRM_GET(in, EMU_QPC_MTU);
        a->ah_attr.port_num = (uint8_t)EMU_PRM_GET(in, EMU_QPC_PORT);
        mask                = IBV_QP_STATE | IBV_QP_PATH_MTU;
        if (!rc) {
            return mask | IBV_QP_AV;
        }
        a->dest_qp_num            = EMU_PRM_GET(in, EMU_QPC_REMOTE_QPN);
        a->rq_psn                 = EMU_PRM_GET(in, EMU_QPC_RQ_PSN);
        a->max_dest_rd_atomic     = (uint8_t)(1u
                                          << EMU_PRM_GET(in, EMU_QPC_LOG_RRA));
        a->min_rnr_timer          = (uint8_t)EMU_PRM_GET(in, EMU_QPC_MIN_RNR);
        a->ah_attr.dlid           = (uint16_t)EMU_PRM_GET(in, EMU_QPC_RLID);
        a->ah_attr.sl             = (uint8_t)EMU_PRM_GET(in, EMU_QPC_SL);
        a->ah_attr.src_path_bits  = (uint8_t)EMU_PRM_GET(in, EMU_QPC_MLID);
        a->ah_attr.is_global      = (uint8_t)EMU_PRM_GET(in, EMU_QPC_GRH);
        a->ah_attr.grh.sgid_index = (uint8_t)EMU_PRM_GET(in,
                                                         EMU_QPC_SGID_INDEX);
        a->ah_attr.grh.hop_limit  = (uint8_t)EMU_PRM_GET(in, EMU_QPC_HOP_LIMIT);
        a->ah_attr.grh.traffic_class = (uint8_t)EMU_PRM_GET(in, EMU_QPC_TCLASS);
        memcpy(a->ah_attr.grh.dgid.raw, in + 24 + EMU_QPC_RGID_BYTE, 16);
        mask |= IBV_QP_AV | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
        if (opt & (EMU_OPT_RRE | EMU_OPT_RAE | EMU_OPT_RWE)) {
            a->qp_access_flags = emu_devx_access(EMU_PRM_GET(in, EMU_QPC_RRE),
                                                 EMU_PRM_GET(in, EMU_QPC_RWE),
                                                 EMU_PRM_GET(in, EMU_QPC_RAE));
            mask |= IBV_QP_ACCESS_FLAGS;
        }
        return mask;
    case EMU_CMD_RTR2RTS_QP:
        a->qp_state      = IBV_QPS_RTS;
        a->timeout       = (uint8_t)EMU_PRM_GET(in, EMU_QPC_ACK_TMO);
        a->retry_cnt     = (uint8_t)EMU_PRM_GET(in, EMU_QPC_RETRY);
        a->rnr_retry     = (uint8_t)EMU_PRM_GET(in, EMU_QPC_RNR_RETRY);
        a->sq_psn        = EMU_PRM_GET(in, EMU_QPC_SQ_PSN);
        a->max_rd_atomic = (uint8_t)(1u << EMU_PRM_GET(in, EMU_QPC_LOG_SRA));
        return IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
               IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
    case EMU_CMD_2ERR_QP:
        a->qp_state = IBV_QPS_ERR;
        return IBV_QP_STATE;
    default: /* 2RST */
        a->qp_state = IBV_QPS_RESET;
        return IBV_QP_STATE;
    }
}

static uint32_t emu_devx_prm_state(enum ibv_qp_state s)
{
    switch (s) {
    case IBV_QPS_INIT:
        return EMU_QPS_INIT;
    case IBV_QPS_RTR:
        return EMU_QPS_RTR;
    case IBV_QPS_RTS:
        return EMU_QPS_RTS;
    case IBV_QPS_SQD:
        return EMU_QPS_SQD;
    case IBV_QPS_SQE:
        return EMU_QPS_SQER;
    case IBV_QPS_ERR:
        return EMU_QPS_ERR;
    default:
        return EMU_QPS_RST;
    }
}

static int emu_devx_query_qp(emu_qp_t *qp, uint8_t *out, size_t outlen,
                             const char *call)
{
    struct ibv_qp *ibqp = &qp->qpx.qp_base;
    struct ibv_qp_init_attr init;
    struct ibv_qp_attr a;
    uint8_t reply[EMU_QUERY_QP_OUT + 8];
    int ret;

    ret = ibv_query_qp(ibqp, &a,
                       IBV_QP_STATE | IBV_QP_DEST_QPN | IBV_QP_AV |
                           IBV_QP_PATH_MTU | IBV_QP_PORT,
                       &init);
    if (ret != 0) {
        return emu_devx_refuse(ibqp->context->device->name, call,
                               EMU_CMD_QUERY_QP, out, outlen, EMU_STAT_BAD_RES,
                               0x40u, "QP 0x%x: %s", ibqp->qp_num,
                               strerror(ret));
    }
    memset(reply, 0, sizeof(reply));
    EMU_PRM_SET(reply, EMU_QPC_STATE, emu_devx_prm_state(a.qp_state));
    EMU_PRM_SET(reply, EMU_QPC_ST,
                (qp->kind == EMU_QP_DCI) ? EMU_ST_DCI : EMU_ST_RC);
    EMU_PRM_SET(reply, EMU_QPC_MTU, a.path_mtu);
    EMU_PRM_SET(reply, EMU_QPC_REMOTE_QPN, a.dest_qp_num);
    EMU_PRM_SET(reply, EMU_QPC_RLID, a.ah_attr.dlid);
    EMU_PRM_SET(reply, EMU_QPC_SL, a.ah_attr.sl);
    EMU_PRM_SET(reply, EMU_QPC_PORT, a.port_num ? a.port_num : 1u);
    EMU_PRM_SET(reply, EMU_QPC_GRH, a.ah_attr.is_global);
    memset(out, 0, outlen);
    memcpy(out, reply, (outlen < sizeof(reply)) ? outlen : sizeof(reply));
    return 0;
}

int emu_devx_qp_cmd(emu_qp_t *qp, const uint8_t *in, size_t inlen, uint8_t *out,
                    size_t outlen, const char *call)
{
    struct ibv_qp *ibqp = &qp->qpx.qp_base;
    const char *name    = ibqp->context->device->name;
    uint16_t opcode     = (uint16_t)EMU_PRM_GET(in, EMU_PRM_OPCODE);
    struct ibv_qp_attr a;
    struct ibv_qp_init_attr init;
    bool was_err;
    uint32_t mask;
    int ret;

    if (EMU_PRM_GET(in, EMU_PRM_OBJ_ID) != ibqp->qp_num) {
        return emu_devx_refuse(name, call, opcode, out, outlen,
                               EMU_STAT_BAD_PARAM, 0x41u,
                               "the command names QP 0x%x, the object is "
                               "0x%x",
                               EMU_PRM_GET(in, EMU_PRM_OBJ_ID), ibqp->qp_num);
    }
    if (opcode == EMU_CMD_QUERY_QP) {
        return emu_devx_query_qp(qp, out, outlen, call);
    }
    if ((opcode < EMU_CMD_RST2INIT_QP) ||
        ((opcode > EMU_CMD_RTR2RTS_QP) && (opcode != EMU_CMD_2ERR_QP) &&
         (opcode != EMU_CMD_2RST_QP))) {
        return emu_devx_refuse(name, call, opcode, out, outlen, EMU_STAT_BAD_OP,
                               0x42u,
                               "not a QP command the emulation models "
                               "(RST2INIT, INIT2RTR, RTR2RTS, 2ERR, 2RST, "
                               "QUERY_QP)");
    }
    if ((opcode <= EMU_CMD_RTR2RTS_QP) && (inlen < EMU_QP_IN_LEN)) {
        return emu_devx_refuse(name, call, opcode, out, outlen,
                               EMU_STAT_BAD_INLEN, 0x43u,
                               "%zu input bytes (%u)", inlen, EMU_QP_IN_LEN);
    }
    /* the last-WQE event comes with the move into ERR, not again */
    was_err = (opcode == EMU_CMD_2ERR_QP) &&
              (ibv_query_qp(ibqp, &a, IBV_QP_STATE, &init) == 0) &&
              (a.qp_state == IBV_QPS_ERR);
    mask = emu_devx_qpc_attr(qp, opcode, in, &a);
    ret  = ibv_modify_qp(ibqp, &a, (int)mask);
    if (ret != 0) { /* ibv_modify_qp said why */
        return emu_devx_answer(out, outlen, EMU_STAT_BAD_STATE, 0x44u);
    }
    memset(out, 0, outlen);
    if ((opcode == EMU_CMD_2ERR_QP) && !was_err && emu_qp_on_srq(qp)) {
        emu_devx_qp_event(qp, EMU_DEVX_EV_SRQ_LAST_WQE);
    }
    return 0;
}

int emu_devx_obj_free(struct mlx5dv_devx_obj *obj)
{
    return ibv_destroy_qp(&obj->qp->qpx.qp_base);
}
