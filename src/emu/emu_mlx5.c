/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulated libmlx5.so.1: the mlx5dv entry points the emulation models,
 * forwarded to the emulated libibverbs.so.1 that holds the objects
 * (emu_dv.h).  The rest are in emu_unsup_mlx5.c.
 */
#include "emu/emu_dv.h"

bool mlx5dv_is_supported(struct ibv_device *device)
{
    return dcx_emu_mlx5dv_is_supported(device);
}

struct ibv_context *mlx5dv_open_device(struct ibv_device *device,
                                       struct mlx5dv_context_attr *attr)
{
    return dcx_emu_mlx5dv_open_device(device, attr);
}

int mlx5dv_query_device(struct ibv_context *ctx_in,
                        struct mlx5dv_context *attrs_out)
{
    return dcx_emu_mlx5dv_query_device(ctx_in, attrs_out);
}

struct ibv_qp *mlx5dv_create_qp(struct ibv_context *context,
                                struct ibv_qp_init_attr_ex *qp_attr,
                                struct mlx5dv_qp_init_attr *mlx5_qp_attr)
{
    return dcx_emu_mlx5dv_create_qp(context, qp_attr, mlx5_qp_attr);
}

int mlx5dv_dci_stream_id_reset(struct ibv_qp *qp, uint16_t stream_id)
{
    return dcx_emu_mlx5dv_dci_stream_id_reset(qp, stream_id);
}

struct mlx5dv_qp_ex *mlx5dv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex *qp)
{
    return dcx_emu_mlx5dv_qp_ex_from_ibv_qp_ex(qp);
}

struct mlx5dv_mkey *
mlx5dv_create_mkey(struct mlx5dv_mkey_init_attr *mkey_init_attr)
{
    return dcx_emu_mlx5dv_create_mkey(mkey_init_attr);
}

int mlx5dv_destroy_mkey(struct mlx5dv_mkey *mkey)
{
    return dcx_emu_mlx5dv_destroy_mkey(mkey);
}

int mlx5dv_devx_general_cmd(struct ibv_context *context, const void *in,
                            size_t inlen, void *out, size_t outlen)
{
    return dcx_emu_mlx5dv_devx_general_cmd(context, in, inlen, out, outlen);
}

int mlx5dv_init_obj(struct mlx5dv_obj *obj, uint64_t obj_type)
{
    return dcx_emu_mlx5dv_init_obj(obj, obj_type);
}

struct ibv_cq_ex *mlx5dv_create_cq(struct ibv_context *context,
                                   struct ibv_cq_init_attr_ex *cq_attr,
                                   struct mlx5dv_cq_init_attr *mlx5_cq_attr)
{
    return dcx_emu_mlx5dv_create_cq(context, cq_attr, mlx5_cq_attr);
}
