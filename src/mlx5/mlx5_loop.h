/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: a loop of the device to itself, for the self-tests at
 * open (mlx5_atomic_probe.c, mlx5_ip_probe.c) that find out by trying
 * what verbs cannot tell: a DCI that sends to a DCT of the same device,
 * over one CQ, an SRQ of one receive and an MR over the test's words.
 */
#ifndef DCX_MLX5_LOOP_H_
#define DCX_MLX5_LOOP_H_

#include "dcx_dev.h"

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Bound of a self-test's wait for its completions: past 4 retries of
 * the DCI's ~67 ms */
#define DCX_MLX5_LOOP_WAIT_NS 2000000000ll

typedef struct dcx_mlx5_loop {
    dcx_pd_t *pd;
    dcx_cq_t *cq;
    dcx_mr_t *mr;
    dcx_srq_t *srq;
    dcx_qp_t *dct;
    dcx_qp_t *dci;
    dcx_ah_t *ah;
} dcx_mlx5_loop_t;

/* The PD, the CQ, an MR over [buf, buf + len) with access, and the SRQ
 * (srq_flags, one receive) of a zeroed loop: 0, or EIO (logged by the
 * call that refused) */
int dcx_mlx5_loop_open(dcx_dev_t *dev, dcx_mlx5_loop_t *l, void *buf,
                       size_t len, uint32_t access, uint32_t srq_flags);

/* The DCT on the loop's SRQ with dc_key and access: dcx_qp_create's 0 or
 * errno, for a caller that takes a refusal (EOPNOTSUPP) as an answer */
int dcx_mlx5_loop_dct(dcx_mlx5_loop_t *l, uint64_t dc_key, uint32_t access);

/* The DCI (max_rd_atomic) and the address handle to the device's own
 * port: 0, or EIO (logged by the call that refused) */
int dcx_mlx5_loop_dci(dcx_dev_t *dev, dcx_mlx5_loop_t *l,
                      uint8_t max_rd_atomic);

/* Destroys what the loop holds, in order */
void dcx_mlx5_loop_close(dcx_mlx5_loop_t *l);

static inline int64_t dcx_mlx5_loop_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

#endif
