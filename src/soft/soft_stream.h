/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: DCIs with stream channels (soft_stream.c), as the files of
 * src/soft that meet them see them.
 */
#ifndef DCX_SOFT_STREAM_H_
#define DCX_SOFT_STREAM_H_

#include "soft_objs.h"

#define SOFT_STREAMS_LOG_MAX 6u /* 64 streams per DCI */

/* A DCI with streams (super.super.num_streams != 0): a container of
 * channel DCIs; no engine state of its own */
typedef struct soft_stream {
    soft_qp_t super;
    soft_qp_t **ch; /* [n] channel DCIs, stream_of = this */
    uint32_t n;
    uint32_t max_errored; /* the DCI fails at this many errored streams */
    uint32_t errored;     /* streams in error now */
    int going_down;       /* the whole DCI is moving to ERR */
    /* a channel went to ERR (soft_qp_to_error, engine lock held): set at
     * creation, so that the requester below tells the stream without
     * calling its file */
    void (*ch_errored)(soft_qp_t *ch);
} soft_stream_t;

static inline int soft_qp_has_streams(const soft_qp_t *qp)
{
    return qp->super.num_streams != 0;
}

/* soft_post.c: a DCI in ERR back to RTS, its unpolled completions kept */
void soft_qp_rearm(soft_qp_t *qp);

int soft_stream_create(dcx_pd_t *pd, const dcx_qp_attr_t *attr,
                       dcx_qp_t **qp_p);
int soft_stream_destroy(soft_qp_t *qp);
int soft_stream_set_error(soft_qp_t *qp);
int soft_stream_recover(soft_qp_t *qp);
int soft_stream_reset(dcx_qp_t *qp, uint16_t stream_id);
int soft_stream_set_timers(soft_qp_t *qp, uint8_t timeout, uint8_t retry_cnt,
                           uint8_t rnr_retry, uint32_t max_rd_atomic);
/* the channel of stream_id, or NULL (logged) */
soft_qp_t *soft_stream_channel(soft_qp_t *qp, uint16_t stream_id);

#endif
