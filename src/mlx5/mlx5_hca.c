/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: the firmware's capabilities, asked through DEVX
 * (QUERY_HCA_CAP) by the open-time probes (strided keys, masked atomics);
 * the answers are decoded by mlx5_pure_dev.c and mlx5_umr.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mlx5/mlx5_int.h"

#include <string.h>

int dcx_mlx5_hca_query(dcx_mlx5_dev_t *dev, unsigned type, void *out)
{
    uint8_t in[DCX_MLX5_HCA_CAP_IN_LEN];
    int ret;

    dcx_mlx5_hca_cap_query_in(in, type);
    ret = mlx5dv_devx_general_cmd(dev->ctx, in, sizeof(in), out,
                                  DCX_MLX5_HCA_CAP_OUT_LEN);
    if (ret != 0) {
        dcx_debug("%s: QUERY_HCA_CAP (type %u) failed: %s",
                  dev->super.caps.name, type, strerror(ret));
    }
    return ret;
}
