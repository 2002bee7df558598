/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: raw queues.  After mlx5dv_init_obj an application
 * writes WQEs into send and receive queue memory, rings doorbells through
 * the doorbell records and the UAR page, and polls CQEs from CQ memory,
 * as on a ConnectX; the emulation's device engine (emu_raw.c) executes
 * what it finds there on the soft device and writes the CQEs.
 *
 * Who does what:
 *  - emu_raw.c: the engine thread, the UAR pages and their doorbell trap,
 *    and the objects it serves;
 *  - emu_raw_store.c: the store instructions of a doorbell, decoded;
 *  - emu_raw_sq.c: send WQEs, parsed and posted to the soft QP;
 *  - emu_raw_rq.c: receive WQEs of SRQs and receive queues, taken into
 *    the soft SRQ;
 *  - emu_raw_cq.c: soft completions written as CQEs, and CQ arming;
 *  - emu_xrq.c: an XRQ's slots, which its completions let go;
 *  - emu_raw_tm.c: an XRQ's tag list as software sees it, the command
 *    QP's list operations on it;
 *  - emu_dv_obj.c: mlx5dv_init_obj and the DEVX attach, which lay the
 *    memory out;
 *  - emu_raw_free.c: the memory given back.
 * Every object's raw state is touched by the engine thread only, under
 * emu_raw_lock, but for what the application writes (queue memory,
 * doorbell records) and reads (CQ memory).
 */
#ifndef DCX_EMU_RAW_H_
#define DCX_EMU_RAW_H_

#include "emu/emu.h"
#include "emu/emu_raw_store.h"

#define EMU_RAW_PAGE     4096u
#define EMU_RAW_BF_OFF   0x800u /* first BlueFlame register of a UAR page */
#define EMU_RAW_BF_SIZE  256u   /* each of its two halves */
#define EMU_RAW_CQ_SETCI 0      /* CQ doorbell record: consumer index */
#define EMU_RAW_CQ_ARM   1      /* CQ doorbell record: arm word */

/* A send queue in application memory (an RC, UD or DC QP's) */
struct emu_raw_sq {
    uint8_t *buf;
    bool ext;                /* buf and dbrec are the application's (DEVX) */
    uint32_t wqe_cnt;        /* basic blocks (64 bytes), a power of 2 */
    volatile __be32 *dbrec;  /* [MLX5_RCV_DBR], [MLX5_SND_DBR] */
    uint16_t ci;             /* next WQE the device takes */
    uint8_t *uar;            /* its context's UAR page */
    struct emu_raw_sq *next; /* emu_raw's list */
    struct emu_raw_sq *next_cmd; /* a command QP: its device's (cmd_lock) */
    struct emu_qp *qp;
    /* the engine's pass over it (emu_raw_sq_run), set by its maker */
    unsigned (*run)(struct emu_qp *qp);
    struct ibv_ah *last_ah; /* DC, UD: the AH of the latest WQE's */
    uint16_t last_lid;      /* its LID */
    uint32_t last_dctn;     /* a NOP goes where the WQE before went */
    uint64_t last_key;
    bool has_dest;
    struct ibv_ah *ahs[64]; /* AHs made for LIDs, by LID % 64 */
    uint16_t ah_lids[64];
    /* inline data of WQEs that also have data segments, copied to a slot
     * of registered memory per basic block (made at the first) */
    uint8_t *scratch;
    dcx_mr_t *scratch_mr;
    /* the result buffers of 4-byte masked atomics by WQE index (made at
     * the first): their fetched value is written in network order, as a
     * ConnectX writes a 4-byte result (its host-order mode is for 8-byte
     * operands only), when the soft device completes the WR */
    uint64_t *be4;
    /* a signalled WQE posted and its CQE not written yet: the engine
     * keeps looking (the soft device completes it when polled) */
    bool waiting;
    uint16_t wait_idx;
    /* WQEs announced that the soft send queue had no room for: the engine
     * keeps looking (room comes back with acknowledgements, which need
     * not raise a completion) */
    bool blocked;
};

/* A receive queue in application memory: an SRQ's (linked WQEs), or an
 * RC or UD QP's own (WQEs in order) */
struct emu_raw_rq {
    uint8_t *buf;
    uint32_t wqe_cnt; /* a power of 2 */
    uint32_t stride;  /* bytes per WQE */
    uint32_t max_sge;
    uint32_t hdr;           /* bytes before the data segments (SRQ: 16) */
    bool linked;            /* next_wqe_index chains the WQEs */
    bool ext;               /* buf and dbrec are the application's (DEVX) */
    volatile __be32 *dbrec; /* [0]: the application's WQE counter */
    uint16_t taken;         /* WQEs the device took (its counter) */
    uint16_t head;          /* an SRQ: the next WQE to take */
    uint64_t *grh;          /* a UD QP's: first buffer of each WQE */
    /* an SRQ's, per WQE: where its first EMU_SCAT_MAX bytes go and what
     * they held when the device took it (emu_raw_rq_scatter) */
    struct emu_raw_keep *keep;
    struct emu_raw_rq *next;
    struct emu_srq *srq; /* the soft SRQ it feeds */
    /* the engine's pass over it (emu_raw_rq_run), set by its maker */
    unsigned (*run)(struct emu_raw_rq *rq);
};

/* The most bytes a responder scatters into a CQE: the first half of a
 * 128-byte one (a DCT's cs_res "up to 64 bytes") */
#define EMU_SCAT_MAX      64u
#define EMU_RAW_KEEP_SGES 4u

/* A receive WQE's first EMU_SCAT_MAX bytes of buffer (over at most
 * EMU_RAW_KEEP_SGES of its entries; 'bytes' of them, fewer when the
 * buffers are shorter or more entries would be needed) and what they held
 * when the device took the WQE */
struct emu_raw_keep {
    uint64_t addr[EMU_RAW_KEEP_SGES];
    uint32_t len[EMU_RAW_KEEP_SGES];
    uint32_t n;
    uint32_t bytes;
    uint8_t data[EMU_SCAT_MAX];
};

/* A CQ in application memory */
struct emu_raw_cq {
    uint8_t *buf;
    uint32_t cqe_cnt;       /* a power of 2 */
    uint32_t cqe_size;      /* 64 or 128: the CQE is its last 64 bytes */
    volatile __be32 *dbrec; /* [0]: consumer index, [1]: arm word */
    uint32_t pi;            /* CQEs written */
    uint32_t arm_seen;      /* the arm word acted on */
    bool app_armed;         /* an event is owed at the next CQE */
    uint32_t arm_ci;
    uint8_t *uar;
    struct emu_raw_cq *next;
    struct emu_cq *cq;
    /* the engine's pass over it and the application's arm of it
     * (ibv_req_notify_cq), set by emu_raw_cq_init */
    unsigned (*run)(struct emu_cq *cq);
    int (*arm)(struct emu_cq *cq);
};

/* An XRQ with tag matching: the hardware's view of its list, over the
 * soft SRQ's (emu_xrq.c, emu_raw_tm.c).  Software names list entries by slot: an
 * APPEND fills the slot the list's free head is at and names the next
 * head; the slot's entry lives on as a soft entry (its handle) until its
 * last completion is written or a REMOVE takes it. */
typedef struct emu_xrq {
    struct emu_srq *srq;
    struct emu_cq *cq; /* its completions', list operations' included */
    uint32_t nslots;   /* 2^log_matching_list_sz */
    uint32_t head;     /* the slot the next APPEND fills */
    uint32_t *handle;  /* soft entry by slot; EMU_XRQ_FREE: none */
    uint16_t *gen;     /* by slot: APPENDs into it, mod 2^16 */
    uint16_t hw_cnt;   /* unexpected messages delivered (the phase) */
    bool dc;           /* created for DC */
} emu_xrq_t;

#define EMU_XRQ_FREE 0xffffffffu

/* The wr_id of what the emulation posts to an XRQ's soft SRQ: the XRQ's
 * number in [55:32] (a raw SRQ's receives carry it too: emu_raw_rq.c),
 * and for a list entry or operation its slot in [15:0], the slot's
 * generation in [31:16] and: */
#define EMU_XRQ_WR_ENTRY  (1ull << 56) /* the receive of a list entry */
#define EMU_XRQ_WR_OP     (1ull << 57) /* a list operation */
#define EMU_XRQ_WR_CQE    (1ull << 58) /* ... whose WQE asked for a CQE */
#define EMU_XRQ_WR_REMOVE (1ull << 59) /* a REMOVE of an empty slot */

/* emu_raw.c */
/* fork(): the engine lock held across it; the child has no engine (it
 * starts its own at its first raw object) and none of the parent's
 * queues (emu_dev.c installs these) */
void emu_raw_fork_prepare(void);
void emu_raw_fork_parent(void);
void emu_raw_fork_child(void);
extern pthread_mutex_t emu_raw_lock;
/* The UAR page of ctx, write-protected: a store to it is a doorbell */
uint8_t *emu_raw_uar(emu_ctx_t *ctx);
/* ibv_close_device: the page goes back, for another context */
void emu_raw_uar_put(emu_ctx_t *ctx);
/* The engine serves these from now on (emu_raw_lock held); the engine is
 * started at the first */
int emu_raw_add_sq(emu_qp_t *qp);
int emu_raw_add_rq(emu_srq_t *srq);
int emu_raw_add_cq(emu_cq_t *cq);
void emu_raw_del_sq(emu_qp_t *qp);
void emu_raw_del_rq(emu_srq_t *srq);
void emu_raw_del_cq(emu_cq_t *cq);
/* The engine's wake-up fd (an eventfd), for soft SRQ watches */
int emu_raw_wake_fd(void);
/* Wakes the engine for a look at everything */
void emu_raw_kick(void);
/* The device's soft device closes: the engine's channel on it goes */
void emu_raw_dev_close(emu_dev_t *dev);

/* The layout of the queues' memory (libmlx5's, emu_dv_obj.c): sizes in
 * powers of 2 and whole pages, a receive queue's stride. */
static inline uint32_t emu_dv_pow2(uint32_t v)
{
    uint32_t p = 1;

    while (p < v) {
        p <<= 1;
    }
    return p;
}

static inline size_t emu_dv_page(size_t len)
{
    return (len + EMU_RAW_PAGE - 1) & ~(size_t)(EMU_RAW_PAGE - 1);
}

/* A receive queue's stride: a power of 2, 16 bytes a scatter entry after
 * the next segment of a linked (SRQ) queue, 16 at least */
static inline uint32_t emu_dv_rq_stride(uint32_t max_sge, bool linked)
{
    uint32_t stride = emu_dv_pow2((linked ? 16 : 0) + 16 * max_sge);

    return (stride < 16) ? 16 : stride;
}

/* The bytes of queues mlx5dv_init_obj will give out for a QP (sized:
 * emu_qp_size, and its own receive queue), a CQ of cqe entries (of either
 * CQE size) or an SRQ, to place them at creation (emu_qbuf.h) */
static inline size_t emu_dv_qp_bytes(const emu_qp_t *qp)
{
    size_t len = emu_dv_page((size_t)qp->sq_wqe_cnt * MLX5_SEND_WQE_BB);

    if ((qp->rq != NULL) && (qp->rq_max_wr > 0)) {
        len += emu_dv_page((size_t)emu_dv_pow2(qp->rq_max_wr) *
                           emu_dv_rq_stride(qp->rq->max_sge, false));
    }
    return len;
}

static inline size_t emu_dv_cq_bytes(uint32_t cqe)
{
    /* 128-byte CQEs, the larger: mlx5dv_create_cq sets the size after */
    return emu_dv_page((size_t)emu_dv_pow2(cqe + 1) * 128);
}

static inline size_t emu_dv_srq_bytes(const emu_srq_t *srq)
{
    return emu_dv_page((size_t)emu_dv_pow2(srq->max_wr + 1) *
                       emu_dv_rq_stride(srq->max_sge, true));
}

/* emu_raw_free.c: the memory of a QP, CQ or SRQ given back, the engine no
 * longer serving it (emu_raw_lock held) */
void emu_raw_qp_free(emu_qp_t *qp);
void emu_raw_cq_free(emu_cq_t *cq);
void emu_raw_srq_free(emu_srq_t *srq);

/* emu_dv_obj.c: a DEVX QP's send queue: wqe_cnt basic blocks at buf, rung through
 * dbrec, both the application's; the engine serves it from now on */
int emu_raw_qp_attach(emu_qp_t *qp, uint8_t *buf, uint32_t wqe_cnt,
                      volatile __be32 *dbrec);
/* A DEVX RMP's receive queue: wqe_cnt WQEs of stride bytes at buf (a next
 * segment, then data segments), linked or in ring order, its counter in
 * dbrec, both the application's; the engine serves it from now on */
int emu_raw_srq_attach(emu_srq_t *srq, uint8_t *buf, uint32_t wqe_cnt,
                       uint32_t stride, bool linked, volatile __be32 *dbrec);

/* emu_raw_sq.c: new WQEs of qp's send queue to the soft QP; how many */
unsigned emu_raw_sq_run(emu_qp_t *qp);
/* A WQE whose doorbell was rung is the HCA's, which has taken it long
 * before a modify or destroy command reaches it: the engine takes what
 * the doorbell record announces now (a QP in RTS), before such a command
 * acts (takes emu_raw_lock) */
void emu_raw_sq_take_rung(emu_qp_t *qp);
/* after a move to RESET: the queue starts over */
void emu_raw_sq_reset(emu_qp_t *qp);
/* The wr_id of a soft WR posted for a WQE: the WQE index in [15:0], its
 * opcode in [23:16], and these */
#define EMU_RAW_WR_BE4    (1ull << 32) /* 4-byte masked atomic (be4[]) */
#define EMU_RAW_WR_SILENT (1ull << 33) /* signalled for be4 alone: no CQE */

/* emu_xrq.c */
/* srq's tag list of nslots slots, its completions on cq; ENOMEM */
int emu_xrq_init(struct emu_srq *srq, struct emu_cq *cq, uint32_t nslots,
                 bool dc);
/* The XRQ goes (emu_raw_lock held) */
void emu_xrq_free(struct emu_srq *srq);
/* The XRQ of a tag-matching completion, by its wr_id; NULL if none */
emu_xrq_t *emu_xrq_of(emu_dev_t *dev, uint64_t wr_id);
/* A completion of the entry in wr_id's slot was written; the last one
 * (its data placed, or the receive failed) lets the slot go */
void emu_xrq_entry_done(emu_xrq_t *xrq, uint64_t wr_id, bool last);

/* emu_raw_tm.c: a list-operation WQE (opcode 0x28) of qp's send queue: its tag-matching
 * segment and, with an APPEND, its data segment (NULL: none).  0 when
 * done, EAGAIN when the soft list has no room yet (taken again later),
 * EINVAL when the device does not take it (logged) */
int emu_xrq_list_op(emu_qp_t *qp, const struct mlx5_wqe_tm_seg *seg,
                    const struct mlx5_wqe_data_seg *data);

/* emu_raw_rq.c: new receive WQEs into the soft SRQ; how many */
unsigned emu_raw_rq_run(struct emu_raw_rq *rq);
/* A SEND of len bytes that the soft device put in the buffers of the WQE
 * idx of rq (an SRQ's), scattered into the CQE instead: its bytes copied
 * to dst and the buffers given back what they held, as the HCA leaves
 * them; false (nothing done) when rq kept fewer than len of its bytes */
bool emu_raw_rq_scatter(struct emu_raw_rq *rq, uint16_t idx, uint32_t len,
                        uint8_t *dst);

/* emu_raw_cq.c: soft completions of cq written as CQEs; how many */
unsigned emu_raw_cq_run(emu_cq_t *cq);
/* A CQE for a send WQE that completes without going to the soft device
 * (a NOP with nothing before it) */
void emu_raw_cq_req(emu_cq_t *cq, uint32_t qpn, uint16_t wqe_counter,
                    uint8_t opcode);
/* A new raw CQ: its doorbell record at consumer index 0, no arm; the
 * engine's pass and the arm of ibv_req_notify_cq set to those below */
void emu_raw_cq_init(struct emu_raw_cq *rc);
/* ibv_req_notify_cq on a raw CQ, an arm of its engine's */
int emu_raw_cq_arm(emu_cq_t *cq);

/* emu_ud.c: a raw UD WQE's GRH in front of its data (sge[1..] and inl+40
 * hold the data; sge[0] and inl[0..39] are for the GRH); false for one
 * longer than the MTU */
bool emu_ud_raw_grh(emu_qp_t *qp, dcx_send_wr_t *wr, dcx_sge_t *sge,
                    uint8_t *inl, uint16_t idx);
/* What a raw UD receive's first 40 bytes say (receive WQE idx) */
void emu_ud_raw_recv(emu_qp_t *qp, uint16_t idx, emu_wc_ext_t *ext);

#endif /* DCX_EMU_RAW_H_ */
