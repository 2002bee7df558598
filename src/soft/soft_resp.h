/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device responder (soft_resp.c; its answers, soft_answer.c): the
 * packets it serves, its answers and the acknowledgements it stores in a
 * requester's ack table, and the tag-matching engine it drives on a TM SRQ
 * (soft_tm.c).  Sits on
 * soft_dev.h, soft_objs.h and soft_port.h (the kick after a store).
 */
#ifndef DCX_SOFT_RESP_H_
#define DCX_SOFT_RESP_H_

#include "dcx_dev.h"
#include "soft_base.h"
#include "soft_wire.h"
#include "soft_objs.h"
#include "soft_dev.h"
#include "soft_port.h"

#include <stdint.h>

/* Stores word (DCI generation << 32 | next msn) in an ack table entry
 * unless the entry is ahead already.  A plain store after the look, not a
 * compare-and-swap: the line is one the requester polls, and a locked
 * instruction on it waits for its transfer here, in the responder's pass,
 * where a store is buffered and its transfer overlaps the rest of the pass
 * (measured: a slow placement's am_lat p50 ~2% lower).  Only the responder
 * serving the DCI's messages stores there (a DCI has one destination at a
 * time), and every word stored is true for good (messages up to its msn of
 * its generation were executed): the one race the look leaves, a late
 * store of an earlier destination of the DCI moving the word back between
 * our look and our store, can only delay a completion (to the requester's
 * retransmission, answered by packet), never make one wrong. */
static inline void soft_ack_publish(soft_ack_t *a, uint64_t word)
{
    uint32_t gen     = (uint32_t)(word >> 32);
    uint64_t old     = __atomic_load_n(&a->word, __ATOMIC_RELAXED);
    uint32_t old_gen = (uint32_t)(old >> 32);

    if ((old != 0) && (((old_gen == gen) &&
                        ((int32_t)((uint32_t)old - (uint32_t)word) >= 0)) ||
                       ((old_gen != gen) && ((int32_t)(old_gen - gen) > 0)))) {
        return; /* a stale answer: the table is ahead already */
    }
    __atomic_store_n(&a->word, word, __ATOMIC_RELEASE);
}

/* The table acknowledgement a fast-path pass holds back (dev->ack_line)
 * goes out: at the end of the pass, before a packet is handled by the
 * general path (whose answers must not overtake it), and before another
 * DCI's is held.  Inline: once per pass that served a message. */
static inline void soft_resp_ack_flush(soft_dev_t *dev)
{
    dev->stats.table_stores++;
    soft_ack_publish(dev->ack_line, dev->ack_word);
    dev->ack_line = NULL;
    if (dev->ack_kick != NULL) {
        dev->stats.futex_wakes += soft_port_kick(dev->ack_kick);
        dev->ack_kick = NULL;
    }
}

/* The requester's ack table entry where "every message of the source DCI
 * up to pkt->msn done" is published for a message that asks for it
 * (SOFT_PKT_WACK); NULL if that cannot be done (no table, a NAK the
 * requester has not completed yet): then an ACK packet goes. */
static inline soft_ack_t *
soft_resp_ack_entry(soft_dev_t *dev, soft_rstate_t *rs, const soft_pkt_t *pkt)
{
    soft_peer_t *peer = rs->peer;
    uint32_t idx;

    if (rs->wack_hold) {
        if ((int32_t)(pkt->ack_base - rs->hold_msn) <= 0) {
            return NULL;
        }
        rs->wack_hold = 0;
    }
    if (((peer->hdr == NULL) && (soft_peer_map(dev, peer) == NULL)) ||
        __atomic_load_n(&peer->hdr->killed, __ATOMIC_RELAXED)) {
        return NULL;
    }
    /* the DCI's index at the requester (its qpn_base shares the line of
     * 'killed'); a number below the base wraps above any table */
    idx = pkt->src_qpn -
          __atomic_load_n(&peer->hdr->qpn_base, __ATOMIC_RELAXED);
    if (idx >= peer->ack_count) {
        return NULL; /* no table (peer->ack_count is 0 then) */
    }
    return peer->acks + idx;
}

static inline uint64_t soft_ack_word(const soft_pkt_t *pkt)
{
    return ((uint64_t)pkt->gen << 32) | (uint32_t)(pkt->msn + 1);
}

/* soft_resp.c */
void soft_resp_packet(soft_dev_t *dev, const soft_pkt_t *pkt, const void *p);
/* The receives held by dct's messages in progress: completed with
 * DCX_WC_WR_FLUSH_ERR (flush), or let go without a completion (forget,
 * for a DCT destroyed or reset) */
void soft_resp_flush_dct(soft_dev_t *dev, soft_qp_t *dct);
void soft_resp_forget_dct(soft_dev_t *dev, soft_qp_t *dct);

/* soft_answer.c */
void soft_resp_send(soft_dev_t *dev, soft_rstate_t *rs, const soft_pkt_t *req,
                    uint8_t op, uint8_t status, uint64_t arg, uint64_t offset,
                    const void *data, uint32_t len, uint8_t flags);
void soft_resp_nak(soft_dev_t *dev, soft_rstate_t *rs, const soft_pkt_t *pkt,
                   uint8_t status);
void soft_resp_finish(soft_rstate_t *rs);
void soft_resp_ack(soft_dev_t *dev, soft_rstate_t *rs, const soft_pkt_t *pkt);
int soft_resp_take_recv(soft_dev_t *dev, soft_qp_t *dct, soft_rstate_t *rs,
                        const soft_pkt_t *pkt);

/* soft_tm.c: the tag-matching engine of DCX_SRQ_TM SRQs */
int soft_tm_create(soft_srq_t *srq, const dcx_srq_attr_t *attr);
void soft_tm_destroy(soft_srq_t *srq);
void soft_tm_send_op(soft_dev_t *dev, soft_qp_t *dct, soft_rstate_t *rs,
                     const soft_pkt_t *pkt, const void *payload);
void soft_tm_abandon(soft_dev_t *dev, soft_rstate_t *rs);
int soft_tm_progress_live(soft_dev_t *dev);

/* The engine pass's rendezvous hook: not even a call while none is live */
static inline int soft_tm_progress(soft_dev_t *dev)
{
    return (dev->tm_rndv_live != 0) && soft_tm_progress_live(dev);
}

#endif
