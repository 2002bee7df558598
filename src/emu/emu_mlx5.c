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

struct mlx5dv_devx_obj *mlx5dv_devx_obj_create(struct ibv_context *context,
                                               const void *in, size_t inlen,
                                               void *out, size_t outlen)
{
    return dcx_emu_mlx5dv_devx_obj_create(context, in, inlen, out, outlen);
}

int mlx5dv_devx_obj_modify(struct mlx5dv_devx_obj *obj, const void *in,
                           size_t inlen, void *out, size_t outlen)
{
    return dcx_emu_mlx5dv_devx_obj_modify(obj, in, inlen, out, outlen);
}

int mlx5dv_devx_obj_query(struct mlx5dv_devx_obj *obj, const void *in,
                          size_t inlen, void *out, size_t outlen)
{
    return dcx_emu_mlx5dv_devx_obj_query(obj, in, inlen, out, outlen);
}

int mlx5dv_devx_obj_destroy(struct mlx5dv_devx_obj *obj)
{
    return dcx_emu_mlx5dv_devx_obj_destroy(obj);
}

int mlx5dv_devx_qp_modify(struct ibv_qp *qp, const void *in, size_t inlen,
                          void *out, size_t outlen)
{
    return dcx_emu_mlx5dv_devx_qp_modify(qp, in, inlen, out, outlen);
}

int mlx5dv_devx_qp_query(struct ibv_qp *qp, const void *in, size_t inlen,
                         void *out, size_t outlen)
{
    return dcx_emu_mlx5dv_devx_qp_query(qp, in, inlen, out, outlen);
}

struct mlx5dv_devx_umem *mlx5dv_devx_umem_reg(struct ibv_context *ctx,
                                              void *addr, size_t size,
                                              uint32_t access)
{
    return dcx_emu_mlx5dv_devx_umem_reg(ctx, addr, size, access);
}

int mlx5dv_devx_umem_dereg(struct mlx5dv_devx_umem *umem)
{
    return dcx_emu_mlx5dv_devx_umem_dereg(umem);
}

struct mlx5dv_devx_uar *mlx5dv_devx_alloc_uar(struct ibv_context *context,
                                              uint32_t flags)
{
    return dcx_emu_mlx5dv_devx_alloc_uar(context, flags);
}

void mlx5dv_devx_free_uar(struct mlx5dv_devx_uar *devx_uar)
{
    dcx_emu_mlx5dv_devx_free_uar(devx_uar);
}

struct mlx5dv_devx_event_channel *mlx5dv_devx_create_event_channel(
    struct ibv_context *context,
    enum mlx5dv_devx_create_event_channel_flags flags)
{
    return dcx_emu_mlx5dv_devx_create_event_channel(context, (int)flags);
}

void mlx5dv_devx_destroy_event_channel(struct mlx5dv_devx_event_channel
                                           *event_channel)
{
    dcx_emu_mlx5dv_devx_destroy_event_channel(event_channel);
}

int mlx5dv_devx_subscribe_devx_event(
    struct mlx5dv_devx_event_channel *event_channel,
    struct mlx5dv_devx_obj *obj, uint16_t events_sz, uint16_t events_num[],
    uint64_t cookie)
{
    return dcx_emu_mlx5dv_devx_subscribe_devx_event(event_channel, obj,
                                                    events_sz, events_num,
                                                    cookie);
}

ssize_t mlx5dv_devx_get_event(struct mlx5dv_devx_event_channel *event_channel,
                              struct mlx5dv_devx_async_event_hdr *event_data,
                              size_t event_resp_len)
{
    return dcx_emu_mlx5dv_devx_get_event(event_channel, event_data,
                                         event_resp_len);
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
