/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the device (soft_dev.c opens it) with what only it holds:
 * the engine's state and wait set, the fault injection's state, and the
 * inline accessors that read its fields (the clock of a post, the clear
 * of the request ring).  Sits on soft_objs.h (its objects), soft_ring.h
 * (its rings' consumer state), soft_lock.h (the engine lock) and
 * soft_clock.h.
 */
#ifndef DCX_SOFT_DEV_H_
#define DCX_SOFT_DEV_H_

#include "dcx_dev.h"
#include "dcx_soft.h"
#include "soft_base.h"
#include "soft_wire.h"
#include "soft_ring.h"
#include "soft_lock.h"
#include "soft_clock.h"
#include "soft_objs.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

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
    /* an owner's work rung and not handed to the device yet: no inbound
     * packet is served while rx_hold(rx_hold_arg) says so (NULL: none) */
    dcx_soft_rx_hold_t rx_hold;
    void *rx_hold_arg;
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
    /* a port of another process was mapped (soft_peer_map): packets may
     * come that only a poll of ours serves (dcx_soft_dev_remote_peers) */
    uint32_t remote_peers;
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
    /* receives in place (soft_ip.c): the CQs that take them; while a
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
    /* an RDMA WRITE of one registered sge without a WQE: 0 if done, 1 if
     * not (DCX_SEND_NOW, not inline; soft_dci_post_now); chosen at open */
    int (*write_now)(soft_qp_t *qp, const dcx_send_wr_t *wr);
    /* initiator-side atomics on a mapping of the target's memory
     * (soft_direct.c): atomic_direct executes w as one_sided does;
     * atomic_now wr's atomic without a WQE, its result stored at
     * wr->sg_list[0].addr, 0 if done, 1 if not (DCX_SEND_NOW) */
    int (*atomic_direct)(soft_qp_t *qp, soft_swqe_t *w);
    int (*atomic_now)(soft_qp_t *qp, const dcx_send_wr_t *wr);
    struct soft_direct_area *direct; /* our published tables, or NULL */
    uint64_t direct_start;           /* our start time (liveness) */
    int plain_intent;                /* soft_dslot_plain_intent() */
    uint64_t alloc_serial; /* last serial of a published SysV segment */
    /* SysV segments registered MRs lie in (soft_shm.c), under mr_lock */
    struct soft_shm *shms;
    /* peers' SysV segments we attached (soft_dmap.c), under the engine lock,
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
    uint64_t stamp;       /* last poll stamp written */
    uint32_t drain_polls; /* stamps left that keep an arm's sleep */
    uint32_t armed_cqs;   /* CQs armed, under the lock */
    uint32_t arms;        /* arms made, under the lock (the hint's clear) */
    /* the asymmetric kick (soft_wake.c): kick_asym, this process receives
     * the sleepers' membarrier, so that its light posts leave the fence
     * to a target whose hint is 0; sleep_asym, our sleepers can issue it,
     * so that the helper may clear our port's hint */
    int kick_asym, sleep_asym;
    uint64_t sleep_fences; /* membarriers our sleepers issued (atomic) */
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

/* The DCT of number qpn on this device, NULL if that number is not one
 * (a request names it: any value, checked here) */
static inline soft_qp_t *soft_dct_at(const soft_dev_t *dev, uint32_t qpn)
{
    uint32_t idx = qpn - dev->qpn_base;
    soft_qp_t *qp;

    if ((idx >= dev->max_qps) || ((qp = dev->qps[idx]) == NULL) ||
        (qp->super.type != DCX_QPT_DCT)) {
        return NULL;
    }
    return qp;
}

/* The clock of a post alone (the reading is not kept) */
static inline uint64_t soft_dev_now(soft_dev_t *dev)
{
    uint64_t clk;

    return soft_dev_now_clk(dev, &clk);
}

/* Engine lock held: where a clear of the request ring stops: the head,
 * or the oldest slot a receive in place still reads (soft_ip.c) */
uint64_t soft_ip_clear_end(soft_dev_t *dev, uint64_t end);
static inline __attribute__((always_inline)) uint64_t
soft_req_clear_end(soft_dev_t *dev)
{
    uint64_t end = dev->hdr->req.head;

    return dev->ip_maybe ? soft_ip_clear_end(dev, end) : end;
}

#endif
