/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a raw CQ of dcx's mlx5 backend tells the HCA, for the tests of
 * receives in place (emu_mlx5_peek.h): read in the backend's objects.
 */
#include "emu_mlx5_peek.h"

#include "mlx5/mlx5_int.h"

#include <endian.h>

uint32_t emu_mlx5_cq_ci(const dcx_cq_t *cq)
{
    return ((const dcx_mlx5_cq_t *)cq)->raw->ci;
}

uint32_t emu_mlx5_cq_set_ci(const dcx_cq_t *cq)
{
    return be32toh(((const dcx_mlx5_cq_t *)cq)->raw->dbrec[0]) & 0xffffff;
}

int emu_mlx5_cq_written(const dcx_cq_t *cq, uint32_t n)
{
    const dcx_mlx5_raw_cq_t *rc = ((const dcx_mlx5_cq_t *)cq)->raw;
    uint32_t idx                = rc->ci + n - 1;
    const struct mlx5_cqe64 *cqe;

    cqe = (const struct mlx5_cqe64 *)(rc->buf64 + ((size_t)(idx & rc->cqe_mask)
                                                   << rc->cqe_shift));
    return !((__atomic_load_n(&cqe->op_own, __ATOMIC_ACQUIRE) ^
              (idx >> rc->cnt_shift)) &
             MLX5_CQE_OWNER_MASK);
}

uint32_t emu_mlx5_ip_max(void)
{
    return DCX_MLX5_IP_MAX;
}
