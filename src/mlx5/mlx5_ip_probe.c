/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: the self-test at open that decides receives in place
 * (DCX_CAP_RECV_IN_PLACE).
 *
 * Receives in place are short SENDs the HCA scatters into the CQE of a
 * DCT: rdma-core asks for that on every QP unless MLX5_SCATTER_TO_CQE is
 * "0" (and drops it for a DCT when the kernel does not report the DCT
 * flavour), and mlx5_ib gives a DCT the mode "up to 64 bytes" only when
 * its CQ has 128-byte CQEs.  None of it can be read back through verbs
 * (the environment included: libmlx5 reads it, not this backend), so the
 * test looks: on CQs of 128-byte CQEs, one SEND of a few bytes
 * from the device's own DCI to its own DCT, whose SRQ asks for receives
 * in place, must complete in place with the bytes sent.  Else the
 * capability goes and CQs keep 64-byte CQEs.
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

#define DCX_MLX5_IP_PROBE_KEY 0x1b9ace57ull
#define DCX_MLX5_IP_PROBE_LEN 24u

typedef struct dcx_mlx5_ip_probe {
    dcx_mlx5_loop_t l;
    /* [0, 64): what is sent; [64, 128): the receive's buffer */
    uint8_t buf[128];
} dcx_mlx5_ip_probe_t;

/* 0, or an errno value (logged by who refused) */
static int dcx_mlx5_ip_probe_setup(dcx_mlx5_ip_probe_t *t, dcx_dev_t *dev)
{
    dcx_sge_t sge;

    if (dcx_mlx5_loop_open(dev, &t->l, t->buf, sizeof(t->buf),
                           DCX_ACCESS_LOCAL_WRITE, DCX_SRQ_F_IN_PLACE) != 0) {
        return EIO;
    }
    sge.addr   = (uintptr_t)&t->buf[64];
    sge.length = 64;
    sge.lkey   = t->l.mr->lkey;
    if ((dcx_srq_post_recv(t->l.srq, 2, &sge, 1) != 0) ||
        (dcx_mlx5_loop_dct(&t->l, DCX_MLX5_IP_PROBE_KEY, 0) != 0)) {
        return EIO;
    }
    return dcx_mlx5_loop_dci(dev, &t->l, 0);
}

/* The SEND and its two completions; NULL with why set, or a string
 * naming what was seen */
static const char *dcx_mlx5_ip_probe_run(dcx_mlx5_ip_probe_t *t)
{
    dcx_send_wr_t wr;
    dcx_sge_t sge;
    dcx_wc_t wc[2];
    int64_t deadline;
    bool sent = false, in_place = false;
    int i, n;

    for (i = 0; i < (int)DCX_MLX5_IP_PROBE_LEN; ++i) {
        t->buf[i] = (uint8_t)(0xa0 + i);
    }
    sge.addr   = (uintptr_t)t->buf;
    sge.length = DCX_MLX5_IP_PROBE_LEN;
    sge.lkey   = t->l.mr->lkey;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id       = 1;
    wr.opcode      = DCX_WR_SEND;
    wr.flags       = DCX_SEND_SIGNALED;
    wr.num_sge     = 1;
    wr.sg_list     = &sge;
    wr.dest.ah     = t->l.ah;
    wr.dest.dctn   = t->l.dct->qp_num;
    wr.dest.dc_key = DCX_MLX5_IP_PROBE_KEY;
    if (dcx_qp_post_send(t->l.dci, &wr) != 0) {
        return "the SEND could not be posted";
    }
    deadline = dcx_mlx5_loop_now_ns() + DCX_MLX5_LOOP_WAIT_NS;
    while ((!sent || !in_place) && (dcx_mlx5_loop_now_ns() < deadline)) {
        n = dcx_cq_poll(t->l.cq, 2, wc);
        for (i = 0; i < n; ++i) {
            if (wc[i].status != DCX_WC_SUCCESS) {
                return "a completion failed";
            }
            if (!(wc[i].opcode & DCX_WC_RECV_BIT)) {
                sent = true;
                continue;
            }
            if (!(wc[i].flags & DCX_WC_FLAG_IN_PLACE)) {
                return "the message went to the receive's buffer";
            }
            if ((wc[i].byte_len != DCX_MLX5_IP_PROBE_LEN) ||
                memcmp(wc[i].data, t->buf, DCX_MLX5_IP_PROBE_LEN)) {
                return "the CQE held other bytes than those sent";
            }
            in_place = true;
            dcx_cq_release(t->l.cq);
        }
    }
    return (sent && in_place) ? NULL : "no completion";
}

void dcx_mlx5_ip_probe(dcx_mlx5_dev_t *dev)
{
    const char *why = NULL;
    dcx_mlx5_ip_probe_t t;

    if (!dev->cqe128) {
        return;
    }
    if (!(dev->super.caps.flags & DCX_CAP_DC)) {
        why = "no DC";
    } else {
        memset(&t, 0, sizeof(t));
        dev->super.caps.flags |= DCX_CAP_RECV_IN_PLACE;
        why = (dcx_mlx5_ip_probe_setup(&t, &dev->super) != 0) ?
                  "the test could not be set up (reason logged above)" :
                  dcx_mlx5_ip_probe_run(&t);
        dcx_mlx5_loop_close(&t.l);
    }
    if (why != NULL) {
        dcx_debug("%s: no receives in place: %s", dev->super.caps.name, why);
        dev->super.caps.flags &= ~(uint32_t)DCX_CAP_RECV_IN_PLACE;
        dev->cqe128 = false;
    }
}
