/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device requester: a DCI's send WQEs, their states and completions
 * (soft_req.c), and the DCI's posts (soft_post.c), transmission and timers,
 * with the small copy its inline messages are made of.  Sits on
 * soft_dev.h (the device a DCI's log line names) and soft_objs.h.
 */
#ifndef DCX_SOFT_REQ_H_
#define DCX_SOFT_REQ_H_

#include "dcx_dev.h"
#include "soft_base.h"
#include "soft_wire.h"
#include "soft_objs.h"
#include "soft_dev.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A copy of a few bytes without a call: the pieces of a small inline
 * message (headers of 8 bytes and less) cost more in calls than in
 * bytes; up to 32 bytes (a TMH and 16 bytes of a tagged message) in two
 * overlapping 16-byte halves. */
static inline void soft_copy_small(uint8_t *d, const uint8_t *s, size_t len)
{
    uint64_t a, b, c, e;
    uint32_t x, y;

    if (len > 16) {
        if (len > 32) {
            memcpy(d, s, len);
            return;
        }
        memcpy(&a, s, 8);
        memcpy(&b, s + 8, 8);
        memcpy(&c, s + len - 16, 8);
        memcpy(&e, s + len - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + 8, &b, 8);
        memcpy(d + len - 16, &c, 8);
        memcpy(d + len - 8, &e, 8);
    } else if (len >= 8) {
        memcpy(&a, s, 8);
        memcpy(&b, s + len - 8, 8);
        memcpy(d, &a, 8);
        if (len != 8) { /* a word: one store (a put_short's common size) */
            memcpy(d + len - 8, &b, 8);
        }
    } else if (len >= 4) {
        memcpy(&x, s, 4);
        memcpy(&y, s + len - 4, 4);
        memcpy(d, &x, 4);
        memcpy(d + len - 4, &y, 4);
    } else {
        for (; len > 0; --len) {
            *d++ = *s++;
        }
    }
}

/* Requester helpers shared by soft_req.c, soft_post.c and soft_qp.c */
static inline soft_swqe_t *soft_wqe(soft_qp_t *qp, uint32_t idx)
{
    return &qp->sq[idx & qp->sq_mask];
}

static inline const char *soft_qp_dev_name(soft_qp_t *qp)
{
    return qp->dev->super.caps.name;
}

/* Every requester state change goes through here (DCX_LOG_LEVEL=trace). */
static inline void soft_wqe_state(soft_qp_t *qp, soft_swqe_t *w,
                                  soft_wqe_state_t state)
{
    dcx_trace("%s: dci 0x%x msn %u %s: %s -> %s", soft_qp_dev_name(qp),
              qp->super.qp_num, w->msn, soft_opinfo[w->wr.opcode].name,
              soft_wqe_state_names[w->state], soft_wqe_state_names[state]);
    w->state = state;
}

/* Notes a request of ours queued at ring position 'pos' of the peer, for
 * soft_req_prod, without reading the peer's ring head (a line the peer
 * writes at every pop: a read per post would move it between the two
 * cores twice per message).  A watch starts when none runs (the
 * completion of our newest request ends it, soft_req_watch_done), with the
 * head taken to be at our packet, where it is at most: the first prod
 * check reads the real one, and finding it elsewhere, looks again later.
 * A watch that runs keeps its start: a check that finds the head moved
 * restarts it.  Returns 1 if this started the watch. */
static inline int soft_req_watch(soft_peer_t *peer, uint64_t pos, uint64_t now)
{
    int start = (peer->watch_since == 0);

    if (start) {
        peer->watch_since = now;
        peer->watch_head  = pos;
    }
    peer->watch_pos = pos + 1;
    return start;
}

/* The WQE of a light post: what completion (wr_id, opcode, flags, imm),
 * retransmission (the destination, remote address and key) and the direct
 * copy (num_sge) read of a SEND, SEND_IMM or RDMA WRITE; not its sg list
 * (the data is in w->inl) nor the atomic and memory-key fields, which no
 * path reads for these opcodes (soft_req_send_packets sends zero
 * arguments).  The caller sets credits, msn and state. */
static inline void soft_light_wqe_record(soft_swqe_t *w,
                                         const dcx_send_wr_t *wr,
                                         soft_peer_t *peer, uint64_t total)
{
    /* the WR's first 64 bytes (wr_id to rkey) in one block copy: four
     * vector moves where field by field took twice as many; the caller's
     * sg list pointer is not kept */
    memcpy(&w->wr, wr, offsetof(dcx_send_wr_t, compare_add));
    w->wr.sg_list     = NULL;
    w->wr.atomic_size = 0;
    w->mkw            = NULL;
    w->peer           = peer;
    w->total_len      = total;
    w->sent_off       = total;
    w->recv_off       = 0;
    w->forced         = SOFT_NO_STATUS;
    w->checked        = 1;
    w->all_sent       = 1;
    w->rd_counted     = 0;
    w->copy_refused   = 0;
    w->tx_end         = 0;
}

/* soft_req.c */
void soft_wqe_release(soft_qp_t *qp, soft_swqe_t *w);
int soft_wqe_push_cqe(soft_qp_t *qp, soft_swqe_t *w, uint32_t idx,
                      uint8_t status, uint32_t byte_len);

/* soft_post.c: the post functions a QP's creation installs (soft_qp.c):
 * a DCI's until its first WR, a DCT's; a DCI's in ERR (below); a failing
 * post (dcx_soft_qp_post_failing); the posts of the device's own DCIs; a
 * DCI's slots retired and its reset */
int soft_dci_post_first(dcx_qp_t *qp, const dcx_send_wr_t *wr);
int soft_dct_post_send(dcx_qp_t *qp, const dcx_send_wr_t *wr);
int soft_dci_post_flush(dcx_qp_t *qp, const dcx_send_wr_t *wr);
int soft_post_failing(soft_qp_t *qp, const dcx_send_wr_t *wr,
                      dcx_wc_status_t status);
int soft_qp_post_locked(soft_qp_t *qp, const dcx_send_wr_t *wr);
void soft_qp_retire(soft_qp_t *qp, uint32_t sq_idx);
void soft_qp_reset(soft_qp_t *qp);

/* A DCI that went to ERR (soft_qp_to_error) posts through
 * soft_dci_post_flush: inline, so that the requester installs it without
 * calling up into the QP's file */
static inline void soft_qp_flush_mode(soft_qp_t *qp)
{
    __atomic_store_n(&qp->super.post_send, &soft_dci_post_flush,
                     __ATOMIC_RELEASE);
}

/* soft_qp_ops.c: the device's QP operations, for every kind of QP */
int soft_qp_create(dcx_pd_t *pd, const dcx_qp_attr_t *attr, dcx_qp_t **qp_p);
int soft_qp_destroy(dcx_qp_t *qp);
int soft_qp_set_error(dcx_qp_t *qp);
int soft_qp_recover(dcx_qp_t *qp);
/* soft_qp.c: the same, and the timers of dcx_soft_qp_set_timers, for a QP
 * without streams (a DCI's stream channels are such QPs) */
int soft_qp_create_plain(dcx_pd_t *pd, const dcx_qp_attr_t *attr,
                         dcx_qp_t **qp_p);
int soft_qp_destroy_plain(dcx_qp_t *qp);
int soft_qp_set_error_plain(dcx_qp_t *qp);
int soft_qp_recover_plain(dcx_qp_t *qp);
int soft_qp_set_timers_plain(dcx_qp_t *qp, uint8_t timeout, uint8_t retry_cnt,
                             uint8_t rnr_retry, uint32_t max_rd_atomic);
void soft_req_run(soft_qp_t *qp, uint64_t now);
void soft_req_timers(soft_dev_t *dev, uint64_t now);
void soft_comp_packet(soft_dev_t *dev, const soft_pkt_t *pkt,
                      const void *payload);
void soft_qp_to_error(soft_qp_t *qp, const char *reason);
void soft_req_acked(soft_qp_t *qp, uint64_t now);
void soft_req_prod(soft_dev_t *dev, soft_peer_t *peer, uint64_t now);
int soft_req_post_direct(soft_qp_t *qp, const dcx_send_wr_t *wr,
                         soft_peer_t *peer, uint64_t total);
/* A WRITE or READ just queued by the general post (w, at sq_head - 1) on
 * a DCI in RTS that had nothing else outstanding, without a fault rule or
 * an RNR wait: its local sges checked, then the initiator's copy, and
 * completed at once when that took it (0); 1 when it goes the general
 * way (soft_req_run), nothing done but the check. */
int soft_req_run_direct(soft_qp_t *qp, soft_swqe_t *w);

#endif
