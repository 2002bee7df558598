/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulated ConnectX: libibverbs.so.1 and libmlx5.so.1 replacements that
 * present soft devices (src/soft) as mlx5 devices, so that code written
 * against rdma-core (dcx's src/mlx5 backend, UCX's ib module) runs without
 * RDMA hardware.  docs/mlx5-emulation.md says what is modelled and how to
 * select it.
 *
 * Every verbs object is a struct whose first member is the rdma-core object
 * the application sees, followed by the soft-device object it is built on.
 * The libibverbs.so.1 replacement holds all state; libmlx5.so.1 forwards its
 * entry points to the dcx_emu_* functions libibverbs exports at the private
 * version node DCX_EMU_PRIVATE_1.
 */
#ifndef DCX_EMU_H_
#define DCX_EMU_H_

#include "dcx_dev.h"

#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* Every line the emulation logs starts with this, so that it is told apart
 * from the backend's own lines. */
#define emu_log(_level, _fmt, ...) \
    dcx_log(_level, "mlx5-emu: " _fmt, ##__VA_ARGS__)
#define emu_error(_fmt, ...) emu_log(DCX_LOG_ERROR, _fmt, ##__VA_ARGS__)
#define emu_warn(_fmt, ...)  emu_log(DCX_LOG_WARN, _fmt, ##__VA_ARGS__)
#define emu_debug(_fmt, ...) emu_log(DCX_LOG_DEBUG, _fmt, ##__VA_ARGS__)

/* Environment */
#define EMU_ENV_DEVICES "DCX_EMU_DEVICES" /* number of devices, 0..16 */
#define EMU_ENV_FABRIC  "DCX_EMU_FABRIC"  /* soft fabric name */
/* "1": UMRs run after their ibv_wr_complete, not within it */
#define EMU_ENV_UMR_LATE   "DCX_EMU_UMR_LATE"
#define EMU_DEFAULT_FABRIC "mlx5emu"
#define EMU_MAX_DEVICES    16

/* What the devices report (a ConnectX-6 as rdma-core 44 shows it) */
#define EMU_VENDOR_ID      0x02c9
#define EMU_VENDOR_PART_ID 4123
#define EMU_HW_VER         0
#define EMU_FW_VER         "20.31.1014"
#define EMU_GUID_BASE      0x0002c90300000000ull
#define EMU_GID_PREFIX     0xfe80000000000000ull
#define EMU_PKEY_DEFAULT   0xffff
#define EMU_MAX_MSG_SZ     (1u << 30)
#define EMU_MAX_PD         (1u << 24)
#define EMU_MAX_AH         (1u << 24)

/* QP numbers a port may hand out (emu_sm.c): a window of EMU_QPN_SPAN
 * numbers from the port's qpn_base.  Its soft device numbers its QPs from
 * qpn_base + EMU_QPN_FIRST on (dcx_soft_dev_set_qpn_base), so that the
 * numbers the program sees, and puts in its messages, are the soft
 * device's own. */
#define EMU_QPN_SPAN  (1u << 13)
#define EMU_QPN_FIRST 0x100u

/* A QP number the program names at a port whose window starts at base:
 * the number itself if it lies in the window, else 0, which names no QP
 * (a number outside the window is no QP of that port) */
static inline uint32_t emu_qpn_at(uint32_t base, uint32_t num)
{
    return (num - base < EMU_QPN_SPAN) ? num : 0;
}

/* Buckets of a device's QP-number map */
#define EMU_QP_MAP_SIZE 256

/* Most sge a UD WR has on the soft device, its GRH slot included: a UD
 * QP's max_send_sge is at most one less (emu_qp.c) */
#define EMU_UD_MAX_SGE 32u

/* Completions taken from the soft CQ per refill of a CQ's buffer */
#define EMU_CQ_BATCH 16

typedef struct emu_dev emu_dev_t;
typedef struct emu_ctx emu_ctx_t;

/* One emulated device of this process: a soft device opened at the first
 * ibv_open_device and shared by every context on it (one port, one LID,
 * as all contexts of one HCA share its port). */
struct emu_dev {
    struct ibv_device ibdev;
    unsigned index;
    dcx_dev_info_t info; /* the soft device behind it */
    const char *fabric;  /* the soft fabric it is on */
    /* guarded by emu_dev_lock */
    unsigned refs; /* open contexts */
    dcx_dev_t *soft;
    dcx_pd_t *pd;     /* the device's own (srq_cq) */
    dcx_cq_t *srq_cq; /* the soft CQ basic SRQs name; their
                                      receives complete on the DCT's CQ */
    uint16_t lid;
    uint64_t sm_word;  /* the LID directory's word of this registration */
    uint32_t qpn_base; /* the first number of the port's window */
    uint32_t srq_seq;  /* SRQs created on the port (atomic) */
    uint8_t addr[DCX_DEV_ADDR_MAX];
    size_t addr_len;
    /* the soft completion channel of its raw CQs (emu_raw.c) */
    dcx_comp_channel_t *raw_ch;
    /* QPs by number, for completions (emu_dev.c) */
    pthread_mutex_t qp_lock;
    struct emu_qp *qp_map[EMU_QP_MAP_SIZE];
    /* by number in the port's window (bit n - qpn_base): the DCTs whose
     * responder scatters short SENDs into the CQE (cs_res up to 64
     * bytes, emu_qp.c); set at RTR, cleared at destruction, read by the
     * engine (atomic bytes) */
    uint8_t scat64[EMU_QPN_SPAN / 8];
    /* the raw command QPs of its tag-matching XRQs (emu_raw.c): inbound
     * packets wait while one has list operations rung and not run.
     * cmd_lock is a leaf: taken under the soft device's engine lock */
    pthread_mutex_t cmd_lock;
    struct emu_raw_sq *cmds;
    unsigned num_cmds; /* atomic: a look without the lock */
};

/* A context: rdma-core's verbs_context (whose ibv_context ends it, at the
 * offset applications compute), then ours. */
/* An asynchronous event not read yet (emu_async.c) */
typedef struct emu_async_ev {
    enum ibv_event_type type;
    struct ibv_qp *qp;
} emu_async_ev_t;

#define EMU_ASYNC_MAX 256 /* events a context holds not read yet */

struct emu_ctx {
    struct verbs_context vctx;
    emu_dev_t *dev;
    bool devx;    /* opened with MLX5DV_CONTEXT_FLAGS_DEVX */
    uint8_t *uar; /* its UAR page (emu_raw.c), once asked for */
    /* asynchronous events (emu_async.c), a ring under async_lock */
    pthread_mutex_t async_lock;
    unsigned async_head, async_count;
    emu_async_ev_t async_q[EMU_ASYNC_MAX];
};

typedef struct emu_pd {
    struct ibv_pd pd;
    dcx_pd_t *soft;
    uint32_t pdn;  /* mlx5dv_init_obj's */
    unsigned refs; /* MRs, AHs, SRQs, QPs, mkeys on it */
} emu_pd_t;

typedef struct emu_mr {
    struct ibv_mr mr;
    dcx_mr_t *soft;
} emu_mr_t;

/* Where an AH leads while its LID has one owner: the soft AH to that
 * owner's port and the base of its QP numbers.  Never changed once
 * published; an AH keeps every route it had until it is destroyed, as
 * another thread may still be posting through a route it took without
 * the AH's lock. */
typedef struct emu_route {
    struct emu_route *prev;
    uint64_t word;     /* the LID's directory word it was resolved from */
    dcx_ah_t *soft;    /* the AH's nowhere one when nobody held the LID */
    uint32_t qpn_base; /* 0 for the nowhere route */
} emu_route_t;

typedef struct emu_ah {
    struct ibv_ah ah;
    emu_pd_t *pd;
    uint16_t dlid;
    uint8_t is_global;           /* a GRH goes with UD sends through it */
    struct ibv_global_route grh; /* as created */
    struct mlx5_wqe_av av;       /* mlx5dv_init_obj's view of it */
    const uint64_t *sm_word;     /* the LID's directory word; NULL: LID 0 */
    emu_route_t *route;          /* the newest; atomic, see emu_ah_route */
    dcx_ah_t *nowhere;           /* for a LID nobody holds */
    pthread_mutex_t lock;        /* taken to resolve again */
} emu_ah_t;

typedef struct emu_channel emu_channel_t;

/* What a UD receive's completion has beyond dcx_wc_t (emu_ud.c) */
typedef struct emu_wc_ext {
    uint16_t slid;
    uint8_t grh; /* IBV_WC_GRH: a GRH is in the first 40 bytes */
} emu_wc_ext_t;

typedef struct emu_cq {
    struct ibv_cq_ex cq; /* also the ibv_cq of ibv_create_cq */
    dcx_cq_t *soft;
    uint64_t wc_flags;    /* IBV_WC_EX_WITH_* asked for */
    unsigned refs;        /* QPs and SRQs using it */
    pthread_mutex_t lock; /* the buffer, held start..end_poll */
    unsigned head;        /* next buffered completion */
    unsigned count;       /* buffered completions */
    bool current;         /* buf[head] is the one being read */
    dcx_wc_t buf[EMU_CQ_BATCH];
    emu_wc_ext_t ext[EMU_CQ_BATCH]; /* what a UD receive adds */
    /* completion events (emu_comp_channel.c) */
    emu_channel_t *channel;   /* NULL: created without one */
    struct emu_raw_cq *raw;   /* its memory, after mlx5dv_init_obj */
    struct emu_qbuf *qbuf;    /* where that lives: NULL, the heap */
    uint16_t cqe_size;        /* mlx5dv_create_cq's (0: 64) */
    uint32_t cqn;             /* in the port's window, as an SRQ's */
    struct emu_cq *ch_next;   /* the channel's CQs (its lock) */
    unsigned own_events;      /* fired by arms over buffered completions,
                                 not collected (the channel's lock) */
    uint32_t events_reported; /* handed out by ibv_get_cq_event
                                 (cq.mutex, as comp_events_completed) */
} emu_cq_t;

typedef struct emu_srq {
    struct ibv_srq srq;
    dcx_srq_t *soft;
    emu_pd_t *pd;
    unsigned refs; /* DCTs on it */
    uint32_t max_wr;
    uint32_t max_sge;
    uint32_t srq_limit;
    uint32_t srqn;          /* in the port's window of numbers, as a QP's */
    struct emu_raw_rq *raw; /* its memory, after mlx5dv_init_obj */
    volatile __be32 *raw_db;
    struct emu_qbuf *qbuf; /* where that lives: NULL, the heap */
    struct emu_xrq *xrq;   /* an XRQ with tag matching (emu_xrq.c) */
} emu_srq_t;

typedef enum {
    EMU_QP_DCI,
    EMU_QP_DCT,
    EMU_QP_RC, /* emu_rc.c */
    EMU_QP_UD  /* emu_ud.c */
} emu_qp_kind_t;

/* An indirect mkey (mlx5dv_create_mkey, emu_mkey.c): the soft device's
 * strided key executes its layouts. */
typedef struct emu_mkey {
    struct mlx5dv_mkey mkey; /* lkey == rkey, the soft key's */
    emu_pd_t *pd;
    dcx_mkey_t *soft;
    uint32_t num_desc; /* translation entries: max_entries rounded to 4 */
    /* DCX_ACCESS_* the key was last configured with: a configure without
     * the access setter keeps them (0, local read, from creation) */
    uint32_t access;
} emu_mkey_t;

/* One WR being built or waiting in a batch (emu_wr.c, emu_umr.c) */
typedef struct emu_wr {
    dcx_send_wr_t wr;
    uint32_t sge_off; /* first sge in the QP's batch sge array */
    uint32_t inl_off; /* first inline byte in the batch buffer */
    uint32_t inl_len;
    uint8_t setters; /* address and data setters called */
    uint8_t has_addr;
    uint8_t has_data;
    /* memory-key requests: the layout handed to the soft device (entries
     * at il_off of the batch's interleaved array or sge_off of its sge
     * array), the key a local invalidation names, and the error status
     * of a request the HCA would accept and then fail (0: none) */
    uint8_t fail_status;
    uint32_t il_off;
    dcx_mkey_layout_t lay;
    dcx_mkey_t inv_key;
    /* mlx5dv_wr_mkey_configure: its key, the setters it declared and those
     * called; which of access and layout came (has_data is set once all
     * declared setters are in) */
    emu_mkey_t *cfg_mk;
    uint8_t cfg_setters;
    uint8_t cfg_called;
    uint8_t cfg_access_set;
    uint8_t cfg_layout_set;
    /* UD: the address of ibv_wr_set_ud_addr */
    struct ibv_ah *ud_ah;
    uint32_t ud_qpn;
    uint32_t ud_qkey;
} emu_wr_t;

/* A WR posted to the soft QP and not yet retired by a polled completion:
 * the soft WR's wr_id is the post sequence number, which finds this. */
typedef struct emu_wqe {
    uint64_t wr_id; /* the application's */
} emu_wqe_t;

/* A DCI with streams: the soft WR's wr_id is the stream in the top bits
 * and the stream's own post sequence below */
#define EMU_STREAM_SHIFT 48
#define EMU_STREAM_SEQ   ((1ull << EMU_STREAM_SHIFT) - 1)

typedef struct emu_qp {
    struct ibv_qp_ex qpx; /* ibv_qp first: both cast */
    struct mlx5dv_qp_ex dv;
    emu_ctx_t *ctx;
    emu_pd_t *pd;
    emu_qp_kind_t kind;
    bool has_qpx;      /* created with SEND_OPS_FLAGS */
    bool by_devx;      /* created by CREATE_QP: events go to DEVX channels */
    bool post_ok;      /* RTS reached since the last RESET */
    bool err_entered;  /* its move into ERR handled since the last RESET
                          (own receive queue flushed, last-WQE event) */
    uint64_t send_ops; /* IBV_QP_EX_WITH_* */
    uint64_t dv_ops;   /* MLX5DV_QP_EX_WITH_* */
    bool sig_all;
    emu_cq_t *send_cq;
    emu_cq_t *recv_cq;
    struct emu_srq *srq;     /* DCT, RC */
    dcx_qp_t *soft;          /* DCI, RC: from creation; DCT: RTR */
    struct emu_qp *map_next; /* device's QP map chain */
    uint32_t max_send_wr;
    uint32_t max_send_sge;
    uint32_t max_inline;
    uint32_t num_streams; /* a DCI with streams: 2^log_num_concurent */
    /* with streams, each stream has st_depth slots of sq (from stream *
     * st_depth on) and its own sequences: the soft device completes every
     * stream on its own, so no stream waits for another's slots */
    uint32_t st_depth;
    uint64_t *st_posted;
    uint64_t *st_retired;
    /* DCT, kept from RESET->INIT for the soft DCT made at INIT->RTR */
    uint64_t dct_key;
    uint32_t dct_access; /* DCX_ACCESS_REMOTE_* */
    bool scat64;         /* its dctc's cs_res: up to 64 bytes (emu_qp.c) */
    /* RC (emu_rc.c): the requester is the soft DCI, its number send_num
     * (the device's QP map key of DCIs and RC QPs); the responder a soft
     * DCT (resp) whose number is the QP's, taking receives from srq: the
     * application's, or rq, the QP's own */
    uint32_t send_num;
    dcx_qp_t *resp;
    struct emu_srq *rq;
    uint32_t rq_max_wr; /* granted; 0: the QP takes no receives */
    struct ibv_ah *rc_ah;
    uint32_t rc_dest_qpn;
    uint32_t rc_access; /* IBV_ACCESS_* */
    uint8_t rc_min_rnr;
    uint32_t sq_psn;      /* as the last RTR->RTS gave it (ibv_query_qp) */
    uint64_t rc_key;      /* carried by the requests to the peer */
    uint64_t rc_resp_key; /* the responder's; 0 while closed */
    /* UD (emu_ud.c): the requester a datagram DCI, the responder and the
     * receive queue as RC's; the receives' buffers by slot, and a GRH
     * slot per send-queue entry in registered memory */
    struct emu_ud_recv *ud_recv; /* rq->max_wr entries; NULL on an SRQ */
    uint64_t ud_recv_posted;
    uint32_t ud_qkey;
    uint8_t *ud_grh;
    dcx_mr_t *ud_grh_mr;
    struct emu_raw_sq *raw_sq; /* its send queue memory (mlx5dv_init_obj) */
    uint32_t sq_wqe_cnt;       /* basic blocks of that queue (emu_qp_size) */
    struct emu_qbuf *qbuf;     /* where its queues live: NULL, the heap */
    /* asynchronous events ibv_get_async_event handed out for this QP
     * (under ctx->async_lock); its destroy waits until the application
     * has acknowledged as many (qpx.qp_base.events_completed) */
    uint32_t async_reported;
    /* the send queue: posted - retired <= max_send_wr */
    pthread_mutex_t sq_lock;
    uint64_t sq_posted;  /* sequence of the next post */
    uint64_t sq_retired; /* all below are retired */
    emu_wqe_t *sq;       /* max_send_wr entries */
    /* the batch between ibv_wr_start and ibv_wr_complete/abort, under
     * wr_lock (held from start to complete or abort, as libmlx5 holds
     * its SQ lock) */
    pthread_mutex_t wr_lock;
    emu_wr_t *batch;
    uint32_t batch_n;
    uint32_t batch_cap;
    dcx_sge_t *batch_sge;
    uint32_t batch_sge_n;
    uint32_t batch_sge_cap;
    uint8_t *batch_inl;
    uint32_t batch_inl_n;
    uint32_t batch_inl_cap;
    dcx_mkey_interleaved_t *batch_il; /* interleaved UMR entries */
    uint32_t batch_il_n;
    uint32_t batch_il_cap;
    int batch_err; /* sticky errno of the batch */
} emu_qp_t;

static inline emu_qp_t *emu_qp(struct ibv_qp *qp)
{
    return (emu_qp_t *)qp;
}

/* Whether qp receives from an application's SRQ (not its own receive
 * queue, which the emulation also keeps as an SRQ): such a QP raises the
 * last-WQE-reached event when it moves into ERR */
static inline bool emu_qp_on_srq(const emu_qp_t *qp)
{
    return (qp->srq != NULL) && (qp->srq != qp->rq);
}

/* The context of ctx, which is one of the emulation's (emu_ctx_check
 * says whether it is) */
static inline emu_ctx_t *emu_ctx(struct ibv_context *ctx)
{
    return (emu_ctx_t *)verbs_get_ctx(ctx);
}

/* emu_dev.c */
emu_dev_t *emu_dev_of(struct ibv_device *ibdev);
/* The context of an object: EINVAL (logged, naming 'what') if it is not a
 * context of the emulation. */
emu_ctx_t *emu_ctx_check(struct ibv_context *ctx, const char *what);
/* A context's hold of its device's soft device, opened at the first and
 * closed after the last (errno value, logged, if it cannot be opened) */
int emu_dev_acquire(emu_dev_t *dev);
void emu_dev_release(emu_dev_t *dev);
uint64_t emu_dev_guid(const emu_dev_t *dev);
/* The device's QP map, by the number its completions carry (a DCI's or
 * an RC or UD QP's send_num): a QP joins at creation and leaves at
 * destruction; emu_qp_find gives the QP of a completion's number (NULL:
 * not a QP with a send queue).  They take dev->qp_lock. */
void emu_qp_map_add(emu_dev_t *dev, emu_qp_t *qp);
void emu_qp_map_del(emu_dev_t *dev, emu_qp_t *qp);
emu_qp_t *emu_qp_find(emu_dev_t *dev, uint32_t qp_num);

/* emu_ctx.c: a context of ibdev, its ops those of every object file */
struct ibv_context *emu_open(struct ibv_device *ibdev, bool devx);

/* emu_ctx_unsup.c: the context's ops the emulation does not model, each
 * logging one line and failing as its inline verb does without the op */
void emu_ctx_set_unsup_ops(struct verbs_context *vctx);

/* emu_query.c */
void emu_ctx_set_query_ops(struct verbs_context *vctx);

/* emu_sysfs.c: the devices' attribute files, in a tree the emulation owns;
 * sets each device's dev_path and ibdev_path into it.  Held until exit. */
void emu_sysfs_publish(emu_dev_t *devs, unsigned count);

/* emu_sm.c: the fabric's LID directory (a subnet manager of sorts) */
/* Publishes addr under the first free LID; *word_p is the registration's
 * directory word (its generation places the port's QP numbers). */
int emu_sm_register(const char *fabric, const void *addr, size_t len,
                    uint16_t *lid_p, uint64_t *word_p);
void emu_sm_unregister(const char *fabric, uint16_t lid, uint64_t word);
/* The port address published under lid and the word it was published
 * with; ENOENT if none (never assigned, or its owner gone). */
int emu_sm_lookup(const char *fabric, uint16_t lid, void *addr, size_t *len_p,
                  uint64_t *word_p);
/* The directory word of lid, which changes with every new owner; NULL for
 * a LID outside the directory.  The directory stays mapped until
 * emu_sm_word_put. */
const uint64_t *emu_sm_word(const char *fabric, uint16_t lid);
void emu_sm_word_put(const uint64_t *word);
/* The first QP number of the port registered with word (a multiple of
 * EMU_QPN_SPAN, never 0) */
uint32_t emu_sm_qpn_base(uint64_t word);

/* emu_ah.c: the route a work request through ah takes now */
const emu_route_t *emu_ah_route(emu_ah_t *ah);

/* emu_mr.c */
static inline emu_pd_t *emu_pd(struct ibv_pd *pd)
{
    return (emu_pd_t *)pd;
}

/* emu_cq.c */
void emu_ctx_set_cq_ops(struct verbs_context *vctx);
static inline emu_cq_t *emu_cq(struct ibv_cq *cq)
{
    return (emu_cq_t *)cq;
}
/* Drops the completions of QP qp_num not yet polled (a move to RESET). */
void emu_cq_purge(emu_cq_t *cq, uint32_t qp_num);
/* The PRM syndrome of a completion status (an error CQE's) */
uint8_t emu_wc_syndrome(uint8_t status);

/* emu_comp_channel.c */
void emu_ctx_set_channel_ops(struct verbs_context *vctx);
/* 0, or EBADF (logged) when channel is not one of context */
int emu_channel_check(struct ibv_comp_channel *channel,
                      struct ibv_context *context);
dcx_comp_channel_t *emu_channel_soft(struct ibv_comp_channel *channel);
/* A CQ created on the channel joins it (new_cq: its refcnt counts the CQ;
 * false: the CQ comes back after a failed destroy) */
void emu_channel_attach(emu_cq_t *cq, struct ibv_comp_channel *channel,
                        bool new_cq);
/* ibv_destroy_cq: the CQ leaves the channel with its events not collected;
 * after its soft CQ is gone, emu_channel_cq_wait_acks waits for the
 * acknowledgement of those handed out and releases the channel. */
void emu_channel_detach(emu_cq_t *cq);
void emu_channel_cq_wait_acks(emu_cq_t *cq);
/* Raises cq's event on its channel (none: nothing), as an arm over
 * completions does: a raw CQ's, on its engine's word (emu_raw_cq.c) */
void emu_channel_fire(emu_cq_t *cq);

/* emu_srq.c: an SRQ of the emulation (NULL, errno set and logged, on
 * failure); attr's sizes are set to the granted.  tm: NULL for a basic
 * SRQ, else the CQ and list sizes of a tag-matching one */
struct emu_srq *emu_srq_new(struct ibv_pd *pd, struct ibv_srq_init_attr *attr,
                            const dcx_srq_attr_t *tm);

/* emu_qp.c */
void emu_ctx_set_qp_ops(struct verbs_context *vctx);
/* Set by a caller that sizes a QP by trying: a queue deeper than the
 * device takes is then refused at debug level, not as the program's
 * error (this thread only) */
extern __thread bool emu_qp_sizing_quiet;
/* Sets the number of a QP whose soft QP was just made (or fails, the soft
 * QP destroyed) */
int emu_qp_number(emu_qp_t *qp, const char *name);
/* A DCT with a number: whether the engine scatters its short SENDs into
 * their CQEs (qp->scat64) is marked by number, on at RTR, off when it goes */
void emu_dct_scat_mark(emu_qp_t *qp, bool on);

/* Whether the DCT numbered qpn at dev scatters short SENDs into CQEs */
static inline bool emu_dct_scatters(emu_dev_t *dev, uint32_t qpn)
{
    uint32_t i = qpn - dev->qpn_base;

    return (i < EMU_QPN_SPAN) &&
           ((__atomic_load_n(&dev->scat64[i / 8], __ATOMIC_ACQUIRE) >>
             (i % 8)) &
            1);
}

/* emu_sq.c: a QP's send queue of WRs posted and not retired (sq_lock held
 * by the first two) */
/* Records w's application wr_id in its slot; returns the sequence the
 * soft WR carries */
uint64_t emu_sq_take_slot(emu_qp_t *qp, emu_wr_t *w);
/* w, in the slot taken, went to the soft QP */
void emu_sq_posted(emu_qp_t *qp, const emu_wr_t *w);
/* A completion of qp's send queue with soft wr_id seq was polled: retires
 * the WRs up to it and gives the application's wr_id. */
uint64_t emu_sq_retire(emu_qp_t *qp, uint64_t seq);

/* IBV_ACCESS_REMOTE_* -> DCX_ACCESS_REMOTE_* */
static inline uint32_t emu_dcx_access(unsigned ibv_access)
{
    return ((ibv_access & IBV_ACCESS_REMOTE_WRITE) ? DCX_ACCESS_REMOTE_WRITE :
                                                     0) |
           ((ibv_access & IBV_ACCESS_REMOTE_READ) ? DCX_ACCESS_REMOTE_READ :
                                                    0) |
           ((ibv_access & IBV_ACCESS_REMOTE_ATOMIC) ? DCX_ACCESS_REMOTE_ATOMIC :
                                                      0);
}

/* emu_rc.c: RC QPs (a soft DCI and a soft DCT, see there) */
/* After the DCI is made: the receive queue and the responder, which
 * gives the QP its number; attr's receive caps are set to the granted */
int emu_rc_init(emu_qp_t *qp, struct ibv_qp_init_attr_ex *attr,
                const char *name);
void emu_rc_fini(emu_qp_t *qp);
/* The responder's and the peer's part of a modify to 'to' */
int emu_rc_modify(emu_qp_t *qp, const struct ibv_qp_attr *a, int mask,
                  enum ibv_qp_state to);
/* The peer as a data WR's destination, resolved now */
void emu_rc_dest(emu_qp_t *qp, dcx_send_wr_t *wr);

/* emu_post.c: ibv_post_send and ibv_post_recv of a context */
void emu_ctx_set_post_ops(struct ibv_context *ctx);

/* emu_ud.c: UD QPs (a datagram DCI and a DCT, see there) */
/* The DC key a datagram with Q_Key qkey carries */
static inline uint64_t emu_ud_key(uint32_t qkey)
{
    return 0x5544000000000000ull | qkey; /* "UD": no DC or RC key */
}
int emu_ud_init(emu_qp_t *qp, struct ibv_qp_init_attr_ex *attr,
                const char *name);
void emu_ud_fini(emu_qp_t *qp);
int emu_ud_modify(emu_qp_t *qp, const struct ibv_qp_attr *a, int mask,
                  enum ibv_qp_state to);
/* The destination of a UD WR and its sg list with the GRH slot first
 * (sge holds max_send_sge + 1 entries; inl: the inline data); errno
 * (logged) for a WR the device refuses */
int emu_ud_prepare(emu_qp_t *qp, emu_wr_t *w, dcx_sge_t *sge,
                   const dcx_sge_t *inl);
int emu_ud_post_recv(emu_qp_t *qp, struct ibv_recv_wr *wr,
                     struct ibv_recv_wr **bad_wr);
/* A receive completion of qp's own receive queue: its wr_id and what
 * the datagram's first 40 bytes say (cq lock held) */
void emu_ud_recv_done(emu_qp_t *qp, dcx_wc_t *wc, emu_wc_ext_t *ext);

/* emu_wr.c: the ibv_qp_ex / mlx5dv_qp_ex builders */
void emu_wr_init(emu_qp_t *qp);
void emu_wr_cleanup(emu_qp_t *qp);

/* emu_wr_batch.c: the batch the builders fill */
/* Fails the batch being built with err (the first broken rule is logged,
 * fmt saying which). */
void emu_wr_fail(emu_qp_t *qp, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Appends a WR of 'opcode' to the batch, taking wr_id and wr_flags of the
 * QP; NULL (the batch failed) when the previous WR is incomplete or the
 * batch is longer than the send queue. */
emu_wr_t *emu_wr_push(emu_qp_t *qp, uint8_t opcode, const char *name);
/* Grows *p (elements of elem bytes, capacity *cap) to hold need. */
int emu_grow(void **p, uint32_t *cap, uint32_t need, size_t elem);
/* The WR whose setters are being called; NULL (and the batch failed) if
 * there is none. */
emu_wr_t *emu_wr_cur(emu_qp_t *qp, const char *setter);

/* emu_umr.c: the memory-key builders (RC QPs) */
void emu_umr_init(emu_qp_t *qp);
/* Posts a memory-key WR of the batch to the soft QP (sq_lock held). */
int emu_umr_post(emu_qp_t *qp, emu_wr_t *w);
/* IBV_WR_LOCAL_INV of ibv_post_send, appended to the batch */
void emu_umr_post_local_inv(emu_qp_t *qp, uint32_t rkey);

static inline bool emu_wr_is_mkey(const emu_wr_t *w)
{
    return (w->wr.opcode >= DCX_WR_MKEY_FIRST) &&
           (w->wr.opcode < DCX_WR_MKEY_LAST);
}

/* The batch's last WR (NULL: none) */
static inline emu_wr_t *emu_wr_last(emu_qp_t *qp)
{
    return (qp->batch_n > 0) ? &qp->batch[qp->batch_n - 1] : NULL;
}

/* Whether w has every setter its builder wants */
static inline bool emu_wr_done(const emu_qp_t *qp, const emu_wr_t *w)
{
    return w->has_data && (w->has_addr || ((qp->kind != EMU_QP_DCI) &&
                                           (qp->kind != EMU_QP_UD)));
}

/* The setter a WR not done still lacks */
static inline const char *emu_wr_missing(const emu_wr_t *w)
{
    return ((w->cfg_mk != NULL) && !w->has_data) ? "mkey" :
           w->has_data                           ? "address" :
                                                   "data";
}

/* emu_mkey.c */
static inline emu_mkey_t *emu_mkey(struct mlx5dv_mkey *mkey)
{
    return (emu_mkey_t *)mkey;
}

/* emu_srq.c */
void emu_ctx_set_srq_ops(struct verbs_context *vctx);

/* emu_async.c: a context's asynchronous events; an event of qp queued on
 * its context's async fd, and the events of a QP being destroyed dropped */
void emu_async_init(emu_ctx_t *ctx);
void emu_async_fini(emu_ctx_t *ctx);
void emu_async_qp_event(emu_qp_t *qp, enum ibv_event_type type);
void emu_async_qp_forget(emu_qp_t *qp);
void emu_async_qp_wait_acks(emu_qp_t *qp);

#endif /* DCX_EMU_H_ */
