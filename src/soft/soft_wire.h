/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the wire format (packets, ack table entries, ring slots)
 * and the layout of a port's shared segment (rings, header, address),
 * with the process-local view of a remote port (soft_peer_t).  Sits on
 * soft_base.h (the protocol's constants).
 */
#ifndef DCX_SOFT_WIRE_H_
#define DCX_SOFT_WIRE_H_

#include "soft_base.h"

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------
 * Wire format
 * ------------------------------------------------------------------------ */
/* Request opcodes share the values of dcx_wr_opcode_t. */
enum {
    SOFT_OP_ACK = 0x40,
    SOFT_OP_NAK,        /* status = dcx_wc_status_t of the requester */
    SOFT_OP_RNR_NAK,    /* args[0] = delay in us */
    SOFT_OP_READ_RESP,  /* offset/len of the data */
    SOFT_OP_ATOMIC_RESP /* args[0] = original value */
};

enum {
    SOFT_PKT_FIRST = 1u << 0,
    SOFT_PKT_LAST  = 1u << 1,
    /* csum is set and checked: only a sender with a fault rule (which may
     * corrupt packets) pays for the checksum */
    SOFT_PKT_CSUM  = 1u << 2,
    /* the requester takes the successful completion of this message from
     * its ack table (soft_ack_t) rather than from an ACK packet: set by a
     * requester without a fault rule, honoured by a responder that finds
     * the requester's table */
    SOFT_PKT_WACK  = 1u << 3,
    /* the compact form (soft_pkt_t): a single-packet SEND or RDMA WRITE
     * of the light path (soft_req_post_inline) */
    SOFT_PKT_LIGHT = 1u << 4,
    /* with SOFT_PKT_WACK, on the general path: the message is signaled,
     * its completion waits for the acknowledgement, so the responder kicks
     * the requester's port after the table store (soft_port_kick), as an
     * ACK packet's publish does: a requester asleep on its completion
     * channel is woken by it (the light path asks for no kick) */
    SOFT_PKT_WKICK = 1u << 5,
    /* a datagram (soft_dgram.c): one packet, taken by the DCT if a receive
     * is posted and dropped otherwise, never answered; sent with
     * SOFT_PKT_CSUM, so that it takes the general path */
    SOFT_PKT_DGRAM = 1u << 6,
    /* with SOFT_PKT_LIGHT: the payload does not follow imm.  A packet of
     * more than SOFT_LINE_MAX bytes has it end at the slot's end
     * (soft_light_far_off: light SENDs longer than the second line takes,
     * SOFT_LIGHT_LINE2); one of at most SOFT_LINE_MAX bytes has it in the
     * first line, over the token's top byte and deliver_ns (the one-line
     * form, SOFT_LINE_OFF) */
    SOFT_PKT_FAR   = 1u << 7
};

/* A packet header.  The first 56 bytes share the slot's first cache line
 * with its sequence number: they hold everything the engine reads of every
 * packet (len, deliver_ns, the claimer's src_pid) and every field of a
 * light packet (SOFT_PKT_LIGHT) but raddr, rkey and imm, which open the
 * second line.  A light packet ends there: its payload follows imm, 7
 * bytes on (SOFT_LIGHT_OFF), over the rest of the header, so that a small
 * message touches two lines of the ring rather than four, or, for a SEND
 * longer than that second line takes, ends by the slot's end
 * (SOFT_PKT_FAR); it stands for a single-packet message (offset 0,
 * total_len = len) without checksum, and never carries a delay (light
 * packets are sent only without a fault rule): deliver_ns is not read.
 * A light SEND of at most SOFT_LINE_WIDE_MAX bytes may take the one-line
 * form (SOFT_PKT_FAR, soft_pkt_is_line): its payload lies in the first
 * line's last bytes and the packet writes nothing of the second line
 * (zero since the slot's last clear: no address, key or immediate).  Up
 * to SOFT_LINE_MAX bytes (the short form) it lies over src_token's top
 * byte and deliver_ns: only a sender whose DCI's previous packet went to
 * the same port sends it, and the responder makes a source's state from
 * it only by the token's low 56 bits (SOFT_LINE_TOKEN), with a port it
 * already knows.  Longer (the keyless form, soft_pkt_is_keyless) it lies
 * over dc_key, src_token and deliver_ns: only a sender whose DCI's
 * previous packet went to the same DCT with the same DC key sends it, and
 * the responder takes it only from a source whose state says that DCI's
 * last whole packet passed the key check of that very DCT (its
 * generation, soft_rstate_t line_gen): the key is then the one that
 * passed, and the token the one the state holds.
 * Every other packet has the whole header and its payload at
 * SOFT_SLOT_DATA. */
typedef struct soft_pkt {
    uint8_t op;
    uint8_t flags;     /* SOFT_PKT_* */
    uint16_t src_inst; /* source port (16 bits, as in its address) */
    uint32_t len;      /* payload bytes carried by this packet */
    uint32_t src_pid;  /* source port */
    uint32_t src_qpn;  /* request: DCI; response: DCT */
    uint32_t dst_qpn;  /* request: DCT; response: DCI */
    uint32_t msn;      /* message number on the DCI */
    uint32_t ack_base; /* oldest unacknowledged msn of the DCI */
    uint32_t gen;      /* request: DCI generation */
    uint64_t dc_key;
    uint64_t src_token;  /* source port's name token (reply path) */
    uint64_t deliver_ns; /* not before (fault injection: delay) */
    /* second line */
    uint64_t raddr;
    uint32_t rkey;
    uint32_t imm;
    /* full packets only */
    uint64_t offset;    /* byte offset of this packet in the message */
    uint64_t total_len; /* message length */
    uint64_t args[4];   /* atomics: compare_add, swap, cmask, smask */
    uint8_t status;     /* NAK */
    uint8_t atomic_size;
    uint16_t pad;
    uint32_t csum; /* of every byte before it */
} soft_pkt_t;

/* One entry of a port's ack table, by DCI index (qp number - the port's
 * qpn_base), on a cache line of its own: the responder serving the
 * DCI's messages stores (DCI generation << 32 | msn + 1) once it has
 * executed message msn and every one before it successfully; the
 * requester reads it in its engine pass and completes every WQE up to
 * there at once (cumulative acknowledgement).  Only moves forward
 * (soft_ack_publish). */
typedef struct soft_ack {
    uint64_t word;
    uint8_t pad[56];
} soft_ack_t;

/* Ring slots: see soft_ring.h (the slot states, the lines a message moves
 * between two processes, and when a consumed slot is cleared). */
typedef struct soft_slot {
    uint64_t seq;
    soft_pkt_t pkt;
} soft_slot_t;

/* A claim's mark (soft_ring_mark_c): the claim bit, the claimer's pid
 * (below 2^31: SOFT_PID_NOWHERE is above any pid_max) and the low 32 bits
 * of pos + 1, set by one CAS, so that a marked slot always names the
 * process that will publish it */
#define SOFT_SEQ_CLAIM_BIT (1ull << 63)
#define SOFT_SEQ_MARK_MASK (SOFT_SEQ_CLAIM_BIT | 0xffffffffull)
#define SOFT_SEQ_CLAIMED(_pos, _pid)                      \
    (((uint64_t)((uint32_t)(_pid) | 0x80000000u) << 32) | \
     (uint64_t)(uint32_t)((_pos) + 1))
#define SOFT_SEQ_OWNER(_seq) ((uint32_t)((_seq) >> 32) & 0x7fffffffu)

/* where a packet's payload starts in its slot: 7 bytes past the header,
 * so that a message received in place (DCX_WC_FLAG_IN_PLACE) whose first
 * byte is a header of its own (the UCX transport's AM id) has the rest on
 * an 8-byte boundary, as in a receive buffer; and a slot's size */
#define SOFT_SLOT_DATA           (SOFT_SLOT_HDR + 7u)
#define SOFT_SLOT_SIZE(_payload) ((SOFT_SLOT_DATA + (_payload) + 63u) & ~63u)

/* where a light packet's payload starts in its slot: 7 bytes past imm,
 * for the alignment SOFT_SLOT_DATA gives (a light message may be received
 * in place too); up to 41 bytes of it share the second line with raddr,
 * rkey and imm */
#define SOFT_LIGHT_OFF \
    (offsetof(soft_slot_t, pkt) + offsetof(soft_pkt_t, offset) + 7u)
#define SOFT_LIGHT_LINE2 (128u - SOFT_LIGHT_OFF)

/* where the payload of a light packet in the one-line form starts in its
 * slot (the byte before deliver_ns, with the alignment SOFT_SLOT_DATA
 * gives), how long it may be (to the first line's end: an 8-byte am_short,
 * the transport's AM id and the handler's header), and what is left of
 * src_token there */
#define SOFT_LINE_OFF \
    (offsetof(soft_slot_t, pkt) + offsetof(soft_pkt_t, deliver_ns) - 1u)
#define SOFT_LINE_MAX   (64u - SOFT_LINE_OFF)
#define SOFT_LINE_TOKEN ((1ull << 56) - 1u)

/* where the payload of a light packet in the keyless one-line form starts
 * (dc_key's first byte) and how long it may be (to the first line's end:
 * a tag-matching SEND of 8 bytes, its 16-byte TMH and the data, which
 * lands on an 8-byte boundary); no message that short is received in
 * place (SOFT_IP_MIN), so an active message's header there, one byte off
 * its boundary, is read only by the copy into its receive */
#define SOFT_LINE_WIDE_OFF \
    (offsetof(soft_slot_t, pkt) + offsetof(soft_pkt_t, dc_key))
#define SOFT_LINE_WIDE_MAX (64u - SOFT_LINE_WIDE_OFF)

/* Whether a light packet (flags, len bytes) is in the one-line form */
static inline int soft_pkt_is_line(uint8_t flags, uint32_t len)
{
    return ((flags & (SOFT_PKT_LIGHT | SOFT_PKT_FAR)) ==
            (SOFT_PKT_LIGHT | SOFT_PKT_FAR)) &&
           (len <= SOFT_LINE_WIDE_MAX);
}

/* Whether a one-line packet of len bytes is in the keyless form (no DC
 * key, no token) */
static inline int soft_line_is_keyless(uint32_t len)
{
    return len > SOFT_LINE_MAX;
}

/* Whether a light packet (flags, len bytes) is in the keyless one-line
 * form */
static inline int soft_pkt_is_keyless(uint8_t flags, uint32_t len)
{
    return soft_pkt_is_line(flags, len) && soft_line_is_keyless(len);
}

/* Where the payload of a one-line packet of len bytes starts in its slot */
static inline uint32_t soft_line_off(uint32_t len)
{
    return soft_line_is_keyless(len) ? SOFT_LINE_WIDE_OFF : SOFT_LINE_OFF;
}

/* Where the payload of a light packet of len bytes flagged SOFT_PKT_FAR
 * starts in a slot of slot_size bytes (a multiple of 64): its end by the
 * slot's end, its start 7 bytes short of an 8-byte boundary, as
 * SOFT_LIGHT_OFF's.  A SEND received in place is read from its first line
 * alone (the transport's AM id, the handler's header): away from the
 * header it is on another page than the lines the consumer reads
 * one after the other (the slot's first two), whose sequential reads
 * the consumer's hardware prefetcher follows into the lines after them,
 * taking the next payload written there from the producer's cache.  Far
 * only while the payload starts past the light header (soft_light_far_ok). */
static inline uint32_t soft_light_far_off(uint32_t slot_size, uint32_t len)
{
    return slot_size - ((len + 8u) & ~7u) - 1u;
}

static inline int soft_light_far_ok(uint32_t slot_size, uint32_t len)
{
    return (uint64_t)len + SOFT_LIGHT_OFF + 9u <= slot_size;
}

#ifndef __cplusplus
_Static_assert(sizeof(soft_slot_t) <= SOFT_SLOT_HDR,
               "a ring slot header must hold the sequence and a packet");
_Static_assert(offsetof(soft_slot_t, pkt.raddr) == 64,
               "a light packet's common fields fill the slot's first line");
_Static_assert(SOFT_LIGHT_OFF == 87,
               "a light packet's payload follows raddr, rkey and imm");
_Static_assert(SOFT_LIGHT_OFF % 8 == SOFT_SLOT_DATA % 8,
               "a light packet's payload is aligned as a full packet's");
_Static_assert((SOFT_LINE_OFF % 8 == SOFT_SLOT_DATA % 8) &&
                   (SOFT_LINE_MAX == 9u) &&
                   (offsetof(soft_slot_t, pkt.src_token) + 7u == SOFT_LINE_OFF),
               "a one-line packet's payload is aligned as a full packet's, "
               "over the token's top byte and deliver_ns");
_Static_assert((SOFT_LINE_WIDE_MAX == 24u) &&
                   (offsetof(soft_pkt_t, dc_key) ==
                    offsetof(soft_pkt_t, gen) + sizeof(uint32_t)) &&
                   (SOFT_LINE_WIDE_MAX < SOFT_IP_MIN),
               "a keyless one-line packet's payload lies over dc_key, "
               "src_token and deliver_ns only, and is never received in "
               "place");
_Static_assert(SOFT_LIGHT_LINE2 > SOFT_LINE_WIDE_MAX,
               "a far payload is never as short as a one-line one");
_Static_assert(offsetof(soft_pkt_t, csum) % 8 == 4,
               "soft_pkt_csum hashes whole words and the 4 bytes before csum");
#endif

/* ------------------------------------------------------------------------
 * Shared segment
 * ------------------------------------------------------------------------ */
typedef struct soft_ring {
    uint32_t nslots;
    uint32_t slot_size; /* header + payload, multiple of 64 */
    uint32_t payload;   /* max payload bytes of one slot */
    uint32_t pad;
    uint64_t offset; /* of slot 0 from the segment base */
    uint8_t pad0[40];
    uint64_t tail; /* producers (CAS) */
    uint8_t pad1[56];
    uint64_t head; /* consumer (owner): next slot to read */
    /* consumer: slots before it are cleared and free for producers
     * (soft_ring_clear); head - freed consumed slots wait for that */
    uint64_t freed;
    uint8_t pad2[48];
} soft_ring_t;

/* Consumed slots a pass lets wait for their clear before it clears them
 * itself (soft_engine_serve_req); room producers do not see meanwhile */
#define SOFT_RING_CLEAR_LAG 16u

typedef struct soft_port_hdr {
    uint32_t magic;
    uint32_t version;
    int32_t owner_pid;
    uint32_t inst;
    uint64_t owner_start; /* /proc/PID/stat start time */
    uint64_t seg_size;
    uint32_t killed;
    uint32_t ready;
    uint32_t clock_kind; /* soft_clock_kind of last_poll */
    uint16_t lid; /* dcx_soft_dev_set_lid: what receives report as slid */
    uint16_t lid_pad;
    /* the port's first QP number (dcx_soft_dev_set_qpn_base): a responder
     * finds a DCI's ack table entry at its number minus this one */
    uint32_t qpn_base;
    uint8_t pad0[12];
    uint32_t doorbell; /* futex word of the helper */
    uint32_t sleeping; /* SOFT_HELPER_*: the helper's state */
    /* a sender rang for the current idle episode; the helper clears it
     * when it wakes: later senders of the episode make no syscall */
    uint32_t woken;
    /* SOFT_WAKE_*: whether the owner application sleeps on a completion
     * channel and waits for a sender's datagram on its wake socket
     * (soft_wake.c); written by the owner at each arm and by the one
     * sender that wakes it */
    uint32_t app_wait;
    /* 1 while the owner's sleepers (its helper in deep sleep, its
     * application armed on a channel) fence symmetrically, and senders
     * must fence between a packet's publish and their read of the words
     * above; 0 while the owner polls, when a sender registered for
     * membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) need not: a sleeper
     * that finds it 0 sets it and issues that call before it looks at
     * its rings (soft_port_sleep_fence, soft_wake.c) */
    uint32_t fence_hint;
    uint8_t pad1[44];
    /* written by the owner's progress calls once it is SOFT_STAMP_NS old
     * (soft_clock_now() units), read by the owner's helper, and by peers
     * deciding whether to prod it or (helper in NAP) wake it: a line of
     * its own, shared with nothing the peers write */
    uint64_t last_poll;
    uint32_t in_engine; /* an engine pass is running (no prods) */
    uint8_t pad2[52];
    /* identity, checked against the address by whoever maps the port */
    uint32_t uid;
    uint32_t host;
    uint64_t token; /* random part of the segment name */
    char fabric[48];
    soft_ring_t req;
    soft_ring_t resp;
    /* initiator-side one-sided tables (soft_direct.h); 0: none */
    uint64_t direct_off;
    /* ack table (soft_ack_t, ack_count entries); 0: none */
    uint64_t ack_off;
    uint32_t ack_count;
    uint32_t ack_pad;
} soft_port_hdr_t;

/* A port address.  Every field but the token is checked by
 * soft_addr_check() (AH creation and the transport's reachability test);
 * the token, unguessable, names the port's segment, whose header repeats
 * every field and is checked when the segment is mapped.  28 bytes: UCP's
 * packed worker address takes device addresses of at most 31 bytes, and
 * the transport adds a length byte. */
typedef struct __attribute__((packed)) soft_addr {
    uint16_t magic;  /* SOFT_ADDR_MAGIC */
    uint16_t inst;   /* device number within the process (never 0) */
    uint32_t uid;    /* owner's user */
    uint32_t host;   /* soft_host_id(): same boot and /dev/shm */
    uint32_t fabric; /* soft_fabric_hash() of the fabric name */
    uint32_t pid;
    uint64_t token;
} soft_addr_t;

#ifndef __cplusplus
_Static_assert(sizeof(soft_addr_t) == SOFT_ADDR_LEN,
               "a port address is SOFT_ADDR_LEN bytes");
#endif

/* The initiator's grant towards a port (soft_direct.c): what the last
 * direct copy to it found when it checked everything, kept so that the
 * next one to the same DCT and key checks only that nothing it read has
 * changed since (the port's gen, the MR entry's seqlock count, the
 * port's liveness) and that its range lies within.  area NULL: none. */
typedef struct soft_dgrant {
    struct soft_direct_area *area; /* the port's published tables */
    /* copied through (soft_dmap.c drops the grant with the entry); NULL:
     * cross-memory attach */
    struct soft_dmap_ent *map;
    uint64_t dc_key;
    uint64_t start, end; /* [start, end): the MR (and mapping) */
    uint32_t rkey, dctn;
    uint32_t access;     /* what the DCT and the MR both allow */
    uint32_t ext_max;    /* the DCT's largest masked atomic (bytes) */
    uint32_t gen;        /* the port's area->gen then */
    uint32_t mr_seq;     /* the MR entry's seq then (even) */
    uint32_t life;       /* its liveness lock's word then, if held; 0: not */
    uint32_t plain;      /* intents set with a plain store (soft_dslot.c) */
    uint32_t slot;       /* the marker slot we took last */
    uint32_t short_seen; /* area->short_gen when 'held' was claimed */
    struct soft_dslot *held; /* marker kept between copies (soft_dslot.c) */
} soft_dgrant_t;

/* A remote (or our own) port, mapped lazily. */
typedef struct soft_peer {
    struct soft_peer *next;
    uint32_t pid;
    uint32_t inst;
    uint64_t token;
    soft_port_hdr_t *hdr; /* NULL until mapped */
    size_t map_size;
    uint64_t next_try_ns;
    int own; /* our own port (loopback) */
    /* requests of ours not yet consumed by the peer (see soft_req_prod):
     * a post notes its own (soft_req_watch) without reading the peer's
     * ring head, a line the peer writes at every packet it consumes; the
     * prod check reads it, and the completion of our newest request ends
     * the watch */
    uint64_t watch_pos;   /* ring position after our newest one */
    uint64_t watch_head;  /* peer's ring head when last looked at */
    uint64_t watch_since; /* no progress seen since; 0: none */
    uint64_t head_reads;  /* reads of the peer's ring head */
    /* its rings' 'freed' when we last read them (soft_ring_reserve_c): our
     * producers read it only when these say the ring is full */
    uint64_t req_freed_seen;
    uint64_t resp_freed_seen;
    /* its ack table once mapped (bounded by the mapping; NULL: none),
     * where responders acknowledge its SOFT_PKT_WACK messages */
    soft_ack_t *acks;
    uint32_t ack_count;
    /* the longest light packet to it (soft_req_post_inline), set when
     * mapped: our MTU or its request slots' payload, the smaller */
    uint32_t light_max;
    /* its request slots' size, for a light SEND's far payload
     * (soft_light_far_off); 0 where its ring's geometry does not hold one
     * of light_max bytes */
    uint32_t far_slot;
    soft_dgrant_t grant; /* soft_direct.c */
    int direct_off;      /* cross-memory attach refused */
    int dmap_off;        /* mapping its allocations refused */
} soft_peer_t;

#endif
