/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: the device's loop to itself for its self-tests
 * (mlx5_loop.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mlx5/mlx5_int.h"
#include "mlx5/mlx5_loop.h"

#include <errno.h>
#include <string.h>

int dcx_mlx5_loop_open(dcx_dev_t *dev, dcx_mlx5_loop_t *l, void *buf,
                       size_t len, uint32_t access, uint32_t srq_flags)
{
    dcx_srq_attr_t srq_attr;

    if ((dcx_pd_alloc(dev, &l->pd) != 0) ||
        (dcx_cq_create(dev, 4, &l->cq) != 0) ||
        (dcx_mr_reg(l->pd, buf, len, access, &l->mr) != 0)) {
        return EIO;
    }
    memset(&srq_attr, 0, sizeof(srq_attr));
    srq_attr.type    = DCX_SRQ_BASIC;
    srq_attr.max_wr  = 1;
    srq_attr.max_sge = 1;
    srq_attr.cq      = l->cq;
    srq_attr.flags   = srq_flags;
    return (dcx_srq_create(l->pd, &srq_attr, &l->srq) != 0) ? EIO : 0;
}

int dcx_mlx5_loop_dct(dcx_mlx5_loop_t *l, uint64_t dc_key, uint32_t access)
{
    dcx_qp_attr_t qp_attr;

    memset(&qp_attr, 0, sizeof(qp_attr));
    qp_attr.type          = DCX_QPT_DCT;
    qp_attr.recv_cq       = l->cq;
    qp_attr.send_cq       = l->cq;
    qp_attr.srq           = l->srq;
    qp_attr.dc_key        = dc_key;
    qp_attr.access        = access;
    qp_attr.min_rnr_timer = 12;
    return dcx_qp_create(l->pd, &qp_attr, &l->dct);
}

int dcx_mlx5_loop_dci(dcx_dev_t *dev, dcx_mlx5_loop_t *l, uint8_t max_rd_atomic)
{
    uint8_t addr[DCX_MLX5_ADDR_LEN];
    size_t addr_len = sizeof(addr);
    dcx_qp_attr_t qp_attr;

    memset(&qp_attr, 0, sizeof(qp_attr));
    qp_attr.type          = DCX_QPT_DCI;
    qp_attr.send_cq       = l->cq;
    qp_attr.max_send_wr   = 2;
    qp_attr.max_send_sge  = 1;
    qp_attr.max_rd_atomic = max_rd_atomic;
    qp_attr.timeout       = 14; /* ~67 ms per retry */
    qp_attr.retry_cnt     = 3;
    qp_attr.rnr_retry     = 3;
    if ((dcx_qp_create(l->pd, &qp_attr, &l->dci) != 0) ||
        (dcx_dev_port_addr(dev, addr, &addr_len) != 0) ||
        (dcx_ah_create(l->pd, addr, addr_len, &l->ah) != 0)) {
        return EIO;
    }
    return 0;
}

void dcx_mlx5_loop_close(dcx_mlx5_loop_t *l)
{
    if (l->ah != NULL)
        dcx_ah_destroy(l->ah);
    if (l->dci != NULL)
        dcx_qp_destroy(l->dci);
    if (l->dct != NULL)
        dcx_qp_destroy(l->dct);
    if (l->srq != NULL)
        dcx_srq_destroy(l->srq);
    if (l->mr != NULL)
        dcx_mr_dereg(l->mr);
    if (l->cq != NULL)
        dcx_cq_destroy(l->cq);
    if (l->pd != NULL)
        dcx_pd_free(l->pd);
}
