/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the base its headers sit on (all but soft_lock.h):
 * the protocol's constants (versions, sizes, the times the engine and the
 * helper thread go by, the helper's and a sleeping application's states)
 * and the names of the process-local objects, defined in soft_objs.h and
 * soft_dev.h.  Sits on dcx_dev.h only.
 */
#ifndef DCX_SOFT_BASE_H_
#define DCX_SOFT_BASE_H_

#include "dcx_dev.h"

#include <stddef.h>
#include <stdint.h>

#define SOFT_MAGIC      0x53584344u /* "DCXS" */
#define SOFT_VERSION    13u         /* 13: the keyless one-line form */
#define SOFT_ADDR_MAGIC 0xdc53u     /* soft port address, format 2 */
#define SOFT_ADDR_LEN   28u
#define SOFT_PID_NOWHERE \
    0x7fffffffu                    /* dcx_soft_addr_nowhere(): above any
                                            pid_max, so never alive */
#define SOFT_SLOT_HDR        192u  /* ring slot header incl. seq */
#define SOFT_NAME_TRIES      16u   /* random port names tried at open */
#define SOFT_RING_SLOTS      128u  /* slots per ring (power of 2) */
#define SOFT_IP_MAX          64u   /* receives in place per CQ (power of 2) */
#define SOFT_IP_MIN          64u   /* smaller messages are copied */
#define SOFT_RSTATE_SLOTS    1024u /* responder per-source states */
#define SOFT_MAX_RECV_SGE    30u
#define SOFT_ATOMIC_SAVED    16u /* = max_rd_atomic limit */
#define SOFT_SEG_HDR_SIZE    4096u
#define SOFT_PROGRESS_BUDGET 64u
#define SOFT_READ_BURST      16u /* response packets per READ packet */

#define SOFT_NO_STATUS 0xffu

/* deadline_ns of a DCI whose ack timer starts at the next engine pass (a
 * light post the wait set did not take, an acknowledgement pass that left
 * requests outstanding: soft_engine_wait_add, soft_req_timers_quick) */
#define SOFT_DEADLINE_ARM UINT64_MAX

/* The application counts as busy elsewhere when it has not polled for this
 * long: its helper thread then executes inbound work. */
#define SOFT_APP_IDLE_NS 200000ull

/* A requester whose packets have sat unserved in a peer's request ring for
 * this long, while that peer's application has not polled either, wakes the
 * peer's helper ("prod"); at most once per SOFT_REPROD_NS while nothing
 * moves. */
#define SOFT_PROD_NS   25000ull
#define SOFT_REPROD_NS 500000ull

/* The poll stamp is written when it is this much older than the clock,
 * not on every poll: a peer reads it at most this much stale, far below
 * SOFT_PROD_NS, and a polling owner's stamp line stays in its cache
 * instead of being taken back from every reader per message. */
#define SOFT_STAMP_NS 4000ull

/* After an arm, this many of the application's stamps (polls at least
 * SOFT_STAMP_NS apart) leave it asleep to its peers: verbs programs arm,
 * drain the CQ with a poll or two, and only then sleep on the channel; a
 * program that goes on polling is awake again within tens of
 * microseconds (soft_engine_app_sleeps). */
#define SOFT_ARM_DRAIN_POLLS 8u

/* An idle application with nothing outstanding for this long lets its
 * helper sleep without a timeout (soft_helper.c); an application that arms
 * a CQ to sleep on its completion channel counts as idle for this long at
 * once (soft_engine_app_sleeps). */
#define SOFT_DEEP_IDLE_NS 5000000ull /* 5 ms */

/* What the port's helper is doing (hdr->sleeping), which decides whether a
 * sender rings the doorbell after queueing a packet (soft_port_kick):
 *  PARKED: the application polls; the helper waits for a ring without a
 *          short timeout.  Senders do not ring and do not read the poll
 *          stamp: an application that stops polling with their requests
 *          queued is found by the requester's prod (soft_req_prod).
 *  DEEP:   nothing outstanding and the application idle for long: the
 *          first sender of the episode rings.
 *  NAP:    the application is idle (or waits on a completion channel)
 *          and the helper naps between passes: a sender rings if the
 *          owner has not polled for SOFT_APP_IDLE_NS.
 * An application that arms a CQ is about to sleep on its channel: its poll
 * stamp is set back (soft_engine_app_sleeps), so that senders ring its
 * helper from the first packet on and the helper serves at once; the first
 * packet that consumes a receive wakes the application itself instead
 * (SOFT_WAKE_*, soft_wake.c). */
/* A parked helper looks at its application again after this long even if
 * nobody rings: the bound on serving the device's own timers (retries,
 * prods) once an application that polled stops polling without arming a
 * completion channel. */
#define SOFT_PARK_NS 100000000ull /* 100 ms */

enum {
    SOFT_HELPER_PARKED = 0,
    SOFT_HELPER_DEEP   = 1,
    SOFT_HELPER_NAP    = 2
};

/* Whether the owner application of a port sleeps on a completion channel
 * (hdr->app_wait, soft_wake.c):
 *  NONE:   no arm since the device opened, or no wake socket;
 *  ARMED:  a CQ was armed on a channel and no sender has woken the
 *          application since: the first sender of a packet that consumes
 *          a receive sends a datagram to the port's wake socket, which the
 *          channel's fd reflects (one hop: no helper thread in between);
 *  POKED:  a sender did (its packet is served by the woken application);
 *          later senders ring the helper (once per wake of it).  The
 *          application's next collection of events, or its next poll
 *          stamp (it is awake), sets NONE; its next arm ARMED again.
 * While the word is not NONE, a packet that does not wake the application
 * (a one-sided operation, a later message) rings its helper even if it is
 * parked: an arm no longer unparks it unless the device has work of its
 * own outstanding (soft_cq_req_notify). */
enum {
    SOFT_WAKE_NONE  = 0,
    SOFT_WAKE_ARMED = 1,
    SOFT_WAKE_POKED = 2
};

/* The process-local objects (soft_objs.h, soft_dev.h) */
typedef struct soft_dev soft_dev_t;
typedef struct soft_qp soft_qp_t;
typedef struct soft_srq soft_srq_t;
typedef struct soft_tm soft_tm_t; /* tag list of a TM SRQ (soft_tm.c) */

typedef struct soft_mkey soft_mkey_t; /* strided key (soft_mkey.c) */
typedef struct soft_mkey_wr soft_mkey_wr_t;

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

/* Whether op (any value) is a valid atomic opcode */
static inline int soft_op_atomic(unsigned op)
{
    const soft_opinfo_t *info = soft_op(op);

    return (info != NULL) && (info->flags & SOFT_OPF_ATOMIC);
}

#endif
