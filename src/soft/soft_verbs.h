/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the operations of dcx_dev.h that open the device and make
 * and destroy its objects (soft_dev.c, soft_pd.c, soft_mr.c with the key
 * table, soft_srq.c, soft_ah.c), and what the backend carries to the
 * open and checks (soft_backend.c).  Sits on soft_objs.h.
 */
#ifndef DCX_SOFT_VERBS_H_
#define DCX_SOFT_VERBS_H_

#include "dcx_dev.h"
#include "dcx_soft.h"
#include "soft_base.h"
#include "soft_objs.h"

#include <stddef.h>
#include <stdint.h>

/* soft_backend.c: what a listed soft device carries to its open
 * (dcx_dev_info_t.priv), and the checks both make */
typedef struct soft_dev_info {
    char fabric[40];
    dcx_soft_limits_t limits; /* merged with the defaults */
} soft_dev_info_t;

int soft_fabric_name_ok(const char *name);
int soft_limits_ok(const dcx_soft_limits_t *l, const char *who);
void soft_limits_merge(dcx_soft_limits_t *out, const dcx_soft_limits_t *in);

/* The device (soft_dev.c) and its objects: soft_pd.c, soft_mr.c (with the
 * key table), soft_srq.c, soft_ah.c */
int soft_dev_open(const dcx_dev_info_t *info, dcx_dev_t **dev_p);
int soft_pd_alloc(dcx_dev_t *dev, dcx_pd_t **pd_p);
int soft_pd_free(dcx_pd_t *pd);
int soft_mr_reg(dcx_pd_t *pd, void *addr, size_t length, uint32_t access,
                dcx_mr_t **mr_p);
int soft_mr_dereg(dcx_mr_t *mr);
int soft_key_insert(soft_dev_t *dev, soft_mr_t *mr, const char *what);
void soft_key_remove(soft_dev_t *dev, soft_mr_t *mr);
void soft_req_key_gone(soft_dev_t *dev, uint32_t lkey);
int soft_srq_create(dcx_pd_t *pd, const dcx_srq_attr_t *attr,
                    dcx_srq_t **srq_p);
int soft_srq_destroy(dcx_srq_t *srq);
int soft_addr_check_op(dcx_dev_t *dev, const void *addr, size_t len, char *why,
                       size_t why_len);
int soft_ah_create(dcx_pd_t *pd, const void *addr, size_t len, dcx_ah_t **ah_p);
int soft_ah_destroy(dcx_ah_t *ah);

#endif
