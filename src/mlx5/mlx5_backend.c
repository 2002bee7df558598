/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The mlx5 backend's registration with the device layer: its knobs and
 * its listing (discovery and opening are mlx5_dev.c's).  Built only where
 * configure found rdma-core's mlx5 direct verbs (config/m4/mlx5.m4).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mlx5/mlx5_int.h"

#include <stddef.h>

typedef struct dcx_mlx5_params {
    uint32_t enable; /* MLX5 */
    uint32_t raw;    /* MLX5_RAW */
    uint32_t tm;     /* MLX5_TM */
    uint32_t ip;     /* MLX5_RECV_IN_PLACE */
} dcx_mlx5_params_t;

static int dcx_mlx5_backend_list(const void *block, dcx_dev_info_t *out,
                                 unsigned max, unsigned *count_p)
{
    const dcx_mlx5_params_t *params = block;

    if (!params->enable) {
        *count_p = 0;
        return 0;
    }
    return dcx_mlx5_list(out, max, count_p, params->raw != 0, params->tm != 0,
                         params->ip != 0);
}

static const dcx_param_t dcx_mlx5_params[] = {
    {.name = "MLX5",
     .dflt = "y",
     .doc =
         "Offer NVIDIA/Mellanox devices through rdma-core mlx5 (ConnectX-5 or newer).\n"
         "Has no effect if dcx was built without the mlx5 backend.",
     .type   = DCX_PARAM_BOOL,
     .offset = offsetof(dcx_mlx5_params_t, enable),
     .size   = sizeof(uint32_t),
     .min    = 0,
     .max    = 1},
    {.name = "MLX5_RAW",
     .dflt = "y",
     .doc =
         "Write work requests straight into the send and receive queues and\n"
         "read completions from CQ memory, as UCX's mlx5 transports do; with\n"
         "n, post and poll through libmlx5's ibv_wr_* and ibv_start_poll.",
     .type   = DCX_PARAM_BOOL,
     .offset = offsetof(dcx_mlx5_params_t, raw),
     .size   = sizeof(uint32_t),
     .min    = 0,
     .max    = 1},
    {.name = "MLX5_TM",
     .dflt = "y",
     .doc =
         "Offer tag matching on DC where the device has it (DEVX, raw queues\n"
         "and an InfiniBand port); with n, the device reports none.",
     .type   = DCX_PARAM_BOOL,
     .offset = offsetof(dcx_mlx5_params_t, tm),
     .size   = sizeof(uint32_t),
     .min    = 0,
     .max    = 1},
    {.name = "MLX5_RECV_IN_PLACE",
     .dflt = "n",
     .doc =
         "Give 128-byte CQEs to CQs and let the DCT of an SRQ that asks for\n"
         "receives in place scatter a SEND of up to 64 bytes into its CQE,\n"
         "which the completion then points at (raw queues, and a self-test\n"
         "at open that sees it happen).  Costs twice the CQ memory and some\n"
         "instructions per message, for the payload arriving with its CQE;\n"
         "off by default, as UCX's own mlx5 transports keep receive inline\n"
         "scatter (RX_INLINE) off.  With n, messages go to the buffers.",
     .type   = DCX_PARAM_BOOL,
     .offset = offsetof(dcx_mlx5_params_t, ip),
     .size   = sizeof(uint32_t),
     .min    = 0,
     .max    = 1}};

/* Listed first: a NIC before any model of one. */
const dcx_backend_t dcx_mlx5_backend = {
    .name        = "mlx5",
    .order       = 10,
    .params      = dcx_mlx5_params,
    .num_params  = sizeof(dcx_mlx5_params) / sizeof(dcx_mlx5_params[0]),
    .params_size = sizeof(dcx_mlx5_params_t),
    .list        = dcx_mlx5_backend_list,
    .open        = dcx_mlx5_open};

DCX_BACKEND_REGISTER(dcx_mlx5_backend)
