/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: DEVX shared receive queues in the application's
 * memory (emu_devx.h): CREATE_RMP, and CREATE_XRQ with its DC parameters
 * (SET_XRQ_DC_PARAMS_ENTRY).
 *
 * Either is an SRQ of emu_srq.c whose WQEs are 2^log_wq_sz entries of
 * 2^log_wq_stride bytes at offset 0 of its wq umem, each a 16-byte next
 * segment and data segments, taken as a linked list (wq_type 0) or in ring
 * order (wq_type 1); its doorbell record is at dbr_addr of its dbr umem.
 * The raw-queue engine takes the receives the record counts (emu_raw.h).
 * QPs and DCTs name it by its number, as they name an SRQ.  Multi-packet
 * queues (wq_type 2, 3) and an RMP created in another state than ready
 * are refused.
 *
 * An XRQ of the tag-matching topology is a tag-matching soft SRQ whose
 * completions, list operations included, go to the CQ its context names;
 * its list holds 2^log_matching_list_sz slots (one is always the free
 * head), and the command QP's list-operation WQEs run on it
 * (emu_raw_tm.c).  Its rendezvous requests are fetched by the device, so
 * the rendezvous offload must be asked for; an XRQ of no special topology
 * is a plain shared receive queue.  The DC parameters are taken on an XRQ
 * created for DC only, and checked; none of them changes what the soft
 * device does: its rendezvous reads and FINs reach the sender through the
 * DCT and DC key that the request's RAVH names, on the soft fabric's one
 * path.
 */
#include "emu/emu_devx.h"
#include "emu/emu_raw.h"

#include <errno.h>
#include <string.h>

/* A work queue context (wq), by bit offset from its start */
#define EMU_WQ_TYPE       0u, 4u
#define EMU_WQ_PD         72u, 24u
#define EMU_WQ_DBR_ADDR   128u
#define EMU_WQ_LOG_STRIDE 268u, 4u
#define EMU_WQ_LOG_SZ     283u, 5u
#define EMU_WQ_DBR_UMEM   320u, 32u
#define EMU_WQ_UMEM       352u, 32u
#define EMU_WQ_LINKED     0u
#define EMU_WQ_CYCLIC     1u
#define EMU_WQ_LEN        192u /* bytes */

/* create_rmp_in: the rmpc at byte 32, its wq at byte 80 */
#define EMU_RMP_IN_LEN    272u
#define EMU_RMPC_STATE    264u, 4u
#define EMU_RMP_WQ        640u
#define EMU_RMP_STATE_RDY 1u

/* create_xrq_in: the xrqc at byte 16, its wq at byte 144 */
#define EMU_XRQ_IN_LEN      336u
#define EMU_XRQC_TOPOLOGY   148u, 4u
#define EMU_XRQC_OFFLOAD    156u, 4u
#define EMU_XRQC_DC         255u, 1u
#define EMU_XRQC_CQN        200u, 24u
#define EMU_XRQC_LOG_LIST   384u, 4u
#define EMU_XRQ_WQ          1152u
#define EMU_XRQ_TOPO_BASIC  0u
#define EMU_XRQ_TOPO_TM     1u
#define EMU_XRQ_OFFLOAD_RND 1u

/* set_xrq_dc_params_entry_in */
#define EMU_XRQ_DC_IN_LEN 48u
#define EMU_XRQ_DC_XRQN   72u, 24u

/* The SRQ of the wq at bit 'wq' of the command, served by the engine from
 * the application's memory; a tag-matching one when tm is not NULL.  0,
 * or the errno of the refusal (output filled) */
static int emu_devx_wq_srq(emu_ctx_t *ctx, const char *call, uint16_t op,
                           const uint8_t *in, uint32_t wq,
                           const dcx_srq_attr_t *tm, uint8_t *out,
                           size_t outlen, emu_srq_t **srq_p)
{
    const char *name = ctx->vctx.context.device->name;
    struct ibv_srq_init_attr attr;
    uint32_t type, stride, cnt, log_sz;
    uint8_t *buf, *dbr;
    emu_srq_t *srq;
    emu_pd_t *pd;
    int ret;

    type   = emu_prm_get(in, wq + EMU_WQ_TYPE);
    stride = 1u << emu_prm_get(in, wq + EMU_WQ_LOG_STRIDE);
    log_sz = emu_prm_get(in, wq + EMU_WQ_LOG_SZ);
    cnt    = 1u << log_sz;
    if (((type != EMU_WQ_LINKED) && (type != EMU_WQ_CYCLIC)) || (stride < 32) ||
        (log_sz > 16)) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_PARAM,
                               0x61u,
                               "wq_type %u (linked 0, cyclic 1), %u WQEs of "
                               "%u bytes",
                               type, cnt, stride);
    }
    pd = emu_num_find(ctx->dev, EMU_NUM_PD, emu_prm_get(in, wq + EMU_WQ_PD));
    if (pd == NULL) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_RES,
                               0x62u, "no PD 0x%x on the device",
                               emu_prm_get(in, wq + EMU_WQ_PD));
    }
    if ((emu_devx_umem_find(ctx, emu_prm_get(in, wq + EMU_WQ_UMEM), 0,
                            (uint64_t)cnt * stride, &buf) != 0) ||
        (emu_devx_umem_find(ctx, emu_prm_get(in, wq + EMU_WQ_DBR_UMEM),
                            emu_prm_get64(in, wq + EMU_WQ_DBR_ADDR), 8,
                            &dbr) != 0) ||
        ((uintptr_t)dbr % 4 != 0)) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_PARAM,
                               0x63u,
                               "the queue (%u WQEs of %u bytes) or "
                               "the doorbell record is not inside its umem",
                               cnt, stride);
    }
    memset(&attr, 0, sizeof(attr));
    attr.attr.max_wr  = cnt;
    attr.attr.max_sge = (stride - sizeof(struct mlx5_wqe_srq_next_seg)) /
                        sizeof(struct mlx5_wqe_data_seg);
    srq = emu_srq_new(&pd->pd, &attr, tm);
    if (srq == NULL) {
        return emu_devx_answer(out, outlen, EMU_STAT_LIM,
                               0x64u); /* logged by the call */
    }
    pthread_mutex_lock(&emu_raw_lock);
    ret = emu_raw_srq_attach(srq, buf, cnt, stride, type == EMU_WQ_LINKED,
                             (volatile __be32 *)dbr);
    pthread_mutex_unlock(&emu_raw_lock);
    if (ret != 0) {
        ibv_destroy_srq(&srq->srq);
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_LIM, 0x65u,
                               "no memory to serve the queue");
    }
    *srq_p = srq;
    return 0;
}

int emu_devx_rmp_create(emu_ctx_t *ctx, const uint8_t *in, size_t inlen,
                        uint8_t *out, size_t outlen,
                        struct mlx5dv_devx_obj *obj)
{
    static const char call[] = "mlx5dv_devx_obj_create(CREATE_RMP)";
    const char *name         = ctx->vctx.context.device->name;
    const uint16_t op        = EMU_CMD_CREATE_RMP;
    emu_srq_t *srq;
    int ret;

    if (inlen < EMU_RMP_IN_LEN) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_INLEN,
                               0x60u, "%zu input bytes (%u)", inlen,
                               EMU_RMP_IN_LEN);
    }
    if (EMU_PRM_GET(in, EMU_RMPC_STATE) != EMU_RMP_STATE_RDY) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_PARAM,
                               0x66u, "state %u (ready 1)",
                               EMU_PRM_GET(in, EMU_RMPC_STATE));
    }
    ret = emu_devx_wq_srq(ctx, call, op, in, EMU_RMP_WQ, NULL, out, outlen,
                          &srq);
    if (ret != 0) {
        return ret;
    }
    obj->kind = EMU_DEVX_RMP;
    obj->srq  = srq;
    obj->id   = srq->srqn;
    return 0;
}

int emu_devx_xrq_create(emu_ctx_t *ctx, const uint8_t *in, size_t inlen,
                        uint8_t *out, size_t outlen,
                        struct mlx5dv_devx_obj *obj)
{
    static const char call[]   = "mlx5dv_devx_obj_create(CREATE_XRQ)";
    const char *name           = ctx->vctx.context.device->name;
    const uint16_t op          = EMU_CMD_CREATE_XRQ;
    const dcx_dev_caps_t *caps = dcx_dev_caps(ctx->dev->soft);
    uint32_t topo, log_list, max_log;
    dcx_srq_attr_t tm;
    emu_srq_t *srq;
    emu_cq_t *cq;
    int ret;

    if (inlen < EMU_XRQ_IN_LEN) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_INLEN,
                               0x70u, "%zu input bytes (%u)", inlen,
                               EMU_XRQ_IN_LEN);
    }
    topo = EMU_PRM_GET(in, EMU_XRQC_TOPOLOGY);
    if (topo == EMU_XRQ_TOPO_BASIC) {
        ret = emu_devx_wq_srq(ctx, call, op, in, EMU_XRQ_WQ, NULL, out, outlen,
                              &srq);
        if (ret == 0) {
            obj->kind = EMU_DEVX_XRQ;
            obj->srq  = srq;
            obj->id   = srq->srqn;
        }
        return ret;
    }
    log_list = EMU_PRM_GET(in, EMU_XRQC_LOG_LIST);
    max_log  = emu_log2(caps->tm_max_tags + 1);
    if ((topo != EMU_XRQ_TOPO_TM) || !(caps->flags & DCX_CAP_TM) ||
        (EMU_PRM_GET(in, EMU_XRQC_OFFLOAD) != EMU_XRQ_OFFLOAD_RND) ||
        (log_list < 1) || (log_list > max_log)) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_PARAM,
                               0x71u,
                               "topology %u (none 0, tag matching 1), offload "
                               "%u (rendezvous 1 with tag matching), "
                               "log_matching_list_sz %u (1..%u)",
                               topo, EMU_PRM_GET(in, EMU_XRQC_OFFLOAD),
                               log_list, max_log);
    }
    cq = emu_num_find(ctx->dev, EMU_NUM_CQ, EMU_PRM_GET(in, EMU_XRQC_CQN));
    if (cq == NULL) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_RES,
                               0x72u, "no CQ 0x%x on the device",
                               EMU_PRM_GET(in, EMU_XRQC_CQN));
    }
    memset(&tm, 0, sizeof(tm));
    tm.type        = DCX_SRQ_TM;
    tm.cq          = cq->soft;
    tm.tm_max_tags = (1u << log_list) - 1;
    tm.tm_max_ops  = caps->tm_max_ops;
    ret = emu_devx_wq_srq(ctx, call, op, in, EMU_XRQ_WQ, &tm, out, outlen,
                          &srq);
    if (ret != 0) {
        return ret;
    }
    ret = emu_xrq_init(srq, cq, 1u << log_list,
                       EMU_PRM_GET(in, EMU_XRQC_DC) != 0);
    if (ret != 0) {
        ibv_destroy_srq(&srq->srq);
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_LIM, 0x73u,
                               "no memory for a list of %u slots",
                               1u << log_list);
    }
    obj->kind = EMU_DEVX_XRQ;
    obj->srq  = srq;
    obj->id   = srq->srqn;
    return 0;
}

int emu_devx_xrq_cmd(struct mlx5dv_devx_obj *obj, const uint8_t *in,
                     size_t inlen, uint8_t *out, size_t outlen,
                     const char *call)
{
    const char *name = obj->ctx->vctx.context.device->name;
    uint16_t op      = (uint16_t)EMU_PRM_GET(in, EMU_PRM_OPCODE);
    emu_xrq_t *xrq   = obj->srq->xrq;

    if (op != EMU_CMD_SET_XRQ_DC_PARAMS) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_OP,
                               0x74u,
                               "the only command on an XRQ modelled is "
                               "SET_XRQ_DC_PARAMS_ENTRY (0x%x)",
                               EMU_CMD_SET_XRQ_DC_PARAMS);
    }
    if (inlen < EMU_XRQ_DC_IN_LEN) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_INLEN,
                               0x75u, "%zu input bytes (%u)", inlen,
                               EMU_XRQ_DC_IN_LEN);
    }
    if (EMU_PRM_GET(in, EMU_XRQ_DC_XRQN) != obj->id) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_PARAM,
                               0x76u, "xrqn 0x%x is not the object's (0x%x)",
                               EMU_PRM_GET(in, EMU_XRQ_DC_XRQN), obj->id);
    }
    if ((xrq == NULL) || !xrq->dc) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_STATE,
                               0x77u,
                               "XRQ 0x%x was not created for DC with tag "
                               "matching",
                               obj->id);
    }
    memset(out, 0, outlen);
    return 0;
}
