/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx device layer: a narrow, verbs-shaped interface between the dcx UCX
 * transport and a NIC backend: a driver over rdma-core, or a model of the
 * NIC in software (src/ names the backends; this layer names none).
 *
 * Objects mirror the verbs ones: device, PD, MR, CQ, SRQ, QP (DCI or DCT),
 * AH.  Control-path calls go through the device's ops table; fast-path calls
 * (post send, post receive, poll) go through function pointers stored in the
 * object itself, chosen by the backend when the object is created and swapped
 * by the backend on state changes (an errored DCI gets a "flush" post), so
 * the caller never branches on backend or state.
 *
 * Conventions:
 *  - Functions returning int return 0 on success or a positive errno value.
 *    Every failure is logged once by the backend through dcx_log(), naming
 *    the device, the object and the reason.
 *  - Object constructors return 0 and write the object through an out
 *    parameter.
 *  - Numbers and keys are host order.
 *
 * Tag matching (docs/device-semantics.md section 9): an SRQ of type
 * DCX_SRQ_TM owns a tag list; list operations go through srq->tm_post
 * (dcx_srq_tm_post), completions carry the DCX_WC_TM_* opcodes and flags
 * and the tm_* fields of dcx_wc_t, and the wire headers are dcx_tmh_t,
 * dcx_rvh_t and dcx_ravh_t (dcx_tm_wire.h).
 *
 * Strided memory keys (DCX_CAP_MKEY_STRIDE, dcx_mkey_t): an mkey is set by a
 * work request (DCX_WR_MKEY_*) posted on a QP of the type the device names
 * (caps.mkey_qp_type): a NIC that builds them on RC QPs only routes it to a
 * loopback RC QP.
 */
#ifndef DCX_DEV_H_
#define DCX_DEV_H_

#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dcx_tm_wire.h"
#include "dcx_wc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dcx_dev dcx_dev_t;
typedef struct dcx_dev_ops dcx_dev_ops_t;
typedef struct dcx_pd dcx_pd_t;
typedef struct dcx_mr dcx_mr_t;
typedef struct dcx_cq dcx_cq_t;
typedef struct dcx_srq dcx_srq_t;
typedef struct dcx_qp dcx_qp_t;
typedef struct dcx_ah dcx_ah_t;
typedef struct dcx_mkey dcx_mkey_t;
typedef struct dcx_sge dcx_sge_t;

/* ------------------------------------------------------------------------
 * Logging: the device layer knows nothing of UCX.  The transport installs a
 * handler that forwards to ucs_log; the default handler prints warnings and
 * errors to stderr (level from DCX_LOG_LEVEL: error, warn, info, debug).
 * ------------------------------------------------------------------------ */
typedef enum {
    DCX_LOG_ERROR,
    DCX_LOG_WARN,
    DCX_LOG_INFO,
    DCX_LOG_DEBUG,
    DCX_LOG_TRACE
} dcx_log_level_t;

typedef void (*dcx_log_handler_t)(dcx_log_level_t level, const char *file,
                                  int line, const char *msg);

void dcx_log_set_handler(dcx_log_handler_t handler, dcx_log_level_t max_level);
void dcx_log_impl(dcx_log_level_t level, const char *file, int line,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
extern dcx_log_level_t dcx_log_max_level;

#define dcx_log(_level, ...)                                         \
    do {                                                             \
        if ((_level) <= dcx_log_max_level) {                         \
            dcx_log_impl((_level), __FILE__, __LINE__, __VA_ARGS__); \
        }                                                            \
    } while (0)
#define dcx_error(...) dcx_log(DCX_LOG_ERROR, __VA_ARGS__)
#define dcx_warn(...)  dcx_log(DCX_LOG_WARN, __VA_ARGS__)
#define dcx_info(...)  dcx_log(DCX_LOG_INFO, __VA_ARGS__)
#define dcx_debug(...) dcx_log(DCX_LOG_DEBUG, __VA_ARGS__)
#define dcx_trace(...) dcx_log(DCX_LOG_TRACE, __VA_ARGS__)

/* ------------------------------------------------------------------------
 * Devices and capabilities
 * ------------------------------------------------------------------------ */
#define DCX_DEV_NAME_MAX 64
#define DCX_DEV_ADDR_MAX 32 /* bytes of a port address */

/* Capability flags (dcx_dev_caps_t.flags) */
enum {
    DCX_CAP_DC            = 1u << 0, /* DCI/DCT */
    DCX_CAP_TM            = 1u << 1, /* tag-matching SRQ (DCX_SRQ_TM) */
    DCX_CAP_MKEY_STRIDE   = 1u << 2, /* strided indirect mkeys */
    DCX_CAP_HELPER        = 1u << 3, /* one-sided ops progress without app */
    DCX_CAP_ATOMIC_HOST   = 1u << 4, /* atomics are executed by the target's
                                       CPU with its atomic instructions, so
                                       they are consistent with the CPU's own
                                       atomics (a NIC's are not) */
    DCX_CAP_NO_PIN        = 1u << 5, /* registration does not pin pages: the
                                     * device must hear of unmaps
                                     * (dcx_dev_mem_unmapped) */
    DCX_CAP_CQ_EVENT      = 1u << 6, /* completion channels: CQ events on an
                                       fd (dcx_comp_channel_*) */
    DCX_CAP_SHM_PEERS     = 1u << 7, /* peers map System V segments
                                       registered with the device, so their
                                       one-sided operations into them are
                                       plain copies */
    DCX_CAP_DCI_STREAMS   = 1u << 8, /* DCIs with stream channels (.dci_streams
                                       of dcx_qp_attr_t, qp_stream_reset) */
    DCX_CAP_POST_NOW      = 1u << 9, /* a DCI's post_send may execute a WR
                                       flagged DCX_SEND_NOW within the call
                                       (without it: always EAGAIN) */
    DCX_CAP_RECV_IN_PLACE = 1u << 10 /* DCX_SRQ_F_IN_PLACE, dcx_cq_release */
};

/* Atomic capability flags (dcx_dev_caps_t.atomic_flags); each bit names an
 * opcode/size pair the device executes. */
enum {
    DCX_ATOMIC_FADD64         = 1u << 0,
    DCX_ATOMIC_CSWAP64        = 1u << 1,
    DCX_ATOMIC_MASKED_FADD32  = 1u << 2,
    DCX_ATOMIC_MASKED_FADD64  = 1u << 3,
    DCX_ATOMIC_MASKED_CSWAP32 = 1u << 4,
    DCX_ATOMIC_MASKED_CSWAP64 = 1u << 5
};

typedef struct dcx_dev_caps {
    char name[DCX_DEV_NAME_MAX];
    char fw_ver[32];
    uint32_t flags;        /* DCX_CAP_* */
    uint32_t atomic_flags; /* DCX_ATOMIC_* */
    uint32_t vendor_id;
    uint32_t vendor_part_id;

    uint32_t max_qp_wr; /* send queue depth of one DCI */
    uint32_t max_srq_wr;
    uint32_t max_cqe;
    uint32_t max_sge;       /* per send WR */
    uint32_t max_recv_sge;  /* per SRQ receive */
    uint32_t max_inline;    /* inline bytes per send WR on a DCI */
    uint32_t max_rd_atomic; /* outstanding READ/atomic per DCI */
    uint32_t max_dci;       /* DCIs per device */
    /* DCI streams (valid when flags & DCX_CAP_DCI_STREAMS; 0 otherwise):
     * the largest log2 of the streams of one DCI, and of the errored
     * streams it tolerates */
    uint32_t dci_streams_log_max;
    uint32_t dci_errored_log_max;
    uint32_t max_mr;
    uint64_t max_mr_size;
    uint64_t max_msg_size; /* one message (send, RDMA, read) */
    uint32_t mtu;          /* bytes per packet on the wire */
    uint32_t addr_len;     /* bytes of a port address */

    /* tag matching (valid when flags & DCX_CAP_TM; 0 otherwise) */
    uint32_t tm_max_tags;     /* list entries of one TM SRQ: 2^n - 1 */
    uint32_t tm_max_ops;      /* outstanding list operations */
    uint32_t tm_max_rndv_hdr; /* bytes of a whole rendezvous request */
    uint32_t tm_max_sge;      /* buffers per tagged receive (1) */

    /* strided mkeys (valid when flags & DCX_CAP_MKEY_STRIDE; 0 otherwise) */
    uint32_t mkey_max_entries; /* translation entries of one mkey */
    uint32_t mkey_max_stride;  /* interleaved: bytes_count and
                                      bytes_count + bytes_skip, each */
    uint32_t mkey_qp_type;     /* dcx_qp_type_t taking DCX_WR_MKEY_* */

    /* performance model used by the transport's iface_attr */
    double latency_ns;    /* one-way small-message latency */
    double bandwidth_Bps; /* sustained one-direction bandwidth */
    double overhead_ns;   /* CPU cost of posting one WR */
    /* cost of one memory registration (dcx_mr_reg), for the transport's
     * md_attr: a device model records a range in a table; a NIC pins the
     * pages and writes translation entries */
    double reg_overhead_ns; /* per registration */
    double reg_growth_ns;   /* per byte registered */
    double tm_op_ns;        /* CPU: a tag-list operation, post to poll */
} dcx_dev_caps_t;

/* ------------------------------------------------------------------------
 * Backends and device listing
 *
 * A backend (a directory under src/, one per kind of NIC) is an
 * ops table, dcx_backend_t, that registers itself from a constructor in its
 * own file (DCX_BACKEND_REGISTER); the device layer lists and opens devices
 * through whatever registered, in the backends' order, and names none of
 * them.  A backend's knobs (dcx_param_t: how many devices, their limits)
 * are described by the backend; the transport offers each to its user
 * (UCX_DCX_<name>) and hands the values to dcx_dev_list() in a
 * dcx_dev_config_t.
 * ------------------------------------------------------------------------ */
typedef struct dcx_backend dcx_backend_t;
typedef struct dcx_dev_info dcx_dev_info_t;

/* Value types of a knob, and how a backend's parameter block holds them
 * (dcx_param_t.size bytes at dcx_param_t.offset). */
typedef enum {
    DCX_PARAM_UINT,     /* a count: uint32_t in [min, max] */
    DCX_PARAM_LIMIT,    /* "auto" or a count in [min, max]: uint32_t or
                           uint64_t, 0 = auto (the backend's default) */
    DCX_PARAM_SIZE,     /* "auto" or bytes in [min, max]: uint64_t, 0 = auto */
    DCX_PARAM_TIME,     /* "auto" or microseconds in [min, max]: uint32_t,
                           0 = auto */
    DCX_PARAM_BOOL,     /* y/n: uint32_t 1/0 */
    DCX_PARAM_BOOL_NOT, /* y/n held negated: uint32_t 0/1, so that a zeroed
                           block means "y" */
    DCX_PARAM_STRING    /* const char *, owned by the dcx_dev_config_t */
} dcx_param_type_t;

typedef struct dcx_param {
    const char *name; /* [A-Z0-9_]: UCX_DCX_<name> for UCX */
    /* default as the transport's user writes it: "auto", decimal digits,
     * "y"/"n", or any string for DCX_PARAM_STRING */
    const char *dflt;
    const char *doc; /* help text, lines of at most 79 columns */
    dcx_param_type_t type;
    size_t offset; /* in the backend's parameter block */
    size_t size;   /* bytes there (numbers: 4 or 8) */
    uint64_t min;  /* numbers other than "auto" */
    uint64_t max;
    /* DCX_PARAM_STRING: NULL, or why the value is refused (NULL if not) */
    const char *(*check)(const char *value);
} dcx_param_t;

struct dcx_backend {
    const char *name;          /* e.g. the prefix of its device names */
    int order;                 /* listed before higher orders */
    const dcx_param_t *params; /* its knobs (num_params of them) */
    unsigned num_params;
    size_t params_size; /* bytes of its parameter block */
    /* Writes up to max devices to out (each zeroed first), with the knobs
     * in params (a block of params_size bytes).  Finding no device is not an
     * error; a bad parameter is (EINVAL, logged). */
    int (*list)(const void *params, dcx_dev_info_t *out, unsigned max,
                unsigned *count_p);
    int (*open)(const dcx_dev_info_t *info, dcx_dev_t **dev_p);
};

/* Registers a backend; called from the backend's constructor
 * (DCX_BACKEND_REGISTER), before any listing.  A second backend of the same
 * name, one past DCX_BACKENDS_MAX, or one whose knobs' defaults do not
 * parse is refused with an error line. */
#define DCX_BACKENDS_MAX 8
void dcx_backend_register(const dcx_backend_t *backend);

/* The constructor that registers _backend from its own file.  It runs before
 * the constructors without a priority, so that a transport's constructor
 * finds every backend's knobs (the priority does not order backends
 * among themselves: dcx_backend_t.order does). */
#define DCX_BACKEND_REGISTER(_backend)            \
    __attribute__((constructor(200))) static void \
    dcx_backend_register_ctor(void)               \
    {                                             \
        dcx_backend_register(&(_backend));        \
    }

/* The registered backends in listing order: i = 0, 1, ... until NULL. */
const dcx_backend_t *dcx_backend_at(unsigned i);
/* The registered backend of that name, or NULL. */
const dcx_backend_t *dcx_backend_find(const char *name);

/* Values of every registered backend's knobs, for dcx_dev_list(). */
typedef struct dcx_dev_config dcx_dev_config_t;

/* A configuration with every knob at its default.  prefix (may be NULL) is
 * put before a knob's name in log lines ("UCX_DCX_" for the UCX
 * transport), so that a refused value names the variable the user set. */
int dcx_dev_config_create(const char *prefix, dcx_dev_config_t **config_p);
void dcx_dev_config_destroy(dcx_dev_config_t *config);

/* Sets a knob by name, checked against its description: numbers (booleans
 * 0 or 1; "auto" is not set at all) with dcx_dev_config_set_num, strings
 * (copied) with dcx_dev_config_set_str.  EINVAL with one error line for an
 * unknown name, a value of the other kind, or one out of range; EINVAL for a
 * refused string, or ENOMEM. */
int dcx_dev_config_set_num(dcx_dev_config_t *config, const char *name,
                           uint64_t value);
int dcx_dev_config_set_str(dcx_dev_config_t *config, const char *name,
                           const char *value);

/* The parameter block of one backend within config (the layout its own
 * header gives), for a caller that knows that backend; NULL if no backend of
 * that name registered. */
void *dcx_dev_config_params(dcx_dev_config_t *config, const char *backend);

#define DCX_DEV_INFO_PRIV 192 /* bytes a backend keeps per listed device */

struct dcx_dev_info {
    char name[DCX_DEV_NAME_MAX];
    const dcx_backend_t *backend; /* that listed it and opens it */
    unsigned index;               /* backend-private device index */
    /* what the backend needs to open the device (its knobs' values) */
    union {
        uint64_t align;
        unsigned char bytes[DCX_DEV_INFO_PRIV];
    } priv;
};

/* Lists the usable devices of every backend, in the backends' order, with
 * the knobs in config (NULL: every knob at its default).  No device at all
 * (no RDMA stack, no device model configured) is not an error: *count_p = 0.
 * Free with dcx_dev_list_free. */
int dcx_dev_list(const dcx_dev_config_t *config, dcx_dev_info_t **list_p,
                 unsigned *count_p);
void dcx_dev_list_free(dcx_dev_info_t *list);

/* Opens a listed device through the backend that listed it. */
int dcx_dev_open(const dcx_dev_info_t *info, dcx_dev_t **dev_p);
void dcx_dev_close(dcx_dev_t *dev);

/* ------------------------------------------------------------------------
 * Memory
 * ------------------------------------------------------------------------ */
enum {
    DCX_ACCESS_LOCAL_WRITE   = 1u << 0,
    DCX_ACCESS_REMOTE_WRITE  = 1u << 1,
    DCX_ACCESS_REMOTE_READ   = 1u << 2,
    DCX_ACCESS_REMOTE_ATOMIC = 1u << 3
};

struct dcx_pd {
    dcx_dev_t *dev;
};

struct dcx_mr {
    dcx_pd_t *pd;
    void *addr;
    size_t length;
    uint32_t lkey;
    uint32_t rkey;
    uint32_t access; /* DCX_ACCESS_* */
};

/* Strided (indirect) memory key, docs/device-semantics.md section 10.  Created
 * free (unusable) with room for max_entries translation entries; a
 * DCX_WR_MKEY_INTERLEAVED or DCX_WR_MKEY_LIST work request gives it a
 * layout, DCX_WR_MKEY_INVALIDATE makes it free again.  The key's address
 * space is zero-based: local sges (lkey) and remote addresses (rkey) name
 * offsets in [0, length of the layout).  Every access is checked, for
 * every entry it touches, against the MR the entry's lkey names (present,
 * covering the entry, granting the access) and against the access the
 * layout was configured with: a failure is a local protection error at the
 * user of the lkey, a remote access error at the requester for an rkey. */
struct dcx_mkey {
    dcx_pd_t *pd;
    uint32_t lkey;
    uint32_t rkey;
    uint32_t max_entries; /* actual (the request rounded up) */
};

/* One entry of an interleaved layout (as rdma-core's direct verbs describe
 * one): repetition r of the pattern takes bytes_count bytes at
 * addr + r * (bytes_count + bytes_skip) through lkey (a plain MR's key). */
typedef struct dcx_mkey_interleaved {
    uint64_t addr;
    uint32_t bytes_count;
    uint32_t bytes_skip;
    uint32_t lkey;
    uint32_t reserved;
} dcx_mkey_interleaved_t;

/* The layout of a configure work request, read (copied) when the request
 * is posted.
 *  - DCX_WR_MKEY_INTERLEAVED: num_entries entries of 'interleaved', the
 *    pattern repeated repeat_count (>= 1) times; the key's length is
 *    repeat_count * sum(bytes_count).  One translation entry goes to the
 *    repetition header: num_entries + 1 <= the mkey's max_entries.
 *    bytes_count and bytes_count + bytes_skip are at most
 *    caps.mkey_max_stride (16-bit fields of the hardware's WQE).
 *  - DCX_WR_MKEY_LIST: the concatenation of num_entries sges of 'list'
 *    (num_entries <= max_entries).
 *  access: DCX_ACCESS_* the key grants (each entry's MR must grant it too). */
typedef struct dcx_mkey_layout {
    uint32_t access;
    uint32_t repeat_count;
    uint32_t num_entries;
    uint32_t reserved;
    const dcx_mkey_interleaved_t *interleaved;
    const dcx_sge_t *list;
} dcx_mkey_layout_t;

/* ------------------------------------------------------------------------
 * Completions
 * ------------------------------------------------------------------------ */
/* the work completion, dcx_wc_t: dcx_wc.h */

/* A CQ's look without a call (dcx_cq_idle): a word in memory where the
 * CQ's next completion shows, and the bits of it that tell.  A poll would
 * find nothing while ((*word ^ want) & mask) != 0; mask 0 says nothing of
 * the kind (a poll is due).  The backend keeps it in the polling thread,
 * as its polls move on; the device writes the word. */
typedef struct dcx_cq_look {
    const uint64_t *word;
    uint64_t want;
    uint64_t mask;
} dcx_cq_look_t;

struct dcx_cq {
    dcx_dev_t *dev;
    uint32_t cqe; /* usable entries (>= requested) */
    /* Fills up to max completions; returns their number (0 = empty).  May
     * also make progress on the device's engine (a device model). */
    int (*poll)(dcx_cq_t *cq, int max, dcx_wc_t *wc);
    /* dcx_cq_poll_pair (every backend sets it) */
    int (*poll_pair)(dcx_cq_t *cq, dcx_cq_t *other, int max, dcx_wc_t *wc,
                     int *n_other_p);
    /* dcx_cq_ready, or NULL where the backend cannot look at a CQ without
     * taking its completions */
    int (*ready)(const dcx_cq_t *cq);
    /* dcx_cq_release (DCX_CAP_RECV_IN_PLACE), else NULL */
    void (*release)(dcx_cq_t *cq);
    /* dcx_cq_idle, or NULL where the backend's CQs have no word that
     * tells; else set at creation and never NULL after (the backend may
     * point it elsewhere as the CQ is taken into use) */
    const dcx_cq_look_t *look;
};

static inline int dcx_cq_poll(dcx_cq_t *cq, int max, dcx_wc_t *wc)
{
    return cq->poll(cq, max, wc);
}

/* The caller is done with the bytes of the oldest DCX_WC_FLAG_IN_PLACE
 * completion it polled from cq and did not release yet: the device may
 * reuse them (a call with none left does nothing).  The next poll of cq
 * releases every one it returned before.  Costs no lock; only on CQs of
 * devices with DCX_CAP_RECV_IN_PLACE. */
static inline void dcx_cq_release(dcx_cq_t *cq)
{
    cq->release(cq);
}

/* Two CQs of one device polled in one call, for a caller that polls both
 * per progress call: the same as dcx_cq_poll(cq, max, wc) followed by
 * dcx_cq_poll(other, max, wc + max), whose count goes to *n_other_p
 * (wc holds 2 * max entries); returns cq's count.  A device that runs an
 * engine when polled looks at both CQs and its engine once, and returns at
 * once when there is nothing to do. */
static inline int dcx_cq_poll_pair(dcx_cq_t *cq, dcx_cq_t *other, int max,
                                   dcx_wc_t *wc, int *n_other_p)
{
    return cq->poll_pair(cq, other, max, wc, n_other_p);
}

/* Nonzero if a poll of cq would find something now: a completion, or
 * (a device model) work its engine would do when polled, which may make
 * one.  Takes nothing, never blocks, takes no lock; a completion racing
 * with the look is seen by the next one.  For a caller about to sleep that
 * may wait a moment for its answer instead (dcx_cq_can_look tells whether
 * the backend can look at all). */
static inline int dcx_cq_ready(const dcx_cq_t *cq)
{
    return cq->ready(cq);
}

static inline int dcx_cq_can_look(const dcx_cq_t *cq)
{
    return cq->ready != NULL;
}

/* Nonzero if a poll of cq would find nothing now, told without a call: a
 * few loads, for a caller whose progress call finds nothing most of the
 * time.  Only on a CQ whose look is not NULL.  Zero is no promise of a
 * completion (a poll is due); a completion racing with the look is seen
 * by the next one. */
static inline int dcx_cq_idle(const dcx_cq_t *cq)
{
    const dcx_cq_look_t *look = cq->look;

    return ((__atomic_load_n(look->word, __ATOMIC_RELAXED) ^ look->want) &
            look->mask) != 0;
}

/* ------------------------------------------------------------------------
 * Completion channels (devices with DCX_CAP_CQ_EVENT; others: EOPNOTSUPP)
 *
 * As with verbs (ibv_comp_channel, ibv_req_notify_cq, ibv_get_cq_event):
 * a CQ created on a channel and armed with dcx_cq_req_notify() generates
 * one event when a completion is added to it; the channel's fd (nonblocking)
 * is readable while events wait to be collected by
 * dcx_comp_channel_get_event().  Arming is one-shot.  Arming a CQ that
 * already holds unpolled completions generates the event at once (as a
 * ConnectX does), so "arm, then sleep on the fd" never misses a completion.
 * The events of a device model are generated by whichever thread runs its
 * engine (the application, or its helper thread while the application
 * sleeps).
 * ------------------------------------------------------------------------ */
typedef struct dcx_comp_channel {
    dcx_dev_t *dev;
    int fd; /* poll/epoll for POLLIN; never read it directly */
} dcx_comp_channel_t;

int dcx_comp_channel_create(dcx_dev_t *dev, dcx_comp_channel_t **ch_p);
/* EBUSY while CQs are attached */
int dcx_comp_channel_destroy(dcx_comp_channel_t *ch);
/* dcx_cq_create() on a channel (ch may be NULL: same as dcx_cq_create) */
int dcx_cq_create_ch(dcx_dev_t *dev, uint32_t cqe, dcx_comp_channel_t *ch,
                     dcx_cq_t **cq_p);
/* Arms cq for one event; EINVAL if it has no channel */
int dcx_cq_req_notify(dcx_cq_t *cq);
/* Collects one event (and acknowledges it): 0 and *cq_p, or EAGAIN when
 * none is pending.  Never blocks. */
int dcx_comp_channel_get_event(dcx_comp_channel_t *ch, dcx_cq_t **cq_p);

/* ------------------------------------------------------------------------
 * Shared receive queue
 * ------------------------------------------------------------------------ */
typedef enum {
    DCX_SRQ_BASIC,
    DCX_SRQ_TM /* tag matching; requires DCX_CAP_TM */
} dcx_srq_type_t;

struct dcx_sge {
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
};

/* One receive of a list post: a single buffer, as long as the list says
 * (dcx_srq_post_recv_list). */
typedef struct dcx_recv {
    uint64_t wr_id;
    uint64_t addr;
    uint32_t lkey;
} dcx_recv_t;

typedef struct dcx_srq_attr {
    dcx_srq_type_t type;
    uint32_t max_wr; /* TM: buffers for unexpected messages */
    uint32_t max_sge;
    dcx_cq_t *cq;         /* receive (and TM list) completions */
    uint32_t tm_max_tags; /* DCX_SRQ_TM: 1..caps.tm_max_tags */
    uint32_t tm_max_ops;  /* DCX_SRQ_TM: 1..caps.tm_max_ops */
    uint32_t flags;       /* DCX_SRQ_F_* */
} dcx_srq_attr_t;

enum {
    /* On a device with DCX_CAP_RECV_IN_PLACE: the device may complete a
     * receive with the message where it arrived (DCX_WC_FLAG_IN_PLACE)
     * instead of copying it into the receive's buffer; the receive is
     * taken either way.  On a DCX_SRQ_TM SRQ, only the messages that go to
     * an SRQ buffer (unexpected eager, NO_TAG) */
    DCX_SRQ_F_IN_PLACE = 1u << 0
};

/* Tag-list operations (ibv_post_srq_ops). */
typedef enum {
    DCX_TM_OP_ADD,
    DCX_TM_OP_DEL,
    DCX_TM_OP_SYNC,
    DCX_TM_OP_LAST
} dcx_tm_opcode_t;

enum {
    DCX_TM_OPF_SIGNALED = 1u << 0, /* completion on the SRQ's CQ */
    DCX_TM_OPF_SYNC     = 1u << 1  /* carries unexpected_cnt */
};

typedef struct dcx_tm_op {
    uint64_t wr_id; /* of the operation's completion */
    uint8_t opcode; /* dcx_tm_opcode_t */
    uint8_t flags;  /* DCX_TM_OPF_* */
    /* unexpected tagged messages software has fully handled, mod 2^16
     * (the device sees 16 bits, as a ConnectX does) */
    uint16_t unexpected_cnt;
    uint32_t handle; /* ADD: written on success; DEL: input */
    /* ADD */
    uint32_t num_sge;    /* 0 or 1 (0: empty receive) */
    uint64_t recv_wr_id; /* wr_id of the receive's completions */
    uint64_t tag;        /* matches when (msg_tag & mask) == tag */
    uint64_t mask;
    dcx_sge_t sge;
} dcx_tm_op_t;

struct dcx_srq {
    dcx_dev_t *dev;
    dcx_pd_t *pd;
    uint32_t max_wr; /* actual */
    uint32_t max_sge;
    uint32_t tm_max_tags; /* actual list entries (TM), else 0 */
    uint32_t tm_max_ops;  /* actual outstanding operations (TM), else 0 */
    /* Posts one receive; ENOMEM when full, EINVAL on bad sge count. */
    int (*post_recv)(dcx_srq_t *srq, uint64_t wr_id, const dcx_sge_t *sg_list,
                     unsigned num_sge);
    /* Posts count single-buffer receives, each of length bytes, in order,
     * as one request (one chain and doorbell on hardware, one engine lock
     * round on a device model).  0 when all are posted; otherwise the
     * error of the first one not posted (ENOMEM: full) and *posted_p,
     * always set, says how many before it were. */
    int (*post_recv_list)(dcx_srq_t *srq, const dcx_recv_t *list,
                          unsigned count, uint32_t length, unsigned *posted_p);
    /* Posts one tag-list operation.  0, or ENOMEM (list full on ADD, or
     * tm_max_ops operations outstanding: an operation stays outstanding
     * until a later-or-equal signalled one's completion is polled),
     * EINVAL (not a TM SRQ, bad opcode or sge count, DEL of a handle the
     * device does not own). */
    int (*tm_post)(dcx_srq_t *srq, dcx_tm_op_t *op);
    /* TM SRQ: the port address (as dcx_ah_create takes it) of the sender
     * of the rendezvous request that the TM_RNDV_INCOMPLETE completion of
     * receive wr_id reported, for software to answer it with the FIN (on
     * hardware, the completion's source address).  Valid until the entry
     * is reused.  0, ENOENT (no such completion), ENOSPC (addr too small);
     * NULL where the device has no tag matching. */
    int (*tm_rndv_src)(dcx_srq_t *srq, uint64_t wr_id, void *addr,
                       size_t *len_p);
};

static inline int dcx_srq_post_recv(dcx_srq_t *srq, uint64_t wr_id,
                                    const dcx_sge_t *sg_list, unsigned num_sge)
{
    return srq->post_recv(srq, wr_id, sg_list, num_sge);
}

static inline int dcx_srq_post_recv_list(dcx_srq_t *srq, const dcx_recv_t *list,
                                         unsigned count, uint32_t length,
                                         unsigned *posted_p)
{
    return srq->post_recv_list(srq, list, count, length, posted_p);
}

static inline int dcx_srq_tm_post(dcx_srq_t *srq, dcx_tm_op_t *op)
{
    return srq->tm_post(srq, op);
}

static inline int dcx_srq_tm_rndv_src(dcx_srq_t *srq, uint64_t wr_id,
                                      void *addr, size_t *len_p)
{
    return (srq->tm_rndv_src != NULL) ?
               srq->tm_rndv_src(srq, wr_id, addr, len_p) :
               EOPNOTSUPP;
}

/* tm_post of an SRQ that is not a TM SRQ: logs and returns EINVAL. */
int dcx_srq_tm_post_none(dcx_srq_t *srq, dcx_tm_op_t *op);

/* ------------------------------------------------------------------------
 * Address handles: the port address of a peer, as published by
 * dcx_dev_port_addr() on its side.
 * ------------------------------------------------------------------------ */
struct dcx_ah {
    dcx_pd_t *pd;
};

/* ------------------------------------------------------------------------
 * Queue pairs: DCI (initiator) and DCT (target)
 * ------------------------------------------------------------------------ */
typedef enum {
    DCX_QPT_DCI,
    DCX_QPT_DCT,
    /* A QP that carries only DCX_WR_MKEY_* requests: caps.mkey_qp_type of
     * a backend over rdma-core, where it is an RC QP connected to itself
     * (rdma-core gives the UMR builders to RC QPs only).  Attributes:
     * send_cq and max_send_wr; completions, send-queue accounting, errors
     * (ERR, flush) and dcx_qp_recover are those of a DCI.  A backend whose
     * caps.mkey_qp_type is another type refuses it (EINVAL). */
    DCX_QPT_UMR
} dcx_qp_type_t;

typedef enum {
    DCX_QPS_RESET,
    DCX_QPS_INIT,
    DCX_QPS_RTR,
    DCX_QPS_RTS,
    DCX_QPS_ERR
} dcx_qp_state_t;

typedef struct dcx_qp_attr {
    dcx_qp_type_t type;
    dcx_cq_t *send_cq;      /* DCI: requester completions */
    dcx_cq_t *recv_cq;      /* DCT: receive completions (= srq cq) */
    dcx_srq_t *srq;         /* DCT: mandatory */
    uint32_t max_send_wr;   /* DCI */
    uint32_t max_send_sge;  /* DCI */
    uint32_t max_inline;    /* DCI: requested inline bytes */
    uint32_t max_rd_atomic; /* DCI */
    uint64_t dc_key;        /* DCT: access key checked per request */
    uint32_t access;        /* DCT: DCX_ACCESS_REMOTE_* it allows */
    /* DCI transport parameters (verbs encoding): timeout is
     * 4.096us * 2^timeout; retry_cnt 0..7; rnr_retry 0..7 (7 = forever).
     * timeout 0 never means "infinite" here: it asks for the backend's
     * defaults for all three (a device model's configured limits, a NIC
     * backend's own choice). */
    uint8_t timeout;
    uint8_t retry_cnt;
    uint8_t rnr_retry;
    uint8_t min_rnr_timer; /* DCT */
    /* DCI streams (DCX_CAP_DCI_STREAMS; EOPNOTSUPP, logged, without it):
     * dci_streams nonzero creates a DCI with 2^log_num_concurrent stream
     * channels (log_num_concurrent <= caps.dci_streams_log_max), numbered
     * 0 .. 2^log_num_concurrent - 1 and named by each WR's stream_id.
     *  - WRs of one stream execute and complete in posting order; WRs of
     *    different streams are independent (neither waits for the other,
     *    completions interleave in any order).
     *  - Each stream holds max_send_wr outstanding WRs of its own (post
     *    returns ENOMEM per stream).
     *  - An error completion stops only its stream: the stream's other
     *    outstanding WRs, and those posted to it later, complete with
     *    WR_FLUSH_ERR, the DCI stays in RTS and the other streams go on.
     *    Once 2^log_num_errored streams are in error at once
     *    (log_num_errored <= caps.dci_errored_log_max), the whole DCI goes
     *    to ERR, every stream flushes, and dcx_qp_recover brings it back.
     *  - dcx_qp_stream_reset returns an errored stream to service.
     * Other QP types ignore these fields. */
    uint8_t dci_streams;
    uint8_t log_num_concurrent;
    uint8_t log_num_errored;
} dcx_qp_attr_t;

typedef enum {
    DCX_WR_SEND,
    DCX_WR_SEND_IMM,
    DCX_WR_RDMA_WRITE,
    DCX_WR_RDMA_WRITE_IMM,
    DCX_WR_RDMA_READ,
    DCX_WR_ATOMIC_FADD,         /* 64-bit */
    DCX_WR_ATOMIC_CSWAP,        /* 64-bit */
    DCX_WR_ATOMIC_MASKED_FADD,  /* 32/64: add per field; boundary mask */
    DCX_WR_ATOMIC_MASKED_CSWAP, /* 32/64: compare/swap under masks */
    DCX_WR_OPCODE_LAST,
    /* Strided mkeys (DCX_CAP_MKEY_STRIDE), posted on a QP of type
     * caps.mkey_qp_type; wr.mkey names the key, dest and sg_list are not
     * used.  Executed in order with the QP's other work requests: later
     * requests of the same QP may use the key at once; others wait for the
     * completion (DCX_WC_UMR, DCX_WC_LOCAL_INV) of a signalled one.
     * post_send returns EINVAL (bad layout, access, key or QP), ENOMEM
     * (more entries than the key holds, or send queue full). */
    DCX_WR_MKEY_FIRST       = 0x40,
    DCX_WR_MKEY_INTERLEAVED = DCX_WR_MKEY_FIRST, /* wr.mkey_layout */
    DCX_WR_MKEY_LIST,                            /* wr.mkey_layout */
    DCX_WR_MKEY_INVALIDATE,                      /* LOCAL_INV */
    DCX_WR_MKEY_LAST
} dcx_wr_opcode_t;

enum {
    DCX_SEND_SIGNALED  = 1u << 0, /* completion on success too */
    DCX_SEND_INLINE    = 1u << 1, /* copy sg_list data at post (no lkey) */
    DCX_SEND_FENCE     = 1u << 2, /* wait for prior READ/atomics to finish */
    DCX_SEND_SOLICITED = 1u << 3,
    /* Executed within the call or not at all (a DCI's post_send;
     * device-semantics.md, "Work within the call"): 0 once the WR's effect
     * is complete -- its bytes at the target, a READ's bytes or an atomic's
     * old value at sg_list[0].addr -- with no send-queue slot taken and no
     * completion to follow; EAGAIN with nothing read or written, for the
     * caller to post the WR without the flag (which checks it and reports
     * what is wrong with it).  One sge: an inline WRITE's bytes (up to the
     * MTU), a READ's destination and an atomic's result may be any memory
     * of the caller (lkey unused); a WRITE not inline reads a registered
     * sge, checked as a posted one's.  A device without DCX_CAP_POST_NOW,
     * and any DCI that cannot order the WR after its earlier work, returns
     * EAGAIN. */
    DCX_SEND_NOW       = 1u << 4
};

/* DC destination of one WR (as rdma-core's direct verbs set it: the AH, the
 * DCT number and the DC key). */
typedef struct dcx_dc_dest {
    dcx_ah_t *ah;
    uint32_t dctn;
    uint64_t dc_key;
} dcx_dc_dest_t;

/* One send work request.  Each WR names its destination and exactly one
 * data description (sg_list, inline or not). */
typedef struct dcx_send_wr {
    uint64_t wr_id;
    uint8_t opcode; /* dcx_wr_opcode_t */
    uint8_t flags;  /* DCX_SEND_* */
    uint8_t num_sge;
    uint8_t atomic_size; /* 4 or 8: masked atomics only */
    uint32_t imm;        /* _IMM opcodes, host order */
    dcx_dc_dest_t dest;
    const dcx_sge_t *sg_list; /* atomics: 1 result, host order once polled */
    uint64_t remote_addr;     /* RDMA and atomics */
    uint32_t rkey;
    uint16_t stream_id; /* DCI with streams: its stream; ignored otherwise */
    uint16_t reserved;
    /* atomics:
     *   FADD:         compare_add = add
     *   CSWAP:        compare_add = compare, swap = swap
     *   MASKED_FADD:  compare_add = add, compare_mask = field boundary mask
     *                 (a set bit ends a field: carries do not cross it)
     *   MASKED_CSWAP: compare_add = compare, compare_mask = bits compared,
     *                 swap = swap, swap_mask = bits swapped */
    uint64_t compare_add;
    uint64_t swap;
    uint64_t compare_mask;
    uint64_t swap_mask;
    /* DCX_WR_MKEY_*: the key, and the layout of a configure */
    dcx_mkey_t *mkey;
    const dcx_mkey_layout_t *mkey_layout;
} dcx_send_wr_t;

struct dcx_qp {
    dcx_dev_t *dev;
    dcx_pd_t *pd;
    dcx_qp_type_t type;
    dcx_qp_state_t state; /* updated by the backend */
    uint32_t qp_num;      /* DCI number / DCT number */
    uint32_t max_send_wr; /* actual (DCI) */
    uint32_t max_send_sge;
    uint32_t max_inline;
    uint32_t max_rd_atomic;
    uint32_t num_streams; /* DCI with streams: how many; 0 otherwise */
    /* DCI only.  Returns 0, or ENOMEM (send queue full: outstanding =
     * posted - retired-by-polled-completion reached max_send_wr), EINVAL
     * (too many sge, inline too long, opcode not supported, not in RTS).
     * A WR posted while the DCI is in ERR is accepted and completes with
     * DCX_WC_WR_FLUSH_ERR.  A WR flagged DCX_SEND_NOW returns 0 or EAGAIN
     * only (EAGAIN wherever the DCI is not in RTS). */
    int (*post_send)(dcx_qp_t *qp, const dcx_send_wr_t *wr);
};

static inline int dcx_qp_post_send(dcx_qp_t *qp, const dcx_send_wr_t *wr)
{
    return qp->post_send(qp, wr);
}

/* ------------------------------------------------------------------------
 * Control path (dispatched through the device's ops)
 * ------------------------------------------------------------------------ */
const dcx_dev_caps_t *dcx_dev_caps(const dcx_dev_t *dev);
const char *dcx_dev_name(const dcx_dev_t *dev);
const dcx_backend_t *dcx_dev_backend(const dcx_dev_t *dev);

/* The address peers use to reach this device (caps.addr_len bytes). */
int dcx_dev_port_addr(dcx_dev_t *dev, void *addr, size_t *len_p);

int dcx_pd_alloc(dcx_dev_t *dev, dcx_pd_t **pd_p);
int dcx_pd_free(dcx_pd_t *pd);

/* REMOTE_WRITE or REMOTE_ATOMIC without LOCAL_WRITE: EINVAL. */
int dcx_mr_reg(dcx_pd_t *pd, void *addr, size_t length, uint32_t access,
               dcx_mr_t **mr_p);
/* The same for a caller that expects it may fail and says so itself (UCT's
 * UCT_MD_MEM_FLAG_HIDE_ERRORS, a registration cache trying a merged
 * region): the failure's line is logged at debug level, not as an error or
 * a warning. */
int dcx_mr_reg_quiet(dcx_pd_t *pd, void *addr, size_t length, uint32_t access,
                     dcx_mr_t **mr_p);
int dcx_mr_dereg(dcx_mr_t *mr);

/* Strided mkeys: max_entries 1..caps.mkey_max_entries (EINVAL otherwise,
 * EOPNOTSUPP without DCX_CAP_MKEY_STRIDE).  Destroying a configured key is
 * allowed; accesses through it fail from then on. */
int dcx_mkey_create(dcx_pd_t *pd, uint32_t max_entries, dcx_mkey_t **mkey_p);
int dcx_mkey_destroy(dcx_mkey_t *mkey);

/* The process is about to unmap, remap or discard [addr, addr + len) (the
 * transport calls this from UCX's memory hooks, before the change).  On a
 * device that cannot pin pages (DCX_CAP_NO_PIN), registrations that
 * overlap the range refuse every access from now on (remote access error,
 * local protection error) until they are deregistered, and the call
 * returns once no access to them is in flight.  A no-op where the NIC pins
 * the pages.  Callable from any thread, also with the device's own
 * work in progress; never takes the device's engine lock. */
void dcx_dev_mem_unmapped(dcx_dev_t *dev, const void *addr, size_t len);

/* The caller reports every unmap through dcx_dev_mem_unmapped() from now
 * on (it holds memory hooks): a device that cannot pin pages may then copy
 * to and from the process's registered memory with plain loads and stores.
 * Until then (or never: the emulated libibverbs) it copies there in a way
 * that survives an unmap under a registration (the WR fails with a local
 * protection error).  A no-op where the NIC pins the pages. */
void dcx_dev_unmaps_reported(dcx_dev_t *dev);

int dcx_cq_create(dcx_dev_t *dev, uint32_t cqe, dcx_cq_t **cq_p);
int dcx_cq_destroy(dcx_cq_t *cq);

int dcx_srq_create(dcx_pd_t *pd, const dcx_srq_attr_t *attr, dcx_srq_t **srq_p);
int dcx_srq_destroy(dcx_srq_t *srq);

/* Whether a port address published by a peer's dcx_dev_port_addr() is one
 * this device can reach: exactly the checks dcx_ah_create() makes (format,
 * and what the backend can tell from the address alone: the link layer on
 * a NIC; user, host and fabric on a device model).  Returns 0, or EINVAL
 * with the reason written to why (why_len bytes, NUL-terminated); logs
 * nothing, so that it can answer "is this peer reachable" quietly. */
int dcx_dev_addr_check(dcx_dev_t *dev, const void *addr, size_t len, char *why,
                       size_t why_len);

/* Validates the address as dcx_dev_addr_check() does (EINVAL, logged, if
 * it fails); whether the peer is alive is only learned by sending
 * (RETRY_EXC_ERR), as with a real fabric. */
int dcx_ah_create(dcx_pd_t *pd, const void *addr, size_t len, dcx_ah_t **ah_p);
int dcx_ah_destroy(dcx_ah_t *ah);

/* Creates a DCI or DCT and moves it to its operational state (DCI: RTS,
 * DCT: RTR, where it gets its number). */
int dcx_qp_create(dcx_pd_t *pd, const dcx_qp_attr_t *attr, dcx_qp_t **qp_p);
int dcx_qp_destroy(dcx_qp_t *qp);

/* DCI: moves to ERR; outstanding WRs complete with WR_FLUSH_ERR. */
int dcx_qp_set_error(dcx_qp_t *qp);

/* DCI recovery: ERR -> RESET -> INIT -> RTR -> RTS.  As with rdma-core, the
 * reset discards this QP's completions not yet polled; the caller drains
 * the CQ first if it needs them.  EINVAL if the QP is not a DCI in ERR. */
int dcx_qp_recover(dcx_qp_t *qp);

/* DCI with streams: returns stream stream_id, in error, to service (as
 * rdma-core's mlx5dv_dci_stream_id_reset).  Its WRs were all flushed when
 * it failed, each completes (signalled or not) and holds its send queue
 * slot until polled (mlx5; the soft device frees them at once): reset it
 * once the completion of its last WR is polled.  0 (also for a
 * stream that is not in error), EINVAL (not a DCI with streams, or no
 * such stream), EOPNOTSUPP (the DCI is not in RTS, or the device has no
 * streams); logged. */
int dcx_qp_stream_reset(dcx_qp_t *qp, uint16_t stream_id);

/* Makes progress on work the device executes in software (a device model's
 * engine); a no-op on hardware.  Polling a CQ does the same. */
void dcx_dev_progress(dcx_dev_t *dev);

/* ------------------------------------------------------------------------
 * Backend interface: every device a backend opens carries these ops
 * ------------------------------------------------------------------------ */
struct dcx_dev_ops {
    void (*close)(dcx_dev_t *dev);
    int (*port_addr)(dcx_dev_t *dev, void *addr, size_t *len_p);
    int (*addr_check)(dcx_dev_t *dev, const void *addr, size_t len, char *why,
                      size_t why_len);
    void (*progress)(dcx_dev_t *dev);
    int (*pd_alloc)(dcx_dev_t *dev, dcx_pd_t **pd_p);
    int (*pd_free)(dcx_pd_t *pd);
    int (*mr_reg)(dcx_pd_t *pd, void *addr, size_t length, uint32_t access,
                  dcx_mr_t **mr_p);
    int (*mr_dereg)(dcx_mr_t *mr);
    /* NULL when the backend has no strided mkeys; without
     * DCX_CAP_MKEY_STRIDE, mkey_create returns EOPNOTSUPP and logs what
     * the device lacks */
    int (*mkey_create)(dcx_pd_t *pd, uint32_t max_entries, dcx_mkey_t **mkey_p);
    int (*mkey_destroy)(dcx_mkey_t *mkey);
    void (*mem_unmapped)(dcx_dev_t *dev, const void *addr, size_t len);
    void (*unmaps_reported)(dcx_dev_t *dev);
    int (*cq_create)(dcx_dev_t *dev, uint32_t cqe, dcx_cq_t **cq_p);
    int (*cq_destroy)(dcx_cq_t *cq);
    int (*srq_create)(dcx_pd_t *pd, const dcx_srq_attr_t *attr,
                      dcx_srq_t **srq_p);
    int (*srq_destroy)(dcx_srq_t *srq);
    int (*ah_create)(dcx_pd_t *pd, const void *addr, size_t len,
                     dcx_ah_t **ah_p);
    int (*ah_destroy)(dcx_ah_t *ah);
    int (*qp_create)(dcx_pd_t *pd, const dcx_qp_attr_t *attr, dcx_qp_t **qp_p);
    int (*qp_destroy)(dcx_qp_t *qp);
    int (*qp_set_error)(dcx_qp_t *qp);
    int (*qp_recover)(dcx_qp_t *qp);
    /* DCI streams: NULL when the backend has none */
    int (*qp_stream_reset)(dcx_qp_t *qp, uint16_t stream_id);
    /* completion channels: NULL when the backend has none */
    int (*comp_channel_create)(dcx_dev_t *dev, dcx_comp_channel_t **ch_p);
    int (*comp_channel_destroy)(dcx_comp_channel_t *ch);
    int (*cq_create_ch)(dcx_dev_t *dev, uint32_t cqe, dcx_comp_channel_t *ch,
                        dcx_cq_t **cq_p);
    int (*cq_req_notify)(dcx_cq_t *cq);
    int (*comp_channel_get_event)(dcx_comp_channel_t *ch, dcx_cq_t **cq_p);
};

/* Every backend's device object starts with this. */
struct dcx_dev {
    const dcx_dev_ops_t *ops;
    dcx_dev_caps_t caps;
    const dcx_backend_t *backend; /* that opened it */
};

#ifdef __cplusplus
}
#endif

#endif /* DCX_DEV_H_ */
