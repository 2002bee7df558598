/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: the DEVX object commands (emu_devx.h).
 *
 *  - mlx5dv_devx_obj_create/modify/query/destroy: the QP and DCT commands
 *    (emu_devx_qp.c), the mkey's (emu_devx_mkey.c), the RMP's and XRQ's
 *    (emu_devx_rmp.c); any other command is refused as firmware refuses
 *    one it does not know;
 *  - mlx5dv_devx_qp_modify/qp_query: the same commands on a QP created
 *    through verbs.
 *
 * An object created joins the list of emu_devx_obj.c, which its events
 * and the other DEVX calls find it in, and leaves it when destroyed.
 */
#include "emu/emu_devx.h"
#include "emu/emu_dv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct mlx5dv_devx_obj *dcx_emu_mlx5dv_devx_obj_create(struct ibv_context *ctx,
                                                       const void *in,
                                                       size_t inlen, void *out,
                                                       size_t outlen)
{
    static const char call[] = "mlx5dv_devx_obj_create";
    struct mlx5dv_devx_obj *obj;
    emu_ctx_t *ectx;
    uint16_t opcode;
    int ret;

    ectx = emu_devx_ctx(ctx, call, in, inlen, out, outlen);
    if (ectx == NULL) {
        return NULL;
    }
    opcode = (uint16_t)EMU_PRM_GET(in, EMU_PRM_OPCODE);
    if ((opcode != EMU_CMD_CREATE_QP) && (opcode != EMU_CMD_CREATE_DCT) &&
        (opcode != EMU_CMD_CREATE_MKEY) && (opcode != EMU_CMD_CREATE_RMP) &&
        (opcode != EMU_CMD_CREATE_XRQ)) {
        emu_devx_refuse(ctx->device->name, call, opcode, out, outlen,
                        EMU_STAT_BAD_OP, 0x2u,
                        "not an object the emulation creates (QP, DCT, "
                        "MKEY, RMP, XRQ)");
        return NULL;
    }
    obj = calloc(1, sizeof(*obj));
    if (obj == NULL) {
        emu_devx_refuse(ctx->device->name, call, opcode, out, outlen,
                        EMU_STAT_LIM, 0x3u, "out of memory");
        return NULL;
    }
    obj->ctx = ectx;
    memset(out, 0, outlen);
    switch (opcode) {
    case EMU_CMD_CREATE_QP:
        ret = emu_devx_qp_create(ectx, in, inlen, out, outlen, obj);
        break;
    case EMU_CMD_CREATE_DCT:
        ret = emu_devx_dct_create(ectx, in, inlen, out, outlen, obj);
        break;
    case EMU_CMD_CREATE_MKEY:
        ret = emu_devx_mkey_create(ectx, in, inlen, out, outlen, obj);
        break;
    case EMU_CMD_CREATE_XRQ:
        ret = emu_devx_xrq_create(ectx, in, inlen, out, outlen, obj);
        break;
    default:
        ret = emu_devx_rmp_create(ectx, in, inlen, out, outlen, obj);
        break;
    }
    if (ret != 0) {
        free(obj);
        errno = ret;
        return NULL;
    }
    EMU_PRM_SET(out, EMU_PRM_OBJ_ID, obj->id);
    emu_devx_obj_link(obj);
    return obj;
}

static int emu_devx_obj_cmd(struct mlx5dv_devx_obj *obj, const void *in,
                            size_t inlen, void *out, size_t outlen,
                            const char *call)
{
    struct ibv_context *ctx;

    if (emu_devx_obj_check(obj, call) == NULL) {
        return EINVAL;
    }
    ctx = &obj->ctx->vctx.context;
    if (emu_devx_ctx(ctx, call, in, inlen, out, outlen) == NULL) {
        return errno;
    }
    if (obj->kind == EMU_DEVX_XRQ) {
        return emu_devx_xrq_cmd(obj, in, inlen, out, outlen, call);
    }
    if (obj->kind != EMU_DEVX_QP) {
        return emu_devx_refuse(ctx->device->name, call,
                               (uint16_t)EMU_PRM_GET(in, EMU_PRM_OPCODE), out,
                               outlen, EMU_STAT_BAD_OP, 0x4u,
                               "no command on a DCT, an mkey or an RMP is "
                               "modelled");
    }
    return emu_devx_qp_cmd(obj->qp, in, inlen, out, outlen, call);
}

int dcx_emu_mlx5dv_devx_obj_modify(struct mlx5dv_devx_obj *obj, const void *in,
                                   size_t inlen, void *out, size_t outlen)
{
    return emu_devx_obj_cmd(obj, in, inlen, out, outlen,
                            "mlx5dv_devx_obj_modify");
}

int dcx_emu_mlx5dv_devx_obj_query(struct mlx5dv_devx_obj *obj, const void *in,
                                  size_t inlen, void *out, size_t outlen)
{
    return emu_devx_obj_cmd(obj, in, inlen, out, outlen,
                            "mlx5dv_devx_obj_query");
}

int dcx_emu_mlx5dv_devx_obj_destroy(struct mlx5dv_devx_obj *obj)
{
    int ret;

    if (emu_devx_obj_check(obj, "mlx5dv_devx_obj_destroy") == NULL) {
        return EINVAL;
    }
    switch (obj->kind) {
    case EMU_DEVX_MKEY:
        ret = emu_devx_mkey_free(obj);
        break;
    case EMU_DEVX_RMP:
    case EMU_DEVX_XRQ:
        ret = ibv_destroy_srq(&obj->srq->srq);
        break;
    default:
        ret = emu_devx_obj_free(obj);
        break;
    }
    if (ret != 0) {
        errno = ret;
        return ret;
    }
    emu_devx_obj_unlink(obj);
    free(obj);
    return 0;
}

/* A QP created through verbs, on a DEVX context */
static int emu_devx_verbs_qp(struct ibv_qp *qp, const void *in, size_t inlen,
                             void *out, size_t outlen, const char *call)
{
    if ((qp == NULL) ||
        (emu_devx_ctx(qp->context, call, in, inlen, out, outlen) == NULL)) {
        if (qp == NULL) {
            emu_error("%s: no QP", call);
            errno = EINVAL;
        }
        return errno;
    }
    return emu_devx_qp_cmd(emu_qp(qp), in, inlen, out, outlen, call);
}

int dcx_emu_mlx5dv_devx_qp_modify(struct ibv_qp *qp, const void *in,
                                  size_t inlen, void *out, size_t outlen)
{
    return emu_devx_verbs_qp(qp, in, inlen, out, outlen,
                             "mlx5dv_devx_qp_modify");
}

int dcx_emu_mlx5dv_devx_qp_query(struct ibv_qp *qp, const void *in,
                                 size_t inlen, void *out, size_t outlen)
{
    return emu_devx_verbs_qp(qp, in, inlen, out, outlen,
                             "mlx5dv_devx_qp_query");
}
