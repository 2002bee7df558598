/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A raw CQ of dcx's mlx5 backend seen from outside: its consumer index,
 * the one its doorbell record gives the HCA, whether CQEs were written,
 * and how many receives in place a poll returns at most.
 */
#ifndef DCX_TEST_EMU_MLX5_PEEK_H_
#define DCX_TEST_EMU_MLX5_PEEK_H_

#include "dcx_dev.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* the CQEs software took */
uint32_t emu_mlx5_cq_ci(const dcx_cq_t *cq);
/* the consumer index in the doorbell record */
uint32_t emu_mlx5_cq_set_ci(const dcx_cq_t *cq);
/* nonzero when the n-th CQE past the consumer index is written */
int emu_mlx5_cq_written(const dcx_cq_t *cq, uint32_t n);
/* the most receives in place one poll returns; the rest are copied */
uint32_t emu_mlx5_ip_max(void);

#ifdef __cplusplus
}
#endif

#endif
