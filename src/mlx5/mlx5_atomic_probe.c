/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: which atomics the device offers, and the self-test
 * that checks them at open.
 *
 * Verbs reports 64-bit compare-swap and fetch-add (atomic_cap); the masked
 * atomics, which UCT's 32-bit operations, swap and bitwise operations
 * need, only the firmware's capabilities report (QUERY_HCA_CAP through
 * DEVX: the operations and the operand sizes of RC and of DC).
 *
 * The self-test then runs each kind once, looped back through this
 * backend's own objects: a DCT that allows REMOTE_ATOMIC (the kernel
 * refuses it with EOPNOTSUPP when the HCA has no DC atomics), a DCI, and
 * operations that change nothing on known words.  The fetched values tell
 * the byte order the device uses.  8-byte results must come in host order
 * (what mlx5_core selects whenever the firmware offers it): a device in
 * big-endian mode, an error or no answer drops the atomics.  A 4-byte
 * masked result may come in either order, the host-order mode being for
 * 8-byte operands: network order sets dev->atomic4_be, and every such
 * completion turns the value around (mlx5_raw_sq.c).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mlx5/mlx5_int.h"
#include "mlx5/mlx5_loop.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DCX_MLX5_ATOMIC_PATTERN   0x0102030405060708ull
#define DCX_MLX5_ATOMIC_PATTERN32 0x0a0b0c0du
#define DCX_MLX5_SELFTEST_KEY     0x5e1f7e57ull
#define DCX_ATOMIC_MASKED32 \
    (DCX_ATOMIC_MASKED_FADD32 | DCX_ATOMIC_MASKED_CSWAP32)
#define DCX_ATOMIC_MASKED64 \
    (DCX_ATOMIC_MASKED_FADD64 | DCX_ATOMIC_MASKED_CSWAP64)

uint32_t dcx_mlx5_atomic_masked_caps(dcx_mlx5_dev_t *dev)
{
    const char *why = NULL;
    uint8_t *general, *atomic;
    uint32_t masked = 0;

    if (!dev->devx) {
        dcx_debug("%s: no DEVX context: no masked atomics",
                  dev->super.caps.name);
        return 0;
    }
    general = calloc(2, DCX_MLX5_HCA_CAP_OUT_LEN);
    if (general == NULL) {
        return 0;
    }
    atomic = general + DCX_MLX5_HCA_CAP_OUT_LEN;
    if ((dcx_mlx5_hca_query(dev, DCX_MLX5_CAP_GENERAL, general) == 0) &&
        (dcx_mlx5_hca_query(dev, DCX_MLX5_CAP_ATOMIC, atomic) == 0) &&
        (dcx_mlx5_atomic_hca_parse(general, atomic, DCX_MLX5_HCA_CAP_OUT_LEN,
                                   &masked, &why) != 0)) {
        dcx_debug("%s: %s: no masked atomics", dev->super.caps.name, why);
    }
    free(general);
    dcx_debug("%s: masked atomics the firmware reports: 0x%x",
              dev->super.caps.name, masked);
    return masked;
}

/* The self-test's loopback objects and words */
typedef struct dcx_mlx5_selftest {
    dcx_mlx5_dev_t *dev;
    dcx_mlx5_loop_t l;
    /* [0]: the 8-byte target, [1]: two 4-byte targets, [2]: the fetched
     * value */
    uint64_t words[3] __attribute__((aligned(8)));
} dcx_mlx5_selftest_t;

/* 0, EOPNOTSUPP (the device has no DC atomics, logged), or another errno
 * (the objects could not be made, logged by who refused) */
static int dcx_mlx5_selftest_setup(dcx_mlx5_selftest_t *t)
{
    dcx_dev_t *dev = &t->dev->super;
    int ret;

    if (dcx_mlx5_loop_open(dev, &t->l, t->words, sizeof(t->words),
                           DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_ATOMIC,
                           0) != 0) {
        return EIO;
    }
    t->dev->selftest = true;
    ret              = dcx_mlx5_loop_dct(&t->l, DCX_MLX5_SELFTEST_KEY,
                                         DCX_ACCESS_REMOTE_ATOMIC);
    t->dev->selftest = false;
    if (ret == EOPNOTSUPP) {
        dcx_info("%s: the device has no DC atomics (a DCT refuses "
                 "REMOTE_ATOMIC); atomics disabled",
                 dev->caps.name);
        return ret;
    } else if (ret != 0) {
        return ret;
    }
    return dcx_mlx5_loop_dci(dev, &t->l, 1);
}

/* Runs one atomic of 'size' bytes on target, its old value fetched into
 * words[2]; true when it completed well (else logged, "what" naming it) */
static bool dcx_mlx5_selftest_run(dcx_mlx5_selftest_t *t, dcx_send_wr_t *wr,
                                  void *target, uint32_t size, const char *what)
{
    const char *name = t->dev->super.caps.name;
    dcx_sge_t sge;
    dcx_wc_t wc;
    int64_t deadline;
    int n;

    t->words[2]     = 0;
    sge.addr        = (uintptr_t)&t->words[2];
    sge.length      = size;
    sge.lkey        = t->l.mr->lkey;
    wr->wr_id       = 1;
    wr->flags       = DCX_SEND_SIGNALED;
    wr->num_sge     = 1;
    wr->sg_list     = &sge;
    wr->dest.ah     = t->l.ah;
    wr->dest.dctn   = t->l.dct->qp_num;
    wr->dest.dc_key = DCX_MLX5_SELFTEST_KEY;
    wr->remote_addr = (uintptr_t)target;
    wr->rkey        = t->l.mr->rkey;
    if (dcx_qp_post_send(t->l.dci, wr) != 0) {
        dcx_warn("%s: atomic self-test: the %s could not be posted", name,
                 what);
        return false;
    }
    deadline = dcx_mlx5_loop_now_ns() + DCX_MLX5_LOOP_WAIT_NS;
    do {
        n = dcx_cq_poll(t->l.cq, 1, &wc);
    } while ((n == 0) && (dcx_mlx5_loop_now_ns() < deadline));
    if (n <= 0) {
        dcx_warn("%s: atomic self-test: no completion of the %s", name, what);
        return false;
    }
    if (wc.status != DCX_WC_SUCCESS) {
        dcx_warn("%s: atomic self-test: the %s failed: %s", name, what,
                 dcx_wc_status_str((dcx_wc_status_t)wc.status));
        return false;
    }
    return true;
}

/* The 8-byte atomics: FETCH_ADD of 0, and (if offered) a masked
 * compare-swap comparing and swapping no bit; the flags that work */
static uint32_t dcx_mlx5_selftest_64(dcx_mlx5_selftest_t *t, uint32_t flags)
{
    const char *name = t->dev->super.caps.name;
    uint32_t ok      = 0;
    dcx_send_wr_t wr;

    memset(&wr, 0, sizeof(wr));
    wr.opcode = DCX_WR_ATOMIC_FADD;
    if (!dcx_mlx5_selftest_run(t, &wr, &t->words[0], 8, "fetch-add")) {
        return 0;
    }
    if (t->words[2] == __builtin_bswap64(DCX_MLX5_ATOMIC_PATTERN)) {
        dcx_warn("%s: atomics run in big-endian mode on this device "
                 "(firmware without host-endian atomics); dcx needs host "
                 "order, atomics disabled",
                 name);
        return 0;
    } else if (t->words[2] != DCX_MLX5_ATOMIC_PATTERN) {
        dcx_warn("%s: atomic self-test fetched 0x%llx, expected 0x%llx; "
                 "atomics disabled",
                 name, (unsigned long long)t->words[2],
                 (unsigned long long)DCX_MLX5_ATOMIC_PATTERN);
        return 0;
    }
    ok = DCX_ATOMIC_FADD64 | DCX_ATOMIC_CSWAP64;
    if (!(flags & DCX_ATOMIC_MASKED64)) {
        return ok;
    }
    memset(&wr, 0, sizeof(wr));
    wr.opcode      = DCX_WR_ATOMIC_MASKED_CSWAP;
    wr.atomic_size = 8;
    if (!dcx_mlx5_selftest_run(t, &wr, &t->words[0], 8,
                               "8-byte masked compare-swap")) {
        return ok;
    }
    if ((t->words[2] != DCX_MLX5_ATOMIC_PATTERN) ||
        (t->words[0] != DCX_MLX5_ATOMIC_PATTERN)) {
        dcx_warn("%s: atomic self-test: an 8-byte masked compare-swap "
                 "fetched 0x%llx and left 0x%llx (both 0x%llx expected); "
                 "masked atomics disabled",
                 name, (unsigned long long)t->words[2],
                 (unsigned long long)t->words[0],
                 (unsigned long long)DCX_MLX5_ATOMIC_PATTERN);
        return ok;
    }
    return ok | DCX_ATOMIC_MASKED64;
}

/* A 4-byte masked fetch-add of 0: its result's byte order; the flags */
static uint32_t dcx_mlx5_selftest_32(dcx_mlx5_selftest_t *t)
{
    const char *name = t->dev->super.caps.name;
    uint32_t *target = (uint32_t *)&t->words[1];
    uint32_t fetched;
    dcx_send_wr_t wr;

    memset(&wr, 0, sizeof(wr));
    wr.opcode      = DCX_WR_ATOMIC_MASKED_FADD;
    wr.atomic_size = 4;
    if (!dcx_mlx5_selftest_run(t, &wr, &target[1], 4,
                               "4-byte masked fetch-add")) {
        return 0;
    }
    memcpy(&fetched, &t->words[2], sizeof(fetched));
    if ((target[0] != ~DCX_MLX5_ATOMIC_PATTERN32) ||
        (target[1] != DCX_MLX5_ATOMIC_PATTERN32)) {
        dcx_warn("%s: atomic self-test: a 4-byte masked fetch-add of 0 "
                 "changed memory; 4-byte atomics disabled",
                 name);
        return 0;
    }
    if (fetched == __builtin_bswap32(DCX_MLX5_ATOMIC_PATTERN32)) {
        t->dev->atomic4_be = true;
    } else if (fetched != DCX_MLX5_ATOMIC_PATTERN32) {
        dcx_warn("%s: atomic self-test: a 4-byte masked fetch-add fetched "
                 "0x%x, expected 0x%x in either byte order; 4-byte atomics "
                 "disabled",
                 name, fetched, DCX_MLX5_ATOMIC_PATTERN32);
        return 0;
    }
    dcx_debug("%s: 4-byte atomic results in %s order", name,
              t->dev->atomic4_be ? "network" : "host");
    return DCX_ATOMIC_MASKED32;
}

uint32_t dcx_mlx5_atomic_selftest(dcx_mlx5_dev_t *dev)
{
    uint32_t flags = dev->super.caps.atomic_flags;
    dcx_mlx5_selftest_t t;
    uint32_t ok = 0;
    int ret;

    memset(&t, 0, sizeof(t));
    t.dev      = dev;
    t.words[0] = DCX_MLX5_ATOMIC_PATTERN;
    t.words[1] = ((uint64_t)DCX_MLX5_ATOMIC_PATTERN32 << 32) |
                 (uint32_t)~DCX_MLX5_ATOMIC_PATTERN32;
    dev->atomic4_be = false;
    ret             = dcx_mlx5_selftest_setup(&t);
    if (ret == 0) {
        ok = dcx_mlx5_selftest_64(&t, flags);
        if ((ok != 0) && (flags & DCX_ATOMIC_MASKED32)) {
            ok |= dcx_mlx5_selftest_32(&t);
        }
    } else if (ret != EOPNOTSUPP) {
        dcx_info("%s: DC atomics disabled: the self-test could not be set "
                 "up (reason logged above)",
                 dev->super.caps.name);
    }
    dcx_mlx5_loop_close(&t.l);
    return ok & flags;
}
