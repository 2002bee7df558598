/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device tag matching: state shared by soft_tm.c (the tag list, its
 * operations and the matching of inbound messages) and soft_tm_rndv.c (the
 * device rendezvous).
 */
#ifndef DCX_SOFT_TM_H_
#define DCX_SOFT_TM_H_

#include "soft_dev.h"
#include "soft_cq.h"

#include <string.h>

#define SOFT_TM_NONE      UINT32_MAX
#define SOFT_TM_DCIS      4u /* device rendezvous in flight at once */
#define SOFT_TM_SYNC_DIFF 0x3fffu
#define SOFT_TM_DCI_WR    4u

/* How the responder places the message (soft_tm_msg_t.mode) */
enum {
    SOFT_TMM_NONE,
    SOFT_TMM_EXPECTED, /* matched eager: payload into the entry */
    SOFT_TMM_SRQ,      /* into the held SRQ buffer, headers included */
    SOFT_TMM_DISCARD   /* matched but does not fit: LOC_LEN_ERR done */
};

/* Hardware state of a list entry */
enum {
    SOFT_TME_FREE,
    SOFT_TME_LISTED,
    SOFT_TME_CONSUMED,
    SOFT_TME_REMOVED
};

/* soft_cqe_t.tm_flags: what polling the completion retires */
enum {
    SOFT_TMC_RELEASE  = 1u << 0, /* one expected completion of the entry */
    SOFT_TMC_RELEASE2 = 1u << 1, /* and another (DEL removed the entry) */
    SOFT_TMC_OP       = 1u << 2, /* list operations up to tm_op */
    SOFT_TMC_UNEXP    = 1u << 3  /* an unexpected message (sync count) */
};

typedef struct soft_tm_entry {
    uint64_t tag;
    uint64_t mask;
    uint64_t recv_wr_id;
    dcx_sge_t sge;
    uint32_t num_sge;
    uint32_t gen;        /* bumped by every ADD of this handle */
    uint32_t next_free;  /* library free list */
    uint32_t prev, next; /* hardware list, ADD order */
    uint16_t expect_cqe; /* library: completions still expected */
    uint16_t phase_cnt;  /* library: count given with the ADD */
    uint8_t state;       /* SOFT_TME_* */
    uint8_t eligible;    /* hardware: may match (phase) */
    uint8_t pad[2];
} soft_tm_entry_t;

/* One device rendezvous: READ from the sender, then FIN to it. */
typedef struct soft_tm_rndv {
    uint64_t recv_wr_id;
    dcx_sge_t sge; /* entry buffer, trimmed to len */
    uint32_t entry, gen;
    uint32_t dct_qpn; /* receiving DCT, for the completion */
    uint32_t src_qp;
    soft_peer_t *peer; /* sender's port */
    uint32_t dctn;     /* sender's DCT (RAVH) */
    uint32_t rkey;
    uint64_t dc_key;
    uint64_t va;
    uint32_t len;
    uint32_t next;               /* wait queue / free list */
    uint8_t tmh[DCX_TM_TMH_LEN]; /* copied into the FIN */
} soft_tm_rndv_t;

/* Sender of a rendezvous request reported TM_RNDV_INCOMPLETE, until
 * software asked (dcx_srq_tm_rndv_src) */
typedef struct soft_tm_inc {
    uint64_t wr_id;
    soft_peer_t *peer; /* NULL: slot free */
} soft_tm_inc_t;

typedef struct soft_tm_dci {
    soft_qp_t *qp;
    soft_ah_t ah;
    uint32_t rndv; /* in flight on it, or SOFT_TM_NONE */
} soft_tm_dci_t;

struct soft_tm {
    soft_srq_t *srq;
    soft_dev_t *dev;
    soft_tm_t *next; /* device's TM SRQs */
    soft_tm_entry_t *e;
    uint32_t max_tags;
    uint32_t free_head, free_tail;
    uint32_t list_head, list_tail;
    uint32_t held; /* listed entries not eligible */
    /* operation queue */
    uint32_t max_ops;
    uint32_t op_posted;
    uint32_t op_retired;
    /* phase: hardware U and S, library unexp_in / unexp_out */
    uint16_t hw_unexp;
    uint16_t hw_sw_cnt;
    uint16_t lib_unexp_out;
    uint16_t pad;
    uint32_t lib_unexp_in;
    /* rendezvous */
    dcx_pd_t *pd;
    dcx_cq_t *rcq; /* completions of the DCIs below */
    soft_tm_dci_t dci[SOFT_TM_DCIS];
    soft_tm_rndv_t *rndv; /* max_tags + 1 */
    uint32_t rndv_free;
    uint32_t rndv_live; /* started, not ended (dev's sum) */
    uint32_t wait_head, wait_tail;
    soft_tm_inc_t *inc; /* max_tags, ring */
    uint32_t inc_pos;
    dcx_soft_tm_stats_t stats;
};

static inline const char *soft_tm_name(soft_tm_t *tm)
{
    return tm->dev->super.caps.name;
}

static inline void soft_tm_recv_wc(dcx_wc_t *wc, uint64_t wr_id, uint8_t status,
                                   uint8_t opcode, uint16_t flags,
                                   uint32_t byte_len, uint32_t qp_num,
                                   uint32_t src_qp)
{
    memset(wc, 0, sizeof(*wc));
    wc->wr_id    = wr_id;
    wc->status   = status;
    wc->opcode   = opcode;
    wc->flags    = flags;
    wc->byte_len = byte_len;
    wc->qp_num   = qp_num;
    wc->src_qp   = src_qp;
}

/* Library side: an unexpected message's completion was polled; it asks
 * for a SYNC when software's count is more than SOFT_TM_SYNC_DIFF behind */
static inline void soft_tm_polled_unexp(soft_tm_t *tm, dcx_wc_t *wc)
{
    tm->lib_unexp_in++;
    if ((uint16_t)(tm->lib_unexp_in - tm->lib_unexp_out) > SOFT_TM_SYNC_DIFF) {
        wc->flags |= DCX_WC_FLAG_TM_SYNC_REQ;
    }
}

/* Hardware: the oldest listed entry eligible to take a message with tag,
 * or SOFT_TM_NONE (nothing is changed) */
static inline uint32_t soft_tm_find(const soft_tm_t *tm, uint64_t tag)
{
    uint32_t idx;

    for (idx = tm->list_head; idx != SOFT_TM_NONE; idx = tm->e[idx].next) {
        const soft_tm_entry_t *e = &tm->e[idx];

        if (e->eligible && ((tag & e->mask) == e->tag)) {
            return idx;
        }
    }
    return SOFT_TM_NONE;
}

/* The responder's one-pass path (soft_resp_fast) on a TM SRQ: which SRQ
 * completion a whole message in one packet gets without the general path,
 * or 0 when the general path must see it.  That is a NO_TAG message (an
 * active message: never matched), or an EAGER one that no listed entry
 * takes (none is listed, or none listed is eligible with a matching tag:
 * the entries posted while unexpected messages were still unpolled are
 * held, so a stream that outruns its receiver meets a list of held ones):
 * both go to the SRQ buffer, headers included, exactly as soft_tm_start
 * places them.  FINs, rendezvous requests, eager messages that match and
 * malformed messages take the general path. */
static inline uint8_t soft_tm_fast_opcode(const soft_tm_t *tm,
                                          const soft_pkt_t *pkt,
                                          const void *payload)
{
    uint32_t app_ctx;
    uint64_t tag;
    uint8_t opcode;

    if (pkt->len < DCX_TM_TMH_LEN) {
        return 0;
    }
    opcode = *(const uint8_t *)payload; /* dcx_tmh_t.opcode: first */
    if (opcode == DCX_TMH_NO_TAG) {
        return DCX_WC_TM_NO_TAG;
    }
    if (opcode != DCX_TMH_EAGER) {
        return 0;
    }
    if (tm->list_head == SOFT_TM_NONE) {
        return DCX_WC_TM_RECV;
    }
    dcx_tmh_unpack(payload, &opcode, &app_ctx, &tag);
    return (soft_tm_find(tm, tag) == SOFT_TM_NONE) ? DCX_WC_TM_RECV : 0;
}

/* A message soft_tm_fast_opcode() let through, taken by the responder's
 * fast path: counted as soft_tm_last counts it (an unexpected eager in the
 * phase, U and the library's count); returns what polling its completion
 * retires (cqe->tm, with tm_flags SOFT_TMC_UNEXP): tm for an unexpected
 * eager, NULL for a NO_TAG message */
static inline soft_tm_t *soft_tm_fast_count(soft_tm_t *tm, uint8_t wc_opcode)
{
    tm->stats.fast++;
    if (wc_opcode != DCX_WC_TM_RECV) {
        return NULL;
    }
    tm->hw_unexp++;
    tm->stats.unexp_eager++;
    return tm;
}

/* The completion of a message soft_tm_fast_opcode() let through, placed in
 * the SRQ buffer wr_id; slid: the sender port's LID, as every receive
 * completion reports it */
static inline void soft_tm_fast_wc(soft_srq_t *srq, soft_qp_t *dct,
                                   const soft_pkt_t *pkt, uint8_t wc_opcode,
                                   uint64_t wr_id, uint16_t slid)
{
    soft_cq_t *cq     = srq->cq;
    soft_cqe_t *cqe   = soft_cq_slot(cq);
    soft_tm_t *retire = soft_tm_fast_count(srq->tm, wc_opcode);

    if (cqe == NULL) {
        soft_cq_overrun(cq, dct->super.qp_num); /* as soft_tm_push */
        return;
    }
    soft_cqe_fast_recv(cqe, wc_opcode, wr_id, dct->super.qp_num, pkt, slid);
    /* tm_entry, tm_gen and tm_op are read only under the flags that name
     * them (soft_tm_polled_rest), tm_flags only when tm is set */
    cqe->tm       = retire;
    cqe->tm_flags = SOFT_TMC_UNEXP;
    soft_cq_commit(cq);
}

/* The next CQE of the SRQ's CQ, for a completion whose polling retires
 * what 'flags' say: its TM fields set, the caller writes its wc in place
 * (stores only: a wc built elsewhere and copied in is read back behind
 * the stores of the data just placed) and commits it.  NULL when the CQ
 * is full (soft_cq_overrun logs it; the completion is lost). */
static inline soft_cqe_t *soft_tm_cqe(soft_tm_t *tm, uint32_t qp_num,
                                      uint32_t entry, uint32_t gen, uint32_t op,
                                      uint8_t flags)
{
    soft_cq_t *cq   = tm->srq->cq;
    soft_cqe_t *cqe = soft_cq_slot(cq);

    if (cqe == NULL) {
        soft_cq_overrun(cq, qp_num);
        return NULL;
    }
    cqe->qp       = NULL;
    cqe->sq_idx   = 0;
    cqe->tm       = (flags != 0) ? tm : NULL;
    cqe->tm_entry = entry;
    cqe->tm_gen   = gen;
    cqe->tm_op    = op;
    cqe->tm_flags = flags;
    return cqe;
}

/* Pushes the completion wc on the SRQ's CQ (soft_tm_cqe).  Inline, below
 * both the matching (soft_tm.c) and the rendezvous (soft_tm_rndv.c) that
 * complete through it. */
static inline void soft_tm_push(soft_tm_t *tm, const dcx_wc_t *wc,
                                uint32_t entry, uint32_t gen, uint32_t op,
                                uint8_t flags)
{
    soft_cqe_t *cqe = soft_tm_cqe(tm, wc->qp_num, entry, gen, op, flags);

    if (cqe != NULL) {
        cqe->wc = *wc;
        soft_cq_commit(tm->srq->cq);
    }
}

/* soft_tm_rndv.c */
int soft_tm_rndv_init(soft_tm_t *tm);
void soft_tm_rndv_cleanup(soft_tm_t *tm);
void soft_tm_rndv_start(soft_tm_t *tm, soft_qp_t *dct, soft_rstate_t *rs,
                        const uint8_t *req, uint32_t len, uint64_t va,
                        uint32_t rkey);

#endif
