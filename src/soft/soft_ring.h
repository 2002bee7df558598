/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device rings (soft_fabric.c): the slot states, the consumer's
 * private state of a ring, and the ring functions.  Sits on soft_wire.h
 * (the slots' packets and the shared segment's layout) and soft_lock.h
 * (its prefetch for write).
 */
#ifndef DCX_SOFT_RING_H_
#define DCX_SOFT_RING_H_

#include "soft_wire.h"
#include "soft_lock.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Ring slots.  seq is the slot's state for ring position pos (the slot's
 * index plus a multiple of nslots): pos + 1 once the packet is published
 * or the consumer skipped the claim (soft_ring_unstick), SOFT_SEQ_CLAIMED
 * (pos, pid) once its producer marked its claim, anything else (the last
 * lap's values) before.  Both the mark and the skip are a CAS from a
 * state of a lap before pos's, so that exactly one of them takes the
 * slot: a producer whose claim was skipped writes nothing in it.
 * The consumer's pop only moves the ring's head (soft_ring_pop); it
 * clears consumed slots later, off a message's critical path, and then
 * frees them by moving 'freed' (soft_ring_clear), which producers read
 * only when their copy of it says the ring is full.
 *
 * What one small message (a light packet, soft_req_post_inline) moves
 * between the two processes, in order, A the requester, B the target:
 *  1. A's CAS on B's req.tail: a line only producers write and the
 *     consumer reads only to find a dead claimer (at most once per
 *     SOFT_RING_TAIL_NS, soft_ring_unstick): with one producer, it stays
 *     in A's cache; a locked instruction before any store to B's lines;
 *  2. A's stores to the slot's line 0 (seq, header) and line 1 (raddr,
 *     rkey, imm, payload up to 41 B), both last read by B (a lap ago, or
 *     line 0 by B's polls: B's look reads the head slot's seq), so each
 *     store takes the line from B's cache; between its claim and its
 *     publish A writes nothing but the packet (its WQE and bookkeeping
 *     come after), so that a poll of B's has little time to take line 0
 *     back in between, and A reads B's 'sleeping' (the kick) only after
 *     its unlock;
 *  3. B's look (soft_engine_poll_idle, soft_engine_look) reads line 0
 *     (seq): the first transfer back; each look also prefetches line 1
 *     (soft_ring_view_ready), so that its transfer comes with line 0's
 *     instead of after it (am_lat p50 ~8% lower; A's stores to line 1
 *     take it back as they take line 0);
 *  4. B's responder stores the acknowledgement in A's ack table (a plain
 *     store, on a line A polls; soft_resp_ack_flush), having asked for the
 *     line as soon as it knew the message's source (soft_prefetchw in
 *     soft_resp_fast), so that B's unlock does not wait for its transfer;
 *  5. B's pop stores B's own req.head: a line A reads only to see whether
 *     its packets wait (soft_req_target_busy);
 *  6. B's unlock (an xchg: it waits for B's pending stores) finds only
 *     stores to lines of B's own by then (a plain release store measured
 *     no faster: soft_lock);
 *  7. B clears the slot later, after its own next post is out, at the
 *     end of a whole pass, or after SOFT_CLEAR_POLLS idle polls
 *     (soft_ring_clear): it then takes lines 0 and 1 back from A, while
 *     nothing waits on B, and moves req.freed, a line A reads once per
 *     lap.
 * The answer (B's reply) takes the same steps with the roles swapped.
 * Before version 4, the consumer also cleared the header (lines 0 and 1)
 * and stored seq = pos + nslots at every pop: two more lines taken from
 * the producer per message, and a producer's reserve read line 0 before
 * its claim (one more transfer on the post's path), and both sides read
 * the tail line at every look.
 *
 * A consumed slot keeps its packet (DC key, rkey, address) only until the
 * consumer's next light post, SOFT_CLEAR_POLLS polls that find nothing
 * else to do, its next whole pass, or SOFT_RING_CLEAR_LAG more packets
 * (so that no DC key is left in old slots for whoever maps the
 * segment).  Producers write every header field of their packet kind
 * (zero where it has none) and rely on no zeroed header. */

/* The consumer's private state of one of its rings: its view of the head
 * slot (the seq word a published packet there shows, and that value: read
 * by polls without the lock, so that a look costs two loads and no
 * arithmetic on the ring's geometry), and the watch of a head slot that is
 * claimed but unpublished (soft_ring_unstick). */
typedef struct soft_stall {
    const uint64_t *seq; /* &head slot's seq (soft_ring_view) */
    uint64_t want;       /* head + 1 */
    uint64_t pos;
    uint64_t since_ns;
    uint64_t next_check_ns;
    uint64_t tail_look_ns; /* the tail is not read before */
    /* polls that found consumed slots waiting for their clear since the
     * head last moved (soft_ring_idle_clear) */
    uint32_t idle_polls;
    /* the ring's slot size, set where the port is created: the ring's
     * geometry as we made it, never read back from the shared header */
    uint32_t slot_size;
} soft_stall_t;

/* Polls that find nothing to do but consumed slots to clear before one of
 * them takes the lock to clear them: the consumer's own next post usually
 * clears them first, off a message's critical path */
#define SOFT_CLEAR_POLLS 32u

/* How often an engine pass may read a ring's tail (the producers' line) to
 * find a claim without mark (soft_ring_unstick) */
#define SOFT_RING_TAIL_NS 1000000ull

/* A claim without mark stuck this long is skipped once a process the port
 * exchanges packets with is known to have died (soft_ring_unstick) */
#define SOFT_RING_GONE_NS 10000000ull

unsigned soft_ring_clear(soft_port_hdr_t *hdr, soft_ring_t *ring, uint64_t end);
/* gone(arg), if not NULL: 1 if a process that may have claimed a slot of
 * the ring has died (asked at most once per millisecond of a stall) */
int soft_ring_unstick(soft_port_hdr_t *hdr, soft_ring_t *ring, soft_stall_t *st,
                      uint64_t now, const char *name, int (*gone)(void *arg),
                      void *arg);
int soft_ring_publish(soft_port_hdr_t *hdr, soft_ring_t *ring, uint64_t pos);

/* The consumer is done with the head slot: only its head moves.  The slot
 * is not free yet: soft_ring_clear clears and frees it later, so that the
 * pop writes no line the producer holds. */
static inline void soft_ring_pop(soft_port_hdr_t *hdr, soft_ring_t *ring)
{
    (void)hdr;
    __atomic_store_n(&ring->head, ring->head + 1, __ATOMIC_RELAXED);
}

static inline soft_slot_t *soft_ring_slot(soft_port_hdr_t *hdr,
                                          soft_ring_t *ring, uint64_t pos)
{
    return (soft_slot_t *)((char *)hdr + ring->offset +
                           (pos & (ring->nslots - 1)) * ring->slot_size);
}

/* Producer side: publishes the packet claimed at pos, as soft_ring_publish
 * without its kick: the caller kicks the port after its unlock
 * (soft_port_kick_seen after soft_fence_after_locked) */
static inline void soft_ring_publish_quiet(soft_port_hdr_t *hdr,
                                           soft_ring_t *ring, uint64_t pos)
{
    __atomic_store_n(&soft_ring_slot(hdr, ring, pos)->seq, pos + 1,
                     __ATOMIC_RELEASE);
}

/* The same through the packet soft_ring_reserve_c returned for pos: the
 * slot's address is not computed from the ring's geometry again */
static inline void soft_ring_publish_pkt(soft_pkt_t *pkt, uint64_t pos)
{
    soft_slot_t *slot = (soft_slot_t *)((char *)pkt -
                                        offsetof(soft_slot_t, pkt));

    __atomic_store_n(&slot->seq, pos + 1, __ATOMIC_RELEASE);
}

/* Producer side (soft_fabric.c, "Rings", says how): claims the next
 * position with a CAS on the tail and returns 1 with it in *pos_p, or 0
 * when the ring is full (*pos_p then the tail as seen).  The slot is the
 * claimer's once soft_ring_mark_c has marked it. */
static inline int soft_ring_claim_c(soft_ring_t *ring, uint64_t *freed_seen,
                                    uint64_t *pos_p)
{
    uint64_t pos = __atomic_load_n(&ring->tail, __ATOMIC_RELAXED);
    uint64_t freed;

    for (;;) {
        /* room: our copy of 'freed' is never ahead of the real one */
        if ((pos - *freed_seen) >= ring->nslots) {
            freed       = __atomic_load_n(&ring->freed, __ATOMIC_ACQUIRE);
            *freed_seen = freed;
            if ((pos - freed) >= ring->nslots) {
                if ((int64_t)(pos - freed) >= 0) {
                    *pos_p = pos; /* defined for every caller */
                    return 0;     /* full */
                }
                /* pos is older than 'freed': another producer's claims
                 * were consumed meanwhile */
                pos = __atomic_load_n(&ring->tail, __ATOMIC_RELAXED);
                continue;
            }
        }
        if (__atomic_compare_exchange_n(&ring->tail, &pos, pos + 1, 0,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            *pos_p = pos;
            return 1;
        }
    }
}

/* 1 if seq, a slot's state, is of a lap before position pos's: its low 32
 * bits (a published packet's or a skip's pos + 1, a mark's low bits of
 * it) are older than pos + 1's.  The positions one slot holds differ by
 * whole laps, and no slot keeps a state 2^31 positions old. */
static inline int soft_seq_before(uint64_t seq, uint64_t pos)
{
    return (int32_t)((uint32_t)seq - (uint32_t)(pos + 1)) < 0;
}

/* 1 if seq is the mark of a claim of position pos */
static inline int soft_seq_marks(uint64_t seq, uint64_t pos)
{
    return (seq & SOFT_SEQ_MARK_MASK) ==
           (SOFT_SEQ_CLAIM_BIT | (uint64_t)(uint32_t)(pos + 1));
}

/* Producer side: marks the slot of position pos, claimed by
 * soft_ring_claim_c, as owner's, and returns its packet and payload; or
 * NULL if the consumer skipped the claim before the mark (its claimer
 * taken for dead, soft_ring_unstick): the slot is no longer the caller's
 * (cleared, freed, maybe another producer's for a later lap) and the
 * caller writes nothing there.  One CAS on the slot's first line, which
 * the packet's stores take from the consumer anyway: it is tried from
 * the last lap's publish, the usual state, and again from what it found
 * while that is of an older lap (the ring's first lap, a skip). */
static inline soft_pkt_t *soft_ring_mark_c(soft_port_hdr_t *hdr,
                                           soft_ring_t *ring, uint32_t owner,
                                           uint64_t pos, void **payload_p)
{
    soft_slot_t *slot = soft_ring_slot(hdr, ring, pos);
    /* every port's rings have SOFT_RING_SLOTS slots (soft_seg.c): the
     * guess needs no load; a wrong one costs a second try, nothing else */
    uint64_t seq      = pos + 1 - SOFT_RING_SLOTS;

    while (!__atomic_compare_exchange_n(&slot->seq, &seq,
                                        SOFT_SEQ_CLAIMED(pos, owner), 0,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        if (!soft_seq_before(seq, pos)) {
            return NULL; /* skipped */
        }
    }
    /* the packet's source, which the light post does not write again */
    slot->pkt.src_pid = owner;
    *payload_p        = (char *)slot + SOFT_SLOT_DATA;
    return &slot->pkt;
}

/* Producer side: the slot the next claim most likely takes, the one at
 * the tail as read now (another producer may claim it first), for a
 * prefetch of the lines the packet will write */
static inline char *soft_ring_next_slot(soft_port_hdr_t *hdr, soft_ring_t *ring)
{
    return (char *)soft_ring_slot(hdr, ring,
                                  __atomic_load_n(&ring->tail,
                                                  __ATOMIC_RELAXED));
}

/* Producer side: claims the next slot and marks it (soft_ring_claim_c,
 * soft_ring_mark_c), or NULL when the ring is full.  A claim skipped
 * before its mark is claimed again: the packet takes a later slot and is
 * not lost.  Inline: every packet sent takes one.
 *
 * The slot's first line, which the mark's CAS writes, is last the
 * consumer's (it read and cleared it): asked for first, its transfer
 * overlaps the CAS on the tail, which waits for the caller's earlier
 * stores (a payload packed just before), instead of following it.  A
 * hint: a slot another producer claims first costs a line moved for
 * nothing. */
static inline soft_pkt_t *soft_ring_reserve_c(soft_port_hdr_t *hdr,
                                              soft_ring_t *ring, uint32_t owner,
                                              uint64_t *freed_seen,
                                              void **payload_p, uint64_t *pos_p)
{
    soft_pkt_t *pkt;

    soft_prefetchw(soft_ring_next_slot(hdr, ring));
    do {
        if (!soft_ring_claim_c(ring, freed_seen, pos_p)) {
            return NULL;
        }
        pkt = soft_ring_mark_c(hdr, ring, owner, *pos_p, payload_p);
    } while (pkt == NULL);
    return pkt;
}

/* Consumer side: 1 if the ring's head slot holds a published packet.  It
 * reads the slot's first line only, the one the packet comes in, not the
 * producers' tail. */
static inline int soft_ring_ready(soft_port_hdr_t *hdr, soft_ring_t *ring)
{
    uint64_t pos = ring->head;

    return __atomic_load_n(&soft_ring_slot(hdr, ring, pos)->seq,
                           __ATOMIC_ACQUIRE) == pos + 1;
}

/* Consumer side (engine lock held): the view of the head slot kept in st,
 * after the head moved */
static inline void soft_ring_view(soft_port_hdr_t *hdr, soft_ring_t *ring,
                                  soft_stall_t *st)
{
    uint64_t pos = ring->head;

    __atomic_store_n(&st->seq, &soft_ring_slot(hdr, ring, pos)->seq,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&st->want, pos + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&st->idle_polls, 0, __ATOMIC_RELAXED);
}

/* Consumer side (engine lock held): soft_ring_pop and soft_ring_view in
 * one, the new head computed once.  Returns the number of consumed slots
 * that wait for their clear (soft_ring_clear). */
static inline uint64_t soft_ring_pop_view(soft_port_hdr_t *hdr,
                                          soft_ring_t *ring, soft_stall_t *st)
{
    uint64_t pos = ring->head + 1;

    __atomic_store_n(&ring->head, pos, __ATOMIC_RELAXED);
    __atomic_store_n(&st->seq, &soft_ring_slot(hdr, ring, pos)->seq,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&st->want, pos + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&st->idle_polls, 0, __ATOMIC_RELAXED);
    return pos - ring->freed;
}

/* Without the lock: 1 if the head slot seen by st holds a published
 * packet.  A view read while a pass moves it (the pointer of one slot, the
 * value of the other) says no: no slot's seq is the next slot's value. */
static inline int soft_ring_view_ready(const soft_stall_t *st)
{
    const uint64_t *seq = __atomic_load_n(&st->seq, __ATOMIC_RELAXED);

    /* the slot's second line (a light packet's address, key, immediate
     * and payload), read once seq says the packet is there: asked for
     * now, its transfer overlaps line 0's (a hint: no fault, no order) */
    __builtin_prefetch((const char *)seq + 64);
    return __atomic_load_n(seq, __ATOMIC_ACQUIRE) ==
           __atomic_load_n(&st->want, __ATOMIC_RELAXED);
}

/* The payload of the packet in slot, a slot of slot_size bytes: after the
 * whole header, after the light one, in the first line (the one-line form,
 * soft_pkt_is_line) or at the slot's end (SOFT_PKT_FAR; a length that
 * could not be there is read after the light header, where the
 * responder's checks of it drop the packet) */
static inline void *soft_slot_payload(soft_slot_t *slot, uint32_t slot_size)
{
    uint8_t flags = slot->pkt.flags;
    uint32_t len;

    if (!(flags & SOFT_PKT_LIGHT)) {
        return (char *)slot + SOFT_SLOT_DATA;
    }
    len = slot->pkt.len;
    if (soft_pkt_is_line(flags, len)) {
        return (char *)slot + soft_line_off(len);
    }
    if ((flags & SOFT_PKT_FAR) && soft_light_far_ok(slot_size, len)) {
        return (char *)slot + soft_light_far_off(slot_size, len);
    }
    return (char *)slot + SOFT_LIGHT_OFF;
}

/* The head slot's packet and its payload, or NULL if none is published
 * there (engine lock held). */
static inline soft_pkt_t *soft_ring_peek(soft_port_hdr_t *hdr,
                                         soft_ring_t *ring, void **payload_p)
{
    uint64_t pos      = ring->head;
    soft_slot_t *slot = soft_ring_slot(hdr, ring, pos);

    if (__atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE) != pos + 1) {
        return NULL;
    }
    *payload_p = soft_slot_payload(slot, ring->slot_size);
    /* the payload's first line asked for now (a hint): a full packet's is
     * the slot's fourth, which a message received in place is read from
     * first (the transport's AM id, the handler's header); its transfer
     * overlaps the work on the header instead of following it (am_lat
     * bcopy 256 B ~0.52 -> ~0.40 us) */
    __builtin_prefetch(*payload_p);
    return &slot->pkt;
}

/* As soft_ring_peek, through the consumer's view of the head slot (engine
 * lock held; the view follows every move of the head: soft_ring_pop is
 * followed by soft_ring_view, or soft_ring_pop_view does both, and
 * soft_ring_unstick calls it): the slot's address without the ring's
 * geometry (a pass peeks each ring at least once).  *seq_p: the head
 * slot's seq as read, for the looks that follow when it holds no packet
 * (soft_ring_seq_marked, soft_ring_unstick_due: no second read). */
static inline soft_pkt_t *soft_ring_peek_view(const soft_stall_t *st,
                                              void **payload_p, uint64_t *seq_p)
{
    soft_slot_t *slot = (soft_slot_t *)((char *)st->seq -
                                        offsetof(soft_slot_t, seq));

    *seq_p = __atomic_load_n(st->seq, __ATOMIC_ACQUIRE);
    if (*seq_p != st->want) {
        return NULL;
    }
    *payload_p = soft_slot_payload(slot, st->slot_size);
    __builtin_prefetch(*payload_p); /* as soft_ring_peek's */
    return &slot->pkt;
}

/* Consumer side, through its view (engine lock held): 1 if seq, the head
 * slot's as soft_ring_peek_view read it, is its claimer's mark
 * (SOFT_SEQ_CLAIMED): claimed and not published yet */
static inline int soft_ring_seq_marked(const soft_stall_t *st, uint64_t seq)
{
    return (seq & SOFT_SEQ_MARK_MASK) ==
           (SOFT_SEQ_CLAIM_BIT | (uint64_t)(uint32_t)st->want);
}

/* Consumer side: 1 if consumed slots wait for their clear */
static inline int soft_ring_unfreed(const soft_ring_t *ring)
{
    return __atomic_load_n(&ring->freed, __ATOMIC_RELAXED) !=
           __atomic_load_n(&ring->head, __ATOMIC_RELAXED);
}

/* Whether soft_ring_unstick has anything to look at (engine lock held): a
 * watch under way, a claim mark at the head (seq: the head slot's, as
 * soft_ring_peek_view read it), or the tail's look due */
static inline int soft_ring_unstick_due(const soft_stall_t *st, uint64_t now,
                                        uint64_t seq)
{
    return (st->since_ns != 0) || (now >= st->tail_look_ns) ||
           soft_ring_seq_marked(st, seq);
}

/* The bytes of a slot's packet that lie in its first two lines: a light
 * packet's header and up to SOFT_LIGHT_LINE2 (41) payload bytes, or a full
 * packet's header but its last word */
#define SOFT_CLEAR_LIGHT (128u - offsetof(soft_slot_t, pkt))

#ifndef __cplusplus
_Static_assert(SOFT_CLEAR_LIGHT == 7 * 16 + 8, "7 vectors and a word");
_Static_assert((offsetof(soft_pkt_t, status) == SOFT_CLEAR_LIGHT) &&
                   (sizeof(soft_pkt_t) == SOFT_CLEAR_LIGHT + 8),
               "a full header's third line holds status to csum only");
#endif

/* Zeroes the SOFT_CLEAR_LIGHT bytes at p, 8-byte aligned */
static inline __attribute__((always_inline)) void soft_zero_light(void *p)
{
    typedef uint64_t soft_v2_t __attribute__((vector_size(16)));
    const soft_v2_t z = {0, 0};
    const uint64_t z8 = 0;
    char *c           = (char *)p;

    memcpy(c, &z, 16);
    memcpy(c + 16, &z, 16);
    memcpy(c + 32, &z, 16);
    memcpy(c + 48, &z, 16);
    memcpy(c + 64, &z, 16);
    memcpy(c + 80, &z, 16);
    memcpy(c + 96, &z, 16);
    memcpy(c + 112, &z8, 8);
}

/* Consumer side: clears the slots consumed since the last call, up to
 * 'end' (the head, or for the request ring the oldest slot a receive in
 * place still reads, soft_req_clear_end), and frees them for producers
 * (release: every read and the clear of a slot come before a producer may
 * claim it again).  A consumed slot keeps nothing
 * of its packet's header: no DC key, address or rkey (payload bytes are
 * data the sender gave away).  The clear writes the slot's first two
 * lines, which hold a light packet's header and a full one's but its last
 * word (status, atomic size, checksum: on the third line, which the
 * consumer of a SEND or WRITE never reads), cleared only where a packet
 * may have set it; the payload past the second line stays as it is.  So a
 * message received in place, whose payload the consumer did not read,
 * leaves the rest of its lines in the producer's cache for its next
 * packet there.  Returns
 * the number of slots freed.  Inline at the end of an engine pass (a
 * ping-pong's every receive clears its slot there: no call); every other
 * caller calls soft_ring_clear (soft_fabric.c), which is this. */
static inline __attribute__((always_inline)) unsigned
soft_ring_clear_inline(soft_port_hdr_t *hdr, soft_ring_t *ring, uint64_t end)
{
    uint64_t pos  = ring->freed;
    uint64_t head = end;
    soft_slot_t *slot;
    uint8_t op, flags;

    if (pos == head) {
        return 0;
    }
    for (; pos != head; ++pos) {
        slot  = soft_ring_slot(hdr, ring, pos);
        op    = slot->pkt.op;
        flags = slot->pkt.flags;
        /* the two lines, in 16-byte stores (a string instruction counts a
         * step per word) */
        soft_zero_light(&slot->pkt);
        if (!(flags & SOFT_PKT_LIGHT) &&
            ((flags & SOFT_PKT_CSUM) ||
             ((op != DCX_WR_SEND) && (op != DCX_WR_SEND_IMM) &&
              (op != DCX_WR_RDMA_WRITE) && (op != DCX_WR_RDMA_WRITE_IMM)))) {
            /* the third line's word: a response's status, an atomic's
             * size, a checksum (zero in every other packet, whose
             * producer writes it so) */
            memset((char *)&slot->pkt + SOFT_CLEAR_LIGHT, 0,
                   sizeof(slot->pkt) - SOFT_CLEAR_LIGHT);
        }
    }
    pos = ring->freed;
    __atomic_store_n(&ring->freed, head, __ATOMIC_RELEASE);
    return (unsigned)(head - pos);
}

#endif
