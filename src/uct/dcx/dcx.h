/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: interface, endpoints, DCI pool.
 *
 * One interface owns one DCT (fed by one SRQ), a send CQ shared by all of
 * its DCIs, a receive CQ, and a pool of DCIs.  Endpoints are a destination
 * (address handle, DCT number) plus, while they have work in flight, a DCI
 * lent by the pool according to the policy chosen at interface creation.
 *
 * Work requests are numbered per DCI (sn, from 1).  The wr_id of every WR is
 * (sn << 16 | dci index), so a completion names its DCI without a lookup.
 * Only some WRs are signalled; a signalled completion with sn S retires every
 * WR of that DCI up to S and fires the queued operations (uct_dcx_op_t) with
 * sn <= S.
 *
 * Wire format of a send: one header byte, then the payload.  Bits 0..4 of the
 * byte are the AM id, bit 7 marks a control message of the transport (flow
 * control request/grant, no-op).  A peer whose DCT is fed by a tag-matching
 * SRQ (its address says so) parses the first 16 bytes of every message as a
 * tag-matching header (TMH): sends to it carry a TMH of opcode NO_TAG (all
 * zero) before the header byte, so that TM and non-TM interfaces talk to
 * each other.
 */
#ifndef UCT_DCX_H_
#define UCT_DCX_H_

#include "dcx_md.h"
#include "dcx_dev.h"
#include "dcx_strided_iov.h"
#include "dcx_dci_stats.h"

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <ucs/arch/cpu.h>
#include <ucs/datastruct/arbiter.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/datastruct/queue.h>
#include <ucs/datastruct/khash.h>
#include <ucs/type/class.h>
#include <ucs/time/time_def.h>

#define UCT_DCX_TL_NAME          "dcx"
#define UCT_DCX_DCI_NONE         UINT16_MAX
#define UCT_DCX_MAX_DCI          4096 /* pool size limit (16-bit index) */
#define UCT_DCX_DCI_CHECK_PERIOD 1024 /* send completion batches */
#define UCT_DCX_AM_HDR_LEN       1
#define UCT_DCX_AM_CTL           0x80 /* header bit: control message */
#define UCT_DCX_AM_MAX_HDR       128  /* am_zcopy user header bytes */
#define UCT_DCX_WR_SN_SHIFT      16
#define UCT_DCX_MAX_IOV          8 /* sges per zcopy WR we advertise */
#define UCT_DCX_MAX_SGE \
    32                      /* sges per WR: iovs, or strided
                                              elements expanded to sges */
#define UCT_DCX_RX_BATCH 16 /* completions polled at once */
#define UCT_DCX_RX_INIT_POSTED \
    64 /* receives posted at open, at
                                              least (uct_dcx_rx_init_posted) */
#define UCT_DCX_RX_REPOST_MAX \
    16 /* receives reposted at once, at
                                              most (an eighth of the goal) */
#define UCT_DCX_TX_BATCH 16
#define UCT_DCX_SIG_PERIOD_LENT \
    16                            /* default SIGNAL_PERIOD of the
                                              dcs policies */
#define UCT_DCX_ADDR_MAGIC   0xdc /* first byte of an iface address */
#define UCT_DCX_ADDR_VERSION 2
#define UCT_DCX_WR_USER_MEM  0x80 /* wr_opcode flag: zcopy WR */


/* Control message types (header byte = UCT_DCX_AM_CTL | type) */
typedef enum {
    UCT_DCX_CTL_NOP      = 1, /* a rendezvous FIN's control byte; dropped */
    UCT_DCX_CTL_FC_REQ   = 2, /* sender asks for credits */
    UCT_DCX_CTL_FC_GRANT = 3  /* receiver grants credits */
} uct_dcx_ctl_type_t;


typedef enum {
    UCT_DCX_POLICY_DCS,
    UCT_DCX_POLICY_DCS_QUOTA,
    UCT_DCX_POLICY_RAND,
    UCT_DCX_POLICY_HYBRID,
    UCT_DCX_POLICY_STREAMS,
    UCT_DCX_POLICY_LAST
} uct_dcx_policy_t;


typedef struct uct_dcx_iface_config {
    uct_iface_config_t super;
    unsigned num_dci;
    unsigned num_dci_streams;    /* streams policy: streams of its DCI */
    ucs_time_t dci_idle_timeout; /* free this long: destroyed */
    int policy;                  /* uct_dcx_policy_t */
    unsigned quota;
    unsigned tx_queue_len;
    unsigned rx_queue_len;
    size_t seg_size;
    unsigned fc_wnd;
    double fc_req_timeout; /* seconds */
    unsigned long dc_key;
    double timeout; /* seconds */
    unsigned retry_count;
    unsigned rnr_retry;
    double rnr_timer;    /* seconds */
    unsigned sig_period; /* 0 = auto (policy's default) */
    unsigned tx_max_bufs;
    int tm_enable;                /* ucs_ternary_auto_value_t */
    size_t tm_seg_size;           /* receive buffers of a TM SRQ, at least;
                                     UCS_MEMUNITS_AUTO: the device's model */
    size_t tm_min_recv;           /* tag.recv.min_recv, or UCS_MEMUNITS_AUTO */
    char *stats_dir;              /* "" = no live counters file */
    char *tm_stats_dir;           /* its former name */
    unsigned strided_keys;        /* pool of strided keys, 0 = none */
    unsigned strided_key_entries; /* 0 = the device's maximum */
    unsigned strided_sge_max;     /* elements expanded to sges */
    int strided_key_queue;        /* uct_dcx_strided_queue_t */
    double arm_poll;              /* seconds; 0 = arm at once */
} uct_dcx_iface_config_t;

/* UCX_DCX_STRIDED_KEY_QUEUE: where strided-key configures go */
typedef enum {
    UCT_DCX_STRIDED_QUEUE_AUTO,
    UCT_DCX_STRIDED_QUEUE_DCI,
    UCT_DCX_STRIDED_QUEUE_OWN,
    UCT_DCX_STRIDED_QUEUE_LAST
} uct_dcx_strided_queue_t;

extern const char *uct_dcx_strided_queue_names[];

/* The pool's size: data DCIs, or the streams of the one DCI */
static inline unsigned uct_dcx_pool_size(const uct_dcx_iface_config_t *config)
{
    return (config->policy == UCT_DCX_POLICY_STREAMS) ?
               config->num_dci_streams :
               config->num_dci;
}


/* Packed interface address: what a peer needs besides the device address */
typedef struct UCS_S_PACKED uct_dcx_iface_addr {
    uint8_t magic;   /* UCT_DCX_ADDR_MAGIC */
    uint8_t version; /* UCT_DCX_ADDR_VERSION */
    uint8_t dctn[3]; /* DCT number, 24 bits, little endian */
    uint8_t flags;   /* UCT_DCX_ADDR_FLAG_* */
} uct_dcx_iface_addr_t;

enum {
    UCT_DCX_ADDR_FLAG_TM = UCS_BIT(0) /* DCT behind a tag-matching SRQ */
};

/* NO_TAG tag-matching header sent before the header byte to a TM peer */
extern const uint8_t uct_dcx_tmh_no_tag[DCX_TM_TMH_LEN];

/* Packed device address: the port address of the device */
typedef struct UCS_S_PACKED uct_dcx_dev_addr {
    uint8_t len;
    uint8_t port[];
} uct_dcx_dev_addr_t;


typedef struct uct_dcx_iface uct_dcx_iface_t;
typedef struct uct_dcx_ep uct_dcx_ep_t;
typedef struct uct_dcx_op uct_dcx_op_t;

typedef void (*uct_dcx_op_cb_t)(uct_dcx_iface_t *iface, uct_dcx_op_t *op,
                                ucs_status_t status);

/* Something to do when the WR numbered sn completes */
struct uct_dcx_op {
    ucs_queue_elem_t queue;
    uint64_t sn;
    uct_dcx_op_cb_t cb;
    uct_completion_t *comp;
};

/* Registered buffer for bcopy, get-bcopy, fetching atomics, control */
typedef struct uct_dcx_send_desc {
    uct_dcx_op_t op;
    uint32_t lkey;
    uint32_t length;
    union {
        struct {
            uct_unpack_callback_t cb;
            void *arg;
        } unpack;
        void *result; /* fetch result: user buffer */
        struct {
            dcx_ah_t *ah; /* control message target */
            uint32_t dctn;
            uint8_t tmh_len; /* TMH bytes before the msg */
        } ctl;
    } u;
    /* data follows, 64-byte aligned */
} uct_dcx_send_desc_t;

/* Receive buffer layout: [lkey (4 bytes) | spare][user headroom][AM byte]
 * [payload].  The payload is aligned as the user asked, so the start of the
 * element may not be: the lkey is read and written with memcpy.  When the
 * user keeps a buffer, the uct_recv_desc_t pointer is stored in the 8 bytes
 * before the headroom, where uct_recv_desc() looks for it. */
#define UCT_DCX_RX_LKEY_OFFSET 0


/* Control message on the wire (after the header byte) */
typedef struct UCS_S_PACKED uct_dcx_ctl_msg {
    uint16_t credits; /* FC_GRANT */
    uint8_t addr_len; /* FC_REQ: bytes of port */
    uint8_t seq;      /* FC_REQ/FC_GRANT: request number, echoed */
    uint32_t dctn;    /* FC_REQ: requester's DCT */
    uint64_t ep_id;   /* FC_REQ/FC_GRANT: requester's endpoint */
    uint8_t flags;    /* FC_REQ: requester's UCT_DCX_ADDR_FLAG_* */
    uint8_t port[DCX_DEV_ADDR_MAX];
} uct_dcx_ctl_msg_t;


enum {
    UCT_DCX_DCI_FLAG_ERR    = UCS_BIT(0), /* a stream's error seen, its
                                               recovery due once its WRs
                                               are all flushed (err_sn) */
    UCT_DCX_DCI_FLAG_CANCEL = UCS_BIT(1), /* put into error to cancel */
    UCT_DCX_DCI_FLAG_CTL    = UCS_BIT(2), /* the control DCI */
    UCT_DCX_DCI_FLAG_BUSY   = UCS_BIT(3), /* lent out (dcs policies) */
    UCT_DCX_DCI_FLAG_BROKEN = UCS_BIT(4), /* recovery failed: unusable */
    UCT_DCX_DCI_FLAG_KEPT   = UCS_BIT(5)  /* dcs policies: stayed with its
                                               owner when it drained; counted
                                               in pool.kept (may be busy again
                                               since: the flag is a hint) */
};

/* Copy of a posted WR, kept by DCIs shared between endpoints so that the
 * WRs of healthy endpoints, flushed by another endpoint's failure, can be
 * posted again after recovery.  Inline data is copied after the struct. */
typedef struct uct_dcx_wr_log {
    dcx_send_wr_t wr;
    dcx_sge_t sge[UCT_DCX_MAX_SGE];
} uct_dcx_wr_log_t;

/* One a cache line apart (two lines: an ep's DCI index scales by a shift,
 * and no DCI shares a line with another) */
typedef struct uct_dcx_dci {
    dcx_qp_t *qp;
    uct_dcx_ep_t *owner; /* dcs policies: ep holding this DCI */
    uint16_t index;
    uint16_t avail;        /* free send queue slots */
    uint16_t unsig;        /* WRs posted since the last signalled */
    uint8_t next_flags;    /* DCX_SEND_FENCE for the next WR */
    uint8_t flags;         /* UCT_DCX_DCI_FLAG_* */
    uint64_t sn;           /* last posted */
    uint64_t done_sn;      /* last retired */
    uint64_t sig_sn;       /* last signalled */
    ucs_queue_head_t ops;  /* uct_dcx_op_t by increasing sn */
    uct_dcx_ep_t **wr_ep;  /* [sn & mask]: ep of each WR in flight */
    uint8_t *wr_opcode;    /* [sn & mask]: its opcode, for errors,
                                      | UCT_DCX_WR_USER_MEM */
    char *log;             /* [sn & mask]: uct_dcx_wr_log_t, or NULL */
    uint64_t check_sn;     /* sn at the pool's last look */
    ucs_time_t idle_since; /* unused since (uct_dcx_dci_shrink) */
    /* UCT_DCX_DCI_FLAG_ERR: the failed WR and its completion's status */
    uint64_t err_sn;
    uint32_t err_vendor;
    uint8_t err_status; /* dcx_wc_status_t */
} UCS_V_ALIGNED(UCS_SYS_CACHE_LINE_SIZE) uct_dcx_dci_t;


/* A peer port we have an address handle for */
typedef struct uct_dcx_peer {
    dcx_ah_t *ah;
    uint8_t len;
    uint8_t addr[DCX_DEV_ADDR_MAX];
} uct_dcx_peer_t;


enum {
    UCT_DCX_EP_FLAG_FAILED      = UCS_BIT(0),
    UCT_DCX_EP_FLAG_FC_REQ_SENT = UCS_BIT(1),
    UCT_DCX_EP_FLAG_DCI_WAIT    = UCS_BIT(2), /* counted in pool.waiters */
    /* uct_ep_invalidate()d, its failure not yet reported (a worker
     * progress callback of ext->invalidate_cb_id will) */
    UCT_DCX_EP_FLAG_INVALIDATED = UCS_BIT(3)
};

/* What an endpoint needs only once it queues pending requests or asks for
 * credits: allocated then (uct_dcx_ep_ext_get), freed with the ep */
typedef struct uct_dcx_ep_ext {
    uct_dcx_ep_t *ep;
    uint64_t id;                   /* key in iface->eps: FC grants */
    ucs_queue_head_t pending_q;    /* uct_pending_req_t, through priv */
    ucs_arbiter_group_t arb_group; /* holds arb_elem while pending_q */
    ucs_arbiter_elem_t arb_elem;
    /* flow control: while FC_REQ_SENT, on iface->fc.waiters */
    uint8_t fc_seq;         /* number of the last credit request */
    ucs_time_t fc_req_time; /* when it was sent */
    ucs_list_link_t fc_list;
    /* credits a grant brought while requests were pending: the ep gets
     * them when the dispatcher comes to it (uct_dcx_ep_fc_release_held),
     * so that a send made before then (from a handler in the progress
     * that took the grant) does not overtake the requests */
    int32_t fc_held;
    /* while INVALIDATED: the progress callback that fails the ep, and
     * the completions of its operations, taken at the invalidation */
    uct_worker_cb_id_t invalidate_cb_id;
    ucs_queue_head_t invalidate_comps;
} uct_dcx_ep_ext_t;

/* Kept within 56 bytes (one 64-byte malloc chunk): the fast path's fields
 * only; the rest is in ext */
struct uct_dcx_ep {
    uct_base_ep_t super;
    dcx_ah_t *ah; /* destination (dc_key: the iface's) */
    uint32_t dctn;
    uint16_t dci; /* UCT_DCX_DCI_NONE if none */
    uint16_t flags;
    int32_t fc_wnd;        /* AM credits left */
    int32_t quota;         /* sends left before yielding */
    uint64_t last_sn;      /* sn of this ep's last WR on dci */
    uct_dcx_ep_ext_t *ext; /* NULL until needed */
    uint32_t seq;          /* creation number (DCI hashing) */
    uint8_t tmh_len;       /* NO_TAG TMH bytes before AMs: 0/16 */
};

#define UCT_DCX_EP_MAX_SIZE 56


/* Behaviour of the DCI pool, chosen once at interface creation */
typedef struct uct_dcx_policy_ops {
    const char *name;
    /* ep created: set its initial DCI */
    void (*ep_init)(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep);
    /* ep needs a DCI it does not have: UCS_OK or UCS_ERR_NO_RESOURCE */
    ucs_status_t (*dci_get)(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep);
    /* quota of ep ran out: UCS_OK to go on, UCS_ERR_NO_RESOURCE to yield */
    ucs_status_t (*quota_out)(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep);
    /* DCI drained (no WR in flight): give it back if the policy lends */
    void (*dci_idle)(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci);
    /* ep goes away or fails: detach it from its DCI */
    void (*ep_detach)(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep);
    int shared; /* DCIs are shared between eps */
} uct_dcx_policy_ops_t;

extern const uct_dcx_policy_ops_t uct_dcx_policy_ops[UCT_DCX_POLICY_LAST];
extern const char *uct_dcx_policy_names[];


KHASH_MAP_INIT_INT64(uct_dcx_eps, uct_dcx_ep_t *);


/* Tag matching: one posted receive (uct_iface_tag_recv_zcopy) */
enum {
    UCT_DCX_TM_SLOT_FREE,
    UCT_DCX_TM_SLOT_LIVE, /* listed, or matched and not finished */
    UCT_DCX_TM_SLOT_DONE  /* reported, completions still due */
};

typedef struct uct_dcx_tm_slot {
    uct_tag_context_t *ctx;
    void *buffer;    /* the receive's buffer */
    uint32_t length; /* and its length */
    uint32_t handle; /* device list handle */
    uint32_t next_free;
    uint8_t state;   /* UCT_DCX_TM_SLOT_* */
    uint8_t ops_due; /* signalled list operations pending */
    uint8_t forced;  /* cancelled with force: no callbacks */
    uint8_t del_posted;
    uint8_t in_bufs; /* buffer listed in tm.bufs for it */
    uint16_t skey;   /* strided key of the buffer, or
                                       UCT_DCX_SKEY_NONE */
} uct_dcx_tm_slot_t;

/* Buffer address -> slot holding it for the user (dcx_tag_buf.inl) */
KHASH_MAP_INIT_INT64(uct_dcx_tm_bufs, uint32_t);

/* What uct_tag_context_t.priv holds */
typedef struct uct_dcx_tm_ctx_priv {
    uint64_t tag; /* as posted; the sender's from the
                                       first CQE of a match */
    uint32_t slot;
    uint32_t app_ctx;
} uct_dcx_tm_ctx_priv_t;

/* Per-interface tag-matching counters (docs/tag-matching.md), part of
 * uct_dcx_counters_t */
typedef struct uct_dcx_tm_stats {
    uint64_t posted;      /* receives added to the device list */
    uint64_t matched;     /* matched by the device (expected) */
    uint64_t unexp_eager; /* unexpected eager messages */
    uint64_t unexp_rndv;  /* unexpected rendezvous requests */
    uint64_t rndv_hw;     /* rendezvous completed by the device */
    uint64_t rndv_sw;     /* rendezvous completed by software */
    uint64_t syncs;       /* SYNC operations posted */
    uint64_t cancels;     /* receives cancelled */
} uct_dcx_tm_stats_t;

/* Per-interface counters of the arm's looks (dcx_event.c), part of
 * uct_dcx_counters_t */
typedef struct uct_dcx_arm_stats {
    uint64_t looks; /* arms that looked at the CQs for up to ARM_POLL */
    uint64_t found; /* looks that found work before the time ran out */
} uct_dcx_arm_stats_t;

/* Every counter of an interface, 64-bit each (dcx_stats.c): in the
 * interface, or, with UCX_DCX_STATS_DIR, in a file mapped shared that
 * contrib/dcx-stat prints while the job runs */
typedef struct uct_dcx_counters {
    dcx_dci_stats_t dci;
    dcx_fc_stats_t fc;
    uct_dcx_tm_stats_t tm;
    uct_dcx_arm_stats_t arm;
} uct_dcx_counters_t;

/* Bytes of a rendezvous header carried in the TMH's reserved field */
#define UCT_DCX_TM_TMH_PRIV 2u

/* A rendezvous sent by uct_ep_tag_rndv_zcopy: done when its FIN comes */
#define UCT_DCX_TM_RNDV_OPS 1024

typedef struct uct_dcx_tm_rndv_op {
    uct_completion_t *comp;
    uct_dcx_ep_t *ep; /* NULL: free */
    uint16_t gen;     /* app_ctx = gen << 16 | index */
    uint16_t next_free;
    uint16_t skey; /* strided key the peer reads through */
} uct_dcx_tm_rndv_op_t;

typedef struct uct_dcx_tm {
    uct_dcx_tm_slot_t *slots;
    uint32_t num_slots; /* device list size */
    uint32_t free_head;
    uint32_t live;     /* receives posted, not ended nor forced out */
    uint32_t max_live; /* tag.recv.max_outstanding (uct_dcx_tm_spare) */
    uint32_t ops_out;  /* list operations in flight */
    uint32_t max_ops;
    uint16_t unexp_cnt;            /* unexpected handled, 16 bit */
    uint16_t unexp_sent;           /* unexp_cnt the device last got */
    uint8_t sync_due;              /* a completion asked for a SYNC */
    khash_t(uct_dcx_tm_bufs) bufs; /* buffers of posted receives */
    uct_tag_unexp_eager_cb_t eager_cb;
    void *eager_arg;
    uct_tag_unexp_rndv_cb_t rndv_cb;
    void *rndv_arg;
    uct_recv_desc_t release_desc;
    uct_dcx_tm_rndv_op_t *rndv_ops; /* [UCT_DCX_TM_RNDV_OPS] */
    uint16_t rndv_free;
    unsigned rndv_max_hdr;
    size_t min_recv; /* tag.recv.min_recv (uct_dcx_tm_min_recv) */
} uct_dcx_tm_t;


/* The receive side of an interface (dcx_rx.c) */
typedef struct uct_dcx_rx {
    unsigned posted;
    unsigned target;    /* posted goal: grows to queue_len on demand */
    unsigned repost;    /* reposted once this many are missing
                                (batches) */
    unsigned refill_at; /* target - repost: a progress call that finds
                           posted at or below it reposts */
    uint64_t reposts;   /* dcx_rx_stats_t */
    uint64_t reposted;
    unsigned tmh_len;      /* TM SRQ: TMH before wire */
    unsigned queue_len;    /* RX_QUEUE_LEN */
    size_t headroom;       /* the user's, before the AM byte */
    size_t payload_offset; /* elem -> wire data */
    /* AMs may be lent where the device received them (no AM alignment
     * was asked for: the device's place is only 8-byte aligned) */
    int in_place;
} uct_dcx_rx_t;

/* Flow control of an interface's endpoints (dcx_fc.c) */
typedef struct uct_dcx_fc {
    int32_t wnd;              /* credits of a new ep (FC_WND) */
    int32_t thresh;           /* credits left when an ep asks for more */
    ucs_list_link_t waiters;  /* eps waiting for a grant */
    ucs_time_t req_timeout;   /* resend credit requests */
    ucs_time_t next_check;    /* when the resend timer looks again */
    uct_worker_cb_id_t cb_id; /* resend timer, while waiters */
} uct_dcx_fc_t;


/* The DCI pool of an interface, owned by dcx_dci.c (policies: dcx_dci_*.c) */
typedef struct uct_dcx_dci_pool {
    /* dcis[0..num-1] for data, dcis[ctl] (= num) for control, and under
     * hybrid dcis[shared] (= num + 1).  The control DCI is created at open,
     * a data DCI when first needed (qp NULL until then), and destroyed again
     * after idle_timeout unused (dcs policies) */
    uct_dcx_dci_t *dcis;
    uint16_t num;
    uint16_t ctl;
    uint16_t shared;    /* hybrid: the DCI shared by the eps the pool
                                 has none for; UCT_DCX_DCI_NONE under other
                                 policies (dcx_dci_hybrid.c) */
    uint16_t total;     /* entries of dcis[]: data, control and the
                                 shared DCI if any */
    uint8_t spill;      /* hybrid: eps send on the shared DCI, counted
                                 as one in waiters */
    uint16_t created;   /* data DCIs that exist */
    uint16_t limit;     /* may grow to: num, less once the device
                                 refused one */
    dcx_qp_attr_t attr; /* what every DCI is created with */
    /* streams policy: dcis[i] is stream i of this one DCI, which exists
     * while stream_refs of them are set up (dcx_dci_qp.c) */
    dcx_qp_t *stream_qp;
    unsigned stream_refs;
    ucs_time_t idle_timeout;  /* UCS_TIME_INFINITY: never shrinks */
    ucs_time_t shrink_next;   /* idle DCIs looked for again then */
    unsigned check_countdown; /* send completion batches before the pool
                                 is looked at */
    uint16_t *free;           /* stack of free DCIs (dcs) */
    uint16_t free_top;
    unsigned waiters;        /* eps refused a DCI (+ spill) */
    unsigned kept;           /* DCIs flagged KEPT */
    ucs_time_t wait_mark;    /* waiters last changed then */
    uint16_t sq_len;         /* WRs per DCI */
    uint16_t sig_period;     /* signal every this many WRs now: 1 while
                                 eps wait for a DCI (dcs policies) */
    uint16_t sig_period_cfg; /* ... while none waits */
    uint32_t ring_mask;      /* wr_ep ring size - 1 */
    size_t log_stride;       /* bytes per WR log entry */
    void *wr_replay;         /* one log entry: replay copy */
    /* deregistrations held back for orphans (dcx_dci_comp.c) */
    uct_dcx_md_dereg_cb_t keep_cb;
} uct_dcx_dci_pool_t;


/* An interface's arms (dcx_event.c): before arming its CQs to sleep, an
 * arm looks at them for up to 'poll' (the answer of a peer that is awake
 * comes sooner than a wake-up would), counted from the first arm since the
 * last progress call that found completions, while looks find something */
typedef struct uct_dcx_arm {
    ucs_time_t poll;    /* 0: arm at once (or the device cannot look) */
    ucs_time_t since;   /* start of the current run of arms */
    unsigned long seen; /* iface->progressed at the last arm */
    unsigned misses;    /* looks in a row that found nothing */
    unsigned skipped;   /* arms that did not look since the last look */
    int hit;            /* the last look found work (BUSY) */
} uct_dcx_arm_t;

struct uct_dcx_iface {
    uct_base_iface_t super;
    dcx_dev_t *dev;
    dcx_pd_t *pd;
    const dcx_dev_caps_t *caps;
    dcx_comp_channel_t *channel; /* CQ events; NULL: none */
    dcx_cq_t *tx_cq;
    dcx_cq_t *rx_cq;
    unsigned long progressed; /* completions taken by progress calls */
    uct_dcx_arm_t arm;        /* dcx_event.c */
    dcx_srq_t *srq;
    dcx_qp_t *dct;
    const uct_dcx_policy_ops_t *policy;
    uct_dcx_counters_t *cnt; /* &own_cnt, or in the counters file */
    void *cnt_file;          /* the file mapped, or NULL (dcx_stats.c) */
    uct_dcx_counters_t own_cnt;

    uct_dcx_dci_pool_t pool; /* the DCI pool (dcx_dci.c) */

    /* An endpoint failed: uct_dcx_ep_handle_failure (dcx_ep.c), through
     * which the objects the endpoints use (DCI completions, invalidation)
     * report it to them without calling up into their file */
    void (*ep_failed)(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep,
                      ucs_status_t status, dcx_wc_status_t wc_status);

    ucs_arbiter_t arbiter;     /* eps with pending requests */
    uct_dcx_ep_t *dispatch_ep; /* ep whose request runs now */
    unsigned invalidated;      /* eps invalidated, failure
                                                 not yet reported */

    ucs_mpool_t tx_mp;         /* uct_dcx_send_desc_t */
    ucs_mpool_t op_mp;         /* bare uct_dcx_op_t */
    ucs_mpool_t rx_mp;         /* receive buffers */
    ucs_mpool_t tag_tx_mp;     /* TM: tag_eager_bcopy's, rx_seg_size each */
    ucs_mpool_t *tag_bcopy_mp; /* tag_tx_mp, or tx_mp without TM */
    ucs_list_link_t chunks;    /* registered mpool chunks */

    dcx_mr_t *scratch_mr; /* discarded atomic results */
    uint64_t *scratch;
    /* READs within the call land here for get_bcopy's unpack (seg_size
     * bytes; NULL without uct_dcx_ep_get_bcopy_now) */
    void *now_buf;

    uct_dcx_rx_t rx; /* receive side (dcx_rx.c) */
    uct_dcx_tm_t tm; /* tag matching (dcx_tag.c), when rx.tmh_len != 0 */
    uct_recv_desc_t release_desc;

    uct_dcx_fc_t fc;          /* flow control (dcx_fc.c) */
    ucs_queue_head_t grant_q; /* grants waiting for the ctl DCI
                                 (dcx_ctl.c) */

    /* endpoints */
    khash_t(uct_dcx_eps) eps;
    uint64_t next_ep_id; /* ext ids */
    uint32_t next_ep_seq;
    unsigned num_eps;

    /* peers (address handles), and this iface's own */
    uct_dcx_peer_t *peers;
    unsigned num_peers;
    unsigned max_peers;
    dcx_ah_t *self_ah;

    /* strided iov entries: key pool and layout cache (dcx_strided.c) */
    uct_dcx_strided_t strided;

    struct {
        size_t seg_size;
        size_t rx_seg_size; /* receive buffer payload: seg_size, or more
                               on a TM SRQ (the largest eager message) */
        unsigned max_inline;
        /* put_short's largest: max_inline, or where the device writes
         * within the call (uct_dcx_ep_put_short_now) seg_size */
        unsigned max_put_short;
        unsigned max_iov;
        unsigned max_sge; /* per WR, of every DCI */
        unsigned quota;
        uint64_t dc_key;
        uint8_t timeout;
        uint8_t retry_count;
        uint8_t rnr_retry;
        uint8_t rnr_timer;
        uint8_t port_len;
        uint8_t port[DCX_DEV_ADDR_MAX];
        uint32_t dctn;
        uint32_t atomic32_post, atomic32_fetch;
        uint32_t atomic64_post, atomic64_fetch;
    } config;
};


/* A grant waiting to go out */
typedef struct uct_dcx_grant {
    ucs_queue_elem_t queue;
    uct_dcx_op_t op; /* an inline grant in flight: its own op
                                     (uct_dcx_iface_send_grants) */
    dcx_ah_t *ah;
    uint32_t dctn;
    uint16_t credits;
    uint8_t seq;
    uint8_t tmh_len;  /* the requester has a TM SRQ: 16 */
    uint8_t fin;      /* not a grant: a rendezvous FIN */
    uint32_t app_ctx; /* FIN: the sender's operation */
    uint64_t ep_id;   /* FIN: the tag */
} uct_dcx_grant_t;


/* dcx_config.c (the strict parsers are declared in dcx_md.h) */
ucs_status_t uct_dcx_iface_check_config(const uct_dcx_iface_config_t *config,
                                        const dcx_dev_caps_t *caps,
                                        const char *dev);
uint8_t uct_dcx_timeout_exp_of(double seconds);
/* DCIs an interface may have: data, control, and hybrid's shared one */
unsigned uct_dcx_config_dci_total(const uct_dcx_iface_config_t *config);
uint8_t uct_dcx_rnr_timer_of(double seconds);

/* dcx_iface.c */
extern uct_iface_ops_t uct_dcx_iface_ops;

/* dcx_peer.c: peer ports, side structures of endpoints, failure status */
void uct_dcx_iface_peers_init(uct_dcx_iface_t *iface);
void uct_dcx_iface_peers_cleanup(uct_dcx_iface_t *iface);
ucs_status_t uct_dcx_iface_peer_ah(uct_dcx_iface_t *iface, const uint8_t *addr,
                                   size_t len, dcx_ah_t **ah_p);
ucs_status_t uct_dcx_ep_ext_get(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep);
void uct_dcx_ep_ext_release(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep);
/* The status an operation (and its endpoint) fails with for a work
 * completion status */
ucs_status_t uct_dcx_status(dcx_wc_status_t status);

/* dcx_event.c */
ucs_status_t uct_dcx_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p);
ucs_status_t uct_dcx_iface_event_arm(uct_iface_h tl_iface, unsigned events);
void uct_dcx_iface_arm_init(uct_dcx_iface_t *iface,
                            const uct_dcx_iface_config_t *config);

/* dcx_ctl.c: control messages (send side) */
ucs_status_t uct_dcx_dci_post_ctl(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                                  uct_dcx_ep_t *ep, const dcx_dc_dest_t *dest,
                                  uint8_t type, const uct_dcx_ctl_msg_t *msg,
                                  size_t msg_len, unsigned tmh_len,
                                  uct_completion_t *comp);
/* Posts a credit request of ep on its DCI, which has a free slot */
ucs_status_t uct_dcx_ep_fc_post_req(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep,
                                    uint8_t seq);
void uct_dcx_iface_queue_grant(uct_dcx_iface_t *iface, dcx_ah_t *ah,
                               const uct_dcx_ctl_msg_t *msg);
void uct_dcx_iface_send_grants(uct_dcx_iface_t *iface);
int uct_dcx_iface_ctl_busy(uct_dcx_iface_t *iface);

/* dcx_rx.c */
void uct_dcx_iface_rx_init(uct_dcx_iface_t *iface,
                           const uct_dcx_iface_config_t *cfg);
unsigned uct_dcx_iface_progress(uct_iface_h tl_iface);
void uct_dcx_iface_progress_choose(uct_dcx_iface_t *iface);
unsigned uct_dcx_iface_post_recv(uct_dcx_iface_t *iface);
void uct_dcx_iface_rx_grow(uct_dcx_iface_t *iface);
void uct_dcx_iface_release_desc(uct_recv_desc_t *self, void *desc);
void uct_dcx_iface_rx_am(uct_dcx_iface_t *iface, void *elem, uint8_t *wire,
                         unsigned length);
void uct_dcx_iface_rx_am_lent(uct_dcx_iface_t *iface, void *elem,
                              const uint8_t *wire, unsigned length);
void uct_dcx_iface_rx_error(uct_dcx_iface_t *iface, const dcx_wc_t *wc);

/* dcx_tag.c */
unsigned uct_dcx_iface_tag_progress(uct_iface_h tl_iface);
unsigned uct_dcx_iface_tag_progress_look(uct_iface_h tl_iface);
ucs_status_t uct_dcx_iface_mpools_init(uct_dcx_iface_t *iface,
                                       const uct_iface_params_t *params,
                                       const uct_dcx_iface_config_t *cfg);
int uct_dcx_iface_tm_wanted(uct_dcx_iface_t *iface,
                            const uct_dcx_iface_config_t *cfg);
unsigned uct_dcx_iface_tm_rx_cqe(uct_dcx_iface_t *iface, int tm,
                                 unsigned rx_cqe);
ucs_status_t uct_dcx_iface_srq_create(uct_dcx_iface_t *iface,
                                      const uct_dcx_iface_config_t *cfg,
                                      int tm);
int uct_dcx_iface_tag_params(uct_dcx_iface_t *iface,
                             const uct_iface_params_t *params,
                             const uct_dcx_iface_config_t *cfg);
ucs_status_t uct_dcx_iface_tag_init(uct_dcx_iface_t *iface,
                                    const uct_dcx_iface_config_t *config);
void uct_dcx_iface_tag_cleanup(uct_dcx_iface_t *iface);
void uct_dcx_iface_tag_query(uct_dcx_iface_t *iface, uct_iface_attr_t *attr);

/* Where offload pays, from the device's model (dcx_tm_model.c): the receive
 * buffer size of a TM SRQ, and the smallest receive worth posting to the
 * device when it does not exceed eager_max */
size_t uct_dcx_tm_seg_size(const uct_dcx_iface_config_t *config,
                           const dcx_dev_caps_t *caps);
size_t uct_dcx_tm_min_recv(const uct_dcx_iface_config_t *config,
                           const dcx_dev_caps_t *caps, size_t eager_max);
ucs_status_t uct_dcx_ep_tag_eager_short(uct_ep_h tl_ep, uct_tag_t tag,
                                        const void *data, size_t length);
ssize_t uct_dcx_ep_tag_eager_bcopy(uct_ep_h tl_ep, uct_tag_t tag, uint64_t imm,
                                   uct_pack_callback_t pack_cb, void *arg,
                                   unsigned flags);
ucs_status_t uct_dcx_ep_tag_eager_zcopy(uct_ep_h tl_ep, uct_tag_t tag,
                                        uint64_t imm, const uct_iov_t *iov,
                                        size_t iovcnt, unsigned flags,
                                        uct_completion_t *comp);
ucs_status_ptr_t uct_dcx_ep_tag_rndv_zcopy(uct_ep_h tl_ep, uct_tag_t tag,
                                           const void *header,
                                           unsigned header_length,
                                           const uct_iov_t *iov, size_t iovcnt,
                                           unsigned flags,
                                           uct_completion_t *comp);
ucs_status_t uct_dcx_ep_tag_rndv_cancel(uct_ep_h tl_ep, void *op);
void uct_dcx_tag_ep_gone(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep,
                         ucs_status_t status);
void uct_dcx_tag_rx_fin(uct_dcx_iface_t *iface, const uint8_t *tmh);
ucs_status_t uct_dcx_ep_tag_rndv_request(uct_ep_h tl_ep, uct_tag_t tag,
                                         const void *header,
                                         unsigned header_length,
                                         unsigned flags);
ucs_status_t uct_dcx_iface_tag_recv_zcopy(uct_iface_h tl_iface, uct_tag_t tag,
                                          uct_tag_t tag_mask,
                                          const uct_iov_t *iov, size_t iovcnt,
                                          uct_tag_context_t *ctx);
ucs_status_t uct_dcx_iface_tag_recv_cancel(uct_iface_h tl_iface,
                                           uct_tag_context_t *ctx, int force);

/* dcx_strided.c */
ucs_status_t uct_dcx_strided_init(uct_dcx_iface_t *iface,
                                  const uct_dcx_iface_config_t *config);
void uct_dcx_strided_cleanup(uct_dcx_iface_t *iface);
ucs_status_t uct_dcx_strided_iov(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep,
                                 const char *name, const uct_iov_t *iov,
                                 size_t iovcnt, unsigned flags, dcx_sge_t *sge,
                                 unsigned max_sge, unsigned *num_sge_p,
                                 size_t *length_p, uct_dcx_strided_use_t *use);
void uct_dcx_strided_commit(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                            uct_dcx_strided_use_t *use);
void uct_dcx_strided_abort(uct_dcx_iface_t *iface, uct_dcx_strided_use_t *use);
uint16_t uct_dcx_strided_take(uct_dcx_iface_t *iface,
                              uct_dcx_strided_use_t *use);
void uct_dcx_strided_key_put(uct_dcx_iface_t *iface, uint16_t idx);
uint32_t uct_dcx_strided_key_rkey(uct_dcx_iface_t *iface, uint16_t idx);
uint16_t uct_dcx_strided_use_key(const uct_dcx_strided_use_t *use);

/* dcx_dci_hybrid.c: the hybrid policy (the policy table names them) */
void uct_dcx_hybrid_ep_init(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep);
ucs_status_t uct_dcx_hybrid_dci_get(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep);
ucs_status_t uct_dcx_hybrid_quota_out(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep);
void uct_dcx_hybrid_dci_idle(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci);
void uct_dcx_hybrid_ep_detach(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep);

/* dcx_dci.c: the pool, its policies, the WR log */
ucs_status_t uct_dcx_dci_pool_init(uct_dcx_iface_t *iface,
                                   const uct_dcx_iface_config_t *config);
void uct_dcx_dci_pool_cleanup(uct_dcx_iface_t *iface);
/* dcs policies, for hybrid (dcx_dci_hybrid.c): a DCI ep may be lent now
 * without waiting (free, kept idle by another ep, or new), NULL if none;
 * lending it to ep; ep refused, waiting (UCS_ERR_NO_RESOURCE) */
uct_dcx_dci_t *uct_dcx_dcs_dci_take(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep);
void uct_dcx_dcs_dci_assign(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep,
                            uct_dcx_dci_t *dci);
ucs_status_t uct_dcx_dcs_dci_refuse(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep);
void uct_dcx_dcs_ep_detach(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep);
void uct_dcx_dcs_dci_idle(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci);
/* hybrid: whether eps send on the shared DCI.  While they do, the pool
 * behaves as when eps wait for a DCI (lent DCIs signal every WR and go
 * back to the pool when drained), without counting it as waiting. */
void uct_dcx_dci_set_spill(uct_dcx_iface_t *iface, int spill);
/* hybrid: the shared DCI's queue pair and rings, on first need */
ucs_status_t uct_dcx_dci_create_shared(uct_dcx_iface_t *iface);
void uct_dcx_dci_detach_ep(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                           uct_dcx_ep_t *ep);
void uct_dcx_ep_put_idle_dci(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep);
void uct_dcx_dci_drain(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci);
/* Destroys the DCIs unused for DCI_IDLE_TIMEOUT, if it is time to look */
void uct_dcx_dci_pool_check(uct_dcx_iface_t *iface);
/* The pool's gauges (sizes, waiters, free DCIs) into stats */
void uct_dcx_dci_gauges(uct_dcx_iface_t *iface, dcx_dci_stats_t *stats);
/* A signalled no-op on dci (an RDMA WRITE of no bytes, to dest or, when
 * NULL, our own DCT), for ep (may be NULL); UCS_ERR_NO_RESOURCE if dci has
 * no free slot */
ucs_status_t uct_dcx_dci_post_nop(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                                  uct_dcx_ep_t *ep, const dcx_dc_dest_t *dest);
void uct_dcx_dci_tail_slow(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci);
void uct_dcx_iface_tx_starved(uct_dcx_iface_t *iface);
void uct_dcx_op_release_desc(uct_dcx_iface_t *iface, uct_dcx_op_t *op,
                             ucs_status_t status);
void uct_dcx_dci_log_wr(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci, uint64_t sn,
                        const dcx_send_wr_t *wr);
void uct_dcx_op_put(uct_dcx_iface_t *iface, uct_dcx_op_t *op,
                    ucs_status_t status);

/* A data DCI, on first need */
ucs_status_t uct_dcx_dci_create(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci);

/* dcx_dci_streams.c: the streams policy */
void uct_dcx_streams_ep_init(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep);
ucs_status_t uct_dcx_streams_dci_get(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep);
void uct_dcx_streams_dci_idle(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci);
void uct_dcx_streams_ep_detach(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep);

/* dcx_dci_qp.c: the queue pair behind a DCI */
/* What a data DCI of the pool is created with (after the control DCI) */
void uct_dcx_streams_attr(uct_dcx_iface_t *iface,
                          const uct_dcx_iface_config_t *config);
/* The queue pair of data DCI dci: its own, or the streams' one (shared) */
int uct_dcx_dci_qp_create(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci);
void uct_dcx_dci_qp_destroy(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci);
/* After an error completion on dci: recovers it (its stream only, when it
 * is a stream whose DCI is still up; operations of other streams that a
 * whole-DCI recovery ends go to cancelled); 0 or an errno */
int uct_dcx_dci_restart(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                        ucs_queue_head_t *cancelled);

/* dcx_dci_comp.c: send completions, DCI errors and recovery, cancel (a
 * completion's common path is inline in the progress, dcx.inl, which
 * calls these for the rest): the operations of dci up to sn fired; an
 * error completion of WR sn; a DCI all of whose WRs completed given back
 * to its policy or its cancel finished */
void uct_dcx_dci_fire_ops(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                          uint64_t sn, ucs_status_t status);
void uct_dcx_dci_handle_error(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                              uint64_t sn, const dcx_wc_t *wc);
void uct_dcx_dci_drained_slow(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci);
void uct_dcx_dci_set_error(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci);
/* the pool holds back deregistrations its orphans still need, from just
 * after its creation to just before its cleanup (its DCIs going end the
 * orphans, and so the deregistrations held) */
void uct_dcx_dci_keep_init(uct_dcx_iface_t *iface);
void uct_dcx_dci_keep_cleanup(uct_dcx_iface_t *iface);
/* The last WR of ep in flight on dci that reads or writes the user's memory
 * (zero-copy, get), 0 if none */
uint64_t uct_dcx_dci_ep_user_mem_sn(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                                    uct_dcx_ep_t *ep);
int uct_dcx_dci_take_ep_comps(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                              uct_dcx_ep_t *ep, ucs_queue_head_t *comps);
ucs_status_t uct_dcx_comps_push(uct_dcx_iface_t *iface, ucs_queue_head_t *comps,
                                uct_completion_t *comp);
void uct_dcx_comps_complete(ucs_queue_head_t *comps, ucs_status_t status);
void uct_dcx_ep_complete_ops(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep,
                             ucs_status_t status);
ucs_status_t uct_dcx_dci_add_comp(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                                  uint64_t sn, uct_completion_t *comp);

/* dcx_ep.c */
UCS_CLASS_DECLARE(uct_dcx_ep_t, const uct_ep_params_t *);
UCS_CLASS_DECLARE_NEW_FUNC(uct_dcx_ep_t, uct_ep_t, const uct_ep_params_t *);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_dcx_ep_t, uct_ep_t);

ucs_status_t uct_dcx_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t hdr,
                                 const void *buffer, unsigned length);
ucs_status_t uct_dcx_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                     const uct_iov_t *iov, size_t iovcnt);
ssize_t uct_dcx_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                            uct_pack_callback_t pack_cb, void *arg,
                            unsigned flags);
ucs_status_t uct_dcx_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id, const void *header,
                                 unsigned header_length, const uct_iov_t *iov,
                                 size_t iovcnt, unsigned flags,
                                 uct_completion_t *comp);
ucs_status_t uct_dcx_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                  unsigned length, uint64_t remote_addr,
                                  uct_rkey_t rkey);
ucs_status_t uct_dcx_ep_put_short_now(uct_ep_h tl_ep, const void *buffer,
                                      unsigned length, uint64_t remote_addr,
                                      uct_rkey_t rkey);
ssize_t uct_dcx_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                             void *arg, uint64_t remote_addr, uct_rkey_t rkey);
ucs_status_t uct_dcx_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                  size_t iovcnt, uint64_t remote_addr,
                                  uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_dcx_ep_get_short(uct_ep_h tl_ep, void *buffer, unsigned length,
                                  uint64_t remote_addr, uct_rkey_t rkey);
ucs_status_t uct_dcx_ep_get_bcopy(uct_ep_h tl_ep, uct_unpack_callback_t cb,
                                  void *arg, size_t length,
                                  uint64_t remote_addr, uct_rkey_t rkey,
                                  uct_completion_t *comp);
ssize_t uct_dcx_ep_put_bcopy_now(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                                 void *arg, uint64_t remote_addr,
                                 uct_rkey_t rkey);
ucs_status_t uct_dcx_ep_get_bcopy_now(uct_ep_h tl_ep, uct_unpack_callback_t cb,
                                      void *arg, size_t length,
                                      uint64_t remote_addr, uct_rkey_t rkey,
                                      uct_completion_t *comp);
ucs_status_t uct_dcx_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                  size_t iovcnt, uint64_t remote_addr,
                                  uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_dcx_ep_atomic32_post(uct_ep_h tl_ep, unsigned opcode,
                                      uint32_t value, uint64_t remote_addr,
                                      uct_rkey_t rkey);
ucs_status_t uct_dcx_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode,
                                      uint64_t value, uint64_t remote_addr,
                                      uct_rkey_t rkey);
ucs_status_t uct_dcx_ep_atomic32_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                       uint32_t value, uint32_t *result,
                                       uint64_t remote_addr, uct_rkey_t rkey,
                                       uct_completion_t *comp);
ucs_status_t uct_dcx_ep_atomic64_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                       uint64_t value, uint64_t *result,
                                       uint64_t remote_addr, uct_rkey_t rkey,
                                       uct_completion_t *comp);
ucs_status_t uct_dcx_ep_atomic_cswap32(uct_ep_h tl_ep, uint32_t compare,
                                       uint32_t swap, uint64_t remote_addr,
                                       uct_rkey_t rkey, uint32_t *result,
                                       uct_completion_t *comp);
ucs_status_t uct_dcx_ep_atomic_cswap64(uct_ep_h tl_ep, uint64_t compare,
                                       uint64_t swap, uint64_t remote_addr,
                                       uct_rkey_t rkey, uint64_t *result,
                                       uct_completion_t *comp);
/* The same, where the device may execute an atomic within the call
 * (DCX_CAP_POST_NOW; chosen at interface creation) */
ucs_status_t uct_dcx_ep_atomic32_post_now(uct_ep_h tl_ep, unsigned opcode,
                                          uint32_t value, uint64_t remote_addr,
                                          uct_rkey_t rkey);
ucs_status_t uct_dcx_ep_atomic64_post_now(uct_ep_h tl_ep, unsigned opcode,
                                          uint64_t value, uint64_t remote_addr,
                                          uct_rkey_t rkey);
ucs_status_t uct_dcx_ep_atomic32_fetch_now(uct_ep_h tl_ep,
                                           uct_atomic_op_t opcode,
                                           uint32_t value, uint32_t *result,
                                           uint64_t remote_addr,
                                           uct_rkey_t rkey,
                                           uct_completion_t *comp);
ucs_status_t uct_dcx_ep_atomic64_fetch_now(uct_ep_h tl_ep,
                                           uct_atomic_op_t opcode,
                                           uint64_t value, uint64_t *result,
                                           uint64_t remote_addr,
                                           uct_rkey_t rkey,
                                           uct_completion_t *comp);
ucs_status_t uct_dcx_ep_atomic_cswap32_now(uct_ep_h tl_ep, uint32_t compare,
                                           uint32_t swap, uint64_t remote_addr,
                                           uct_rkey_t rkey, uint32_t *result,
                                           uct_completion_t *comp);
ucs_status_t uct_dcx_ep_atomic_cswap64_now(uct_ep_h tl_ep, uint64_t compare,
                                           uint64_t swap, uint64_t remote_addr,
                                           uct_rkey_t rkey, uint64_t *result,
                                           uct_completion_t *comp);
ucs_status_t uct_dcx_ep_flush(uct_ep_h tl_ep, unsigned flags,
                              uct_completion_t *comp);
ucs_status_t uct_dcx_ep_flush_cancel(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep,
                                     uct_completion_t *comp);
ucs_status_t uct_dcx_ep_fence(uct_ep_h tl_ep, unsigned flags);
ucs_status_t uct_dcx_ep_check(uct_ep_h tl_ep, unsigned flags,
                              uct_completion_t *comp);
/* iface->ep_failed: ep failed with status (the work completion's
 * wc_status); reported to the error handler, which may destroy ep */
void uct_dcx_ep_handle_failure(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep,
                               ucs_status_t status, dcx_wc_status_t wc_status);

/* dcx_pending.c */
void uct_dcx_ep_pending_init(uct_dcx_ep_t *ep);
void uct_dcx_ep_pending_cleanup(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep);
ucs_status_t uct_dcx_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                    unsigned flags);
void uct_dcx_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                              void *arg);
ucs_arbiter_cb_result_t uct_dcx_ep_dispatch_cb(ucs_arbiter_t *arbiter,
                                               ucs_arbiter_group_t *group,
                                               ucs_arbiter_elem_t *elem,
                                               void *arg);


/* dcx_stats.c */
/* The counters: in the interface, moved into a live file in
 * dir (UCX_DCX_STATS_DIR) by open, back by close */
void uct_dcx_stats_init(uct_dcx_iface_t *iface);
void uct_dcx_stats_open(uct_dcx_iface_t *iface, const char *dir);
void uct_dcx_stats_close(uct_dcx_iface_t *iface);

/* dcx_fc.c: flow control, send resources (uct_dcx_ep_tx_slow, dcx.inl) */
void uct_dcx_iface_fc_init(uct_dcx_iface_t *iface,
                           const uct_dcx_iface_config_t *config);
void uct_dcx_iface_fc_cleanup(uct_dcx_iface_t *iface);
ucs_status_t uct_dcx_ep_fc_request(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep);
void uct_dcx_ep_fc_grant(uct_dcx_iface_t *iface, uint64_t ep_id, uint8_t seq,
                         unsigned credits);
void uct_dcx_ep_fc_forget(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep);
void uct_dcx_ep_fc_release_held(uct_dcx_ep_t *ep);

/* dcx_ep_invalidate.c */
ucs_status_t uct_dcx_ep_invalidate(uct_ep_h tl_ep, unsigned flags);
void uct_dcx_ep_invalidate_cleanup(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep);
void uct_dcx_ep_invalidate_fail_taken(uct_dcx_ep_t *ep, ucs_status_t status);

/* What uct_dcx_ep_tx_begin() answers for an endpoint invalidated and not yet
 * reported: the operation is taken as a queue pair in error takes a WR
 * (posted, never executed, flushed with an error), by
 * uct_dcx_ep_tx_refused() and uct_dcx_ep_bcopy_refused().  Never returned
 * to the user: every caller of uct_dcx_ep_tx_begin() hands its refusal to
 * one of them. */
#define UCT_DCX_TX_SINK ((ucs_status_t)(UCS_ERR_LAST + 1))

ucs_status_t uct_dcx_ep_tx_sink(uct_dcx_ep_t *ep, uct_completion_t *comp,
                                ucs_status_t taken);
ssize_t uct_dcx_ep_bcopy_sink(uct_dcx_iface_t *iface,
                              uct_pack_callback_t pack_cb, void *arg);

#endif /* UCT_DCX_H_ */
