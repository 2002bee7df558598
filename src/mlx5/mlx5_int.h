/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: objects shared by the backend's files.
 *
 * Each object embeds its dcx_dev.h counterpart first, so the device layer
 * hands back the same pointer it was given.
 */
#ifndef DCX_MLX5_INT_H_
#define DCX_MLX5_INT_H_

#include "dcx_dev.h"
#include "mlx5/mlx5_pure.h"

#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>

#include <stdbool.h>
#include <stdint.h>

typedef struct dcx_mlx5_cq dcx_mlx5_cq_t;
typedef struct dcx_mlx5_qp dcx_mlx5_qp_t;
typedef struct dcx_mlx5_channel dcx_mlx5_channel_t;
typedef struct dcx_mlx5_srq dcx_mlx5_srq_t;
typedef struct dcx_mlx5_xrq dcx_mlx5_xrq_t;

typedef struct dcx_mlx5_dev {
    dcx_dev_t super;
    struct ibv_context *ctx;
    /* DEVX context granted: needed later for mlx5dv_create_mkey (strided
     * keys, docs/device-semantics.md section 10.1) and DEVX DC/TM objects
     * (section 9.9). */
    bool devx;
    /* The open-time atomic self-test runs: a DCT refusing REMOTE_ATOMIC
     * (EOPNOTSUPP) is an answer, not an error, and is logged at debug. */
    bool selftest;
    uint8_t port;
    uint8_t link_layer; /* IBV_LINK_LAYER_* */
    enum ibv_mtu path_mtu;
    int gid_index;         /* RoCE: published GID, else -1 */
    bool grh_required;     /* port reports IBV_QPF_GRH_REQUIRED */
    bool mtu_warned;       /* a peer with a smaller MTU seen */
    bool roce_warned;      /* a peer of the other RoCE version */
    dcx_mlx5_addr_t addr;  /* this port's published address */
    uint64_t dci_send_ops; /* IBV_QP_EX_WITH_* every DCI gets */
    /* Strided keys (mlx5_mkey.c): UMR work requests travel on QPs of type
     * DCX_QPT_UMR, RC QPs looped back to this port (libmlx5 installs the
     * UMR builders on RC QPs only), sized for caps.mkey_max_entries. */
    uint32_t umr_max_wr;    /* deepest UMR send queue */
    uint32_t umr_access_ok; /* DCX_ACCESS_* a key may grant */
    const char *umr_why;    /* why there are none, or NULL */
    /* Raw queues (knob MLX5_RAW, mlx5_raw_cq.c): DCIs write their WQEs
     * into their send queues, CQs are polled and SRQs posted in memory */
    bool raw;
    /* Tag matching offered where the device has it (knob MLX5_TM) */
    bool tm_on;
    /* CQs get 128-byte CQEs, so that a DCT scatters a SEND of up to 64
     * bytes into the first half of one (knob MLX5_RECV_IN_PLACE, raw
     * queues; dropped when the self-test at open sees no scatter) */
    bool cqe128;
    /* 4-byte masked atomics fetch their value in network order (the
     * self-test found it; the host-order mode is for 8-byte operands):
     * each completion turns it to host order (mlx5_raw_sq.c) */
    bool atomic4_be;
} dcx_mlx5_dev_t;

typedef struct dcx_mlx5_mkey {
    dcx_mkey_t super;
    struct mlx5dv_mkey *mkey;
} dcx_mlx5_mkey_t;

typedef struct dcx_mlx5_pd {
    dcx_pd_t super;
    struct ibv_pd *pd;
} dcx_mlx5_pd_t;

typedef struct dcx_mlx5_mr {
    dcx_mr_t super;
    struct ibv_mr *mr;
} dcx_mlx5_mr_t;

typedef struct dcx_mlx5_ah {
    dcx_ah_t super;
    struct ibv_ah *ah;
    struct mlx5_wqe_av av; /* raw queues: the address vector a WQE carries */
} dcx_mlx5_ah_t;

/* An SRQ whose WQEs the backend writes (mlx5_raw_srq.c): a linked list in
 * the SRQ's memory, as libmlx5 keeps it */
typedef struct dcx_mlx5_raw_srq {
    uint8_t *buf;
    uint32_t stride;
    uint32_t wqe_cnt;
    volatile __be32 *dbrec;
    uint16_t head;    /* the next WQE to post into */
    uint16_t tail;    /* the list's end, never posted */
    uint16_t counter; /* WQEs posted (the doorbell record) */
    uint64_t *wr_id;  /* per WQE index */
    /* DCX_SRQ_F_IN_PLACE: a message scattered into its CQE completes
     * there (DCX_WC_FLAG_IN_PLACE), not copied to the buffer */
    bool in_place;
} dcx_mlx5_raw_srq_t;

struct dcx_mlx5_srq {
    dcx_srq_t super;
    struct ibv_srq *srq; /* NULL: a tag-matching XRQ */
    dcx_mlx5_cq_t *cq;
    dcx_mlx5_raw_srq_t *raw; /* NULL: posted through libmlx5 */
    dcx_mlx5_cq_t *raw_cq;   /* the CQ its receives were given to */
    /* DCX_SRQ_TM: the XRQ, its tag list and command QP (mlx5_xrq.c) */
    dcx_mlx5_xrq_t *xrq;
    /* DCX_SRQ_TM: a CQE of its tag list (app 1, a list operation's, or
     * the command QP's error) read by the CQ: 1 with *wc filled */
    int (*tm_cqe)(dcx_mlx5_srq_t *srq, const struct mlx5_cqe64 *cqe,
                  dcx_wc_t *wc);
};

/* Receives in place one poll of a raw CQ returns at most; past them, a
 * poll copies scattered messages into their buffers */
#define DCX_MLX5_IP_MAX 64

/* A CQ the backend polls in memory (mlx5_raw_cq.c) */
typedef struct dcx_mlx5_raw_cq {
    uint8_t *buf64;         /* the buffer + CQE size - 64: a CQE's 64 bytes */
    uint32_t cqe_mask;      /* CQEs - 1 (a power of 2, less one) */
    uint32_t cqe_shift;     /* log2 of the CQE size */
    uint32_t cnt_shift;     /* log2 of the CQEs: the owner bit of an index */
    volatile __be32 *dbrec; /* [0] consumer index, [1] arm word */
    void *uar;              /* the CQ doorbell's page */
    uint32_t cqn;
    uint32_t ci;
    /* The cursor: the last 8 bytes of the CQE at ci (op_own the last) and
     * their owner bit's value when the CQE is software's.  A look at the
     * consumer index reads just these (the poller's state, as ci is), and
     * so does dcx_cq_idle, whose mask is 0 while flushed DCIs wait on the
     * CQ (their completions are not in its memory). */
    dcx_cq_look_t look;
    uint32_t arm_sn;     /* events collected, 2 bits */
    dcx_mlx5_srq_t *srq; /* the raw SRQ whose receives complete here */
    bool multi_srq;      /* more than one: found through the DCT */
    /* the tag-matching SRQ whose list operations complete here (one) */
    dcx_mlx5_srq_t *tm_srq;
    /* Receives in place the last poll returned (mlx5_raw_cq.c): ip_ci[k]
     * is the index of the k-th, ip_ci[ip_n] the consumer index after the
     * poll.  The doorbell record says ip_ci[ip_n - ip_left], so the HCA
     * writes no slot the caller still reads */
    uint32_t ip_n;
    uint32_t ip_left; /* not released yet: the last ip_left of them */
    uint32_t ip_ci[DCX_MLX5_IP_MAX + 1];
} dcx_mlx5_raw_cq_t;

/* How a CQ is polled: decided by the first queue that uses it */
enum {
    DCX_MLX5_CQ_OPEN,  /* no queue yet */
    DCX_MLX5_CQ_VERBS, /* through libmlx5 (a UMR QP, or raw queues off) */
    DCX_MLX5_CQ_RAW    /* in memory */
};

/* A DCI whose WQEs the backend writes (mlx5_raw_sq.c) */
typedef struct dcx_mlx5_raw_sq {
    uint8_t *buf;
    uint32_t bb_cnt; /* basic blocks, a power of 2 */
    uint32_t max_bb; /* the most one WQE may take */
    volatile __be32 *dbrec;
    uint8_t *bf;      /* BlueFlame register */
    uint32_t bf_size; /* its two halves' size */
    uint32_t bf_off;
    uint16_t pi;          /* next basic block */
    uint16_t stream_mask; /* 0xffff: a DCI with streams, else 0 */
    uint64_t *seq; /* per basic block: the WR sequence of the WQE there */
    /* dev->atomic4_be: per basic block, the result buffer of the masked
     * atomic there if 4-byte (else 0), for its completion; else NULL */
    uint64_t *be4;
} dcx_mlx5_raw_sq_t;

struct dcx_mlx5_cq {
    dcx_cq_t super;
    struct ibv_cq_ex *cq;
    /* DCIs in ERR whose outstanding WRs still have to be reported as
     * flushed on this CQ (linked through dcx_mlx5_qp.flush_next). */
    dcx_mlx5_qp_t *flush_head;
    /* QPs using this CQ: DCIs (requester completions) and DCTs (receive
     * completions).  A CQ with no DCI routes every completion to the
     * receive path without looking up its QP number. */
    unsigned num_dci;
    unsigned num_dct;
    /* Completions carry only a QP number: this finds the dcx QP, among the
     * QPs of this CQ only (a DCI or UMR QP in its send CQ's map, a DCT in
     * its receive CQ's), so that interfaces of one device polling and
     * creating QPs in different threads share nothing here. */
    dcx_mlx5_qpmap_t qpmap;
    /* First sequence number of the next QP of this CQ: each numbers its WRs
     * in its own 2^40 range, so a stale completion of a destroyed DCI whose
     * QP number was reused falls outside the new DCI's outstanding range. */
    uint64_t next_seq_base;
    uint32_t mode;          /* DCX_MLX5_CQ_* */
    dcx_mlx5_raw_cq_t *raw; /* DCX_MLX5_CQ_RAW */
    /* libmlx5's poll, installed when the CQ is taken that way */
    int (*verbs_poll)(dcx_cq_t *cq, int max, dcx_wc_t *wc);
    int (*verbs_poll_pair)(dcx_cq_t *cq, dcx_cq_t *other, int max, dcx_wc_t *wc,
                           int *n_other_p);
    /* wake-up events (mlx5_channel.c) */
    dcx_mlx5_channel_t *channel; /* NULL: created without one */
    dcx_mlx5_cq_t *ch_next;      /* the channel's CQs */
    unsigned own_events;         /* fired by arms over flush reports */
};

/* A completion channel: the context's, and an eventfd for the events the
 * backend raises itself; the dcx fd is an epoll set over both */
struct dcx_mlx5_channel {
    dcx_comp_channel_t super;
    struct ibv_comp_channel *ch;
    int efd;
    dcx_mlx5_cq_t *cqs; /* CQs on the channel */
    unsigned own;       /* own events not collected, all CQs */
};

struct dcx_mlx5_qp {
    dcx_qp_t super;
    struct ibv_qp *qp;
    struct ibv_qp_ex *qpx;     /* DCI, UMR */
    struct mlx5dv_qp_ex *dvqp; /* DCI, UMR */
    dcx_mlx5_cq_t *send_cq;    /* DCI, UMR */
    dcx_mlx5_cq_t *recv_cq;    /* DCT */
    dcx_qp_attr_t attr;        /* as created (for recovery) */
    dcx_mlx5_ring_t ring;      /* DCI, UMR: outstanding WRs */
    /* a DCI with streams: a ring per stream (its WRs complete in their
     * order, independently of the other streams'), stream i's sequences
     * from stream_base + (i << 32) on; which streams are in error, how
     * many, and how many the DCI takes before it goes to ERR itself
     * (2^log_num_errored) */
    dcx_mlx5_ring_t *stream_rings;
    uint64_t stream_base;
    uint8_t *stream_err;
    uint32_t streams_errored;
    uint32_t streams_err_max;
    dcx_mlx5_raw_sq_t *raw; /* a DCI on a raw CQ */
    /* a DCT on a tag-matching SRQ, made through DEVX (mlx5_xrq.c) */
    struct mlx5dv_devx_obj *devx_dct;
    /* UMR: a configure's translation table, built here at post */
    struct mlx5dv_mr_interleaved *umr_il;
    struct ibv_sge *umr_sge;
    /* Flush reporting while in ERR */
    bool flush_listed;
    dcx_mlx5_qp_t *flush_next;
};

static inline dcx_mlx5_dev_t *dcx_mlx5_dev(dcx_dev_t *dev)
{
    return (dcx_mlx5_dev_t *)dev;
}

/* Defaults of a DCI whose dcx_qp_attr_t.timeout is 0 (mlx5_qp.c) */
#define DCX_QP_DEFAULT_TIMEOUT   18 /* 4.096us * 2^18 = 1.07 s */
#define DCX_QP_DEFAULT_RETRY_CNT 7
#define DCX_QP_DEFAULT_RNR_RETRY 7

/* mlx5_backend.c: the backend's registration */
extern const dcx_backend_t dcx_mlx5_backend;

/* mlx5_dev.c */
extern const dcx_dev_ops_t dcx_mlx5_dev_ops;
/* raw: the devices' queues are written and read in memory (MLX5_RAW);
 * tm: tag matching where the device has it (MLX5_TM) */
int dcx_mlx5_list(dcx_dev_info_t *out, unsigned max, unsigned *count_p,
                  bool raw, bool tm, bool ip);
int dcx_mlx5_open(const dcx_dev_info_t *info, dcx_dev_t **dev_p);

/* mlx5_hca.c: QUERY_HCA_CAP of the current capabilities of a type into
 * out (DCX_MLX5_HCA_CAP_OUT_LEN bytes); the errno, logged at debug */
int dcx_mlx5_hca_query(dcx_mlx5_dev_t *dev, unsigned type, void *out);

/* mlx5_atomic_probe.c: the masked atomics (DCX_ATOMIC_MASKED_*) the
 * device's capabilities offer on DC; 0 without DEVX */
uint32_t dcx_mlx5_atomic_masked_caps(dcx_mlx5_dev_t *dev);
/* The atomics of caps.atomic_flags tried on the device's own DCT: the
 * flags of those that work, in host order or (4-byte masked, which sets
 * dev->atomic4_be) in network order; what fails is logged and dropped */
uint32_t dcx_mlx5_atomic_selftest(dcx_mlx5_dev_t *dev);

/* mlx5_ip_probe.c: with dev->cqe128, whether a short SEND to the device's
 * own DCT completes in place: DCX_CAP_RECV_IN_PLACE, or (logged at debug)
 * neither it nor dev->cqe128 */
void dcx_mlx5_ip_probe(dcx_mlx5_dev_t *dev);

/* mlx5_srq.c */
int dcx_mlx5_srq_create(dcx_pd_t *pd, const dcx_srq_attr_t *attr,
                        dcx_srq_t **srq_p);
int dcx_mlx5_srq_destroy(dcx_srq_t *srq);

/* mlx5_xrq.c: the tag-matching SRQ (DCX_SRQ_TM) of srq, whose dev, pd,
 * cq (polled in memory) and max_sge are set, on a device with
 * DCX_CAP_TM; 0, or an errno (logged) with nothing left */
int dcx_mlx5_xrq_create(dcx_mlx5_srq_t *srq, const dcx_srq_attr_t *attr);
int dcx_mlx5_xrq_destroy(dcx_mlx5_srq_t *srq);
/* The DCT qp (its attr and recv_cq set) on a tag-matching SRQ, through
 * DEVX: qp->devx_dct and its number; 0 or an errno (logged) */
int dcx_mlx5_xrq_dct_create(dcx_mlx5_qp_t *qp, dcx_mlx5_pd_t *pd);
/* 0, or the errno (the caller logs) */
int dcx_mlx5_xrq_dct_destroy(dcx_mlx5_qp_t *qp);

/* mlx5_ah.c */
int dcx_mlx5_addr_check(dcx_dev_t *dev, const void *addr, size_t len, char *why,
                        size_t why_len);
int dcx_mlx5_ah_create(dcx_pd_t *pd, const void *addr, size_t len,
                       dcx_ah_t **ah_p);
int dcx_mlx5_ah_destroy(dcx_ah_t *ah);

/* mlx5_mr.c */
int dcx_mlx5_pd_alloc(dcx_dev_t *dev, dcx_pd_t **pd_p);
int dcx_mlx5_pd_free(dcx_pd_t *pd);
int dcx_mlx5_mr_reg(dcx_pd_t *pd, void *addr, size_t length, uint32_t access,
                    dcx_mr_t **mr_p);
int dcx_mlx5_mr_dereg(dcx_mr_t *mr);

/* mlx5_mkey.c */
int dcx_mlx5_mkey_create(dcx_pd_t *pd, uint32_t max_entries,
                         dcx_mkey_t **mkey_p);
int dcx_mlx5_mkey_destroy(dcx_mkey_t *mkey);
/* Open time: learns whether the device has strided keys and adds them to
 * dev->super.caps (or sets dev->umr_why). */
void dcx_mlx5_umr_probe(dcx_mlx5_dev_t *dev,
                        const struct ibv_device_attr_ex *dattr);
/* Creates the RC QP of a DCX_QPT_UMR dcx QP and takes it to RTS; its CQ is
 * polled through libmlx5 (dcx_mlx5_qp_create settled that). */
int dcx_mlx5_umr_qp_create(dcx_mlx5_qp_t *qp, dcx_mlx5_pd_t *pd);
/* RESET -> INIT -> RTR -> RTS, connected to itself (creation, recovery). */
int dcx_mlx5_umr_qp_connect(dcx_mlx5_qp_t *qp);
void dcx_mlx5_umr_qp_cleanup(dcx_mlx5_qp_t *qp);

/* mlx5_raw_cq.c: raw queues.  dcx_mlx5_cq_use() settles how a CQ is
 * polled when a queue first uses it: 0, or EINVAL (logged) when the CQ is
 * already polled the other way. */
int dcx_mlx5_cq_use(dcx_mlx5_cq_t *cq, bool raw, const char *what);
/* A new CQ: polled in memory or through libmlx5 as its first queue says
 * when the device's raw queues are on, else through libmlx5 */
void dcx_mlx5_cq_open_init(dcx_mlx5_cq_t *cq, bool raw);
void dcx_mlx5_raw_cq_free(dcx_mlx5_cq_t *cq);
/* dcx_cq_release of a CQ of a device with DCX_CAP_RECV_IN_PLACE */
void dcx_mlx5_raw_cq_release(dcx_cq_t *cq);
/* Removes the CQEs of QP qpn not polled yet (a QP moved to RESET) */
void dcx_mlx5_raw_cq_clean(dcx_mlx5_cq_t *cq, uint32_t qpn);
/* the CQ's look (dcx_cq_idle) after its list of flushed DCIs changed */
void dcx_mlx5_raw_look_sync(dcx_mlx5_cq_t *cq);
/* Arms the CQ for its next completion (raw CQs' doorbell) */
void dcx_mlx5_raw_cq_arm(dcx_mlx5_cq_t *cq);
/* An event of the CQ was collected: the next arm's sequence */
void dcx_mlx5_raw_cq_event(dcx_mlx5_cq_t *cq);

/* mlx5_raw_sq.c */
/* Takes the DCI's send queue (its CQ is raw); 0 or an errno, logged */
int dcx_mlx5_raw_sq_init(dcx_mlx5_qp_t *qp);
void dcx_mlx5_raw_sq_free(dcx_mlx5_qp_t *qp);
/* After a reset: the queue starts again at its first block */
void dcx_mlx5_raw_sq_reset(dcx_mlx5_qp_t *qp);
/* The DCI's post_send in RTS */
int dcx_mlx5_raw_dci_post_send(dcx_qp_t *super, const dcx_send_wr_t *wr);
/* A masked atomic's successful CQE on a queue with be4: a 4-byte one's
 * fetched value turned to host order */
void dcx_mlx5_raw_sq_be4_done(dcx_mlx5_qp_t *qp, uint16_t wqe_counter);
/* A CQE's WQE counter: the sequence of the WR there */
static inline uint64_t dcx_mlx5_raw_sq_seq(const dcx_mlx5_qp_t *qp,
                                           uint16_t wqe_counter)
{
    return qp->raw->seq[wqe_counter & (qp->raw->bb_cnt - 1)];
}

/* mlx5_raw_srq.c */
/* Takes the WQEs of the SRQ libmlx5 made (mlx5dv_init_obj) */
int dcx_mlx5_raw_srq_init(dcx_mlx5_srq_t *srq);
/* Takes cnt WQEs of stride bytes at buf, a new linked list (head 0, tail
 * cnt - 1), counted in dbrec: post_recv and post_recv_list write them */
int dcx_mlx5_raw_srq_setup(dcx_mlx5_srq_t *srq, void *buf, uint32_t stride,
                           uint32_t cnt, uint32_t head, uint32_t tail,
                           volatile __be32 *dbrec);
void dcx_mlx5_raw_srq_free(dcx_mlx5_srq_t *srq);
/* WQE idx of a raw SRQ */
static inline void *dcx_mlx5_raw_srq_wqe(const dcx_mlx5_raw_srq_t *rs,
                                         uint16_t idx)
{
    return rs->buf + (size_t)idx * rs->stride;
}

/* The first buffer of WQE idx (a receive's CQE scatter is copied there),
 * read back from its first data segment: the HCA only reads receive WQEs,
 * and software writes a completed one again only when it posts it anew,
 * after the poll that completed it */
static inline void *dcx_mlx5_raw_srq_first(const dcx_mlx5_raw_srq_t *rs,
                                           uint16_t idx)
{
    const struct mlx5_wqe_srq_next_seg *next = dcx_mlx5_raw_srq_wqe(rs, idx);
    const struct mlx5_wqe_data_seg *ds =
        (const struct mlx5_wqe_data_seg *)(next + 1);

    return (void *)(uintptr_t)be64toh(ds->addr);
}

/* The receive of WQE idx completed: its wr_id; the WQE is free again, at
 * the list's end (inline: every receive completion calls it) */
static inline uint64_t dcx_mlx5_raw_srq_done(dcx_mlx5_raw_srq_t *rs,
                                             uint16_t idx)
{
    struct mlx5_wqe_srq_next_seg *tail;

    idx &= (uint16_t)(rs->wqe_cnt - 1);
    tail                 = dcx_mlx5_raw_srq_wqe(rs, rs->tail);
    tail->next_wqe_index = htobe16(idx);
    rs->tail             = idx;
    return rs->wr_id[idx];
}

/* mlx5_channel.c */
/* Open time: true when the context gives completion channels */
bool dcx_mlx5_channel_probe(dcx_mlx5_dev_t *dev);
int dcx_mlx5_channel_create(dcx_dev_t *dev, dcx_comp_channel_t **ch_p);
int dcx_mlx5_channel_destroy(dcx_comp_channel_t *ch);
int dcx_mlx5_cq_create_ch(dcx_dev_t *dev, uint32_t cqe, dcx_comp_channel_t *ch,
                          dcx_cq_t **cq_p);
int dcx_mlx5_cq_req_notify(dcx_cq_t *cq);
int dcx_mlx5_channel_get_event(dcx_comp_channel_t *ch, dcx_cq_t **cq_p);
/* The CQ leaves its channel (destruction), its own events with it */
void dcx_mlx5_channel_detach(dcx_mlx5_cq_t *cq);

/* mlx5_cq.c */
int dcx_mlx5_cq_create(dcx_dev_t *dev, uint32_t cqe, dcx_cq_t **cq_p);
/* The CQ on an ibv completion channel (NULL: none); its cq_context is the
 * backend's CQ */
int dcx_mlx5_cq_create_on(dcx_dev_t *dev, uint32_t cqe,
                          struct ibv_comp_channel *channel,
                          dcx_mlx5_cq_t **cq_p);
int dcx_mlx5_cq_destroy(dcx_cq_t *cq);
/* What a DCI's completion says, however it was read */
typedef struct dcx_mlx5_cqe {
    uint64_t seq; /* the WR's sequence */
    enum ibv_wc_status status;
    uint32_t byte_len;
    uint32_t vendor_err;
} dcx_mlx5_cqe_t;

/* mlx5_qp.c */
int dcx_mlx5_qp_create(dcx_pd_t *pd, const dcx_qp_attr_t *attr,
                       dcx_qp_t **qp_p);
int dcx_mlx5_qp_destroy(dcx_qp_t *qp);
/* After creation: gives qp its WR ring, enters it in the device's QP map
 * and connects it; 0, or an errno with all of that undone and one error
 * line naming the QP as 'what'. */
int dcx_mlx5_qp_start(dcx_mlx5_dev_t *dev, dcx_mlx5_qp_t *qp, const char *what,
                      uint32_t max_wr, int (*connect)(dcx_mlx5_qp_t *qp));
int dcx_mlx5_qp_stream_reset(dcx_qp_t *qp, uint16_t stream_id);
/* Called by the CQ when it polls an error completion (not a flush) of a
 * stream of this DCI: the stream is in error, and the DCI too once
 * streams_err_max of them are. */
void dcx_mlx5_dci_stream_failed(dcx_mlx5_qp_t *qp, uint16_t stream);
/* The ring of a completion's WR: the QP's, or its stream's (NULL: a
 * sequence of no stream of the DCI) */
dcx_mlx5_ring_t *dcx_mlx5_qp_ring_of(dcx_mlx5_qp_t *qp, uint64_t seq,
                                     uint16_t *stream_p);
/* A DCI in ERR: its oldest outstanding WR as flushed into *wc (0: none
 * left); and how many are outstanding */
int dcx_mlx5_qp_flush_one(dcx_mlx5_qp_t *qp, dcx_wc_t *wc);
uint32_t dcx_mlx5_qp_outstanding(const dcx_mlx5_qp_t *qp);
int dcx_mlx5_qp_set_error(dcx_qp_t *qp);
int dcx_mlx5_qp_recover(dcx_qp_t *qp);
/* Called by the CQ when it polls an error completion of this DCI. */
void dcx_mlx5_dci_enter_error(dcx_mlx5_qp_t *qp);
/* Modifies a QP with the table's required mask plus "extra" (which must be
 * allowed by the table); logs and returns errno on failure. */
int dcx_mlx5_qp_modify(dcx_mlx5_qp_t *qp, dcx_qp_state_t to,
                       struct ibv_qp_attr *attr, uint32_t extra);
/* A DCI completion, from either poll path of the CQ: retires the DCI's WRs
 * up to the completion's: 1 with *wc filled, 0 when there is nothing to
 * report now */
int dcx_mlx5_cq_dci_done(dcx_mlx5_cq_t *cq, dcx_mlx5_qp_t *qp,
                         const dcx_mlx5_cqe_t *c, dcx_wc_t *wc);
/* Reports outstanding WRs of failed DCIs as flushed, at most max */
int dcx_mlx5_cq_drain_flush(dcx_mlx5_cq_t *cq, int max, dcx_wc_t *wc);
/* Queues the DCI's remaining outstanding WRs for FLUSH reporting. */
void dcx_mlx5_cq_schedule_flush(dcx_mlx5_cq_t *cq, dcx_mlx5_qp_t *qp);
void dcx_mlx5_cq_unschedule_flush(dcx_mlx5_cq_t *cq, dcx_mlx5_qp_t *qp);

#endif /* DCX_MLX5_INT_H_ */
