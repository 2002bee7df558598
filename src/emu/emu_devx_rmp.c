/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: DEVX CREATE_RMP, a shared receive queue in the
 * application's memory (emu_devx.h).
 *
 * The RMP is an SRQ of emu_srq.c whose WQEs are 2^log_wq_sz entries of
 * 2^log_wq_stride bytes at offset 0 of its wq umem, each a 16-byte next
 * segment and data segments, taken as a linked list (wq_type 0) or in ring
 * order (wq_type 1); its doorbell record is at dbr_addr of its dbr umem.
 * The raw-queue engine takes the receives the record counts (emu_raw.h).
 * QPs and DCTs name it by its number, as they name an SRQ.  Multi-packet
 * queues (wq_type 2, 3) and an RMP created in another state than ready
 * are refused.
 */
#include "emu/emu_devx.h"
#include "emu/emu_raw.h"

#include <errno.h>
#include <string.h>

/* create_rmp_in: the rmpc at byte 32, its wq at byte 80 */
#define EMU_RMP_IN_LEN    272u
#define EMU_RMPC_STATE    264u, 4u
#define EMU_WQ_TYPE       640u, 4u
#define EMU_WQ_PD         712u, 24u
#define EMU_WQ_DBR_ADDR   768u
#define EMU_WQ_LOG_STRIDE 908u, 4u
#define EMU_WQ_LOG_SZ     923u, 5u
#define EMU_WQ_DBR_UMEM   960u, 32u
#define EMU_WQ_UMEM       992u, 32u
#define EMU_RMP_STATE_RDY 1u
#define EMU_WQ_LINKED     0u
#define EMU_WQ_CYCLIC     1u

int emu_devx_rmp_create(emu_ctx_t *ctx, const uint8_t *in, size_t inlen,
                        uint8_t *out, size_t outlen,
                        struct mlx5dv_devx_obj *obj)
{
    static const char call[] = "mlx5dv_devx_obj_create(CREATE_RMP)";
    const char *name         = ctx->vctx.context.device->name;
    const uint16_t op        = EMU_CMD_CREATE_RMP;
    struct ibv_srq_init_attr attr;
    uint32_t type, stride, cnt;
    uint8_t *buf, *dbr;
    emu_srq_t *srq;
    emu_pd_t *pd;
    int ret;

    if (inlen < EMU_RMP_IN_LEN) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_INLEN,
                               0x60u, "%zu input bytes (%u)", inlen,
                               EMU_RMP_IN_LEN);
    }
    type   = EMU_PRM_GET(in, EMU_WQ_TYPE);
    stride = 1u << EMU_PRM_GET(in, EMU_WQ_LOG_STRIDE);
    cnt    = 1u << EMU_PRM_GET(in, EMU_WQ_LOG_SZ);
    if (((type != EMU_WQ_LINKED) && (type != EMU_WQ_CYCLIC)) ||
        (EMU_PRM_GET(in, EMU_RMPC_STATE) != EMU_RMP_STATE_RDY) ||
        (stride < 32) || (EMU_PRM_GET(in, EMU_WQ_LOG_SZ) > 16)) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_PARAM,
                               0x61u,
                               "wq_type %u (linked 0, cyclic 1), "
                               "state %u (ready 1), %u WQEs of %u bytes",
                               type, EMU_PRM_GET(in, EMU_RMPC_STATE), cnt,
                               stride);
    }
    pd = emu_num_find(ctx->dev, EMU_NUM_PD, EMU_PRM_GET(in, EMU_WQ_PD));
    if (pd == NULL) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_RES,
                               0x62u, "no PD 0x%x on the device",
                               EMU_PRM_GET(in, EMU_WQ_PD));
    }
    if ((emu_devx_umem_find(ctx, EMU_PRM_GET(in, EMU_WQ_UMEM), 0,
                            (uint64_t)cnt * stride, &buf) != 0) ||
        (emu_devx_umem_find(ctx, EMU_PRM_GET(in, EMU_WQ_DBR_UMEM),
                            emu_prm_get64(in, EMU_WQ_DBR_ADDR), 8,
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
    srq = emu_srq_new(&pd->pd, &attr);
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
    obj->kind = EMU_DEVX_RMP;
    obj->srq  = srq;
    obj->id   = srq->srqn;
    return 0;
}
