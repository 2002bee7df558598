/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft-device-only interface: fault injection and counters, for tests,
 * benchmarks and diagnostics.  Everything else goes through dcx_dev.h.
 *
 * Behaviour of the soft device worth knowing when building on it:
 *  - A port is a shared-memory segment /dev/shm/dcx-soft.<uid>.<fabric>.
 *    <pid>.<token> (mode 0600), where the token is 64 random bits carried
 *    in the port address; a name that exists already is skipped for
 *    another token.  Unlinked by dcx_dev_close(); segments of dead owners
 *    are swept by the next open on any fabric of the same user.
 *  - caps.addr_len is 28; dcx_dev_addr_check() and dcx_ah_create() reject
 *    anything else, and addresses of another fabric, user or host, with
 *    EINVAL.
 *  - Request and response ring slots are cleared once consumed: the DC key
 *    of a request is in shared memory only while the request is queued.
 *  - caps.mtu (default 16 KiB) is the packet payload; longer messages are
 *    split and reassembled.
 *  - Transport timers of a DCI: with a nonzero qp_attr.timeout the verbs
 *    parameters (4.096us << timeout, retry_cnt, rnr_retry) are used as
 *    given; with timeout 0 the device's limits (ack_timeout_us, retry_cnt,
 *    rnr_retry) apply.  A DCT's min_rnr_timer uses the verbs table, except
 *    0 which means limits.rnr_timer_us (not 655 ms).
 *  - A dead peer (process gone, zombie, or killed port) is reported as
 *    RETRY_EXC_ERR at the first ack timeout; a live one that consumed our
 *    requests without answering (wrong DC key or DCT, lost packets) after
 *    (retry_cnt + 1) timeouts.  Timeouts while our requests still wait in
 *    a live peer's ring (its CPU busy, the process stopped) do not count:
 *    a NIC answers whatever its host does, so CPU starvation is not death.
 *  - Memory: every request packet is checked against the region it names;
 *    dcx_dev_mem_unmapped() makes overlapping regions refuse access at
 *    once; copies into and out of peer-named memory are kernel copies
 *    (process_vm_writev/readv), so memory that vanished anyway gives the
 *    initiator REM_ACCESS_ERR (see soft_mem.c).
 *  - limits.direct = 1 (the transport's UCX_DCX_SOFT_DIRECT, default on):
 *    an RDMA WRITE or READ posted on a DCI with nothing else outstanding is
 *    executed by the initiator, one process_vm_writev/readv between the two
 *    processes' memory, checked against the DCT and MR tables the target
 *    publishes in its port segment (when its device also has direct on);
 *    it completes at once, and the target's CPU does nothing.  Whatever
 *    that check refuses, and everything under fault injection or where
 *    cross-memory attach is refused, goes by packets as before, with the
 *    same completions.  mr_dereg and dcx_dev_mem_unmapped() wait for
 *    initiators' copies in flight into the region (bounded; soft_direct.c).
 *    Counted in dcx_soft_stats_t.direct_*.
 *  - A registered range that lies in one System V shared memory attachment
 *    (DCX_CAP_SHM_PEERS: the dcx md allocates such segments) is published
 *    with its segment's id next to the MR table (soft_shm.c).  A direct
 *    WRITE/READ, or an atomic, whose target MR lies in such a segment is
 *    a memcpy (a CPU atomic) through the initiator's attachment of it
 *    (made once by the id, cached per device, at most 16, dropped when
 *    the segment is unpublished or its process exits; soft_dmap.c), after
 *    the same checks and under the same in-flight markers as a
 *    cross-memory copy, and with no system call: whether the target is
 *    alive is read from a robust lock its helper thread holds (the kernel
 *    marks it when the process dies).  Where pidfd_open, the segment's
 *    stat or its attachment is refused, the copy is a cross-memory one as
 *    for other memory.
 *  - Small inline SENDs and RDMA WRITEs: one that fits a packet, posted on
 *    a DCI with nothing waiting to be transmitted and no fault rule set, is
 *    written straight into the target's request ring in a compact form (a
 *    small message takes the slot's first two cache lines), and the target
 *    acknowledges it in an ack table of the initiator's port segment (one
 *    cache line per DCI, cumulative) instead of by an ACK packet; the
 *    initiator completes every WQE up to there at its next engine pass.  An
 *    inline WRITE on a DCI with nothing outstanding goes the direct way
 *    first where limits.direct allows it (above).  The target checks a
 *    WRITE's rkey, bounds, access and DC key as for any packet.  Everything
 *    else, and everything while a fault rule is set, goes the general way
 *    with ACK packets.  Timeouts, retries, RNR, flush and dead-peer
 *    detection are the same on both.  Counted in dcx_soft_stats_t.
 *    acks_in_table / table_completions.
 *  - qp->post_send, srq->post_recv and cq->poll take the device's engine
 *    lock (a futex mutex) and are thread-safe; a full send queue or SRQ returns ENOMEM with
 *    a debug-level log line only (it is flow control, not an error).
 *  - Each device runs a helper thread that executes inbound operations when
 *    the application has not polled for 200 us, and sleeps on a futex when
 *    nothing is outstanding.
 *  - Tag matching (DCX_CAP_TM, caps.tm_max_tags = limits.tm_max_tags,
 *    default 1023): a DCX_SRQ_TM SRQ creates 4 DCIs of its own (they count
 *    against max_dci) for the device's rendezvous READs and FINs; the
 *    engine and its modelling choices are described in soft_tm.c.
 */
#ifndef DCX_SOFT_H_
#define DCX_SOFT_H_

#include "dcx_dev.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits of a soft device.  Zero means "use the default"; the defaults match
 * a ConnectX-6 as seen through rdma-core (see dcx_soft_limits_default()). */
typedef struct dcx_soft_limits {
    uint32_t max_qp_wr;
    uint32_t max_srq_wr;
    uint32_t max_cqe;
    uint32_t max_sge;
    uint32_t max_inline;
    uint32_t max_rd_atomic;
    uint32_t max_dci;
    uint64_t max_msg_size;
    uint32_t mtu;
    uint32_t tm_max_tags;      /* 2^n - 1, at most 65535; 0 = 1023 */
    uint32_t tm_off;           /* 1: no tag matching (no DCX_CAP_TM) */
    uint32_t mkey_max_entries; /* 0 = 256 (at least 4, at most 65535) */
    uint32_t ack_timeout_us;   /* one transport retry interval */
    uint32_t retry_cnt;        /* retries before RETRY_EXC (0..7) */
    uint32_t rnr_timer_us;     /* delay before an RNR retry */
    uint32_t rnr_retry;        /* 0..6 retries; 7 = retry forever */
    /* 1: RDMA WRITE/READ are executed by the initiator (cross-memory
     * attach, no target CPU) where both ends allow it; 0 (default): by the
     * target's responder */
    uint32_t direct;
    /* 1: the pages of the port's rings, and of a peer's when first
     * reached, are left to be touched by the packets that first use them;
     * 0 (default): touched at once (soft_fabric.c, soft_rings_warm) */
    uint32_t cold_rings;
    /* 1: every receive is copied into its buffer; 0 (default): large ones
     * on SRQs that ask (DCX_SRQ_F_IN_PLACE) may complete in place */
    uint32_t recv_copy;
    /* 1: registered memory keeps its pages, as a NIC's registration pins
     * them: an access to pages unmapped since their registration (a peer's,
     * or a WR's sg list) succeeds, writes landing nowhere and reads giving
     * zeros (soft_mem.c); 0 (default): it fails, with a remote access or
     * local protection error */
    uint32_t pinned;
    /* 1: a strided-key request (DCX_WR_MKEY_*) is never executed by the
     * post that queues it, but by the next run of its QP (a later post on
     * it, or the device's pass at a poll), as a NIC executes a UMR some
     * time after its doorbell: work posted on another QP meanwhile may run
     * before it, as it can on hardware.  0 (default): executed within the
     * post where nothing precedes it. */
    uint32_t mkey_late;
} dcx_soft_limits_t;

void dcx_soft_limits_default(dcx_soft_limits_t *limits);

/* The soft backend ("soft", registered by soft_backend.c): its devices are
 * named soft0, soft1, ...; dcx_dev_backend() of one of them, and
 * dcx_dev_info_t.backend of its listing, is &dcx_soft_backend. */
extern const dcx_backend_t dcx_soft_backend;

/* The soft backend's knobs (UCX_DCX_SOFT_* in the UCX transport; their
 * names, ranges and help are in soft_backend.c): its parameter block in a
 * dcx_dev_config_t (dcx_dev_config_params(config, "soft")).  A zeroed
 * block asks for no device; zeroed limits are the defaults, with direct
 * off. */
typedef struct dcx_soft_params {
    uint32_t count; /* SOFT_DEVICES: soft0..soft<count-1> */
    /* SOFT_FABRIC: processes on the same fabric reach each other.  NULL or
     * "" means "default".  [A-Za-z0-9_.-], at most 32 characters. */
    const char *fabric;
    /* SOFT_MAX_QP_WR ... SOFT_RNR_RETRY, SOFT_MKEY_MAX_ENTRIES,
     * SOFT_TM (tm_off), SOFT_DIRECT (direct) */
    dcx_soft_limits_t limits;
} dcx_soft_params_t;

/* Lists the soft devices params asks for, as dcx_dev_list() lists those of
 * the soft backend: no other backend is asked.  Free with
 * dcx_dev_list_free(). */
int dcx_soft_list(const dcx_soft_params_t *params, dcx_dev_info_t **list_p,
                  unsigned *count_p);

/* The largest limits (dcx_soft_limits_t) a soft device accepts; a list
 * request asking for more fails with EINVAL.  The minimum of each count is
 * 1 (0 means "default"), of the MTU 256. */
#define DCX_SOFT_LIMIT_MAX_QP_WR     65536u
#define DCX_SOFT_LIMIT_MAX_SRQ_WR    65536u
#define DCX_SOFT_LIMIT_MAX_CQE       (1u << 22)
#define DCX_SOFT_LIMIT_MAX_SGE       30u
#define DCX_SOFT_LIMIT_MAX_INLINE    65536u
#define DCX_SOFT_LIMIT_MAX_RD_ATOMIC 16u
#define DCX_SOFT_LIMIT_MAX_DCI       65536u
#define DCX_SOFT_LIMIT_MIN_MTU       256u
#define DCX_SOFT_LIMIT_MAX_MTU       (1u << 20)
#define DCX_SOFT_LIMIT_MAX_MSG_SIZE  (1ull << 31)

typedef enum {
    DCX_SOFT_FAULT_NONE,
    /* Outbound request packets of this device matching the filter are lost
     * on the wire: the requester retransmits after its ack timeout and
     * fails with RETRY_EXC_ERR once retry_cnt is exhausted. */
    DCX_SOFT_FAULT_DROP,
    /* Matching outbound packets reach the target delay_us late. */
    DCX_SOFT_FAULT_DELAY,
    /* Matching outbound packets arrive with a bad checksum: the target
     * discards them (counted) and the requester retransmits, as with DROP. */
    DCX_SOFT_FAULT_CORRUPT,
    /* Matching WRs posted on this device complete with 'status' (the DCI
     * then goes to ERR as with any error completion). */
    DCX_SOFT_FAULT_ERROR_CQE,
    /* This device's port goes dark: it stops answering and accepting
     * packets; peers see RETRY_EXC_ERR.  Irreversible for the device. */
    DCX_SOFT_FAULT_KILL_PORT
} dcx_soft_fault_type_t;

typedef struct dcx_soft_fault {
    dcx_soft_fault_type_t type;
    int opcode;             /* dcx_wr_opcode_t, or -1 for any; the
                               strided-key requests (DCX_WR_MKEY_*) with
                               ERROR_CQE only: the request completes with
                               'status' and the key is left as it was */
    uint32_t skip;          /* let this many matches pass first */
    uint32_t count;         /* matches affected; 0 = until cleared */
    uint32_t delay_us;      /* DELAY */
    dcx_wc_status_t status; /* ERROR_CQE */
} dcx_soft_fault_t;

/* One fault rule per device at a time; a new one replaces the old. */
int dcx_soft_fault_inject(dcx_dev_t *dev, const dcx_soft_fault_t *fault);
void dcx_soft_fault_clear(dcx_dev_t *dev);

typedef struct dcx_soft_stats {
    uint64_t tx_packets;
    uint64_t tx_bytes;
    uint64_t rx_packets;
    uint64_t rx_bytes;
    uint64_t retransmits;
    uint64_t rnr_naks_sent;
    uint64_t rnr_retries;
    uint64_t dc_key_violations; /* requests dropped for a wrong DC key */
    uint64_t bad_dctn_drops;    /* requests for a DCT that does not exist */
    uint64_t corrupt_drops;
    uint64_t remote_access_errors;
    uint64_t helper_wakeups; /* helper thread woke up */
    uint64_t helper_packets; /* packets the helper thread processed */
    uint64_t resp_drops;     /* responses dropped: requester ring full */
    uint64_t prods;          /* peer helpers woken for unserved requests */
    uint64_t direct_writes;  /* RDMA WRITEs executed by this initiator */
    uint64_t direct_reads;   /* RDMA READs executed by this initiator */
    uint64_t direct_bytes;
    uint64_t direct_fallbacks; /* started direct, went by packets */
    uint64_t futex_wakes;      /* FUTEX_WAKE calls made (any helper) */
    uint64_t direct_mapped;    /* direct WRITEs/READs that were a plain
                                  copy through an attachment of the
                                  target's SysV segment (also in
                                  direct_writes/direct_reads) */
    uint64_t direct_maps;      /* target SysV segments attached */
    /* cumulative acknowledgements: responder side, messages acknowledged
     * in the requester's ack table instead of by an ACK packet; requester
     * side, WQEs completed from our table */
    uint64_t acks_in_table;
    uint64_t table_completions;
    /* application polls (CQ poll, device progress) that took the engine
     * lock; every other poll found nothing to do without it */
    uint64_t locked_polls;
    /* the helper thread's activity: timed waits it woke from (a nap or a
     * park, see soft_helper.c; helper_wakeups counts the wakes from an
     * untimed deep sleep), engine passes it ran, and times a taker of the
     * engine lock found it held (the application's or the helper's) */
    uint64_t helper_naps;
    uint64_t helper_passes;
    uint64_t lock_waits;
    /* locked polls that served only the request ring (no clock read, no
     * timer walk): the look found packets there and an engine otherwise
     * idle or only waiting */
    uint64_t ring_passes;
    /* responder side: stores into requesters' ack tables (acks_in_table
     * counts the messages: several of one DCI served in one pass take one
     * store) */
    uint64_t table_stores;
    /* applications asleep on a completion channel that this device's
     * senders woke through their wake socket, without their helper */
    uint64_t wake_pokes;
    /* responder side, remote accesses through strided keys: batches
     * copied (each one vectored system call, or memcpys once the consumer
     * reports unmaps) and the pieces they held */
    uint64_t mkey_batches;
    uint64_t mkey_pieces;
    /* requester side: messages sent by the light post (one packet in the
     * compact form, soft_req_post_inline; also in tx_packets) */
    uint64_t light_posts;
    /* requester side: grants made towards peers (soft_dgrant_t), each
     * after a direct WRITE or READ that passed every check; the small
     * ones after it to the same DCT and key check only what changed */
    uint64_t direct_grants;
    /* responder side: receives completed with the message where it
     * arrived (DCX_WC_FLAG_IN_PLACE), not copied into their buffer */
    uint64_t recv_in_place;
    /* atomics this initiator executed on a mapping of the target's
     * allocation (new fields go last: programs built against an older
     * header read the ones they know) */
    uint64_t direct_atomics;
    /* responder side: single-packet SENDs and WRITEs executed on the
     * responder's fast path (the rest take its general path) */
    uint64_t resp_fast;
    /* requester side: light posts in the one-line form (an 8-byte
     * am_short or tagged message: the slot's first cache line only; also
     * in light_posts); responder side: one-line packets dropped for a
     * source port it did not know or, keyless, a DC key it could not
     * vouch for (each delivered or refused by its whole retransmission) */
    uint64_t line_posts;
    uint64_t line_drops;
} dcx_soft_stats_t;

int dcx_soft_stats(dcx_dev_t *dev, dcx_soft_stats_t *stats);

/* Counters of one tag-matching SRQ (DCX_SRQ_TM). */
typedef struct dcx_soft_tm_stats {
    uint64_t adds;          /* ADD operations */
    uint64_t dels;          /* DELs that removed their entry */
    uint64_t del_races;     /* DELs that found it consumed (TM_ERR) */
    uint64_t syncs;         /* SYNC operations */
    uint64_t matched;       /* messages matched to a listed entry */
    uint64_t unexp_eager;   /* unexpected eager messages */
    uint64_t unexp_rndv;    /* unexpected rendezvous requests */
    uint64_t rndv_hw;       /* rendezvous read by the device */
    uint64_t rndv_sw;       /* RNDV_INCOMPLETE: left to software */
    uint64_t rndv_errors;   /* device reads that failed */
    uint64_t fins_sent;     /* FINs the sender's device acknowledged */
    uint64_t fin_errors;    /* FINs that could not be delivered */
    uint64_t fins_received; /* FINs received (TM_NO_TAG) */
    uint64_t fast;          /* NO_TAG and unexpected eager messages placed
                                 by the responder's one-pass path (one
                                 packet, no listed entry to match) */
    uint64_t rndv_pass_max; /* most device rendezvous READs one engine
                                 pass started while the application
                                 polled (1: it polls between two copies) */
} dcx_soft_tm_stats_t;

int dcx_soft_tm_stats(dcx_srq_t *srq, dcx_soft_tm_stats_t *stats);

/* Tests only: the next 'count' (at most 16, the number of names an open
 * tries) port name tokens drawn by
 * dcx_dev_open() in this process are tokens[0], tokens[1], ... instead of
 * random ones, so that a test can occupy the names a device will try. */
void dcx_soft_test_set_tokens(const uint64_t *tokens, unsigned count);

/* Tests only: how many initiators' in-flight markers (a direct RDMA copy
 * into or out of this device's memory under way, or left by a process that
 * died in one) the device's published tables hold right now. */
unsigned dcx_soft_direct_inflight(dcx_dev_t *dev);

/* Tests only: how many peers' SysV segments this device holds attached
 * for its direct RDMA WRITE/READ right now. */
unsigned dcx_soft_direct_mappings(dcx_dev_t *dev);

/* Tests only: 1 once the device's helper thread holds the liveness lock
 * that peers read before copying into its allocations without asking the
 * kernel (soft_direct.h), else 0. */
int dcx_soft_direct_alive_lock(dcx_dev_t *dev);

/* A port address of dev's fabric (as dcx_dev_port_addr() writes it) that
 * names no port: an AH built from it is accepted, and every request sent
 * through it fails with RETRY_EXC_ERR at the first ack timeout, as a
 * destination that does not exist on a real fabric.  For the mlx5
 * emulation's address handles to LIDs no port holds.  0, or EINVAL if
 * *len_p is too small. */
int dcx_soft_addr_nowhere(dcx_dev_t *dev, void *addr, size_t *len_p);

/* Changes the transport timers of a DCI (the verbs encoding of
 * dcx_qp_attr_t; timeout 0: the device's limits) and its max_rd_atomic
 * (0: unchanged), as the RTR->RTS transition of verbs sets them on a QP
 * that exists already; the mlx5 emulation calls it there.  Requests in
 * flight keep the deadline they have.  0, or EINVAL (logged) for a value
 * out of range or a QP that is not a DCI. */
int dcx_soft_qp_set_timers(dcx_qp_t *qp, uint8_t timeout, uint8_t retry_cnt,
                           uint8_t rnr_retry, uint32_t max_rd_atomic);

/* Changes a DCT's DC key, remote access (DCX_ACCESS_REMOTE_*) and
 * min_rnr_timer, as dcx_qp_attr_t gives them at creation: the mlx5
 * emulation builds an RC QP's responder on a DCT made when the QP is
 * created, and sets these at the QP's INIT->RTR (and closes it again at
 * RESET).  Requests already accepted are not affected.  0, or EINVAL
 * (logged) for a value out of range or a QP that is not a DCT. */
int dcx_soft_dct_set(dcx_qp_t *qp, uint64_t dc_key, uint32_t access,
                     uint8_t min_rnr_timer);

/* The largest operand of a masked (extended) atomic a DCT executes: 8
 * (as made), 4, or 0 (standard 8-byte atomics only); a larger one is an
 * invalid request (REM_INV_REQ_ERR at the requester), nothing written.
 * The mlx5 emulation gives a DCT made through DEVX what its atomic_mode
 * allows.  0, or EINVAL (logged) for another size or a QP that is not a
 * DCT. */
int dcx_soft_dct_set_ext_atomics(dcx_qp_t *qp, uint8_t max_bytes);

/* Makes a DCI (without streams, nothing outstanding) a datagram DCI, as
 * the mlx5 emulation builds a UD QP: each WR a SEND or SEND_IMM of at most
 * the MTU (EINVAL otherwise, logged), one packet completed as soon as it
 * is on the wire or lost, never an error for a lost one; the receiving
 * DCT takes it into a posted receive (src_qp: wire_qpn) or drops it, and
 * answers nothing.  The DCI's own completions carry wc_qpn as their
 * qp_num (soft_dgram.c).  0, EINVAL or EBUSY (logged). */
int dcx_soft_qp_set_datagram(dcx_qp_t *qp, uint32_t wire_qpn, uint32_t wc_qpn);

/* Gives strided key mkey a list layout (dcx_mkey_layout_t, as
 * DCX_WR_MKEY_LIST) at once, with no work request, its byte 0 at address
 * base instead of 0, and its key's low byte (the variant software picks
 * for an mkey on a ConnectX) set to variant: the mlx5 emulation's DEVX
 * CREATE_MKEY of a KSM or KLM key.  0, or EINVAL (logged) for a layout
 * the key cannot take, ENOMEM. */
int dcx_soft_mkey_configure(dcx_mkey_t *mkey, const dcx_mkey_layout_t *lay,
                            uint64_t base, uint8_t variant);

/* Whether stream stream_id of DCI qp is in error (1) or not (0); -EINVAL
 * (logged) for a QP that is not a DCI with that stream. */
int dcx_soft_stream_errored(dcx_qp_t *qp, uint16_t stream_id);

/* Drops the receive completions of DCT qp not yet polled from its CQ, as
 * libmlx5 cleans a CQ of the completions of a QP it moves to RESET (the
 * mlx5 emulation's RC and UD QPs, whose responder is a DCT).  0, or EINVAL
 * (logged) for a QP that is not a DCT on an SRQ without tag matching or
 * in-place receives. */
int dcx_soft_dct_purge(dcx_qp_t *qp);

/* Flushes the receive queue of DCT qp, whose SRQ is its own (the mlx5
 * emulation's RC and UD QPs, whose responder is a DCT), as a QP moved
 * into ERR flushes its own (on): the receive a message in progress holds
 * and every receive queued complete on the DCT's CQ with
 * DCX_WC_WR_FLUSH_ERR, and every receive posted from then on completes so
 * at once.  on=0 (a move to RESET): the receives queued are dropped
 * without completions, and posts queue again.  0, or EINVAL (logged) for a
 * QP that is not a DCT on an SRQ without tag matching or in-place
 * receives. */
int dcx_soft_dct_flush(dcx_qp_t *qp, int on);

/* Changes a plain MR in place, as ibv_rereg_mr does: its PD (of the same
 * device), range and access, under the same lkey and rkey.  The key is out
 * of the table while it changes, as for a deregistration: WRs of ours
 * still naming it fail (LOC_PROT_ERR) and an access from a peer meanwhile
 * is refused.  0, or (logged, the MR unchanged) EINVAL for arguments a
 * registration refuses, a PD of another device or a strided key's key,
 * EFAULT for a range not mapped as the access needs. */
int dcx_soft_mr_rereg(dcx_mr_t *mr, dcx_pd_t *pd, void *addr, size_t length,
                      uint32_t access);

/* Moves cq to completion channel ch (NULL: none), its events not yet
 * collected on the old one dropped and its arm undone: the mlx5 emulation
 * takes over the notifications of a CQ whose memory an application polls
 * itself (a raw CQ) and forwards them.  0, or EINVAL (logged). */
int dcx_soft_cq_move_channel(dcx_cq_t *cq, dcx_comp_channel_t *ch);

/* Takes channel ch off the device's wake socket (soft_wake.c): its fd is
 * no longer readable for a sender's datagram, the arms of its CQs ask
 * senders for none (they ring the device's helper, whose completions fire
 * the CQs' events), and taking its events takes no datagram another
 * channel's sleeper waits for.  For a channel whose device another thread
 * serves while the application sleeps: the mlx5 emulation's engine sleeps
 * on a channel of its own, which keeps the socket, and an application's
 * channel that watched it too would wake for every message the engine is
 * to serve.  Call before any CQ uses ch.  0, or (logged) EBUSY if a CQ
 * does, EINVAL if ch is not a soft device's. */
int dcx_soft_channel_no_wake(dcx_comp_channel_t *ch);

/* Makes channel ch's fd readable also while fd (the caller's, pollable)
 * is: for a caller with events of its own to raise on the same fd, one
 * wait set instead of one polling the other, whose nesting the kernel
 * bounds (the mlx5 emulation's channels, whose events the emulation raises
 * on an eventfd).  The caller keeps fd open until ch is destroyed.  0, or
 * (logged) EINVAL if ch is not a soft device's, or the errno of the merge. */
int dcx_soft_channel_add_fd(dcx_comp_channel_t *ch, int fd);

/* From now on, a message that finds srq without a receive (answered RNR,
 * or a datagram dropped) writes 8 bytes to eventfd efd (-1: no more), from
 * whichever thread runs the engine: the mlx5 emulation takes the receives
 * an application posts in SRQ memory into the soft SRQ when told.  0, or
 * EINVAL (logged). */
int dcx_soft_srq_watch(dcx_srq_t *srq, int efd);

/* Gives dev's port a LID, which the receive completions of what it sends
 * report in their slid (dcx_wc_t): the mlx5 emulation sets the LID the
 * port got from its fabric's LID directory.  0, or EINVAL (logged). */
int dcx_soft_dev_set_lid(dcx_dev_t *dev, uint16_t lid);

/* Work an owner of dev was given for the device but has not handed it
 * yet: nonzero while there is some (arg is the owner's).  The mlx5
 * emulation runs a command QP's tag-list operations on its own thread,
 * after the application rang the doorbell; a ConnectX runs them within
 * microseconds, long before a message the application asked a peer to
 * send once the doorbell was rung can come back.  Called under dev's
 * engine lock, by whichever thread runs the engine: it must not call into
 * the device, and takes only locks of its own. */
typedef int (*dcx_soft_rx_hold_t)(void *arg);

/* From now on no inbound packet of dev is served while hold(arg) returns
 * nonzero: the packet waits in the port's ring for a later pass, so that
 * work rung before it came runs first (hold NULL: none).  0, or EINVAL
 * (logged) for a device that is not soft. */
int dcx_soft_dev_set_rx_hold(dcx_dev_t *dev, dcx_soft_rx_hold_t hold,
                             void *arg);

/* Whether dev has device rendezvous under way (its tag-matching SRQs'
 * READs and FINs): they progress only while something polls the device,
 * as requests in flight do.  A look without the engine lock. */
int dcx_soft_dev_rndv_live(dcx_dev_t *dev);

/* Whether dev has exchanged packets with a port of another process: a
 * packet may then arrive that no post of this process brings about, and
 * only a poll, or a wake-up of a sleeper armed on its CQs, serves.  A
 * look without the engine lock. */
int dcx_soft_dev_remote_peers(dcx_dev_t *dev);

/* The largest QP number (24 bits, as on the wire of InfiniBand) */
#define DCX_SOFT_QPN_MAX 0xffffffu

/* Numbers dev's QPs (DCIs and DCTs) from 'first' on: a QP's number is
 * first + its index, below first + the device's QP count; numbers below
 * first or past the last are nobody's (a request to one is dropped and
 * counted as for any unknown DCT).  Without a call the first number is
 * 0x100.  The mlx5 emulation gives each port's device the numbers of its
 * LID registration's window, so that the numbers its QPs are known by are
 * the soft device's own, including those an application puts in its
 * messages (a tag-matching rendezvous names its DCT).  Only before the
 * device's first QP: 0, EBUSY once it has made one, EINVAL when the
 * numbers do not fit [1, DCX_SOFT_QPN_MAX] (both logged). */
int dcx_soft_dev_set_qpn_base(dcx_dev_t *dev, uint32_t first);

/* Posts wr on a DCI as a WQE the device accepts and then fails: it is
 * checked and queued as by dcx_qp_post_send, and when it reaches the head
 * of the send queue it completes with 'status' (an error) without being
 * executed, the DCI going to ERR (on a DCI with streams: the WR's stream,
 * as after any error completion there).  The mlx5 emulation models with
 * it what the HCA refuses in a WQE that rdma-core let through.  0, or what the
 * post returns; EINVAL (logged) for a QP that is not a soft DCI or a
 * status that is not an error. */
int dcx_soft_qp_post_failing(dcx_qp_t *qp, const dcx_send_wr_t *wr,
                             dcx_wc_status_t status);

/* True if dev is a soft device. */
int dcx_dev_is_soft(const dcx_dev_t *dev);

#ifdef __cplusplus
}
#endif

#endif /* DCX_SOFT_H_ */
