/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device internals, shared by the files of src/soft.
 *
 * The model: every opened soft device owns one shared-memory "port" segment
 * on its fabric.  The segment carries two multi-producer single-consumer
 * rings: one for inbound requests (filled by peers' requesters) and one for
 * inbound responses (filled by peers' responders).  Everything else
 * (MRs, CQs, SRQs, QPs, the engine state) is private to the owning process.
 *
 * One mutex per device ("engine lock") serialises the engine: application
 * calls (post, poll, progress, control path) take it, the helper thread only
 * try-locks it; copies done within the call take it biased, without a
 * locked instruction (soft_lock.h).
 *
 * Protocol, in short:
 *  - A WQE is split into packets of at most the MTU (the smaller of both
 *    ends' slot payloads); each carries the DCI's message number (msn), the
 *    oldest msn still unacknowledged (ack_base) and its byte offset.  A
 *    request is checksummed only when its sender has a fault rule set
 *    (SOFT_PKT_CSUM): the only source of corruption the model has.
 *  - The responder handles a source (port, DCI) strictly in order, answers
 *    the last packet of a message (ACK/NAK), every READ packet (data) and
 *    every atomic (result); RNR and errors are NAKed at the first packet.
 *    A request marked SOFT_PKT_WACK (the light path of small inline SENDs
 *    and RDMA WRITEs, soft_req_post_inline, which sends them in the compact
 *    form SOFT_PKT_LIGHT; the last packet of a SEND or WRITE of the
 *    general path, soft_req_table_ack) is acknowledged in the requester's
 *    ack table (soft_ack_t) instead of by an ACK packet; the responder
 *    kicks the requester's port after the store only for a signaled one
 *    of the general path (SOFT_PKT_WKICK), whose completion a requester
 *    asleep on a completion channel waits for.  The responder handles
 *    single-packet messages in one pass (soft_resp_fast).
 *  - A READ request packet asks for a range of up to SOFT_READ_BURST
 *    response packets (args[0] bytes, args[1] bytes per response), so a
 *    large READ streams: the responder answers a whole burst at once and
 *    the requester asks for the next burst as slots free up.
 *  - The requester keeps one response slot of its own ring reserved for
 *    every answer it expects ("credits"), so responders never wait: a
 *    response that does not fit is dropped and recovered by a retry.  One
 *    slot is never lent out: the response being processed still holds its
 *    slot when its credit returns and the next request goes out.
 *  - Losses are recovered go-back-N from the oldest WQE after the ack
 *    timeout; duplicates are re-answered (atomics from saved results).
 *  - A full request ring is back-pressure: the requester tries again on its
 *    next progress.
 */
#ifndef DCX_SOFT_INT_H_
#define DCX_SOFT_INT_H_

#include "dcx_dev.h"
#include "dcx_soft.h"
#include "soft_base.h"
#include "soft_wire.h"  /* packets, the segment's layout, peers */
#include "soft_ring.h"  /* ring slots, their consumer state and functions */
#include "soft_lock.h"  /* the engine lock */
#include "soft_clock.h" /* the clocks */

#include <pthread.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <sys/uio.h>


/* A key of the device's table: a plain MR (mkey == NULL), or the table
 * entry of a strided mkey, whose start/end are not addresses.  Plain-MR
 * users look keys up with soft_mr_lookup(), which never returns an mkey;
 * sites that also take strided keys use soft_key_lookup(). */
typedef struct soft_mr {
    dcx_mr_t super;
    uint64_t start;
    uint64_t end;
    int invalid; /* memory unmapped: no access (soft_mem.c) */
    /* inside one of our device allocations (soft_alloc.c), which go only
     * through soft_alloc_free and its invalidation: the engine copies
     * with memcpy (soft_mem_vec_write) */
    int mapped;
    soft_mkey_t *mkey;
} soft_mr_t;

/* A batch of pieces of registered memory the engine copies to or from one
 * contiguous buffer in one go (soft_mem.c): a vectored cross-memory call
 * of up to SOFT_MEM_VEC_MAX pieces, or memcpys where every piece is in a
 * mapped region.  Filled by a strided key's walk (soft_mkey.c). */
#define SOFT_MEM_VEC_MAX 1024 /* IOV_MAX on Linux */

typedef struct soft_mem_vec {
    uint32_t n;   /* pieces */
    uint32_t nmr; /* regions, one per run of pieces in the same region */
    int mapped;   /* the pieces' regions are mapped (one mode a batch) */
    uint64_t off; /* of the first piece in the buffer */
    uint64_t len; /* bytes of all pieces */
    struct iovec iov[SOFT_MEM_VEC_MAX];
    soft_mr_t *mr[SOFT_MEM_VEC_MAX];
} soft_mem_vec_t;

typedef struct soft_cqe {
    dcx_wc_t wc;
    soft_qp_t *qp; /* DCI whose SQ this CQE retires, or NULL */
    uint32_t sq_idx;
    uint32_t pad;
    /* tag matching: list entry / operations this CQE retires when polled
     * (soft_tm_polled, soft_tm.h), or tm == NULL; tm_entry, tm_gen and
     * tm_op are read only when tm_flags name them */
    soft_tm_t *tm;
    uint32_t tm_entry;
    uint32_t tm_gen;
    uint32_t tm_op;
    uint8_t tm_flags;
    uint8_t tm_pad[3];
} soft_cqe_t;

typedef struct soft_channel soft_channel_t;

typedef struct soft_cq {
    dcx_cq_t super;
    soft_dev_t *dev;
    soft_cqe_t *q;
    uint32_t size; /* power of 2 */
    uint32_t head;
    uint32_t tail;
    int overrun;
    int refs;
    /* completion channel (soft_channel.c); all under the device lock */
    soft_channel_t *ch;
    struct soft_cq *ch_next; /* the channel's CQ list */
    int armed;               /* the next push generates an event */
    unsigned events;         /* generated, not collected yet */
    uint64_t passes_seen;    /* dev->app_passes at the last poll */
    /* receives in place (an SRQ with DCX_SRQ_F_IN_PLACE completes here):
     * numbered as made (engine lock), as returned by polls (engine lock),
     * as released by the poller (dcx_cq_release, without the lock); the
     * request ring positions of those not released, by number */
    int ip_on;
    uint32_t ip_made;
    uint32_t ip_polled;
    uint32_t ip_released;
    struct soft_cq *ip_next; /* dev->ip_cqs */
    uint64_t ip_pos[SOFT_IP_MAX];
} soft_cq_t;

/* super.fd, the fd an application sleeps on, is an epoll set over 'efd'
 * (the CQs' events), the device's wake socket (senders' datagrams) and
 * any fd its user merged in (soft_channel_add_fd) */
struct soft_channel {
    dcx_comp_channel_t super;
    soft_dev_t *dev;
    soft_cq_t *cqs; /* attached CQs */
    int efd;        /* eventfd: non-zero while a CQ has an event */
    int signaled;   /* efd written since it was last read */
};

typedef struct soft_rwqe {
    uint64_t wr_id;
    uint32_t num_sge;
    uint32_t pad;
    dcx_sge_t sge[SOFT_MAX_RECV_SGE];
} soft_rwqe_t;

struct soft_srq {
    dcx_srq_t super;
    soft_dev_t *dev;
    soft_cq_t *cq;
    soft_rwqe_t *q;
    uint32_t size;
    uint32_t head; /* receives taken (counts on past 2^32) */
    uint32_t tail; /* receives posted */
    /* q's slots of head and tail, in [0, size): no division per receive
     * (size is max_wr, any number), and a slot mapping that stays right
     * when the counters wrap around 2^32 (head % size does not, unless
     * size is a power of 2) */
    uint32_t hpos;
    uint32_t tpos;
    int refs;
    int in_place;  /* DCX_SRQ_F_IN_PLACE */
    soft_tm_t *tm; /* DCX_SRQ_TM: its tag list and engine */
    int watch_fd;  /* dcx_soft_srq_watch: written when found empty */
};

typedef struct soft_ah {
    dcx_ah_t super;
    soft_peer_t *peer;
} soft_ah_t;

/* Requester state of one send WQE. */
typedef enum {
    SOFT_WQE_POSTED,    /* not started */
    SOFT_WQE_SENDING,   /* some packets out */
    SOFT_WQE_WAIT_RESP, /* all packets out, waiting for the response */
    SOFT_WQE_DONE,
    SOFT_WQE_STATE_LAST
} soft_wqe_state_t;

extern const char *soft_wqe_state_names[SOFT_WQE_STATE_LAST];

typedef struct soft_swqe {
    dcx_send_wr_t wr;
    soft_peer_t *peer;
    uint64_t total_len;
    uint64_t sent_off; /* bytes sent / requested (READ) */
    uint64_t recv_off; /* READ: bytes received */
    uint32_t msn;
    uint32_t credits;     /* response slots held */
    uint8_t state;        /* soft_wqe_state_t */
    uint8_t forced;       /* status forced by fault injection */
    uint8_t checked;      /* local keys validated */
    uint8_t all_sent;     /* every request packet is out */
    uint8_t rd_counted;   /* counted in qp->rd_atomic */
    uint8_t copy_refused; /* the initiator's copy did not take it
                           * (soft_req_run_direct): packets */
    uint8_t late;         /* a strided-key request not to execute within
                           * its post (limits.mkey_late) */
    uint8_t pad[1];
    /* the target's request ring position after the newest packet of this
     * WQE (low 32 bits; 0: none queued): its completion ends the peer's
     * watch if that is the peer's watch_pos */
    uint32_t tx_end;
    dcx_sge_t *sge;      /* copy of the sg list */
    uint8_t *inl;        /* inline data */
    soft_mkey_wr_t *mkw; /* DCX_WR_MKEY_*: copy of the request */
} soft_swqe_t;

struct soft_qp {
    dcx_qp_t super;
    soft_dev_t *dev;
    soft_qp_t *next_dci;    /* device's DCI list */
    soft_qp_t *next_active; /* device's list of DCIs with work */
    int active;             /* on that list */
    soft_cq_t *cq;
    /* DCT */
    soft_srq_t *srq;
    uint64_t dc_key;
    uint32_t access;
    uint32_t rnr_delay_us;
    /* DCI */
    soft_swqe_t *sq;
    dcx_sge_t *sge_pool;
    uint8_t *inl_pool;
    uint32_t sq_size; /* WRs the send queue holds (max_send_wr) */
    uint32_t sq_mask; /* slots - 1: a power of two >= sq_size, so
                                 * that soft_wqe() masks (no division) */
    uint32_t sq_head; /* next post */
    uint32_t sq_tail; /* oldest not retired by a polled CQE */
    uint32_t sq_comp; /* oldest not completed */
    uint32_t sq_send; /* next to transmit */
    uint32_t next_msn;
    uint32_t gen;       /* DCI generation (fresh per create) */
    uint32_t rd_atomic; /* READ/atomics in flight */
    uint32_t retries;
    uint32_t rnr_count;
    uint32_t retry_cnt;
    uint32_t rnr_retry;
    uint64_t ack_timeout_ns;
    uint64_t deadline_ns;
    uint64_t rnr_until_ns;
    /* newest request packet queued: the target's request ring position
     * after it, and the target (see soft_req_target_busy) */
    uint64_t tx_pos;
    soft_peer_t *tx_peer;
    /* its entry in the device's ack table (NULL: the device has none),
     * set with its number: the line a light post adds to the wait set */
    const uint64_t *ack_line;
    uint64_t wait_clk;             /* soft_qp_wait_clk (soft_wait.h) */
    uint64_t ack_clk;              /* soft_qp_ack_clk (soft_wait.h) */
    struct soft_stream *stream_of; /* a DCI's stream (soft_stream.c) */
    uint32_t wc_qpn;               /* the QP number its completions carry */
    uint8_t datagram;              /* a datagram DCI (soft_dgram.h) */
    uint32_t wire_qpn; /* the source its packets name (its number) */
    /* its post function once ready: soft_dci_post_send, or a datagram
     * DCI's soft_dgram_post_send */
    int (*post_ready)(dcx_qp_t *qp, const dcx_send_wr_t *wr);
};

/* How the responder places the tag-matching message it is receiving
 * (soft_tm.c); mode 0 when the message is not on a TM SRQ. */
typedef struct soft_tm_msg {
    soft_tm_t *tm;
    uint8_t mode;
    uint8_t wc_opcode; /* SRQ placement: TM_RECV or TM_NO_TAG */
    uint8_t pad[2];
    uint32_t entry; /* matched entry, for its release at poll */
    uint32_t gen;
    uint32_t app_ctx; /* TMH of the message (host order) */
    uint64_t tag;
} soft_tm_msg_t;

/* Responder state per (source port, DCI). */
typedef struct soft_rstate {
    uint32_t used;
    uint32_t pid;
    uint32_t inst;
    uint32_t dci;
    uint32_t e;            /* next expected msn */
    uint32_t atomic_valid; /* bitmap of at_msn/at_res entries */
    uint64_t cur_off;      /* bytes of message e handled */
    uint8_t msg_err;       /* rest of message e is discarded */
    uint8_t have_recv;
    uint8_t at_next; /* next at_* entry to overwrite */
    /* a message of the source was NAKed: its successes are acknowledged
     * by packet (never through the ack table, which would also cover the
     * failed one) until the requester completed hold_msn */
    uint8_t wack_hold;
    /* results of the last SOFT_ATOMIC_SAVED atomics (at most max_rd_atomic
     * are outstanding), returned again to a retransmitted atomic */
    uint32_t at_msn[SOFT_ATOMIC_SAVED];
    uint64_t at_res[SOFT_ATOMIC_SAVED];
    uint32_t msg_status;
    uint32_t gen;      /* DCI generation this state follows */
    uint32_t hold_msn; /* see wack_hold */
    soft_qp_t *dct;    /* owner of the held receive */
    soft_peer_t *peer; /* reply path */
    uint16_t slid;     /* its port's LID (receives report it) */
    soft_rwqe_t recv;  /* receive held for message e */
    soft_tm_msg_t tm;  /* tag matching of message e */
} soft_rstate_t;


/* engine_idle of a device (soft_engine.c) */
enum {
    SOFT_ENGINE_BUSY = 0, /* a poll takes the lock and runs a pass */
    SOFT_ENGINE_IDLE = 1, /* nothing but packets or posts gives work */
    SOFT_ENGINE_WAIT = 2  /* as IDLE, or an ack line moving, or 'due' */
};

#define SOFT_WAIT_LINES 8u /* DCIs a waiting engine can watch */

/* What a waiting engine waits for, published at the end of a pass in
 * which every DCI with work had all its requests out: answers come by the
 * response ring, by the ack table (the lines below, which held 'word' at
 * the end of that pass) or not at all, and then the earliest timer
 * (ack timeout, prod) is due at 'due' (soft_clock_now() units, a little
 * early: the locked pass compares exactly).  'seq' is odd while the set is
 * written (engine lock held): the unlocked reader retries nothing, it
 * takes the lock when it sees a change. */
typedef struct soft_wait_line {
    const uint64_t *line;
    uint64_t word;
} soft_wait_line_t;

typedef struct soft_engine_wait {
    uint32_t seq;
    uint32_t n;
    uint64_t due;
    soft_wait_line_t lines[SOFT_WAIT_LINES];
} soft_engine_wait_t;

typedef struct soft_fault_state {
    dcx_soft_fault_t rule;
    uint32_t seen;
    uint32_t hits;
} soft_fault_state_t;


struct soft_dev {
    dcx_dev_t super;
    soft_lock_t lock;
    dcx_soft_limits_t limits;
    char fabric[40];
    char seg_name[128];
    uint32_t pid;
    uint32_t inst;
    uint32_t uid;
    uint32_t host; /* soft_host_id() */
    uint32_t fabric_hash;
    uint64_t token; /* random part of seg_name */
    soft_port_hdr_t *hdr;
    size_t seg_size;
    /* our ack table in the segment (soft_ack_t), by DCI index; NULL when
     * acknowledgements go by packet only (limits.wack = 0) */
    soft_ack_t *acks;
    soft_peer_t *peers;
    soft_peer_t *self;
    soft_qp_t **qps; /* by qp number - qpn_base */
    uint32_t max_qps;
    /* the number of qps[0]: QPs are numbered qpn_base + index
     * (dcx_soft_dev_set_qpn_base; SOFT_QPN_BASE unless the owner set one) */
    uint32_t qpn_base;
    uint32_t num_dcis;
    soft_qp_t *dcis;
    /* DCIs that had WQEs outstanding at their last look: the only ones
     * whose timers and transmission the engine visits (soft_engine.c) */
    soft_qp_t *active_dcis;
    /* what the last engine pass left (SOFT_ENGINE_*): nothing to do, or
     * DCIs that only wait (soft_engine_wait_t); set to SOFT_ENGINE_BUSY
     * by every post (read unlocked by the poll fast path) */
    int engine_idle;
    /* stamps since the last look at the rings' tails (soft_engine_stamp):
     * a poll reads the head slots, not the producers' tail lines */
    uint32_t tail_stamps;
    soft_engine_wait_t wait;
    /* application engine passes, and the count each CQ saw at its last
     * poll: one pass serves every CQ polled in one progress call */
    uint64_t app_passes;
    soft_tm_t *tms; /* TM SRQs (rendezvous progress) */
    /* device rendezvous of all its TM SRQs started and not ended: only
     * then has soft_tm_progress work, or may a ring pass start work that
     * needs a whole pass (engine lock) */
    uint32_t tm_rndv_live;
    soft_mr_t **mrs; /* by key >> 8 */
    /* memory safety (soft_mem.c): the table is changed under both the
     * engine lock and mr_lock; invalidation takes mr_lock only */
    pthread_mutex_t mr_lock;
    uint64_t mr_lo;    /* registered addresses are within */
    uint64_t mr_hi;    /* [mr_lo, mr_hi) */
    int copying;       /* an engine copy is in flight */
    int copying_plain; /* marked by a plain store (soft_fence_heavy_able) */
    int (*copy_out)(soft_dev_t *dev, void *dst, const void *src, size_t len);
    int (*copy_in)(soft_dev_t *dev, void *dst, const void *src, size_t len);
    /* a remote access's copy that the kernel refused, redone: EFAULT, or
     * with limits.pinned the pinned pages' behaviour (soft_mem.c) */
    int (*lost_out)(soft_dev_t *dev, void *dst, const void *src, size_t len);
    int (*lost_in)(soft_dev_t *dev, void *dst, const void *src, size_t len);
    /* our WRs' sg lists: copy_*, plain once unmaps are reported */
    int (*local_out)(soft_dev_t *dev, void *dst, const void *src, size_t len);
    int (*local_in)(soft_dev_t *dev, void *dst, const void *src, size_t len);
    uint32_t num_mrs;   /* table size */
    uint32_t num_mkeys; /* strided keys in the table */
    /* the batch remote accesses through strided keys fill, under the
     * engine lock; allocated with the first key */
    soft_mem_vec_t *mvec;
    uint32_t mr_gen;
    uint32_t qp_gen;
    uint32_t qp_cursor;
    int num_mr_used;
    int num_pds;
    int num_objs;
    soft_rstate_t *rstate;
    /* the slot of the last source the fast path found (soft_rstate_find):
     * a ping-pong's packets come from one source, whose look then costs
     * no hash and no probe; any slot index is valid (the table's size is
     * fixed), and a slot that no longer holds that source is not taken */
    uint32_t rs_hint;
    /* a table acknowledgement the responder holds back until the end of
     * its pass (soft_resp_ack_flush): the entry and the word; NULL: none;
     * and the requester's port to kick after the store, when one of the
     * messages it acknowledges is signaled (SOFT_PKT_WKICK), else NULL */
    soft_ack_t *ack_line;
    uint64_t ack_word;
    /* receives in place (soft_cq.c): the CQs that take them; while a
     * poll runs its pass, its CQ and max; set by a placement, cleared
     * once a clear found none held */
    soft_cq_t *ip_cqs;
    soft_cq_t *ip_cq;
    uint32_t ip_max;
    int ip_maybe;
    soft_port_hdr_t *ack_kick;
    uint64_t resp_credits;
    dcx_soft_stats_t stats;
    soft_fault_state_t fault;
    int killed;
    /* nonzero while the light post (soft_req_post_inline) may not be
     * taken for a reason that changes rarely: a fault rule is set, or the
     * port was killed (soft_dev_light_update, where those change) */
    int light_off;
    uint64_t now; /* clock of the current engine pass */
    /* soft_dev_now()'s base: a counter reading and its soft_now_ns() */
    uint64_t clk_tick;
    uint64_t clk_ns;
    soft_stall_t req_stall;
    soft_stall_t resp_stall;
    /* initiator-side RDMA WRITE/READ (soft_direct.c): executes w and
     * returns 1, or 0 for the packet path; chosen at open */
    int (*one_sided)(soft_qp_t *qp, soft_swqe_t *w);
    /* 1 if one_sided would take w were its DCI idle (a hint, no copy) */
    int (*one_sided_ready)(soft_qp_t *qp, soft_swqe_t *w);
    /* an RDMA WRITE of one sge without a WQE: 0 if done, 1 if not
     * (dcx_qp_t.post_now; soft_dci_post_now); chosen at open */
    int (*write_now)(soft_qp_t *qp, const dcx_send_wr_t *wr);
    /* a READ's bytes from an unmapped target (MTU; soft_dgrant_read) */
    uint8_t *read_buf;
    struct soft_direct_area *direct; /* our published tables, or NULL */
    uint64_t direct_start;           /* our start time (liveness) */
    int plain_intent;                /* soft_dslot_plain_intent() */
    /* device allocations (soft_alloc.c), under mr_lock */
    struct soft_alloc *allocs;
    uint64_t alloc_serial; /* last serial handed out */
    /* peers' allocations we mapped (soft_dmap.c), under the engine lock,
     * and the clock of their LRU order (soft_dmap_touch) */
    struct soft_dmap *dmap;
    uint64_t dmap_clock;
    /* direct copies by cross-memory attach: the other direct copies are
     * the stats' direct_mapped (counted apart: a copy through a mapping
     * then stores one counter less) */
    uint64_t direct_attached;
    /* helper thread */
    pthread_t helper;
    int helper_started;
    uint64_t stamp;     /* last poll stamp written */
    uint32_t armed_cqs; /* CQs armed, under the lock */
    /* atomic: counted unlocked (futex_wakes: the wakes we made) */
    uint64_t helper_wakeups, helper_naps, helper_passes, futex_wakes;
    /* timed waits, set at the helper's start if 0 (soft_helper.c) */
    uint64_t helper_nap_ns, helper_park_ns;
    volatile int helper_stop;
    /* packets the helper served in a pass that followed a timed wait no
     * doorbell ring ended (a nap's or a park's timeout): they waited for
     * its timer, not for a sender's ring (under the engine lock) */
    uint64_t helper_timer_packets;
    /* the port's wake socket (soft_wake.c), or -1: none */
    int wake_fd;
    uint64_t wake_pokes; /* atomic: sleepers we woke through theirs */
};

/* The first QP number of a device whose owner set none */
#define SOFT_QPN_BASE 0x100u
static inline soft_dev_t *soft_dev(dcx_dev_t *dev)
{
    return (soft_dev_t *)dev;
}

/* The clock of a post (soft_req_post_inline, the general post): the
 * CLOCK_MONOTONIC nanoseconds of soft_now_ns(), derived from the
 * time-stamp counter and a (counter, ns) pair the device took at most
 * 2^SOFT_CLOCK_REBASE_SHIFT ticks ago (soft_clock_rebase), so that a post
 * reads no vDSO clock: a kvm-clock read costs a post more than the rest of
 * its bookkeeping.  It is off by the calibration's error over that span,
 * well under a microsecond, against timers of tens of microseconds and
 * more.  Without an invariant counter it is soft_now_ns().  Engine lock
 * held (the pair is the device's). */
#define SOFT_CLOCK_REBASE_SHIFT 22 /* ~1.6 ms at 2.6 GHz */

uint64_t soft_clock_rebase(soft_dev_t *dev); /* soft_clock.c */

/* The clock of a post, and in *clk_p the soft_clock_now() reading it came
 * from (or one taken just before): the light post derives the time of its
 * wait (soft_clock_after_at) from the same counter read */
static inline uint64_t soft_dev_now_clk(soft_dev_t *dev, uint64_t *clk_p)
{
#if defined(__x86_64__)
    uint32_t lo, hi;
    uint64_t d, tsc;

    if (soft_clock_kind == SOFT_CLOCK_TSC) {
        __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
        tsc    = ((uint64_t)hi << 32) | lo;
        *clk_p = tsc;
        d      = tsc - dev->clk_tick;
        if (!(d >> SOFT_CLOCK_REBASE_SHIFT)) {
            return dev->clk_ns + ((d * soft_clock_mult) >> 32);
        }
        return soft_clock_rebase(dev);
    }
#endif
    *clk_p = soft_now_ns();
    return *clk_p;
}

/* The clock of a post alone (the reading is not kept) */
static inline uint64_t soft_dev_now(soft_dev_t *dev)
{
    uint64_t clk;

    return soft_dev_now_clk(dev, &clk);
}

/* Engine lock held: where a clear of the request ring stops: the head,
 * or the oldest slot a receive in place still reads (soft_cq.c) */
uint64_t soft_ip_clear_end(soft_dev_t *dev, uint64_t end);
static inline __attribute__((always_inline)) uint64_t
soft_req_clear_end(soft_dev_t *dev)
{
    uint64_t end = dev->hdr->req.head;

    return dev->ip_maybe ? soft_ip_clear_end(dev, end) : end;
}

/* Engine lock held: clears the consumed request slots (soft_ring_clear) */
static inline unsigned soft_req_clear(soft_dev_t *dev)
{
    return soft_ring_clear(dev->hdr, &dev->hdr->req, soft_req_clear_end(dev));
}

/* Opcode properties (indexed by dcx_wr_opcode_t) */
enum {
    SOFT_OPF_VALID   = 1u << 0,
    SOFT_OPF_PAYLOAD = 1u << 1, /* request carries local data */
    SOFT_OPF_RECV    = 1u << 2, /* consumes a receive at the target */
    SOFT_OPF_IMM     = 1u << 3,
    SOFT_OPF_RDMA    = 1u << 4, /* remote address + rkey */
    SOFT_OPF_READ    = 1u << 5,
    SOFT_OPF_ATOMIC  = 1u << 6,
    SOFT_OPF_MKEY    = 1u << 7 /* DCX_WR_MKEY_*: executed locally */
};

/* soft_opinfo is indexed by every opcode, the DCX_WR_MKEY_* range too */
#define SOFT_OPCODE_MAX DCX_WR_MKEY_LAST

typedef struct soft_opinfo {
    const char *name;
    uint8_t flags;     /* SOFT_OPF_* */
    uint8_t wc_opcode; /* requester completion opcode */
    uint8_t access;    /* DCX_ACCESS_REMOTE_* needed at the target */
} soft_opinfo_t;

extern const soft_opinfo_t soft_opinfo[SOFT_OPCODE_MAX];

static inline const soft_opinfo_t *soft_op(unsigned op)
{
    if ((op >= DCX_WR_OPCODE_LAST) ||
        !(soft_opinfo[op].flags & SOFT_OPF_VALID)) {
        return NULL;
    }
    return &soft_opinfo[op];
}

/* Copies between a buffer and an sg list from its byte 'off': 0 or EFAULT */
int soft_sge_gather(soft_dev_t *dev, void *buf, const dcx_sge_t *sge,
                    unsigned num_sge, uint64_t off, uint64_t len);
int soft_sge_scatter(soft_dev_t *dev, const void *buf, const dcx_sge_t *sge,
                     unsigned num_sge, uint64_t off, uint64_t len);


/* After a full barrier between a sender's publish and this read of
 * 'sleeping': 1 if the port's helper must be woken for the packet, as it
 * sleeps deep, or naps while its application is not polling
 * (soft_port_kick_seen) */
static inline int soft_port_kick_due(const soft_port_hdr_t *hdr)
{
    uint32_t state = __atomic_load_n(&hdr->sleeping, __ATOMIC_RELAXED);

    return (state != SOFT_HELPER_PARKED) &&
           ((state == SOFT_HELPER_DEEP) ||
            soft_port_idle_at(hdr, soft_clock_now()));
}

/* The same with the poll age taken at 'clk', a soft_clock_now() reading
 * the sender took after its publish (the light post's own, from
 * soft_dev_now_clk: no second counter read; a stamp later than it is a
 * poll after the publish, which needs no wake).  The light post tests it
 * inline and calls soft_port_wake_once only to wake. */
static inline int soft_port_kick_due_at(const soft_port_hdr_t *hdr,
                                        uint64_t clk)
{
    uint32_t state = __atomic_load_n(&hdr->sleeping, __ATOMIC_RELAXED);

    return (state != SOFT_HELPER_PARKED) &&
           ((state == SOFT_HELPER_DEEP) || soft_port_idle_at(hdr, clk));
}

/* soft_fabric.c */
uint64_t soft_proc_start_time(uint32_t pid);
int soft_pid_alive(uint32_t pid, uint64_t start);
uint32_t soft_fabric_hash(const char *fabric);
uint32_t soft_host_id(void);
int soft_addr_check(soft_dev_t *dev, const void *addr, size_t len,
                    soft_addr_t *out, char *why, size_t why_len);
int soft_port_create(soft_dev_t *dev);
void soft_port_destroy(soft_dev_t *dev);
void soft_fabric_sweep(uint32_t uid);
soft_peer_t *soft_peer_get(soft_dev_t *dev, uint32_t pid, uint32_t inst,
                           uint64_t token);
soft_port_hdr_t *soft_peer_map(soft_dev_t *dev, soft_peer_t *peer);
int soft_peer_dead(soft_dev_t *dev, soft_peer_t *peer);
int soft_peers_any_dead(void *dev); /* a soft_dev_t: 1 if a peer died */
void soft_peers_free(soft_dev_t *dev);
uint32_t soft_pkt_csum(const soft_pkt_t *pkt);
int soft_port_kick(soft_port_hdr_t *hdr);
int soft_port_kick_sleeping(soft_port_hdr_t *hdr);
int soft_port_kick_seen(soft_port_hdr_t *hdr);
int soft_port_wake_once(soft_port_hdr_t *hdr);
int soft_port_kick_sleeping_seen(soft_port_hdr_t *hdr);
void soft_port_ring(soft_port_hdr_t *hdr);
int soft_futex_wait(uint32_t *addr, uint32_t val, uint64_t timeout_ns);

/* The table entry of key (MR or strided key), or NULL: none (soft_key_entry),
 * or its memory unmapped too (soft_key_find: soft_key_lookup, inline) */
static inline soft_mr_t *soft_key_entry(soft_dev_t *dev, uint32_t key)
{
    soft_mr_t *mr = ((key >> 8) < dev->num_mrs) ? dev->mrs[key >> 8] : NULL;

    return ((mr != NULL) && (mr->super.lkey == key)) ? mr : NULL;
}

static inline soft_mr_t *soft_key_find(soft_dev_t *dev, uint32_t key)
{
    soft_mr_t *mr = soft_key_entry(dev, key);

    return ((mr != NULL) && !__atomic_load_n(&mr->invalid, __ATOMIC_RELAXED)) ?
               mr :
               NULL;
}

/* soft_backend.c: what a listed soft device carries to its open
 * (dcx_dev_info_t.priv), and the checks both make */
typedef struct soft_dev_info {
    char fabric[40];
    dcx_soft_limits_t limits; /* merged with the defaults */
} soft_dev_info_t;

int soft_fabric_name_ok(const char *name);
int soft_limits_ok(const dcx_soft_limits_t *l, const char *who);
void soft_limits_merge(dcx_soft_limits_t *out, const dcx_soft_limits_t *in);

/* The device (soft_dev.c) and its objects: soft_pd.c, soft_mr.c (with the
 * key table), soft_srq.c, soft_ah.c */
int soft_dev_open(const dcx_dev_info_t *info, dcx_dev_t **dev_p);
int soft_pd_alloc(dcx_dev_t *dev, dcx_pd_t **pd_p);
int soft_pd_free(dcx_pd_t *pd);
int soft_mr_reg(dcx_pd_t *pd, void *addr, size_t length, uint32_t access,
                dcx_mr_t **mr_p);
int soft_mr_dereg(dcx_mr_t *mr);
soft_mr_t *soft_mr_lookup(soft_dev_t *dev, uint32_t key);
soft_mr_t *soft_key_lookup(soft_dev_t *dev, uint32_t key);
int soft_key_insert(soft_dev_t *dev, soft_mr_t *mr, const char *what);
void soft_key_remove(soft_dev_t *dev, soft_mr_t *mr);
int soft_srq_create(dcx_pd_t *pd, const dcx_srq_attr_t *attr,
                    dcx_srq_t **srq_p);
int soft_srq_destroy(dcx_srq_t *srq);
int soft_addr_check_op(dcx_dev_t *dev, const void *addr, size_t len, char *why,
                       size_t why_len);
int soft_ah_create(dcx_pd_t *pd, const void *addr, size_t len, dcx_ah_t **ah_p);
int soft_ah_destroy(dcx_ah_t *ah);

/* soft_cq.c */
int soft_cq_create(dcx_dev_t *dev, uint32_t cqe, dcx_cq_t **cq_p);
int soft_cq_destroy(dcx_cq_t *cq);
int soft_cq_push(soft_cq_t *cq, const dcx_wc_t *wc, soft_qp_t *qp,
                 uint32_t sq_idx);
void soft_cq_overrun(soft_cq_t *cq, uint32_t qp_num);

/* The entry the next completion of cq is written into, in place (engine
 * lock held), or NULL when the CQ is full (the caller then reports
 * soft_cq_overrun()); soft_cq_commit() queues it. */
static inline soft_cqe_t *soft_cq_slot(soft_cq_t *cq)
{
    if (cq->tail - cq->head >= cq->super.cqe) {
        return NULL;
    }
    return &cq->q[cq->tail & (cq->size - 1)];
}

/* The receive completion of a one-packet SEND (or SEND_IMM) taken by the
 * responder's one-pass path into wr_id, written into cqe: every field the
 * transport reads, the rest zero; the caller sets the TM fields. */
static inline void soft_cqe_fast_recv(soft_cqe_t *cqe, uint8_t opcode,
                                      uint64_t wr_id, uint32_t qp_num,
                                      const soft_pkt_t *pkt, uint16_t slid)
{
    int imm = (pkt->op == DCX_WR_SEND_IMM);

    cqe->wc.wr_id      = wr_id;
    cqe->wc.status     = DCX_WC_SUCCESS;
    cqe->wc.opcode     = opcode;
    cqe->wc.flags      = imm ? DCX_WC_FLAG_WITH_IMM : 0;
    cqe->wc.byte_len   = pkt->len;
    cqe->wc.imm        = imm ? pkt->imm : 0;
    cqe->wc.qp_num     = qp_num;
    cqe->wc.src_qp     = pkt->src_qpn;
    cqe->wc.vendor_err = 0;
    cqe->wc.tm_tag     = 0;
    cqe->wc.tm_priv    = 0;
    cqe->wc.slid       = slid;
    cqe->wc.reserved   = 0;
    cqe->qp            = NULL;
    cqe->sq_idx        = 0;
}

/* soft_channel.c */
void soft_cq_fire(soft_cq_t *cq);

/* The completion of WQE w of qp, with status and byte_len, into *wc */
static inline void soft_wqe_wc(const soft_qp_t *qp, const soft_swqe_t *w,
                               uint8_t status, uint32_t byte_len, dcx_wc_t *wc)
{
    memset(wc, 0, sizeof(*wc));
    wc->wr_id    = w->wr.wr_id;
    wc->status   = status;
    wc->opcode   = soft_opinfo[w->wr.opcode].wc_opcode;
    wc->byte_len = byte_len;
    wc->qp_num   = qp->wc_qpn;
    if ((status == DCX_WC_SUCCESS) &&
        (soft_opinfo[w->wr.opcode].flags & SOFT_OPF_IMM)) {
        wc->flags = DCX_WC_FLAG_WITH_IMM;
        wc->imm   = w->wr.imm;
    }
}

static inline void soft_cq_commit(soft_cq_t *cq)
{
    /* release: the unlocked look of soft_engine_poll_idle() */
    __atomic_store_n(&cq->tail, cq->tail + 1, __ATOMIC_RELEASE);
    if (cq->armed) {
        soft_cq_fire(cq);
    }
}

/* soft_channel.c: soft_channel.h */
/* soft_engine.c */
uint64_t soft_engine_progress(soft_dev_t *dev, int from_helper);
int soft_engine_busy(soft_dev_t *dev);
int soft_engine_rings_pending(soft_dev_t *dev);
void soft_engine_app_sleeps(soft_dev_t *dev);
void soft_engine_poll_pass(soft_dev_t *dev, soft_cq_t *cq, soft_cq_t *other,
                           int look, uint64_t clk);
void soft_engine_activate(soft_qp_t *qp);
void soft_dev_light_update(soft_dev_t *dev); /* soft_fault.c */
void soft_engine_deactivate(soft_qp_t *qp);
void soft_dev_progress(dcx_dev_t *dev);

#include "soft_poll.h" /* the polls' unlocked looks: after the above */

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

/* Requester helpers shared by soft_req.c and soft_qp.c */
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

/* soft_req.c */
void soft_wqe_release(soft_qp_t *qp, soft_swqe_t *w);
int soft_wqe_push_cqe(soft_qp_t *qp, soft_swqe_t *w, uint32_t idx,
                      uint8_t status, uint32_t byte_len);

/* soft_qp.c */
void soft_qp_flush_mode(soft_qp_t *qp);
int soft_qp_create(dcx_pd_t *pd, const dcx_qp_attr_t *attr, dcx_qp_t **qp_p);
int soft_qp_destroy(dcx_qp_t *qp);
int soft_qp_set_error(dcx_qp_t *qp);
int soft_qp_recover(dcx_qp_t *qp);
void soft_req_run(soft_qp_t *qp, uint64_t now);
void soft_req_timers(soft_dev_t *dev, uint64_t now);
void soft_comp_packet(soft_dev_t *dev, const soft_pkt_t *pkt,
                      const void *payload);
void soft_qp_retire(soft_qp_t *qp, uint32_t sq_idx);
void soft_qp_to_error(soft_qp_t *qp, const char *reason);
void soft_qp_reset(soft_qp_t *qp);
void soft_req_acked(soft_qp_t *qp, uint64_t now);
void soft_req_key_gone(soft_dev_t *dev, uint32_t lkey);
void soft_req_prod(soft_dev_t *dev, soft_peer_t *peer, uint64_t now);
int soft_req_post_direct(soft_qp_t *qp, const dcx_send_wr_t *wr,
                         soft_peer_t *peer, uint64_t total);
/* A WRITE or READ just queued by the general post (w, at sq_head - 1) on
 * a DCI in RTS that had nothing else outstanding, without a fault rule or
 * an RNR wait: its local sges checked, then the initiator's copy, and
 * completed at once when that took it (0); 1 when it goes the general
 * way (soft_req_run), nothing done but the check. */
int soft_req_run_direct(soft_qp_t *qp, soft_swqe_t *w);
int soft_qp_post_locked(soft_qp_t *qp, const dcx_send_wr_t *wr);

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

/* soft_resp.c */
void soft_resp_packet(soft_dev_t *dev, const soft_pkt_t *pkt, const void *p);
void soft_resp_forget_dct(soft_dev_t *dev, soft_qp_t *dct);
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

/* soft_mem.c */
void soft_mem_init(soft_dev_t *dev);
int soft_mem_local_begin(soft_dev_t *dev, const dcx_sge_t *sge, unsigned n);
void soft_mem_local_end(soft_dev_t *dev);
int soft_mem_copy_plain(soft_dev_t *dev, void *dst, const void *src, size_t n);
void soft_mem_unmaps_reported(dcx_dev_t *dev);
int soft_mem_write(soft_dev_t *dev, soft_mr_t *mr, uint64_t addr,
                   const void *src, size_t len);
int soft_mem_read(soft_dev_t *dev, soft_mr_t *mr, void *dst, uint64_t addr,
                  size_t len);
int soft_mem_vec_write(soft_dev_t *dev, soft_mem_vec_t *v, const void *src);
int soft_mem_vec_read(soft_dev_t *dev, soft_mem_vec_t *v, void *dst);
int soft_mem_atomic(soft_dev_t *dev, soft_mr_t *mr, uint64_t addr,
                    unsigned size, uint64_t (*exec)(const soft_pkt_t *),
                    const soft_pkt_t *pkt, uint64_t *result_p);
void soft_mem_unmapped(dcx_dev_t *dev, const void *addr, size_t len);

/* soft_mkey.c: strided keys */
int soft_mkey_create(dcx_pd_t *pd, uint32_t max_entries, dcx_mkey_t **mkey_p);
int soft_mkey_destroy(dcx_mkey_t *mkey);
int soft_mkey_post_check(soft_qp_t *qp, const dcx_send_wr_t *wr);
void soft_mkey_wr_copy(soft_qp_t *qp, soft_swqe_t *w, const dcx_send_wr_t *wr);
uint8_t soft_mkey_wr_exec(soft_qp_t *qp, soft_swqe_t *w);
void soft_mkey_wr_free(soft_swqe_t *w);
int soft_sge_ok(soft_dev_t *dev, const dcx_sge_t *sge, uint32_t access,
                const dcx_pd_t *pd);
int soft_mkey_check(soft_dev_t *dev, soft_mr_t *key, uint64_t off, uint64_t len,
                    uint32_t access);
int soft_mkey_local_copy(soft_dev_t *dev, soft_mr_t *key, uint64_t off,
                         void *buf, uint64_t len, int to_key);
int soft_key_write(soft_dev_t *dev, soft_mr_t *mr, uint64_t addr,
                   const void *src, size_t len);
int soft_key_read(soft_dev_t *dev, soft_mr_t *mr, void *dst, uint64_t addr,
                  size_t len);
int soft_key_atomic(soft_dev_t *dev, soft_mr_t *mr, const soft_pkt_t *pkt,
                    uint64_t (*exec)(const soft_pkt_t *), uint64_t *result_p);

/* soft_helper.c */
int soft_helper_start(soft_dev_t *dev);
void soft_helper_stop(soft_dev_t *dev);
void soft_helper_wake_if_sleeping(soft_dev_t *dev);

/* soft_wake.c */
void soft_wake_open(soft_dev_t *dev);
void soft_wake_close(soft_dev_t *dev);
void soft_wake_arm(soft_dev_t *dev);
void soft_wake_taken(soft_dev_t *dev);
int soft_wake_poke(soft_dev_t *dev, soft_port_hdr_t *hdr);
int soft_wake_sleeper(soft_dev_t *dev, soft_port_hdr_t *hdr, int recv);
int soft_wake_kick(soft_dev_t *dev, soft_port_hdr_t *hdr, int recv);

/* After a full barrier between a sender's publish and this read: 1 if the
 * port's application (not ours) may sleep on a completion channel: the
 * packet wakes it or its helper (soft_wake_sleeper), whatever the helper's
 * state */
static inline int soft_wake_sleeps(const soft_dev_t *dev,
                                   const soft_port_hdr_t *hdr)
{
    return (__atomic_load_n(&hdr->app_wait, __ATOMIC_RELAXED) !=
            SOFT_WAKE_NONE) &&
           (hdr != dev->hdr);
}

/* soft_fault.c */
enum {
    SOFT_TX_PASS,
    SOFT_TX_DROP,
    SOFT_TX_DELAY,
    SOFT_TX_CORRUPT
};
int soft_fault_tx(soft_dev_t *dev, int opcode, uint64_t *delay_ns);
int soft_fault_post(soft_dev_t *dev, int opcode, uint8_t *status);

#endif
