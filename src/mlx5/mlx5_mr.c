/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: protection domains and memory regions.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mlx5/mlx5_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Protection domains and memory regions
 * ------------------------------------------------------------------------ */
int dcx_mlx5_pd_alloc(dcx_dev_t *super, dcx_pd_t **pd_p)
{
    dcx_mlx5_dev_t *dev = dcx_mlx5_dev(super);
    dcx_mlx5_pd_t *pd;
    int ret;

    pd = calloc(1, sizeof(*pd));
    if (pd == NULL) {
        dcx_error("%s: pd: out of memory", super->caps.name);
        return ENOMEM;
    }
    pd->pd = ibv_alloc_pd(dev->ctx);
    if (pd->pd == NULL) {
        ret = errno ? errno : ENOMEM;
        dcx_error("%s: pd: ibv_alloc_pd failed: %s", super->caps.name,
                  strerror(ret));
        free(pd);
        return ret;
    }
    pd->super.dev = super;
    *pd_p         = &pd->super;
    return 0;
}

int dcx_mlx5_pd_free(dcx_pd_t *super)
{
    dcx_mlx5_pd_t *pd = (dcx_mlx5_pd_t *)super;
    int ret;

    ret = ibv_dealloc_pd(pd->pd);
    if (ret != 0) {
        dcx_error("%s: pd: ibv_dealloc_pd failed: %s", super->dev->caps.name,
                  strerror(ret));
        return ret;
    }
    free(pd);
    return 0;
}

int dcx_mlx5_mr_reg(dcx_pd_t *pd, void *addr, size_t length, uint32_t access,
                    dcx_mr_t **mr_p)
{
    const char *name = pd->dev->caps.name;
    dcx_mlx5_mr_t *mr;
    int ret;

    if ((access & (DCX_ACCESS_REMOTE_WRITE | DCX_ACCESS_REMOTE_ATOMIC)) &&
        !(access & DCX_ACCESS_LOCAL_WRITE)) {
        dcx_error("%s: mr %p+%zu: remote write/atomic access needs local "
                  "write",
                  name, addr, length);
        return EINVAL;
    }
    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        dcx_error("%s: mr %p+%zu: out of memory", name, addr, length);
        return ENOMEM;
    }
    mr->mr = ibv_reg_mr(((dcx_mlx5_pd_t *)pd)->pd, addr, length,
                        (int)dcx_mlx5_access_flags(access));
    if (mr->mr == NULL) {
        ret = errno ? errno : ENOMEM;
        dcx_error("%s: mr %p+%zu: ibv_reg_mr failed: %s", name, addr, length,
                  strerror(ret));
        free(mr);
        return ret;
    }
    mr->super.pd     = pd;
    mr->super.addr   = addr;
    mr->super.length = length;
    mr->super.lkey   = mr->mr->lkey;
    mr->super.rkey   = mr->mr->rkey;
    mr->super.access = access;
    *mr_p            = &mr->super;
    return 0;
}

int dcx_mlx5_mr_dereg(dcx_mr_t *super)
{
    dcx_mlx5_mr_t *mr = (dcx_mlx5_mr_t *)super;
    int ret;

    ret = ibv_dereg_mr(mr->mr);
    if (ret != 0) {
        dcx_error("%s: mr %p: ibv_dereg_mr failed: %s",
                  super->pd->dev->caps.name, super->addr, strerror(ret));
        return ret;
    }
    free(mr);
    return 0;
}
