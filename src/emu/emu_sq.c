/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: a QP's send queue, the WRs posted to its soft QP and
 * not yet retired (emu_qp_t's sq, under sq_lock).  The soft WR's wr_id is
 * the post's sequence (with streams, the stream in the top bits and the
 * stream's own sequence below), which finds the application's wr_id in
 * the queue when its completion is polled.  ibv_wr_complete posts
 * (emu_wr.c); the CQ's poll retires (emu_cq.c).
 */
#include "emu/emu.h"

uint64_t emu_sq_take_slot(emu_qp_t *qp, emu_wr_t *w)
{
    uint64_t s, seq;

    if (qp->num_streams == 0) {
        seq                                 = qp->sq_posted;
        qp->sq[seq % qp->max_send_wr].wr_id = w->wr.wr_id;
        return seq;
    }
    s                                                   = w->wr.stream_id;
    seq                                                 = qp->st_posted[s];
    qp->sq[s * qp->st_depth + seq % qp->st_depth].wr_id = w->wr.wr_id;
    return (s << EMU_STREAM_SHIFT) | seq;
}

void emu_sq_posted(emu_qp_t *qp, const emu_wr_t *w)
{
    if (qp->num_streams == 0) {
        qp->sq_posted++;
    } else {
        qp->st_posted[w->wr.stream_id]++;
    }
}

/* A DCI with streams: seq names the stream and its sequence; the
 * completion retires the WR and the stream's earlier ones (they executed
 * in order before it).  sq_lock held. */
static uint64_t emu_sq_retire_stream(emu_qp_t *qp, uint64_t seq)
{
    uint64_t stream = seq >> EMU_STREAM_SHIFT, sseq = seq & EMU_STREAM_SEQ;

    if ((stream >= qp->num_streams) || (sseq < qp->st_retired[stream]) ||
        (sseq >= qp->st_posted[stream])) {
        return 0; /* from before a RESET: its WR is gone */
    }
    qp->st_retired[stream] = sseq + 1;
    return qp->sq[stream * qp->st_depth + sseq % qp->st_depth].wr_id;
}

uint64_t emu_sq_retire(emu_qp_t *qp, uint64_t seq)
{
    uint64_t wr_id;

    pthread_mutex_lock(&qp->sq_lock);
    if (qp->num_streams > 0) {
        wr_id = emu_sq_retire_stream(qp, seq);
    } else if ((seq < qp->sq_retired) || (seq >= qp->sq_posted)) {
        wr_id = 0; /* a completion from before a RESET: its WR is gone */
    } else {
        wr_id          = qp->sq[seq % qp->max_send_wr].wr_id;
        qp->sq_retired = seq + 1;
    }
    pthread_mutex_unlock(&qp->sq_lock);
    return wr_id;
}
