/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: the mlx5dv device entry points (libmlx5.so.1 forwards
 * them here, emu_mlx5.c).  Every one first checks that the device or
 * context is one of the emulation's and fails as libmlx5 does for a device
 * of another provider (false, or EOPNOTSUPP).
 */
#include "emu/emu.h"
#include "emu/emu_dv.h"

#include <errno.h>
#include <string.h>

/* The mlx5dv_query_device masks the emulation answers; the others (clock
 * page, core clock, LAG ports) are the ones libmlx5 leaves out when the
 * device has no such thing. */
#define EMU_DV_MASKS                                                           \
    (MLX5DV_CONTEXT_MASK_CQE_COMPRESION | MLX5DV_CONTEXT_MASK_SWP |            \
     MLX5DV_CONTEXT_MASK_STRIDING_RQ | MLX5DV_CONTEXT_MASK_TUNNEL_OFFLOADS |   \
     MLX5DV_CONTEXT_MASK_DYN_BFREGS | MLX5DV_CONTEXT_MASK_FLOW_ACTION_FLAGS |  \
     MLX5DV_CONTEXT_MASK_DC_ODP_CAPS | MLX5DV_CONTEXT_MASK_SIGNATURE_OFFLOAD | \
     MLX5DV_CONTEXT_MASK_DCI_STREAMS | MLX5DV_CONTEXT_MASK_WR_MEMCPY_LENGTH |  \
     MLX5DV_CONTEXT_MASK_CRYPTO_OFFLOAD)

bool dcx_emu_mlx5dv_is_supported(struct ibv_device *device)
{
    return emu_dev_of(device) != NULL;
}

struct ibv_context *dcx_emu_mlx5dv_open_device(struct ibv_device *device,
                                               struct mlx5dv_context_attr *attr)
{
    if (emu_dev_of(device) == NULL) {
        emu_error("mlx5dv_open_device: %p is not an mlx5 device of the "
                  "emulation",
                  (void *)device);
        errno = EOPNOTSUPP;
        return NULL;
    }
    if ((attr != NULL) && ((attr->comp_mask != 0) ||
                           (attr->flags & ~MLX5DV_CONTEXT_FLAGS_DEVX))) {
        emu_error("%s: mlx5dv_open_device: comp_mask 0x%llx (must be 0) or "
                  "unknown flags 0x%x",
                  device->name, (unsigned long long)attr->comp_mask,
                  attr->flags & ~MLX5DV_CONTEXT_FLAGS_DEVX);
        errno = EINVAL;
        return NULL;
    }
    return emu_open(device, (attr != NULL) &&
                                (attr->flags & MLX5DV_CONTEXT_FLAGS_DEVX));
}

int dcx_emu_mlx5dv_query_device(struct ibv_context *ctx,
                                struct mlx5dv_context *attrs)
{
    uint64_t asked;

    if ((ctx == NULL) || (emu_dev_of(ctx->device) == NULL)) {
        emu_error("mlx5dv_query_device: context %p is not of the emulation",
                  (void *)ctx);
        return EOPNOTSUPP;
    }
    asked            = attrs->comp_mask;
    /* as libmlx5: version and flags always, a field only when asked for */
    attrs->version   = 0;
    attrs->flags     = MLX5DV_CONTEXT_FLAGS_CQE_V1;
    attrs->comp_mask = 0;
#define EMU_DV_FIELD(_mask, _field)                       \
    if (asked & (_mask)) {                                \
        memset(&attrs->_field, 0, sizeof(attrs->_field)); \
        attrs->comp_mask |= (_mask);                      \
    }
    EMU_DV_FIELD(MLX5DV_CONTEXT_MASK_CQE_COMPRESION, cqe_comp_caps)
    EMU_DV_FIELD(MLX5DV_CONTEXT_MASK_SWP, sw_parsing_caps)
    EMU_DV_FIELD(MLX5DV_CONTEXT_MASK_STRIDING_RQ, striding_rq_caps)
    EMU_DV_FIELD(MLX5DV_CONTEXT_MASK_TUNNEL_OFFLOADS, tunnel_offloads_caps)
    EMU_DV_FIELD(MLX5DV_CONTEXT_MASK_DYN_BFREGS, max_dynamic_bfregs)
    EMU_DV_FIELD(MLX5DV_CONTEXT_MASK_FLOW_ACTION_FLAGS, flow_action_flags)
    EMU_DV_FIELD(MLX5DV_CONTEXT_MASK_DC_ODP_CAPS, dc_odp_caps)
    EMU_DV_FIELD(MLX5DV_CONTEXT_MASK_SIGNATURE_OFFLOAD, sig_caps)
    EMU_DV_FIELD(MLX5DV_CONTEXT_MASK_DCI_STREAMS, dci_streams_caps)
    EMU_DV_FIELD(MLX5DV_CONTEXT_MASK_WR_MEMCPY_LENGTH, max_wr_memcpy_length)
    EMU_DV_FIELD(MLX5DV_CONTEXT_MASK_CRYPTO_OFFLOAD, crypto_caps)
#undef EMU_DV_FIELD
    if (asked & MLX5DV_CONTEXT_MASK_DCI_STREAMS) {
        /* the soft device's stream channels */
        const dcx_dev_caps_t *caps = dcx_dev_caps(emu_ctx(ctx)->dev->soft);

        if (caps->flags & DCX_CAP_DCI_STREAMS) {
            attrs->dci_streams_caps.max_log_num_concurent =
                (uint8_t)caps->dci_streams_log_max;
            attrs->dci_streams_caps.max_log_num_errored =
                (uint8_t)caps->dci_errored_log_max;
        }
    }
    return 0;
}
