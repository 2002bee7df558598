/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: the atomic self-test run at open.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mlx5/mlx5_int.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* Loopback self-test of 64-bit atomics through this backend's own objects:
 * a DCT that allows REMOTE_ATOMIC (the kernel refuses it with EOPNOTSUPP
 * when the HCA has no DC atomics), then one FETCH_ADD of 0 from a DCI to
 * that DCT on a known word.  The fetched value tells the byte order the
 * device uses for atomic results: host order (what upstream mlx5_core
 * selects whenever the firmware offers it) keeps the atomics; big-endian
 * mode, an error or no answer drops them from the caps. */
#define DCX_MLX5_ATOMIC_PATTERN 0x0102030405060708ull
#define DCX_MLX5_SELFTEST_NS    2000000000ll /* > 4 retries of ~67 ms */

static int64_t dcx_mlx5_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

bool dcx_mlx5_atomic_selftest(dcx_mlx5_dev_t *dev)
{
    const char *name = dev->super.caps.name;
    uint64_t words[2] __attribute__((aligned(8)));
    dcx_pd_t *pd   = NULL;
    dcx_cq_t *cq   = NULL;
    dcx_srq_t *srq = NULL;
    dcx_qp_t *dct = NULL, *dci = NULL;
    dcx_mr_t *mr = NULL;
    dcx_ah_t *ah = NULL;
    dcx_srq_attr_t srq_attr;
    dcx_qp_attr_t qp_attr;
    dcx_send_wr_t wr;
    dcx_sge_t sge;
    dcx_wc_t wc;
    uint8_t addr[DCX_MLX5_ADDR_LEN];
    size_t addr_len = sizeof(addr);
    bool ok = false, reported = false;
    int64_t deadline;
    int n = 0, ret;

    words[0] = DCX_MLX5_ATOMIC_PATTERN; /* target */
    words[1] = 0;                       /* fetched value */

    if ((dcx_pd_alloc(&dev->super, &pd) != 0) ||
        (dcx_cq_create(&dev->super, 4, &cq) != 0) ||
        (dcx_mr_reg(pd, words, sizeof(words),
                    DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_ATOMIC,
                    &mr) != 0)) {
        goto out;
    }
    memset(&srq_attr, 0, sizeof(srq_attr));
    srq_attr.type    = DCX_SRQ_BASIC;
    srq_attr.max_wr  = 1;
    srq_attr.max_sge = 1;
    srq_attr.cq      = cq;
    if (dcx_srq_create(pd, &srq_attr, &srq) != 0) {
        goto out;
    }

    memset(&qp_attr, 0, sizeof(qp_attr));
    qp_attr.type          = DCX_QPT_DCT;
    qp_attr.recv_cq       = cq;
    qp_attr.send_cq       = cq;
    qp_attr.srq           = srq;
    qp_attr.dc_key        = 0x5e1f7e57ull;
    qp_attr.access        = DCX_ACCESS_REMOTE_ATOMIC;
    qp_attr.min_rnr_timer = 12;
    dev->selftest         = true;
    ret                   = dcx_qp_create(pd, &qp_attr, &dct);
    dev->selftest         = false;
    if (ret == EOPNOTSUPP) {
        dcx_info("%s: the device has no DC atomics (a DCT refuses "
                 "REMOTE_ATOMIC); atomics disabled",
                 name);
        reported = true;
        goto out;
    } else if (ret != 0) {
        goto out;
    }
    memset(&qp_attr, 0, sizeof(qp_attr));
    qp_attr.type          = DCX_QPT_DCI;
    qp_attr.send_cq       = cq;
    qp_attr.max_send_wr   = 2;
    qp_attr.max_send_sge  = 1;
    qp_attr.max_rd_atomic = 1;
    qp_attr.timeout       = 14; /* ~67 ms per retry */
    qp_attr.retry_cnt     = 3;
    qp_attr.rnr_retry     = 3;
    if ((dcx_qp_create(pd, &qp_attr, &dci) != 0) ||
        (dcx_dev_port_addr(&dev->super, addr, &addr_len) != 0) ||
        (dcx_ah_create(pd, addr, addr_len, &ah) != 0)) {
        goto out;
    }

    sge.addr   = (uintptr_t)&words[1];
    sge.length = 8;
    sge.lkey   = mr->lkey;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id       = 1;
    wr.opcode      = DCX_WR_ATOMIC_FADD;
    wr.flags       = DCX_SEND_SIGNALED;
    wr.num_sge     = 1;
    wr.sg_list     = &sge;
    wr.dest.ah     = ah;
    wr.dest.dctn   = dct->qp_num;
    wr.dest.dc_key = 0x5e1f7e57ull;
    wr.remote_addr = (uintptr_t)&words[0];
    wr.rkey        = mr->rkey;
    wr.compare_add = 0;
    if (dcx_qp_post_send(dci, &wr) != 0) {
        goto out;
    }
    reported = true;
    deadline = dcx_mlx5_now_ns() + DCX_MLX5_SELFTEST_NS;
    do {
        n = dcx_cq_poll(cq, 1, &wc);
    } while ((n == 0) && (dcx_mlx5_now_ns() < deadline));
    if (n <= 0) {
        dcx_warn("%s: atomic self-test: no completion; atomics disabled", name);
    } else if (wc.status != DCX_WC_SUCCESS) {
        dcx_warn("%s: atomic self-test: %s; atomics disabled", name,
                 dcx_wc_status_str((dcx_wc_status_t)wc.status));
    } else if (words[1] == DCX_MLX5_ATOMIC_PATTERN) {
        ok = true;
    } else if (words[1] == __builtin_bswap64(DCX_MLX5_ATOMIC_PATTERN)) {
        dcx_warn("%s: atomics run in big-endian mode on this device "
                 "(firmware without host-endian atomics); dcx needs host "
                 "order, atomics disabled",
                 name);
    } else {
        dcx_warn("%s: atomic self-test fetched 0x%llx, expected 0x%llx; "
                 "atomics disabled",
                 name, (unsigned long long)words[1],
                 (unsigned long long)DCX_MLX5_ATOMIC_PATTERN);
    }

out:
    if (!reported) {
        dcx_info("%s: DC atomics disabled: the self-test could not be set "
                 "up (reason logged above)",
                 name);
    }
    if (ah != NULL)
        dcx_ah_destroy(ah);
    if (dci != NULL)
        dcx_qp_destroy(dci);
    if (dct != NULL)
        dcx_qp_destroy(dct);
    if (srq != NULL)
        dcx_srq_destroy(srq);
    if (mr != NULL)
        dcx_mr_dereg(mr);
    if (cq != NULL)
        dcx_cq_destroy(cq);
    if (pd != NULL)
        dcx_pd_free(pd);
    return ok;
}
