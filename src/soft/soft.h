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
#include "soft_objs.h"
#include "soft_dev.h"
#include "soft_poll.h"

#include <pthread.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <sys/uio.h>


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
