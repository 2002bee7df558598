/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the light post of a small inline WR (soft_req_post_inline)
 * and of a SEND of one registered sge (soft_req_post_sge), inline in the
 * post (soft_post.c, soft_dci_post_light and soft_dci_post_sge), which is
 * the whole send side of such a message: a call less, and the post's own
 * locals (the target to kick) stay in registers.  The requester's other parts
 * are in soft_req.c; the watch (soft_req_watch) and the WQE record
 * (soft_light_wqe_record) that both use are in soft_req.h.
 */
#ifndef SOFT_LIGHT_H_
#define SOFT_LIGHT_H_

#include "soft_mem.h"
#include "soft_port.h"
#include "soft_engine.h"
#include "soft_wait.h"

#include <stddef.h>
#include <string.h>

/* The target port of a light packet of 'total' bytes for wr from qp
 * (engine lock held), mapped at the first message there, with *peer_p its
 * peer; NULL when the light path does not apply: a fault rule or a killed
 * port (dev->light_off), a fence, anything of the DCI waiting to be
 * transmitted or an RNR wait, no response credit, a packet longer than the
 * peer's light_max, a killed target, or earlier messages of the DCI on the
 * wire to another destination (one destination at a time). */
static inline __attribute__((always_inline)) soft_port_hdr_t *
soft_light_target(soft_qp_t *qp, const dcx_send_wr_t *wr, uint64_t total,
                  soft_peer_t **peer_p)
{
    soft_dev_t *dev = qp->dev;
    soft_port_hdr_t *target;
    soft_peer_t *peer;
    soft_swqe_t *prev;

    peer   = ((soft_ah_t *)wr->dest.ah)->peer; /* checked by the post */
    target = peer->hdr;
    if (target == NULL) {
        target = soft_peer_map(dev, peer); /* the first message there */
        if (target == NULL) {
            return NULL;
        }
    }
    /* Tests in a chain of branches, never taken on the light path: two
     * instructions each, where or-ing their flags took four */
    if (dev->light_off || (wr->flags & DCX_SEND_FENCE) ||
        (qp->sq_send != qp->sq_head) || (qp->rnr_until_ns != 0) ||
        (dev->resp_credits == 0) || (total > peer->light_max) ||
        __atomic_load_n(&target->killed, __ATOMIC_RELAXED)) {
        return NULL;
    }
    if (qp->sq_comp != qp->sq_send) {
        prev = soft_wqe(qp, qp->sq_send - 1);
        if ((prev->peer != peer) || (prev->wr.dest.dctn != wr->dest.dctn)) {
            return NULL;
        }
    }
    *peer_p = peer;
    return target;
}

/* Whether a light packet of 'total' bytes to peer puts its payload far
 * from the header (soft_light_payload) */
static inline int soft_light_is_far(const soft_peer_t *peer, uint8_t opcode,
                                    uint64_t total)
{
    return (total > SOFT_LIGHT_LINE2) && (peer->far_slot != 0) &&
           ((opcode == DCX_WR_SEND) || (opcode == DCX_WR_SEND_IMM));
}

/* Before the claim of a light packet's slot in target's request ring: a
 * payload that goes far from the header has its first line, the one a
 * receive in place reads (the AM id) and so the target's besides the
 * header's, asked for with the header's (soft_ring_reserve_c), so that
 * its transfer back from the target overlaps the claim's CAS on the tail
 * as the header's does (4 KiB am_bcopy: am_bw +11%, am_lat p50 -3%
 * beyond the header's).  The slot is the tail's as read now: a hint. */
static inline __attribute__((always_inline)) void
soft_light_ask_far(soft_port_hdr_t *target, const soft_peer_t *peer,
                   uint8_t opcode, uint64_t total)
{
    if (soft_light_is_far(peer, opcode, total)) {
        soft_prefetchw(soft_ring_next_slot(target, &target->req) +
                       soft_light_far_off(peer->far_slot, (uint32_t)total));
    }
}

/* Where the payload of a light packet of 'total' bytes goes in its slot
 * (pkt, the slot's packet), and the flag that says so: a SEND longer than
 * the second line takes goes far from the header (SOFT_PKT_FAR,
 * soft_light_far_off), where the target's prefetcher, following its reads
 * of the header's lines, does not take the payload's lines from us while
 * we write them (4 KiB am_bcopy: am_bw +20%, am_lat p50 -25%); anything
 * else after imm (SOFT_LIGHT_OFF). */
static inline __attribute__((always_inline)) uint8_t *
soft_light_payload(const soft_peer_t *peer, soft_pkt_t *pkt, uint8_t opcode,
                   uint64_t total, uint8_t *far_p)
{
    uint8_t *slot = (uint8_t *)pkt - offsetof(soft_slot_t, pkt);

    if (soft_light_is_far(peer, opcode, total)) {
        *far_p = SOFT_PKT_FAR;
        return slot + soft_light_far_off(peer->far_slot, (uint32_t)total);
    }
    *far_p = 0;
    return slot + SOFT_LIGHT_OFF;
}

/* Whether a light packet of 'total' bytes for wr from qp to peer takes the
 * one-line form (soft_pkt_is_line): a SEND short enough to the port the
 * DCI's previous packet went to, which had our token whole, and for the
 * keyless form (more than SOFT_LINE_MAX bytes) to the DCT that packet
 * named, with the DC key it carried (soft_wire.h) */
static inline int soft_light_is_line(const soft_qp_t *qp,
                                     const soft_peer_t *peer,
                                     const dcx_send_wr_t *wr, uint64_t total)
{
    return (wr->opcode == DCX_WR_SEND) && (qp->tx_peer == peer) &&
           ((total <= SOFT_LINE_MAX) ||
            ((total <= SOFT_LINE_WIDE_MAX) && (qp->tx_dctn == wr->dest.dctn) &&
             (qp->tx_dc_key == wr->dest.dc_key)));
}

/* The fields of a light packet's first line (all of them but deliver_ns,
 * which no light packet's reader reads: a slot keeps its last packet),
 * for message msn of wr from qp, of 'total' bytes, with flags; raddr, rkey
 * and imm, on the second line, are the caller's */
static inline __attribute__((always_inline)) void
soft_light_header(soft_qp_t *qp, soft_pkt_t *pkt, const dcx_send_wr_t *wr,
                  uint64_t total, uint32_t msn, uint8_t flags)
{
    pkt->op        = wr->opcode;
    pkt->flags     = flags;
    pkt->src_inst  = (uint16_t)qp->dev->inst;
    pkt->len       = (uint32_t)total;
    pkt->src_qpn   = qp->super.qp_num;
    pkt->dst_qpn   = wr->dest.dctn;
    pkt->msn       = msn;
    /* the msn of the WQE at sq_comp: every WQE takes the next msn as it
     * moves sq_head (soft_req_post_inline, soft_req_post_sge,
     * soft_post_enqueue, soft_req_post_direct) */
    pkt->ack_base  = msn - (qp->sq_head - qp->sq_comp);
    pkt->gen       = qp->gen;
    pkt->dc_key    = wr->dest.dc_key;
    pkt->src_token = qp->dev->token;
}

/* The header of a light packet in the one-line form, written before its
 * payload (soft_light_line_payload), which lies over the token's top byte
 * and deliver_ns, or in the keyless form over dc_key, the token and
 * deliver_ns; nothing of the second line is written, which the slot's
 * last clear left zero (no address, key or immediate) */
static inline __attribute__((always_inline)) void
soft_light_line_header(soft_qp_t *qp, soft_pkt_t *pkt, const dcx_send_wr_t *wr,
                       uint64_t total, uint32_t msn, uint8_t flags)
{
    soft_light_header(qp, pkt, wr, total, msn,
                      flags | SOFT_PKT_LIGHT | SOFT_PKT_FAR);
    qp->dev->stats.line_posts++;
}

/* Where the payload of a one-line packet of 'total' bytes goes
 * (soft_light_line_header) */
static inline uint8_t *soft_light_line_payload(soft_pkt_t *pkt, uint64_t total)
{
    return (uint8_t *)pkt - offsetof(soft_slot_t, pkt) +
           soft_line_off((uint32_t)total);
}

/* What follows the publish of a light packet (message msn of wr, 'total'
 * bytes, at ring position pos of peer's port): the WQE w recorded (nothing
 * reads it before our next engine pass, and we hold the engine lock), the
 * DCI's send queue and the counters moved, the watch and the ack timer
 * started, and the request slots we consumed cleared.  *clk_p: the counter
 * reading taken here (the kick's poll age, soft_port_kick_due_at). */
static inline __attribute__((always_inline)) void
soft_light_posted(soft_qp_t *qp, soft_swqe_t *w, const dcx_send_wr_t *wr,
                  soft_peer_t *peer, uint64_t total, uint32_t msn, uint64_t pos,
                  uint64_t *clk_p)
{
    soft_dev_t *dev = qp->dev;
    uint64_t now, clk;
    int started;

    soft_light_wqe_record(w, wr, peer, total);
    w->credits = 1;
    w->msn     = msn;
    w->state   = SOFT_WQE_WAIT_RESP;
    dev->resp_credits--;
    dev->stats.tx_packets++;
    dev->stats.light_posts++;
    dev->stats.tx_bytes += total;
    qp->sq_head++;
    qp->sq_send   = qp->sq_head;
    qp->tx_pos    = pos + 1;
    qp->tx_peer   = peer;
    qp->tx_dctn   = wr->dest.dctn;
    qp->tx_dc_key = wr->dest.dc_key;
    w->tx_end     = (uint32_t)(pos + 1);
    /* the watch and the ack timer start now: dev->now is the last engine
     * pass's time, and polls that only wait run no pass (soft_engine.c);
     * one counter read gives both the time and the wait's end (clk) */
    now           = soft_dev_now_clk(dev, &clk);
    dev->now      = now;
    *clk_p        = clk;
    started       = !peer->own && soft_req_watch(peer, pos, now);
    soft_engine_activate_light(qp, peer, now, clk, started);
    /* our packet is out: the time to clear the request slots we consumed
     * (soft_ring.h, "Ring slots"), which takes their lines back from
     * producers */
    if (dev->hdr->req.freed != dev->hdr->req.head) {
        soft_req_clear(dev);
    }
}

/* The light path of a post (engine lock held): an inline SEND or RDMA
 * WRITE that fits one packet, on a DCI with nothing waiting to be
 * transmitted (idle, or with earlier messages to the same destination on
 * the wire), without a fault rule, goes straight into the target's request
 * ring as a light packet (soft_pkt_t: two cache lines for a small one,
 * one for a SEND of up to 9 bytes to where the DCI's last packet went):
 * the WQE is recorded for completion and retransmission with what those
 * need, the packet carries only the fields such a message has (all of
 * them written: a slot keeps its last packet, soft_ring.h "Ring slots"), the
 * clock is read once, after the publish (the ack timer and the wait set:
 * soft_engine_activate_light), and the responder acknowledges it in our
 * ack table.  The responder checks a WRITE's rkey, bounds, access and DC key
 * as for any packet.  An RDMA WRITE on a DCI with nothing outstanding
 * first tries the initiator's own copy (dev->one_sided, soft_direct.c),
 * which needs no target CPU, and completes at once when that took it.
 * The caller checked wr (an inline SEND, SEND_IMM or RDMA WRITE) and put
 * its data in the buffer of w, the WQE at sq_head (soft_post_inline_data).
 * Returns 0 when posted, with *kick_p the port to kick after the unlock
 * (soft_post_unlock_kick) if a packet went there and *clk_p the counter
 * reading taken after its publish, else both left as they are; 1 when
 * it does not apply, with nothing done: the caller takes the general
 * path. */
static inline int soft_req_post_inline(soft_qp_t *qp, soft_swqe_t *w,
                                       const dcx_send_wr_t *wr, uint64_t total,
                                       soft_port_hdr_t **kick_p,
                                       uint64_t *clk_p)
{
    soft_dev_t *dev = qp->dev;
    soft_port_hdr_t *target;
    soft_peer_t *peer;
    soft_pkt_t *pkt;
    void *slot_payload;
    uint64_t pos;
    uint32_t msn;
    uint8_t far;

    target = soft_light_target(qp, wr, total, &peer);
    if (target == NULL) {
        return 1;
    }
    if ((wr->opcode == DCX_WR_RDMA_WRITE) && (qp->sq_comp == qp->sq_head) &&
        (soft_req_post_direct(qp, wr, peer, total) == 0)) {
        return 0;
    }
    soft_light_ask_far(target, peer, wr->opcode, total);
    pkt = soft_ring_reserve_c(target, &target->req, dev->pid,
                              &peer->req_freed_seen, &slot_payload, &pos);
    if (pkt == NULL) {
        return 1; /* ring full: queued by the general path */
    }

    /* the light form: the payload 7 bytes past imm (SOFT_LIGHT_OFF), or
     * far from the header (soft_light_payload).  From the claim to the
     * publish only the packet is written: the target's poll reads the
     * slot's first line, and each store to it that finds the line taken
     * back by a poll moves it again (slow placement) */
    msn = qp->next_msn++;
    /* acknowledged in our table, signaled or not, with no kick: a kick is
     * a full fence behind the responder's stores, on the answer's path of
     * every ping-pong (UCP tag_lat 8 B +10%); a light message's answer
     * comes within a pass, and a sleeper's helper naps at most
     * SOFT_NAP_NS (SOFT_PKT_WKICK is for the general path's messages and
     * signaled SENDs of an sg list) */
    if (soft_light_is_line(qp, peer, wr, total)) {
        /* one line of the ring written, not two (8-byte am_short: rate
         * +29-42%, am_lat p50 -25-33%) */
        soft_light_line_header(qp, pkt, wr, total, msn,
                               SOFT_PKT_FIRST | SOFT_PKT_LAST | SOFT_PKT_WACK);
        soft_copy_small(soft_light_line_payload(pkt, total), w->inl, total);
    } else {
        /* the payload takes the slot from there on, over the header's
         * rest, or at its end */
        soft_copy_small(soft_light_payload(peer, pkt, wr->opcode, total, &far),
                        w->inl, total);
        soft_light_header(qp, pkt, wr, total, msn,
                          SOFT_PKT_FIRST | SOFT_PKT_LAST | SOFT_PKT_WACK |
                              SOFT_PKT_LIGHT | far);
        /* on the line the payload starts in: no line more for the zeros */
        if (wr->opcode == DCX_WR_RDMA_WRITE) {
            pkt->raddr = wr->remote_addr;
            pkt->rkey  = wr->rkey;
            pkt->imm   = 0;
        } else {
            pkt->raddr = 0;
            pkt->rkey  = 0;
            pkt->imm   = wr->imm;
        }
    }
    soft_ring_publish_pkt(pkt, pos);
    *kick_p = target; /* after the unlock (soft_dci_post_light) */
    soft_light_posted(qp, w, wr, peer, total, msn, pos, clk_p);
    return 0;
}

/* Gathers the n entries of sg (checked, marked in use) into dst */
static inline __attribute__((always_inline)) void
soft_light_gather(uint8_t *dst, const dcx_sge_t *sg, unsigned n)
{
    unsigned i;

    for (i = 0; i < n; ++i) {
        memcpy(dst, (const void *)(uintptr_t)sg[i].addr, sg[i].length);
        dst += sg[i].length;
    }
}

/* The light path of a SEND or SEND_IMM of an sg list of registered memory
 * (engine lock held; the caller checked the WR's shape, at most the DCI's
 * max_send_sge entries, and that our own sg lists are copied plainly,
 * dev->local_in): on the conditions of soft_light_target, with no strided
 * key on the device, every sge checked as the general path checks it
 * (soft_sge_ok) and their regions marked in use (soft_mem_local_begin),
 * the bytes are gathered from the sges straight into the target's slot:
 * one pass over them, where the general path queues a WQE and walks its
 * sg list in an engine pass.  So an am_bcopy (its bounce buffer) is
 * copied once by the device, and an am_zcopy (a header and the user's
 * iov) once in all.  The packet is a light one, as soft_req_post_inline's
 * (soft_light_payload): up to 9 bytes may take the first line alone
 * (soft_light_is_line), up to 41 follow imm in the header's two lines, a
 * longer payload ends by the slot's end, with the alignment a
 * full header's has; a full header put the payload's first byte (the
 * transport's AM id and the handler's header, which a receive in place
 * reads first) on the fourth line, right after the lines the target
 * reads.  It is acknowledged in our table (with the responder's kick when
 * signaled, as on the general path, whose completion a sleeper may wait
 * for).  The WQE keeps the sg list: a retransmission (after an RNR)
 * gathers it again, and a deregistration of a key finds it
 * (soft_req_key_gone).  Returns 0 when posted, with *kick_p and *clk_p as
 * soft_req_post_inline's; 1 when it does not apply, with nothing done. */
static inline int soft_req_post_sge(soft_qp_t *qp, soft_swqe_t *w,
                                    const dcx_send_wr_t *wr,
                                    soft_port_hdr_t **kick_p, uint64_t *clk_p)
{
    soft_dev_t *dev     = qp->dev;
    const dcx_sge_t *sg = wr->sg_list;
    unsigned n          = wr->num_sge;
    uint64_t total      = 0;
    soft_port_hdr_t *target;
    soft_peer_t *peer;
    soft_pkt_t *pkt;
    void *slot_payload;
    uint64_t pos;
    uint32_t msn;
    unsigned i;
    uint8_t flags, far;

    for (i = 0; i < n; ++i) {
        total += sg[i].length; /* 32-bit lengths: no wrap */
    }
    /* (a key being deregistered or its memory unmapped: the general path
     * fails the WR) */
    target = soft_light_target(qp, wr, total, &peer);
    if ((target == NULL) || (dev->num_mkeys != 0)) {
        return 1;
    }
    for (i = 0; i < n; ++i) {
        if (!soft_sge_ok(dev, &sg[i], 0, qp->super.pd)) {
            return 1;
        }
    }
    if (soft_mem_local_begin(dev, sg, n) != 0) {
        return 1;
    }
    soft_light_ask_far(target, peer, wr->opcode, total);
    pkt = soft_ring_reserve_c(target, &target->req, dev->pid,
                              &peer->req_freed_seen, &slot_payload, &pos);
    if (pkt == NULL) {
        soft_mem_local_end(dev);
        return 1; /* ring full: queued by the general path */
    }
    msn   = qp->next_msn++;
    flags = SOFT_PKT_FIRST | SOFT_PKT_LAST | SOFT_PKT_WACK |
            ((wr->flags & DCX_SEND_SIGNALED) ? SOFT_PKT_WKICK : 0);
    if (soft_light_is_line(qp, peer, wr, total)) {
        soft_light_line_header(qp, pkt, wr, total, msn, flags);
        soft_light_gather(soft_light_line_payload(pkt, total), sg, n);
        soft_mem_local_end(dev);
    } else {
        soft_light_gather(soft_light_payload(peer, pkt, wr->opcode, total,
                                             &far),
                          sg, n);
        soft_mem_local_end(dev);
        soft_light_header(qp, pkt, wr, total, msn,
                          flags | SOFT_PKT_LIGHT | far);
        pkt->raddr = 0;
        pkt->rkey  = 0;
        pkt->imm   = wr->imm;
    }
    soft_ring_publish_pkt(pkt, pos);
    *kick_p = target;
    soft_light_posted(qp, w, wr, peer, total, msn, pos, clk_p);
    memcpy(w->sge, sg, n * sizeof(*sg));
    return 0;
}

#endif
