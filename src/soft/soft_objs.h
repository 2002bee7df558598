/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the types of its process-local objects but the device
 * (soft_dev.h): memory keys and the batch of a copy through strided keys,
 * completion entries and CQs, completion channels, receive WQEs and SRQs,
 * AHs, send WQEs and QPs, and the responder's state per source.  Sits on
 * soft_wire.h (peers, packets, ack table entries).
 */
#ifndef DCX_SOFT_OBJS_H_
#define DCX_SOFT_OBJS_H_

#include "dcx_dev.h"
#include "soft_base.h"
#include "soft_wire.h"

#include <stdint.h>
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
    /* the SysV segment it lies in, published for peers to attach
     * (soft_shm.c), or NULL */
    struct soft_shm *shm;
    soft_mkey_t *mkey;
} soft_mr_t;

/* A batch of pieces of registered memory the engine copies to or from one
 * contiguous buffer in one go (soft_mem.c): a vectored cross-memory call
 * of up to SOFT_MEM_VEC_MAX pieces, or memcpys once the consumer reports
 * unmaps.  Filled by a strided key's walk (soft_mkey.c). */
#define SOFT_MEM_VEC_MAX 1024 /* IOV_MAX on Linux */

typedef struct soft_mem_vec {
    uint32_t n;   /* pieces */
    uint32_t nmr; /* regions, one per run of pieces in the same region */
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
     * (soft_tm_polled, soft_tm_poll.h), or tm == NULL; tm_entry, tm_gen and
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
 * (the CQs' events), the device's wake socket (senders' datagrams) unless
 * 'wake' is 0, and any fd its user merged in (dcx_soft_channel_add_fd) */
struct soft_channel {
    dcx_comp_channel_t super;
    soft_dev_t *dev;
    soft_cq_t *cqs; /* attached CQs */
    int efd;        /* eventfd: non-zero while a CQ has an event */
    int signaled;   /* efd written since it was last read */
    int wake;       /* watches the wake socket (dcx_soft_channel_no_wake) */
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
    /* dcx_soft_dct_flush: the DCT whose receive queue this is, while it
     * flushes every receive posted (its post functions then complete) */
    soft_qp_t *flush_dct;
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
    uint8_t ext_atomic_max; /* largest masked atomic operand: 0, 4 or 8 */
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
    uint32_t gen;       /* generation: fresh per create, unique on the device */
    uint32_t rd_atomic; /* READ/atomics in flight */
    uint32_t retries;
    uint32_t rnr_count;
    uint32_t retry_cnt;
    uint32_t rnr_retry;
    uint64_t ack_timeout_ns;
    uint64_t deadline_ns;
    /* after an RNR NAK: no packet before this time, then the WQE the NAK
     * named (index rnr_probe) alone until it completes; 0 once it has */
    uint64_t rnr_until_ns;
    uint32_t rnr_probe;
    /* newest request packet queued: the target's request ring position
     * after it, and the target (see soft_req_target_busy) */
    uint64_t tx_pos;
    soft_peer_t *tx_peer;
    /* the DCT number and DC key that packet named (0: none since the
     * DCI's last reset): a SEND after it to the same DCT with the same key
     * may take the keyless one-line form (soft_light_is_line) */
    uint32_t tx_dctn;
    uint64_t tx_dc_key;
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
    uint32_t gen; /* DCI generation this state follows */
    /* the generation (soft_qp_t gen) of the DCT whose key check the DCI's
     * last whole packet passed, 0 if it failed one since: what a keyless
     * one-line packet of the DCI is taken by (soft_wire.h) */
    uint32_t line_gen;
    uint32_t hold_msn; /* see wack_hold */
    soft_qp_t *dct;    /* owner of the held receive */
    soft_peer_t *peer; /* reply path */
    uint16_t slid;     /* its port's LID (receives report it) */
    soft_rwqe_t recv;  /* receive held for message e */
    soft_tm_msg_t tm;  /* tag matching of message e */
} soft_rstate_t;

#endif
