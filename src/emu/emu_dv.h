/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The private interface between the emulated libmlx5.so.1 (emu_mlx5.c) and
 * the emulated libibverbs.so.1, which holds every object: libibverbs
 * exports these at version node DCX_EMU_PRIVATE_1, each the implementation
 * of the mlx5dv entry point of the same name without the dcx_emu_ prefix.
 */
#ifndef DCX_EMU_DV_H_
#define DCX_EMU_DV_H_

#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>

#include <stdbool.h>

bool dcx_emu_mlx5dv_is_supported(struct ibv_device *device);
struct ibv_context *
dcx_emu_mlx5dv_open_device(struct ibv_device *device,
                           struct mlx5dv_context_attr *attr);
int dcx_emu_mlx5dv_query_device(struct ibv_context *ctx,
                                struct mlx5dv_context *attrs);

int dcx_emu_mlx5dv_dci_stream_id_reset(struct ibv_qp *qp, uint16_t stream_id);
struct ibv_qp *dcx_emu_mlx5dv_create_qp(struct ibv_context *context,
                                        struct ibv_qp_init_attr_ex *qp_attr,
                                        struct mlx5dv_qp_init_attr *mlx5_attr);
struct mlx5dv_qp_ex *dcx_emu_mlx5dv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex *qp);

struct mlx5dv_mkey *
dcx_emu_mlx5dv_create_mkey(struct mlx5dv_mkey_init_attr *attr);
int dcx_emu_mlx5dv_destroy_mkey(struct mlx5dv_mkey *mkey);
int dcx_emu_mlx5dv_init_obj(struct mlx5dv_obj *obj, uint64_t obj_type);
struct ibv_cq_ex *
dcx_emu_mlx5dv_create_cq(struct ibv_context *context,
                         struct ibv_cq_init_attr_ex *cq_attr,
                         struct mlx5dv_cq_init_attr *mlx5_cq_attr);
int dcx_emu_mlx5dv_devx_general_cmd(struct ibv_context *context, const void *in,
                                    size_t inlen, void *out, size_t outlen);
struct mlx5dv_devx_obj *dcx_emu_mlx5dv_devx_obj_create(struct ibv_context *ctx,
                                                       const void *in,
                                                       size_t inlen, void *out,
                                                       size_t outlen);
int dcx_emu_mlx5dv_devx_obj_modify(struct mlx5dv_devx_obj *obj, const void *in,
                                   size_t inlen, void *out, size_t outlen);
int dcx_emu_mlx5dv_devx_obj_query(struct mlx5dv_devx_obj *obj, const void *in,
                                  size_t inlen, void *out, size_t outlen);
int dcx_emu_mlx5dv_devx_obj_destroy(struct mlx5dv_devx_obj *obj);
int dcx_emu_mlx5dv_devx_qp_modify(struct ibv_qp *qp, const void *in,
                                  size_t inlen, void *out, size_t outlen);
int dcx_emu_mlx5dv_devx_qp_query(struct ibv_qp *qp, const void *in,
                                 size_t inlen, void *out, size_t outlen);
struct mlx5dv_devx_umem *dcx_emu_mlx5dv_devx_umem_reg(struct ibv_context *ctx,
                                                      void *addr, size_t size,
                                                      uint32_t access);
int dcx_emu_mlx5dv_devx_umem_dereg(struct mlx5dv_devx_umem *umem);
struct mlx5dv_devx_uar *dcx_emu_mlx5dv_devx_alloc_uar(struct ibv_context *ctx,
                                                      uint32_t flags);
void dcx_emu_mlx5dv_devx_free_uar(struct mlx5dv_devx_uar *uar);
struct mlx5dv_devx_event_channel *
dcx_emu_mlx5dv_devx_create_event_channel(struct ibv_context *context,
                                         int flags);
void dcx_emu_mlx5dv_devx_destroy_event_channel(struct mlx5dv_devx_event_channel
                                                   *ch);
int dcx_emu_mlx5dv_devx_subscribe_devx_event(
    struct mlx5dv_devx_event_channel *ch, struct mlx5dv_devx_obj *obj,
    uint16_t events_sz, uint16_t events_num[], uint64_t cookie);
ssize_t dcx_emu_mlx5dv_devx_get_event(struct mlx5dv_devx_event_channel *ch,
                                      struct mlx5dv_devx_async_event_hdr *data,
                                      size_t len);

#endif /* DCX_EMU_DV_H_ */
