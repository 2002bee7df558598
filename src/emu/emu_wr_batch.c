/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: the batch of work requests a QP builds between
 * ibv_wr_start and ibv_wr_complete (emu_qp_t's batch arrays, under its
 * wr_lock): a WR appended by a builder, the WR a setter completes, the
 * arrays grown as the WRs need, and the batch's one error, the first rule
 * a WR broke (logged once).  The builders of emu_wr.c and emu_umr.c fill
 * it; emu_wr.c posts it at ibv_wr_complete.
 */
#include "emu/emu.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void emu_wr_fail(emu_qp_t *qp, int err, const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    if (qp->batch_err != 0) {
        return; /* one line per batch: the first broken rule */
    }
    qp->batch_err = err;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    emu_error("%s: %s 0x%x: WR %u of the batch: %s; ibv_wr_complete will "
              "fail with %s",
              qp->qpx.qp_base.context->device->name,
              (qp->kind == EMU_QP_DCI) ? "dci" :
              (qp->kind == EMU_QP_UD)  ? "ud qp" :
                                         "rc qp",
              qp->qpx.qp_base.qp_num, qp->batch_n, msg, strerror(err));
}

emu_wr_t *emu_wr_cur(emu_qp_t *qp, const char *setter)
{
    emu_wr_t *w = emu_wr_last(qp);

    if (qp->batch_err != 0) {
        return NULL;
    }
    if ((w == NULL) || emu_wr_done(qp, w)) {
        emu_wr_fail(qp, EINVAL, "%s without a builder before it", setter);
        return NULL;
    }
    return w;
}

int emu_grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
    uint32_t n = (*cap > 0) ? *cap : 4;
    void *q;

    if (need <= *cap) {
        return 0;
    }
    while (n < need) {
        n *= 2;
    }
    q = realloc(*p, (size_t)n * elem);
    if (q == NULL) {
        return ENOMEM;
    }
    *p   = q;
    *cap = n;
    return 0;
}

emu_wr_t *emu_wr_push(emu_qp_t *qp, uint8_t opcode, const char *name)
{
    emu_wr_t *w = emu_wr_last(qp);
    unsigned flags;

    if (qp->batch_err != 0) {
        return NULL;
    }
    if ((w != NULL) && !emu_wr_done(qp, w)) {
        emu_wr_fail(qp, EINVAL, "left without its %s setter before %s",
                    emu_wr_missing(w), name);
        return NULL;
    }
    if (qp->batch_n >= qp->max_send_wr) {
        emu_wr_fail(qp, ENOMEM,
                    "more WRs in one batch than the send queue "
                    "holds (%u)",
                    qp->max_send_wr);
        return NULL;
    }
    if (emu_grow((void **)&qp->batch, &qp->batch_cap, qp->batch_n + 1,
                 sizeof(*qp->batch)) != 0) {
        emu_wr_fail(qp, ENOMEM, "out of memory");
        return NULL;
    }
    w = &qp->batch[qp->batch_n++];
    memset(w, 0, sizeof(*w));
    flags        = qp->qpx.wr_flags;
    w->wr.wr_id  = qp->qpx.wr_id;
    w->wr.opcode = opcode;
    w->wr.flags  = (((flags & IBV_SEND_SIGNALED) || qp->sig_all) ?
                        DCX_SEND_SIGNALED :
                        0) |
                  ((flags & IBV_SEND_FENCE) ? DCX_SEND_FENCE : 0) |
                  ((flags & IBV_SEND_SOLICITED) ? DCX_SEND_SOLICITED : 0);
    w->sge_off = qp->batch_sge_n;
    w->inl_off = qp->batch_inl_n;
    w->il_off  = qp->batch_il_n;
    return w;
}
